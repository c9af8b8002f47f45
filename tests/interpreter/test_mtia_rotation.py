"""T10 rotation plans compiled for MTIA's PE grid (mtia-partition's `mtia.rotation`,
te-to-mtia's mtia.alloc/load/step/shift/combine/put): any legal plan of any operator
kind runs with the te level's numbers, and its timeline is exactly what the planner
priced; mtia-partition compiles the plan irc-plan chooses."""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from xdsl.context import Context

from irc.devices import load_device
from irc.dialects.te import TensorOp
from irc.lowering.model_from_ir import describe
from irc.passes.mtia_partition import MAPPING_ATTR, ROTATION_ATTR, MtiaPartition, rotation_attr
from irc.target import set_mtia_target
from irc.lowering.te_to_mtia import TeToMtia
from irc.planner import PlanError, check_plan
from irc.planner.mtia import mtia_cost_model, place_operator, plan_operator
from irc.plans.plan import Plan
from irc.runner import parse_module, run
from tests.plan_strategies import legal_plans, one_rounding_bound, operators

MTIA = load_device("mtia-v1")


def _module(bound, shapes, dtype="f32"):
    def t(shape):
        return "tensor<" + "x".join(map(str, shape)) + f"x{dtype}>"

    names = bound.expr.inputs
    args = ", ".join(f"%{n}: {t(s)}" for n, s in zip(names, shapes))
    out = t(bound.shapes[bound.expr.output.tensor])
    return (f"func.func @main({args}) -> {out} {{\n"
            f'  %y = te.op "{bound.expr}" ({", ".join("%" + n for n in names)}) : '
            f"({', '.join(t(s) for s in shapes)}) -> {out}\n"
            f"  func.return %y : {out}\n}}\n")


class _Chosen:
    """A plan as plan_operator would return it, for rotation_attr."""

    def __init__(self, plan, homes):
        self.rotation, self.homes = plan, homes


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data(), case=operators(), seed=st.integers(0, 10**6))
def test_any_legal_plan_runs_with_the_te_numbers_in_the_planned_time(data, case, seed):
    bound, shapes = case
    text = _module(bound, shapes)
    module = parse_module(text, "op.mlir")
    set_mtia_target(module, "mtia-v1")
    op = next(o for o in module.walk() if isinstance(o, TensorOp))
    _, spec, _ = describe(op)
    assume(spec is not None)
    homes = place_operator(spec, MTIA)
    drawn = data.draw(legal_plans(spec, MTIA.pes))
    try:
        score = check_plan(spec, drawn, MTIA, mtia_cost_model(spec, homes))
    except PlanError:
        assume(False)
    plan = Plan(drawn.axes, drawn.op_factors, drawn.temporal_factors, score)
    op.attributes[ROTATION_ATTR] = rotation_attr(_Chosen(plan, homes), spec)
    try:
        TeToMtia().apply(Context(), module)
    except Exception as error:  # a plan whose rotations cannot be aligned (T10 s4.4)
        assume("cannot be lowered" not in str(error))
        raise
    rng = np.random.default_rng(seed)
    inputs = {f"arg{i}": rng.standard_normal(s).astype(np.float32) for i, s in enumerate(shapes)}
    reference, _ = run(parse_module(text, "op.mlir"), inputs)
    results, report = run(module, inputs)
    got, want = results["result0"], reference["result0"]
    named = {n: inputs[f"arg{i}"] for i, n in enumerate(bound.expr.inputs)}
    assert (np.abs(got.astype(np.float64) - want) <= one_rounding_bound(bound, named, got, want)).all()
    # the program is the plan: loads, steps, shifts with their barriers, the reduction
    # network and the store, each priced by the same cost model
    assert report.total_cycles == pytest.approx(plan.cycles, rel=1e-9)
    (kernel,) = report.kernels
    assert kernel.kind == "rotation" and kernel.steps == plan.score.steps
    assert kernel.cycles.get("compute", 0.0) == pytest.approx(float(plan.score.cost.compute), rel=1e-9)


def test_the_compiled_plan_is_the_one_irc_plan_chooses():
    # 200 x 1500 x 100 FP16 (batch 200): the planner prefers a T10 plan whose output
    # rotates along m (f_t 2) over MTIA's mapping; mtia-partition compiles that plan
    text = """
func.func @main(%A: tensor<200x1500xf16>, %B: tensor<1500x100xf16>) -> tensor<200x100xf16> {
  %c = te.op "C[m,n] += A[m,k] * B[k,n]" (%A, %B) : (tensor<200x1500xf16>, tensor<1500x100xf16>) -> tensor<200x100xf16>
  func.return %c : tensor<200x100xf16>
}
"""
    module = parse_module(text, "fc.mlir")
    op = next(o for o in module.walk() if isinstance(o, TensorOp))
    _, spec, _ = describe(op)
    chosen = plan_operator(spec, MTIA)
    assert chosen.chosen == "rotation" and chosen.rotation.temporal_factors["C"] == (2, 1, 1)
    MtiaPartition().apply(Context(), module)
    fields = op.attributes[ROTATION_ATTR].data
    assert tuple(fields["op_factors"].get_values()) == chosen.rotation.op_factors
    assert float(fields["planned_cycles"].value.data) == pytest.approx(chosen.cycles)
    TeToMtia().apply(Context(), module)
    names = [o.name for o in module.walk()]
    assert names.count("mtia.shift") == 1 and "mtia.combine" in names
    rng = np.random.default_rng(1)
    inputs = {"arg0": rng.standard_normal((200, 1500)).astype(np.float16),
              "arg1": rng.standard_normal((1500, 100)).astype(np.float16)}
    reference, _ = run(parse_module(text, "fc.mlir"), inputs)
    results, report = run(module, inputs)
    np.testing.assert_allclose(results["result0"].astype(np.float32), reference["result0"].astype(np.float32),
                               rtol=2e-2, atol=0.25)
    assert report.total_cycles == pytest.approx(chosen.cycles, rel=1e-9)
    # with rotation plans left out, MTIA's own mapping is compiled
    module = parse_module(text, "fc.mlir")
    MtiaPartition(rotation=False).apply(Context(), module)
    op = next(o for o in module.walk() if isinstance(o, TensorOp))
    assert MAPPING_ATTR in op.attributes and ROTATION_ATTR not in op.attributes
