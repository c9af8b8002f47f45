"""irc-plan's planner of one chip family, as one interface (`FamilyPlanner`).

A family's `irc.devices.ChipFamily` names its planner (``planner = "module:PLANNER"``);
irc-plan loads the device, asks the registry for its family, refuses the options of the
other families' planners, and hands the request to the family's planner. So a new
family's planner is one module with a ``PLANNER``: irc-plan itself does not change."""

from __future__ import annotations

from argparse import Namespace
from dataclasses import dataclass
from typing import Any, Callable


class PlanToolError(Exception):
    """A problem with what the user asked irc-plan for; printed as one diagnostic."""


@dataclass(frozen=True)
class OperatorRequest:
    """One operator to plan (``--expr``): its spec, the bound expression it was read from,
    the device and cost model the family's ``configure`` chose, the element type's name,
    and when the request started (``time.perf_counter``)."""

    spec: Any
    bound: Any
    device: Any
    cost: Any
    dtype: str
    started: float


@dataclass(frozen=True)
class ModelRequest:
    """One model to plan (``--model``): ``source_of()`` reads it (`irc.model_sources`),
    on the device and cost model the family's ``configure`` chose; ``progress(total,
    title)`` is a progress bar; ``started`` as for an operator."""

    source_of: Callable[[], Any]
    device: Any
    cost: Any
    progress: Callable[[int, str], Any]
    started: float


@dataclass(frozen=True)
class FamilyPlanner:
    """What irc-plan asks of a family's planner: ``options`` are the argument names
    (argparse dests) only this family's planner takes (refused, by name, on another
    family's device); ``configure(args, device)`` checks the request's options and cost
    model for the family and answers the device and cost model to plan with (an NPU's
    ``--cores`` applied, say); ``plan_operator`` and ``plan_model`` print the plan and
    answer the exit status. Each raises `PlanToolError` for a request it cannot serve."""

    options: tuple[str, ...]
    configure: Callable[[Namespace, Any], tuple[Any, Any]]
    plan_operator: Callable[[Namespace, OperatorRequest], int]
    plan_model: Callable[[Namespace, ModelRequest], int]

    def given_options(self, args: Namespace) -> list[str]:
        """This planner's options that ``args`` sets (as ``--flag`` names)."""
        return [f"--{name.replace('_', '-')}" for name in self.options
                if getattr(args, name, None) not in (None, False)]


def print_fallbacks(fallbacks, where: str = "the host/vendor fallback") -> None:
    """The te ops of a model the family's planner cannot describe, one line each, after
    a heading saying where they run (nothing when there are none)."""
    if fallbacks:
        print(f"left to {where} ({len(fallbacks)} te op(s) the planner cannot describe):")
        for line in fallbacks:
            print(f"  {line}")


__all__ = ["FamilyPlanner", "ModelRequest", "OperatorRequest", "PlanToolError", "print_fallbacks"]
