"""ELK on a ``ModelSpec``: T10's per-operator tables as ELK's preload/execute-state plans.

An operator's *execute-state* plans are its Pareto frontier (T10 s4.3.1; the "active"
plans of ``irc.planner.op_table``), its *preload-state* plans are the idle layouts its
weights can rest in (ELK s4.3: a preload state keeps each core's share of the shared
data; the rest is fetched from peers in the data distribution phase), and the
distribution phase is T10's setup from idle to active. A preload reads the op's weights
from HBM once and delivers each core its preload-state bytes over the exchange
(``irc.devices.topology.preload_seconds``), taking a share of the exchange links the op's
own transfers then compete for (``preload_pressure``: the shifts of its execute state
and its distribution phase contend with the loads streaming meanwhile, ELK s3.3, s4.3).
``elk_plan`` runs one design of ELK s6.1 on
these ops: ``dyn`` (s4.2 + s4.3), ``full`` (+ s4.4 reordering), ``basic``, ``static``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from irc.devices.topology import LINK_SHARES
from irc.planner.idle import IdlePlan
from irc.planner.model import ModelSpec, _ModelProblem, _named_idle
from irc.plans.errors import PlanError
from irc.planner.op_table import FrontierCache, OpTable
from irc.plans.plan import Plan
from irc.planner.preload import OrderError, OutgoingLinks, PreloadFitError, PreloadOp
from irc.planner.preload_plan import Metric, PreloadPlan, _as_run, latency_of, plan_preloads
from irc.planner.preload_designs import (
    basic_schedule,
    hide_loads,
    ideal_latency,
    ideal_loop_latency,
    loop_period,
    overlap_bound,
    reorder,
    static_sweep,
)
from irc.planner.preload_ops import own_inputs, preload_ops, weight_bytes   # re-exported: ELK's ops are priced there
from irc.planner.kept_spread import SpreadFitError, check_packs, spread_fallback, spread_search
from irc.planner.preload_packing import packing_deficit
from irc.planner.relayout_sharing import (
    SharedPricing, edge_cycles, fitting_copies, held_and_shared, shareable_copies,
)

DESIGNS = ("basic", "static", "dyn", "full", "ideal")


class OffchipFitError(PreloadFitError):
    """A model whose weights do not fit the chip's off-chip memory (HBM); ``op`` is empty:
    no one op is at fault."""

    def __init__(self, needed: int, capacity: int, device: str) -> None:
        PlanError.__init__(self, f"the model's weights need {needed} B of off-chip memory (HBM), more than "
                                 f"{device}'s {capacity} B")
        self.op, self.needed, self.available = "", needed, capacity


class Relayouts:
    """The relayouts of activations between a model's ops (T10 s4.3.2, as
    `irc.planner.model` prices them): ``finish`` charges them to a plan's ops (one
    relayout per tensor and layout where its consumers' copy fits,
    `irc.planner.relayout_sharing`), ``links`` states them for the allocations to count
    (``irc.planner.preload.OutgoingLinks``)."""

    def __init__(self, model: ModelSpec, cache: FrontierCache, problem: _ModelProblem | None = None) -> None:
        self.model, self.cache = model, cache
        self.problem = _ModelProblem(model, cache, None) if problem is None else problem   # its tables' plans
        self.pricing = SharedPricing(self.problem)   # refine's edges, copies shared

    def finish(self, plan: PreloadPlan, ops: Sequence[PreloadOp] | None = None,
               capacity: float | None = None) -> PreloadPlan:
        return with_relayouts(self.model, self.cache, plan, self.problem, ops, capacity)

    def refine(self, plan: PreloadPlan, ops: Sequence[PreloadOp], capacity: float | None = None,
               rounds: int = 4) -> PreloadPlan:
        """``plan`` (unfinished) with ops moved to execute states that cost less with the
        relayouts to and from their neighbours' states counted (their execution, their
        distribution phase from their preload state, their edges): the schedule, the
        preload states and every resident set stay. The inductive scheduler (s4.2) fixes
        each op's state before its producers', charging it their cheapest relayout, which
        the states they then take need not give; this settles the pairs. Without
        ``capacity`` each op moves alone, in no more execution space than the plan gave
        it; with it, where it still fits beside the ops resident while it runs (its
        ``exec_space`` and their preload states within ``capacity``), and an op read by
        several ops also moves with all of them (each then at its best beside it: a
        layout several readers share, as Q, K and V read a norm's; readers wanting one
        layout pay one relayout, `irc.planner.relayout_sharing`). Faster ops may wait
        for loads the slower ones hid, so callers compare the plans as they run. Repeats
        until nothing moves (at most ``rounds`` passes)."""
        touching, readers, allowed = self._moves(plan, ops, capacity)
        states, preload = list(plan.exec_plan), plan.preload_plan
        own = [op.exec_cycles + op.distribute[r] for op, r in zip(ops, preload)]   # [J] per op
        pricing = self.pricing
        group_edges: dict[tuple, list[int]] = {}

        def total(group: Sequence[int]) -> float:
            edges = group_edges.get(tuple(group))
            if edges is None:
                edges = group_edges[tuple(group)] = list(dict.fromkeys(k for i in group for k in touching[i]))
            return sum(float(own[i][states[i]]) for i in group) + pricing.cycles(edges, states)

        def best_state(i: int) -> int:
            found = []
            for k in allowed[i]:
                states[i] = k
                found.append((total([i]), k))
            return min(found)[1]

        def settle(group: Sequence[int]) -> tuple[float, list[int]]:
            """The least ``total(group)`` over its head's states, its readers each at its best."""
            saved = [states[i] for i in group]
            best = (total(group), list(saved))
            for j in allowed[group[0]]:
                states[group[0]] = j
                for i in group[1:]:
                    states[i] = best_state(i)
                found = total(group)
                if found < best[0] - 1e-9:
                    best = (found, [states[i] for i in group])
                for i, k in zip(group, saved):
                    states[i] = k
            return best

        for _ in range(rounds):
            moved = False
            for i in range(len(ops)):
                for group in ([i], [i] + readers[i]) if capacity is not None and len(readers[i]) > 1 else ([i],):
                    now = total(group)
                    found, picked = settle(group)
                    if found < now - 1e-9:
                        for k, j in zip(group, picked):
                            states[k] = j
                        moved = True
            if not moved:
                break
        if states == list(plan.exec_plan):
            return plan
        refined = _as_run(ops, plan.schedule, states, list(preload))
        refined.start, refined.cap, refined.yields = plan.start, plan.cap, plan.yields
        return refined

    def _moves(self, plan: PreloadPlan, ops: Sequence[PreloadOp], capacity: float | None):
        """For ``refine``: per op, the relayout edges touching it, the ops reading it, and
        the execute states it may move to (those its space allows, ``refine``'s rule)."""
        touching: list[list[int]] = [[] for _ in ops]
        readers: list[list[int]] = [[] for _ in ops]
        for k, edge in enumerate(self.problem.edges):
            touching[edge.consumer].append(k)
            if edge.producer != edge.consumer:
                touching[edge.producer].append(k)
                if edge.consumer not in readers[edge.producer]:
                    readers[edge.producer].append(edge.consumer)
        preload, allowed = plan.preload_plan, []
        for i, (op, r) in enumerate(zip(ops, preload)):
            space = op.exec_space(r, plan.exec_plan[i])
            if capacity is not None:
                space = max(space, capacity - sum(ops[k].preload_bytes[preload[k]] for k in plan.schedule.resident[i]))
            allowed.append([k for k in range(len(op.exec_bytes))
                            if np.isfinite(op.distribute[r, k]) and op.exec_space(r, k) <= space])
        return touching, readers, allowed

    def links(self) -> OutgoingLinks:
        edges: dict[tuple[int, int], list] = {}
        for edge in self.problem.edges:
            if edge.consumer > edge.producer:
                edges.setdefault((edge.producer, edge.consumer), []).append(edge)
        consumers = [[] for _ in self.model.ops]
        labels = [[] for _ in self.model.ops]
        for (producer, consumer), found in sorted(edges.items()):
            consumers[producer].append(consumer)
            labels[producer].append((consumer - producer, self.problem.signature_ids[consumer],
                                     tuple((e.tensor, e.source, e.moved, e.view) for e in found)))

        # the same edges between ops of the same tables cost the same (identical layers)
        kinds = {pair: (self.problem.signature_ids[pair[0]], label) for pair, label in
                 ((pair, labels[pair[0]][consumers[pair[0]].index(pair[1])]) for pair in edges)}
        memo: dict[tuple, float] = {}

        def cost(i: int, j: int, k: int, jk: int) -> float:
            key = (kinds[(i, k)], j, jk)
            found = memo.get(key)
            if found is None:
                found = memo[key] = float(sum(self.problem.relayout(e, jk, j)[1] for e in edges[(i, k)]))
            return found

        return OutgoingLinks(consumers, cost, labels, [len(table.active) for table in self.problem.tables])


