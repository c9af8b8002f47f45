"""A layer's gradient pair as ONE compute-shift kernel (irc.schedule.pair_kernel.build_fused_kernel):
every legal fused plan (small shapes, tiny devices) aligns, computes the numbers of the
unfused te program and takes on the interpreter exactly the cycles
`irc.plans.pair.check_pair_plan` prices it at, its loop nest being the planner's."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from irc.dialects.te_expr import parse_expression
from irc.planner import Plan, PlanError
from irc.plans.from_te import op_spec_from_expr
from irc.plans.pair import check_pair_plan, pair_spec
from irc.schedule.pair_kernel import build_fused_kernel
from irc.schedule.spec import UnsupportedExpression
from tests.plan_strategies import one_rounding_bound

PAIRS = {
    # a linear layer's dX and dW
    "gemm": ("DX[m,k] += G[m,n] * W[k,n]", "DW[k,n] += G[m,n] * X[m,k]",
             lambda b, m, k, n: ([(m, n), (k, n)], (m, k), [(m, n), (m, k)], (k, n))),
    # a batched (token-major) linear layer: dW sums over the batch and the rows
    "batched": ("DX[b,m,k] += G[b,m,n] * W[k,n]", "DW[k,n] += G[b,m,n] * X[b,m,k]",
                lambda b, m, k, n: ([(b, m, n), (k, n)], (b, m, k), [(b, m, n), (b, m, k)], (k, n))),
}


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@st.composite
def fused_cases(draw):
    """A pair, its bound expressions, a fused plan satisfying the T10 constraints over its
    five tensors (F_op within the cores, each tensor's f_t dividing its sharing count, the
    paces on every axis a divisibility chain, at most the per-core extent), the device
    and the element type."""
    kind = draw(st.sampled_from(sorted(PAIRS)))
    dx_text, dw_text, shapes = PAIRS[kind]
    b, m, k, n = draw(st.integers(1, 3)), draw(st.integers(1, 8)), draw(st.integers(1, 8)), draw(st.integers(1, 8))
    dx_in, dx_out, dw_in, dw_out = shapes(b, m, k, n)
    bound_dx = parse_expression(dx_text).bind(dx_in, dx_out)
    bound_dw = parse_expression(dw_text).bind(dw_in, dw_out)
    dtype = np.dtype(draw(st.sampled_from(["float32", "float16"])))
    pair = pair_spec(op_spec_from_expr(bound_dx, dtype.itemsize), op_spec_from_expr(bound_dw, dtype.itemsize), "G")
    device = draw(st.sampled_from(["tiny4", "tiny8", "tiny16"]))
    cores = int(device[4:])
    union = pair.union_spec()
    axes = union.axis_names
    factors, budget = [], cores
    for extent in union.extents:
        f = draw(st.integers(1, max(1, min(extent, budget))))
        factors.append(f)
        budget //= f
    per_core = [-(-e // f) for e, f in zip(union.extents, factors)]
    temporal = {t.name: [1] * len(axes) for t in union.tensors}
    remaining = {t.name: math.prod(f for a, f in zip(axes, factors) if not t.indexed_by(a)) for t in union.tensors}
    for name in draw(st.permutations([t.name for t in union.tensors])):
        tensor = union.tensor(name)
        for d in draw(st.permutations(range(len(axes)))):
            if not tensor.indexed_by(axes[d]):
                continue
            chosen = [temporal[t.name][d] for t in union.tensors if t.name != name and temporal[t.name][d] > 1]
            options = [x for x in _divisors(remaining[name]) if x <= per_core[d]
                       and all(x % c == 0 or c % x == 0 for c in chosen)]
            pick = draw(st.sampled_from(options))
            temporal[name][d] = pick
            remaining[name] //= pick
    plan = Plan(axes, tuple(factors), {name: tuple(f) for name, f in temporal.items()})
    return pair, (bound_dx, bound_dw), plan, device, dtype


def _run(kernel, inputs: dict):
    """Execute the fused kernel as an aligned `shift.kernel` (lowered to its device program)
    on the interpreter: its two results and the chip report."""
    from irc.interpreter.registry import chips_of
    from irc.lowering.shift_ir import kernel_module
    from irc.runner import device_program, interpreter_for

    names = kernel.operand_names
    module = kernel_module(kernel, {n: inputs[n].dtype for n in names})
    interpreter = interpreter_for(device_program(module))
    results = interpreter.call_op("main", tuple(inputs[n] for n in names))
    (chip,) = chips_of(interpreter)
    return [np.asarray(r) for r in results], chip.report()


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fused_cases(), st.integers(0, 2**31 - 1))
def test_every_legal_fused_plan_computes_the_unfused_numbers_at_its_planned_cycles(case, seed):
    from irc.interpreter.te_eval import evaluate

    pair, bounds, plan, device, dtype = case
    try:
        score = check_pair_plan(pair, plan, device, "t10")
    except PlanError as error:
        assume("memory per core" not in str(error))   # a plan too large for the tiny chip
        raise
    try:
        kernel = build_fused_kernel(bounds, plan, device, "t10", {name: dtype for name in plan.temporal_factors})
    except UnsupportedExpression as error:   # a padded reduction axis the expression forbids
        assume("pads reduction axis" not in str(error))
        raise
    # the loop nest is the planner's, one step of both products per step
    assert [(lv.axis, lv.trips, lv.tensors) for lv in kernel.levels] == \
        [(lv.axis, lv.steps + 1, lv.tensors) for lv in score.loop_order]
    rng = np.random.default_rng(seed)
    shapes = {name: bound.shapes[name] for bound in bounds for name in bound.expr.inputs}
    inputs = {name: rng.standard_normal(shape).astype(dtype) for name, shape in shapes.items()}
    results, report = _run(kernel, inputs)
    assert report.kernel_cycles == pytest.approx(score.cycles, rel=1e-9)
    for bound, result in zip(bounds, results):
        reads = [inputs[name] for name in bound.expr.inputs]
        expected = evaluate(bound, reads, dtype)   # the unfused te program's numbers
        within = one_rounding_bound(bound, {n: inputs[n] for n in bound.expr.inputs}, result, expected)
        error = np.abs(result.astype(np.float64) - expected.astype(np.float64))
        assert (error <= within).all(), f"{bound.expr}: {error.max()} beyond the bound under {plan}"


def test_the_kernel_prices_each_product_as_the_planner():
    """The dX product carries the whole exchange, the dW product its compute and its
    own output reduction (`irc.planner.igo_pair`, assumptions 2-4)."""
    from irc.cost import get_cost_model
    from irc.devices import load_device

    bound_dx = parse_expression(PAIRS["gemm"][0]).bind([(64, 64), (64, 64)], (64, 64))
    bound_dw = parse_expression(PAIRS["gemm"][1]).bind([(64, 64), (64, 64)], (64, 64))
    pair = pair_spec(op_spec_from_expr(bound_dx, 2), op_spec_from_expr(bound_dw, 2), "G")
    names = ("DX", "DW", "G", "W", "X")
    plan = Plan(("m", "k", "n"), (2, 4, 2), {n: (1, 1, 4) if n == "G" else (1, 1, 1) for n in names})
    score = check_pair_plan(pair, plan, "tiny16", "t10")
    kernel = build_fused_kernel([bound_dx, bound_dw], plan, "tiny16", "t10")
    device, cost = load_device("tiny16"), get_cost_model("t10")
    dx, dw = (cost.op_time(device, kernel.op_work(i)) for i in (0, 1))
    assert float(dx.total) == pytest.approx(score.dx.total) and float(dw.total) == pytest.approx(score.dw.total)
    assert float(dw.shift) == 0 and float(dw.sync) == 0 and float(dx.shift) > 0
    assert kernel.planned_cycles == pytest.approx(score.cycles)
    # one ring for dY: one level, rotating G alone, both products computing at every step
    assert [(lv.axis, lv.tensors) for lv in kernel.levels] == [("n", ("G",))]
    assert kernel.operand_names == ("G", "W", "X")
