"""Between an `rtensor.op` and the planner: its ``OpSpec``, its scored plan on the
module's target, and the T10 constraint and idle-plan checks of ``rtensor-check``; and
how `rtensor-partition` moves a value into a planned layout (`relayout_onto`).

The dialect states a plan; whether the plan is legal on a chip depends on the chip, so
these checks live here, next to the target, and run as an explicit pass, never as a side
effect of parsing.
"""

from __future__ import annotations

import math

from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint

from irc.cost import CostModel
from irc.devices import Device
from irc.dialects.rtensor import IDLE_ATTR, IdlePlanAttr, RelayoutOp, RTensorOp, RTensorType, layout_types
from irc.planner import Plan, PlanError, SpecError, check_plan
from irc.plans.from_te import op_spec_from_expr
from irc.planner.idle import IdlePlan, partition_elements, setup_cycles
from irc.plans.spec import OpSpec
from irc.target import device_and_cost


class PlanCheckError(ValueError):
    """An `rtensor.op` whose plan breaks a T10 constraint on its target (the message
    names the constraint)."""


def op_spec(op: RTensorOp) -> OpSpec:
    """The planner's ``OpSpec`` of ``op``, each tensor with its own element size (raises
    ``SpecError``)."""
    bound = op.bound()
    sizes = {name: value.type.element_bytes for name, value in zip(bound.expr.inputs, op.inputs)}  # type: ignore[union-attr]
    return op_spec_from_expr(bound, op.output.type.element_bytes, tensor_bytes=sizes)  # type: ignore[union-attr]


def stated_plan(op: RTensorOp) -> Plan:
    """The planner's (unscored) ``Plan`` that ``op`` states."""
    stated = op.plan()
    return Plan(stated.axes, stated.op_factors, stated.temporal_factors)


def scored_plan(op: RTensorOp, device: Device | None = None, cost: CostModel | None = None) -> Plan:
    """The plan ``op`` states, checked and scored by ``check_plan`` on ``device`` under
    ``cost`` (by default the module's target). Raises ``PlanCheckError``."""
    if device is None or cost is None:
        device, cost = device_and_cost(op)
    plan = stated_plan(op)
    try:
        spec = op_spec(op)
    except SpecError as error:
        raise PlanCheckError(f"the planner cannot describe this operator: {error}") from None
    try:
        score = check_plan(spec, plan, device, cost)
    except PlanError as error:
        raise PlanCheckError(f"plan breaks a T10 constraint: {error}") from None
    return Plan(plan.axes, plan.op_factors, plan.temporal_factors, score)


def idle_plan(op: RTensorOp, device: Device | None = None, cost: CostModel | None = None) -> IdlePlan | None:
    """The ``IdlePlan`` of ``op``'s ``idle`` attribute (None when it has none)."""
    attr = op.attributes.get(IDLE_ATTR)
    if not isinstance(attr, IdlePlanAttr):
        return None
    return _idle_plan(op, attr, scored_plan(op, device, cost))


def _idle_plan(op: RTensorOp, attr: IdlePlanAttr, plan: Plan) -> IdlePlan:
    spans = [s * t for s, t in zip(plan.score.steps_per_axis, plan.score.step_tiles)]
    spec = op_spec(op)
    factors = op.idle_factors(attr)
    nbytes = {
        name: spec.bytes_of(name) * partition_elements(spec, name, per_axis, spans)
        for name, per_axis in factors.items()
    }
    return IdlePlan(tuple(plan.op_factors), factors, nbytes)


def check_op(op: RTensorOp, device: Device, cost: CostModel) -> Plan:
    """Every T10 constraint of ``op``'s plan on ``device``, its layouts' replicas and
    padding, and its idle plan's bytes and setup cycles; the scored plan."""
    plan = scored_plan(op, device, cost)
    expected = layout_types(op.bound(), plan, {name: t.element_type for name, t in op.tensor_types().items()})
    for name, type_ in op.tensor_types().items():
        want = expected[name]
        if type_.replica_count != want.replica_count:
            raise PlanCheckError(
                f"{name} has replicas={type_.replica_count}, but the plan gives "
                f"{want.replica_count} (cores sharing {name}'s partition / prod(f_t))"
            )
        if type_.padded_shape != want.padded_shape:
            raise PlanCheckError(
                f"{name} has padded shape {'x'.join(map(str, type_.padded_shape))}, but the "
                f"plan pads it to {'x'.join(map(str, want.padded_shape))}"
            )
    attr = op.attributes.get(IDLE_ATTR)
    if isinstance(attr, IdlePlanAttr):
        idle = _idle_plan(op, attr, plan)
        if idle.cold_bytes != attr.bytes_per_core:
            raise PlanCheckError(
                f"idle plan says bytes = {attr.bytes_per_core}, but its weights take "
                f"{idle.cold_bytes} bytes per core at rest"
            )
        if idle.cold_bytes > plan.memory_per_core:
            raise PlanCheckError(
                f"idle plan takes {idle.cold_bytes} bytes per core, more than the active plan's "
                f"{plan.memory_per_core}"
            )
        setup = setup_cycles(idle, plan, device, cost)
        if setup is None:
            raise PlanCheckError("the idle plan cannot be set up into the active plan")
        if math.ceil(setup) != attr.setup_cycles:
            raise PlanCheckError(
                f"idle plan says setup = {attr.setup_cycles} cycles, but gathering its slices "
                f"costs {math.ceil(setup)} cycles on {device.name} under {cost.name}"
            )
    return plan


def relayout_onto(value: SSAValue, want: RTensorType, op: Operation, rewriter: PatternRewriter) -> SSAValue:
    """``value`` in layout ``want`` for ``op`` (an ``rtensor.relayout`` inserted before it),
    reusing an rtensor producer when there is one: a te.op's or a gradient pair's operand."""
    producer = value.owner
    if isinstance(producer, RelayoutOp) and isinstance(producer.source.type, RTensorType):
        value = producer.source
        if value.type == want:
            return value
    relayout = RelayoutOp(value, want)
    rewriter.insert(relayout, InsertPoint.before(op))
    return relayout.result
