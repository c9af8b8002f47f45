"""IGO's tile scheduler (IGO §4.3, §5, §6.1): the search over a layer's schedules on an
NPU, its tilings, tile orders and partitions. Each candidate schedule is priced by the
cost model (`irc.cost.igo`: a given layer, tiling, order and partition on a device); this
module chooses. Pure functions; no IR.

Tile sizes are searched per order and per partition (§4.3: the fused orders keep a
gradient's partial sums on chip, "to the extent possible"; §6.1: the baseline models
"the tiling strategies proposed in the earlier studies"). Every order gets its own tiles:
the tiling whose schedule, simulated on the scratchpad (`irc.cost.igo_sim.simulate`), is
best by `objective`: no spill of a partial sum if any candidate runs without one, then
fewest cycles, fewest DRAM bytes, and the smallest (tm, tk, tn). Candidates
(`candidate_sizes`): along a dimension of at most `SMALL_EXTENT` every size; along a
longer one the array's size times powers of two, the array-aligned sizes of an even
split into 2 to 8 tiles, and the whole extent (tiles narrower than the array idle PEs in
every fold; aligned ones add no partial folds). Tilings whose one step does not fit the
resident half of the SPM are dropped.

The search is exact over the candidates: they are simulated biggest tiles first (fewest
steps), and a simulation stops as soon as its time so far plus the compute still to
come exceeds the best found (a spilling candidate once a spill-free one is known, at its
first spill); tests/planner/test_igo_tiling.py checks it against evaluating every tiling
of small layers. On SCALE-Sim's memory model (`scalesim_search`) the candidates are
SCALE-Sim's own tiling (the whole GEMM per part), that cut in 2 or 4 along one
dimension, and irc's searched tiles.

Then the choices `igo-fuse`, `irc-plan` and the benchmark make with those prices: the
order (`best_order`, `paper_order`: Algorithm 1), the partition (`best_partition`) and
the rule between them (`cheapest`).
"""

from __future__ import annotations

import dataclasses
import math
from functools import lru_cache

from irc.cost.igo import (
    FUSED_ORDERS,
    SCHEMES,
    Cost,
    Layer,
    ScratchpadError,
    Tiling,
    check_options,
    operator_starts,
    price,
    with_closed_form,
    schedule,
    simulate,
    split_of,
)
from irc.cost.igo_scalesim import simulate as scalesim_simulate
from irc.cost.igo_scalesim import whole_tiling

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
        dy_once: bool | str = False, best: Cost | None = None) -> Cost | None:
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
           baseline: str = "separate", dy_once: bool | str = False) -> Cost:
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


