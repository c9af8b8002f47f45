"""A layer's gradient pair as one compute-shift kernel.

Several products, one kernel (``build_fused_kernel``: a layer's gradient pair, irc's own
extension, `irc.planner.igo_pair`). Products over the same axes run under one plan: the
levels are peeled over all their tensors, every step computes one sub-task of each
product on the step tiles, and a tensor several products read (dY) rotates on one ring
for all of them. Tensors shared by the same cores (equal free axes, as dX and X, or dW
and W, of a pair) have equal ``phi``; where both rotate at one level their digits there
are made one (the levels both rotate at are the least significant of both radices,
``irc.schedule.loop_order.radix_orders``) and counted once in ``o_l``, so each ring still holds distinct
partitions. A single operator is the one-product kernel.

"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np

from irc.cost import CostModel, DEFAULT_COST_MODEL, get_cost_model
from irc.devices import Device, load_device
from irc.dialects.te_expr import BoundExpr
from irc.plans import Plan, PlanError
from irc.plans.errors import SpecError
from irc.plans.pair import check_pair_plan, pair_spec
from irc.schedule.geometry import ShiftKernel
from irc.schedule.kernel import assemble, product_of
from irc.schedule.loop_order import nested_levels, peel_levels
from irc.schedule.spec import UnsupportedExpression


def build_fused_kernel(
    bounds: Sequence[BoundExpr],
    plan: Plan,
    device: Device | str,
    cost: CostModel | str = DEFAULT_COST_MODEL,
    dtypes: dict[str, np.dtype] | None = None,
) -> ShiftKernel:
    """The aligned compute-shift program running the products ``bounds`` under one
    ``plan`` over their shared axes (the first product's axis order; ``dtypes`` by tensor
    name, outputs included, default f16): one loop nest whose every step computes a
    sub-task of each product, every tensor rotating on its own rings once for all the
    products reading it. The plan is scored as the products' planner prices them
    together (``_joint_score``: a layer's gradient pair, `irc.planner.igo_pair`), the loop
    nest is its loop order, the placement T10's (`irc.schedule.placement`). Raises as
    ``build_shift_kernel``."""
    device = load_device(device)
    cost = get_cost_model(cost)
    products, union, score = _joint_score(bounds, plan, device, cost, dtypes)
    peeled = peel_levels(union, plan)
    return assemble(products, union, plan, score, device, cost, nested_levels(peeled, score), None, dtypes)


def assemble_fused_kernel(
    bounds: Sequence[BoundExpr],
    plan: Plan,
    device: Device | str,
    cost: CostModel | str,
    levels: list[tuple[str, int, int, tuple[str, ...]]],
    start: np.ndarray | None,
    *,
    dtypes: dict[str, np.dtype] | None = None,
) -> ShiftKernel:
    """``assemble_kernel`` for the products of ``build_fused_kernel``: the kernel their
    plan and a given loop nest and placement state."""
    device = load_device(device)
    cost = get_cost_model(cost)
    products, union, score = _joint_score(bounds, plan, device, cost, dtypes)
    return assemble(products, union, plan, score, device, cost, levels, start, dtypes)


def _joint_score(bounds, plan: Plan, device: Device, cost: CostModel, dtypes):
    """The products of a fused kernel (specs in the first product's axis order), the
    union of their tensors and the plan's score. A planner prices products together
    only as a layer's gradient pair (`irc.planner.igo_pair`: two contractions sharing
    one input, dY); anything else is ``UnsupportedExpression``."""
    dtypes = {name: np.dtype(d) for name, d in (dtypes or {}).items()}
    products = [product_of(bound, dtypes.get(bound.expr.output.tensor, np.float16), dtypes) for bound in bounds]
    shared = set(products[0].inputs).intersection(*(p.inputs for p in products[1:])) if len(products) > 1 else set()
    if len(products) != 2 or len(shared) != 1:
        texts = "; ".join(f"'{p.bound.expr}'" for p in products)
        raise UnsupportedExpression(
            f"no cost model prices the products {texts} as one kernel: a fused kernel is a layer's gradient pair "
            f"(two contractions sharing one input, dY)"
        )
    try:
        pair = pair_spec(products[0].spec, products[1].spec, shared.pop())
    except SpecError as error:
        raise UnsupportedExpression(f"the products are not a gradient pair: {error}") from None
    if tuple(plan.axes) != pair.axis_names:
        raise PlanError(f"plan axes {tuple(plan.axes)} differ from the products' axes {pair.axis_names}")
    score = check_pair_plan(pair, plan.unscored(), device, cost)
    products = (replace(products[0], spec=pair.dx), replace(products[1], spec=pair.dw))
    return products, pair.union_spec(), score



__all__ = ["assemble_fused_kernel", "build_fused_kernel"]
