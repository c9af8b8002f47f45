"""Fused or unfused, per point of a gradient pair's frontier (IGO, MICRO'23 §4.2 carried
to T10's model-wide plan, issue 25 item 4).

A fused gradient pair is one operator of the model-wide plan (`irc.planner.model`):
its op table's active plans are the pair's fused frontier (`irc.planner.igo_pair.
pair_frontier`). With the choice on, the table also holds the pair run *unfused* as
points of the same frontier (`UnfusedPoint`): dX's plan, then dW's, each a point of its
product's own frontier (`irc.planner.op_table.FrontierCache.table`, the tables the two
products have as operators). So Algorithm 1 trades fused against unfused per pair and
per memory budget, as it trades any operator's plans: under memory pressure a pair whose
fused plans need more than its budget runs as two products in less.

An unfused point, as the model prices it:

- time: dX's cycles plus dW's, and the relayouts of its edges (`point_relayout`): dY
  arrives once into each product's layout (twice in all), W into dX's (from the idle copy
  of the op holding it at rest, as the two te ops receive it: `irc.planner.model_spec.
  ModelSpec.unfused_edges`; a fused plan loads it from the host), X into dW's; dX
  leaves from dX's layout, dW from dW's;
- memory while it runs: the larger of dX's plan and dW's plan plus dX's output kept for
  its readers (dX runs first);
- what it keeps for later ops (`kept_bytes`): dX's partition under dX's plan, dW's under
  dW's.

Like the fused pair's, its weight W has no idle plan of its own: it rests in its holder's.
`rtensor-partition` puts a pair whose point is unfused back as two operators and plans
the function again (`irc.lowering.igo_pair_partition.decide_fusion`), so what it lowers
is planned exactly. The point prices what those two operators are planned at: dX's plan
keeps its output across dW as the point counts it, since Algorithm 1 gives dX no plan
that leaves dW no room (`irc.planner.model_room`), and W's move from its holder is priced
(16x256 training MLP on tiny16: the point's 95,196 cycles and 22,528 bytes per core are
the two operators' own; before, dX took its 22,528-byte plan keeping 4,096 bytes of its
output, which left dW 18,432 of its 19,456, and W's 4,824-cycle move was unpriced).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from irc.planner.idle import IdlePlan
from irc.planner.igo_pair import canonical_pair
from irc.planner.op_table import FrontierCache, OpTable
from irc.planner.relayout import relayout_cost
from irc.plans.pair import PairSpec
from irc.plans.plan import Plan
from irc.plans.spec import OpSpec


@dataclass(frozen=True)
class _Held:
    """``PlanScore.memory``'s ``elements`` for an unfused point: each tensor's partition
    under the plan of the product that writes it (dX, dW) or reads it first (dY, W, X)."""

    point: "UnfusedPoint"

    def elements(self, name: str) -> int:
        spec, plan = self.point.holder(name)
        return plan._scored().memory.elements(name)


@dataclass(frozen=True)
class UnfusedPoint:
    """A gradient pair run as two operators, one point of its op table (module
    docstring): ``dx`` (scored, on ``dx_spec``) runs, then ``dw`` (on ``dw_spec``); the
    specs name their tensors as the pair's table does."""

    dx_spec: OpSpec
    dw_spec: OpSpec
    dx: Plan
    dw: Plan

    @property
    def cycles(self) -> float:
        return self.dx.cycles + self.dw.cycles

    @property
    def memory_per_core(self) -> int:
        dx_out = self.dx._scored().memory.elements(self.dx_spec.output.name) * self.dx_spec.bytes_of(
            self.dx_spec.output.name)
        return max(self.dx.memory_per_core, self.dw.memory_per_core + dx_out)

    @property
    def op_factors(self) -> tuple[int, ...]:
        return self.dx.op_factors

    @property
    def memory(self) -> _Held:
        return _Held(self)

    def _scored(self) -> "UnfusedPoint":
        """Itself: what `irc.planner.model_spec.kept_bytes` reads (``.memory.elements``)."""
        return self

    def holder(self, tensor: str) -> tuple[OpSpec, Plan]:
        """The product whose layout holds ``tensor`` after the point ran (its writer, or
        the first product reading it)."""
        for spec, plan in ((self.dx_spec, self.dx), (self.dw_spec, self.dw)):
            if tensor in {t.name for t in spec.tensors}:
                return spec, plan
        raise KeyError(tensor)

    def readers(self, tensor: str) -> list[tuple[OpSpec, Plan]]:
        """The products reading ``tensor`` (dY: both), each in its own layout."""
        return [(spec, plan) for spec, plan in ((self.dx_spec, self.dx), (self.dw_spec, self.dw))
                if tensor in {t.name for t in spec.inputs}]

    def describe(self) -> str:
        return (f"dX {self.dx.cycles:,.0f} + dW {self.dw.cycles:,.0f} cycles in "
                f"{self.memory_per_core:,} bytes per core")


