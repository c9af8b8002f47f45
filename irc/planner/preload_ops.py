"""ELK's operators priced from T10's per-operator tables (ELK s4.3, s3.3): one
``PreloadOp`` per model op, its execute states the op's active plans, its preload states
the idle layouts its weights can rest in, each (preload, execute) pair's load timed as the
chip times the ``device.preload_async`` that reads it (``weight_loads``: the distinct
slices a padded idle layout reads), and an op's own non-weight inputs loaded apart into
its execute layout (``own_input_loads``). `irc.planner.elk` runs ELK's designs on these.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from irc.devices.topology import preload_pressure, preload_seconds
from irc.planner.idle import in_place_bytes, read_bytes
from irc.planner.kept_spread import Masks, kept_across, states_of
from irc.planner.model import ModelSpec, _ModelProblem
from irc.planner.op_table import FrontierCache
from irc.planner.preload import PreloadOp
from irc.planner.relayout import tensor_elements


def weight_bytes(op) -> int:
    """Bytes of an op's weights: what its preload reads from HBM."""
    return sum(tensor_elements(op.spec, w) * op.spec.bytes_of(w) for w in op.weights)


def preload_ops(model: ModelSpec, cache: FrontierCache, layer_of: Sequence[int | None] | None = None,
                extra_hbm_bytes: Sequence[float] | None = None, resting: bool = False,
                extra_exec_cycles: Sequence[float] | None = None,
                input_loads: Sequence[Sequence[str]] | None = None,
                problem: _ModelProblem | None = None, masks: Masks | None = None) -> list[PreloadOp]:
    """One ``PreloadOp`` per model op (identical ops share their table). ``extra_hbm_bytes``
    adds data an op reads from HBM beside its weights (a KV cache); ``input_loads`` names,
    per op, its inputs that are not weights and that the device program preloads straight
    into its execute-state layout, each its own load (``own_input_loads``); ``resting`` counts the
    activations kept on chip across each op (produced earlier, read later: at the most
    their producers' plans place) in its execution space, as a compiled program holds them;
    ``extra_exec_cycles`` adds cycles to every execute state of an op (the all-reduce of
    its partial sums over the chips that split the model, ``allreduce_cycles``); ``problem``
    (a `_ModelProblem` of ``model``) gives the ops' tables (default: each op's frontier;
    ``layouts=True``: with the layout-matched plans, `irc.planner.layout_match`);
    ``masks``: per op, None or the [R, J] (preload, execute) states it may take (the
    holders of kept tensors spread, `irc.planner.kept_spread`), each kept tensor then at
    the most the states its holder may take place, one an op holds itself at its state's."""
    device = cache.device
    kept = [0] * len(model.ops)
    if resting and problem is None:
        problem = _ModelProblem(model, cache, None)
    tables = ([cache.table(op.spec, op.weights) for op in model.ops] if problem is None
              else problem.tables)
    if resting:   # (and a weight several ops read: its holder's preload-state copy, first reader to last)
        kept = kept_across(model, problem, masks)
    ops = []
    for i, (op, table) in enumerate(zip(model.ops, tables)):
        hbm = weight_bytes(op) + (extra_hbm_bytes[i] if extra_hbm_bytes is not None else 0.0)
        own = () if input_loads is None else tuple(input_loads[i])
        inputs, input_pressure, parts = own_input_loads(device, op, table, own, parts=True)
        cold = np.asarray(table.cold, dtype=np.float64)
        mask = None if masks is None else masks[i]
        distribute = np.where(states_of(table, mask), table.setup, np.inf)
        hot = np.asarray(table.hot, dtype=np.float64) + kept[i]
        if mask is not None:   # a state it may not take has no room
            hot = np.where(mask.any(axis=0), hot, np.inf)
        pair_loads, pair_pressure = weight_loads(device, table, weight_bytes(op), hbm - weight_bytes(op))
        least = (np.where(np.isfinite(distribute), pair_loads, np.inf).argmin(axis=1), np.arange(len(cold)))
        loads, pressure = pair_loads[least[1], least[0]], pair_pressure[least[1], least[0]]   # each row's least
        exchange = np.array([float(p.score.cost.shift + p.score.cost.sync + p.score.cost.reduction)
                             for p in table.active])   # cycles the exchange carries the op's own traffic
        shifts = np.array([float(p.score.cost.shift) for p in table.active])   # what preloads contend with
        extra = float(extra_exec_cycles[i]) if extra_exec_cycles is not None else 0.0
        signature = (id(table), _key(kept[i]), extra, own) + (() if mask is None else (mask.tobytes(),))
        ops.append(PreloadOp(
            op.name, float(hbm + sum(tensor_elements(op.spec, t) * op.spec.bytes_of(t) for t in own)),
            hot, np.asarray(table.active_cycles, dtype=np.float64) + extra, cold,
            distribute, loads, exchange, signature=signature,
            layer=None if layer_of is None else layer_of[i], transfer_cycles=shifts, load_pressure=pressure,
            own_bytes=own_preload_bytes(table), input_loads=inputs, input_pressure=input_pressure,
            pair_loads=pair_loads, pair_pressure=pair_pressure,
            input_parts=parts,
        ))
    return ops


