"""ELK on a ``ModelSpec``: T10's per-operator tables as ELK's preload/execute-state plans.

An operator's *execute-state* plans are its Pareto frontier (T10 s4.3.1; the "active"
plans of ``irc.planner.op_table``), its *preload-state* plans are the idle layouts its
weights can rest in (ELK s4.3: a preload state keeps each core's share of the shared
data; the rest is fetched from peers in the data distribution phase), and the
distribution phase is T10's setup from idle to active. A preload reads the op's weights
from HBM once and delivers each core its preload-state bytes over the exchange
(``irc.devices.topology.preload_seconds``). ``elk_plan`` runs one design of ELK s6.1 on
these ops: ``dyn`` (s4.2 + s4.3), ``full`` (+ s4.4 reordering), ``basic``, ``static``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from irc.devices.topology import preload_seconds
from irc.planner.idle import IdlePlan
from irc.planner.model import ModelSpec, _named_idle
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


def weight_bytes(op) -> int:
    """Bytes of an op's weights: what its preload reads from HBM."""
    return sum(tensor_elements(op.spec, w) * op.spec.bytes_of(w) for w in op.weights)


def preload_ops(model: ModelSpec, cache: FrontierCache, layer_of: Sequence[int | None] | None = None,
                extra_hbm_bytes: Sequence[float] | None = None) -> list[PreloadOp]:
    """One ``PreloadOp`` per model op (identical ops share their table). ``extra_hbm_bytes``
    adds data an op reads from HBM beside its weights (a KV cache)."""
    device = cache.device
    clock = device.clock_hz
    ops = []
    for i, op in enumerate(model.ops):
        table = cache.table(op.spec, op.weights)
        hbm = weight_bytes(op) + (extra_hbm_bytes[i] if extra_hbm_bytes is not None else 0.0)
        cold = np.asarray(table.cold, dtype=np.float64)
        loads = np.array([preload_seconds(device, c, hbm) * clock if (c or hbm) else 0.0 for c in cold])
        distribute = np.where(np.isfinite(table.table), table.setup, np.inf)
        ops.append(PreloadOp(
            op.name, float(hbm), table.hot, table.active_cycles, cold, distribute, loads,
            signature=id(table), layer=None if layer_of is None else layer_of[i],
        ))
    return ops


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
             max_displacement: int | None = None) -> ElkDecision:
    """One design of ELK s6.1 for ``model`` on ``cache``'s device (which must have off-chip
    memory). ``PreloadFitError`` names an op no plan fits even alone."""
    if cache.device.offchip is None:
        raise ValueError(f"device '{cache.device.name}' has no off-chip memory")
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
        plan, order, tried = reorder(ops, capacity, split, max_displacement=max_displacement)
    else:
        raise ValueError(f"unknown design '{design}'; known: {', '.join(DESIGNS)}")
    return ElkDecision(design, plan.latency, decisions_of(model, cache, plan), plan, order, tried, static_bytes)


__all__ = ["DESIGNS", "ElkDecision", "ElkOpDecision", "PreloadFitError", "elk_plan", "preload_ops", "weight_bytes"]
