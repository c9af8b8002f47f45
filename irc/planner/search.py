"""Plan search for one operator: Pareto frontier and fastest plan (T10 s4.3.1).

The search is exact for its cost model: it returns the (memory per core, time) Pareto
frontier of every admissible (F_op, f_t) that fits in SRAM, and the fastest plan, the
same (ties included) as scoring every plan would. It does not score every plan:

1. It streams the space's *step groups* (a spatial plan with its steps per axis,
   ``irc.planner.enumerate``) in chunks and bounds each group's memory and time before
   enumerating its plans (``irc.planner.bounds``: partitions from the step tiles, the
   cost model's own time bound).
2. A group whose memory bound exceeds the SRAM cannot fit; one whose bounds a plan found
   so far dominates (no more memory, strictly less time) cannot reach the frontier.
3. The remaining groups are expanded and scored in bounded chunks (``vector_score``),
   the fastest-bounded groups first, so that the frontier fills early and prunes the
   rest; the frontier is merged chunk by chunk, breaking ties between equal plans by
   their order in the full enumeration. On a 2D mesh that score is the all-to-all one,
   a lower bound of the mesh's: the candidates it does not rule out are priced on the
   mesh's routes, least bound first (``irc.plans.evaluate.routed_cycles``).

Memory stays bounded (chunks of groups and candidates, never the whole space), so a
space with no plan that fits answers "no plan fits" with the least memory any plan
needs, found by a bounded memory-only search.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from irc.cost import CostModel, DEFAULT_COST_MODEL, get_cost_model
from irc.devices import Device, load_device
from irc.planner.bounds import PrefixBounds
from irc.plans.constraints import DEFAULT_MAX_PADDING, DEFAULT_MIN_UTILIZATION
from irc.planner.enumerate import CandidateSet, PlanSpace, StepGroups, StepPrefixes
from irc.plans.errors import PlanError
from irc.devices.topology import on_mesh
from irc.plans.evaluate import check_plan, routed_cycles
from irc.plans.plan import Plan
from irc.plans.spec import OpSpec
from irc.planner.vector_score import candidate_memory, score_candidates

# Prefixes waiting beyond this are expanded deepest first (completing groups, which are
# then scored and dropped): with the chunks of ``irc.planner.enumerate``, what bounds a
# search's peak memory whatever the size of its space.
OPEN_LIMIT = 1 << 20
# Prefixes expanded between two frontier updates: few at first (the frontier is empty
# and every plan found prunes), more later.
FIRST_SLICE, LAST_SLICE = 64, 8192
# A bound prunes only when a found plan is faster by more than this (relative): float
# sums in another order must not turn a tie into a pruned optimum.
BOUND_SLACK = 1e-9


@dataclass(frozen=True)
class SearchResult:
    """``best``: fastest plan that fits; ``pareto``: frontier by memory ascending (its last
    entry is ``best``); ``plans_scored``: candidates costed; ``seconds``: search wall time;
    ``relaxed_utilization``: no plan met ``min_utilization`` (or none of those fitted in
    SRAM), so the result comes from a retry with any core count (``min_utilization=0``);
    ``groups``: step groups bounded, ``groups_expanded``: those whose plans were scored."""

    best: Plan
    pareto: tuple[Plan, ...]
    plans_scored: int
    seconds: float
    relaxed_utilization: bool = False
    groups: int = 0
    groups_expanded: int = 0


def _plan_at(spec: OpSpec, op_factors: np.ndarray, temporal: np.ndarray) -> Plan:
    return Plan(
        axes=spec.axis_names,
        op_factors=tuple(int(f) for f in op_factors),
        temporal_factors={t.name: tuple(int(f) for f in temporal[v]) for v, t in enumerate(spec.tensors)},
    )


def search(
    spec: OpSpec,
    device: Device | str,
    cost: CostModel | str = DEFAULT_COST_MODEL,
    *,
    min_utilization: float = DEFAULT_MIN_UTILIZATION,
    max_padding: float = DEFAULT_MAX_PADDING,
    rotation: bool = True,
    max_partitioned_axes: int | None = None,
) -> SearchResult:
    """Search the plan space of ``spec`` on ``device`` under ``cost``.

    ``min_utilization``: fewest cores used, as a fraction of min(device cores, iteration
    points) (T10's parallelism constraint). ``max_padding``: largest padded / original
    iteration volume (T10's padding constraint). ``rotation=False`` forces every f_t to
    1 (each core holds whole sub-tensors: no compute-shift). ``max_partitioned_axes``
    bounds the number of axes with F_op > 1 (1 gives 1-D partitions).

    The utilisation floor only prunes the search (IPU_COST_FACTS s4), it is no correctness
    constraint: when no plan meets it (small operators on a small device, whose admissible
    core counts skip the floor) or none of those fits in SRAM, the search is repeated with
    ``min_utilization=0`` and the result says so (``relaxed_utilization``).

    Raises ``PlanError`` when no admissible plan exists or none fits in SRAM, even with
    any core count.
    """
    started = time.perf_counter()
    device = load_device(device)
    cost = get_cost_model(cost)
    options = (max_padding, rotation, max_partitioned_axes)
    if min_utilization <= 0:
        return _search(spec, device, cost, started, 0.0, *options)
    try:
        return _search(spec, device, cost, started, min_utilization, *options, exact_least=False)
    except PlanError:
        relaxed = _search(spec, device, cost, started, 0.0, *options)
        return SearchResult(relaxed.best, relaxed.pareto, relaxed.plans_scored,
                            time.perf_counter() - started, True, relaxed.groups, relaxed.groups_expanded)


def _snapped(cycles: np.ndarray) -> np.ndarray:
    """Cycle counts rounded to 12 significant digits: the same cost summed in another
    order differs in the last bits (77.00909090909092 vs 77.0090909090909), and such
    twins must tie on the Pareto frontier (the one with less memory dominates)."""
    magnitude = np.floor(np.log10(np.maximum(np.abs(cycles), 1e-300)))
    scale = 10.0 ** (magnitude - 11)
    return np.where(np.isfinite(cycles), np.round(cycles / scale) * scale, cycles)


class _Frontier:
    """The (memory, time) Pareto frontier of the plans scored so far, memory ascending;
    among equal (memory, time) plans the first in the full enumeration's order."""

    def __init__(self, n_tensors: int, n_axes: int) -> None:
        self.memory = np.zeros(0, dtype=np.int64)
        self.cycles = np.zeros(0)
        self.snapped = np.zeros(0)
        self.order = np.zeros((0, 1 + n_axes), dtype=np.int64)
        self.op_factors = np.zeros((0, n_axes), dtype=np.int64)
        self.temporal = np.zeros((0, n_tensors, n_axes), dtype=np.int64)
        self._fastest_within = np.zeros(0)

    def __len__(self) -> int:
        return len(self.memory)

    def dominates(self, memory: np.ndarray, cycles: np.ndarray) -> np.ndarray:
        """Whether a frontier plan needs at most ``memory`` and is strictly faster than
        ``cycles`` (beyond ``BOUND_SLACK``)."""
        if not len(self.memory):
            return np.zeros(len(memory), dtype=bool)
        position = np.searchsorted(self.memory, memory, side="right") - 1
        fastest = np.where(position >= 0, self._fastest_within[np.maximum(position, 0)], np.inf)
        return fastest < cycles * (1 - BOUND_SLACK)

    def merge(self, candidates: CandidateSet, memory: np.ndarray, cycles: np.ndarray) -> None:
        memory = np.concatenate([self.memory, memory])
        cycles = np.concatenate([self.cycles, cycles])
        snapped = np.concatenate([self.snapped, _snapped(cycles[len(self.cycles):])])
        order = np.concatenate([self.order, candidates.order])
        op_factors = np.concatenate([self.op_factors, candidates.op_factors])
        temporal = np.concatenate([self.temporal, candidates.temporal_factors])
        sort = np.lexsort(tuple(order.T[::-1]) + (snapped, memory))
        sorted_time = snapped[sort]
        best_before = np.concatenate([[np.inf], np.minimum.accumulate(sorted_time)[:-1]])
        keep = sort[sorted_time < best_before]
        self.memory, self.cycles, self.snapped = memory[keep], cycles[keep], snapped[keep]
        self.order, self.op_factors, self.temporal = order[keep], op_factors[keep], temporal[keep]
        self._fastest_within = np.minimum.accumulate(self.cycles)


class _OpenPrefixes:
    """Prefixes waiting to be expanded, with their bounds; taken a batch at a time,
    least bound first (or deepest first, to drain when too many are waiting)."""

    def __init__(self, n_axes: int) -> None:
        self.n_axes = n_axes
        self._parts: list[tuple[StepPrefixes, np.ndarray, np.ndarray]] = []
        self.prefixes = StepPrefixes.concatenate([], n_axes)
        self.memory = np.zeros(0)
        self.cycles = np.zeros(0)

    def __len__(self) -> int:
        return len(self.prefixes) + sum(len(p) for p, _, _ in self._parts)

    def add(self, prefixes: StepPrefixes, memory: np.ndarray, cycles: np.ndarray) -> None:
        if len(prefixes):
            self._parts.append((prefixes, memory, cycles))

    def _gather(self) -> None:
        if self._parts:
            parts = [(self.prefixes, self.memory, self.cycles)] + self._parts
            self.prefixes = StepPrefixes.concatenate([p for p, _, _ in parts], self.n_axes)
            self.memory = np.concatenate([m for _, m, _ in parts])
            self.cycles = np.concatenate([c for _, _, c in parts])
            self._parts = []

    def take(self, count: int, key: np.ndarray | None = None):
        """Remove and return the ``count`` prefixes of least ``key`` (default: time bound;
        deepest first when more than ``OPEN_LIMIT`` wait)."""
        self._gather()
        n = len(self.prefixes)
        if count >= n:   # all of them, as they are
            taken = (self.prefixes, self.memory, self.cycles)
            self.prefixes = StepPrefixes.concatenate([], self.n_axes)
            self.memory, self.cycles = np.zeros(0), np.zeros(0)
            return taken
        if key is None:
            key = -self.prefixes.depth if n > OPEN_LIMIT else self.cycles
        chosen = np.argpartition(key, count)[:count]
        taken = (self.prefixes.take(chosen), self.memory[chosen], self.cycles[chosen])
        rest = np.ones(n, dtype=bool)
        rest[chosen] = False
        self.prefixes, self.memory, self.cycles = self.prefixes.take(rest), self.memory[rest], self.cycles[rest]
        return taken

    def drop(self, mask_of) -> None:
        """Drop the waiting prefixes ``mask_of(memory, cycles)`` marks."""
        self._gather()
        keep = ~mask_of(self.memory, self.cycles)
        self.prefixes, self.memory, self.cycles = self.prefixes.take(keep), self.memory[keep], self.cycles[keep]


class _Run:
    """One exact search under fixed constraints (module docstring, steps 1-3)."""

    def __init__(self, spec: OpSpec, device: Device, cost: CostModel, space: PlanSpace) -> None:
        self.spec, self.device, self.cost, self.space = spec, device, cost, space
        self.bounds = PrefixBounds(space, device, cost)
        self.frontier = _Frontier(len(spec.tensors), len(spec.axes))
        self.groups = 0
        self.expanded = 0
        self.scored = 0
        self.least_scored = math.inf       # least memory of any plan scored
        self.least_unexpanded = math.inf   # least memory bound of a prefix too big to fit
        self.routed = on_mesh(device)      # all-to-all scores only bound the mesh's
        self.routed_scored = 0

    def run(self) -> None:
        """Best first: the prefixes of least time bound are expanded first, so the plans
        that prune the others are found early."""
        waiting = _OpenPrefixes(self.space.n_axes)
        self._push(waiting, self.space.roots())
        width = FIRST_SLICE
        while len(waiting):
            prefixes, memory, cycles = waiting.take(width)
            width = min(2 * width, LAST_SLICE)
            prefixes = prefixes.take(~self.frontier.dominates(memory, cycles))
            complete = prefixes.depth == self.space.n_axes
            if complete.any():
                self._score(prefixes.take(complete).groups())
                waiting.drop(self.frontier.dominates)
            open_ = prefixes.take(~complete)
            # the children of every depth bounded together: one bound evaluation per batch
            self._push(waiting, StepPrefixes.concatenate(
                [self.space.children(open_.take(open_.depth == depth)) for depth in np.unique(open_.depth).tolist()],
                self.space.n_axes))

    def _push(self, waiting: _OpenPrefixes, prefixes: StepPrefixes) -> None:
        if not len(prefixes):
            return
        self.groups += int((prefixes.depth == self.space.n_axes).sum())
        memory, cycles = self.bounds(prefixes, check_carried=False)
        # the (costly) carried check only where its verdict matters: a prefix that fits and
        # is dominated is dropped whatever it says; the others are kept if carried, or
        # (infinite bounds when not) counted among those too big to fit
        live = (memory > self.device.sram_bytes) | ~self.frontier.dominates(memory, cycles)
        uncarried = self.bounds.uncarried(prefixes, np.flatnonzero(live))
        memory[uncarried] = np.inf
        cycles[uncarried] = np.inf
        fits = memory <= self.device.sram_bytes
        if not fits.all():
            self.least_unexpanded = min(self.least_unexpanded, float(memory[~fits].min()))
        keep = fits & live
        waiting.add(prefixes.take(keep), memory[keep], cycles[keep])

    def _score(self, groups: StepGroups) -> None:
        self.expanded += len(groups)
        for candidates in self.space.expand(groups):
            scores = score_candidates(self.spec, candidates, self.device, self.cost)
            self.scored += len(candidates)
            self.least_scored = min(self.least_scored, float(scores.memory.min()))
            fits = (scores.memory <= self.device.sram_bytes) & np.isfinite(scores.cycles)
            if self.routed:
                self._merge_routed(candidates, scores.memory, scores.cycles, fits)
                continue
            if fits.any():
                index = np.flatnonzero(fits)
                chosen = CandidateSet(
                    candidates.op_factors[index], candidates.temporal_factors[index], candidates.order[index]
                )
                self.frontier.merge(chosen, scores.memory[index], scores.cycles[index])

    def _merge_routed(self, candidates: CandidateSet, memory: np.ndarray, bound: np.ndarray, fits: np.ndarray) -> None:
        """On a mesh: the all-to-all ``bound`` of each candidate that fits never exceeds its
        mesh price (``routed_cycles``); candidates are priced on the mesh least bound
        first, in growing batches, each merged before the bound of the rest is checked
        against the frontier again."""
        index = np.flatnonzero(fits)
        index = index[np.argsort(bound[index], kind="stable")]
        width = FIRST_SLICE
        while len(index):
            index = index[~self.frontier.dominates(memory[index], bound[index])]
            batch, index = index[:width], index[width:]
            width = min(2 * width, LAST_SLICE)
            if not len(batch):
                break
            cycles = routed_cycles(self.spec, candidates.op_factors[batch], candidates.temporal_factors[batch],
                                   self.device, self.cost)
            self.routed_scored += len(batch)
            chosen = CandidateSet(candidates.op_factors[batch], candidates.temporal_factors[batch],
                                  candidates.order[batch])
            self.frontier.merge(chosen, memory[batch], cycles)

    def least_memory(self) -> int:
        """The least memory per core of any plan of the space: the least scored, unless
        a prefix too big to fit by its bound could hold less; then a best-first search
        on memory alone."""
        best = self.least_scored
        if self.least_unexpanded >= best:
            return int(best)
        waiting = _OpenPrefixes(self.space.n_axes)
        roots = self.space.roots()
        waiting.add(roots, self.bounds.memory(roots), np.zeros(len(roots)))
        while len(waiting):
            prefixes, memory, _ = waiting.take(LAST_SLICE, key=waiting_memory(waiting))
            live = memory < best
            if not live.any():
                break  # least bounds first: nothing left can beat ``best``
            prefixes = prefixes.take(live)
            complete = prefixes.depth == self.space.n_axes
            for candidates in self.space.expand(prefixes.take(complete).groups()):
                best = min(best, float(candidate_memory(self.spec, candidates).min()))
            open_ = prefixes.take(~complete)
            for depth in np.unique(open_.depth).tolist():
                children = self.space.children(open_.take(open_.depth == depth))
                bound = self.bounds.memory(children)
                keep = bound < best
                waiting.add(children.take(keep), bound[keep], np.zeros(int(keep.sum())))
        return int(best)


def waiting_memory(waiting: _OpenPrefixes) -> np.ndarray:
    waiting._gather()
    return waiting.memory


def _search(
    spec: OpSpec,
    device: Device,
    cost: CostModel,
    started: float,
    min_utilization: float,
    max_padding: float,
    rotation: bool,
    max_partitioned_axes: int | None,
    exact_least: bool = True,
) -> SearchResult:
    """One exact search under fixed constraints (raises ``PlanError``). ``exact_least``:
    when nothing fits, find the least memory any plan needs (else the error only bounds
    it: a caller retrying with other constraints discards it)."""
    space = PlanSpace(spec, device, min_utilization, max_padding, rotation, max_partitioned_axes)
    if space.n_spatial == 0:
        raise PlanError(
            f"no plan satisfies the constraints on {device.name} "
            f"(min_utilization={min_utilization:g}, max_padding={max_padding:g}, "
            f"rotation={rotation}, max_partitioned_axes={max_partitioned_axes})"
        )
    run = _Run(spec, device, cost, space)
    run.run()
    frontier = run.frontier
    if not len(frontier):
        if run.least_scored <= device.sram_bytes:
            raise PlanError(
                f"no plan has a finite time under cost model {cost.name} among those that fit in "
                f"the {device.sram_bytes} bytes of SRAM per core of {device.name}"
            )
        least = run.least_memory() if exact_least else int(min(run.least_scored, run.least_unexpanded))
        raise PlanError(
            f"no plan fits: the least memory per core any plan needs is {least} bytes, "
            f"but {device.name} has {device.sram_bytes} bytes of SRAM per core",
            needed=least,
        )
    pareto = []
    for i in range(len(frontier)):
        plan = _plan_at(spec, frontier.op_factors[i], frontier.temporal[i])
        score = check_plan(spec, plan, device, cost, min_utilization=min_utilization, max_padding=max_padding)
        pareto.append(Plan(plan.axes, plan.op_factors, plan.temporal_factors, score))
    return SearchResult(
        best=pareto[-1],
        pareto=tuple(pareto),
        plans_scored=run.scored,
        seconds=time.perf_counter() - started,
        groups=run.groups,
        groups_expanded=run.expanded,
    )


@dataclass(frozen=True)
class Baselines:
    """Reference points for one operator (benchmarks/t10_matmul.py)."""

    no_rotation: Plan | None        # best plan with every f_t = 1 (VGM-like replication)
    one_dimensional: Plan | None    # best plan with one partitioned axis (rotation allowed)
    roofline_seconds: float         # iteration points / whole-chip peak MAC rate


def roofline_seconds(spec: OpSpec, device: Device | str) -> float:
    """Compute roofline: every iteration point is one MAC at the chip's peak rate."""
    device = load_device(device)
    return math.prod(spec.extents) / device.peak_macs_per_s


def baselines(
    spec: OpSpec, device: Device | str, cost: CostModel | str = DEFAULT_COST_MODEL, *,
    max_padding: float = DEFAULT_MAX_PADDING,
) -> Baselines:
    """Best no-rotation plan, best 1-D plan (any core count), and the compute roofline."""
    device = load_device(device)

    def best_or_none(**options) -> Plan | None:
        try:
            return search(spec, device, cost, min_utilization=0.0, max_padding=max_padding, **options).best
        except PlanError:
            return None

    return Baselines(
        no_rotation=best_or_none(rotation=False),
        one_dimensional=best_or_none(max_partitioned_axes=1),
        roofline_seconds=roofline_seconds(spec, device),
    )