def with_relayouts(model: ModelSpec, cache: FrontierCache, plan: PreloadPlan, problem=None,
                   ops: Sequence[PreloadOp] | None = None, capacity: float | None = None) -> PreloadPlan:
    """``plan`` with the relayouts of activations between its ops' chosen execute states
    charged to their consumers (T10 s4.3.2, as `irc.planner.model` prices them): what the
    compiled program runs. ELK's decisions are the plan's; only its times grow. Given the
    ``ops`` and ``capacity`` it was planned on, consumers wanting a tensor in the same
    layout share one relayout where the copy fits beside the ops between them (each op's
    execution space and the preloads resident while it runs:
    `irc.planner.relayout_sharing`), recorded as the plan's ``shared``."""
    problem = _ModelProblem(model, cache, None) if problem is None else problem
    copies: list = []
    if ops is not None and capacity is not None:
        used = [op.exec_space(r, j) + op.reserve + sum(ops[k].preload_bytes[plan.preload_plan[k]] for k in resident)
                for op, r, j, resident in zip(ops, plan.preload_plan, plan.exec_plan, plan.schedule.resident)]
        copies = fitting_copies(shareable_copies(problem, plan.exec_plan), used, capacity)
    extra = [0.0] * len(model.ops)
    for edge, cycles in zip(problem.edges, edge_cycles(problem, plan.exec_plan, copies)):
        extra[edge.consumer] += cycles
    transfers = None if plan.transfer_cycles is None else [c + e for c, e in zip(plan.transfer_cycles, extra)]
    return PreloadPlan(plan.schedule, plan.exec_plan, plan.preload_plan,
                       [c + e for c, e in zip(plan.exec_cycles, extra)], plan.load_cycles,
                       plan.start, plan.cap, transfers, plan.load_pressure, tuple(copies), plan.yields)


