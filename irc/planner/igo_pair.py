"""The search of a gradient pair's ONE compute-shift plan on an inter-core chip and its
comparison with the unfused pair (IGO's interleaving, MICRO'23 §4.2, carried to T10's
rotating tensors). The pair's spec, the model's assumptions and the check that prices one
fused plan are the plan vocabulary's (`irc.plans.pair`); assumption 5 there says what the
comparison (`compare_pair`, `arrival_cycles`) adds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Mapping

import numpy as np

from irc.cost import DEFAULT_COST_MODEL, CostModel, SubTask, get_cost_model
from irc.devices import Device, load_device
from irc.planner.brute_force import every_plan
from irc.planner.enumerate import CandidateSet, PlanSpace
from irc.planner.search import _Frontier, search
from irc.planner.vector_score import _resident, shift_exchange
from irc.plans.constraints import DEFAULT_MAX_PADDING, DEFAULT_MIN_UTILIZATION
from irc.plans.errors import PlanError
from irc.plans.pair import PairScore, PairSpec, _require_exchange_model, _works, check_pair_plan
from irc.plans.plan import Plan
from irc.plans.roles import compute_roles
from irc.plans.spec import OpSpec


# A bound prunes only when a found plan is faster by more than this (relative), as in
# irc.planner.search: float sums in another order must not prune a tie.
BOUND_SLACK = 1e-9


@dataclass(frozen=True)
class PairPlan:
    """A scored fused plan: F_op over the shared axes and f_t of the five tensors."""

    plan: Plan
    score: PairScore

    @property
    def cycles(self) -> float:
        return self.score.cycles


@dataclass(frozen=True)
class PairComparison:
    """The fused plan against the unfused pair (each product's own fastest plan).

    ``*_kernel_cycles`` are the operators' own times (what T10's operator search
    minimises); ``*_arrival_cycles`` price bringing each input into the layout its plan
    wants (`arrival_cycles`): the unfused pair receives dY twice, in two layouts, the
    fused plan once. The decision (`fuse`) and the `gain` compare the totals."""

    fused: PairPlan | None
    """None when no fused plan fits (or, searched with a cut-off, none is faster than
    the unfused pair; the reason is ``fused_error``)."""
    dx: Plan
    dw: Plan
    unfused_arrival_cycles: float
    fused_arrival_cycles: float = math.inf
    fused_error: str = ""
    relaxed_utilization: bool = False
    plans_scored: int = 0
    groups: int = 0
    groups_expanded: int = 0

    @property
    def unfused_kernel_cycles(self) -> float:
        return self.dx.cycles + self.dw.cycles

    @property
    def fused_kernel_cycles(self) -> float:
        return self.fused.cycles if self.fused is not None else math.inf

    @property
    def unfused_cycles(self) -> float:
        return self.unfused_kernel_cycles + self.unfused_arrival_cycles

    @property
    def fused_cycles(self) -> float:
        return self.fused_kernel_cycles + self.fused_arrival_cycles

    @property
    def gain(self) -> float:
        """Unfused over fused time, inputs' arrival included (> 1: fusing is faster)."""
        return self.unfused_cycles / self.fused_cycles

    @property
    def kernel_gain(self) -> float:
        """Unfused over fused operator time alone."""
        return self.unfused_kernel_cycles / self.fused_kernel_cycles

    @property
    def fuse(self) -> bool:
        """Whether the fused plan is strictly faster than the unfused pair."""
        return self.fused_cycles < self.unfused_cycles


def arrival_cycles(partitions: Mapping[str, int], inputs, device: Device, cost: CostModel) -> float:
    """Cycles of bringing `inputs` into a plan's layouts from a producer whose layout is
    not known at the operator level: each input's whole resident partition received by
    every core (the upper bound of `irc.planner.relayout.relayout_elements`, what a
    layout mismatch costs), as one exchange and one shift event's barriers each, as
    `irc.planner.relayout.relayout_cost` prices a relayout. Assumption 5 of the module
    docstring: the unfused pair pays it for dY twice."""
    total = 0.0
    for name in inputs:
        nbytes = partitions[name]
        if nbytes:
            total += float(cost.shift_cycles(device, nbytes)) + float(cost.sync_cycles(device))
    return total


# ---------------------------------------------------------------------------
# Vectorised scoring and the exact search
# ---------------------------------------------------------------------------