def point_relayout(producer_spec: OpSpec, producer_plan, consumer_spec: OpSpec, consumer_plan, tensor: str,
                   device, cost, *, producer_tensor: str, whole: bool = False, view=None,
                   unfused_only: bool = False) -> tuple[int, float]:
    """`irc.planner.relayout.relayout_cost` between two points of the model's tables,
    either of which may be an `UnfusedPoint`: from the product holding the tensor, into
    every product reading it (dY into both). ``unfused_only``: a fused pair's weight held
    at rest by another op (`irc.planner.model_spec.ModelSpec.unfused_edges`), nothing
    into a fused plan (loaded from the host)."""
    if unfused_only and not isinstance(consumer_plan, UnfusedPoint):
        return 0, 0.0
    if isinstance(producer_plan, UnfusedPoint):
        producer_spec, producer_plan = producer_plan.holder(producer_tensor)
    targets = consumer_plan.readers(tensor) if isinstance(consumer_plan, UnfusedPoint) else \
        [(consumer_spec, consumer_plan)]
    moved, cycles = 0, 0.0
    for spec, plan in targets:
        nbytes, spent = relayout_cost(producer_spec, producer_plan, spec, plan, tensor, device, cost,
                                      producer_tensor=producer_tensor, whole=whole, view=view)
        moved, cycles = moved + nbytes, cycles + spent
    return moved, cycles


def unfused_points(pair: PairSpec, cache: FrontierCache, relaxed: bool = False) -> list[UnfusedPoint]:
    """The pair run unfused: every combination of the products' frontiers (each its op
    table as an operator without weights at rest), memory ascending. Not only the
    (memory, time) Pareto-optimal ones: the relayout-aware choice (`irc.planner.model.
    _ModelProblem.refine`) trades the two products' layouts as it does the two operators'
    (6 of 21 small training MLPs on tiny16 realized 625 cycles faster than a Pareto-only
    point). Tensors carry `canonical_pair`'s names (t0 dX, t1 dW, t2 dY, t3 W, t4 X)."""
    canon = canonical_pair(pair)
    plans = []
    for spec in (canon.dx, canon.dw):
        table = cache.table(spec, (), relaxed=relaxed)
        plans.append([cache.named_plan(spec, p) for p in table.active])
    points = [UnfusedPoint(canon.dx, canon.dw, a, b) for a in plans[0] for b in plans[1]]
    points.sort(key=lambda p: (p.memory_per_core, p.cycles))
    return points


def choice_table(pair: PairSpec, fused: OpTable, cache: FrontierCache, relaxed: bool = False) -> OpTable:
    """``fused`` (the pair's fused table, `FrontierCache.pair_table`) with its unfused
    points added (module docstring), memory ascending; an unfused point no faster than a
    fused plan needing no more memory is left out. Built once per canonical pair."""
    key = ("pair-choice", canonical_pair(pair), relaxed)
    table = cache.tables.get(key)
    if table is not None:
        return table
    points = [p for p in unfused_points(pair, cache, relaxed)
              if not any(f.memory_per_core <= p.memory_per_core and f.cycles <= p.cycles for f in fused.active)]
    active = sorted([*fused.active, *points], key=lambda p: (p.memory_per_core, p.cycles))
    cycles = np.array([p.cycles for p in active], dtype=np.float64)
    table = replace(
        fused, active=tuple(active), hot=np.array([p.memory_per_core for p in active], dtype=np.float64),
        active_cycles=cycles, table=cycles[None, :].copy(), setup=np.zeros((1, len(active))),
        idle_index=np.arange(len(active), dtype=np.int64)[None, :],
        idle=tuple(IdlePlan(p.op_factors, {}, {}) for p in active), searched=None, _memo={})
    cache.tables[key] = table
    return table


def named_point(point: UnfusedPoint, pair: PairSpec, cache: FrontierCache) -> UnfusedPoint:
    """``point`` with the pair's own tensor names (as `FrontierCache.named_plan` restates a
    canonical plan)."""
    def positional(plan: Plan, spec: OpSpec) -> Plan:   # t0, t1, ... by the product's own positions
        return Plan(plan.axes, plan.op_factors,
                    {f"t{k}": plan.temporal_factors[t.name] for k, t in enumerate(spec.tensors)})

    return UnfusedPoint(pair.dx, pair.dw, cache.named_plan(pair.dx, positional(point.dx, point.dx_spec)),
                        cache.named_plan(pair.dw, positional(point.dw, point.dw_spec)))


def fused_within(table: OpTable, budget: float) -> float:
    """The fastest fused plan of a choice table within ``budget`` bytes per core (inf:
    none fits)."""
    fits = [p.cycles for p in table.active if not isinstance(p, UnfusedPoint) and p.memory_per_core <= budget]
    return min(fits, default=float("inf"))


__all__ = ["UnfusedPoint", "choice_table", "fused_within", "named_point", "point_relayout", "unfused_points"]
