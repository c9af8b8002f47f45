"""Embedding bags on the mtia level (seeds/001 section 6, TBE): te.opaque EmbeddingBag and
TableBatchedEmbedding lowered to gathers into circular buffers pooled on the PEs' SIMD
engines equal the te level's numbers; their timeline is the planner's closed form, by
hand for one bag; bad indices and offsets are errors naming the op; operators left at
te level are named in the report."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from irc.devices import load_device
from irc.dialects.te import OpaqueOp
from irc.interpreter.mtia import MtiaRunError
from irc.lowering.model_from_ir import embedding_spec
from irc.passes.mtia_partition import EMBEDDING_ATTR, MtiaPartition, embedding_attr
from irc.lowering.te_to_mtia import TeToMtia
from irc.planner.mtia import plan_embedding
from irc.runner import parse_module, run

MTIA = load_device("mtia-v1")

BAG = """
func.func @main(%table: tensor<{rows}x{dim}x{dtype}>, %idx: tensor<{lookups}xi64>, %off: tensor<{batch}xi64>)
    -> tensor<{batch}x{dim}x{dtype}> {{
  %y = te.opaque "EmbeddingBag"(%table, %idx, %off) {{mode = "{mode}"}} : (tensor<{rows}x{dim}x{dtype}>, tensor<{lookups}xi64>, tensor<{batch}xi64>) -> tensor<{batch}x{dim}x{dtype}>
  func.return %y : tensor<{batch}x{dim}x{dtype}>
}}
"""


def _lowered(text, home=None, name="bag.mlir"):
    module = parse_module(text, name)
    MtiaPartition().apply(Context(), module)
    if home is not None:   # the tables where the planner puts those larger than the SRAM
        op = next(o for o in module.walk() if isinstance(o, OpaqueOp))
        spec, _ = embedding_spec(op)
        op.attributes[EMBEDDING_ATTR] = embedding_attr(plan_embedding(spec, MTIA, home))
    TeToMtia().apply(Context(), module)
    assert not any(isinstance(o, OpaqueOp) for o in module.walk())
    return module


def _planned(module) -> float:
    return float(module.body.block.first_op.attributes["irc.planned_cycles"].value.data)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.integers(1, 150), rows=st.integers(1, 60), dim=st.sampled_from([4, 16, 33]),
       mode=st.sampled_from(["sum", "mean"]), dtype=st.sampled_from(["f32", "i8", "f16"]),
       seed=st.integers(0, 10**6), home=st.sampled_from(["sram", "dram"]))
def test_embedding_bags_on_the_pes_equal_the_te_level(batch, rows, dim, mode, dtype, seed, home):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 6, batch)                 # bags of 0 to 5 rows, empty ones included
    lookups = int(sizes.sum())
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    np_type = {"f32": np.float32, "f16": np.float16, "i8": np.int8}[dtype]
    table = (rng.integers(-20, 20, (rows, dim)) if dtype == "i8" else rng.standard_normal((rows, dim))).astype(np_type)
    inputs = {"arg0": table, "arg1": rng.integers(0, rows, lookups).astype(np.int64), "arg2": offsets}
    text = BAG.format(rows=rows, dim=dim, dtype=dtype, lookups=max(lookups, 0), batch=batch, mode=mode)
    if lookups == 0:
        return  # a zero-length tensor has no IR type
    reference, _ = run(parse_module(text, "bag.mlir"), inputs)
    module = _lowered(text, home)
    results, report = run(module, inputs)
    got, want = results["result0"], reference["result0"]
    assert got.dtype == want.dtype
    if dtype == "i8" or mode == "sum" and dtype == "f32":
        # INT32 sums of INT8 rows (wrapped into INT8 as the te level's cast); f32 sums in
        # FP32 on the SIMD engine against the te level's float64, within f32's rounding
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-6, atol=1e-5)
    else:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2e-3, atol=2e-3)
    (kernel,) = report.kernels
    row_bytes = dim * np.dtype(np_type).itemsize
    level = getattr(kernel.traffic, home)
    assert level >= lookups * row_bytes
    assert report.host_ops == []


def test_uniform_bags_run_in_the_planned_time():
    # every PE holds the same bags: the event timeline and the closed form agree exactly
    text = BAG.format(rows=1000, dim=64, dtype="f32", lookups=256 * 20, batch=256, mode="sum")
    rng = np.random.default_rng(0)
    inputs = {"arg0": rng.standard_normal((1000, 64)).astype(np.float32),
              "arg1": rng.integers(0, 1000, 256 * 20).astype(np.int64),
              "arg2": (np.arange(256) * 20).astype(np.int64)}
    for home in ("sram", "dram"):
        module = _lowered(text, home)
        _, report = run(module, inputs)
        assert report.total_cycles == pytest.approx(_planned(module), rel=1e-9)
        (kernel,) = report.kernels
        assert kernel.pes == 64
        # 5120 rows of 256 B from the tables' level; from SRAM also each PE's 80 indices
        # and 5 offsets (680 B) and the 256 pooled rows of 256 B
        activations = 64 * (80 * 8 + 5 * 8) + 256 * 256
        assert kernel.traffic.dram == (5120 * 256 if home == "dram" else 0)
        assert kernel.traffic.sram == activations + (5120 * 256 if home == "sram" else 0)


def test_one_bag_by_hand():
    # one sample, one bag of two 64-byte rows (16 f32), on one PE (1x1 grid: 1 hop from
    # the edge, 2 cycles):
    # - its indices and offset (2 x 8 + 2 x 8 = 32 B) from SRAM: issued at 0, arrive at
    #   16 + 200 + 2 + 32 / 64 = 218.5
    # - row 0 issued then, arrives 16 + 200 + 2 + 64 / 64 later: 437.5; the SIMD engine
    #   adds its 16 f32 at 16 lanes: 1 cycle, to 438.5
    # - row 1 issued one command (16) later, at 234.5: arrives at 453.5, added by 454.5
    # - the pooled row (64 B) to SRAM: 16 + 200 + 1 = 217 later: 671.5
    text = BAG.format(rows=4, dim=16, dtype="f32", lookups=2, batch=1, mode="sum")
    module = _lowered(text)
    _, report = run(module, {"arg0": np.ones((4, 16), np.float32), "arg1": np.array([3, 1]),
                             "arg2": np.array([0])})
    (kernel,) = report.kernels
    assert kernel.cycles == {"fill": 437.5, "compute": 2.0, "dma_wait": 15.0, "drain": 217.0}
    assert report.total_cycles == 671.5 == _planned(module)


TBE = """
func.func @main(%w: tensor<9x2xf32>, %idx: tensor<6xi64>, %off: tensor<5xi64>) -> tensor<2x4xf32> {
  %y = te.opaque "TableBatchedEmbedding"(%w, %idx, %off) {mode = "sum", rows = array<i64: 4, 5>} : (tensor<9x2xf32>, tensor<6xi64>, tensor<5xi64>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
"""


def test_table_batched_embedding_on_the_pes():
    weights = np.arange(18, dtype=np.float32).reshape(9, 2)
    inputs = {"arg0": weights, "arg1": np.array([0, 3, 1, 4, 4, 2]), "arg2": np.array([0, 2, 3, 4, 6])}
    reference, _ = run(parse_module(TBE, "tbe.mlir"), inputs)
    module = _lowered(TBE)
    gather = next(op for op in module.walk() if op.name == "mtia.gather")
    assert gather.table_rows == (4, 5) and gather.batch_size == 2
    results, report = run(module, inputs)
    np.testing.assert_array_equal(results["result0"], reference["result0"])
    # each of the 2 PEs pools one sample: its bag of each table, side by side
    pool = next(op for op in module.walk() if op.name == "mtia.pool")
    assert pool.result.type.get_shape() == (1, 4)


@pytest.mark.parametrize("idx, off, message", [
    ([0, 3, 1, 4, 5, 2], [0, 2, 3, 4, 6], "index 5 at position 4 of the indices is outside table 1: the table's 5 rows"),
    ([0, 3, 1, 4, 4, 2], [0, 2, 1, 4, 6], "offsets must not decrease, but offset 1 at position 2 follows 2"),
    ([0, 3, 1, 4, 4, 2], [0, 2, 3, 4, 7], "offset 7 at position 4 is outside the 6 indices"),
])
def test_bad_bags_on_the_pes_name_the_op_and_the_position(idx, off, message):
    module = _lowered(TBE, name="tbe.mlir")
    # the lowered ops keep the te.opaque's location (line 3)
    with pytest.raises(MtiaRunError, match=r"tbe.mlir:3:\d+: error: 'mtia.gather' op: " + message):
        run(module, {"arg0": np.zeros((9, 2), np.float32), "arg1": np.array(idx), "arg2": np.array(off)})


def test_ops_left_to_the_host_are_named_in_the_report():
    text = """
func.func @main(%a: tensor<64x64xi8>, %b: tensor<64x64xi8>, %s: tensor<4x10xf32>) -> (tensor<64x64xi8>, tensor<4x3xf32>, tensor<4x3xi64>) {
  %c = te.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) : (tensor<64x64xi8>, tensor<64x64xi8>) -> tensor<64x64xi8>
  %v, %i = te.opaque "TopK"(%s) {k = 3 : i64} : (tensor<4x10xf32>) -> (tensor<4x3xf32>, tensor<4x3xi64>)
  func.return %c, %v, %i : tensor<64x64xi8>, tensor<4x3xf32>, tensor<4x3xi64>
}
"""
    module = parse_module(text, "mixed.mlir")
    MtiaPartition().apply(Context(), module)
    topk = next(o for o in module.walk() if isinstance(o, OpaqueOp))
    assert "no tensor expression states it" in topk.attributes["irc.remark"].data
    TeToMtia().apply(Context(), module)
    _, report = run(module)
    assert report.host_ops == ['te.opaque "TopK"']
    assert 'host: 1 op(s) run by the host, untimed (not in the chip time): te.opaque "TopK"' in str(report)