def score_pair_candidates(pair: PairSpec, candidates: CandidateSet, device: Device, cost: CostModel):
    """(memory per core [N], cycles [N]) of fused candidates (tensors in `PairSpec.tensors`
    order): `check_pair_plan`'s figures, vectorised."""
    union = pair.union_spec()
    per_core, steps_per_axis, step_tiles, resident, tensor_bytes, _ = _resident(union, candidates)
    tensor_bytes[:, 1] = pair.dw.output_bytes(candidates.op_factors, steps_per_axis)
    temporal = candidates.temporal_factors
    rotating = (temporal > 1).any(axis=2)
    memory = (tensor_bytes * resident * (1 + rotating)).sum(axis=1)
    shifted, events = shift_exchange(union, temporal, tensor_bytes, resident, device, cost)
    indexed = np.array([[t.indexed_by(a) for a in union.axis_names] for t in union.tensors])
    sharing = np.where(indexed[None], 1, candidates.op_factors[:, None, :]).prod(axis=2)
    replicas = sharing // temporal.prod(axis=2)
    names = [t.name for t in union.tensors]
    works = _works(pair, step_tiles, steps_per_axis.prod(axis=1), shifted, events,
                   {n: replicas[:, v] for v, n in enumerate(names)},
                   {n: resident[:, v] for v, n in enumerate(names)}, candidates.op_factors.prod(axis=1))
    cycles = sum(np.asarray(cost.op_time(device, w).total, dtype=np.float64) for w in works)
    return memory, np.where(np.isfinite(cycles), cycles, np.inf)


