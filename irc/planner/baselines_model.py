"""Model-wide baselines in the same cost model as T10's plan (T10 s2.2, s6.2-6.4).

- ``vgm_plan``: the virtual global memory of PopART-style compilers (T10 s2.2, Figure 2a).
  Every tensor used by more than one op - weights and activations - lives in a VGM spread
  evenly over all cores. Each op runs load-compute-store: every core loads its whole
  input sub-tensors from the VGM over the exchange (no rotation: all f_t = 1), computes,
  and stores its output partition back. The op's sub-operator memory must fit in what the
  VGM leaves of a core's SRAM. Per op we take the fastest such plan (an ideal per-op
  partitioner), so this is the strongest VGM baseline the cost model admits. Load
  imbalance and bandwidth contention on VGM-serving cores (T10 s2.2) are not modelled: the
  baseline is optimistic.
- ``roller_plan``: Roller-style (T10 s6.2): the same VGM load-compute-store scheme, with
  one tile per op aligned to the core's systolic array (matmul/conv tiles whose m and k
  extents are multiples of its rows and n extents of its columns, unless the tile spans
  the whole axis); the fastest aligned plan that fits, any number of cores (Roller does
  not apply T10's parallelism constraint).
- ``t10_plan``: T10's own model-wide plan as the paper and its artifact make it: Algorithm 1
  (T10 s4.3.2) over frontiers searched under T10's 90% utilisation floor, each op at its
  fastest plan in its budget (no relayout-aware choice). What irc's plan is measured
  against: irc searches every core count and chooses plans with their neighbours' layouts
  in view.
- ``fastest_bound``: every op at its fastest plan with the whole SRAM to itself, no setup,
  relayout or VGM traffic: a lower bound for all of the above and for T10's plan.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from irc.cost import CostModel, DEFAULT_COST_MODEL
from irc.devices import Device
from irc.planner.enumerate import CandidateSet, candidate_set
from irc.plans.errors import PlanError
from irc.plans.evaluate import check_plan
from irc.plans.constraints import T10_MIN_UTILIZATION
from irc.planner.model import (
    ModelFitError, ModelSpec, _cache_for, least_plan_bytes, plan_model, resting_activation_bytes,
)
from irc.planner.op_table import FrontierCache, canonical_spec
from irc.plans.plan import Plan
from irc.planner.relayout import tensor_elements
from irc.plans.roles import compute_roles
from irc.plans.spec import OpSpec
from irc.planner.vector_score import score_candidates


@dataclass(frozen=True)
class BaselineOp:
    """One op under a baseline: its plan (None for the bound's table lookups), compute
    time, VGM load/store time, and bytes per core (sub-operator memory, VGM share)."""

    name: str
    plan: Plan | None
    compute_seconds: float
    transfer_seconds: float
    active_bytes: int
    vgm_bytes: int

    @property
    def seconds(self) -> float:
        return self.compute_seconds + self.transfer_seconds


@dataclass(frozen=True)
class BaselinePlan:
    """A baseline's per-op times and total."""

    name: str
    model: str
    ops: tuple[BaselineOp, ...]
    planning_seconds: float

    @property
    def seconds(self) -> float:
        return sum(op.seconds for op in self.ops)

    @property
    def transfer_seconds(self) -> float:
        return sum(op.transfer_seconds for op in self.ops)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "model": self.model,
            "seconds": self.seconds,
            "transfer_seconds": self.transfer_seconds,
            "planning_seconds": self.planning_seconds,
            "ops": [
                {"name": op.name, "seconds": op.seconds, "compute_seconds": op.compute_seconds,
                 "transfer_seconds": op.transfer_seconds, "active_bytes": op.active_bytes,
                 "vgm_bytes": op.vgm_bytes}
                for op in self.ops
            ],
        }


def fastest_bound(
    model: ModelSpec, device: Device | str, cost: CostModel | str = DEFAULT_COST_MODEL, *,
    cache: FrontierCache | None = None,
) -> BaselinePlan:
    """Every op at its fastest plan, memory of the other ops ignored (a lower bound)."""
    started = time.perf_counter()
    cache = _cache_for(cache, device, cost)
    ops = []
    for op in model.ops:
        try:
            table = cache.table(op.spec, op.weights)
        except PlanError as error:
            raise ModelFitError(f"op {op.name} has no plan: {error}",
                                least_plan_bytes(op.spec, cache.device, cache.cost, error), cache.device.sram_bytes) from None
        j = int(np.argmin(table.active_cycles))
        ops.append(BaselineOp(op.name, None, table.active_cycles[j] / cache.device.clock_hz, 0.0, int(table.hot[j]), 0))
    return BaselinePlan("fastest", model.name, tuple(ops), time.perf_counter() - started)


