"""Idle plans and the setup cost of turning an idle plan into an active one (T10 s4.3.2).

Between its uses an operator's weights rest on chip in an *idle* plan: the same spatial
partition (``F_op``) as the active plan they will feed, but with every weight's temporal
factor ``f_t`` a multiple of the active one, so each core keeps only a slice of the
partition it needs when executing (no rotation buffers: nothing moves while idle). When
the operator starts, a *setup* phase gathers the missing slices over the exchange
(T10 Figure 9; IPU_COST_FACTS s5 "Idle -> execute"):

    w_v  = prod_d f_t_idle[v][d] / f_t_active[v][d]          (slices to gather, weight v)
    w'_v = w_v if w_v > 1 else 0
    setup = shift(sum_v w'_v * cold_bytes_v) + barrier * syncs_per_shift * #{v : w'_v > 0}

``shift`` is the cost model's shift time and ``barrier`` one barrier of the device
(118 cycles on the IPU Mk2; the ``t10`` model's ``sync_cycles`` is two of them). The
bytes are the artifact's calibrated term: it charges w slices, not w - 1, i.e. the local
slice is copied into the active buffer too. The artifact also charges a barrier per
slice (``118 * sum_v w'_v``), as if the slices arrived in w rotation steps; on a BSP
exchange every core receives all its slices in one phase, so a weight's setup pays one
shift event's barriers however finely it rests (what the device program runs: one
``device.relayout`` per weight). Resting a weight thinly is then no longer charged a
barrier per slice, where VGM's load of the same bytes paid one phase. On a 2D mesh each weight's slices travel the
routes between its group's cores (``setup_flows``), priced at the busiest link plus the
longest route's hops (``irc.devices.topology.exchange_bytes``), as the chip runs them.

An idle plan is compatible with an active plan when both share ``F_op``, the idle f_t of
every weight is an elementwise multiple of the active f_t, and the idle bytes do not
exceed the active bytes (IPU_COST_FACTS s5).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from irc.cost import CostModel, DEFAULT_COST_MODEL, get_cost_model
from irc.devices import Device, load_device
from irc.devices.topology import exchange_bytes, on_mesh
from irc.plans.plan import Plan
from irc.plans.spec import OpSpec


@dataclass(frozen=True)
class IdlePlan:
    """How an operator's weights rest on chip between uses: ``F_op`` and per weight the
    idle temporal factors (one per op axis) and the bytes each core keeps of it."""

    op_factors: tuple[int, ...]
    weight_factors: Mapping[str, tuple[int, ...]]
    weight_bytes: Mapping[str, int]

    @property
    def cold_bytes(self) -> int:
        """Bytes per core the resting weights take (IPU_COST_FACTS s4 "cold" bytes)."""
        return sum(self.weight_bytes.values())

    def key(self) -> tuple:
        return (self.op_factors, tuple(sorted(self.weight_factors.items())))

    def to_dict(self) -> dict:
        return {
            "op_factors": list(self.op_factors),
            "weight_factors": {name: list(f) for name, f in self.weight_factors.items()},
            "weight_bytes": dict(self.weight_bytes),
            "cold_bytes": self.cold_bytes,
        }


def _partition_spans(plan: Plan) -> tuple[int, ...]:
    """Per-core padded extent of each op axis under ``plan`` (steps * step tile)."""
    score = plan._scored()
    return tuple(t * tau for t, tau in zip(score.steps_per_axis, score.step_tiles))


def partition_elements(spec: OpSpec, tensor: str, factors: Sequence[int], spans: Sequence[int]) -> int:
    """Elements of one partition of ``tensor`` when each op axis' per-core span is cut into
    ``factors`` slices (compound dims overlap by terms - 1, as in ``check_plan``)."""
    axes = spec.axis_names
    elements = spec.tensor(tensor).whole_elements
    for dim in spec.tensor(tensor).dims:
        terms = [-(-spans[axes.index(a)] // factors[axes.index(a)]) for a in dim]
        elements *= sum(terms) - (len(terms) - 1)
    return elements


def active_idle_plan(spec: OpSpec, weights: Sequence[str], plan: Plan) -> IdlePlan:
    """The idle plan that keeps each weight exactly as ``plan`` holds it (setup is free)."""
    spans = _partition_spans(plan)
    factors = {w: tuple(plan.temporal_factors[w]) for w in weights}
    return IdlePlan(
        op_factors=tuple(plan.op_factors),
        weight_factors=factors,
        weight_bytes={w: spec.bytes_of(w) * partition_elements(spec, w, f, spans) for w, f in factors.items()},
    )


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def idle_plans(spec: OpSpec, weights: Sequence[str], plan: Plan) -> list[IdlePlan]:
    """Every idle plan refining ``plan``'s weight partitions.

    Per weight v: f_t_idle[v][d] = f_t[v][d] * m_d for axes d indexing v, with
    prod(f_t_idle[v]) dividing the cores sharing v's sub-tensor (so the slices tile its
    rings, T10 s4.2) and at most the per-core span along d (no empty slice). Weights are
    refined independently; the result is their cross product (m = 1 everywhere included).
    """
    if not weights:
        return [IdlePlan(tuple(plan.op_factors), {}, {})]
    score = plan._scored()
    spans = _partition_spans(plan)
    axes = spec.axis_names
    per_weight: list[list[tuple[tuple[int, ...], int]]] = []
    for w in weights:
        tensor = spec.tensor(w)
        hot = tuple(plan.temporal_factors[w])
        room = score.sharing_cores[w] // math.prod(hot)   # rings of v: the slack left to split
        options = []
        choices = [
            [m for m in _divisors(room) if hot[d] * m <= spans[d]] if tensor.indexed_by(a) else [1]
            for d, a in enumerate(axes)
        ]
        for multipliers in itertools.product(*choices):
            if room % math.prod(multipliers):
                continue
            factors = tuple(h * m for h, m in zip(hot, multipliers))
            options.append((factors, spec.bytes_of(w) * partition_elements(spec, w, factors, spans)))
        per_weight.append(options)
    result = []
    for combo in itertools.product(*per_weight):
        result.append(
            IdlePlan(
                op_factors=tuple(plan.op_factors),
                weight_factors={w: f for w, (f, _) in zip(weights, combo)},
                weight_bytes={w: nbytes for w, (_, nbytes) in zip(weights, combo)},
            )
        )
    return result


def read_bytes(spec: OpSpec, idle: IdlePlan, weight: str) -> int:
    """Bytes a preload of ``weight`` into ``idle``'s layout reads from off-chip memory as
    the chip times it (`irc.interpreter.chip`'s ``preload``): each distinct slice once,
    at its whole per-core size (a partition padded past the tensor's end counts its
    padding): the sub-tensors ``F_op`` cuts times the slices the idle factors cut each into."""
    tensor = spec.tensor(weight)
    slices = math.prod(cut * factor for a, cut, factor in zip(spec.axis_names, idle.op_factors,
                                                              idle.weight_factors[weight]) if tensor.indexed_by(a))
    return slices * idle.weight_bytes[weight]


def held_in_place(idle: IdlePlan, active: Plan, weight: str) -> bool:
    """Whether ``weight`` rests exactly as ``active`` executes it and stays put while it
    runs: every idle temporal factor 1 (so the active ones are 1 too: it does not rotate).
    Its preloaded (idle) buffer is then its execute buffer, held once
    (`irc.lowering.shift_to_device`), not copied into a second one."""
    return all(f == 1 for f in idle.weight_factors[weight]) and all(f == 1 for f in active.temporal_factors[weight])


def in_place_bytes(idle: IdlePlan, active: Plan) -> int:
    """Bytes per core of the weights ``held_in_place``: counted once, in the idle plan's
    bytes, not again in the active plan's."""
    return sum(nbytes for w, nbytes in idle.weight_bytes.items() if held_in_place(idle, active, w))


def barrier_cycles(cost: CostModel, device: Device) -> float:
    """One barrier under ``cost``: its per-shift-event sync cost over the barriers per event."""
    return float(cost.sync_cycles(device)) / max(1, device.syncs_per_shift)


def gathered_slices(idle: IdlePlan, active: Plan) -> dict[str, int] | None:
    """w_v per weight, or None when ``idle`` cannot be set up into ``active``."""
    if tuple(idle.op_factors) != tuple(active.op_factors):
        return None
    slices = {}
    for w, cold in idle.weight_factors.items():
        hot = active.temporal_factors[w]
        if any(c % h for c, h in zip(cold, hot)):
            return None
        slices[w] = math.prod(cold) // math.prod(hot)
    if active.score is not None and idle.cold_bytes > active.memory_per_core:
        return None
    return slices


def setup_cycles(
    idle: IdlePlan, active: Plan, device: Device | str, cost: CostModel | str = DEFAULT_COST_MODEL
) -> float | None:
    """Cycles to turn ``idle`` into ``active`` (module docstring formula); None when the
    two plans are incompatible (different F_op, or idle f_t not a multiple of active f_t)."""
    device = load_device(device)
    cost = get_cost_model(cost)
    slices = gathered_slices(idle, active)
    if slices is None:
        return None
    gathered = {w: (s if s > 1 else 0) for w, s in slices.items()}
    nbytes = sum(gathered[w] * idle.weight_bytes[w] for w in gathered)
    events = sum(gathered.values())
    if events == 0:
        return 0.0
    if on_mesh(device) and active.score is not None:
        total = 0.0
        for w, count in gathered.items():   # one relayout per weight, on its routes
            if count:
                sources, receivers = setup_flows(active, w, count)
                total += float(cost.shift_cycles(device, exchange_bytes(device, sources, idle.weight_bytes[w],
                                                                        receivers)))
        return total + barrier_cycles(cost, device) * setup_barriers(device, gathered)
    return float(cost.shift_cycles(device, nbytes)) + barrier_cycles(cost, device) * setup_barriers(device, gathered)


def setup_barriers(device: Device, gathered: Mapping[str, int]) -> int:
    """Barriers of a setup: each weight gathered in slices arrives in one exchange phase (a
    BSP superstep: every core receives all its slices at once), paying one shift event's
    barriers, where the T10 artifact charges one barrier per slice."""
    return sum(device.syncs_per_shift for count in gathered.values() if count)


def setup_flows(active: Plan, weight: str, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Who sends a weight's slices to whom in its setup, as the lowering states it
    (``irc.lowering.relayout_pieces.setup_pieces``): cores numbered row-major over
    ``F_op``; the cores sharing the weight's partition numbered row-major over its free
    axes (``phi``); slice ``j`` of a core's partition comes from the member of its group
    of ``ring * count`` (all of them when the partition has ``count`` copies) at
    ``base + phi mod ring + j * ring``. Returns (senders, receivers), one per core and
    slice, for a mesh's routes (``irc.devices.topology.exchange_bytes``)."""
    score = active._scored()
    grid = [int(f) for f in active.op_factors]
    cores = math.prod(grid)
    free = [d for d, g in enumerate(grid) if g > 1 and score.spatial_factors[weight][d] == 1]
    ring = math.prod(active.temporal_factors[weight])
    group = ring * count
    one_group = score.replicas[weight] == count
    ids = np.arange(cores, dtype=np.int64)
    coords = np.array(np.unravel_index(ids, grid)) if cores > 1 else np.zeros((len(grid), 1), np.int64)
    phi = np.zeros(cores, dtype=np.int64)
    for d in free:
        phi = phi * grid[d] + coords[d]
    base = 0 if one_group else (phi // group) * group
    senders = []
    for j in range(count):
        target = base + (phi % ring if ring > 1 else 0) + j * ring
        other = coords.copy()
        for d in reversed(free):
            other[d] = target % grid[d]
            target = target // grid[d]
        senders.append(np.ravel_multi_index(tuple(other), grid) if cores > 1 else np.zeros(1, np.int64))
    return np.stack(senders, axis=1).reshape(-1), np.repeat(ids, count)
