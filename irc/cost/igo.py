"""The cost model of IGO's backward pass on an NPU (IGO §2.2, §3, §4.2-4.3, §5): what a
layer's dX/dW pair costs in each tile order, partition and baseline, on either memory
model, with its tiles searched per order. Pure functions of a layer and an `NpuDevice`;
no IR.

The machinery: `irc.cost.igo_sim` (tile schedules, the double-buffered scratchpad,
time), `irc.cost.igo_array` (the systolic array with in-array accumulation),
`irc.cost.igo_tiling` (tile sizes searched per order and partition) and
`irc.cost.igo_scalesim` (SCALE-Sim 3's memory model, ``memory=scalesim``). This module
names what the passes and the benchmark use.

Memory models (`MEMORIES`): ``irc``, the scratchpad of `irc.cost.igo_sim` (a software-
managed cache of tiles in half the SPM, the other half filling); ``scalesim``, SCALE-Sim
3's three double-buffered SRAMs (ifmap, filter, ofmap), its fold order and its DRAM
request stream, which IGO's simulator is built on (§6.1).
"""

from __future__ import annotations

from irc.cost import igo_scalesim, igo_tiling
from irc.cost.igo_sim import (  # noqa: F401  (the names the passes, lowering and benchmark use)
    BASELINES,
    FUSED_ORDERS,
    ORDERS,
    OUTPUTS,
    POLICIES,
    SCHEMES,
    SINGLE_ORDERS,
    SPLIT_DIM,
    TENSORS,
    Cost,
    Layer,
    ScratchpadError,
    Step,
    Tiling,
    Transfer,
    KINDS,
    Rounds,
    closed_form_of,
    operator_starts,
    part_blocks,
    plan_rounds,
    plan_transfers,
    queue,
    schedule,
    simulate,
    step_shape,
    tile_bytes,
    tile_counts,
)

MEMORIES = ("irc", "scalesim")
"""The memory models a cost can be taken on (see the module docstring)."""


def split_of(device, scheme: str | None, parts: int | None) -> tuple[str | None, int]:
    """The partition a schedule runs: `parts` defaults to the device's cores when a scheme
    is given, else 1; on several cores without a scheme, the batch is split over them
    (data parallel, weight-sharing)."""
    if parts is None:
        parts = device.cores if scheme is not None else 1
    if device.cores > 1 and scheme is None:
        return "weight-sharing", device.cores
    return scheme, parts


def evaluate(layer: Layer, device, order: str, scheme: str | None = None, parts: int | None = None,
             tiling: Tiling | None = None, policy: str = "lru", baseline: str = "separate",
             memory: str = "irc", dy_once: bool = False) -> Cost:
    """The cost of the layer's backward pass (or single GEMM, `SINGLE_ORDERS`) in `order`,
    partition `scheme` into `parts` (default the device's cores), on `device`; `tiling`
    None searches the best for this order and partition (`irc.cost.igo_tiling`; the
    result's `Cost.tiling`). `baseline` (`BASELINES`) says what order ``baseline`` keeps
    between its two GEMMs; `memory` (`MEMORIES`) which memory model prices it; `dy_once`
    gives the baseline's dW its dY for free (the bound of IGO's Fig. 6)."""
    if memory not in MEMORIES:
        raise ValueError(f"unknown memory model '{memory}' (known: {', '.join(MEMORIES)})")
    if order not in ORDERS + SINGLE_ORDERS:
        raise ValueError(f"unknown order '{order}' (known: {', '.join(ORDERS + SINGLE_ORDERS)})")
    if baseline not in BASELINES:
        raise ValueError(f"unknown baseline '{baseline}' (known: {', '.join(BASELINES)})")
    scheme, parts = split_of(device, scheme, parts)
    if memory == "scalesim":
        cost = igo_scalesim.evaluate(layer, device, order, scheme, parts, tiling, dy_once)
        return _with_closed_form(cost, layer, order, scheme, parts, device)
    if tiling is None:
        return _searched(layer, device, order, scheme, parts, policy, baseline, dy_once)
    rounds = schedule(layer, tiling, order, scheme, parts, device.cores, baseline, device.dataflow)
    cost = simulate(rounds, layer, tiling, device, policy, operator_starts(rounds, order, baseline),
                    baseline == "paper", dy_once=dy_once)
    return _with_closed_form(cost, layer, order, scheme, parts, device)


def _searched(layer, device, order, scheme, parts, policy, baseline, dy_once) -> Cost:
    cost = igo_tiling.search(layer, device, order, scheme, parts, policy, baseline, dy_once)
    return _with_closed_form(cost, layer, order, scheme, parts, device)


def _with_closed_form(cost: Cost, layer, order, scheme, parts, device) -> Cost:
    cost.closed_form_cycles, cost.closed_form_folds = closed_form_of(layer, cost.tiling, order, scheme, parts, device)
    return cost


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
