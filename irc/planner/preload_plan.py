"""ELK's whole preload plan (seeds/004 s4.2-s4.5): the scheduler's decisions with each op's
execute- and preload-state plans and their times (``PreloadPlan``, how it runs:
``timeline``), and ``plan_preloads``, which schedules a model's ops
(``irc.planner.preload.inductive_schedule``) under an allocation of the SRAM
(``CostAwareAllocation`` or ``ExecOnlyAllocation``), starting each op's own preload state
as ``STARTS`` names, and keeps the fastest plan as it runs.

Times are cycles; memory is bytes per core.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from irc.planner.preload import (
    Allocation,
    CostAwareAllocation,
    ExecOnlyAllocation,
    OutgoingLinks,
    PreloadFitError,
    PreloadOp,
    Schedule,
    inductive_schedule,
    timeline,
)

# ----------------------------------------------------------------------------------------
# The whole plan: scheduler + allocation + load times


@dataclass
class PreloadPlan:
    """A model's preload plan: the scheduler's decisions (preload order, frontiers), each
    op's execute- and preload-state plans and their final times; ``timeline()`` is how it
    runs (the scheduler's own estimate is ``schedule``'s times)."""

    schedule: Schedule
    exec_plan: list[int]
    preload_plan: list[int]
    exec_cycles: list[float]
    load_cycles: list[float]
    start: str = ""      # how its ops' own preload states were chosen (``plan_preloads``)
    cap: float = np.inf  # the execution space its execute-state plans were capped at
    transfer_cycles: list[float] | None = None   # per op, its exchange transfers' cycles
    load_pressure: list[float] | None = None     # per op, its load's share of the link
    shared: tuple = ()   # the relayout copies its consumers share (`irc.planner.relayout_sharing`)
    yields: bool = False  # contended loads yield the link to the ops (``timeline``'s ``yields``)

    def timeline(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(load_start, load_end, exec_start, exec_end) as the plan runs (``timeline``),
        computed once (read-only: the metrics ask for it again and again)."""
        if not hasattr(self, "_timeline"):
            s = self.schedule
            found = timeline(len(self.exec_plan), s.order, s.frontier, self.exec_cycles, self.load_cycles,
                             self.transfer_cycles, self.load_pressure, self.yields)
            for array in found:
                array.setflags(write=False)
            self._timeline = found
        return self._timeline

    @property
    def latency(self) -> float:
        if not hasattr(self, "_latency"):
            _, load_end, _, exec_end = self.timeline()
            self._latency = float(max(load_end.max(), exec_end.max())) if len(self.exec_plan) else 0.0
        return self._latency

    def contention_cycles(self) -> list[float]:
        """Per op, the cycles it waits for the link as the plan runs (Figure 18's
        interconnect share)."""
        _, _, exec_start, exec_end = self.timeline()
        return [float(e - s - c) for s, e, c in zip(exec_start, exec_end, self.exec_cycles)]


STARTS = ("fastest", "largest", "smallest", "exposed", "all")

Metric = Callable[["PreloadPlan"], float]
"""What a design minimises over its candidate plans: a plan's latency (``latency_of``) or
its per-token time in a decode loop (``loop_period``)."""


def latency_of(plan: "PreloadPlan") -> float:
    return plan.latency


def exposed_loads(plan: "PreloadPlan") -> list[float]:
    """Per op, 1.0 where its load is exposed in ``plan`` as it runs (``timeline``): it is
    in a run of back-to-back loads (the HBM busy throughout) that ends with some op
    waiting for its load; 0.0 where execution hides it."""
    load_start, load_end, exec_start, exec_end = plan.timeline()
    order = plan.schedule.order
    charge = [0.0] * len(order)
    run: list[int] = []
    for t, k in enumerate(order):
        if run and load_start[k] > load_end[run[-1]] + 1e-9:
            run = []
        run.append(k)
        previous = exec_end[k - 1] if k else 0.0
        if load_end[k] > previous + 1e-9 and exec_start[k] <= load_end[k] + 1e-9:   # op k waits for it
            for m in run:
                charge[m] = 1.0
    return charge


