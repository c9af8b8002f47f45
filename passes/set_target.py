"""``irc-target{device=... cost=...}``: give a module its ``#irc.target``.

The target (the device's full description and the cost model's name) is written once,
by the first pass that needs a chip; ``rtensor-partition`` does so itself. This pass sets
it explicitly, for IR that enters the pipeline below the te level, and checks an existing
target against the options (one module, one target).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from irc.target import TargetError, set_target


@dataclass(frozen=True)
class SetTarget(ModulePass):
    """``irc-target{device=ipu-mk2 cost=t10}``: the module's target, written or checked."""

    name = "irc-target"

    device: str = ""
    cost: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            set_target(op, self.device, self.cost)
        except TargetError as error:
            raise DiagnosticException(f"irc-target: {error}") from None