def t10_plan(
    model: ModelSpec, device: Device | str, cost: CostModel | str = DEFAULT_COST_MODEL, *,
    cache: FrontierCache | None = None,
) -> BaselinePlan:
    """T10's own plan (module docstring): per op its active plan, its active + setup time as
    compute, its relayouts as transfer, its idle bytes in the VGM column."""
    started = time.perf_counter()
    reference = _cache_for(cache, device, cost)
    floor = FrontierCache(reference.device, reference.cost, min_utilization=T10_MIN_UTILIZATION,
                          max_padding=reference.max_padding)
    planned = plan_model(model, floor.device, floor.cost, cache=floor, refine=False)
    ops = tuple(
        BaselineOp(p.name, p.active, p.active_seconds + p.setup_seconds, p.relayout_seconds, p.active_bytes,
                   p.idle_bytes)
        for p in planned.ops
    )
    return BaselinePlan("t10", model.name, ops, time.perf_counter() - started)


def systolic_aligned(spec: OpSpec, per_core: np.ndarray, systolic: tuple[int, int]) -> np.ndarray:
    """Which candidates' per-core tiles ([N, axes]) suit the systolic array: for matmul
    roles m, k (rows) and n (columns), conv in_channels (rows) and out_channels (columns),
    the role's tile is a multiple of the array side or spans the whole role extent."""
    rows, cols = systolic
    sides = {"matmul": {"m": rows, "k": rows, "n": cols},
             "conv": {"in_channels": rows, "out_channels": cols}}.get(spec.kind, {})
    ok = np.ones(len(per_core), dtype=bool)
    extents = np.asarray(spec.extents)
    for role, axes in compute_roles(spec).items():
        side = sides.get(role)
        if side is None or not axes:
            continue
        tile = per_core[:, list(axes)].prod(axis=1)
        whole = int(np.prod(extents[list(axes)]))
        ok &= (tile % side == 0) | (tile >= whole)
    return ok


