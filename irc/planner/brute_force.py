"""Reference enumerator for tests: every plan, by plain loops, checked by ``check_plan``.

Independent of the vectorised search: it walks every F_op (1..extent per axis) and, per
tensor, every f_t vector of divisors of the cores sharing it, and lets ``check_plan``
reject what breaks a constraint. Only usable on tiny shapes and devices.
"""

from __future__ import annotations

import itertools
import math

from irc.cost import CostModel, get_cost_model
from irc.devices import Device, load_device
from irc.plans.errors import PlanError
from irc.plans.evaluate import check_plan
from irc.plans.plan import Plan
from irc.plans.spec import OpSpec


def every_plan(axes, extents, tensors, cores: int):
    """Every (F_op, f_t) with at most ``cores`` cores, unchecked: F_op from 1 to the
    extent on each axis, and per tensor every f_t vector of divisors of the cores sharing
    it (1 on the axes that do not index it)."""
    for op_factors in itertools.product(*(range(1, min(e, cores) + 1) for e in extents)):
        if math.prod(op_factors) > cores:
            continue
        per_tensor = []
        for tensor in tensors:
            sharing = math.prod(f for a, f in zip(axes, op_factors) if not tensor.indexed_by(a))
            divisors = [d for d in range(1, sharing + 1) if sharing % d == 0]
            choices = [divisors if tensor.indexed_by(a) else [1] for a in axes]
            per_tensor.append(list(itertools.product(*choices)))
        for combo in itertools.product(*per_tensor):
            yield Plan(axes, tuple(op_factors), {t.name: f for t, f in zip(tensors, combo)})


def brute_force_plans(
    spec: OpSpec,
    device: Device | str,
    cost: CostModel | str,
    *,
    min_utilization: float,
    max_padding: float,
) -> list[Plan]:
    """Every legal plan (fitting in SRAM), scored."""
    device = load_device(device)
    cost = get_cost_model(cost)
    plans = []
    for plan in every_plan(spec.axis_names, spec.extents, spec.tensors, device.cores):
        try:
            score = check_plan(
                spec, plan, device, cost, min_utilization=min_utilization, max_padding=max_padding
            )
        except PlanError:
            continue
        plans.append(Plan(plan.axes, plan.op_factors, plan.temporal_factors, score))
    return plans
