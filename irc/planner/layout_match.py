"""Plans whose layouts match a neighbour's: candidates for the model-wide choice.

An op table's active plans are the (memory, time) Pareto frontier of that operator alone
(`irc.planner.op_table`). For a cheap operator (an elementwise map, a unary map, a
reduction) many plans cost nearly the same, and the frontier keeps one of them, in some
layout: a chain of such operators (a softmax: scale, mask, max, subtract, exp, sum,
divide) then relayouts its whole tensor between every two of them, each relayout costing
more than the operator itself. T10 prices those relayouts (s5) but chooses each operator's
plan alone; the model-wide choice (`irc.planner.model`, ``refine``) can only trade
between the plans a table holds.

This module adds, to the table of every cheap operator without weights, the plans that partition an
operand exactly as a neighbour's candidate partitions the same tensor (F_op per axis =
the neighbour's blocks along the dim that axis indexes; every other axis whole; no
rotation), where such a plan is legal (`check_plan`): a producer's output layout, read
in place by its consumer, and a consumer's input layout, written in place by its
producer. It repeats over the chain (a layout propagates through several cheap
operators), a few rounds, so the relayout-aware choice can keep one layout across the
whole chain. The frontier's plans stay; the new ones are only more candidates, so the
model-wide plan is never worse for them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from irc.cost import CostModel
from irc.devices import Device
from irc.plans.constraints import minimum_cores
from irc.plans.errors import PlanError
from irc.plans.evaluate import check_plan
from irc.planner.op_table import OpTable, with_plans
from irc.plans.plan import Plan
from irc.planner.relayout import tensor_layout
from irc.plans.spec import OpSpec

CHEAP_KINDS = frozenset({"elementwise", "unary", "reduce"})
ROUNDS = 3                 # hops a layout travels through a chain of cheap operators
MAX_EXTRA_PLANS = 32       # per op table: the relayout-aware choice tries each of them


def matched_plan(spec: OpSpec, tensor: str, blocks: Sequence[int | None], device: Device,
                 cost: CostModel, min_utilization: float = 0.0) -> Plan | None:
    """The plan of ``spec`` (canonical) that cuts ``tensor``'s dims into ``blocks``
    (None: whole), every other axis whole, nothing rotating; None where no such plan is
    legal (a dim of several axes, an axis cut twice, a plan that does not fit) or it uses
    fewer cores than the search's utilisation floor ``min_utilization`` allows."""
    axes = spec.axis_names
    factors = [1] * len(axes)
    for dim, count in zip(spec.tensor(tensor).dims, blocks):
        if count is None or count == 1:
            continue
        if len(dim) != 1:
            return None
        d = axes.index(dim[0])
        if factors[d] not in (1, count):
            return None
        factors[d] = count
    if any(f > extent for f, (_, extent) in zip(factors, spec.axes)):
        return None
    if math.prod(factors) < minimum_cores(spec, device, min_utilization):
        return None   # outside the plan space the tables were searched in
    plan = Plan(axes, tuple(factors), {t.name: (1,) * len(axes) for t in spec.tensors})
    try:
        score = check_plan(spec, plan, device, cost)
    except PlanError:
        return None
    return Plan(plan.axes, plan.op_factors, plan.temporal_factors, score)


def _blocks(spec: OpSpec, plan: Plan, tensor: str) -> tuple[int | None, ...]:
    layout = tensor_layout(spec, plan, tensor)
    return tuple(None if dim is None else dim[0] for dim in layout.dims[:len(spec.tensor(tensor).dims)])


def matched_tables(tables: Sequence[OpTable], kinds: Sequence[str], edges, device: Device,
                   cost: CostModel, min_utilization: float = 0.0) -> list[OpTable]:
    """``tables`` (one per op, shared per signature) with the layout-matched plans of
    every cheap op (module docstring) added. ``kinds``: each op's kind (a fused gradient
    pair's is not cheap); ``edges``: the model's relayouts (`irc.planner.model.Edge`, in
    canonical tensor names); ``min_utilization``: the floor the tables were searched under.
    Tables shared by several ops stay shared."""
    tables = list(tables)
    # an op with weights at rest re-tabulates its idle plans against every active plan
    # (`with_plans`): seconds per signature on a convolutional model, so only weightless ops
    cheap = [kind in CHEAP_KINDS and not table.weights for kind, table in zip(kinds, tables)]
    if not any(cheap):
        return tables
    extra: dict[int, dict[tuple, Plan | None]] = {}   # id(table) -> (tensor, blocks) -> plan
    current = list(tables)
    for _ in range(ROUNDS):
        found = False
        for edge in edges:
            if edge.moved or edge.view is not None:
                continue   # read through a data movement: the layouts are not comparable dim by dim
            pairs = ((edge.consumer, edge.tensor, edge.producer, edge.source),
                     (edge.producer, edge.source, edge.consumer, edge.tensor))
            for target, name, other, other_name in pairs:
                if not cheap[target] or target == other:
                    continue
                base = tables[target]
                bucket = extra.setdefault(id(base), {})
                if len(bucket) >= MAX_EXTRA_PLANS:
                    continue
                source = current[other]
                for plan in source.active:
                    blocks = _blocks(source.spec, plan, other_name)
                    key = (name, blocks)
                    if key in bucket or len(bucket) >= MAX_EXTRA_PLANS:
                        continue
                    bucket[key] = matched_plan(base.spec, name, blocks, device, cost, min_utilization)
                    found = found or bucket[key] is not None
        if not found:
            break
        extended: dict[int, OpTable] = {}   # one per shared table, so it stays shared
        for i, table in enumerate(tables):
            if id(table) not in extended:
                plans = [p for p in extra.get(id(table), {}).values() if p is not None]
                extended[id(table)] = with_plans(table, plans, device, cost)
            current[i] = extended[id(table)]
    return current
