"""The result of model-wide planning (`irc.planner.model`; re-exported there): per
operator its idle and active plans, times and bytes (``PlannedOp``), and the totals
(``ModelPlan``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from irc.planner.idle import IdlePlan
from irc.planner.serialize import plan_to_dict
from irc.plans.plan import Plan


@dataclass(frozen=True)
class PlannedOp:
    """One operator's decisions and costs in a ``ModelPlan`` (seconds, bytes per core)."""

    name: str
    signature: int
    active: Plan
    idle: IdlePlan
    active_seconds: float
    setup_seconds: float
    relayout_seconds: float
    relayout_bytes: int
    idle_bytes: int
    active_bytes: int
    seconds: float
    share: float
    budget_bytes: int = 0        # what the idle weights and the tensors kept across it leave of SRAM
    fastest_seconds: float = 0.0   # its fastest active plan, memory ignored
    fastest_bytes: int = 0

    @property
    def memory_bound(self) -> bool:
        """The model-wide memory trade-off keeps this op from its fastest plan: that plan
        needs more bytes per core than the op's budget."""
        return self.active_seconds > self.fastest_seconds * (1 + 1e-9) and self.fastest_bytes > self.budget_bytes

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "signature": self.signature,
            "active_plan": plan_to_dict(self.active),
            "idle_plan": self.idle.to_dict(),
            "active_seconds": self.active_seconds,
            "setup_seconds": self.setup_seconds,
            "relayout_seconds": self.relayout_seconds,
            "relayout_bytes": self.relayout_bytes,
            "idle_bytes": self.idle_bytes,
            "active_bytes": self.active_bytes,
            "seconds": self.seconds,
            "share": self.share,
        }


@dataclass(frozen=True)
class ModelPlan:
    """A model-wide plan: per-op plans and times, and the totals."""

    model: str
    device: str
    cost_model: str
    direction: str
    ops: tuple[PlannedOp, ...]
    seconds: float
    idle_bytes: int                  # sum of every op's idle bytes per core
    peak_bytes: int                  # most bytes per core while any op executes
    sram_bytes: int
    trajectory: tuple[tuple[int, float], ...]   # (idle bytes, seconds) of every state explored
    unique_signatures: int
    searches: int
    planning_seconds: float

    @property
    def active_seconds(self) -> float:
        return sum(op.active_seconds for op in self.ops)

    @property
    def setup_seconds(self) -> float:
        return sum(op.setup_seconds for op in self.ops)

    @property
    def relayout_seconds(self) -> float:
        return sum(op.relayout_seconds for op in self.ops)

    def to_dict(self) -> dict:
        return {
            "model": self.model,
            "device": self.device,
            "cost_model": self.cost_model,
            "direction": self.direction,
            "seconds": self.seconds,
            "active_seconds": self.active_seconds,
            "setup_seconds": self.setup_seconds,
            "relayout_seconds": self.relayout_seconds,
            "idle_bytes": self.idle_bytes,
            "peak_bytes": self.peak_bytes,
            "sram_bytes": self.sram_bytes,
            "unique_signatures": self.unique_signatures,
            "searches": self.searches,
            "planning_seconds": self.planning_seconds,
            "trajectory": [[m, t if math.isfinite(t) else None] for m, t in self.trajectory],
            "ops": [op.to_dict() for op in self.ops],
        }