def _key(kept) -> object:
    """A hashable form of an op's kept bytes (a number, or per execute state)."""
    return kept.tobytes() if isinstance(kept, np.ndarray) else kept


def weight_loads(device, table, whole: float, extra_bytes: float) -> tuple[np.ndarray, np.ndarray]:
    """[R, J] cycles and link shares of the preload of each preload state r feeding each
    execute state j, as the chip times it (`irc.interpreter.chip`'s ``preload``): each
    weight's distinct slices in the pair's idle plan at their whole size
    (``irc.planner.idle.read_bytes``: a slice padded past the tensor's end reads its
    padding; a table without idle weights, a fused pair's, reads their ``whole`` bytes)
    and ``extra_bytes`` (other arguments the op reads from HBM). A row's idle plan is
    the fastest of its size for each j, so what it reads may differ by j."""
    rows, states = table.table.shape
    clock = device.clock_hz
    cycles, shares = np.zeros((rows, states)), np.zeros((rows, states))
    found: dict[tuple[float, float], tuple[float, float]] = {}
    for r in range(rows):
        tile = float(table.cold[r])
        for j in range(states):
            idle = table.idle[table.idle_index[r, j]]
            read = (float(sum(read_bytes(table.spec, idle, w) for w in table.weights)) if table.weights
                    else whole) + extra_bytes
            if (tile, read) not in found:
                load = preload_seconds(device, tile, read) * clock if (tile or read) else 0.0
                found[tile, read] = (load, preload_pressure(device, tile, load, read))
            cycles[r, j], shares[r, j] = found[tile, read]
    return cycles, shares


def own_input_loads(device, op, table, names: Sequence[str], parts: bool = False) -> tuple:
    """[J] cycles and [J] link share of the preloads of ``op``'s inputs ``names`` into each
    execute state's layout, as the chip times them (``irc.interpreter.chip``'s ``preload``):
    one load per input of its partition per core (``MemoryBreakdown.partitions``), the HBM
    reading each distinct partition once (the cores over its replicas), back to back. With
    ``parts``, also each input's own ([J] cycles, [J] link share) (``PreloadOp.input_parts``)."""
    found = []
    clock = device.clock_hz
    for name in names:
        canonical = f"t{op.spec.tensor_index(name)}"
        cycles, shares = np.zeros(len(table.active)), np.zeros(len(table.active))
        for j, plan in enumerate(table.active):
            tile = float(plan.score.memory.partitions[canonical])
            distinct = plan.score.cores // plan.score.replicas[canonical]
            cycles[j] = preload_seconds(device, tile, distinct * tile) * clock if tile else 0.0
            shares[j] = preload_pressure(device, tile, cycles[j], distinct * tile)
        found.append((cycles, shares))
    total = np.zeros(len(table.active))
    link = np.zeros(len(table.active))
    for cycles, shares in found:
        total += cycles
        link += shares * cycles
    share_of = np.divide(link, total, out=np.zeros_like(total), where=total > 0)
    return (total, share_of, tuple(found)) if parts else (total, share_of)


def own_inputs(model: ModelSpec) -> list[tuple[str, ...]]:
    """Per op, its inputs that are neither weights nor produced by an op and whose one
    copy it holds, read by no op before it (``ModelOp.shared_reads``): the device program
    loads each straight into the op's execute-state layout before the op
    (`irc.lowering.shift_to_device`), so its preload depends on the op's plan. (A fused
    gradient pair's are not listed.)"""
    read_earlier = {home for i, op in enumerate(model.ops) for home in op.shared_reads.values() if home[0] > i}
    found = []
    for i, op in enumerate(model.ops):
        found.append(() if op.pair is not None else tuple(
            t.name for t in op.spec.inputs if t.name not in op.weights and t.name not in op.producers
            and t.name not in op.shared_reads and (i, t.name) not in read_earlier))
    return found


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

__all__ = ["own_input_loads", "own_inputs", "own_preload_bytes", "preload_ops", "weight_bytes", "weight_loads"]
