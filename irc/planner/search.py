"""Plan search for one operator: Pareto frontier and fastest plan (T10 s4.3.1).

Enumerate every admissible (F_op, f_t) (``irc.planner.enumerate``), score them all with
numpy (``irc.planner.vector_score``), keep those that fit in SRAM, and return the
(memory per core, time) Pareto frontier and the fastest plan. The search is exact for its
cost model: every plan of the constrained space is scored.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from irc.cost import CostModel, get_cost_model
from irc.devices import Device, load_device
from irc.planner.constraints import DEFAULT_MAX_PADDING, DEFAULT_MIN_UTILIZATION
from irc.planner.enumerate import CandidateSet, candidate_set
from irc.planner.errors import PlanError
from irc.planner.evaluate import check_plan
from irc.planner.pareto import pareto_indices
from irc.planner.plan import Plan
from irc.planner.spec import OpSpec
from irc.planner.vector_score import score_candidates


@dataclass(frozen=True)
class SearchResult:
    """``best``: fastest plan that fits; ``pareto``: frontier by memory ascending (its last
    entry is ``best``); ``plans_scored``: candidates costed; ``seconds``: search wall time;
    ``relaxed_utilization``: no plan met ``min_utilization`` (or none of those fitted in
    SRAM), so the result comes from a retry with any core count (``min_utilization=0``)."""

    best: Plan
    pareto: tuple[Plan, ...]
    plans_scored: int
    seconds: float
    relaxed_utilization: bool = False


def _plan_at(spec: OpSpec, candidates: CandidateSet, i: int) -> Plan:
    return Plan(
        axes=spec.axis_names,
        op_factors=tuple(int(f) for f in candidates.op_factors[i]),
        temporal_factors={
            t.name: tuple(int(f) for f in candidates.temporal_factors[i, v])
            for v, t in enumerate(spec.tensors)
        },
    )


def search(
    spec: OpSpec,
    device: Device | str,
    cost: CostModel | str = "t10",
    *,
    min_utilization: float = DEFAULT_MIN_UTILIZATION,
    max_padding: float = DEFAULT_MAX_PADDING,
    rotation: bool = True,
    max_partitioned_axes: int | None = None,
) -> SearchResult:
    """Search the plan space of ``spec`` on ``device`` under ``cost``.

    ``min_utilization``: fewest cores used, as a fraction of min(device cores, iteration
    points) (T10's parallelism constraint). ``max_padding``: largest padded / original
    iteration volume (T10's padding constraint). ``rotation=False`` forces every f_t to
    1 (each core holds whole sub-tensors: no compute-shift). ``max_partitioned_axes``
    bounds the number of axes with F_op > 1 (1 gives 1-D partitions).

    The utilisation floor only prunes the search (IPU_COST_FACTS s4), it is no correctness
    constraint: when no plan meets it (small operators on a small device, whose admissible
    core counts skip the floor) or none of those fits in SRAM, the search is repeated with
    ``min_utilization=0`` and the result says so (``relaxed_utilization``).

    Raises ``PlanError`` when no admissible plan exists or none fits in SRAM, even with
    any core count.
    """
    started = time.perf_counter()
    device = load_device(device)
    cost = get_cost_model(cost)
    try:
        return _search(spec, device, cost, started, min_utilization, max_padding, rotation,
                       max_partitioned_axes)
    except PlanError:
        if min_utilization <= 0:
            raise
        relaxed = _search(spec, device, cost, started, 0.0, max_padding, rotation, max_partitioned_axes)
        return SearchResult(relaxed.best, relaxed.pareto, relaxed.plans_scored,
                            time.perf_counter() - started, relaxed_utilization=True)


def _snapped(cycles: np.ndarray) -> np.ndarray:
    """Cycle counts rounded to 12 significant digits: the same cost summed in another
    order differs in the last bits (77.00909090909092 vs 77.0090909090909), and such
    twins must tie on the Pareto frontier (the one with less memory dominates)."""
    magnitude = np.floor(np.log10(np.maximum(np.abs(cycles), 1e-300)))
    scale = 10.0 ** (magnitude - 11)
    return np.where(np.isfinite(cycles), np.round(cycles / scale) * scale, cycles)


def _search(
    spec: OpSpec,
    device: Device,
    cost: CostModel,
    started: float,
    min_utilization: float,
    max_padding: float,
    rotation: bool,
    max_partitioned_axes: int | None,
) -> SearchResult:
    """One exhaustive search under fixed constraints (raises ``PlanError``)."""
    candidates = candidate_set(spec, device, min_utilization, max_padding, rotation, max_partitioned_axes)
    if len(candidates) == 0:
        raise PlanError(
            f"no plan satisfies the constraints on {device.name} "
            f"(min_utilization={min_utilization:g}, max_padding={max_padding:g}, "
            f"rotation={rotation}, max_partitioned_axes={max_partitioned_axes})"
        )
    scores = score_candidates(spec, candidates, device, cost)
    fits = (scores.memory <= device.sram_bytes) & np.isfinite(scores.cycles)
    if not fits.any():
        least = int(scores.memory.min())
        raise PlanError(
            f"no plan fits: the least memory per core any plan needs is {least} bytes, "
            f"but {device.name} has {device.sram_bytes} bytes of SRAM per core"
        )
    fitting = np.flatnonzero(fits)
    frontier = fitting[pareto_indices(scores.memory[fitting], _snapped(scores.cycles[fitting]))]
    pareto = []
    for i in frontier:
        plan = _plan_at(spec, candidates, int(i))
        score = check_plan(spec, plan, device, cost, min_utilization=min_utilization, max_padding=max_padding)
        pareto.append(Plan(plan.axes, plan.op_factors, plan.temporal_factors, score))
    return SearchResult(
        best=pareto[-1],
        pareto=tuple(pareto),
        plans_scored=len(candidates),
        seconds=time.perf_counter() - started,
    )


@dataclass(frozen=True)
class Baselines:
    """Reference points for one operator (benchmarks/t10_matmul.py)."""

    no_rotation: Plan | None        # best plan with every f_t = 1 (VGM-like replication)
    one_dimensional: Plan | None    # best plan with one partitioned axis (rotation allowed)
    roofline_seconds: float         # iteration points / whole-chip peak MAC rate


def roofline_seconds(spec: OpSpec, device: Device | str) -> float:
    """Compute roofline: every iteration point is one MAC at the chip's peak rate."""
    device = load_device(device)
    return math.prod(spec.extents) / device.peak_macs_per_s


def baselines(
    spec: OpSpec, device: Device | str, cost: CostModel | str = "t10", *, max_padding: float = DEFAULT_MAX_PADDING
) -> Baselines:
    """Best no-rotation plan, best 1-D plan (any core count), and the compute roofline."""
    device = load_device(device)

    def best_or_none(**options) -> Plan | None:
        try:
            return search(spec, device, cost, min_utilization=0.0, max_padding=max_padding, **options).best
        except PlanError:
            return None

    return Baselines(
        no_rotation=best_or_none(rotation=False),
        one_dimensional=best_or_none(max_partitioned_axes=1),
        roofline_seconds=roofline_seconds(spec, device),
    )
