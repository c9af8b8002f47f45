"""ELK's fallback when the tensors kept on chip leave an op no room (issue 23, item 5).

`irc.planner.elk.offchip_study` counts the tensors kept on chip across each op at the
most their holders' plans place (a whole tensor on one core, as a plan may use one core);
a training model's activations kept for its backward pass can then leave an op no room
although the plans chosen would. Counted at the least instead, the packing check
(`irc.planner.preload_packing`) holds the program the chosen plans make to the core's
bytes, and a plan that still does not pack is refused here, naming its deficit, rather
than by `preload-schedule`.
"""

from __future__ import annotations

from typing import Callable, Sequence

from irc.planner.model import ModelSpec, _ModelProblem
from irc.planner.op_table import FrontierCache
from irc.planner.preload import PreloadFitError
from irc.planner.preload_packing import packing_deficit
from irc.planner.preload_plan import PreloadPlan
from irc.plans.errors import PlanError


class LeastKeptFitError(PreloadFitError):
    """ELK counting the tensors kept on chip across each op at the least their holders'
    plans place (``offchip_study``'s fallback) still finds no room: names the op and
    the bytes ``needed`` per core of ``available``, and what they count (``reason``)."""

    def __init__(self, op: str, needed: float, available: float, reason: str) -> None:
        PlanError.__init__(self, f"op '{op}' cannot run even with preloading: {reason}")
        self.op, self.needed, self.available = op, needed, available


def least_kept_fallback(search: Callable, decide: Callable, plain: _ModelProblem, loop: bool) -> tuple:
    """(the search, its ops, ``decide``'s decisions of it, whether the kept tensors were
    counted at the least): ``search(plain)``, else, where an op has no room and not
    ``loop``, ``search(plain, None, True)``; a ``LeastKeptFitError`` where that has none."""
    first, ops = search(plain)
    try:
        return first, ops, decide(first), False
    except PreloadFitError as most:
        if loop:
            raise
        first, ops = search(plain, None, True)
        try:
            return first, ops, decide(first), True
        except PreloadFitError as error:
            raise LeastKeptFitError(error.op, error.needed, error.available, (
                f"its smallest plan needs {int(error.needed)} bytes per core with the tensors kept on chip "
                f"across it at the least their holders' plans place (at the most, op '{most.op}' needed "
                f"{int(most.needed)}), the chip has {int(error.available)}")) from None


def check_packs(model: ModelSpec, cache: FrontierCache, plan: PreloadPlan,
                 input_loads: Sequence[Sequence[str]] | None, problem: _ModelProblem) -> None:
    """A ``LeastKeptFitError`` where ``plan``'s program does not pack in a core (ELK
    planned it counting the kept tensors at the least their holders' plans place, and
    ``packed_decision`` found no plan that packs): rather than `preload-schedule` failing."""
    sram = int(cache.device.sram_bytes)
    deficit, at = packing_deficit(model, cache, plan, sram, input_loads, problem)
    if deficit:
        raise LeastKeptFitError(model.ops[at].name, sram + deficit, sram, (
            f"the tensors kept on chip across the ops fit only at the least their holders' plans "
            f"place, and the program of the plans chosen so does not pack in a core: its buffers "
            f"allocated at this op end {deficit} bytes past the core's {sram}"))
