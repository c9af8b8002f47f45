"""Plans as text: the T10 benchmark output format (seeds/003) and JSON."""

from __future__ import annotations

import json
from typing import Any

from irc.plans.errors import PlanError
from irc.plans.plan import Plan
from irc.plans.spec import OpSpec


def format_plan_seed003(spec: OpSpec, plan: Plan) -> str:
    """seeds/003 "The Output Format": ``F_op = [...]`` in axis order, then ``f_t_<T>_<axis>``
    for every input tensor (in operand order) and then the output, per axis indexing it.

    For ``matmul_spec`` this is exactly F_op, f_t_A_m, f_t_A_k, f_t_B_k, f_t_B_n,
    f_t_C_m, f_t_C_n.
    """
    lines = [f"F_op = [{', '.join(str(f) for f in plan.op_factors)}]"]
    for tensor in (*spec.inputs, spec.output):
        for axis in tensor.axes:
            lines.append(f"f_t_{tensor.name}_{axis} = {plan.temporal_factor(tensor.name, axis)}")
    return "\n".join(lines)


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    data: dict[str, Any] = {
        "axes": list(plan.axes),
        "op_factors": list(plan.op_factors),
        "temporal_factors": {name: list(f) for name, f in plan.temporal_factors.items()},
    }
    if plan.score is not None:
        score = plan.score
        data["score"] = {
            "device": score.device,
            "cost_model": score.cost_model,
            "cores": score.cores,
            "memory_per_core": score.memory_per_core,
            "cycles": score.cost.as_dict(),
            "seconds": score.seconds,
            "padded_extents": list(score.padded_extents),
            "step_tiles": list(score.step_tiles),
            "steps": score.steps,
            "replicas": dict(score.replicas),
            "loop_order": [
                {"axis": lv.axis, "steps": lv.steps, "tensors": list(lv.tensors)} for lv in score.loop_order
            ],
        }
    return data


def plan_to_json(plan: Plan) -> str:
    """The plan's decisions (axes, F_op, f_t) and, when scored, its score for reading."""
    return json.dumps(plan_to_dict(plan), indent=2, sort_keys=True)


def plan_from_json(text: str) -> Plan:
    """The plan's decisions; any ``score`` is ignored (re-score it with ``check_plan``)."""
    try:
        data = json.loads(text)
        axes = tuple(str(a) for a in data["axes"])
        op_factors = tuple(int(f) for f in data["op_factors"])
        temporal = {str(name): tuple(int(f) for f in factors) for name, factors in data["temporal_factors"].items()}
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise PlanError(f"not a plan JSON document: {error}") from error
    return Plan(axes, op_factors, temporal)
