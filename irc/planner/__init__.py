"""Intra-operator plan search for compute-shift execution (T10 sections 3-4).

    >>> from irc.planner import matmul_spec, search, format_plan_seed003
    >>> result = search(matmul_spec(32, 5120, 15360), "ipu-mk2", "t10")
    >>> print(format_plan_seed003(matmul_spec(32, 5120, 15360), result.best))

- ``OpSpec``/``TensorSpec`` (the plan vocabulary, ``irc.plans``) describe an operator (``matmul_spec``, ``conv2d_spec``).
- ``search`` enumerates every admissible plan, scores all of them with a cost model
  (``irc.cost``) and returns the fastest fitting plan and the memory/time Pareto frontier.
- ``check_plan`` checks one plan against the T10 constraints and scores it, or raises
  ``PlanError`` naming the failed constraint.
- ``baselines`` gives the no-rotation, 1-D and roofline reference points.
- ``format_plan_seed003``, ``plan_to_json``, ``plan_from_json`` serialise plans.
"""

from irc.planner.search import Baselines, SearchResult, baselines, roofline_seconds, search
from irc.planner.serialize import format_plan_seed003, plan_from_json, plan_to_dict, plan_to_json

# the plan vocabulary (irc.plans), re-exported: what the search takes and returns
from irc.plans import (
    DEFAULT_MAX_PADDING,
    DEFAULT_MIN_UTILIZATION,
    T10_MIN_UTILIZATION,
    MemoryBreakdown,
    OpSpec,
    Plan,
    PlanError,
    PlanScore,
    ShiftLevel,
    SpecError,
    TensorSpec,
    check_plan,
    conv2d_spec,
    matmul_spec,
)

__all__ = [
    "DEFAULT_MAX_PADDING",
    "DEFAULT_MIN_UTILIZATION",
    "T10_MIN_UTILIZATION",
    "Baselines",
    "MemoryBreakdown",
    "OpSpec",
    "Plan",
    "PlanError",
    "PlanScore",
    "SearchResult",
    "ShiftLevel",
    "SpecError",
    "TensorSpec",
    "baselines",
    "check_plan",
    "conv2d_spec",
    "format_plan_seed003",
    "matmul_spec",
    "plan_from_json",
    "plan_to_dict",
    "plan_to_json",
    "roofline_seconds",
    "search",
]

# Model-wide planning (T10 s4.3.2): idle/active plans, setup and relayout costs, baselines.
from irc.planner.baselines_model import BaselinePlan, fastest_bound, roller_plan, vgm_plan  # noqa: E402
from irc.planner.idle import IdlePlan, idle_plans, setup_cycles  # noqa: E402
from irc.planner.model import (  # noqa: E402
    ModelFitError,
    ModelOp,
    ModelPlan,
    ModelSpec,
    ModelSpecError,
    PlannedOp,
    check_fits,
    exhaustive_idle_search,
    max_batch,
    plan_model,
)
from irc.planner.op_table import FrontierCache  # noqa: E402
from irc.planner.relayout import TensorLayout, relayout_cost, tensor_layout  # noqa: E402

__all__ += [
    "BaselinePlan",
    "FrontierCache",
    "IdlePlan",
    "ModelFitError",
    "ModelOp",
    "ModelPlan",
    "ModelSpec",
    "ModelSpecError",
    "PlannedOp",
    "TensorLayout",
    "check_fits",
    "exhaustive_idle_search",
    "fastest_bound",
    "idle_plans",
    "max_batch",
    "plan_model",
    "relayout_cost",
    "roller_plan",
    "setup_cycles",
    "tensor_layout",
    "vgm_plan",
]
