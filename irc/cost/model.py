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

# Compute roles the planner fills in per operator kind (see irc.planner.roles):
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


def as_float_array(value: ArrayLike) -> np.ndarray:
    return np.asarray(value, dtype=np.float64)
