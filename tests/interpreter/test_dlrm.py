"""DLRM ingredients (seeds/001 section 6): EmbeddingBag and TableBatchedEmbedding kernels
with their bad inputs, INT8 FC layers accumulating in INT32, the embedding planner kind,
and a small DLRM whose FC layers run on the mtia level with the te level's numbers."""

import numpy as np
import pytest
from xdsl.context import Context

from irc.devices import load_device
from irc.workloads.dlrm import LC, MC, SMALL, dlrm_inputs, dlrm_mtia_model, dlrm_te
from irc.interpreter.kernels import KernelError
from irc.interpreter.mtia import MtiaReport
from irc.passes.mtia_partition import MtiaPartition
from irc.lowering.te_to_mtia import TeToMtia
from irc.planner.mtia import EmbeddingSpec, embedding_roofline_seconds, plan_embedding, plan_model
from irc.runner import parse_module, run

MTIA = load_device("mtia-v1")

EMBEDDING_BAG = """
func.func @main(%table: tensor<10x4xf32>, %idx: tensor<7xi64>, %off: tensor<3xi64>) -> tensor<3x4xf32> {
  %y = te.opaque "EmbeddingBag"(%table, %idx, %off) {mode = "MODE"} : (tensor<10x4xf32>, tensor<7xi64>, tensor<3xi64>) -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}
"""


def _bag(mode, idx, off, table=None):
    table = np.arange(40, dtype=np.float32).reshape(10, 4) if table is None else table
    module = parse_module(EMBEDDING_BAG.replace("MODE", mode), "bag.mlir")
    results, _ = run(module, {"arg0": table, "arg1": np.array(idx, dtype=np.int64),
                              "arg2": np.array(off, dtype=np.int64)})
    return table, results["result0"]


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_pools_each_bag(mode):
    idx, off = [1, 2, 9, 0, 0, 3, 5], [0, 3, 3]
    table, got = _bag(mode, idx, off)
    pool = np.sum if mode == "sum" else np.mean
    expected = np.stack([pool(table[[1, 2, 9]], axis=0), np.zeros(4), pool(table[[0, 0, 3, 5]], axis=0)])
    np.testing.assert_allclose(got, expected)


def test_an_index_out_of_range_names_the_op_and_its_position():
    with pytest.raises(KernelError, match=r'bag.mlir:3:\d+: te.opaque "EmbeddingBag": index 10 at position 4 '
                                          r"of the indices is outside the table's 10 rows"):
        _bag("sum", [1, 2, 9, 0, 10, 3, -1], [0, 3, 3])


def test_decreasing_offsets_name_the_first_bad_position():
    with pytest.raises(KernelError, match="offsets must not decrease, but offset 2 at position 2 follows 5"):
        _bag("sum", [1, 2, 9, 0, 0, 3, 5], [0, 5, 2])


TBE = """
func.func @main(%w: tensor<9x2xf32>, %idx: tensor<6xi64>, %off: tensor<5xi64>) -> tensor<2x4xf32> {
  %y = te.opaque "TableBatchedEmbedding"(%w, %idx, %off) {mode = "sum", rows = array<i64: 4, 5>} : (tensor<9x2xf32>, tensor<6xi64>, tensor<5xi64>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
"""


def test_table_batched_embedding_equals_one_bag_per_table():
    weights = np.arange(18, dtype=np.float32).reshape(9, 2)
    idx = np.array([0, 3, 1, 4, 4, 2], dtype=np.int64)      # table 0: bags [0,3], [1]; table 1: [4], [4,2]
    off = np.array([0, 2, 3, 4, 6], dtype=np.int64)
    results, _ = run(parse_module(TBE, "tbe.mlir"), {"arg0": weights, "arg1": idx, "arg2": off})
    first, second = weights[:4], weights[4:]
    expected = np.concatenate([
        np.stack([first[0] + first[3], first[1]]),
        np.stack([second[4], second[4] + second[2]]),
    ], axis=1)
    np.testing.assert_array_equal(results["result0"], expected)
    with pytest.raises(KernelError, match="index 5 at position 4 of the indices is outside table 1: the table's 5 rows"):
        run(parse_module(TBE, "tbe.mlir"), {"arg0": weights, "arg1": np.array([0, 3, 1, 4, 5, 2]), "arg2": off})


@pytest.mark.parametrize("offsets, message", [
    # the whole offsets operand is checked first: a decrease is named as such, at its
    # absolute position, before any table's range is looked at
    ([0, 2, 1, 4, 6], "offsets must not decrease, but offset 1 at position 2 follows 2"),
    ([0, 2, 3, 1, 6], "offsets must not decrease, but offset 1 at position 3 follows 3"),
    ([0, 2, 3, 4, 7], "offset 7 at position 4 is outside the 6 indices"),
    ([-1, 2, 3, 4, 6], "offset -1 at position 0 is outside the 6 indices"),
])
def test_table_batched_offsets_are_checked_whole_with_absolute_positions(offsets, message):
    weights = np.arange(18, dtype=np.float32).reshape(9, 2)
    with pytest.raises(KernelError, match=r'tbe.mlir:3:\d+: te.opaque "TableBatchedEmbedding": ' + message):
        run(parse_module(TBE, "tbe.mlir"), {"arg0": weights, "arg1": np.array([0, 3, 1, 4, 4, 2]),
                                             "arg2": np.array(offsets, dtype=np.int64)})


