"""Tile sizes searched per order and per partition (IGO §4.3: the fused orders keep a
gradient's partial sums on chip, "to the extent possible"; §6.1: the baseline models
"the tiling strategies proposed in the earlier studies"). Pure functions; no IR.

Every order gets its own tiles: the tiling whose schedule, simulated on the scratchpad
(`irc.cost.igo_sim.simulate`), is best by `objective`: no spill of a partial sum if any
candidate runs without one, then fewest cycles, fewest DRAM bytes, and the smallest
(tm, tk, tn). Candidates (`candidate_sizes`): along a dimension of at most
`SMALL_EXTENT` every size; along a longer one the array's size times powers of two, the
array-aligned sizes of an even split into 2 to 8 tiles, and the whole extent (tiles
narrower than the array idle PEs in every fold; aligned ones add no partial folds).
Tilings whose one step does not fit the resident half of the SPM are dropped.

The search is exact over the candidates: they are simulated biggest tiles first (fewest
steps), and a simulation stops as soon as its time so far plus the compute still to
come exceeds the best found (a spilling candidate once a spill-free one is known, at its
first spill); tests/cost/test_igo_tiling.py checks it against evaluating every tiling of
small layers."""

from __future__ import annotations

import math
from functools import lru_cache

from irc.cost.igo_sim import (
    Cost,
    Layer,
    ScratchpadError,
    Tiling,
    operator_starts,
    schedule,
    simulate,
)

SMALL_EXTENT = 8
"""Along a dimension this short, every tile size is a candidate."""
SPLITS = range(2, 9)


def candidate_sizes(extent: int, array: int) -> list[int]:
    """The tile sizes searched along a dimension of `extent` on an array of `array` PEs
    along it (see the module docstring)."""
    if extent <= SMALL_EXTENT:
        return list(range(1, extent + 1))
    sizes = {extent}
    size = array
    while size < extent:
        sizes.add(size)
        size *= 2
    for parts in SPLITS:
        aligned = math.ceil(math.ceil(extent / parts) / array) * array
        if aligned < extent:
            sizes.add(aligned)
    return sorted(sizes)


def objective(cost: Cost) -> tuple:
    """What the search minimises: a spill, cycles, DRAM bytes, then the tile sizes."""
    tiling = cost.tiling
    return (cost.spill_bytes > 0, cost.cycles, cost.dram_bytes, (tiling.tm, tiling.tk, tiling.tn))


def step_bytes(layer: Layer, tiling: Tiling) -> int:
    """Bytes of one step's three tiles (every kind of step: two inputs and an output)."""
    tm, tk, tn = tiling.tm, tiling.tk, tiling.tn
    return (tm * tn + tk * tn + tm * tk) * layer.element_bytes


def candidates(layer: Layer, device) -> list[Tiling]:
    """The candidate tilings that fit, fewest steps first."""
    capacity = device.spm_bytes // 2
    found = [Tiling(tm, tk, tn)
             for tm in candidate_sizes(layer.M, device.pe_rows)
             for tk in candidate_sizes(layer.K, max(device.pe_rows, device.pe_cols))
             for tn in candidate_sizes(layer.N, device.pe_cols)
             if step_bytes(layer, Tiling(tm, tk, tn)) <= capacity]
    steps = lambda t: math.ceil(layer.M / t.tm) * math.ceil(layer.K / t.tk) * math.ceil(layer.N / t.tn)  # noqa: E731
    return sorted(found, key=lambda t: (steps(t), t.tm, t.tk, t.tn))


def run(layer: Layer, tiling: Tiling, device, order: str, scheme, parts: int, policy: str, baseline: str,
        dy_once: bool = False, best: Cost | None = None) -> Cost | None:
    """One tiling's cost (None: it cannot beat `best`, or one step does not fit)."""
    rounds = schedule(layer, tiling, order, scheme, parts, device.cores, baseline, device.dataflow)
    flush = operator_starts(rounds, order, baseline)
    bound, spill_free_best = math.inf, False
    if best is not None:
        bound, spill_free_best = best.cycles, best.spill_bytes == 0
    try:
        return simulate(rounds, layer, tiling, device, policy, flush, baseline == "paper", bound=bound,
                        spill_free_best=spill_free_best, dy_once=dy_once)
    except ScratchpadError:
        return None


@lru_cache(maxsize=8192)
def search(layer: Layer, device, order: str, scheme, parts: int, policy: str = "lru",
           baseline: str = "separate", dy_once: bool = False) -> Cost:
    """The best tiling's cost for `order` and the partition (`Cost.tiling` says which);
    `ScratchpadError` when no candidate fits (naming the smallest step's bytes). Cached:
    the passes and the benchmark ask again for the same layers."""
    best: Cost | None = None
    for tiling in candidates(layer, device):
        cost = run(layer, tiling, device, order, scheme, parts, policy, baseline, dy_once, best)
        if cost is not None and (best is None or objective(cost) < objective(best)):
            best = cost
    if best is None:
        smallest = Tiling(1, 1, 1)
        raise ScratchpadError(step_bytes(layer, smallest) * device.cores, device.spm_bytes // 2)
    return best


def exhaustive(layer: Layer, device, order: str, scheme, parts: int, policy: str = "lru",
               baseline: str = "separate") -> Cost | None:
    """The best of every tiling, each simulated to the end (what `search` must equal on
    layers whose every dimension is at most `SMALL_EXTENT`)."""
    best = None
    for tm in range(1, layer.M + 1):
        for tk in range(1, layer.K + 1):
            for tn in range(1, layer.N + 1):
                cost = run(layer, Tiling(tm, tk, tn), device, order, scheme, parts, policy, baseline)
                if cost is not None and (best is None or objective(cost) < objective(best)):
                    best = cost
    return best
