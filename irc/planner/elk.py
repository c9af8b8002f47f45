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

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from irc.devices.topology import preload_pressure, preload_seconds
from irc.planner.idle import IdlePlan, in_place_bytes
from irc.planner.model import ModelSpec, _ModelProblem, _named_idle
from irc.planner.errors import PlanError
from irc.planner.op_table import FrontierCache
from irc.planner.plan import Plan
from irc.planner.preload import (
    PreloadFitError,
    PreloadOp,
    PreloadPlan,
    basic_schedule,
    ideal_latency,
    plan_preloads,
    reorder,
    static_sweep,
)
from irc.planner.relayout import tensor_elements

DESIGNS = ("basic", "static", "dyn", "full", "ideal")


class OffchipFitError(PreloadFitError):
    """A model whose weights do not fit the chip's off-chip memory (HBM); ``op`` is empty:
    no one op is at fault."""

    def __init__(self, needed: int, capacity: int, device: str) -> None:
        PlanError.__init__(self, f"the model's weights need {needed} B of off-chip memory (HBM), more than "
                                 f"{device}'s {capacity} B")
        self.op, self.needed, self.available = "", needed, capacity


def weight_bytes(op) -> int:
    """Bytes of an op's weights: what its preload reads from HBM."""
    return sum(tensor_elements(op.spec, w) * op.spec.bytes_of(w) for w in op.weights)


def preload_ops(model: ModelSpec, cache: FrontierCache, layer_of: Sequence[int | None] | None = None,
                extra_hbm_bytes: Sequence[float] | None = None, resting: bool = False) -> list[PreloadOp]:
    """One ``PreloadOp`` per model op (identical ops share their table). ``extra_hbm_bytes``
    adds data an op reads from HBM beside its weights (a KV cache); ``resting`` counts the
    activations kept on chip across each op (produced earlier, read later: at the most
    their producers' plans place) in its execution space, as a compiled program holds them."""
    device = cache.device
    clock = device.clock_hz
    kept = [0] * len(model.ops)
    if resting:
        problem = _ModelProblem(model, cache, None)
        kept = [problem.live_bytes(i, []) for i in range(len(model.ops))]
        for first, last, _, home, name in model.shared_spans(weights=True):
            # a weight several ops read: its holder's preload-state copy stays from the
            # first reader to the last (at most its largest idle slice)
            table = cache.table(model.ops[home].spec, model.ops[home].weights)
            canonical = f"t{model.ops[home].spec.tensor_index(name)}"
            most = max(idle.weight_bytes[canonical] for idle in table.idle)
            for i in range(first, last + 1):
                if i != home:
                    kept[i] += most
    ops = []
    for i, op in enumerate(model.ops):
        table = cache.table(op.spec, op.weights)
        hbm = weight_bytes(op) + (extra_hbm_bytes[i] if extra_hbm_bytes is not None else 0.0)
        cold = np.asarray(table.cold, dtype=np.float64)
        loads = np.array([preload_seconds(device, c, hbm) * clock if (c or hbm) else 0.0 for c in cold])
        distribute = np.where(np.isfinite(table.table), table.setup, np.inf)
        exchange = np.array([float(p.score.cost.shift + p.score.cost.sync + p.score.cost.reduction)
                             for p in table.active])   # cycles the exchange carries the op's own traffic
        shifts = np.array([float(p.score.cost.shift) for p in table.active])   # what preloads contend with
        pressure = np.array([preload_pressure(device, c, t) for c, t in zip(cold, loads)])
        ops.append(PreloadOp(
            op.name, float(hbm), np.asarray(table.hot, dtype=np.float64) + kept[i], table.active_cycles, cold,
            distribute, loads, exchange, signature=(id(table), kept[i]),
            layer=None if layer_of is None else layer_of[i], transfer_cycles=shifts, load_pressure=pressure,
            own_bytes=own_preload_bytes(table),
        ))
    return ops


def own_preload_bytes(table) -> np.ndarray:
    """[R, J] of an op table: the bytes its preload-state buffers hold while each execute
    state runs from each preload state (the device program frees them after the op), less
    the weights held in place (`irc.planner.idle.in_place_bytes`); 0 where the two do not
    pair."""
    found = np.zeros(table.table.shape)
    for r, j in zip(*np.nonzero(np.isfinite(table.table))):
        idle = table.idle[table.idle_index[r, j]]
        found[r, j] = idle.cold_bytes - in_place_bytes(idle, table.active[j])
    return found


