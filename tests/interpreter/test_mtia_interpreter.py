"""The mtia level runs with real numbers: planned and lowered FC layers equal the te
level's results, for every legal section-4 mapping; its timeline and traffic agree with
the plan; a program that cannot run is an error in IR terms."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, StringAttr

from irc.devices import load_device
from irc.dialects.te import TensorOp
from irc.interpreter.mtia import MtiaReport, MtiaRunError
from irc.passes.mtia_partition import MAPPING_ATTR, MtiaPartition, mapping_attr, matmul_form
from irc.target import set_mtia_target
from irc.lowering.te_to_mtia import TeToMtia
from irc.planner.mtia import mapping_space
from irc.runner import parse_module, run

MTIA = load_device("mtia-v1")


def _fc(m, k, n, dtype, transposed=False):
    b_shape = f"{n}x{k}" if transposed else f"{k}x{n}"
    b_index = "B[n,k]" if transposed else "B[k,n]"
    return f"""
func.func @main(%A: tensor<{m}x{k}x{dtype}>, %B: tensor<{b_shape}x{dtype}>) -> tensor<{m}x{n}x{dtype}> {{
  %c = te.op "C[m,n] += A[m,k] * {b_index}" (%A, %B) : (tensor<{m}x{k}x{dtype}>, tensor<{b_shape}x{dtype}>) -> tensor<{m}x{n}x{dtype}>
  func.return %c : tensor<{m}x{n}x{dtype}>
}}
"""


def _inputs(m, k, n, dtype, transposed=False, seed=0):
    rng = np.random.default_rng(seed)
    b_shape = (n, k) if transposed else (k, n)
    if dtype == "i8":
        return {"arg0": rng.integers(-128, 128, (m, k)).astype(np.int8),
                "arg1": rng.integers(-128, 128, b_shape).astype(np.int8)}
    np_type = {"f16": np.float16, "f32": np.float32}[dtype]
    return {"arg0": rng.standard_normal((m, k)).astype(np_type), "arg1": rng.standard_normal(b_shape).astype(np_type)}


def _te_and_mtia(text, inputs, **options):
    reference, _ = run(parse_module(text, "fc.mlir"), inputs)
    module = parse_module(text, "fc.mlir")
    MtiaPartition(**options).apply(Context(), module)
    TeToMtia().apply(Context(), module)
    assert not any(isinstance(op, TensorOp) for op in module.walk())
    results, report = run(module, inputs)
    return reference["result0"], results["result0"], report, module


@pytest.mark.parametrize("m, k, n, dtype, transposed", [
    (512, 1024, 256, "i8", False),     # section 4's example, its plan below
    (200, 300, 100, "i8", True),       # padding on every axis, Bᵀ as section 4 stores it
    (130, 96, 70, "f32", False),
    (64, 256, 192, "f16", True),
])
def test_fc_numerics_equal_the_te_level(m, k, n, dtype, transposed):
    text = _fc(m, k, n, dtype, transposed)
    options = {"grid": "4x4", "splits": "1x4x2x2"} if (m, k, n) == (512, 1024, 256) else {}
    inputs = _inputs(m, k, n, dtype, transposed)
    reference, got, report, _ = _te_and_mtia(text, inputs, **options)
    assert got.dtype == reference.dtype and got.shape == reference.shape
    if dtype == "i8":
        # INT32 accumulators wrapped into the INT8 result, as the te level's int64 sum cast
        assert np.array_equal(got, reference)
    else:
        # the same products summed in another order (per k part, then over the chain)
        tolerance = 2e-2 if dtype == "f16" else 1e-4
        np.testing.assert_allclose(got.astype(np.float64), reference.astype(np.float64),
                                   rtol=tolerance, atol=tolerance * np.sqrt(k))
    assert isinstance(report, MtiaReport)


def test_section_4_example_timeline_and_traffic_match_the_plan():
    text = _fc(512, 1024, 256, "i8")
    _, _, report, module = _te_and_mtia(text, _inputs(512, 1024, 256, "i8"), grid="4x4", splits="1x4x2x2")
    (kernel,) = report.kernels
    assert kernel.pes == 16
    assert kernel.cycles["compute"] == 2 * 2 * 16 * 4 * 32      # tiles x k steps x 4 MMLs x 32 cycles
    # A: 4 rows x 2 distinct slices of 64 KB; B: 4 columns' slices of 64 KB; C: 8 x 16 KB
    assert kernel.traffic.sram == 8 * 65536 + 4 * 65536 + 8 * 16384
    assert kernel.traffic.dram == 0
    planned = float(next(iter(module.walk())).body.block.first_op.attributes["irc.planned_cycles"].value.data)
    assert 0.9 < report.total_cycles / planned < 1.1


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(1, 200), k=st.integers(1, 160), n=st.integers(1, 200), transposed=st.booleans(),
       choice=st.integers(0, 10**6), level=st.sampled_from(["sram", "dram"]))
def test_every_legal_mapping_computes_the_right_numbers(m, k, n, transposed, choice, level):
    text = _fc(m, k, n, "i8", transposed)
    inputs = _inputs(m, k, n, "i8", transposed, seed=choice)
    reference, _ = run(parse_module(text, "fc.mlir"), inputs)
    module = parse_module(text, "fc.mlir")
    set_mtia_target(module, "mtia-v1")
    te_op = next(op for op in module.walk() if isinstance(op, TensorOp))
    spec, _ = matmul_form(te_op)
    homes = {"C": "sram", "A": level, "B": "sram"}
    space = mapping_space(spec, MTIA, homes)
    mapping = space[choice % len(space)]
    te_op.attributes[MAPPING_ATTR] = mapping_attr(mapping, spec)
    TeToMtia().apply(Context(), module)
    results, report = run(module, inputs)
    assert np.array_equal(results["result0"], reference["result0"])
    (kernel,) = report.kernels
    assert (kernel.traffic.dram > 0) == (level == "dram")
    # the interpreter's event timeline and the planner's closed form tell one story
    assert 0.85 < report.total_cycles / mapping.cycles < 1.15


def test_a_circular_buffer_too_small_for_what_it_keeps_is_an_error():
    text = _fc(128, 64, 128, "i8")
    module = parse_module(text, "fc.mlir")
    MtiaPartition(grid="1x1").apply(Context(), module)
    TeToMtia().apply(Context(), module)
    cb = next(op for op in module.walk() if op.name == "mtia.cb_init" and op.buffer_name.data == "B")
    # B's slice (64 x 128 B) is kept resident (read once): a 4 KB buffer cannot keep it
    from xdsl.dialects.builtin import IntegerAttr, i64

    cb.depth = IntegerAttr(4096, i64)
    with pytest.raises(MtiaRunError, match="circular buffer B .* cannot take the next block"):
        run(module, _inputs(128, 64, 128, "i8"))


def test_an_unknown_home_is_refused_by_the_verifier():
    """The plan's attribute refuses a home that is not a memory level; a plan written as a
    bare dictionary (not ``#mtia.mapping``) is an error at the op in te-to-mtia."""
    from xdsl.utils.exceptions import DiagnosticException, VerifyException

    from irc.dialects.mtia_plans import MappingAttr

    text = _fc(64, 64, 64, "i8")
    module = parse_module(text, "fc.mlir")
    MtiaPartition(rotation=False).apply(Context(), module)
    te_op = next(op for op in module.walk() if isinstance(op, TensorOp))
    fields = dict(te_op.attributes[MAPPING_ATTR].data)
    fields["homes"] = ArrayAttr([StringAttr("sram"), StringAttr("flash"), StringAttr("sram")])
    with pytest.raises(VerifyException, match="field homes must name 3 home.s. among sram, dram"):
        MappingAttr(fields)
    te_op.attributes[MAPPING_ATTR] = DictionaryAttr(dict(te_op.attributes[MAPPING_ATTR].data))
    with pytest.raises(DiagnosticException, match="fc.mlir:.*mtia.mapping must be a #mtia.mapping"):
        TeToMtia().apply(Context(), module)


def test_one_multicast_read_and_one_reduction_network_accumulation_by_hand():
    # a 64x64x64 INT8 FC on a 1x2 sub-grid, k split over the two PEs of the row: each PE
    # takes one 64x32 block of A (2048 B) and one 32x64 block of B, computes one 64x64
    # tile (4 MMLs of 32 cycles) and the west PE passes its partial sums to the east one
    from irc.cost.mtia import multicast_read_cycles, reduction_chain_cycles

    _, _, report, _ = _te_and_mtia(_fc(64, 64, 64, "i8"), _inputs(64, 64, 64, "i8"), grid="1x2", splits="1x1x1x2")
    (kernel,) = report.kernels
    # A's block: issued at 0, the command (16), SRAM's latency (200), 2 hops from the edge
    # (2 x 2), 2048 B at the PE link's 64 B/cycle (32; the SRAM's 1000 B/cycle serve 3
    # bytes - A's, B's and C's - per byte this PE queues: 6.1): 252, the lone read's time
    a_arrives = 16 + 200 + 4 + 32
    assert a_arrives == multicast_read_cycles(MTIA, 2048, 1, "sram", hops=2)
    # B's block is issued one command later and streams behind A in the PE's one DMA
    # queue: max(16 + 252, 252 + 32) = 284, when the first MML starts
    assert kernel.cycles["fill"] == max(16 + a_arrives, a_arrives + 32) == 284
    assert kernel.cycles["compute"] == 4 * 32 and kernel.cycles["dma_wait"] == 0
    # the reduction network: the 16 KB INT32 tile crosses one hop bank by bank - the first
    # 4 KB bank in 4 + 4096 / 64 = 68 cycles, the other three 64 cycles apart (260) - then
    # the east PE writes its 4 KB INT8 tile: the command, SRAM's latency, 4096 / 64
    assert reduction_chain_cycles(MTIA, 16384, 2) == 68 + 3 * 64 == 260
    assert kernel.cycles["drain"] == 260 + 16 + 200 + 64 == 540


def test_mmls_stall_on_blocks_from_lpddr():
    # 256 x 512 x 512 INT8 with B in LPDDR: B's blocks arrive at LPDDR's 220 B/cycle shared
    # by the grid, slower than the DPE consumes them, so the MMLs wait (the hardware's
    # stall of section 3.3, no software sync); with B in SRAM they never do
    text = _fc(256, 512, 512, "i8")
    inputs = _inputs(256, 512, 512, "i8")
    waits = {}
    for level in ("sram", "dram"):
        module = parse_module(text, "fc.mlir")
        set_mtia_target(module, "mtia-v1")
        te_op = next(op for op in module.walk() if isinstance(op, TensorOp))
        spec, _ = matmul_form(te_op)
        space = mapping_space(spec, MTIA, {"C": "sram", "A": "sram", "B": level})
        te_op.attributes[MAPPING_ATTR] = mapping_attr(min(space, key=lambda p: (p.cycles, p.pes)), spec)
        TeToMtia().apply(Context(), module)
        results, report = run(module, inputs)
        (kernel,) = report.kernels
        waits[level] = kernel.cycles["dma_wait"]
        assert (kernel.traffic.dram > 0) == (level == "dram")
    assert waits["sram"] == 0 and waits["dram"] > 100


def test_an_origin_beyond_what_irc_computes_is_an_error_at_the_op():
    """A DMA origin whose coordinates leave int64 (a fuzzer's 10**30 stride, seed 4) is a
    located error, not an OverflowError."""
    from xdsl.dialects.builtin import AffineMapAttr
    from xdsl.ir.affine import AffineExpr, AffineMap

    from irc.dialects.mtia import DmaOp

    text = _fc(64, 64, 64, "i8")
    module = parse_module(text, "fc.mlir")
    MtiaPartition(grid="1x2", splits="1x1x1x2").apply(Context(), module)
    TeToMtia().apply(Context(), module)
    dma = next(op for op in module.walk() if isinstance(op, DmaOp))
    d1 = AffineExpr.dimension(1)
    dma.properties["origin"] = AffineMapAttr(AffineMap(2, 0, (AffineExpr.constant(0), d1 * 10**30)))
    with pytest.raises(MtiaRunError, match=r"fc.mlir:\d+:\d+: error: 'mtia.dma' op origin .* reaches beyond 2\*\*62"):
        run(module, _inputs(64, 64, 64, "i8"))