def infer_layers(model: ModelSpec, cache: FrontierCache | None = None) -> list[int | None]:
    """Layers of a model given as a flat op list (an imported ONNX graph): the period p
    whose shifted op signatures agree over the longest run (at least one whole period:
    two identical layers or more); that run's ops, in blocks of p, are layers 0, 1, ...,
    the ops around it none. What ELK s4.4's second pruning rule needs (identical layers
    share one preload order); all None when no op sequence repeats."""
    n = len(model.ops)
    ids: dict = {}
    signature = np.array([ids.setdefault((op.spec, tuple(op.weights)), len(ids)) for op in model.ops])
    best = (0, 0, 0)   # (ops covered, -period, run start)
    for p in range(1, n // 2 + 1):
        same = np.concatenate([[False], signature[:-p] == signature[p:], [False]])
        edges = np.flatnonzero(np.diff(same.astype(np.int8)))
        if not len(edges):
            continue
        starts, ends = edges[0::2], edges[1::2]
        k = int(np.argmax(ends - starts))
        run = int(ends[k] - starts[k])
        covered = (run + p) // p * p
        if run >= p and (covered, -p) > best[:2]:
            best = (covered, -p, int(starts[k]))
    covered, period, start = best[0], -best[1], best[2]
    layers: list[int | None] = [None] * n
    for i in range(start, start + covered):
        layers[i] = (i - start) // period
    return layers


def planned_offchip(plan: PreloadPlan) -> tuple[float, float, float]:
    """A plan's HBM busy cycles, exposed load cycles (the cores wait for a load: each op's
    start past the previous op's end) and interconnect contention cycles (ops waiting for
    the link they share with loads), as ``PreloadPlan.timeline`` runs it (a load that
    yields the link is busy the longer)."""
    load_start, load_end, exec_start, exec_end = plan.timeline()
    previous = np.concatenate([[0.0], exec_end[:-1]])
    return (float((load_end - load_start).sum()), float(np.maximum(0.0, exec_start - previous).sum()),
            float(sum(plan.contention_cycles())))


@dataclass
class ElkOpDecision:
    """One op's plans under ELK: execute state (``active``), preload state (``idle``) and
    the distribution (setup) cycles between them."""

    name: str
    active: Plan
    idle: IdlePlan | None
    setup_cycles: float


@dataclass
class ElkDecision:
    """One design's plan: its latency (cycles; per token of a decode loop when planned so,
    ``DesignSearch``), the plans of its ops, its preload order and how many orders it
    tried. ``kept`` names the weaker design whose schedule it kept because its own search
    found none better (each design's space includes the weaker one's: Full <= Dyn <=
    Static <= Basic); ``reorder_gain`` (Full) the cycles its best preload order saved over
    execution order (0: no order beat it). ``preload_ops`` and ``tables`` are the ops and
    op tables ``plan``'s state indices refer to (``offchip_study`` plans with two sets)."""

    design: str
    latency_cycles: float
    ops: list[ElkOpDecision]
    plan: PreloadPlan | None
    order: list[int]
    orders_tried: int = 1
    static_exec_bytes: float | None = None
    kept: str = ""
    reorder_gain: float | None = None
    preload_ops: list[PreloadOp] | None = None
    tables: list[OpTable] | None = None
    link_share: float = 1.0
    """The share of its busiest link each preload may take (θ, ``PreloadOp.paced``; 1:
    unpaced); the most of any op's where they differ (a slower HBM's plan retimed,
    ``DesignSearch.retimed``: each of ``preload_ops`` has its own)."""
    held_inputs: dict[int, list[str]] = dataclasses.field(default_factory=dict)
    shared_inputs: dict[int, list[str]] = dataclasses.field(default_factory=dict)
    """Per op, its inputs whose relayouted copy it keeps for later consumers, and those
    it reads from such a copy (`irc.planner.relayout_sharing`)."""

    @property
    def loads_yield(self) -> bool:
        """Whether its preloads yield a contended link to the operators (ELK's artifact's
        delay_comp=False, ``PreloadPlan.yields``) rather than the operators waiting."""
        return self.plan is not None and self.plan.yields


def decisions_of(model: ModelSpec, cache: FrontierCache, plan: PreloadPlan,
                 tables: Sequence[OpTable] | None = None) -> list[ElkOpDecision]:
    """Each op's plans under ``plan``, its state indices into ``tables`` (default: each
    op's frontier table)."""
    tables = [cache.table(op.spec, op.weights) for op in model.ops] if tables is None else tables
    found = []
    for op, j, r, table in zip(model.ops, plan.exec_plan, plan.preload_plan, tables):
        active = cache.named_plan(op.spec, table.active[j])
        idle = _named_idle(op.spec, table.idle[table.idle_index[r, j]]) if op.weights else None
        found.append(ElkOpDecision(op.name, active, idle, float(table.setup[r, j]) if op.weights else 0.0))
    return found


WEAKER = {"static": "basic", "dyn": "static", "full": "dyn"}
"""Each design's search space includes the schedule of the one named here (s6.1)."""

ELK_DESIGNS = ("dyn", "full")
ELK_WEAKER = {"full": "dyn"}
"""``WEAKER`` of a search that plans ELK's own designs only (``offchip_study``'s second
op tables: Basic and Static are the first's)."""


class DesignSearch:
    """The designs of ELK s6.1 over one list of ``ops`` on ``capacity`` bytes per core,
    each planned once: Basic, Static (its execution space swept), ELK-Dyn (s4.2 + s4.3)
    and ELK-Full (+ s4.4's reorder: every valid order of the pruned tree, or the
    ``max_orders`` nearest execution order, or those moving no preload more than
    ``max_displacement``). Each design also evaluates the weaker design's schedule
    (``WEAKER``) and keeps the better, so Full <= Dyn <= Static <= Basic by construction.
    ``relayouts`` (a ``Relayouts``) turns a chosen plan into what runs (the relayouts
    between its plans) and lets ELK's allocations count them; the comparisons are on
    ``metric`` (default the latency; ``loop_period`` per token of a decode loop) of the
    finished plans. ELK-Dyn also tries each preload link share (θ) of ``link_shares``
    that paces some load (``PreloadOp.paced``, ELK's artifact's NoC load threshold) and
    keeps the best; ELK-Full reorders at Dyn's best share (and keeps Dyn's plan where no
    order beats it, so its space includes Dyn's) and lets Dyn's plan at each share yield.
    ``seeds`` (per design, a plan chosen on a slower HBM, its link share and the ops it
    was planned on, or only the first two) are candidates too (``retimed``): a sweep
    passing each point's choices to the next faster HBM's search never gets slower."""

    def __init__(self, ops: Sequence[PreloadOp], capacity: float, split: str = "paper",
                 max_displacement: int | None = None, max_orders: int | None = None,
                 relayouts: "Relayouts | None" = None, metric: Metric | None = None,
                 token: Sequence[PreloadOp] | None = None, weaker: dict[str, str] | None = None,
                 link_shares: Sequence[float] = LINK_SHARES,
                 seeds: dict[str, tuple] | None = None) -> None:
        self.ops, self.capacity, self.split = list(ops), capacity, split
        self.seeds = {} if seeds is None else dict(seeds)   # design -> (plan, link share[, its ops]) to retime
        self.link_shares = tuple(link_shares)
        self._paced: dict[float, list[PreloadOp]] = {1.0: self.ops}
        self._elk_own: dict[str, tuple] = {}   # ``elk_own``'s results
        self._dyn_raw: dict[float, PreloadPlan] = {}   # Dyn's own plan at each link share it tried
        self.weaker = WEAKER if weaker is None else weaker
        self.links = None if relayouts is None else relayouts.links()
        self.relayouts = relayouts
        self.token = self.ops if token is None else list(token)   # one token's ops (Ideal's)
        self.max_displacement, self.max_orders = max_displacement, max_orders
        self.metric = latency_of if metric is None else metric
        self.found: dict[str, tuple] = {}
        self._improved: dict[tuple, tuple[PreloadPlan, float]] = {}
        self._refined: dict[tuple, list[PreloadPlan]] = {}   # ``improved``'s finished plans, yields aside
        self.memos: dict[float, dict] = {}   # per link share: Dyn's and Full's allocations and plans

    def with_ops(self, ops: Sequence[PreloadOp]) -> "DesignSearch":
        """The same search over ``ops`` (the same ops, some keeping bytes free: ``reserve``)."""
        search = DesignSearch(ops, self.capacity, self.split, self.max_displacement, self.max_orders, None,
                              self.metric, ops, self.weaker, self.link_shares)
        search.relayouts, search.links = self.relayouts, self.links
        return search

    def finish(self, plan: PreloadPlan) -> PreloadPlan:
        """``plan`` as it runs: its relayouts charged (``Relayouts.finish``, sharing copies
        where they fit beside these ops), if any."""
        return plan if self.relayouts is None else self.relayouts.finish(plan, self.ops, self.capacity)

    def memos_for(self, ops: Sequence[PreloadOp]) -> dict:
        """``plan_preloads``' memos shared by Dyn and Full for ``ops`` (one per link share:
        a paced op keeps its signature, its loads differ)."""
        return self.memos.setdefault(ops[0].link_share if ops else 1.0, {})

    def shares(self) -> list[float]:
        """The link shares worth trying: 1 (unpaced) and each of ``link_shares`` below some
        op's load's link share (pacing above every load's changes nothing)."""
        most = max((op.most_pressure() for op in self.ops), default=0.0)
        return [1.0] + [s for s in self.link_shares if s < 1.0 and s < most]

    def paced(self, share: float) -> list[PreloadOp]:
        """The ops with every preload paced to ``share`` of its busiest link."""
        if share not in self._paced:
            self._paced[share] = [op.paced(share) for op in self.ops]
        return self._paced[share]

    def own(self, design: str, ops: Sequence[PreloadOp] | None = None,
            **rank) -> tuple[PreloadPlan, list[int], int, float | None]:
        """The design's own search on ``ops`` (default: unpaced): (plan, order, orders
        tried, Static's execution space); ``rank``: Dyn's way of choosing preload states
        (``plan_preloads``' ``start`` and ``caps``; default all)."""
        ops = self.ops if ops is None else list(ops)
        capacity, metric = self.capacity, self.metric
        in_order = list(range(len(ops)))
        if design == "basic":
            return basic_schedule(ops, capacity), in_order, 1, None
        if design == "static":
            plan, space = static_sweep(ops, capacity, metric=metric)
            return plan, in_order, 1, space
        if design == "dyn":
            return (plan_preloads(ops, capacity, None, self.split, memos=self.memos_for(ops), metric=metric,
                                  links=self.links, **rank),
                    in_order, 1, None)
        if design == "full":
            plan, order, tried = reorder(ops, capacity, self.split, max_orders=self.max_orders,
                                         max_displacement=self.max_displacement, metric=metric, links=self.links,
                                         memos=self.memos_for(ops))
            return plan, order, tried, None
        raise ValueError(f"unknown design '{design}'; known: {', '.join(DESIGNS)}")

    def improved(self, raw: PreloadPlan, ops: Sequence[PreloadOp] | None = None) -> tuple[PreloadPlan, float]:
        """ELK's plan ``raw`` finished, its states refined against the relayouts
        (``Relayouts.refine``, both ways) and its loads hidden where they wait
        (``hide_loads``), each step kept where ``metric`` falls; with its metric. Full's
        plan is often Dyn's: done once per plan."""
        ops = self.ops if ops is None else ops
        s = raw.schedule
        key = (tuple(s.order), tuple(s.frontier), tuple(raw.exec_plan), tuple(raw.preload_plan),
               tuple((op.link_share, op.part_shares) for op in ops), raw.yields)
        if key not in self._improved:
            # the finished and refined plans do not depend on ``yields``: made once for both
            if key[:-1] not in self._refined:
                found = [self.finish(raw)]
                if self.relayouts is not None:
                    found += [self.finish(self.relayouts.refine(raw, ops, capacity))
                              for capacity in (None, self.capacity)]   # (two ways: neither always wins)
                self._refined[key[:-1]] = found
            plan, value = None, np.inf
            for candidate in self._refined[key[:-1]]:
                candidate = dataclasses.replace(candidate, yields=raw.yields)
                if self.metric(candidate) < value:
                    plan, value = candidate, self.metric(candidate)
            plan = hide_loads(plan, ops, self.capacity, self.metric)
            self._improved[key] = (plan, self.metric(plan))
        return self._improved[key]

    def elk_own(self, design: str) -> tuple:
        """ELK-Dyn's or ELK-Full's own search, improved: (plan, metric, order, orders
        tried, link share): Dyn over ``shares`` (unpaced with every way of choosing preload
        states, paced with the way that won unpaced, as Full ranks its orders), Full at
        Dyn's best share with the operators waiting for a contended link and, as ELK's
        artifact's delay_comp=False, with the loads yielding it instead (``PreloadPlan``'s
        ``yields``), the faster kept."""
        if design in self._elk_own:
            return self._elk_own[design]
        shares = [self.elk_own("dyn")[4]] if design == "full" else self.shares()
        best, rank = None, {}
        for share in shares:
            ops = self.paced(share)
            raw, order, tried, _ = self.own(design, ops, **rank)
            if design == "dyn":
                self._dyn_raw[share] = raw
                if not rank:
                    rank = dict(start="exposed", caps=[raw.cap]) if raw.start == "exposed" else dict(
                        start=raw.start, caps=[raw.cap])
            # ELK's artifact's Full also tries delay_comp=False at its order: the loads yield
            candidates = [(raw, ops, order)]
            if design == "full":
                # Dyn picked its share with the operators waiting; yielding loads may prefer
                # another (opt-30b at 32 TB/s: 0.7 for Dyn, 0.9 or 1 yielding): Dyn's plan at
                # each share it tried yields too
                candidates += [(dyn_raw, self.paced(other), list(range(len(ops))))
                               for other, dyn_raw in self._dyn_raw.items() if other != share]
            for plan_raw, plan_ops, plan_order in candidates:
                yielding = design == "full" and plan_raw.transfer_cycles is not None
                for candidate in (plan_raw, dataclasses.replace(plan_raw, yields=True)) if yielding else (plan_raw,):
                    plan, value = self.improved(candidate, plan_ops)
                    if best is None or value < best[1]:
                        best = (plan, value, plan_order, tried, plan_ops[0].link_share if plan_ops else 1.0)
        self._elk_own[design] = best
        return best

    def result(self, design: str) -> tuple:
        """(finished plan, its metric, order, orders tried, Static's space, kept, reorder
        gain, link share)."""
        if design not in self.found:
            share, space = 1.0, None
            if design in ("dyn", "full"):
                plan, value, order, tried, share = self.elk_own(design)
            else:
                plan, order, tried, space = self.own(design)
                plan = self.finish(plan)
                value = self.metric(plan)
            ops = self.paced(share)
            if design in self.seeds:
                seeded, seeded_value, seeded_ops = self.retimed(design, *self.seeds[design])
                if seeded_value < value:
                    plan, value, order, ops = seeded, seeded_value, list(seeded.schedule.order), seeded_ops
            kept, gain = "", None
            weaker = self.weaker.get(design)
            other = None
            if weaker is not None:
                try:
                    other = self.result(weaker)
                except (OrderError, PreloadFitError):   # the weaker design has no schedule (Basic's
                    other = None                        # fastest plans, Static's fixed split overflow)
            if other is not None:
                if design == "full":
                    gain = max(0.0, other[1] - value)
                if other[1] < value:
                    plan, value, order, space, kept = other[0], other[1], other[2], other[4], other[5] or weaker
                    ops = other[8]
            share = max((op.link_share for op in ops), default=1.0)
            self.found[design] = (plan, value, order, tried, space, kept, gain, share, ops)
        return self.found[design]

    def retimed(self, design: str, plan: PreloadPlan, share: float,
                seed_ops: Sequence[PreloadOp] | None = None) -> tuple[PreloadPlan, float, list[PreloadOp]]:
        """``plan`` (its order, frontiers and states: a slower HBM's choice for these ops,
        its loads paced to ``share``) as it runs on these ops: (plan, metric, ops paced).
        Its decisions hold at any HBM bandwidth (its bytes are the same) and a load can be
        paced down to the link share it took then (``PreloadOp.paced``), which makes it
        last as long as it did: the link time a load takes does not depend on the HBM.
        So the plan with each op paced so (``paced_as``, each load of an op to its own
        share given ``seed_ops``, the ops it was planned on) runs as it did, and a search seeded
        with a slower HBM's choices is never slower than that choice. Also tried: every
        op paced alike, at each share the design searches (Basic and Static: unpaced), the
        best kept; ELK's designs' plans improved (``improved``)."""
        if len(self.ops) != len(plan.exec_plan):
            raise ValueError(f"a seed plan of {len(plan.exec_plan)} ops for a search of {len(self.ops)}")
        shares = dict.fromkeys([share] + self.shares()) if design in ELK_DESIGNS else (1.0,)
        best = None
        for ops in [self.paced(theta) for theta in shares] + [self.paced_as(plan, seed_ops)]:
            raw = dataclasses.replace(_as_run(ops, plan.schedule, list(plan.exec_plan), list(plan.preload_plan)),
                                      start=plan.start, cap=plan.cap, yields=plan.yields)
            if design in ELK_DESIGNS:
                found, value = self.improved(raw, ops)
            else:
                found = self.finish(raw)
                value = self.metric(found)
            if best is None or value < best[1]:
                best = (found, value, ops)
        return best

    def paced_as(self, plan: PreloadPlan, seed_ops: Sequence[PreloadOp] | None = None) -> list[PreloadOp]:
        """The ops, each paced to the link share its load took in ``plan`` (planned on a
        slower HBM) where it would now take more: each load as long as it was then. With
        ``seed_ops`` (``plan``'s ops), each part of an op's load (its weights', each
        input's) to the share it took (``PreloadOp.paced_like``); else all of an op's
        parts to their average share (exact for an op loading one part only)."""
        if seed_ops is not None:
            return [op.paced_like(seed, r, j)
                    for op, seed, r, j in zip(self.ops, seed_ops, plan.preload_plan, plan.exec_plan)]
        pressure = plan.load_pressure or [1.0] * len(self.ops)
        return [op.paced(p) if 0.0 < p < op.load_share(r, j) else op
                for op, r, j, p in zip(self.ops, plan.preload_plan, plan.exec_plan, pressure)]

    def decision(self, model: ModelSpec, cache: FrontierCache, design: str, loop: bool = False,
                 tables: Sequence[OpTable] | None = None) -> ElkDecision:
        """``design``'s decision; ``tables``: the op tables the ops were made of (default:
        each op's frontier table)."""
        tables = None if tables is None else list(tables)
        if design == "ideal":
            latency = ideal_loop_latency(self.token) if loop else ideal_latency(self.token)
            return ElkDecision("ideal", latency, [], None, list(range(len(self.ops))),
                               preload_ops=self.ops, tables=tables)
        plan, value, order, tried, space, kept, gain, share, ops = self.result(design)
        held, shared = ({}, {}) if self.relayouts is None else held_and_shared(self.relayouts.problem, plan.shared)
        return ElkDecision(design, value, decisions_of(model, cache, plan, tables), plan, order, tried, space, kept,
                           gain, ops, tables, share, held, shared)


def loop_model(model: ModelSpec, layer_of: Sequence[int | None] | None) -> tuple[ModelSpec, list[int | None], int]:
    """``model`` followed by the next token's first layer (all of it when no layers are
    known): what a decode loop runs between the ends of two tokens' first layers
    (``loop_period``). Returns the model, its ops' layers (the copies a new layer) and
    the prefix length."""
    n = len(model.ops)
    layers = [None] * n if layer_of is None else list(layer_of)
    known = [layer for layer in layers if layer is not None]
    prefix = n if not known else max(i for i, layer in enumerate(layers) if layer == min(known)) + 1
    copies = []
    for op in model.ops[:prefix]:
        copies.append(dataclasses.replace(
            op, name=f"next.{op.name}",
            producers={k: v + n for k, v in op.producers.items()},
            shared_reads={k: (home + n if home < prefix else home, name) for k, (home, name) in op.shared_reads.items()}))
    extra = [None if layer is None else max(known) + 1 for layer in layers[:prefix]]
    return ModelSpec(model.name, tuple(model.ops) + tuple(copies)), layers + extra, prefix


def elk_plan(model: ModelSpec, cache: FrontierCache, design: str = "dyn", split: str = "paper",
             ops: list[PreloadOp] | None = None, capacity: float | None = None,
             max_displacement: int | None = None, max_orders: int | None = None,
             relayouts: bool = False, search: DesignSearch | None = None) -> ElkDecision:
    """One design of ELK s6.1 for ``model`` on ``cache``'s device (which must have off-chip
    memory), through a ``DesignSearch`` (pass ``search`` to share one between designs).
    ``PreloadFitError`` names an op no plan fits even alone. ``relayouts`` charges the
    activations' relayouts between the chosen plans (``with_relayouts``)."""
    if cache.device.offchip is None:
        raise ValueError(f"device '{cache.device.name}' has no off-chip memory")
    weights = sum(weight_bytes(op) for op in model.ops)
    if weights > cache.device.offchip.capacity_bytes:
        raise OffchipFitError(weights, cache.device.offchip.capacity_bytes, cache.device.name)
    if design not in DESIGNS:
        raise ValueError(f"unknown design '{design}'; known: {', '.join(DESIGNS)}")
    if search is None:
        ops = preload_ops(model, cache) if ops is None else ops
        capacity = float(cache.device.sram_bytes) if capacity is None else capacity
        search = DesignSearch(ops, capacity, split, max_displacement, max_orders,
                              Relayouts(model, cache) if relayouts else None)
    return search.decision(model, cache, design)


PACKING_TRIES = 8
"""How many times ``packed_decision`` plans again before it gives up."""


def packed_decision(search: DesignSearch, model: ModelSpec, cache: FrontierCache, decision: ElkDecision,
                    input_loads: Sequence[Sequence[str]] | None = None, problem=None) -> ElkDecision:
    """``decision``, or the same design planned again while the buffers of the program its
    plan makes do not pack in a core by `device-alloc`'s placement
    (`irc.planner.preload_packing`): ELK counts bytes, the placement needs a free range for
    each buffer, so a plan whose bytes fit may still fragment, and `preload-schedule`
    would then narrow its frontiers (the plan's cycles not what runs) or fail. Each try
    keeps the bytes its first fit overflowed by free while an op executes
    (``PreloadOp.reserve``): the op where the buffer that does not fit is allocated, or,
    where that op cannot spare them, the nearest op before it that can (its buffers kept
    across are what the space fragments around); where that changed nothing, every op
    keeps them free, as far as it can. At most ``PACKING_TRIES`` times, then the last
    plan stays (and the lowering says why)."""
    sram = int(cache.device.sram_bytes)
    ops = list(search.ops)
    tried: set[tuple[int | None, int]] = set()
    stuck = False
    for _ in range(PACKING_TRIES):
        if decision.plan is None:
            return decision
        deficit, at = packing_deficit(model, cache, decision.plan, sram, input_loads, problem)
        if deficit == 0:
            return decision
        target = None if stuck else next((k for k in range(at, -1, -1) if (k, deficit) not in tried
                                          and ops[k].min_exec() + ops[k].reserve + deficit <= search.capacity), None)
        targets = [target] if target is not None else range(len(ops))   # else every op that can spare it
        tried.add((target, deficit))
        changed = False
        for k in targets:
            reserve = min(ops[k].reserve + deficit, search.capacity - ops[k].min_exec())
            if reserve > ops[k].reserve:
                ops[k] = dataclasses.replace(ops[k], reserve=reserve, signature=(search.ops[k].signature, reserve))
                changed = True
        if not changed:
            return decision
        try:
            again = search.with_ops(ops).decision(model, cache, decision.design, False,
                                                  None if problem is None else problem.tables)
        except (OrderError, PreloadFitError):
            return decision
        stuck = _same_plan(again.plan, decision.plan)   # the reserve did not bind: keep bytes free everywhere
        decision = again
    return decision


def _same_tables(one: Sequence[OpTable] | None, other: Sequence[OpTable]) -> bool:
    """Whether a plan's state indices into ``one`` mean the same states in ``other``: the
    same tables, or equal ones (the layout-matched tables are made again for each study)."""
    return one is not None and len(one) == len(other) and all(
        a is b or (a.active == b.active and np.array_equal(a.cold, b.cold)) for a, b in zip(one, other))


def _same_plan(one: PreloadPlan | None, other: PreloadPlan | None) -> bool:
    return one is not None and other is not None and one.exec_plan == other.exec_plan \
        and one.preload_plan == other.preload_plan and list(one.schedule.frontier) == list(other.schedule.frontier) \
        and list(one.schedule.order) == list(other.schedule.order)


REORDER_BUDGET = 32
"""ELK-Full planning a compiled model tries at most this many preload orders, those nearest
the execution order (`irc.planner.preload_designs.layer_orders`; benchmarks/elk.py tries them all)."""


def plan_offchip(model: ModelSpec, cache: FrontierCache, design: str = "full", split: str = "paper",
                 extra_hbm_bytes: Sequence[float] | None = None,
                 input_loads: Sequence[Sequence[str]] | None = None) -> ElkDecision:
    """A model on a chip with off-chip memory as the compiler plans it (``rtensor-partition``
    and ``irc-plan --model`` alike): ELK's ``design`` over every op, each preload reading its
    weights and ``extra_hbm_bytes`` (the non-weight arguments it loads: a KV cache) from HBM,
    the activations kept on chip across each op counted in its execution space, identical
    layers found by their signatures, and the relayouts between the chosen plans charged
    (``offchip_study``); ``input_loads`` as in ``preload_ops``."""
    return offchip_study(model, cache, (design,), split=split, extra_hbm_bytes=extra_hbm_bytes,
                         input_loads=input_loads).decisions[design]


@dataclass
class OffchipStudy:
    """Designs of one model on one chip (``offchip_study``): each design's decision, the
    overlap bound (``irc.planner.preload_designs.overlap_bound``) and the ops as planned (with
    ``loop``, one token's ops followed by the next token's first layer)."""

    decisions: dict[str, ElkDecision]
    bound_cycles: float
    ops: list[PreloadOp]
    loop: bool = False
    prefix: int = 0


def _seeds_for(seeds: dict[str, ElkDecision] | None, tables) -> dict:
    """The seed decisions planned from ``tables`` (others index other plans), each as
    ``DesignSearch``'s seeds take it: (plan, link share, the ops it ran on)."""
    return {design: (decision.plan, decision.link_share, decision.preload_ops)
            for design, decision in (seeds or {}).items()
            if decision.plan is not None and _same_tables(decision.tables, tables)}


def offchip_study(model: ModelSpec, cache: FrontierCache, designs: Sequence[str], *, split: str = "paper",
                  extra_hbm_bytes: Sequence[float] | None = None, layer_of: Sequence[int | None] | None = None,
                  max_orders: int | None = REORDER_BUDGET, max_displacement: int | None = None,
                  extra_exec_cycles: Sequence[float] | None = None, loop: bool = False,
                  input_loads: Sequence[Sequence[str]] | None = None, layouts: bool = True,
                  seeds: dict[str, ElkDecision] | None = None) -> OffchipStudy:
    """ELK's ``designs`` for ``model`` as the compiler plans it: every preload reading an
    op's weights and ``extra_hbm_bytes`` from HBM, the activations kept on chip across each
    op counted in its execution space (``preload_ops``' ``resting``), identical layers as
    ``layer_of`` gives them (default: found by their signatures, ``infer_layers``), the
    relayouts between the chosen plans charged, ``extra_exec_cycles`` added to ops (the
    all-reduces of a model split over chips), ``input_loads`` the inputs an op preloads
    into its execute-state layout (``preload_ops``), one ``DesignSearch`` for all designs. With
    ``loop``, latencies are per token of a decode loop (``loop_model``, ``loop_period``;
    Ideal's is ``ideal_loop_latency``). With ``layouts``, ELK's designs also plan with the
    layout-matched op tables (`irc.planner.layout_match`) and keep the faster. ``seeds``:
    the decisions of the same study on a slower HBM (a sweep's previous point), each a
    candidate of its design here (``DesignSearch.retimed``): latency never grows with the
    HBM bandwidth along such a sweep."""
    if cache.device.offchip is None:
        raise ValueError(f"device '{cache.device.name}' has no off-chip memory")
    for design in designs:
        if design not in DESIGNS:
            raise ValueError(f"unknown design '{design}'; known: {', '.join(DESIGNS)}")
    weights = sum(weight_bytes(op) for op in model.ops)
    if weights > cache.device.offchip.capacity_bytes:
        raise OffchipFitError(weights, cache.device.offchip.capacity_bytes, cache.device.name)
    layers = infer_layers(model, cache) if layer_of is None else list(layer_of)
    prefix, metric = 0, None
    if loop:
        model, layers, prefix = loop_model(model, layers)
        extra_hbm_bytes = None if extra_hbm_bytes is None else list(extra_hbm_bytes) + list(extra_hbm_bytes[:prefix])
        extra_exec_cycles = (None if extra_exec_cycles is None
                             else list(extra_exec_cycles) + list(extra_exec_cycles[:prefix]))
        input_loads = None if input_loads is None else list(input_loads) + list(input_loads[:prefix])
        metric = lambda plan: loop_period(plan, prefix)  # noqa: E731

    def search(problem: _ModelProblem, weaker: dict[str, str] | None = None,
               masks: list | None = None) -> tuple[DesignSearch, list[PreloadOp]]:
        ops = preload_ops(model, cache, layers, extra_hbm_bytes=extra_hbm_bytes, resting=True,
                          extra_exec_cycles=extra_exec_cycles, input_loads=input_loads, problem=problem,
                          masks=masks)
        return DesignSearch(ops, float(cache.device.sram_bytes), split, max_displacement, max_orders,
                            Relayouts(model, cache, problem), metric, token=ops[prefix:], weaker=weaker,
                            seeds=_seeds_for(seeds, problem.tables)), ops

    plain, room = _ModelProblem(model, cache, None), float(cache.device.sram_bytes)
    first, ops, decisions, spread = spread_fallback(
        search, lambda first: {design: first.decision(model, cache, design, loop, plain.tables) for design in designs},
        model, plain, room, loop)
    made = {design: (first, plain) for design in designs}   # the search and tables each decision came from
    # ELK's own designs also plan with the layout-matched candidates of the cheap ops
    # (`irc.planner.layout_match`), which the relayout-aware allocations (``OutgoingLinks``)
    # may prefer; the greedy split is not monotone in its candidates, so the faster is kept
    matched = _ModelProblem(model, cache, None, layouts=True) if layouts else plain
    if any(a is not b for a, b in zip(matched.tables, plain.tables)):
        second, ops = spread_search(search, model, matched, room, ELK_WEAKER)[:2] if spread else \
            search(matched, ELK_WEAKER)
        try:
            # Full's reorder is most of the planning time: it runs again only where the
            # matched tables' Dyn wins (else the first Full, <= the first Dyn, stands)
            wins = {"ideal"} | ({"dyn", "full"} if any(d in ELK_DESIGNS for d in designs)
                                and second.result("dyn")[1] < first.result("dyn")[1] else set())
        except (OrderError, PreloadFitError):   # its activations kept on chip grew past SRAM
            wins = {"ideal"}
        for design in set(designs) & wins:
            other = second.decision(model, cache, design, loop, matched.tables)
            if other.latency_cycles < decisions[design].latency_cycles:
                decisions[design], made[design] = other, (second, matched)
    if not loop:   # the plans as compiled: each one's program must pack as `device-alloc` places it
        for design, decision in decisions.items():
            chosen, problem = made[design]
            decisions[design] = packed_decision(chosen, model, cache, decision, input_loads, problem)
            if spread:   # holders spread: a plan that does not pack is refused here
                check_packs(model, cache, decisions[design].plan, input_loads, problem)
    # the matched tables' plans include the frontier's: their fastest bound every design
    bound = overlap_bound(ops[prefix:], cache.device.clock_hz / cache.device.offchip.bytes_per_s)
    return OffchipStudy(decisions, bound, ops, loop, prefix)


__all__ = ["DESIGNS", "REORDER_BUDGET", "DesignSearch", "ElkDecision", "ElkOpDecision", "OffchipFitError",
           "OffchipStudy", "PreloadFitError", "SpreadFitError", "elk_plan", "hide_loads", "infer_layers", "loop_model",
           "offchip_study", "own_inputs", "plan_offchip", "planned_offchip", "preload_ops", "weight_bytes"]
