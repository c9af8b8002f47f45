"""Batched loop runs (``irc.interpreter.loops``): a compute-shift loop nest executed as one
block product computes what its instructions compute one by one, with the same timeline;
runs that are no grid, or that break a chip check, go instruction by instruction; and the
Python work of a rotating kernel does not grow with the cores it runs on."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import irc.interpreter.device as device_level
from irc.devices import load_device
from irc.dialects.te_expr import parse_expression
from irc.interpreter import loops
from irc.interpreter.chip import ChipFault
from irc.planner import Plan, PlanError, check_plan
from irc.runner import parse_module, run
from irc.schedule.geometry import AlignError
from irc.schedule.kernel import build_shift_kernel
from irc.schedule.spec import UnsupportedExpression, op_spec_from_bound
from tests.plan_strategies import DEVICES, legal_plans, one_rounding_bound, operators, random_inputs, run_kernel


class Counting:
    """``run_loop`` that records whether each run was batched; optionally never batches."""

    def __init__(self, batch: bool = True):
        self.batch, self.batched, self.refused = batch, 0, 0

    def __call__(self, chip, loop):
        if not self.batch:
            self.refused += 1
            return False
        done = loops.run_loop(chip, loop)
        self.batched += done
        self.refused += not done
        return done


def run_both(monkeypatch, kernel, inputs, device):
    """The kernel run batched and instruction by instruction: (results, reports, counter)."""
    outcomes = []
    for batch in (True, False):
        counter = Counting(batch)
        monkeypatch.setattr(device_level, "run_loop", counter)
        outcomes.append((*run_kernel(kernel, inputs, device, "t10"), counter))
    monkeypatch.undo()
    return outcomes


@pytest.mark.slow
@settings(max_examples=40)
@given(data=st.data(), op=operators(kinds=("matmul", "batched")), device=st.sampled_from(DEVICES),
       dtype=st.sampled_from([np.float32, np.float16]), slab_bytes=st.sampled_from([loops.SLAB_BYTES, 1]))
def test_batched_runs_compute_what_the_steps_compute(data, op, device, dtype, slab_bytes):
    """Also with the larger operand stacked one block at a time (``slab_bytes`` 1)."""
    bound, shapes = op
    spec = op_spec_from_bound(bound, np.dtype(dtype).itemsize)
    plan = data.draw(legal_plans(spec, load_device(device).cores))
    try:
        check_plan(spec, plan, device, "t10")
        kernel = build_shift_kernel(bound, plan, device, "t10", dtype)
    except (PlanError, AlignError, UnsupportedExpression):
        assume(False)
    inputs = random_inputs(bound, shapes, dtype, 0)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(loops, "SLAB_BYTES", slab_bytes)
        (batched, report, counter), (stepped, reference_report, _) = run_both(monkeypatch, kernel, inputs, device)
    assert counter.batched + counter.refused == 1          # one run: the kernel's loop nest
    allowed = one_rounding_bound(bound, inputs, batched, stepped)
    assert (np.abs(batched.astype(np.float64) - stepped.astype(np.float64)) <= allowed).all()
    assert [(e.category, e.name, e.cycles, e.cores, e.where) for e in report.events] == \
        [(e.category, e.name, e.cycles, e.cores, e.where) for e in reference_report.events]
    assert (report.steps, report.peak_sram_bytes) == (reference_report.steps, reference_report.peak_sram_bytes)


TWICE = """
func.func @twice(%a: tensor<2x4xf32>, %b: tensor<4x2xf32>) -> tensor<2x2xf32> attributes {irc.target = #irc.target<"tiny4", "t10", {}>} {
  %C = device.alloc {name = "C", cores = 1 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<2x2xf32>
  %A = device.alloc {name = "A", cores = 1 : i64, bytes = 32 : i64, offset = 16 : i64} : !device.buffer<2x4xf32>
  %B = device.alloc {name = "B", cores = 1 : i64, bytes = 32 : i64, offset = 48 : i64} : !device.buffer<4x2xf32>
  device.load %a into %A {origins = array<i64: 0, 0>} : tensor<2x4xf32>, !device.buffer<2x4xf32>
  device.load %b into %B {origins = array<i64: 0, 0>} : tensor<4x2xf32>, !device.buffer<4x2xf32>
  device.fill %C {value = 0.000000e+00 : f64} : !device.buffer<2x2xf32>
  device.mma "C[m,n] += A[m,k] * B[k,n]" %C, (%A, %B) {tiles = array<i64: 2, 2, K>, cores = 1 : i64, windows = [array<i64: 0, 0>, array<i64: 0, 0>, array<i64: 0, 0>], kind = "matmul", roles = {batch = 1 : i64, m = 2 : i64, n = 2 : i64, k = K : i64}, step = 0 : i64} : !device.buffer<2x2xf32>, (!device.buffer<2x4xf32>, !device.buffer<4x2xf32>)
  device.mma "C[m,n] += A[m,k] * B[k,n]" %C, (%A, %B) {tiles = array<i64: 2, 2, K>, cores = 1 : i64, windows = [array<i64: 0, 0>, array<i64: 0, SECOND>, array<i64: SECOND, 0>], kind = "matmul", roles = {batch = 1 : i64, m = 2 : i64, n = 2 : i64, k = K : i64}, step = 1 : i64} : !device.buffer<2x2xf32>, (!device.buffer<2x4xf32>, !device.buffer<4x2xf32>)
  %c = device.store %C {origins = array<i64: 0, 0>, group = array<i64: 0>, fill = 0.000000e+00 : f64} : !device.buffer<2x2xf32> -> tensor<2x2xf32>
  device.free %C : !device.buffer<2x2xf32>
  device.free %A : !device.buffer<2x4xf32>
  device.free %B : !device.buffer<4x2xf32>
  func.return %c : tensor<2x2xf32>
}
"""


@pytest.mark.parametrize("second, k, batched", [(2, 2, 1), (0, 4, 0)])
def test_runs_that_are_no_grid_go_step_by_step(monkeypatch, second, k, batched):
    """Two steps over the two k-halves are a grid (one 2x4 @ 4x2 product); two steps over
    the same windows add the whole product twice, which no block product states."""
    counter = Counting()
    monkeypatch.setattr(device_level, "run_loop", counter)
    text = TWICE.replace("SECOND", str(second)).replace("K", str(k))
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 4)).astype(np.float32), rng.standard_normal((4, 2)).astype(np.float32)
    results, _ = run(parse_module(text, "twice.mlir"), {"arg0": a, "arg1": b}, None, 0)
    expected = a @ b if batched else 2 * (a @ b)
    np.testing.assert_allclose(results["result0"], expected, rtol=1e-6)
    assert (counter.batched, counter.refused) == (batched, 1 - batched)


RING = """
func.func @ring(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {irc.target = #irc.target<"tiny4", "t10", {}>} {
  %X = device.alloc {name = "X", cores = 2 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
  %R = device.alloc {name = "X.recv", cores = 2 : i64, bytes = 16 : i64, offset = 16 : i64} : !device.buffer<1x4xf32>
  %Y = device.alloc {name = "Y", cores = 2 : i64, bytes = 16 : i64, offset = 32 : i64} : !device.buffer<1x4xf32>
  device.load %x into %X {origins = array<i64: 0, 0, 1, 0>} : tensor<2x4xf32>, !device.buffer<1x4xf32>
  device.shift %X through %R {source = array<i64: 1, 0>} : !device.buffer<1x4xf32>, !device.buffer<1x4xf32>
  device.sync {cores = 2 : i64}
  device.vector "Y[i,j] = X[i,j]" %Y, (%R) {tiles = array<i64: 1, 4>, cores = 2 : i64, windows = [array<i64: 0, 0>, array<i64: 0, 0>], kind = "unary", roles = {}, step = 0 : i64} : !device.buffer<1x4xf32>, (!device.buffer<1x4xf32>)
  %y = device.store %Y {origins = array<i64: 0, 0, 1, 0>, group = array<i64: 0, 1>, fill = 0.000000e+00 : f64} : !device.buffer<1x4xf32> -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
"""


def test_a_receive_buffer_holds_nothing_readable_after_its_shift():
    with pytest.raises(ChipFault, match=r"ring\.mlir:\d+:\d+: error: 'device.vector' op core 0 reads buffer "
                                        r"X\.recv before anything wrote it"):
        run(parse_module(RING, "ring.mlir"), None, None, 0)


def _python_calls(kernel, inputs) -> tuple[int, int]:
    """Python function calls (and C calls) while the device program of ``kernel`` runs,
    and its instruction count."""
    from irc.lowering.shift_ir import kernel_module
    from irc.lowering.shift_to_device import ShiftToDevice
    from irc.passes.device_alloc import DeviceAlloc
    from irc.runner import interpreter_for
    from xdsl.context import Context

    module = kernel_module(kernel, cost="t10")
    for stage in (ShiftToDevice(), DeviceAlloc()):
        stage.apply(Context(), module)
    (function,) = [op for op in module.walk() if op.name == "func.func"]
    instructions = len(list(function.body.block.ops))
    interpreter = interpreter_for(module)
    calls = [0]

    def count(frame, event, arg):
        if event in ("call", "c_call"):
            calls[0] += 1

    interpreter_for(module.clone()).call_op("main", tuple(inputs))  # imports, table caches
    sys.setprofile(count)
    try:
        interpreter.call_op("main", tuple(inputs))
    finally:
        sys.setprofile(None)
    return calls[0], instructions


def test_python_calls_of_a_rotating_kernel_do_not_grow_with_its_cores(monkeypatch):
    """A rotating matmul (C rotating through the 4 cores that share it, A through the
    n-cores: 8 compute steps, 15 shifts) on 16 and on 256 cores of the IPU: the same
    program shape, the same number of Python-level calls (the batched run touches every
    core with numpy, never a Python loop), and a bounded number per instruction."""
    counted, counter = [], Counting()
    monkeypatch.setattr(device_level, "run_loop", counter)
    for n_cores in (4, 64):
        bound = parse_expression("C[m,n] += A[m,k] * B[k,n]").bind([(8, 64), (64, 16 * n_cores)], (8, 16 * n_cores))
        plan = Plan(("m", "n", "k"), (1, n_cores, 4), {"C": (2, 1, 1), "A": (1, 1, 4), "B": (1, 1, 1)})
        kernel = build_shift_kernel(bound, plan, "ipu-mk2", "t10", np.float16)
        assert kernel.steps == 8 and kernel.cores == 4 * n_cores
        inputs = random_inputs(bound, [(8, 64), (64, 16 * n_cores)], np.float16, 0)
        counted.append(_python_calls(kernel, [inputs["A"], inputs["B"]]))
    (small, instructions), (large, same_instructions) = counted
    assert counter.batched == 2 * 2 and counter.refused == 0   # warm-up and counted runs, batched
    assert instructions == same_instructions
    assert abs(large - small) <= 0.05 * small   # equal when measured (9,379 calls each)
    assert large <= 400 * instructions          # (instruction by instruction: grows with the cores)
