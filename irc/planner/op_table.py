"""Per-operator idle/active tables for model-wide planning (T10 s4.3.1-4.3.2).

For one operator (and which of its inputs are weights) an ``OpTable`` holds:
- the active plans: the (memory per core, time) Pareto frontier from ``irc.planner.search``;
- the idle plans: every refinement of an active plan's weight partitions (``irc.planner.idle``);
- ``table[r, j]``: the cycles of running active plan j after setting it up from the best
  idle plan of idle size ``cold[r]`` (inf when none is compatible), i.e. IPU_COST_FACTS s5's
  (cold, hot) table. Rows are distinct idle sizes, ascending, with rows dominated by a
  smaller one (no faster for any active plan) dropped.

A fused gradient pair (`irc.planner.igo_pair`: one plan for a layer's dX and dW) is one
operator to the model-wide planner: its table's active plans are the pair's frontier
(`irc.planner.igo_pair.pair_frontier`) and it has one idle size, nothing (its weight is
loaded from the host into its active layout, never kept at rest: ``build_pair_table``).

``FrontierCache`` builds tables once per operator signature (the op with tensors renamed by
position, plus the weight positions), so identical layers are searched once.
"""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np

from irc.cost import CostModel, DEFAULT_COST_MODEL, get_cost_model
from irc.devices import Device, load_device
from irc.plans.constraints import DEFAULT_MAX_PADDING, DEFAULT_MIN_UTILIZATION
from irc.plans.evaluate import check_plan
from irc.planner.idle import IdlePlan, idle_plans, setup_cycles
from irc.planner.igo_pair import canonical_pair, pair_frontier
from irc.plans.pair import PairSpec, check_pair_plan
from irc.plans.plan import Plan
from irc.planner.search import search
from irc.plans.spec import OpSpec


def canonical_spec(spec: OpSpec) -> OpSpec:
    """``spec`` with its tensors renamed t0 (output), t1, ... : equal for identical layers."""
    return replace(spec, tensors=tuple(replace(t, name=f"t{i}") for i, t in enumerate(spec.tensors)))


def signature(spec: OpSpec, weights) -> tuple:
    """What makes two operators plan alike: canonical spec and the weight positions."""
    positions = tuple(sorted(spec.tensor_index(w) for w in weights))
    return (canonical_spec(spec), positions)


