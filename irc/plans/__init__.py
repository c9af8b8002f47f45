"""The plan vocabulary: what an operator is (``OpSpec``, ``TensorSpec``; read off a te
expression by ``from_te``), what a compute-shift plan is (``Plan``: F_op and the temporal
factors, T10 §3-4), the tensors' roles in a kind's cost (``roles``), and the legality check
that prices one plan or names the constraint it breaks (``check_plan``; a gradient pair's
``check_pair_plan`` in ``pair``). No search (``irc.planner``) and no IR: the planner and
the schedule both read it.
"""

from irc.plans.constraints import DEFAULT_MAX_PADDING, DEFAULT_MIN_UTILIZATION, T10_MIN_UTILIZATION
from irc.plans.errors import PlanError, SpecError
from irc.plans.evaluate import check_plan
from irc.plans.plan import MemoryBreakdown, Plan, PlanScore, ShiftLevel
from irc.plans.spec import OpSpec, TensorSpec, conv2d_spec, matmul_spec

__all__ = [
    "DEFAULT_MAX_PADDING",
    "DEFAULT_MIN_UTILIZATION",
    "T10_MIN_UTILIZATION",
    "MemoryBreakdown",
    "OpSpec",
    "Plan",
    "PlanError",
    "PlanScore",
    "ShiftLevel",
    "SpecError",
    "TensorSpec",
    "check_plan",
    "conv2d_spec",
    "matmul_spec",
]
