"""``rtensor-check``: check every `rtensor.op`'s plan against its target (T10 §4.1-4.3).

The analysis the `rtensor` verifier does not do, because it needs a chip: with the
module's ``irc.target``, each op's F_op and f_t must satisfy T10's constraints (cores,
memory per core, divisibility of temporal factors), its types' replicas and padding must
be the plan's, and a weight's idle plan (``#rtensor.idle``, T10 §4.3.2) must take the
bytes and setup cycles it states. Rewrites nothing; a failure is a located error naming
the constraint. An `rtensor.grad_pair` (a layer's two gradients under one plan) is
checked against the same constraints over its five tensors and its ``planned_cycles``
(`irc.lowering.igo_pair_partition.check_pair`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from irc.diagnostics import location_of
from irc.dialects.rtensor import GradPairOp, RTensorOp
from irc.lowering.igo_pair_partition import PairPlanError, check_pair
from irc.lowering.rtensor_plan import PlanCheckError, check_op
from irc.target import TargetError, device_and_cost


@dataclass(frozen=True)
class RTensorCheck(ModulePass):
    """``rtensor-check``: every rtensor.op's plan is legal on the module's target."""

    name = "rtensor-check"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for rtensor_op in [o for o in op.walk() if isinstance(o, (RTensorOp, GradPairOp))]:
            try:
                device, cost = device_and_cost(rtensor_op)
            except TargetError as error:
                raise DiagnosticException(f"{location_of(rtensor_op)}: error: '{rtensor_op.name}' op {error}") from None
            try:
                (check_pair if isinstance(rtensor_op, GradPairOp) else check_op)(rtensor_op, device, cost)
            except (PlanCheckError, PairPlanError) as error:
                raise DiagnosticException(
                    f"{location_of(rtensor_op)}: error: '{rtensor_op.name}' op {error}"
                ) from None
