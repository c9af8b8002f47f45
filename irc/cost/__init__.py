"""Cost models: pure functions of a device and a sub-task (DESIGN.md section 4).

``t10`` prices plans with the IPU Mk2 costs measured by the T10 artifact
(IPU_COST_FACTS.md); ``seed003`` with the T10 benchmark problem's simpler statement
(padded systolic matmul + bytes at 5.5 GB/s); ``engdesign`` as the benchmark's grader
does (its compute, load/store, broadcast, reduction and shift terms). All implement
``CostModel``.
"""

from irc.cost.engdesign import EngDesignCostModel
from irc.cost.model import (
    KINDS,
    BoundedCostModel,
    CostBreakdown,
    CostModel,
    CostModelError,
    OpWork,
    PlanGeometry,
    SubTask,
)
from irc.cost.registry import DEFAULT_COST_MODEL, get_cost_model, known_cost_models
from irc.cost.seed003 import Seed003CostModel
from irc.cost.t10 import T10CostModel

__all__ = [
    "DEFAULT_COST_MODEL",
    "KINDS",
    "BoundedCostModel",
    "CostBreakdown",
    "CostModel",
    "CostModelError",
    "EngDesignCostModel",
    "OpWork",
    "PlanGeometry",
    "Seed003CostModel",
    "SubTask",
    "T10CostModel",
    "get_cost_model",
    "known_cost_models",
]