def exec_caps(ops: Sequence[PreloadOp], capacity: float, count: int = 3) -> list[float]:
    """Execution spaces to cap the ops' execute-state plans at: ``count`` points spaced
    geometrically between the least space every op runs in and the whole SRAM."""
    least = max((op.min_exec() for op in ops), default=0.0)
    if least <= 0 or least >= capacity:
        return []
    return [least * (capacity / least) ** (k / (count + 1)) for k in range(1, count + 1)]


def plan_preloads(ops: Sequence[PreloadOp], capacity: float, order: Sequence[int] | None = None,
                  split: str = "paper", start: str = "all", memos: dict | None = None,
                  caps: Sequence[float] | None = None, metric: Metric | None = None,
                  links: OutgoingLinks | None = None) -> PreloadPlan:
    """``_plan_preloads`` with each op's own preload state chosen (s4.3) at its fastest
    with the load it adds charged as exposed (``start="fastest"``), as hidden
    (``"largest"``: the least distribution, the larger states), at its smallest
    (``"smallest"``), or charged where the best of those leaves it exposed
    (``"exposed"``: a preload state's longer load costs only what is not overlapped).
    ``"all"`` (the default) keeps the fastest of the four and of ``"fastest"`` with the
    execute-state plans capped at each of ``caps`` (default ``exec_caps``): the split
    (s4.3) shrinks one op at a time, greedily, and an op's fastest plan can take the
    space that would have let later ops preload (what a fixed split, Static, avoids).
    The plan records how it was made (``start``, ``cap``). ``memos`` (a dict kept across
    calls for the same ops, capacity and split) shares the allocations between orders;
    ``metric`` (default: the latency) is what "fastest" means (``loop_period``); ``links``
    the relayouts between ops' states the allocations count (``OutgoingLinks``)."""
    metric = latency_of if metric is None else metric
    if start not in STARTS:
        raise ValueError(f"unknown start '{start}'; known: {', '.join(STARTS)}")
    memo = (lambda key, default: None) if memos is None else memos.setdefault
    ones, zeros = [1.0] * len(ops), [0.0] * len(ops)
    plans = []

    def run(name: str, smallest: bool, charge: list[float], cap: float = np.inf) -> None:
        plan = _plan_preloads(ops, capacity, order, split, smallest, memo((smallest, cap), {}), charge, cap, links)
        plan.start, plan.cap = name, cap
        plans.append(plan)

    if start != "all":   # one way, at the first of ``caps`` if given
        cap = caps[0] if caps else np.inf
        if start in ("fastest", "exposed"):
            run("fastest", False, ones, cap)
        if start in ("largest", "exposed"):
            run("largest", False, zeros, cap)
        if start == "smallest":
            run("smallest", True, ones, cap)
    else:
        run("fastest", False, ones)
        run("largest", False, zeros)
        run("smallest", True, ones)
        for cap in (exec_caps(ops, capacity) if caps is None else caps):
            run("fastest", False, ones, cap)
    if start in ("exposed", "all"):
        best = min(plans, key=metric)
        charge = exposed_loads(best)
        if charge not in (ones, zeros):
            run("exposed", False, charge, best.cap)
        if start == "exposed":
            plans = plans[2:] or [best]
    return min(plans, key=metric)


_NAMES, _PLANS = object(), object()
"""The keys under which ``_plan_preloads`` keeps, in a shared memo, its numbering of states
and the plans it made."""