@dataclass
class OpTable:
    """Idle sizes x active plans of one operator signature (module docstring)."""

    spec: OpSpec                      # canonical spec (tensors t0, t1, ...)
    weights: tuple[str, ...]          # canonical weight names
    active: tuple[Plan, ...]          # Pareto frontier, memory ascending
    hot: np.ndarray                   # [J] bytes per core of each active plan
    active_cycles: np.ndarray         # [J]
    cold: np.ndarray                  # [R] idle bytes per core of each row, ascending
    table: np.ndarray                 # [R, J] active + setup cycles, inf if incompatible
    setup: np.ndarray                 # [R, J] setup cycles of the chosen idle plan
    idle_index: np.ndarray            # [R, J] index into ``idle`` of the chosen idle plan
    idle: tuple[IdlePlan, ...]
    search_seconds: float = 0.0       # wall time of the search and the idle table
    search_cpu_seconds: float = 0.0   # their CPU time (a shared machine's load apart)
    searched: np.ndarray | None = None
    """[J] which active plans the search found (None: all); the others were added for their
    layouts (`with_plans`): only the relayout-aware choice tries them, each op's fastest
    plan in its budget and its least bytes are the frontier's."""
    _memo: dict = field(default_factory=dict, repr=False)

    def best_at(self, budget: float) -> tuple[np.ndarray, np.ndarray]:
        """Per row: least cycles of an active plan with hot bytes <= ``budget`` (inf if
        none), and that plan's index (-1 if none). The active plans ascend in memory, so
        the usable ones are a prefix of them: the answer is a prefix minimum, tabulated
        once per table."""
        hot = self._memo.get("hot")
        if hot is None:
            hot = self._memo["hot"] = self.hot.tolist()
        usable = bisect.bisect_right(hot, budget)
        hit = self._memo.get(usable)
        if hit is None:
            if usable == 0:
                hit = (np.full(len(self.cold), np.inf), np.full(len(self.cold), -1))
            else:
                least, which = self._prefix_minima()
                times = least[:, usable - 1]
                hit = (times, np.where(np.isfinite(times), which[:, usable - 1], -1))
            self._memo[usable] = hit
        return hit

    def best_lists(self, budget: float) -> tuple[list[float], list[int]]:
        """``best_at`` as Python lists (read element by element by the model planner)."""
        hot, found = self.lookup()
        usable = bisect.bisect_right(hot, budget)
        hit = found[usable]
        if hit is None:
            times, picks = self.best_at(budget)
            hit = found[usable] = (times.tolist(), picks.tolist())
        return hit

    def lookup(self) -> tuple[list[float], list]:
        """``best_lists``'s memo, for a caller that reads it in a hot loop: the active
        plans' bytes as a list, and per count of usable plans (``bisect_right`` of a
        budget in it) the lists found so far (None: not yet; ``best_lists`` fills it)."""
        found = self._memo.get("lookup")
        if found is None:
            hot = self.hot.tolist()
            found = self._memo["lookup"] = (hot, [None] * (len(hot) + 1))
        return found

    def cold_list(self) -> list:
        """``cold`` as a list (summed per step by the model planner)."""
        found = self._memo.get("cold")
        if found is None:
            found = self._memo["cold"] = self.cold.tolist()
        return found

    def _prefix_minima(self) -> tuple[np.ndarray, np.ndarray]:
        """[R, J]: per row the least cycles among active plans 0..j, and the first plan
        reaching it."""
        found = self._memo.get("prefix")
        if found is None:
            rows, plans = self.table.shape
            least = np.empty((rows, plans))
            which = np.zeros((rows, plans), dtype=np.int64)
            best, arg = np.full(rows, np.inf), np.zeros(rows, dtype=np.int64)
            table = self.table if self.searched is None else np.where(self.searched[None, :], self.table, np.inf)
            for j in range(plans):
                better = table[:, j] < best
                best = np.where(better, self.table[:, j], best)
                arg = np.where(better, j, arg)
                least[:, j], which[:, j] = best, arg
            found = self._memo["prefix"] = (least, which)
        return found

    def least_hot(self) -> np.ndarray:
        """Per row: the fewest active bytes any compatible active plan needs."""
        usable = np.isfinite(self.table) if self.searched is None else np.isfinite(self.table) & self.searched[None, :]
        return np.where(usable, self.hot[None, :], np.inf).min(axis=1)


def build_op_table(
    spec: OpSpec,
    weights,
    device: Device,
    cost: CostModel,
    *,
    min_utilization: float = DEFAULT_MIN_UTILIZATION,
    max_padding: float = DEFAULT_MAX_PADDING,
) -> OpTable:
    """Search ``spec``'s frontier and tabulate its idle plans (raises ``PlanError`` when no
    plan fits)."""
    started, cpu = time.perf_counter(), time.process_time()
    canon = canonical_spec(spec)
    names = [t.name for t in spec.tensors]
    cweights = tuple(f"t{names.index(w)}" for w in weights)
    result = search(canon, device, cost, min_utilization=min_utilization, max_padding=max_padding)
    table = tabulate(canon, cweights, result.pareto, device, cost)
    return replace(table, search_seconds=time.perf_counter() - started,
                   search_cpu_seconds=time.process_time() - cpu)