def _group_memory(pair: PairSpec, space: PlanSpace, groups) -> np.ndarray:
    """A lower bound of the memory per core of every plan of each step group: a tensor
    that cannot rotate (no core shares its partition) holds its whole partition of the
    padded spans; one that may rotate holds at least the smaller of that and twice
    (resident slice and receive buffer) its step tiles' window, since every f_t divides
    the steps (`irc.planner.bounds` states the same, tighter, for one operator)."""
    union = pair.union_spec()
    axes = union.axis_names
    plan_factors = space.op_factors[groups.plan]
    per_core = -(-np.asarray(union.extents)[None, :] // plan_factors)
    tiles = -(-per_core // groups.steps)
    spans = tiles * groups.steps
    sharing = space.sharing[groups.plan]
    held = {t.name: np.full(len(groups), union.bytes_of(t.name)) for t in union.tensors}
    for spec in (pair.dx, pair.dw):
        held[spec.output.name] = np.asarray(spec.output_bytes(plan_factors, groups.steps))
    total = np.zeros(len(groups))
    for v, tensor in enumerate(union.tensors):
        whole = np.full(len(groups), tensor.whole_elements, dtype=np.int64)
        window = whole.copy()
        for dim in tensor.dims:
            index = [axes.index(a) for a in dim]
            whole = whole * (spans[:, index].sum(axis=1) - (len(index) - 1))
            window = window * (tiles[:, index].sum(axis=1) - (len(index) - 1))
        least = np.where(sharing[:, v] > 1, np.minimum(whole, 2 * window), whole)
        total += held[tensor.name] * least
    return total


def _group_time(pair: PairSpec, space: PlanSpace, groups, device, cost) -> np.ndarray:
    """A lower bound of the time of every plan of each step group: both products'
    compute (fixed by the group's step tiles), plus the least exchange: every step but
    the first follows at least one shift event (the loop levels' executions times steps
    telescope to ``prod T_d - 1``), each moving at least the smallest step window of a
    tensor that some core shares (`irc.planner.bounds` argues the same for one
    operator); the output reductions are never negative."""
    union = pair.union_spec()
    axes = union.axis_names
    plan_factors = space.op_factors[groups.plan]
    per_core = -(-np.asarray(union.extents)[None, :] // plan_factors)
    tiles = -(-per_core // groups.steps)
    steps = groups.steps.prod(axis=1)
    sharing = space.sharing[groups.plan]
    smallest = np.full(len(groups), np.inf)
    for v, tensor in enumerate(union.tensors):
        window = np.full(len(groups), tensor.whole_elements * union.bytes_of(tensor.name), dtype=np.float64)
        for dim in tensor.dims:
            index = [axes.index(a) for a in dim]
            window = window * (tiles[:, index].sum(axis=1) - (len(index) - 1))
        smallest = np.where(sharing[:, v] > 1, np.minimum(smallest, window), smallest)
    shifts = steps - 1
    exchange = np.where(shifts > 0, np.asarray(cost.shift_cycles(device, shifts * np.where(np.isfinite(smallest), smallest, 0)))
                        + cost.sync_cycles(device) * shifts, 0.0)
    total = np.asarray(exchange, dtype=np.float64)
    for spec in (pair.dx, pair.dw):
        roles = {role: np.prod(tiles[:, list(idx)], axis=1) if idx else np.ones(len(groups))
                 for role, idx in compute_roles(spec).items()}
        total += steps * np.asarray(cost.compute_cycles(device, SubTask(spec.kind, spec.dtype_bytes,
                                                                         tiles.prod(axis=1), roles)))
    return total


@dataclass
class _Best:
    cycles: float = math.inf
    memory: float = math.inf
    key: tuple = ()
    op_factors: tuple = ()
    temporal: np.ndarray | None = None
    scored: int = 0
    expanded: int = 0
    groups: int = 0
    least_memory: float = math.inf

    def offer(self, candidates: CandidateSet, memory, cycles, sram: int) -> None:
        self.scored += len(candidates)
        self.least_memory = min(self.least_memory, float(memory.min()))
        fits = (memory <= sram) & np.isfinite(cycles)
        for i in np.flatnonzero(fits):
            key = (float(cycles[i]), float(memory[i]), tuple(int(v) for v in candidates.order[i]))
            if key[0] > self.cycles:
                continue
            if not self.key or key < (self.cycles, self.memory, self.key):
                self.cycles, self.memory, self.key = key
                self.op_factors = tuple(int(f) for f in candidates.op_factors[i])
                self.temporal = candidates.temporal_factors[i].copy()


def _search_once(pair, device, cost, min_utilization, max_padding, below=math.inf) -> tuple[_Best, PlanSpace]:
    union = pair.union_spec()
    space = PlanSpace(union, device, min_utilization, max_padding)
    best = _Best(cycles=below)
    if space.n_spatial == 0:
        return best, space
    for groups in space.groups():
        best.groups += len(groups)
        bound = _group_time(pair, space, groups, device, cost)
        bound = np.where(_group_memory(pair, space, groups) > device.sram_bytes, np.inf, bound)
        order = np.argsort(bound, kind="stable")
        # fastest-bounded groups first; a group whose compute alone is slower than the
        # best plan found cannot hold a faster plan
        for start in range(0, len(order), 256):
            chosen = order[start:start + 256]
            chosen = chosen[bound[chosen] <= best.cycles * (1 + BOUND_SLACK)]
            if not len(chosen):
                break
            best.expanded += len(chosen)
            for candidates in space.expand(groups.take(np.sort(chosen))):
                memory, cycles = score_pair_candidates(pair, candidates, device, cost)
                best.offer(candidates, memory, cycles, device.sram_bytes)
    return best, space


def search_pair(pair: PairSpec, device: Device | str, cost: CostModel | str = DEFAULT_COST_MODEL, *,
                min_utilization: float = DEFAULT_MIN_UTILIZATION,
                max_padding: float = DEFAULT_MAX_PADDING, below: float = math.inf) -> tuple[PairPlan, dict]:
    """The fastest fused plan that fits, exactly (every candidate of the space is
    scored unless its group's time bound, `_group_time`, exceeds the best plan found,
    or its memory bound the SRAM; ties go to less memory, then to the full
    enumeration's order, as `irc.planner.search`). Like the single-operator search, a
    space with no plan meeting `min_utilization` (or none of those fitting) is searched
    again with any core count. `below` only looks for plans of at most that many cycles
    (what a compiler deciding whether to fuse needs: the unfused pair's time). Returns
    the plan and statistics; raises `PlanError` when no fused plan fits (or none is
    within `below`)."""
    device = load_device(device)
    cost = get_cost_model(cost)
    _require_exchange_model(cost)
    relaxed = False
    best, space = _search_once(pair, device, cost, min_utilization, max_padding, below)
    if best.temporal is None and min_utilization > 0:
        relaxed = True
        best, space = _search_once(pair, device, cost, 0.0, max_padding, below)
    if best.temporal is None:
        if math.isfinite(below):
            raise PlanError(f"no fused plan takes at most {below:,.0f} cycles on {device.name}")
        if best.scored:
            raise PlanError(
                f"no fused plan fits: the least memory per core a scored plan needs is {int(best.least_memory)} "
                f"bytes, but {device.name} has {device.sram_bytes} bytes of SRAM per core",
                needed=int(best.least_memory),
            )
        raise PlanError(f"no fused plan satisfies the constraints on {device.name}")
    names = [t.name for t in pair.tensors]
    plan = Plan(pair.axis_names, best.op_factors, {n: tuple(int(f) for f in best.temporal[v]) for v, n in enumerate(names)})
    score = check_pair_plan(pair, plan, device, cost, min_utilization=0.0 if relaxed else min_utilization,
                            max_padding=max_padding)
    stats = {"relaxed_utilization": relaxed, "plans_scored": best.scored, "groups": best.groups,
             "groups_expanded": best.expanded}
    return PairPlan(Plan(plan.axes, plan.op_factors, plan.temporal_factors), score), stats


def pair_frontier(pair: PairSpec, device: Device | str, cost: CostModel | str = DEFAULT_COST_MODEL, *,
                  min_utilization: float = DEFAULT_MIN_UTILIZATION,
                  max_padding: float = DEFAULT_MAX_PADDING) -> tuple[tuple[Plan, ...], dict]:
    """The (memory per core, time) Pareto frontier of the fused plans that fit, memory
    ascending (its last plan is `search_pair`'s), each scored by `check_pair_plan`: what
    the model-wide planner (T10 s4.3.2, `irc.planner.op_table`) needs of a fused pair to
    trade its memory against the other operators' like any operator's (T10 s4.3.1's
    frontier). Exact as `irc.planner.search` is for one operator: a step group is skipped
    only when its memory bound (`_group_memory`) exceeds the SRAM or a plan found needs no
    more memory than it and is faster than its time bound (`_group_time`); ties between
    equal plans go to the full enumeration's order. Like `search_pair`, a space with no
    plan meeting `min_utilization` is searched again with any core count. Returns the
    plans and statistics; raises `PlanError` (with the least memory a scored plan needs)
    when no fused plan fits."""
    device = load_device(device)
    cost = get_cost_model(cost)
    _require_exchange_model(cost)
    relaxed = False
    frontier, stats = _frontier_once(pair, device, cost, min_utilization, max_padding)
    if not len(frontier) and min_utilization > 0:
        relaxed = True
        frontier, stats = _frontier_once(pair, device, cost, 0.0, max_padding)
    if not len(frontier):
        if stats["plans_scored"]:
            raise PlanError(
                f"no fused plan fits: the least memory per core a scored plan needs is {int(stats['least_memory'])} "
                f"bytes, but {device.name} has {device.sram_bytes} bytes of SRAM per core",
                needed=int(stats["least_memory"]),
            )
        raise PlanError(f"no fused plan satisfies the constraints on {device.name}")
    names = [t.name for t in pair.tensors]
    plans = []
    for i in range(len(frontier)):
        plan = Plan(pair.axis_names, tuple(int(f) for f in frontier.op_factors[i]),
                    {n: tuple(int(f) for f in frontier.temporal[i, v]) for v, n in enumerate(names)})
        score = check_pair_plan(pair, plan, device, cost, min_utilization=0.0 if relaxed else min_utilization,
                                max_padding=max_padding)
        plans.append(Plan(plan.axes, plan.op_factors, plan.temporal_factors, score))
    stats["relaxed_utilization"] = relaxed
    return tuple(plans), stats


def _frontier_once(pair: PairSpec, device: Device, cost: CostModel, min_utilization: float, max_padding: float):
    union = pair.union_spec()
    space = PlanSpace(union, device, min_utilization, max_padding)
    frontier = _Frontier(len(union.tensors), len(union.axes))
    stats = {"plans_scored": 0, "groups": 0, "groups_expanded": 0, "least_memory": math.inf}
    if space.n_spatial == 0:
        return frontier, stats
    for groups in space.groups():
        stats["groups"] += len(groups)
        bound = _group_time(pair, space, groups, device, cost)
        memory_bound = _group_memory(pair, space, groups)
        bound = np.where(memory_bound > device.sram_bytes, np.inf, bound)
        order = np.argsort(bound, kind="stable")
        order = order[np.isfinite(bound[order])]
        # least time bound first: the plans found early prune the groups after them
        for start in range(0, len(order), 256):
            chosen = order[start:start + 256]
            chosen = chosen[~frontier.dominates(memory_bound[chosen], bound[chosen])]
            if not len(chosen):
                continue
            stats["groups_expanded"] += len(chosen)
            for candidates in space.expand(groups.take(np.sort(chosen))):
                memory, cycles = score_pair_candidates(pair, candidates, device, cost)
                stats["plans_scored"] += len(candidates)
                stats["least_memory"] = min(stats["least_memory"], float(memory.min()))
                fits = np.flatnonzero((memory <= device.sram_bytes) & np.isfinite(cycles))
                if len(fits):
                    kept = CandidateSet(candidates.op_factors[fits], candidates.temporal_factors[fits],
                                        candidates.order[fits])
                    frontier.merge(kept, memory[fits].astype(np.int64), cycles[fits])
    return frontier, stats


def canonical_pair(pair: PairSpec) -> PairSpec:
    """``pair`` with its tensors renamed by their position in `PairSpec.tensors` (t0 dX,
    t1 dW, t2 dY, t3 W, t4 X): equal for identical layers, and its `union_spec` is
    `irc.planner.op_table.canonical_spec` of the pair's."""
    names = {t.name: f"t{i}" for i, t in enumerate(pair.tensors)}

    def renamed(spec: OpSpec) -> OpSpec:
        return replace(spec, tensors=tuple(replace(t, name=names[t.name]) for t in spec.tensors))

    return PairSpec(renamed(pair.dx), renamed(pair.dw), names[pair.dy])


def unfused_pair(pair: PairSpec, device: Device | str, cost: CostModel | str = DEFAULT_COST_MODEL,
                 **options) -> tuple[Plan, Plan]:
    """The best unfused pair: each product's fastest plan, two independent exact searches
    (`irc.planner.search`)."""
    return search(pair.dx, device, cost, **options).best, search(pair.dw, device, cost, **options).best


def compare_pair(pair: PairSpec, device: Device | str, cost: CostModel | str = DEFAULT_COST_MODEL, *,
                 exact: bool = True, **options) -> PairComparison:
    """The fused plan and the best unfused pair (raises `PlanError` when even the unfused
    products have no plan; a fused space with no fitting plan is reported, not raised).
    With ``exact=False`` the fused search only looks for plans faster than the unfused
    pair (``fused`` is None when there is none): enough to decide whether to fuse."""
    device = load_device(device)
    cost = get_cost_model(cost)
    dx, dw = unfused_pair(pair, device, cost, **options)
    unfused_arrival = (arrival_cycles(dx.score.memory.partitions, [t.name for t in pair.dx.inputs], device, cost)
                       + arrival_cycles(dw.score.memory.partitions, [t.name for t in pair.dw.inputs], device, cost))
    # a fused plan is worth finding only below the unfused total (its arrival is >= 0)
    below = math.inf if exact else dx.cycles + dw.cycles + unfused_arrival
    try:
        fused, stats = search_pair(pair, device, cost, below=below, **options)
    except PlanError as error:
        return PairComparison(None, dx, dw, unfused_arrival, fused_error=str(error))
    inputs = [pair.dy, pair.w.name, pair.x.name]
    return PairComparison(fused, dx, dw, unfused_arrival,
                          arrival_cycles(fused.score.memory.partitions, inputs, device, cost),
                          relaxed_utilization=stats["relaxed_utilization"], plans_scored=stats["plans_scored"],
                          groups=stats["groups"], groups_expanded=stats["groups_expanded"])


def brute_force_pair_plans(pair: PairSpec, device: Device | str, cost: CostModel | str, *,
                           min_utilization: float = 0.0, max_padding: float | None = None) -> list[PairPlan]:
    """Every legal fused plan (fitting in SRAM), scored by `check_pair_plan`: plain loops
    over F_op and every tensor's f_t (divisors of its sharing count), for tests on tiny
    shapes and devices."""
    device = load_device(device)
    cost = get_cost_model(cost)
    found = []
    for plan in every_plan(pair.axis_names, pair.union_spec().extents, pair.tensors, device.cores):
        try:
            score = check_pair_plan(pair, plan, device, cost, min_utilization=min_utilization,
                                    max_padding=max_padding)
        except PlanError:
            continue
        found.append(PairPlan(plan, score))
    return found


__all__ = [
    "PairComparison",
    "arrival_cycles",
    "PairPlan",
    "brute_force_pair_plans",
    "canonical_pair",
    "compare_pair",
    "pair_frontier",
    "score_pair_candidates",
    "search_pair",
    "unfused_pair",
]