def test_the_embedding_kind_is_priced_by_bytes_moved():
    spec = EmbeddingSpec(batch=256, pooling=32, rows=1_000_000, dim=128, tables=20)
    in_dram = plan_embedding(spec, MTIA)          # 2.4 GB of tables: LPDDR
    assert in_dram.home == "dram" and in_dram.bound == "memory"
    in_sram = plan_embedding(EmbeddingSpec(batch=256, pooling=32, rows=10_000, dim=128, tables=20), MTIA)
    assert in_sram.home == "sram"
    # bytes moved at LPDDR's rate: the plan is slower than its roofline, by less than 2x
    roofline = embedding_roofline_seconds(spec, MTIA, "dram")
    assert roofline < in_dram.seconds < 2 * roofline


def test_a_small_dlrm_runs_on_the_mtia_level_with_the_te_levels_numbers():
    int8 = ("bot1", "top0")
    text = dlrm_te(SMALL, int8)
    inputs = dlrm_inputs(SMALL, int8)
    reference, _ = run(parse_module(text, "dlrm.mlir"), inputs)
    module = parse_module(text, "dlrm.mlir")
    MtiaPartition().apply(Context(), module)
    TeToMtia().apply(Context(), module)
    kinds = {op.name for op in module.walk()}
    # every operator runs on the PE grid: FCs on the DPEs (here T10 plans over the NoC,
    # which the planner finds cheaper than MTIA's mapping for such small layers), the bags
    # as gathers pooled on the SIMD engines, quantize/dequantize, bias, concatenation and
    # interaction streamed on the SIMD engines
    assert {"mtia.step", "mtia.gather", "mtia.pool", "mtia.simd"} <= kinds
    assert not kinds & {"te.op", "te.opaque"}
    results, report = run(module, inputs)
    assert isinstance(report, MtiaReport) and report.host_ops == []
    by_kind = {}
    for kernel in report.kernels:
        by_kind[kernel.kind] = by_kind.get(kernel.kind, 0) + 1
    assert by_kind["embedding"] == len(SMALL.tables)
    assert by_kind.get("rotation", 0) + by_kind.get("matmul", 0) == len(SMALL.fc_layers())
    np.testing.assert_allclose(results["result0"], reference["result0"], rtol=1e-5, atol=1e-7)
    # the bags' rows were read from SRAM, one 128-byte row per lookup, and timed
    bags = [k for k in report.kernels if k.kind == "embedding"]
    assert all(k.total > 0 and k.traffic.sram >= SMALL.batch * SMALL.pooling * SMALL.dim * 4 for k in bags)
    # T10 plans, streams and gathers run exactly as planned
    planned = float(module.body.block.first_op.attributes["irc.planned_cycles"].value.data)
    assert report.total_cycles == pytest.approx(planned, rel=1e-9)


def test_an_int8_fc_accumulates_in_int32():
    text = """
func.func @main(%A: tensor<64x512xi8>, %B: tensor<512x128xi8>) -> tensor<64x128xi32> {
  %c = te.op "C[m,n] += cast(A[m,k]) * cast(B[k,n])" (%A, %B) : (tensor<64x512xi8>, tensor<512x128xi8>) -> tensor<64x128xi32>
  func.return %c : tensor<64x128xi32>
}
"""
    rng = np.random.default_rng(3)
    inputs = {"arg0": rng.integers(-128, 128, (64, 512)).astype(np.int8),
              "arg1": rng.integers(-128, 128, (512, 128)).astype(np.int8)}
    expected = inputs["arg0"].astype(np.int64) @ inputs["arg1"].astype(np.int64)
    assert np.abs(expected).max() > 127 * 127          # far beyond INT8 and INT16
    module = parse_module(text, "fc.mlir")
    MtiaPartition().apply(Context(), module)
    TeToMtia().apply(Context(), module)
    results, _ = run(module, inputs)
    assert results["result0"].dtype == np.int32
    np.testing.assert_array_equal(results["result0"], expected)


def test_a_dlrm_plans_with_table_three_classes():
    model = dlrm_mtia_model(LC)
    plan = plan_model(model, MTIA)
    classes = {model.categories[name] for name, _ in plan.ops}
    assert classes == {"FC", "EB", "Concat", "Quantize", "Dequantize", "BatchMatMul", "Others"}
    assert plan.seconds == pytest.approx(sum(op.seconds for _, op in plan.ops))
    # LC's 26 tables of 12M x 16 INT8 rows (5.0 GB) live in LPDDR, the FC weights in SRAM
    assert plan.dram_weight_bytes == 26 * 12_000_000 * 16


@pytest.mark.slow
def test_the_built_in_dlrms_fall_in_table_four_ranges():
    # Table IV (GFLOPs per batch; GB): LC 0.014-0.032 and 4.5-53.2; MC 0.140-0.220 (its
    # 120-200 GB exceed one card's 64 GB of LPDDR: irc's MC keeps to one card)
    assert 0.014 <= LC.flops_per_batch() / 1e9 <= 0.032 and 4.5 <= LC.table_bytes() / 1e9 <= 53.2
    assert 0.140 <= MC.flops_per_batch() / 1e9 <= 0.220 and MC.table_bytes() <= MTIA.dram_bytes
    plan_model(dlrm_mtia_model(MC), MTIA)   # it fits the card


def test_tables_beyond_the_lpddr_are_a_plan_error():
    from dataclasses import replace

    from irc.planner import PlanError

    huge = replace(MC, tables=(40_000_000,) * 26)   # 133 GB of tables
    with pytest.raises(PlanError, match=r"need 133120000000 B of LPDDR, more than mtia-v1's 68719476736 B"):
        plan_model(dlrm_mtia_model(huge), MTIA)
