"""The cost-model protocol: how long one operator plan takes on one device.

T10 section 4.3.1 costs every candidate plan from quantities that are static per plan:
the per-core sub-task of one compute step, the bytes shifted per step, and the number of
steps. A ``CostModel`` turns those into cycles. Implementations are pure functions of a
``Device`` and the work description, and every function is numpy-broadcastable: the
planner passes arrays holding thousands of candidate plans at once (or plain scalars
when checking a single plan).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, runtime_checkable

import numpy as np

from irc.devices import Device
from irc.dialects.te_expr import OPERATOR_ROLES

ArrayLike = Any  # a float/int or a numpy array of them, broadcast together

# Compute roles the planner fills in per operator kind (see irc.plans.roles):
#   matmul: batch, m, k, n            conv: batch, in_channels, out_channels, spatial, window
#   pool:   channels, spatial, window reduce: out (output-axis tile volume)
#   gather: index (index-tensor tile volume), leading (all tiles but the last axis)
#   elementwise / unary / other: only ``volume``.
KINDS = tuple(OPERATOR_ROLES)  # ("matmul", "conv", "elementwise", "unary", "reduce", "pool", "gather", "other")


class CostModelError(ValueError):
    """An unknown cost model, or an operator kind a cost model cannot price."""


@dataclass(frozen=True)
class SubTask:
    """The computation one core performs in one compute-shift step (T10 section 4.2)."""

    kind: str
    dtype_bytes: int
    volume: ArrayLike                                   # prod of the step tiles (Q)
    roles: Mapping[str, ArrayLike] = field(default_factory=dict)


@dataclass(frozen=True)
class PlanGeometry:
    """The plan's own factors, for a cost model that prices each tensor and each rotation
    loop itself (``engdesign``) instead of from ``OpWork``'s totals.

    Arrays broadcast over candidate plans like ``OpWork``'s fields (leading ``...``);
    tensors are in ``OpSpec`` order (output first), axes in the op's axis order.
    """

    tensor_dims: tuple[tuple[tuple[int, ...], ...], ...]  # per tensor, per dimension: the op axes indexing it
    per_core: ArrayLike              # [..., D] ceil(L_d / F_op[d]), before temporal padding
    temporal: ArrayLike              # [..., V, D] f_t (1 on axes not indexing the tensor)
    sharing: ArrayLike               # [..., V] cores sharing one sub-tensor (P)
    whole: tuple[int, ...] = ()      # per tensor, elements of its dims held whole (a gather's
                                     # table rows; 1 for every tensor when empty)


@dataclass(frozen=True)
class OpWork:
    """Everything a plan implies for the cost of one operator on every core."""

    subtask: SubTask
    steps: ArrayLike                 # compute steps N = prod of per-axis step counts
    shifted_bytes: ArrayLike         # total bytes one core shifts over all steps
    shift_events: ArrayLike          # (tensor, step) shift events, each paying barriers
    partial_copies: ArrayLike        # partial-sum copies of the output left after the loop
    out_step_elems: ArrayLike        # output elements touched by one step's sub-task
    out_resident_elems: ArrayLike    # output elements resident on one core
    cores: ArrayLike                 # cores used by the plan
    geometry: PlanGeometry | None = None  # the planner fills it in; other callers may not
    partial_bytes: ArrayLike | None = None
    """Bytes per element of the output's partial sums (the reduction moves and adds them):
    4 for a ``+=`` output narrower than that (f32/i32 accumulators), else the output's
    own size; None means ``subtask.dtype_bytes``."""

    @property
    def partial_element_bytes(self) -> ArrayLike:
        return self.subtask.dtype_bytes if self.partial_bytes is None else self.partial_bytes


@dataclass(frozen=True)
class CostBreakdown:
    """Cycles per category; ``total`` is their sum (no compute/shift overlap, T10 s4.3.1)."""

    compute: ArrayLike
    shift: ArrayLike
    sync: ArrayLike
    reduction: ArrayLike             # output shuffle and partial-sum reduction

    @property
    def total(self) -> ArrayLike:
        return self.compute + self.shift + self.sync + self.reduction

    def seconds(self, device: Device) -> ArrayLike:
        return self.total / device.clock_hz

    def as_dict(self) -> dict[str, float]:
        return {
            "compute": float(self.compute),
            "shift": float(self.shift),
            "sync": float(self.sync),
            "reduction": float(self.reduction),
            "total": float(self.total),
        }


@runtime_checkable
class CostModel(Protocol):
    """A swappable cost model. All results are in device cycles.

    A model may set ``times_instructions = False`` when it prices whole operators only
    (no split into compute steps, shifts, barriers and reductions): it then plans, but
    lowering to a chip program and the chip interpreter refuse it by name."""

    name: str

    def compute_cycles(self, device: Device, task: SubTask) -> ArrayLike:
        """Time of one step's sub-task on one core."""
        ...

    def shift_cycles(self, device: Device, nbytes: ArrayLike) -> ArrayLike:
        """Time to shift ``nbytes`` from each core to its ring neighbour."""
        ...

    def sync_cycles(self, device: Device) -> float:
        """Barrier cost paid by each shift event (one tensor shifted once)."""
        ...

    def op_time(self, device: Device, work: OpWork) -> CostBreakdown:
        """Breakdown of a whole operator's time under one plan."""
        ...


@runtime_checkable
class BoundedCostModel(CostModel, Protocol):
    """A cost model that also bounds a plan's time before the plan is known, so the
    planner can discard whole groups of plans unscored (``irc.planner.bounds``).

    The planner describes a group of plans by its *least work*, an ``OpWork`` whose
    ``subtask``, ``steps`` and ``cores`` every plan of the group shares and whose
    ``shifted_bytes``, ``shift_events``, ``partial_copies``, ``out_step_elems`` and
    ``out_resident_elems`` none goes below (``geometry`` is None).

    ``time_lower_bound(device, least)`` must not exceed ``op_time(device, w).total`` for
    any such ``w``: equal ``subtask``, ``steps``, ``cores``, every other field at least
    ``least``'s, any geometry.

    ``refined_time_lower_bound(device, least)`` (optional) must not exceed
    ``time_lower_bound(device, w)`` for any *refinement* ``w`` of ``least``: the planner
    refines by splitting step tiles further, an axis' tile ``t`` becoming any ``t'`` with
    ``k * t' >= t`` and the steps ``k * steps`` (``k >= 1``; the roles, the volume and
    ``out_step_elems`` are products of axis tiles), every other field at least
    ``least``'s. It lets the planner bound a spatial plan before choosing its steps: "more
    steps never compute faster" (T10 s4.3.1), as the model itself states it.

    The planner uses these bounds only when the class defining them is the one defining
    ``op_time`` or derives from it (a subclass that changes ``op_time`` and not the bound
    gets no bound). Without them the search is still exact, bounded by memory alone.
    """

    def time_lower_bound(self, device: Device, least: OpWork) -> ArrayLike:
        ...

    def refined_time_lower_bound(self, device: Device, least: OpWork) -> ArrayLike:
        ...


def as_float_array(value: ArrayLike) -> np.ndarray:
    return np.asarray(value, dtype=np.float64)