@lru_cache(maxsize=4096)
def scalesim_search(layer: Layer, device, order: str, scheme, parts: int, dy_once: bool | str = False) -> Cost:
    """The best tiling's cost for `order` and the partition on SCALE-Sim's buffers (see
    the module docstring)."""
    whole = whole_tiling(layer, scheme, parts)
    candidates = [whole]
    for name, array in (("tm", device.pe_rows), ("tk", max(device.pe_rows, device.pe_cols)), ("tn", device.pe_cols)):
        for cut in (2, 4):
            size = -(-getattr(whole, name) // cut)
            candidates.append(dataclasses.replace(whole, **{name: min(getattr(whole, name),
                                                                      -(-size // array) * array)}))
    if scheme is None or parts == 1:  # a split is SCALE-Sim's tiling already
        # with dY free, the tiles searched without it too: a bound's candidates hold the schedule's
        for free in dict.fromkeys((False, dy_once)):
            try:
                candidates.append(search(layer, device, order, scheme, parts, dy_once=free).tiling)
            except ScratchpadError:
                pass  # no tiling fits irc's scratchpad: SCALE-Sim's buffers stream anyway
    candidates = list(dict.fromkeys(candidates))
    best = None
    for candidate in candidates:
        cost = scalesim_simulate(layer, candidate, device, order, scheme, parts, dy_once,
                        best.cycles if best is not None else math.inf)
        if cost is not None and (best is None or (cost.cycles, cost.dram_bytes) < (best.cycles, best.dram_bytes)):
            best = cost
    return best


def evaluate(layer: Layer, device, order: str, scheme: str | None = None, parts: int | None = None,
             tiling: Tiling | None = None, policy: str = "lru", baseline: str = "separate",
             memory: str = "irc", dy_once: bool | str = False) -> Cost:
    """The cost of the layer's backward pass (or single GEMM, `SINGLE_ORDERS`) in `order`,
    partition `scheme` into `parts` (default the device's cores), on `device`, with
    `tiling`, or (None) the best tiling searched for this order and partition (the
    result's `Cost.tiling`); the arguments as `irc.cost.igo.price` takes them."""
    if tiling is not None:
        return price(layer, device, order, tiling, scheme, parts, policy, baseline, memory, dy_once)
    check_options(order, baseline, memory)
    split, count = split_of(device, scheme, parts)
    if memory == "scalesim":
        best = scalesim_search(layer, device, order, split, count, dy_once)
    else:
        best = search(layer, device, order, split, count, policy, baseline, dy_once)
    return with_closed_form(best, layer, order, split, count, device)


def paper_order(layer: Layer) -> str:
    """Algorithm 1 as printed: ``interleave`` when max(M,N,K)/min(M,N,K) < 4, else
    ``dw-major`` when K > N and K > M, else ``dx-major``.

    Where the prose and the listing disagree: the prose picks dX-major "when the size of
    dX is larger than the size of dW" (M·K > K·N, i.e. M > N) and dW-major "when the
    column dimension of dW significantly surpasses the row dimension" (N > K); the
    listing tests K against both M and N. The prose also calls the five tensors nearly
    square, the listing only compares M, N and K. This function follows the listing."""
    dims = (layer.M, layer.N, layer.K)
    if max(dims) / min(dims) < 4:
        return "interleave"
    if layer.K > layer.N and layer.K > layer.M:
        return "dw-major"
    return "dx-major"


def cheapest(costs: dict, options) -> object:
    """The option of `costs` priced lowest: fewest cycles, then fewest DRAM bytes, then
    the first in `options` (the one rule `igo-fuse` and `benchmarks/igo.py` choose by)."""
    options = list(options)
    return min(options, key=lambda o: (costs[o].cycles, costs[o].dram_bytes, options.index(o)))


def best_order(layer: Layer, device, tiling: Tiling | None = None, policy: str = "lru",
               memory: str = "irc", baseline: str | None = None) -> tuple[str, dict[str, Cost]]:
    """The fused order the cost model prices lowest (§4.3: the fused orders, `FUSED_ORDERS`, each
    with its own tiles unless `tiling` is given; ties: the first of FUSED_ORDERS). With a
    `baseline` the unfused pair (order ``baseline``, kept that way) is a candidate too,
    last: the choice is never slower than not fusing (a small layer's fused orders pay
    the refills of alternating GEMMs that its dY traffic does not repay)."""
    options = FUSED_ORDERS + (("baseline",) if baseline is not None else ())
    costs = {o: evaluate(layer, device, o, tiling=tiling, policy=policy, memory=memory,
                         baseline=baseline or "separate") for o in options}
    return cheapest(costs, options), costs


def partition_options(device) -> list[tuple[str, int]]:
    """The (scheme, parts) `best_partition` prices: on a multi-core device the parts are
    the cores; on one core, 1 (no split), 2 or 4 parts run one after another."""
    parts_options = (device.cores,) if device.cores > 1 else (1, 2, 4)
    return [(scheme, parts) for parts in parts_options for scheme in SCHEMES
            if not (parts == 1 and scheme != SCHEMES[0])]


def best_partition(layer: Layer, device, order: str, tiling: Tiling | None = None,
                   parts_options: tuple[int, ...] | None = None, policy: str = "lru",
                   baseline: str = "separate", memory: str = "irc") -> tuple[tuple[str, int], dict]:
    """The partition (scheme, parts) the cost model prices lowest for `order`, each with
    its own tiles unless `tiling` is given (`partition_options`, or the given
    `parts_options`; `baseline` when `order` is the baseline)."""
    options = partition_options(device) if parts_options is None else [
        (scheme, parts) for parts in parts_options for scheme in SCHEMES if not (parts == 1 and scheme != SCHEMES[0])]
    costs = {(scheme, parts): evaluate(layer, device, order, scheme if parts > 1 or device.cores > 1 else None,
                                       parts, tiling, policy, baseline, memory)
             for scheme, parts in options}
    return cheapest(costs, options), costs
