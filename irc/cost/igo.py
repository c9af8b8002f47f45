"""The cost model of IGO's backward pass on an NPU (IGO §2.2, §3, §4.2-4.3, §5), the
registered cost model ``igo``: what a layer's dX/dW pair (or single GEMM) costs in a
given tile order, tiling, partition and baseline, on either memory model. Pure functions
of a layer and an `NpuDevice`; no IR. Choosing the schedule (tiles searched per order
and partition, the order, the partition) is the planner's: `irc.planner.igo`.

The machinery: `irc.cost.igo_sim` (tile schedules, the double-buffered scratchpad,
time), `irc.cost.igo_array` (the systolic array with in-array accumulation) and
`irc.cost.igo_scalesim` (SCALE-Sim 3's memory model, ``memory=scalesim``). This module
names what the planner, passes, lowering and benchmark use.

Memory models (`MEMORIES`): ``irc``, the scratchpad of `irc.cost.igo_sim` (a software-
managed cache of tiles in half the SPM, the other half filling); ``scalesim``, SCALE-Sim
3's three double-buffered SRAMs (ifmap, filter, ofmap), its fold order and its DRAM
request stream, which IGO's simulator is built on (§6.1).
"""

from __future__ import annotations

from collections import defaultdict

from irc.cost import igo_scalesim
from irc.cost.igo_sim import (  # noqa: F401  (the names the planner, passes, lowering and benchmark use)
    BASELINES,
    DY_MAJOR,
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
    schedule,
    simulate,
    step_shape,
    tile_bytes,
    tile_counts,
)
from irc.cost.model import CostModelError

MEMORIES = ("irc", "scalesim")
"""The memory models a cost can be taken on (see the module docstring)."""


def queue(transfers: list[Transfer], rounds: int) -> list[tuple[str, int, Transfer | None]]:
    """The program order of a schedule's DMAs and rounds: ``("dma", t, transfer)`` and
    ``("round", t, None)``; round t's fill comes before it, round t-1's write-back (the
    ``after`` transfers of round t-1) right after that fill."""
    before, after = defaultdict(list), defaultdict(list)
    for tr in transfers:
        (after if tr.after else before)[tr.round].append(tr)
    order: list[tuple[str, int, Transfer | None]] = []
    for t in range(rounds + 1):
        order += [("dma", t, tr) for tr in before[t]]
        order += [("dma", t - 1, tr) for tr in after[t - 1]]
        if t < rounds:
            order.append(("round", t, None))
    return order


def split_of(device, scheme: str | None, parts: int | None) -> tuple[str | None, int]:
    """The partition a schedule runs: `parts` defaults to the device's cores when a scheme
    is given, else 1; on several cores without a scheme, the batch is split over them
    (data parallel, weight-sharing)."""
    if parts is None:
        parts = device.cores if scheme is not None else 1
    if device.cores > 1 and scheme is None:
        return "weight-sharing", device.cores
    return scheme, parts


def check_options(order: str, baseline: str, memory: str) -> None:
    """Raise ``ValueError`` naming the choices for an unknown order, baseline or memory model."""
    if memory not in MEMORIES:
        raise ValueError(f"unknown memory model '{memory}' (known: {', '.join(MEMORIES)})")
    if order not in ORDERS + SINGLE_ORDERS:
        raise ValueError(f"unknown order '{order}' (known: {', '.join(ORDERS + SINGLE_ORDERS)})")
    if baseline not in BASELINES:
        raise ValueError(f"unknown baseline '{baseline}' (known: {', '.join(BASELINES)})")


def price(layer: Layer, device, order: str, tiling: Tiling, scheme: str | None = None, parts: int | None = None,
          policy: str = "lru", baseline: str = "separate", memory: str = "irc", dy_once: bool | str = False) -> Cost:
    """The cost of the layer's backward pass (or single GEMM, `SINGLE_ORDERS`) in `order`
    with `tiling`, partition `scheme` into `parts` (default the device's cores), on
    `device`. `baseline` (`BASELINES`) says what order ``baseline`` keeps between its two
    GEMMs; `policy` (`POLICIES`) the scratchpad's replacement; `memory` (`MEMORIES`) which
    memory model prices it; `dy_once` gives the baseline's dW its dY for free (the bound
    of IGO's Fig. 6); ``dy_once="once"`` reads every dY byte from DRAM once in any order
    (each dY tile's reloads free; on SCALE-Sim's buffers, dY's reads past its size): a
    schedule's cost can only fall, so the least such cost over a schedule space bounds
    every schedule in it."""
    check_options(order, baseline, memory)
    if tiling is None:
        raise ValueError("the cost model prices a given tiling; irc.planner.igo.evaluate searches one")
    scheme, parts = split_of(device, scheme, parts)
    if memory == "scalesim":
        cost = igo_scalesim.simulate(layer, tiling, device, order, scheme, parts, dy_once)
        return with_closed_form(cost, layer, order, scheme, parts, device)
    rounds = schedule(layer, tiling, order, scheme, parts, device.cores, baseline, device.dataflow)
    cost = simulate(rounds, layer, tiling, device, policy, operator_starts(rounds, order, baseline),
                    baseline == "paper", dy_once=dy_once)
    return with_closed_form(cost, layer, order, scheme, parts, device)


def with_closed_form(cost: Cost, layer, order, scheme, parts, device) -> Cost:
    """`cost` with SCALE-Sim's closed form for its GEMMs whole (`closed_form_of`) filled in."""
    cost.closed_form_cycles, cost.closed_form_folds = closed_form_of(layer, cost.tiling, order, scheme, parts, device)
    return cost


class IgoCostModel:
    """The registered cost model ``igo`` (`irc.cost.registry`): it prices NPU schedules
    (`price`, a layer's pair or GEMM in a given order, tiling and partition), which
    `irc.planner.igo` searches; T10 compute-shift plans are not its kind, and asking it
    for one is a `CostModelError` naming the model that does."""

    name = "igo"
    times_instructions = False

    price = staticmethod(price)

    def _not_t10(self, device, *_) -> None:
        raise CostModelError(f"cost model 'igo' prices NPU tile schedules (irc.planner.igo), not T10 plans on "
                             f"{getattr(device, 'name', device)}; use t10 or another cost model of the IPU kind")

    compute_cycles = shift_cycles = sync_cycles = op_time = _not_t10
