"""The IR path: shift.kernel -> rotation-align -> shift-to-device -> device-alloc -> run.

Checks that the printed/parsed `device` program computes bit-for-bit what the direct
``irc.schedule`` execution computes, with the same timeline; that faults are reported in
IR terms (location, core, buffer); that device-alloc rejects an overflowing program
naming the core, the buffers and the bytes; the report and the Chrome trace; the
``inference`` pipeline and ``compile_and_run``; and seed 003's problem end to end.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType, f16, f32
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.interpreter import InterpretationError
from xdsl.ir import Block, Region
from xdsl.passes import PassPipeline
from xdsl.utils.exceptions import DiagnosticException

from irc import universe
from irc.devices import load_device
from irc.dialects.shift import KernelOp
from irc.interpreter.chip import Chip, ChipFault
from irc.runner import run
from irc.planner import PlanError, check_plan
from irc.runner import device_program as program_to_run
from irc.runner import find_function, interpreter_for, make_context, parse_module
from irc.schedule.kernel import build_shift_kernel
from irc.schedule.spec import UnsupportedExpression, op_spec_from_bound
from irc.dialects.target import TARGET_ATTR
from irc.lowering.rtensor_to_shift import kernel_op_for
from irc.target import target_attr
from irc.lowering.shift_to_device import ShiftToDevice
from irc.passes.device_alloc import DeviceAlloc
from irc.passes.rotation_align import RotationAlign
from tests.plan_strategies import DEVICES, legal_plans, operators, random_inputs, run_kernel


def kernel_module(bound, plan, device, cost, dtype) -> ModuleOp:
    element = f16 if np.dtype(dtype) == np.float16 else f32
    expr = bound.expr
    input_types = [TensorType(element, bound.shapes[n]) for n in expr.inputs]
    output_type = TensorType(element, bound.shapes[expr.output.tensor])
    block = Block(arg_types=input_types)
    ordered = type(plan)(plan.axes, plan.op_factors,
                         {t: plan.temporal_factors[t] for t in (expr.output.tensor, *expr.inputs)})
    kernel = kernel_op_for(str(expr), block.args, output_type, ordered)
    block.add_ops([kernel, ReturnOp(kernel.output)])
    func = FuncOp("main", (input_types, [output_type]), Region(block))
    module = ModuleOp([func])
    module.attributes[TARGET_ATTR] = target_attr(load_device(device), cost)
    return module


def lower(module: ModuleOp) -> ModuleOp:
    ctx = Context()
    for stage in (RotationAlign(), ShiftToDevice(), DeviceAlloc()):
        stage.apply(ctx, module)
    return module


@pytest.mark.slow
@settings(max_examples=25)
@given(data=st.data(), op=operators(), device=st.sampled_from(DEVICES),
       dtype=st.sampled_from([np.float32, np.float16]))
def test_device_ir_equals_direct_execution(data, op, device, dtype):
    bound, shapes = op
    spec = op_spec_from_bound(bound, np.dtype(dtype).itemsize)
    plan = data.draw(legal_plans(spec, load_device(device).cores))
    try:
        check_plan(spec, plan, device, "t10")
        kernel = build_shift_kernel(bound, plan, device, "t10", dtype)
    except (PlanError, UnsupportedExpression):
        assume(False)
    inputs = random_inputs(bound, shapes, dtype, 1)
    direct, direct_report = run_kernel(kernel, inputs, device, "t10")

    module = kernel_module(bound, plan, device, "t10", dtype)
    aligned_text = str(RotationAlign().apply(Context(), module) or module)
    shift_results, shift_report = run(parse_module(aligned_text, "shift.mlir"),
                                                  {f"arg{i}": inputs[n] for i, n in enumerate(bound.expr.inputs)})
    lower(module)
    text = str(module)
    reparsed = parse_module(text, "device.mlir")   # the printed device program parses and verifies
    results, report = run(reparsed, {f"arg{i}": inputs[n] for i, n in enumerate(bound.expr.inputs)})
    np.testing.assert_array_equal(results["result0"], direct)
    np.testing.assert_array_equal(shift_results["result0"], direct)
    assert report.cycles == pytest.approx(direct_report.cycles)
    assert shift_report.cycles == pytest.approx(direct_report.cycles)
    assert report.peak_sram_bytes == direct_report.peak_sram_bytes


MATMUL_PLAN_TEXT = """
builtin.module attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
func.func @main(%a: tensor<8x12xf32>, %b: tensor<12x16xf32>) -> tensor<8x16xf32> {
  %c = shift.kernel "C[m,n] += A[m,k] * B[k,n]"(%a, %b) {grid = array<i64: 2, 4, 1>} : (tensor<8x12xf32>, tensor<12x16xf32>) -> tensor<8x16xf32> {
    shift.ring "C" {temporal = array<i64: 1, 1, 1>}
    shift.ring "A" {temporal = array<i64: 1, 1, 4>}
    shift.ring "B" {temporal = array<i64: 1, 1, 2>}
  }
  func.return %c : tensor<8x16xf32>
}
}
"""


def device_program(text=MATMUL_PLAN_TEXT) -> str:
    module = parse_module(text, "in.mlir")
    return str(lower(module))


def run_text(text: str, seed: int = 0):
    return run(parse_module(text, "prog.mlir"), None, None, seed)


def test_fault_shift_destination_without_buffer():
    text = device_program()
    # shrink the receive buffer of A to 4 cores: the shift's destinations 4..7 have none
    text = text.replace('name = "k1.A.recv", cores = 8', 'name = "k1.A.recv", cores = 4', 1)
    with pytest.raises(ChipFault, match=r"prog\.mlir:\d+:\d+: error: 'device.shift' op core 4: the shift's "
                                        r"destination has no buffer k1\.A\.recv"):
        run_text(text)


def test_fault_read_before_write():
    text = device_program()
    lines = [line for line in text.splitlines() if "device.load %b" not in line]
    with pytest.raises(ChipFault, match=r"'device.mma' op core 0 reads buffer k1.B before anything wrote it"):
        run_text("\n".join(lines))


PIECES = """
builtin.module attributes {irc.target = #irc.target<"tiny4", "t10", {}>} {
  func.func @main(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
    %X = device.alloc {name = "X", cores = 4 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
    %Y = device.alloc {name = "Y", cores = 4 : i64, bytes = 16 : i64, offset = 16 : i64} : !device.buffer<2x2xf32>
    device.load %x into %X {origins = affine_map<(d0) -> (d0 floordiv 2, (d0 mod 2) * 4)>} : tensor<2x8xf32>, !device.buffer<1x4xf32>
    device.relayout %X into %Y {shape = array<i64: 2, 8>, origins = affine_map<(d0) -> (0, d0 * 2)>, pieces = affine_map<(d0, d1) -> (PIECES)>, piece_count = 2 : i64, piece_shape = array<i64: 1, 2>, bytes = 16 : i64, barriers = 2 : i64} : !device.buffer<1x4xf32>, !device.buffer<2x2xf32>
    %y = device.store %Y {origins = affine_map<(d0) -> (0, d0 * 2)>, group = affine_map<(d0) -> (d0)>, fill = 0.0 : f64} : !device.buffer<2x2xf32> -> tensor<2x8xf32>
    func.return %y : tensor<2x8xf32>
  }
}
"""


def test_a_relayout_runs_its_pieces_and_checks_they_cover_the_tile():
    """Row-split tiles (1x4 per core) into column-split ones (2x2): core d0's piece d1 is
    the box of core 2 * d1 + d0 // 2 at column (d0 mod 2) * 2; a piece map that writes an
    element twice is a fault naming the core."""
    x = np.arange(16, dtype=np.float32).reshape(2, 8)
    good = PIECES.replace("PIECES", "d1 * 2 + d0 floordiv 2, 0, (d0 mod 2) * 2, d1, 0")
    results, report = run(parse_module(good, "pieces.mlir"), {"arg0": x})
    np.testing.assert_array_equal(results["result0"], x)
    assert report.cycles["relayout"] > 0 and report.cycles["host_io"] > 0
    twice = PIECES.replace("PIECES", "d0 floordiv 2, 0, (d0 mod 2) * 2, 0, 0")
    with pytest.raises(ChipFault, match=r"pieces\.mlir:\d+:\d+: error: 'device.relayout' op core 0: the pieces "
                                        r"write an element of Y's tile more than once"):
        run(parse_module(twice, "pieces.mlir"), {"arg0": x})


def test_fault_sram_bounds():
    text = device_program().replace("offset = 0 : i64", "offset = 65500 : i64", 1)
    with pytest.raises(ChipFault, match=r"'device.alloc' op core 0: buffer k1.C at SRAM offset 65500 with 64 "
                                        r"bytes ends at byte 65564, beyond the 65536 bytes of SRAM"):
        run_text(text)


def test_fault_overlapping_buffers():
    text = device_program()
    import re
    text = re.sub(r'(name = "k1.A", cores = 8 : i64, bytes = \d+ : i64, offset = )\d+', r"\g<1>0", text)
    with pytest.raises(ChipFault, match=r"buffer k1.A \[0, \d+\) overlaps live buffer k1.C"):
        run_text(text)


def test_device_alloc_rejects_overflow_naming_core_buffers_bytes():
    text = """
builtin.module attributes {irc.target = #irc.target<"tiny4", "t10", {}>} {
func.func @main() {
  %a = device.alloc {name = "a", cores = 4 : i64, bytes = 2048 : i64, offset = -1 : i64} : !device.buffer<1024xf16>
  %b = device.alloc {name = "b", cores = 4 : i64, bytes = 1024 : i64, offset = -1 : i64} : !device.buffer<512xf16>
  device.free %a : !device.buffer<1024xf16>
  %c = device.alloc {name = "c", cores = 2 : i64, bytes = 2048 : i64, offset = -1 : i64} : !device.buffer<1024xf16>
  %d = device.alloc {name = "d", cores = 4 : i64, bytes = 2048 : i64, offset = -1 : i64} : !device.buffer<1024xf16>
  func.return
}
}
"""
    module = parse_module(text, "big.mlir")
    with pytest.raises(DiagnosticException, match=r"big.mlir:8:3: error: 'device.alloc' op SRAM overflow on core 0: "
                                                   r"buffer d \(2048 B\) does not fit next to the live buffers "
                                                   r"c \(2048 B\), b \(1024 B\): 5120 bytes needed \(first free "
                                                   r"offset 3072\), core has 4096 bytes on tiny4"):
        DeviceAlloc().apply(Context(), module)
    # without d it fits, and c reuses the range a freed (first fit)
    module = parse_module("\n".join(l for l in text.splitlines() if "%d =" not in l), "ok.mlir")
    DeviceAlloc().apply(Context(), module)
    offsets = {op.buffer_name.data: op.offset.value.data for op in module.walk() if hasattr(op, "buffer_name")}
    assert offsets == {"a": 0, "b": 2048, "c": 0}


def test_device_alloc_packs_what_first_fit_fragments():
    """4 KiB per core, never more than 4 KiB live: first fit in program order leaves a
    1 KiB hole below b that c (3 KiB) cannot use; placing the buffers with their whole
    live ranges in view (largest first) packs them, as the planner's count admits."""
    text = """
builtin.module attributes {irc.target = #irc.target<"tiny4", "t10", {}>} {
func.func @main() {
  %a = device.alloc {name = "a", cores = 4 : i64, bytes = 1024 : i64, offset = -1 : i64} : !device.buffer<512xf16>
  %b = device.alloc {name = "b", cores = 4 : i64, bytes = 1024 : i64, offset = -1 : i64} : !device.buffer<512xf16>
  device.free %a : !device.buffer<512xf16>
  %c = device.alloc {name = "c", cores = 4 : i64, bytes = 3072 : i64, offset = -1 : i64} : !device.buffer<1536xf16>
  device.free %b : !device.buffer<512xf16>
  device.free %c : !device.buffer<1536xf16>
  func.return
}
}
"""
    from irc.passes.device_alloc import live_intervals, online_first_fit

    module = parse_module(text, "packed.mlir")
    (func,) = [op for op in module.walk() if isinstance(op, FuncOp)]
    intervals = live_intervals(func)
    assert max(online_first_fit(intervals)[i.op] + i.size for i in intervals) == 5120
    DeviceAlloc().apply(Context(), module)
    offsets = {op.buffer_name.data: op.offset.value.data for op in module.walk() if hasattr(op, "buffer_name")}
    assert offsets == {"a": 0, "b": 3072, "c": 0}
    run(module, {})   # the chip checks that no two live buffers overlap


def test_report_and_trace(tmp_path):
    results, report = run_text(device_program())
    assert report.cycles["shift"] > 0 and report.cycles["sync"] > 0 and report.steps == 4
    text = str(report)
    for word in ("compute", "shift", "sync", "reduction", "host_io", "peak SRAM per core", "utilisation"):
        assert word in text
    path = tmp_path / "trace.json"
    report.write_trace(str(path))
    trace = json.loads(path.read_text())
    slices = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    assert {e["cat"] for e in slices} >= {"compute", "shift", "sync", "reduction", "host_io"}
    assert sum(e["args"]["cycles"] for e in slices) == pytest.approx(report.total_cycles)
    ends = [e["ts"] + e["dur"] for e in slices]
    assert max(ends) == pytest.approx(report.seconds * 1e6)


def test_inference_pipeline_and_compile_and_run():
    from irc.compile import compile_and_run

    text = open("examples/mlp.mlir").read()
    results, report = compile_and_run(text, device="tiny16")
    assert report.interpreted_kernel_cycles == pytest.approx(report.planned_kernel_cycles, rel=1e-9)
    assert all(err < 1e-3 for err in report.max_abs_error.values())
    assert "device.mma" in report.device_ir and "shift.kernel" not in report.device_ir
    assert "planned kernel time" in str(report)


@pytest.mark.slow
def test_seed003_problem_end_to_end_on_1472_cores():
    """32x5120x15360 f16 on the IPU Mk2 with the planner's chosen plan (t10 cost model)."""
    from irc.dialects.te_expr import parse_expression
    from irc.planner import search

    m, k, n = 32, 5120, 15360
    bound = parse_expression("C[m,n] += A[m,k] * B[k,n]").bind([(m, k), (k, n)], (m, n))
    plan = search(op_spec_from_bound(bound, 2), "ipu-mk2", "t10").best
    kernel = build_shift_kernel(bound, plan, "ipu-mk2", "t10", np.float16)
    assert kernel.cores > 0.9 * 1472
    rng = np.random.default_rng(3)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    result, chip_report = run_kernel(kernel, {"A": a, "B": b}, "ipu-mk2", "t10")
    reference = a.astype(np.float32) @ b.astype(np.float32)
    # f16 storage: partial sums rounded once per step and per replica sum
    magnitude = np.abs(a).astype(np.float32) @ np.abs(b).astype(np.float32)
    bound_ = 2.0 ** -11 * (kernel.steps + kernel.output.rings + 2) * magnitude.max()
    assert np.max(np.abs(result - reference)) <= bound_
    assert chip_report.kernel_cycles == pytest.approx(plan.score.cost.total, rel=1e-9)


ROTATING_GATHER = """
builtin.module attributes {{irc.target = #irc.target<"tiny16", "t10", {{}}>}} {{
func.func @main(%e: tensor<16x8x{t}>, %i: tensor<4xi32>) -> tensor<4x8x{t}> {{
  %y = shift.kernel "Y[i,j] = E[I[i],j]"(%e, %i) {{grid = array<i64: {grid}>}} : (tensor<16x8x{t}>, tensor<4xi32>) -> tensor<4x8x{t}> {{
    shift.ring "Y" {{temporal = array<i64: 1, 1>}}
    shift.ring "E" {{temporal = array<i64: 1, {pace}>}}
    shift.ring "I" {{temporal = array<i64: 1, 1>}}
  }}
  func.return %y : tensor<4x8x{t}>
}}
}}
"""


@pytest.mark.parametrize("grid, pace, element", [((4, 1), 4, "f32"), ((4, 1), 2, "f16"), ((2, 2), 2, "f32")])
def test_a_gather_whose_table_rotates_runs_at_device_level(grid, pace, element):
    """``Y[i,j] = E[I[i],j]`` with the table split along j into a ring of ``pace``
    partitions (f_t > 1): each core holds a slice of every row, gathers the rows its
    indices name from the slice it holds, and the table shifts on to the next core; the
    device program equals te, and its kernel time is the plan's."""
    from irc.dialects.te_expr import parse_expression
    from irc.interpreter.te_eval import evaluate
    from irc.planner import Plan

    text = ROTATING_GATHER.format(t=element, grid=", ".join(map(str, grid)), pace=pace)
    device = str(lower(parse_module(text, "gather.mlir")))
    assert device.count("device.gather") >= 1 and "device.shift" in device
    dtype = np.float16 if element == "f16" else np.float32
    rng = np.random.default_rng(3)
    table = rng.standard_normal((16, 8)).astype(dtype)
    index = np.array([5, 0, 15, 5], np.int32)
    results, report = run(parse_module(device, "gather.dev.mlir"), {"arg0": table, "arg1": index})
    bound = parse_expression("Y[i,j] = E[I[i],j]").bind([(16, 8), (4,)], (4, 8))
    want = evaluate(bound, [table, index], np.dtype(dtype))
    np.testing.assert_array_equal(results["result0"], want)
    np.testing.assert_array_equal(want, table[index])
    spec = op_spec_from_bound(bound, np.dtype(dtype).itemsize, {"I": 4})
    plan = Plan(("i", "j"), grid, {"Y": (1, 1), "E": (1, pace), "I": (1, 1)})
    score = check_plan(spec, plan, "tiny16", "t10")
    assert score.cost.shift > 0
    assert report.kernel_cycles == pytest.approx(score.cost.total, rel=1e-9)


def test_a_shift_level_module_runs_as_its_device_program():
    """The interpreter never lowers: the runner lowers a module holding shift.kernels with
    the passes the inference pipeline ends with and runs the device program, so results
    and report at shift level are the device program's (the model stays on chip between
    its kernels), and the caller's module is left as it was."""
    text = (Path(__file__).parents[2] / "examples" / "mlp.mlir").read_text()
    shift = parse_module(text, "mlp.mlir")
    passes = universe.all_passes()
    PassPipeline.parse_spec(passes, "rtensor-partition{device=tiny16},rtensor-to-shift,rotation-align").apply(
        make_context(), shift)
    device = shift.clone()
    PassPipeline.parse_spec(passes, "shift-to-device,device-alloc").apply(make_context(), device)
    shift_results, shift_report = run(shift, None, None, seed=3)
    device_results, device_report = run(device, None, None, seed=3)
    assert shift_results.keys() == device_results.keys()
    for name in shift_results:
        np.testing.assert_array_equal(shift_results[name], device_results[name])
    assert shift_report.cycles == device_report.cycles
    assert shift_report.cycles["relayout"] > 0   # kernels hand their outputs on on chip
    assert str(program_to_run(shift)) == str(device)
    assert any(isinstance(op, KernelOp) for op in shift.walk())   # the caller's module, unlowered
    function = find_function(shift, None).function
    zeros = tuple(np.zeros(t.get_shape(), np.float32) for t in function.function_type.inputs)
    with pytest.raises(InterpretationError, match="shift.kernel"):   # no @impl lowers it at run time
        interpreter_for(shift).call_op(function, zeros)
