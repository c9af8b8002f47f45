"""The HBM reads of a model planned within SRAM on a chip with off-chip memory (issue 23).

T10's Algorithm 1 (`irc.planner.model`) plans a model whose weights all rest on chip; on
a chip with off-chip memory its arguments still start in HBM (ELK s2.2), and
`preload-schedule` turns each load of one into a preload, issued as far ahead as the
plan's account lets it, in program order, one after the other on the HBM, and each op
waits for its own before it starts. Priced here with the pass's own rule
(``resident_frontiers``, which both call): each op's frontier is the widest whose
loads for later ops fit beside the bytes the op holds within the plan's peak, so a
load the account has no room for at the start waits for the op that frees it. An op's
loads are its weights in their idle layouts and the inputs it loads into its execute
layout (`irc.planner.preload_ops.own_inputs`), each timed as the chip times a preload
(``preload_seconds`` of its tile per core and its distinct bytes). The waits are the
ELK timeline's (`irc.planner.preload.timeline`) at those frontiers: the cycles the
model runs beyond its ops' own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from irc.devices import Device
from irc.devices.topology import preload_pressure, preload_seconds
from irc.planner.idle import IdlePlan, read_bytes
from irc.planner.igo_choice import UnfusedPoint
from irc.planner.model_spec import ModelOp
from irc.planner.op_table import canonical_spec
from irc.planner.preload import timeline
from irc.planner.preload_designs import widest_frontiers
from irc.planner.relayout import tensor_elements
from irc.plans.pair import PairScore
from irc.plans.plan import Plan


def _by_name(values, name: str, op: ModelOp):
    """``values``' entry for ``name``: by the op's own name or its canonical one (a plan of
    the op's table names its tensors t0, t1, ...)."""
    return values[name] if name in values else values[f"t{op.spec.tensor_index(name)}"]


def op_loads(device: Device, op: ModelOp, active: Plan, idle: IdlePlan | None,
             own: Sequence[str]) -> list[tuple[float, float]]:
    """(bytes per core, distinct bytes read from HBM) of each preload ``op`` waits for: its
    weights in ``idle``'s layout (each distinct slice read once, ``read_bytes``) and its
    inputs ``own`` in ``active``'s (each distinct partition read once, the cores over its
    replicas)."""
    loads = []
    for name in op.weights:
        if idle is None:
            whole = float(tensor_elements(op.spec, name) * op.spec.bytes_of(name))
            loads.append((whole, whole))
            continue
        key = name if name in idle.weight_bytes else f"t{op.spec.tensor_index(name)}"
        renamed = op.spec if key == name else canonical_spec(op.spec)
        loads.append((float(idle.weight_bytes[key]), float(read_bytes(renamed, idle, key))))
    return loads + [input_load(op, active, name) for name in own]


def input_load(op: ModelOp, active: Plan, name: str) -> tuple[float, float]:
    """(bytes per core, distinct bytes read from HBM) of ``op``'s input ``name`` loaded
    into ``active``'s layout: each distinct partition read once, the cores over its
    replicas (a fused pair's plan states them as an operator's does; an unfused point
    loads it into each product reading it)."""
    if isinstance(active, UnfusedPoint):
        canonical = f"t{op.spec.tensor_index(name)}"   # (its products name the pair's tensors so)
        found = [input_load(op, plan, canonical) for _, plan in active.readers(canonical)]
        return sum(tile for tile, _ in found), sum(distinct for _, distinct in found)
    score = active.score
    tile = float(_by_name(score.memory.partitions, name, op))
    return tile, score.cores // _by_name(score.replicas, name, op) * tile


def exchange_cycles(active: Plan | UnfusedPoint) -> float:
    """The cycles an active plan shifts in: an operator's, a fused gradient pair's two
    products' (`irc.plans.pair.PairScore`: dX's carries the exchange), an unfused point's
    two plans' (`irc.planner.igo_choice.UnfusedPoint`)."""
    if isinstance(active, UnfusedPoint):
        return exchange_cycles(active.dx) + exchange_cycles(active.dw)
    score = active.score
    if isinstance(score, PairScore):
        return float(score.dx.shift) + float(score.dw.shift)
    return float(score.cost.shift)


def resident_frontiers(held_bytes: Sequence[float], preload_bytes: Sequence[float], capacity: float) -> list[int]:
    """The preload frontiers of a program whose loads keep program order (no plan states
    them): per op, the widest whose loads for later ops fit beside the ``held_bytes`` it
    holds when nothing later is loaded yet (its own loads included) within ``capacity``
    (``widest_frontiers``). `preload-schedule` issues a plan within SRAM's loads so, from
    the program's liveness; the planner times the plan so, from its account."""
    return widest_frontiers(held_bytes, preload_bytes, capacity)


def held_bytes(account: Sequence[float], resting: Sequence[float]) -> list[float]:
    """Per op, the bytes it holds when no later op's loads are issued yet: its account
    (``account[i]``: every op's resting weights, the tensors kept across it and its own
    execute bytes, as `irc.planner.model` counts its peak) less the resting bytes of the
    ops after it (``resting[k]``: op k's weights in their idle layouts, loaded with k's)."""
    later, found = float(sum(resting)), []
    for total, rest in zip(account, resting):
        later -= rest
        found.append(float(total) - later)
    return found


@dataclass(frozen=True)
class LoadWaits:
    """How a plan within SRAM's loads run: the cycles the chip waits for them beyond its
    ops' own, each op's frontier, and the most bytes per core the program holds then
    (an op's held bytes and the loads of later ops issued before it ends)."""

    cycles: float
    frontiers: tuple[int, ...]
    peak_bytes: float


def resident_peak(held: Sequence[float], preload_bytes: Sequence[float], frontiers: Sequence[int]) -> float:
    """The most bytes per core live with loads in program order at ``frontiers``: per op,
    what it holds and the loads of the ops after it issued before it ends."""
    return max((h + sum(preload_bytes[i + 1:q]) for i, (h, q) in enumerate(zip(held, frontiers))), default=0.0)


def load_waits(device: Device, ops: Sequence[ModelOp], chosen: Sequence[tuple[Plan, IdlePlan | None]],
               exec_cycles: Sequence[float], moved_cycles: Sequence[float], own: Sequence[Sequence[tuple[int, str]]],
               held: Sequence[float], capacity: float) -> LoadWaits:
    """How ``ops`` run with the ``chosen`` (active, idle) plans beyond ``exec_cycles``
    (each op's execute, setup and relayout cycles): their loads (each op's weights and
    ``own[i]``: (the op whose execute layout holds it, its name there) of each input loaded
    before op i, `irc.planner.preload_packing.input_loads`) issued at the frontiers
    ``resident_frontiers`` gives within ``capacity`` (the plan's peak) beside the bytes
    each op holds (``held``: ``held_bytes``), an op's exchange transfers (its shifts
    and ``moved_cycles``: its setup's distribution and its inputs' relayouts) contending
    with the loads streaming meanwhile as the chip times them
    (``irc.devices.topology.operator_contention``)."""
    clock = device.clock_hz
    load_cycles, shares, transfers, tiles = [], [], [], []
    for op, (active, idle), entries, moved in zip(ops, chosen, own, moved_cycles):
        cycles = link = 0.0
        loads = op_loads(device, op, active, idle, ()) + [input_load(ops[h], chosen[h][0], name) for h, name in entries]
        for tile, distinct in loads:
            load = preload_seconds(device, tile, distinct) * clock if (tile or distinct) else 0.0
            cycles += load
            link += preload_pressure(device, tile, load, distinct) * load
        load_cycles.append(cycles)
        shares.append(link / cycles if cycles > 0 else 0.0)
        transfers.append(exchange_cycles(active) + float(moved))
        tiles.append(sum(tile for tile, _ in loads))
    n = len(load_cycles)
    if n == 0:
        return LoadWaits(0.0, (), 0.0)
    frontiers = resident_frontiers(held, tiles, capacity)
    peak = resident_peak(held, tiles, frontiers)
    if not any(load_cycles):
        return LoadWaits(0.0, tuple(frontiers), peak)
    _, _, _, exec_end = timeline(n, list(range(n)), frontiers, list(exec_cycles), load_cycles, transfers, shares)
    return LoadWaits(max(0.0, float(exec_end[-1]) - float(sum(exec_cycles))), tuple(frontiers), peak)


__all__ = ["LoadWaits", "exchange_cycles", "held_bytes", "input_load", "load_waits", "op_loads", "resident_frontiers",
           "resident_peak"]