def _plan_preloads(ops: Sequence[PreloadOp], capacity: float, order: Sequence[int] | None,
                   split: str, smallest: bool, memo: dict | None = None,
                   charge: Sequence[float] | None = None, exec_cap: float = np.inf,
                   links: OutgoingLinks | None = None) -> PreloadPlan:
    """ELK-Dyn for one preload order: the inductive schedule with the cost-aware split
    (``split="paper"``) or the artifact's (``split="artifact"``). An op that fits under
    no plan even alone is a ``PreloadFitError`` naming it and its bytes."""
    for op in ops:
        if op.min_exec() > capacity - op.reserve:
            raise PreloadFitError(op.name, op.min_exec(), capacity - op.reserve)
    allocation = {"paper": CostAwareAllocation, "artifact": ExecOnlyAllocation}.get(split)
    if allocation is None:
        raise ValueError(f"unknown split '{split}'; known: paper, artifact")
    alloc = allocation(ops, capacity, smallest, charge, exec_cap, links)
    memo = {} if memo is None else memo   # (op, resident ops and their plans) -> Allocation
    # the same order and charges planned again (Full's execution order is Dyn's): the plan made
    planned = memo.setdefault(_PLANS, {})
    again = (tuple(range(len(ops))) if order is None else tuple(order), tuple(alloc.charge), smallest, exec_cap,
             capacity, split)
    if again in planned:
        return copy.copy(planned[again])   # (a copy: its caller names how it was made)
    # the memo's keys name each op's signature and each resident op's state by a number
    # (equal numbers, equal values), kept in the memo so that every call sharing it agrees
    names = memo.setdefault(_NAMES, {})
    name = lambda value: names.setdefault(value, len(names))  # noqa: E731
    own_key = [(name(("op", op.signature)), alloc.charge[i]) for i, op in enumerate(ops)]
    edges = None if links is None else [name(("edges", links.in_labels[i], links.labels[i])) for i in range(len(ops))]
    held: list[int | None] = [None] * len(ops)   # per scheduled op, the number of its state

    def commit(i: int, allocation: Allocation) -> None:
        alloc.commit(i, allocation)
        for k in (i, *allocation.shrunk):
            held[k] = name((ops[k].signature, alloc.exec_plan[k], alloc.preload_plan[k], alloc.charge[k],
                            alloc.own.get(k)))

    def allocate(i: int, resident: tuple[int, ...]) -> Allocation | None:
        key = (own_key[i], tuple([held[k] for k in resident]),
               None if links is None else (edges[i], tuple([alloc.exec_plan.get(k) for k in links.consumers[i]])))
        if key not in memo:
            found = alloc(i, resident)
            if found is not None and found.shrunk:  # store by position in the resident set
                found = Allocation(found.cycles, found.exec_plan, found.preload_plan,
                                   {resident.index(k): r for k, r in found.shrunk.items()}, found.charged, found.own)
            memo[key] = found
        hit = memo[key]
        if hit is None or not hit.shrunk:
            return hit
        return Allocation(hit.cycles, hit.exec_plan, hit.preload_plan,
                          {resident[t]: r for t, r in hit.shrunk.items()}, hit.charged, hit.own)

    schedule = inductive_schedule(len(ops), allocate,
                                  lambda k: ops[k].load_time(alloc.preload_plan[k], alloc.exec_plan[k]),
                                  order, commit)
    exec_plan = [alloc.exec_plan[i] for i in range(len(ops))]
    preload_plan = [alloc.preload_plan[i] for i in range(len(ops))]
    # the plan as it will run: final preload states, their distribution and load times
    schedule.exec_plan, schedule.preload_plan = exec_plan, preload_plan
    planned[again] = _as_run(ops, schedule, exec_plan, preload_plan)
    return copy.copy(planned[again])


def _as_run(ops: Sequence[PreloadOp], schedule: Schedule, exec_plan: list[int], preload_plan: list[int]) -> PreloadPlan:
    """The plan as it will run: final preload states, their distribution, transfers,
    load times and link pressure."""
    exec_cycles = [float(op.exec_cycles[j] + op.distribute[r, j]) for op, j, r in zip(ops, exec_plan, preload_plan)]
    transfers = [op.transfers(r, j) for op, j, r in zip(ops, exec_plan, preload_plan)]
    load_cycles = [op.load_time(r, j) for op, j, r in zip(ops, exec_plan, preload_plan)]
    pressure = [op.load_share(r, j) for op, j, r in zip(ops, exec_plan, preload_plan)]
    return PreloadPlan(schedule, exec_plan, preload_plan, exec_cycles, load_cycles,
                       transfer_cycles=transfers, load_pressure=pressure)