def tabulate(canon: OpSpec, cweights: tuple[str, ...], active: Sequence[Plan], device: Device,
             cost: CostModel) -> OpTable:
    """The op table of the canonical ``canon`` (weights ``cweights``) over the scored
    ``active`` plans, memory ascending: its idle plans, and the setup that pairs each with
    each active plan (module docstring)."""
    active = tuple(active)
    # an idle plan's bytes are those of the slices of one active plan's partitions: it
    # pairs only with active plans of the same per-core spans (plans with equal F_op but
    # other steps pad differently, so the same idle factors cut other partitions)
    idle: dict[tuple, IdlePlan] = {}
    active_spans = [_spans(plan) for plan in active]
    for plan, spans in zip(active, active_spans):
        for candidate in idle_plans(canon, cweights, plan):
            idle.setdefault((candidate.key(), spans), candidate)
    idle_spans = [spans for _, spans in idle]
    idle_list = list(idle.values())
    hot = np.array([p.memory_per_core for p in active], dtype=np.float64)
    cycles = np.array([p.cycles for p in active], dtype=np.float64)
    raw = np.full((len(idle_list), len(active)), np.inf)
    raw_setup = np.full_like(raw, np.inf)
    by_spans: dict[tuple, list[int]] = {}
    for j, spans in enumerate(active_spans):
        by_spans.setdefault(spans, []).append(j)
    for c, candidate in enumerate(idle_list):
        for j in by_spans[idle_spans[c]]:   # the active plans of its spans, in order
            plan = active[j]
            setup = setup_cycles(candidate, plan, device, cost)
            if setup is not None:
                raw[c, j] = cycles[j] + setup
                raw_setup[c, j] = setup
    colds = np.array([c.cold_bytes for c in idle_list], dtype=np.float64)
    rows, row_setup, row_index, row_cold = [], [], [], []
    for value in np.unique(colds):
        members = np.flatnonzero(colds == value)
        best = members[raw[members].argmin(axis=0)]                   # [J]
        times = raw[best, np.arange(len(active))]
        if not np.isfinite(times).any():
            continue
        if any(np.all(times >= kept) for kept in rows):
            continue                                                   # a smaller idle size is never slower
        rows.append(times)
        row_setup.append(raw_setup[best, np.arange(len(active))])
        row_index.append(best)
        row_cold.append(value)
    return OpTable(
        spec=canon,
        weights=cweights,
        active=active,
        hot=hot,
        active_cycles=cycles,
        cold=np.array(row_cold),
        table=np.array(rows),
        setup=np.array(row_setup),
        idle_index=np.array(row_index, dtype=np.int64),
        idle=tuple(idle_list),
    )




def with_plans(table: OpTable, extra: Sequence[Plan], device: Device, cost: CostModel) -> OpTable:
    """``table`` with the scored canonical plans ``extra`` among its active plans (those it
    lacks, by F_op and f_t), memory ascending: candidates off the Pareto frontier that a
    model-wide plan may prefer for their layouts (`irc.planner.layout_match`). ``table``
    itself when nothing is new."""
    known = {(p.op_factors, tuple(sorted(p.temporal_factors.items()))) for p in table.active}
    new = []
    for plan in extra:
        key = (plan.op_factors, tuple(sorted(plan.temporal_factors.items())))
        if key not in known:
            known.add(key)
            new.append(plan)
    if not new:
        return table
    searched = table.searched if table.searched is not None else np.ones(len(table.active), dtype=bool)
    tagged = sorted([(p, bool(f)) for p, f in zip(table.active, searched)] + [(p, False) for p in new],
                    key=lambda item: (item[0].memory_per_core, item[0].cycles))
    merged = tabulate(table.spec, table.weights, [p for p, _ in tagged], device, cost)
    return replace(merged, search_seconds=table.search_seconds, search_cpu_seconds=table.search_cpu_seconds,
                   searched=np.array([f for _, f in tagged], dtype=bool))


def build_pair_table(
    pair: PairSpec,
    device: Device,
    cost: CostModel,
    *,
    min_utilization: float = DEFAULT_MIN_UTILIZATION,
    max_padding: float = DEFAULT_MAX_PADDING,
) -> OpTable:
    """The op table of a fused gradient pair (module docstring): its frontier
    (`pair_frontier`, over `canonical_pair`'s tensors t0 dX, t1 dW, t2 dY, t3 W, t4 X) as
    the active plans, one idle row of 0 bytes, no setup. Raises ``PlanError`` when no
    fused plan fits."""
    started, cpu = time.perf_counter(), time.process_time()
    canon = canonical_pair(pair)
    active, _ = pair_frontier(canon, device, cost, min_utilization=min_utilization, max_padding=max_padding)
    cycles = np.array([p.cycles for p in active], dtype=np.float64)
    return OpTable(
        spec=canon.union_spec(),
        weights=(),
        active=active,
        hot=np.array([p.memory_per_core for p in active], dtype=np.float64),
        active_cycles=cycles,
        cold=np.zeros(1),
        table=cycles[None, :].copy(),
        setup=np.zeros((1, len(active))),
        idle_index=np.arange(len(active), dtype=np.int64)[None, :],
        idle=tuple(IdlePlan(p.op_factors, {}, {}) for p in active),
        search_seconds=time.perf_counter() - started,
        search_cpu_seconds=time.process_time() - cpu,
    )


