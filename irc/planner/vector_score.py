"""Score many candidate plans at once with numpy (the fast path of ``search``).

Computes, for every candidate, the same geometry, memory, loop order and cost as
``irc.plans.evaluate.check_plan`` does for one plan (see ``irc.plans.plan`` for the
formulas); the hypothesis test in tests/planner checks that both agree on the optimum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from irc.cost import CostModel, OpWork, PlanGeometry, SubTask
from irc.devices import Device
from irc.planner.enumerate import CandidateSet
from irc.plans.roles import compute_roles, tensor_dim_axes
from irc.plans.spec import OpSpec


@dataclass(frozen=True)
class CandidateScores:
    memory: np.ndarray     # bytes per core
    cycles: np.ndarray     # total cycles
    compute: np.ndarray
    shift: np.ndarray
    sync: np.ndarray
    reduction: np.ndarray


def _ceil_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return -(-a // b)


def _resident(spec: OpSpec, candidates: CandidateSet):
    """Per candidate: per-core extents, steps per axis, step tiles [N, D], resident
    elements [N, V], bytes per element as held [N, V] and bytes per core [N]."""
    axes = spec.axis_names
    op_factors = candidates.op_factors              # [N, D]
    temporal = candidates.temporal_factors          # [N, V, D]
    extents = np.asarray(spec.extents, dtype=np.int64)

    per_core = _ceil_div(extents[None, :], op_factors)
    steps_per_axis = temporal.max(axis=1)
    step_tiles = _ceil_div(per_core, steps_per_axis)
    spans = steps_per_axis * step_tiles
    partition_spans = spans[:, None, :] // temporal  # exact: every f_t divides T_d

    resident = []
    for v, tensor in enumerate(spec.tensors):
        elements = np.full(len(candidates), tensor.whole_elements, dtype=np.int64)
        for dim in tensor.dims:
            terms = [partition_spans[:, v, axes.index(a)] for a in dim]
            elements = elements * (sum(terms) - (len(terms) - 1))
        resident.append(elements)
    resident = np.stack(resident, axis=1)           # [N, V]
    rotating = (temporal > 1).any(axis=2)           # [N, V]
    # [N, V]: each tensor its own size; an output left with partial sums in accumulators
    tensor_bytes = np.broadcast_to(np.asarray(spec.tensor_bytes, dtype=np.int64), resident.shape).copy()
    tensor_bytes[:, 0] = spec.output_bytes(op_factors, steps_per_axis)
    memory = (tensor_bytes * resident * (1 + rotating)).sum(axis=1)
    return per_core, steps_per_axis, step_tiles, resident, tensor_bytes, memory


def candidate_memory(spec: OpSpec, candidates: CandidateSet) -> np.ndarray:
    """Bytes per core of every candidate (no cost model needed)."""
    return _resident(spec, candidates)[-1]


def shift_exchange(spec: OpSpec, temporal: np.ndarray, tensor_bytes: np.ndarray, resident: np.ndarray,
                   device: Device, cost: CostModel) -> tuple[np.ndarray, np.ndarray]:
    """Shifted bytes and shift events [N] of every candidate's loop nest. Shift levels:
    one slot per (axis, tensor indexing it); the slot owned by tensor w is the level at
    pace u = f_t[w, d], stepping from the next coarser pace, shifting every tensor with
    f_t >= u. Ties: only the first tensor with a pace owns its level. The costlier shift
    step goes outside (T10 s4.4 loop order, see evaluate._order_loops)."""
    slot_steps, slot_bytes, slot_tensors = [], [], []
    for d, axis in enumerate(spec.axis_names):
        members = [v for v, t in enumerate(spec.tensors) if t.indexed_by(axis)]
        paces = temporal[:, members, d]                               # [N, M]
        for j in range(len(members)):
            u = paces[:, j]
            coarser = np.where(paces < u[:, None], paces, 1).max(axis=1)
            owner = np.ones_like(u, dtype=bool)
            for i in range(j):
                owner &= paces[:, i] != u
            moving = paces >= u[:, None]
            slot_steps.append(np.where(owner & (u > 1), u // coarser - 1, 0))
            slot_bytes.append((tensor_bytes[:, members] * resident[:, members] * moving).sum(axis=1))
            slot_tensors.append(moving.sum(axis=1))
    if not slot_steps:
        return np.zeros(len(temporal)), np.zeros(len(temporal))
    steps = np.stack(slot_steps, axis=1).astype(np.float64)
    nbytes = np.stack(slot_bytes, axis=1).astype(np.float64)
    count = np.stack(slot_tensors, axis=1).astype(np.float64)
    step_cost = cost.shift_cycles(device, nbytes) + cost.sync_cycles(device) * count
    order = np.argsort(-step_cost, axis=1, kind="stable")
    steps, nbytes, count = (np.take_along_axis(x, order, axis=1) for x in (steps, nbytes, count))
    executions = np.cumprod(np.concatenate([np.ones_like(steps[:, :1]), steps[:, :-1] + 1], axis=1), axis=1)
    return (executions * steps * nbytes).sum(axis=1), (executions * steps * count).sum(axis=1)


def score_candidates(
    spec: OpSpec, candidates: CandidateSet, device: Device, cost: CostModel
) -> CandidateScores:
    axes = spec.axis_names
    tensors = spec.tensors
    b = spec.dtype_bytes
    op_factors = candidates.op_factors              # [N, D]
    temporal = candidates.temporal_factors          # [N, V, D]
    per_core, steps_per_axis, step_tiles, resident, tensor_bytes, memory = _resident(spec, candidates)

    shifted_bytes, shift_events = shift_exchange(spec, temporal, tensor_bytes, resident, device, cost)

    is_indexed = np.array([[t.indexed_by(a) for a in axes] for t in tensors])  # [V, D]
    sharing = np.where(is_indexed[None, :, :], 1, op_factors[:, None, :]).prod(axis=2)  # [N, V]
    replicas = sharing // temporal.prod(axis=2)
    roles = {role: step_tiles[:, list(idx)].prod(axis=1) for role, idx in compute_roles(spec).items()}
    out_step = np.where(is_indexed[0][None, :], step_tiles, 1).prod(axis=1)
    work = OpWork(
        subtask=SubTask(spec.kind, b, step_tiles.prod(axis=1), roles),
        steps=steps_per_axis.prod(axis=1),
        shifted_bytes=shifted_bytes,
        shift_events=shift_events,
        partial_copies=replicas[:, 0],
        out_step_elems=out_step,
        out_resident_elems=resident[:, 0],
        cores=op_factors.prod(axis=1),
        geometry=PlanGeometry(tensor_dim_axes(spec), per_core, temporal, sharing,
                              tuple(t.whole_elements for t in tensors)),
        partial_bytes=spec.partial_bytes,
    )
    breakdown = cost.op_time(device, work)
    total = np.asarray(breakdown.total, dtype=np.float64)
    total = np.where(np.isfinite(total), total, np.inf)
    return CandidateScores(
        memory=memory,
        cycles=total,
        compute=np.broadcast_to(breakdown.compute, total.shape),
        shift=np.broadcast_to(breakdown.shift, total.shape),
        sync=np.broadcast_to(breakdown.sync, total.shape),
        reduction=np.broadcast_to(breakdown.reduction, total.shape),
    )