class _NoRotationSpace:
    """All f_t = 1 plans of one op signature, scored once; best plan under a budget."""

    def __init__(self, spec: OpSpec, cache: FrontierCache, aligned: bool, min_utilization: float) -> None:
        self.spec = canonical_spec(spec)
        self.cache = cache
        self.aligned = aligned
        self.min_utilization = min_utilization
        self._relaxed: _NoRotationSpace | None = None
        candidates = candidate_set(self.spec, cache.device, min_utilization, cache.max_padding, rotation=False)
        if aligned and len(candidates):
            # only the aligned candidates are ever picked: score those alone (a candidate's
            # score is its own, so the picks, first of equals in enumeration order, are too)
            per_core = -(-np.asarray(self.spec.extents)[None, :] // candidates.op_factors)
            keep = systolic_aligned(self.spec, per_core, cache.device.systolic)
            candidates = CandidateSet(candidates.op_factors[keep], candidates.temporal_factors[keep],
                                      None if candidates.order is None else candidates.order[keep])
        self.candidates = candidates
        if len(candidates):
            scores = score_candidates(self.spec, candidates, cache.device, cache.cost)
            self.memory = scores.memory.astype(np.float64)
            self.cycles = scores.cycles
        else:
            self.memory = self.cycles = np.zeros(0)
        self._best: dict[int, Plan | None] = {}

    def relaxed(self) -> _NoRotationSpace:
        """The same space with any core count: the utilisation floor only prunes (as in
        ``irc.planner.search``), so an op no plan above the floor fits still gets one."""
        if self.min_utilization <= 0:
            return self
        if self._relaxed is None:
            self._relaxed = _NoRotationSpace(self.spec, self.cache, self.aligned, 0.0)
        return self._relaxed

    def least_memory(self) -> int | None:
        """The least memory per core of any plan of the relaxed space (None: no plan)."""
        space = self.relaxed()
        usable = np.isfinite(space.cycles)
        return int(space.memory[usable].min()) if usable.any() else None

    def best(self, budget: float) -> Plan | None:
        """The fastest plan within ``budget`` bytes per core, above the utilisation floor
        when one fits, else with any core count."""
        found = self._best_here(budget)
        if found is None and self.min_utilization > 0:
            return self.relaxed()._best_here(budget)
        return found

    def _best_here(self, budget: float) -> Plan | None:
        key = int(budget)
        if key not in self._best:
            usable = np.flatnonzero((self.memory <= budget) & np.isfinite(self.cycles))
            if len(usable) == 0:
                self._best[key] = None
            else:
                i = int(usable[np.argmin(self.cycles[usable])])
                plan = Plan(
                    self.spec.axis_names,
                    tuple(int(f) for f in self.candidates.op_factors[i]),
                    {t.name: tuple(int(f) for f in self.candidates.temporal_factors[i, v])
                     for v, t in enumerate(self.spec.tensors)},
                )
                score = check_plan(self.spec, plan, self.cache.device, self.cache.cost)
                self._best[key] = Plan(plan.axes, plan.op_factors, plan.temporal_factors, score)
        return self._best[key]


def _vgm_baseline(
    name: str, model: ModelSpec, device, cost, cache: FrontierCache | None, aligned: bool,
    min_utilization: float | None,
) -> BaselinePlan:
    started = time.perf_counter()
    cache = _cache_for(cache, device, cost)
    device, cost = cache.device, cache.cost
    cores = device.cores
    weights = -(-model.weight_bytes() // cores)
    resting = resting_activation_bytes(model, device)
    if min_utilization is None:
        min_utilization = cache.min_utilization
    spaces: dict[tuple, _NoRotationSpace] = {}
    ops = []
    for i, op in enumerate(model.ops):
        spec = op.spec
        key = (canonical_spec(spec), aligned)
        space = spaces.get(key)
        if space is None:
            space = spaces[key] = _NoRotationSpace(spec, cache, aligned, min_utilization)
        activations = [t.name for t in spec.tensors if t.name not in op.weights]
        operand_share = sum(-(-spec.bytes_of(t) * tensor_elements(spec, t) // cores) for t in activations)
        vgm = weights + resting[i] + operand_share
        budget = device.sram_bytes - vgm
        plan = space.best(budget)
        if plan is None:
            least = space.least_memory()
            if least is None:
                raise ModelFitError(
                    f"{name} baseline: op {i} ({op.name}) has no {'aligned ' if aligned else ''}plan without "
                    f"rotation on {device.name} at all",
                    needed=vgm, available=device.sram_bytes,
                )
            raise ModelFitError(
                f"{name} baseline: op {i} ({op.name}) has no {'aligned ' if aligned else ''}plan without rotation "
                f"within the {max(budget, 0)} bytes per core the VGM ({vgm} bytes) leaves of {device.sram_bytes} "
                f"(its least plan needs {least} bytes per core)",
                needed=vgm + least, available=device.sram_bytes,
            )
        partitions = plan.score.memory.partitions
        load = sum(partitions[t.name] for t in space.spec.inputs)
        # the output leaves rounded to its own type (not as its f32 partial sums)
        store = plan.score.memory.elements(space.spec.output.name) * space.spec.bytes_of(space.spec.output.name)
        transfer = 0.0
        for nbytes in (load, store):
            if nbytes:
                transfer += float(cost.shift_cycles(device, nbytes)) + float(cost.sync_cycles(device))
        ops.append(BaselineOp(op.name, plan, plan.cycles / device.clock_hz, transfer / device.clock_hz,
                              plan.memory_per_core, vgm))
    return BaselinePlan(name, model.name, tuple(ops), time.perf_counter() - started)


def vgm_plan(
    model: ModelSpec,
    device: Device | str,
    cost: CostModel | str = DEFAULT_COST_MODEL,
    *,
    cache: FrontierCache | None = None,
    min_utilization: float | None = None,
) -> BaselinePlan:
    """PopART-style virtual global memory, load-compute-store, fastest no-rotation plan per
    op; ``min_utilization`` defaults to the cache's (T10's parallelism constraint)."""
    return _vgm_baseline("vgm", model, device, cost, cache, False, min_utilization)


def roller_plan(
    model: ModelSpec,
    device: Device | str,
    cost: CostModel | str = DEFAULT_COST_MODEL,
    *,
    cache: FrontierCache | None = None,
    min_utilization: float = 0.0,
) -> BaselinePlan:
    """Roller-style: VGM load-compute-store with one systolic-aligned tile per op.

    Roller sizes tiles for the memory hierarchy, not for T10's parallelism constraint, so by
    default any core count is allowed (aligned tiles rarely multiply to >= 90% of 1,472)."""
    return _vgm_baseline("roller", model, device, cost, cache, True, min_utilization)


__all__ = ["BaselineOp", "BaselinePlan", "fastest_bound", "roller_plan", "systolic_aligned", "vgm_plan"]