def with_relayouts(model: ModelSpec, cache: FrontierCache, plan: PreloadPlan) -> PreloadPlan:
    """``plan`` with the relayouts of activations between its ops' chosen execute states
    charged to their consumers (T10 s4.3.2, as `irc.planner.model` prices them): what the
    compiled program runs. ELK's decisions are the plan's; only its times grow."""
    problem = _ModelProblem(model, cache, None)
    extra = [0.0] * len(model.ops)
    for edge in problem.edges:
        _, cycles = problem.relayout(edge, plan.exec_plan[edge.consumer], plan.exec_plan[edge.producer])
        extra[edge.consumer] += float(cycles)
    transfers = None if plan.transfer_cycles is None else [c + e for c, e in zip(plan.transfer_cycles, extra)]
    return PreloadPlan(plan.schedule, plan.exec_plan, plan.preload_plan,
                       [c + e for c, e in zip(plan.exec_cycles, extra)], plan.load_cycles,
                       plan.start, plan.cap, transfers, plan.load_pressure)


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
    the link they share with loads), as ``PreloadPlan.timeline`` runs it."""
    _, _, exec_start, exec_end = plan.timeline()
    previous = np.concatenate([[0.0], exec_end[:-1]])
    return (float(sum(plan.load_cycles)), float(np.maximum(0.0, exec_start - previous).sum()),
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
    design: str
    latency_cycles: float
    ops: list[ElkOpDecision]
    plan: PreloadPlan | None
    order: list[int]
    orders_tried: int = 1
    static_exec_bytes: float | None = None


def decisions_of(model: ModelSpec, cache: FrontierCache, plan: PreloadPlan) -> list[ElkOpDecision]:
    found = []
    for op, j, r in zip(model.ops, plan.exec_plan, plan.preload_plan):
        table = cache.table(op.spec, op.weights)
        active = cache.named_plan(op.spec, table.active[j])
        idle = _named_idle(op.spec, table.idle[table.idle_index[r, j]]) if op.weights else None
        found.append(ElkOpDecision(op.name, active, idle, float(table.setup[r, j]) if op.weights else 0.0))
    return found


def elk_plan(model: ModelSpec, cache: FrontierCache, design: str = "dyn", split: str = "paper",
             ops: list[PreloadOp] | None = None, capacity: float | None = None,
             max_displacement: int | None = None, max_orders: int | None = None,
             relayouts: bool = False) -> ElkDecision:
    """One design of ELK s6.1 for ``model`` on ``cache``'s device (which must have off-chip
    memory). ``PreloadFitError`` names an op no plan fits even alone. ELK-Full tries every
    valid preload order of s4.4's pruned tree (the paper), or with ``max_orders`` the ones
    nearest the execution order, and with ``max_displacement`` only orders moving no
    preload further than that (the artifact's bounded reordering, IPU_COST_FACTS s6).
    ``relayouts`` charges the activations' relayouts between the chosen plans
    (``with_relayouts``)."""
    if cache.device.offchip is None:
        raise ValueError(f"device '{cache.device.name}' has no off-chip memory")
    weights = sum(weight_bytes(op) for op in model.ops)
    if weights > cache.device.offchip.capacity_bytes:
        raise OffchipFitError(weights, cache.device.offchip.capacity_bytes, cache.device.name)
    ops = preload_ops(model, cache) if ops is None else ops
    capacity = float(cache.device.sram_bytes) if capacity is None else capacity
    if design == "ideal":
        return ElkDecision("ideal", ideal_latency(ops), [], None, list(range(len(ops))))
    static_bytes = None
    tried = 1
    if design == "basic":
        plan = basic_schedule(ops, capacity)
        order = list(range(len(ops)))
    elif design == "static":
        plan, static_bytes = static_sweep(ops, capacity)
        order = list(range(len(ops)))
    elif design == "dyn":
        plan = plan_preloads(ops, capacity, None, split)
        order = list(range(len(ops)))
    elif design == "full":
        plan, order, tried = reorder(ops, capacity, split, max_orders=max_orders, max_displacement=max_displacement)
    else:
        raise ValueError(f"unknown design '{design}'; known: {', '.join(DESIGNS)}")
    if relayouts:
        plan = with_relayouts(model, cache, plan)
    return ElkDecision(design, plan.latency, decisions_of(model, cache, plan), plan, order, tried, static_bytes)


REORDER_BUDGET = 32
"""ELK-Full planning a compiled model tries at most this many preload orders, those nearest
the execution order (`irc.planner.preload.layer_orders`; benchmarks/elk.py tries them all)."""


def plan_offchip(model: ModelSpec, cache: FrontierCache, design: str = "full", split: str = "paper",
                 extra_hbm_bytes: Sequence[float] | None = None) -> ElkDecision:
    """A model on a chip with off-chip memory as the compiler plans it (``rtensor-partition``
    and ``irc-plan --model`` alike): ELK's ``design`` over every op, each preload reading its
    weights and ``extra_hbm_bytes`` (the non-weight arguments it loads: a KV cache) from HBM,
    the activations kept on chip across each op counted in its execution space, identical
    layers found by their signatures, and the relayouts between the chosen plans charged."""
    ops = preload_ops(model, cache, infer_layers(model, cache), extra_hbm_bytes=extra_hbm_bytes, resting=True)
    budget = REORDER_BUDGET if design == "full" else None
    return elk_plan(model, cache, design, split, ops=ops, max_orders=budget, relayouts=True)


__all__ = ["DESIGNS", "REORDER_BUDGET", "ElkDecision", "ElkOpDecision", "OffchipFitError", "PreloadFitError", "elk_plan",
           "infer_layers", "plan_offchip", "planned_offchip", "preload_ops", "weight_bytes"]
