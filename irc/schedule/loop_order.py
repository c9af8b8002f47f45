"""The loop nest of a compute-shift kernel: the plan's temporal factors peeled into levels,
nested in the planner's loop order, and each tensor's levels as the digits of its ring
position.

Paces. Per axis, the temporal factors must form a divisibility chain (seed 003 s3.2). They
are peeled into *levels* (IPU_COST_FACTS s3): the coarsest level rotates every tensor split
on the axis, each finer one only the tensors split finer. A level is one digit of the step
index along its axis; a tensor with a smaller factor shifts only at the coarser levels,
i.e. every ``steps / f_t`` steps. Levels nest in the planner's loop order (T10 s4.4: the
costlier, bigger tensor's shift outside; the smaller tensor's inside, as it runs more).
A loop of ``n`` trips shifts its tensors ``n - 1`` times per execution and does not
rewind: the next execution continues from where the digit stands, so every execution
still visits all ``n`` values (this is what the cost model counts).
"""

from __future__ import annotations

import math

from irc.plans import OpSpec, Plan
from irc.schedule.geometry import AlignError, Level


def peel_levels(spec: OpSpec, plan: Plan) -> list[tuple[str, int, tuple[str, ...]]]:
    """Per axis, coarse to fine: (axis, trips, tensors) as IPU_COST_FACTS s3 peels them."""
    levels = []
    for d, axis in enumerate(spec.axis_names):
        remaining = {t.name: plan.temporal_factors[t.name][d] for t in spec.tensors}
        values = [v for v in remaining.values() if v > 1]
        for a in values:
            for b in values:
                if a % b and b % a:
                    listing = ", ".join(
                        f"{name} has f_t={remaining[name]}" for name in remaining if remaining[name] > 1
                    )
                    raise AlignError(
                        f"cannot align the rotations on axis {axis}: temporal factors must divide "
                        f"one another, but {listing}"
                    )
        while any(v > 1 for v in remaining.values()):
            moving = tuple(name for name, v in remaining.items() if v > 1)
            g = math.gcd(*(remaining[name] for name in moving))
            levels.append((axis, g, moving))
            for name in moving:
                remaining[name] //= g
    return levels


def nested_levels(peeled, score) -> list[tuple[str, int, int, tuple[str, ...]]]:
    """The peeled levels with their strides, nested in the planner's loop order
    (``score.loop_order``, outermost first)."""
    by_axis: dict[str, list[tuple[int, tuple[str, ...]]]] = {}
    for axis, trips, moving in peeled:
        by_axis.setdefault(axis, []).append((trips, moving))
    level_list: list[tuple[str, int, int, tuple[str, ...]]] = []
    for axis, chain in by_axis.items():
        stride = math.prod(t for t, _ in chain)
        for trips, moving in chain:
            stride //= trips
            level_list.append((axis, trips, stride, moving))
    rank = {(lv.axis, lv.tensors): i for i, lv in enumerate(score.loop_order)}
    level_list.sort(key=lambda lv: rank[(lv[0], lv[3])])
    return level_list


def check_levels(spec: OpSpec, plan: Plan, levels) -> None:
    """A loop nest is the plan's: per axis, its levels' trips multiply to the steps along
    it, strides are the products of the finer levels' trips, and each level rotates
    exactly the tensors split finer than the coarser levels of its axis (the peeled
    levels of ``peel_levels``, in any nesting order)."""
    wanted = sorted((axis, trips, tuple(sorted(moving))) for axis, trips, moving in peel_levels(spec, plan))
    given = sorted((axis, trips, tuple(sorted(moving))) for axis, trips, _, moving in levels)
    if wanted != given:
        describe = lambda ls: "; ".join(f"axis {a} trips {t} rotating {', '.join(m)}" for a, t, m in ls) or "none"
        raise AlignError(
            f"the loops ({describe(given)}) do not match the rings' paces; expected levels: {describe(wanted)}"
        )
    for axis in {a for a, *_ in levels}:
        chain = sorted(((stride, trips) for a, trips, stride, _ in levels if a == axis))
        expected = 1
        for stride, trips in chain:
            if stride != expected:
                raise AlignError(f"the loops on axis {axis} have stride {stride} where {expected} is expected")
            expected *= trips


def radix_orders(spec: OpSpec, levels: tuple[Level, ...], own: dict[str, list[int]]) -> dict[str, tuple[int, ...]]:
    """Per tensor, its levels as the digits of its ring position, most significant first
    (`irc.schedule.placement`). Tensors shared by the same cores (equal free axes:
    dX and X of a gradient pair) that rotate at one level must read that level's digit at
    one weight, so the digit is theirs in common: the levels more of them rotate at are
    the less significant ones; ties (every level of a tensor alone) in axis order, coarse
    first - T10's radix of one tensor."""
    axes = spec.axis_names
    classes: dict[frozenset, list[str]] = {}
    for t in spec.tensors:
        if own[t.name]:
            classes.setdefault(frozenset(a for a in axes if not t.indexed_by(a)), []).append(t.name)
    radix = {t.name: () for t in spec.tensors}
    for members in classes.values():
        count: dict[int, int] = {}
        for name in members:
            for l in own[name]:
                count[l] = count.get(l, 0) + 1
        order = sorted(count, key=lambda l: (count[l], axes.index(levels[l].axis), -levels[l].stride))
        for name in members:
            radix[name] = tuple(l for l in order if l in own[name])
    return radix



__all__ = ["check_levels", "nested_levels", "peel_levels", "radix_orders"]
