"""ELK's preload orders and designs beside Dyn, on ``irc.planner.preload``'s numbers
(seeds/004 s4.4, s6.1; IPU_COST_FACTS s6).

- ``valid_preload_orders``, ``layer_orders`` and ``reorder`` (s4.4): the suffix tree of
  preload orders that do not overflow SRAM, restricted to HBM-heavy ops (above-average
  bytes) within one layer, one order shared by identical layers; ELK-Full.
- ``basic_schedule``, ``static_schedule``/``static_sweep``, ``ideal_latency`` (s6.1): the
  baselines; ``overlap_bound`` and ``loop_period``, what every design is measured by.
- ``widest_frontiers``: the frontiers of ops whose plans are fixed (`preload-schedule`
  without a plan); ``hide_loads``: a plan's frontiers widened where its ops wait for
  their loads as it runs.

Times are cycles; memory is bytes per core.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Callable, Sequence

import numpy as np

from irc.planner.preload import (
    OrderError,
    OutgoingLinks,
    PreloadFitError,
    PreloadOp,
    _order_bounds,
    inductive_schedule,
)
from irc.planner.preload_plan import Metric, PreloadPlan, _as_run, latency_of, plan_preloads
from irc.planner.relayout_sharing import copy_bytes

# ----------------------------------------------------------------------------------------
# s4.4: preload order permutation


def valid_preload_orders(ops: Sequence[int], space: Callable[[int], float], capacity: float,
                         max_displacement: int | None = None,
                         kind: Callable[[int], object] | None = None) -> list[list[int]]:
    """Every preload order of ``ops`` (execution order, ascending) that cannot overflow
    SRAM, built as ELK's suffix tree from the last load backwards (s4.4, Figure 14):
    choosing op x as the next-earlier load means every op still unplaced that executes
    after x is loaded before x and stays on chip with x until x executes, so x and those
    ops must fit together (``space``: an op's smallest preload size). ``max_displacement``
    bounds how far an op moves from its place in execution order (the artifact's
    bounded-displacement orders, IPU_COST_FACTS s6; None: the paper's whole tree). Ops of
    one ``kind`` (identical ops) keep their execution order among themselves: loading the
    later of two identical ops first only holds its space longer, and the orders that
    differ by swapping them are the same schedule."""
    ops = sorted(ops)
    home = {x: t for t, x in enumerate(ops)}
    found: list[list[int]] = []

    def grow(unplaced: list[int], suffix: list[int]) -> None:
        if not unplaced:
            found.append(suffix)
            return
        slot = len(unplaced) - 1
        for x in unplaced:
            if max_displacement is not None and abs(home[x] - slot) > max_displacement:
                continue
            if kind is not None and any(y > x and kind(y) == kind(x) for y in unplaced):
                continue   # the latest unplaced op of its kind takes the latest slot
            together = [y for y in unplaced if y >= x]
            if sum(space(y) for y in together) <= capacity:
                grow([y for y in unplaced if y != x], [x] + suffix)

    grow(ops, [])
    return found


def heavy_ops(ops: Sequence[PreloadOp]) -> list[int]:
    """s4.4's first pruning rule: the ops whose HBM bytes are above the average."""
    if not ops:
        return []
    mean = sum(op.hbm_bytes for op in ops) / len(ops)
    return [i for i, op in enumerate(ops) if op.hbm_bytes > mean]


def layer_orders(ops: Sequence[PreloadOp], capacity: float, max_orders: int | None = None,
                 max_displacement: int | None = None) -> list[list[int]]:
    """Whole-model preload orders from s4.4's pruned space: within the first layer, the
    valid orders of its HBM-heavy ops (light ops keep their own positions, heavy ops
    permute among the heavy ops' positions); the same permutation for every layer with
    the same op signatures (identical layers), execution order elsewhere. Nearest the
    execution order first (fewest swaps of neighbours; the identity first): ``max_orders``
    keeps the nearest ones (ELK's chosen orders are 2.9 swaps away on average, s6.2)."""
    n = len(ops)
    heavy = set(heavy_ops(ops))
    layers: dict[int, list[int]] = {}
    for i, op in enumerate(ops):
        if op.layer is not None:
            layers.setdefault(op.layer, []).append(i)
    if not layers:
        return [list(range(n))]
    first = min(layers)
    kind = tuple(ops[i].signature for i in layers[first])
    slots = [t for t, i in enumerate(layers[first]) if i in heavy]
    members = [layers[first][t] for t in slots]
    orders = valid_preload_orders(members, lambda i: ops[i].min_preload(), capacity, max_displacement,
                                  kind=lambda i: ops[i].signature)
    orders.sort(key=lambda o: sum(a > b for a, b in itertools.combinations(o, 2)))
    if max_orders is not None:
        orders = orders[:max_orders]
    result = []
    for permuted in orders:
        local = [members.index(x) for x in permuted]   # slot t gets the local[t]-th heavy op
        order = list(range(n))
        for layer in layers.values():
            if tuple(ops[i].signature for i in layer) != kind:
                continue
            for t, slot in enumerate(slots):
                order[layer[slot]] = layer[slots[local[t]]]
        result.append(order)
    return result


def reorder(ops: Sequence[PreloadOp], capacity: float, split: str = "paper",
            max_orders: int | None = None, window_layers: int | None = 3,
            finalists: int = 3, max_displacement: int | None = None,
            metric: Metric | None = None, links: OutgoingLinks | None = None,
            memos: dict | None = None) -> tuple[PreloadPlan, list[int], int]:
    """ELK-Full (s4.4): the best ``plan_preloads`` over ``layer_orders``; returns the plan,
    its order and how many orders were tried. ELK plans the whole model for every order
    (seconds each on one of 32 cores, s5); on a small machine, the orders are ranked on
    the model's first ``window_layers`` layers (identical layers share the order; None:
    the whole model), each with the one way of choosing preload states
    (``plan_preloads``' ``start``) that wins in execution order, and the ``finalists``
    best and the execution order are planned whole with every way; ``metric`` (default:
    the latency) picks the best of those. ``memos`` as ``plan_preloads``' (shared with
    Dyn's over the same ops, its plans in execution order are not made again)."""
    metric = latency_of if metric is None else metric
    # no order of the pruned tree fits (heavy ops' preloads too large together): execution order
    orders = layer_orders(ops, capacity, max_orders, max_displacement) or [list(range(len(ops)))]
    layers = sorted({op.layer for op in ops if op.layer is not None})
    candidates = orders
    memos = {} if memos is None else memos   # the allocations of (op, resident set) recur across orders
    try:   # the orders are ranked with the way of choosing preload states that wins in order
        first = plan_preloads(ops, capacity, orders[0], split, memos=memos, links=links)
        rank = dict(start="all") if first.start == "exposed" else dict(start=first.start, caps=[first.cap])
    except OrderError:
        rank = dict(start="all")
    if len(orders) > finalists:
        cut = len(ops)
        if window_layers is not None and len(layers) > window_layers:
            last = layers[window_layers - 1]
            cut = max(i for i, op in enumerate(ops) if op.layer is not None and op.layer <= last) + 1
        window = list(ops[:cut])
        ranked = []
        for t, order in enumerate(orders):
            local = [k for k in order if k < cut]
            try:
                ranked.append((plan_preloads(window, capacity, local, split, memos=memos, links=links, **rank).latency, t))
            except OrderError:
                continue
        ranked.sort()
        keep = {0} | {t for _, t in ranked[:finalists]}
        candidates = [orders[t] for t in sorted(keep)]
    best = None
    for order in candidates:
        try:
            plan = plan_preloads(ops, capacity, order, split, memos=memos, metric=metric, links=links)
        except OrderError:
            continue
        if best is None or metric(plan) < best[2]:
            best = (plan, order, metric(plan))
    if best is None:
        plan = plan_preloads(ops, capacity, None, split, memos=memos, metric=metric, links=links)
        return plan, list(range(len(ops))), len(orders)
    return best[0], best[1], len(orders)


# ----------------------------------------------------------------------------------------
# s6.1: the baselines


def _fixed_plan(ops: Sequence[PreloadOp], capacity: float, exec_space: float | None, exec_pick, preload_pick) -> PreloadPlan:
    """A schedule whose plans are decided up front: op i runs ``exec_pick(op)`` and rests
    in ``preload_pick(op, j)``; ``exec_space`` None: each op's execution space is its plan's
    own (Basic), else a fixed space (Static) and the rest preloads."""
    plans = []
    for op in ops:
        j = exec_pick(op)
        if j < 0:
            raise PreloadFitError(op.name, op.min_exec(), capacity if exec_space is None else exec_space)
        r = preload_pick(op, j)
        plans.append((j, r))
    sizes = [op.preload_bytes[r] for op, (j, r) in zip(ops, plans)]

    def allocate(i: int, resident: tuple[int, ...]) -> float | None:
        op, (j, r) = ops[i], plans[i]
        room = capacity - op.reserve
        if exec_space is None:
            if len(resident) > 1 or op.exec_space(r, j) + sum(sizes[k] for k in resident) > room:
                return None
        elif op.exec_space(r, j) > exec_space or sum(sizes[k] for k in resident) > room - exec_space:
            return None   # (its own preload state counts in its execution space, as the program holds it)
        return float(op.exec_cycles[j] + op.distribute[r, j])

    schedule = inductive_schedule(len(ops), allocate, lambda k: ops[k].load_time(plans[k][1], plans[k][0]))
    schedule.exec_plan = [j for j, _ in plans]
    schedule.preload_plan = [r for _, r in plans]
    return _as_run(ops, schedule, schedule.exec_plan, schedule.preload_plan)


def basic_schedule(ops: Sequence[PreloadOp], capacity: float) -> PreloadPlan:
    """Basic (s6.1): every op at its fastest plan (the largest execution space), the next
    op preloaded in the space left (its fastest preload state that fits), else nothing."""
    def fastest(op):
        fits = op.exec_bytes <= capacity
        return int(np.argmin(np.where(fits, op.exec_cycles, np.inf))) if fits.any() else -1

    def preload(op, j):
        r = op.fastest_preload(j, at_most=max(0.0, capacity - op.exec_bytes[j]))
        return r if r >= 0 else op.fastest_preload(j)

    return _fixed_plan(ops, capacity, None, fastest, preload)


def static_schedule(ops: Sequence[PreloadOp], capacity: float, exec_space: float,
                    metric: Metric | None = None) -> PreloadPlan:
    """Static (s6.1, T10 with a fixed split): every op runs its fastest plan within
    ``exec_space``; the rest preloads as many ops as fit, all at the largest or all at the
    smallest preload states, whichever is faster (by ``metric``, default the latency)."""
    metric = latency_of if metric is None else metric

    def fastest(op):
        fits = op.exec_bytes <= exec_space
        return int(np.argmin(np.where(fits, op.exec_cycles, np.inf))) if fits.any() else -1

    best = None
    for largest in (True, False):
        def preload(op, j, largest=largest):
            ok = np.flatnonzero(np.isfinite(op.distribute[:, j]))
            sizes = op.preload_bytes[ok]
            return int(ok[np.argmax(sizes)] if largest else ok[np.argmin(sizes)])
        try:
            plan = _fixed_plan(ops, capacity, exec_space, fastest, preload)
        except PreloadFitError:
            continue
        if best is None or metric(plan) < metric(best):
            best = plan
    if best is None:
        raise PreloadFitError(max(ops, key=lambda op: op.min_exec()).name, max(op.min_exec() for op in ops), exec_space)
    return best


def static_sweep(ops: Sequence[PreloadOp], capacity: float, steps: int = 16,
                 metric: Metric | None = None) -> tuple[PreloadPlan, float]:
    """Static with its execution space swept over ``steps`` sizes (the best by ``metric``,
    default the latency, kept, s6.1)."""
    metric = latency_of if metric is None else metric
    least = max(op.min_exec() for op in ops)
    best = None
    for space in np.linspace(least, capacity, steps):
        try:
            plan = static_schedule(ops, capacity, float(space), metric)
        except OrderError:
            continue
        if best is None or metric(plan) < metric(best[0]):
            best = (plan, float(space))
    if best is None:
        raise PreloadFitError(max(ops, key=lambda op: op.min_exec()).name, least, capacity)
    return best


def ideal_latency(ops: Sequence[PreloadOp]) -> float:
    """Ideal (s6.1): no memory or interconnect contention: every op at its fastest plan
    with no distribution, every load at its smallest preload state, and loads never wait
    for space; the longest chain of loads then executions."""
    loads = [op.least_load() for op in ops]
    execs = [float(op.exec_cycles.min()) for op in ops]
    best, loaded = 0.0, 0.0
    tail = float(sum(execs))
    for load, execute in zip(loads, execs):
        loaded += load
        best = max(best, loaded + tail)
        tail -= execute
    return best


def ideal_loop_latency(ops: Sequence[PreloadOp]) -> float:
    """Ideal (s6.1) per token of a decode loop: with SRAM for every op and no contention,
    the next token's loads run during this token's executions, so a token takes the
    longer of all its loads (smallest preload states) and all its executions (fastest
    plans, no distribution)."""
    return max(sum(op.least_load() for op in ops), sum(float(op.exec_cycles.min()) for op in ops))


def overlap_bound(ops: Sequence[PreloadOp], hbm_cycles_per_byte: float) -> float:
    """The least time any schedule of ``ops`` (run one after another) can take: the HBM
    reads every op's bytes once at its bandwidth (``hbm_cycles_per_byte``), and the cores
    run every op at least for its fastest plan; the longer of the two. Every design's
    latency is at least this, cold or per token of a loop (``loop_period``); so is
    Ideal's, which also chains the first loads before the first executions."""
    hbm = sum(float(op.hbm_bytes) for op in ops) * hbm_cycles_per_byte
    return max(hbm, sum(float(op.exec_cycles.min()) for op in ops))


def loop_period(plan: "PreloadPlan", prefix: int) -> float:
    """Per-token time of a decode loop from a plan of one token's ops followed by the
    next token's first ``prefix`` ops (its first layer): the time between the ends of the
    two tokens' first layers (the next token's loads overlap this token's last ops), and
    at least what one token keeps the HBM and the cores busy (the plan's loads and
    executions of one copy of every op: ``prefix`` onwards), which a loop repeats every
    token however the first token's start was filled."""
    load_start, load_end, exec_start, exec_end = plan.timeline()
    window = float(exec_end[-1] - (exec_end[prefix - 1] if prefix else 0.0))
    loads = float(sum(plan.load_cycles[prefix:]))
    executions = float((exec_end - exec_start)[prefix:].sum())
    return max(window, loads, executions)


def widest_frontiers(exec_bytes: Sequence[float], preload_bytes: Sequence[float], capacity: float,
                     order: Sequence[int] | None = None, upper: Sequence[int] | None = None) -> list[int]:
    """The preload frontiers of ops whose plans are fixed (their execute time does not
    depend on what is resident): by Theorem 4.2 each op's start is non-decreasing in its
    frontier (it ends at min(next op's start, the start of the first load waiting for
    it)), so the inductive scheduler's choice is the widest frontier whose resident ops
    fit beside it. ``exec_bytes[i]``: op i's own bytes (its preloaded data included);
    ``preload_bytes[k]``: op k's preloaded bytes; loads run in ``order`` (default:
    execution order) and op i's frontier is at most ``upper[i]`` (a plan's). An op that
    fits under no frontier raises ``PreloadFitError``."""
    n = len(exec_bytes)
    order = list(range(n)) if order is None else list(order)
    _, lower = _order_bounds(order)
    frontiers = []
    for i in range(n):
        if exec_bytes[i] > capacity:
            raise PreloadFitError(str(i), exec_bytes[i], capacity)
        # loads before op i's least frontier of ops executing later are resident anyway
        used = exec_bytes[i] + sum(preload_bytes[order[t]] for t in range(lower[i]) if order[t] > i)
        if used > capacity:
            raise PreloadFitError(str(i), used, capacity)
        q, top = lower[i], n if upper is None else max(lower[i], min(n, upper[i]))
        while q < top and used + (preload_bytes[order[q]] if order[q] > i else 0.0) <= capacity:
            used += preload_bytes[order[q]] if order[q] > i else 0.0
            q += 1
        frontiers.append(q)
    # a load cannot wait for an op after one that already lets it start (frontiers rise)
    for i in range(n - 2, -1, -1):
        frontiers[i] = max(lower[i], min(frontiers[i], frontiers[i + 1]))
    return frontiers


def hide_loads(plan: PreloadPlan, ops: Sequence[PreloadOp], capacity: float, metric: Metric,
               rounds: int = 8) -> PreloadPlan:
    """``plan`` with preload frontiers widened where an op waits for its load: the load
    that starts that run of back-to-back loads (the HBM idle before it) waited for the
    space some op frees; that op's frontier moves past it where its resident set still
    fits (``exec_space`` and the resident ops' preload states within ``capacity``). The
    inductive scheduler (s4.2) stops widening a frontier once its own estimate says the
    load is early enough; the relayouts and contention the plan then meets may make it
    late. Each pass widens every such frontier at once (identical layers wait alike, and
    one layer's wait hidden alone gains nothing while the next one's stays), kept when
    ``metric`` falls; at most ``rounds`` passes."""
    n = len(ops)
    order = plan.schedule.order
    position = {k: t for t, k in enumerate(order)}
    best, value = plan, metric(plan)
    copies = copy_bytes(plan.shared, n)   # shared relayout copies held beside ops
    for _ in range(rounds):
        load_start, load_end, exec_start, exec_end = best.timeline()
        frontier = list(best.schedule.frontier)
        waits: dict[int, list[int]] = {}
        for b, q in enumerate(frontier):
            waits.setdefault(q, []).append(b)
        widened = list(frontier)
        for i in range(1, n):
            if exec_start[i] <= exec_end[i - 1] + 1e-6 or abs(exec_start[i] - load_end[i]) > 1e-6:
                continue   # op i does not wait for its load
            t = position[i]
            while t > 0 and load_start[order[t]] <= load_end[order[t - 1]] + 1e-6:
                t -= 1   # back through the run of back-to-back loads
            if t not in waits:
                continue
            b = max(waits[t])
            used = ops[b].exec_space(best.preload_plan[b], best.exec_plan[b]) + copies[b] + sum(
                ops[k].preload_bytes[best.preload_plan[k]] for k in order[:t + 1] if k > b)
            if used <= capacity and (b + 1 >= n or frontier[b + 1] > t):
                widened[b] = t + 1
        if widened == frontier:
            break
        trial = _with_frontiers(best, widened)
        if metric(trial) >= value - 1e-9:
            break
        best, value = trial, metric(trial)
    return best


def _with_frontiers(plan: PreloadPlan, frontier: list[int]) -> PreloadPlan:
    s = plan.schedule
    resident = [tuple(k for k in s.order[:q] if k > i) for i, q in enumerate(frontier)]
    schedule = dataclasses.replace(s, frontier=frontier, resident=resident)
    return PreloadPlan(schedule, plan.exec_plan, plan.preload_plan, plan.exec_cycles, plan.load_cycles,
                       plan.start, plan.cap, plan.transfer_cycles, plan.load_pressure, plan.shared, plan.yields)