def _spans(plan: Plan) -> tuple[int, ...]:
    score = plan._scored()
    return tuple(t * tau for t, tau in zip(score.steps_per_axis, score.step_tiles))


class FrontierCache:
    """Op tables by signature for one device, cost model and search constraints.

    ``searches`` counts the plan searches actually run (one per distinct signature)."""

    def __init__(
        self,
        device: Device | str,
        cost: CostModel | str = DEFAULT_COST_MODEL,
        *,
        min_utilization: float = DEFAULT_MIN_UTILIZATION,
        max_padding: float = DEFAULT_MAX_PADDING,
    ) -> None:
        self.device = load_device(device)
        self.cost = get_cost_model(cost)
        self.min_utilization = min_utilization
        self.max_padding = max_padding
        self.tables: dict[tuple, OpTable] = {}
        self.searches = 0
        self._rescored: dict[tuple, Plan] = {}

    def table(self, spec: OpSpec, weights, *, relaxed: bool = False) -> OpTable:
        """The op table of ``spec`` (searched once per signature). ``relaxed``: searched
        without the utilisation floor (``min_utilization=0``), whose frontier also holds
        the plans on fewer cores that need less memory: what the model-wide planner asks
        for an op that cannot fit otherwise (`irc.planner.model`)."""
        key = signature(spec, weights) + (("relaxed",) if relaxed and self.min_utilization > 0 else ())
        table = self.tables.get(key)
        if table is None:
            table = build_op_table(
                spec, weights, self.device, self.cost,
                min_utilization=0.0 if relaxed else self.min_utilization, max_padding=self.max_padding,
            )
            self.searches += 1
            self.tables[key] = table
        return table

    def pair_table(self, pair: PairSpec, *, relaxed: bool = False) -> OpTable:
        """The op table of the fused gradient pair ``pair`` (``build_pair_table``;
        searched once per canonical pair; ``relaxed`` as in ``table``)."""
        key = ("pair", canonical_pair(pair)) + (("relaxed",) if relaxed and self.min_utilization > 0 else ())
        table = self.tables.get(key)
        if table is None:
            table = build_pair_table(
                pair, self.device, self.cost,
                min_utilization=0.0 if relaxed else self.min_utilization, max_padding=self.max_padding,
            )
            self.searches += 1
            self.tables[key] = table
        return table

    def op_table(self, op, *, relaxed: bool = False) -> OpTable:
        """The table of a model operator (`irc.planner.model.ModelOp`): its pair's
        (``pair_table``) for a fused gradient pair, else its spec's with its weights."""
        if op.pair is not None:
            return self.pair_table(op.pair, relaxed=relaxed)
        return self.table(op.spec, op.weights, relaxed=relaxed)

    def named_plan(self, spec: OpSpec, plan: Plan, pair: PairSpec | None = None) -> Plan:
        """A canonical plan restated with ``spec``'s own tensor names, scored (by
        `check_pair_plan` for ``pair``, a fused gradient pair whose `union_spec` is
        ``spec``)."""
        key = (spec, plan.op_factors, tuple(sorted(plan.temporal_factors.items())))
        hit = self._rescored.get(key)
        if hit is None:
            names = {f"t{i}": t.name for i, t in enumerate(spec.tensors)}
            unscored = Plan(plan.axes, plan.op_factors, {names[k]: v for k, v in plan.temporal_factors.items()})
            if pair is not None:
                score = check_pair_plan(pair, unscored, self.device, self.cost)
            else:
                score = check_plan(spec, unscored, self.device, self.cost)
            hit = Plan(unscored.axes, unscored.op_factors, unscored.temporal_factors, score)
            self._rescored[key] = hit
        return hit
