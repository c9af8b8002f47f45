"""A compute-shift execution plan (T10 sections 4.1-4.2) and its score.

A plan is two decisions: the operator partition factor ``F_op`` (``op_factors``, one
integer per op axis, any integer: extents are padded up to a multiple) and per tensor
the temporal partition factors ``f_t`` (``temporal_factors``, one integer per *op axis*,
1 for axes that do not index the tensor). Everything else - spatial factors ``f_s``,
replicas, step tiles, memory, time - follows and is stored in a ``PlanScore``.

Geometry (used identically by ``evaluate`` and the vectorised search):
    L'_d  = ceil(L_d / F_op[d])             per-core extent before temporal padding
    T_d   = max over tensors of f_t[v][d]   steps along axis d (the finest rotation)
    tau_d = ceil(L'_d / T_d)                step tile (the rotating pace rp, T10 s4.2)
    padded extent of d = F_op[d] * T_d * tau_d
    a partition of v spans T_d * tau_d / f_t[v][d] along d; a compound dim (h+r)
    spans the sum of its terms' spans minus (terms - 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from irc.cost import CostBreakdown


@dataclass(frozen=True)
class ShiftLevel:
    """One loop of the compute-shift nest: ``steps`` shifts of ``tensors`` along ``axis``.

    An axis whose tensors rotate at different paces (f_t 4 and 2 on k) has one level per
    distinct pace (IPU_COST_FACTS s3): the coarse level shifts every tensor, the fine one
    only the tensors split finer. Levels are listed outermost first (T10 s4.4).
    """

    axis: str
    steps: int
    tensors: tuple[str, ...]
    bytes_per_step: int


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes per core: each tensor's resident partition, plus a same-size receive buffer
    for every rotating tensor (T10 s5 "multi-copy shift with buffer"; IPU_COST_FACTS s4).
    ``element_bytes`` is each tensor's bytes per element as held: its own size, or the
    accumulator's for an output that holds partial sums (``OpSpec.output_bytes``)."""

    partitions: Mapping[str, int]
    rotation_buffers: Mapping[str, int]
    element_bytes: Mapping[str, int] = field(default_factory=dict)

    def elements(self, name: str) -> int:
        """Elements of ``name``'s resident partition."""
        return self.partitions[name] // self.element_bytes[name]

    @property
    def total(self) -> int:
        return sum(self.partitions.values()) + sum(self.rotation_buffers.values())


@dataclass(frozen=True)
class PlanScore:
    """What a plan implies on one device under one cost model."""

    device: str
    cost_model: str
    cores: int
    spatial_factors: Mapping[str, tuple[int, ...]]    # f_s per tensor, per op axis (1 if not indexing)
    sharing_cores: Mapping[str, int]                  # cores sharing one sub-tensor (P)
    replicas: Mapping[str, int]                       # copies of each sub-tensor = rings = P / prod f_t
    padded_extents: tuple[int, ...]
    steps_per_axis: tuple[int, ...]                   # T_d
    step_tiles: tuple[int, ...]                       # tau_d
    steps: int
    loop_order: tuple[ShiftLevel, ...]
    memory: MemoryBreakdown
    cost: CostBreakdown                               # cycles
    seconds: float

    @property
    def memory_per_core(self) -> int:
        return self.memory.total

    @property
    def cycles(self) -> float:
        return float(self.cost.total)


@dataclass(frozen=True)
class Plan:
    """``F_op`` and ``f_t`` for one operator; ``score`` is filled in by the planner."""

    axes: tuple[str, ...]
    op_factors: tuple[int, ...]
    temporal_factors: Mapping[str, tuple[int, ...]]
    score: PlanScore | None = field(default=None, compare=False)

    def temporal_factor(self, tensor: str, axis: str) -> int:
        return self.temporal_factors[tensor][self.axes.index(axis)]

    def in_axis_order(self, axes: tuple[str, ...]) -> Plan:
        """The same decisions listed in ``axes``' order (a plan written by hand or read from
        JSON may list the operator's axes in another order); unscored. Unchanged when the
        axes are not a permutation of this plan's or factor lists do not match them."""
        if sorted(axes) != sorted(self.axes) or tuple(axes) == tuple(self.axes):
            return self
        order = [self.axes.index(a) for a in axes]

        def permute(factors):
            return tuple(factors[i] for i in order) if len(factors) == len(order) else tuple(factors)

        return Plan(tuple(axes), permute(self.op_factors),
                    {name: permute(f) for name, f in self.temporal_factors.items()})

    def named_for(self, tensors) -> Plan:
        """The plan stated on ``tensors``' names (``TensorSpec``s, output first): a plan of a
        canonical spec (tensors t0, t1, ... as identical layers share them) renamed position
        by position; unchanged when it already names them."""
        if all(t.name in self.temporal_factors for t in tensors):
            return self
        return Plan(self.axes, self.op_factors,
                    {t.name: self.temporal_factors[f"t{i}"] for i, t in enumerate(tensors)})

    def op_factor(self, axis: str) -> int:
        return self.op_factors[self.axes.index(axis)]

    @property
    def cores(self) -> int:
        cores = 1
        for factor in self.op_factors:
            cores *= factor
        return cores

    def _scored(self) -> PlanScore:
        if self.score is None:
            raise ValueError("plan has not been scored; use irc.planner.check_plan")
        return self.score

    @property
    def seconds(self) -> float:
        return self._scored().seconds

    @property
    def cycles(self) -> float:
        return self._scored().cycles

    @property
    def memory_per_core(self) -> int:
        return self._scored().memory_per_core

    def unscored(self) -> "Plan":
        return Plan(self.axes, self.op_factors, dict(self.temporal_factors))
