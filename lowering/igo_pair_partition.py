"""Gradient pairs on an inter-core chip: `rtensor-partition`'s treatment of
`igo.grad_pair`, the adapter between the pair ops and `irc.planner.igo_pair`, and the
checks `rtensor-check` runs on `rtensor.grad_pair` (IGO, MICRO'23, §4.2 carried to T10's
rotating tensors, T10 §4.1-4.3; the model and its assumptions are
`irc.planner.igo_pair`'s docstring).

`rtensor-partition` meets an `igo.grad_pair` (igo-fuse on an inter-core device) and
decides, per pair, before it plans anything else (`plan_pairs`):

- **fused**: the pair's fastest fused plan (`irc.planner.igo_pair.search_pair`, one
  ``F_op`` over the shared axes, f_t for the five tensors) is faster than the unfused
  pair (each product's fastest plan, the inputs' arrival included: dY arrives once
  instead of twice). It becomes::

      %dy1 = rtensor.relayout %dy : tensor<...> -> !rtensor.tensor<...>   (and W, X)
      %dx1, %dw1 = rtensor.grad_pair dx "..." dw "..." (%dy1, %w1, %x1) F_op = array<i64: ...>
                     {planned_cycles = ..., irc.pair = "..."} : (...) -> (...)
      %dx = rtensor.relayout %dx1 : ... -> tensor<...>                   (and dW)

  ``planned_cycles`` is the fused plan's time (`rtensor-check` recomputes it) and
  ``irc.pair`` states the comparison it won;
- **unfused**: the unfused pair is at least as fast, or the planner cannot describe the
  pair as one plan (a convolution's dX writes a compound ``h+r`` index, which no plan
  stores), or no fused plan fits: the pair goes back to its two ``te.op``s, which are
  planned like any other (model-wide or per op), each with ``irc.unfused`` saying why.

A fused pair is one operator of the model-wide plan (T10 s4.3.2, Algorithm 1;
`irc.lowering.model_from_ir.function_model`): its active plans are the pair's (memory,
time) frontier (`irc.planner.igo_pair.pair_frontier`), traded against the other
operators' memory like theirs, and the plan it runs is the point of that frontier the
model chose, which under memory pressure may need less memory and take longer than the
fastest fused plan the comparison above stated. It has no idle plan: its weight is
loaded from the host into its active layout. What moves into or out of it, and what is
kept on chip across it, the model prices and counts as for any op, so the function's
``irc.planned_cycles`` is the model's time and `device-alloc` places what the model
admitted; an input it shares with te ops is loaded once, into a te op's layout, and
relayouted to the pair. Fusion is decided inside the model-wide plan (`decide_fusion`):
each fused pair's table also holds the pair run unfused (`irc.planner.igo_choice`), so
Algorithm 1 chooses fused or unfused per pair and per memory budget (under memory
pressure a fused pair's five tensors may cost its neighbours more than dY's second
arrival saves); a pair at an unfused point goes back to two ``te.op``s (``irc.unfused``
names the point, the budget and the fastest fused plan within it) and the function is
planned again, kept unless every pair fused, every pair unfused or one pair alone unfused
plans faster. When the
function does not fit even so, its pairs go back to two ``te.op``s each and it is planned
again, so fusing never makes a program that fits unplaceable. With ``mode=op`` a fused
pair runs its fastest fused plan.
Below the rtensor level a fused pair is one compute-shift kernel of two products
(`rtensor-to-shift`, `irc.schedule.pair_kernel.build_fused_kernel`): dY rotates once per step
for both gradients, and the interpreted device program takes exactly the planned time,
relayouts included.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from xdsl.dialects.builtin import FloatAttr, StringAttr, f64
from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import DiagnosticException

from irc.cost import CostModelError
from irc.diagnostics import location_of
from irc.dialects import igo
from irc.dialects.rtensor import GradPairOp, RelayoutOp, element_bytes, layout_types
from irc.dialects.te import TensorOp
from irc.dialects.te_expr import ExprError
from irc.lowering.rtensor_plan import relayout_onto
from irc.planner import Plan, PlanError, SpecError
from irc.plans.from_te import op_spec_from_expr
from irc.planner.model import ModelFitError
from irc.planner.igo_choice import UnfusedPoint, choice_table, fused_within
from irc.planner.igo_pair import PairComparison, compare_pair
from irc.plans.pair import PairSpec, check_pair_plan, pair_spec

PLANNED = "planned_cycles"
"""On an `rtensor.grad_pair`: the fused plan's cycles (``rtensor-check`` recomputes them)."""
SUMMARY_ATTR = "irc.pair"
"""On an `rtensor.grad_pair`: the comparison with the unfused pair it won."""
UNFUSED_ATTR = "irc.unfused"
"""On each ``te.op`` of a pair `rtensor-partition` ran unfused: why."""


class PairPlanError(ValueError):
    """An `rtensor.grad_pair` whose plan breaks a constraint on its target."""


def pair_spec_of(op) -> PairSpec:
    """The planner's `PairSpec` of an `igo.grad_pair` or `rtensor.grad_pair` (raises
    `SpecError` for a pair the planner cannot describe as one plan)."""
    def spec(bound, operands, result):
        sizes = {name: element_bytes(value.type.get_element_type()) for name, value in zip(bound.expr.inputs, operands)}
        return op_spec_from_expr(bound, element_bytes(result.type.get_element_type()), tensor_bytes=sizes)

    if isinstance(op, igo.GradPairOp):
        dx_operands = op.operands_of(op.dx_expression.expr, op.w)
        dw_operands = op.operands_of(op.dw_expression.expr, op.x)
        dy = igo.shared_tensor(op.dx_expression.expr, op.dw_expression.expr)
    else:
        dx_operands, dw_operands, dy = op.operands_of_dx(), op.operands_of_dw(), op.dy_name()
    return pair_spec(spec(op.bound_dx(), dx_operands, op.dx), spec(op.bound_dw(), dw_operands, op.dw), dy)


def summary(found: PairComparison) -> str:
    unfused = (f"the unfused pair {found.unfused_kernel_cycles:,.0f} cycles + "
               f"{found.unfused_arrival_cycles:,.0f} for its inputs' arrival (dY twice)")
    if found.fused is None:
        return f"no fused plan ({found.fused_error}); {unfused}"
    return (f"fused {found.fused_kernel_cycles:,.0f} cycles + {found.fused_arrival_cycles:,.0f} for its inputs' "
            f"arrival vs {unfused}")


@dataclass
class PairDecision:
    """A fused pair's scored plan, its spec and the comparison it won."""

    plan: Plan
    spec: PairSpec
    comparison: PairComparison


def unfuse(op: igo.GradPairOp, reason: str) -> None:
    """Put the pair's two gradients back as ``te.op``s, each saying why."""
    rewriter = Rewriter()
    note = {UNFUSED_ATTR: StringAttr(reason)}
    dx = TensorOp(op.dx_expression, op.operands_of(op.dx_expression.expr, op.w), op.dx.type, dict(note))
    dw = TensorOp(op.dw_expression, op.operands_of(op.dw_expression.expr, op.x), op.dw.type, dict(note))
    dx.location = dw.location = op.location
    rewriter.insert_op([dx, dw], InsertPoint.before(op))
    op.dx.replace_all_uses_with(dx.output)
    op.dw.replace_all_uses_with(dw.output)
    rewriter.erase_op(op)


def plan_pairs(module: Operation, device, cost) -> dict[igo.GradPairOp, PairDecision]:
    """Plan every `igo.grad_pair` of `module` (module docstring): the fused ones and
    their plans; the others are put back as two ``te.op``s in place. An NPU pair (one
    carrying a tile order) is an error: it is `igo-to-npu`'s."""
    decisions: dict[igo.GradPairOp, PairDecision] = {}
    cache: dict[PairSpec, PairComparison | str] = {}
    for op in [o for o in module.walk() if isinstance(o, igo.GradPairOp)]:
        if op.order is not None or "partition" in op.attributes:
            raise DiagnosticException(
                f"{location_of(op)}: error: '{op.name}' op has an NPU tile order; on {device.name} run "
                f"igo-fuse{{device={device.name}}} (no order), or lower it with igo-to-npu for an NPU"
            )
        try:
            spec = pair_spec_of(op)
        except (SpecError, ExprError) as error:
            unfuse(op, f"no fused plan: the planner cannot describe the pair as one plan ({error})")
            continue
        if spec not in cache:
            try:
                cache[spec] = compare_pair(spec, device, cost, exact=False)
            except CostModelError as error:
                cache[spec] = f"no fused plan: {error}"
            except PlanError as error:
                cache[spec] = f"the products have no plan of their own to compare with ({error})"
        found = cache[spec]
        if isinstance(found, str):
            unfuse(op, found)
        elif not found.fuse:
            unfuse(op, f"run as two operators, which is faster: {summary(found)}")
        else:
            decisions[op] = PairDecision(Plan(found.fused.plan.axes, found.fused.plan.op_factors,
                                              found.fused.plan.temporal_factors, found.fused.score), spec, found)
    return decisions


def _twins(function, originals: list) -> tuple[Operation, dict]:
    """A clone of ``function`` and, per pair of ``originals``, its twin in the clone."""
    clone = function.clone()
    cloned = [op for op in clone.walk() if isinstance(op, igo.GradPairOp)]
    index = {op: i for i, op in enumerate(o for o in function.walk() if isinstance(o, igo.GradPairOp))}
    return clone, {original: cloned[index[original]] for original in originals}


def _unfused_by_points(found, decision, pairs: dict, cache) -> list[tuple[Operation, str]]:
    """The fused pairs whose point of the model-wide plan is unfused
    (`irc.planner.igo_choice.UnfusedPoint`), each with why: its point, its budget and
    the fastest fused plan within that budget."""
    chosen = []
    budgets = [p.budget_bytes for p in decision.model_plan.ops] if decision.source == "algorithm1" else None
    for k, (op, planned) in enumerate(zip(found.ops, decision.ops)):
        if op not in found.pairs or not isinstance(planned.active, UnfusedPoint):
            continue
        spec = pairs[op].spec
        fused = fused_within(choice_table(spec, cache.pair_table(spec), cache), budgets[k])
        against = (f"the fastest fused plan within it takes {fused:,.0f} cycles" if math.isfinite(fused)
                   else "no fused plan fits in it")
        chosen.append((op, f"run as two operators: the model-wide plan's point for this pair within its budget of "
                           f"{budgets[k]:,} bytes per core is unfused ({planned.active.describe()}); {against}"))
    return chosen


def decide_fusion(function, found, decision, pairs: dict, plan, cache):
    """Fusion decided inside the model-wide plan (issue 25, item 4): ``decision`` is the
    function planned with fused and unfused points in every fused pair's table
    (`irc.planner.igo_choice`), so Algorithm 1 chose per pair and budget; the pairs at an
    unfused point go back to two te ops saying why and the function is planned again
    (until no pair is at an unfused point), so what is lowered is planned exactly. The
    result is kept unless running every pair unfused, every pair fused (on fused
    plans only), or any one pair alone unfused and the others fused plans faster: never slower
    than any of them (one more plan per pair, from the tables the first plan cached). ``plan(function, kept, points) ->
    (found, decision)`` models and plans a function whose fused pairs are ``kept``.
    Returns (function, found, decision): a clone inserted in place of ``function`` when
    some pair went back (``pairs`` updated), else the arguments."""
    originals = list(found.pairs)
    if not originals:
        return function, found, decision
    best, best_pairs = (function, found, decision), dict(pairs)
    chosen = _unfused_by_points(found, decision, pairs, cache)
    realized = frozenset()   # the originals the per-point choice runs unfused
    if chosen:   # the per-point choice, realized on a clone (until then nothing is realized)
        best = None
        clone, twin = _twins(function, originals)
        kept = {twin[o]: pairs[o] for o in originals}
        chosen = [(twin[op], note) for op, note in chosen]
        try:
            while chosen:
                for op, note in chosen:
                    del kept[op]
                    unfuse(op, note)
                planned = plan(clone, kept, True)
                chosen = _unfused_by_points(*planned, kept, cache)
            best, best_pairs = (clone, *planned), kept
            realized = frozenset(o for o in originals if twin[o] not in kept)
        except (ModelFitError, PlanError, DiagnosticException):   # as two operators it does not plan
            pass
    # every pair fused, on fused plans only (the plan with points, all fused, may have walked
    # elsewhere). A tie goes to fusing: the model prices no arrival of the function's
    # arguments, which the unfused pair receives twice
    fused_only = _planned_or_none(plan, function, {o: pairs[o] for o in originals})
    if fused_only is not None and (best is None or fused_only[1].seconds <= best[2].seconds * (1 + 1e-12)):
        best, best_pairs = (function, *fused_only), {o: pairs[o] for o in originals}
    if len(originals) > 1:   # each pair alone unfused (one pair: that is every pair unfused, below)
        best, best_pairs = _each_alone_unfused(function, originals, pairs, plan, best, best_pairs, realized)
    if best is None or best[1].pairs:   # every pair unfused
        clone, twin = _twins(function, originals)
        seconds = best[2].seconds if best is not None else math.inf
        for original in originals:
            unfuse(twin[original], "run as two operators: the model-wide plan of the function is faster with every "
                                   f"pair unfused than the {seconds * 1e6:.3f} us of its per-pair choice"
                   if best is not None else "run as two operators: the model-wide plan of the function has no "
                                            "room for its per-pair choice")
        planned = _planned_or_none(plan, clone, {})
        if planned is not None and planned[1].seconds < seconds * (1 - 1e-12):
            best, best_pairs = (clone, *planned), {}
    if best is None:
        raise ModelFitError(f"@{function.sym_name.data}: no choice of fused and unfused pairs plans", needed=0,
                            available=0)
    if best[0] is not function:
        Rewriter().replace_op(function, best[0])
    for original in originals:
        del pairs[original]
    pairs.update(best_pairs)
    return best


def _each_alone_unfused(function, originals: list, pairs: dict, plan, best, best_pairs: dict, realized: frozenset):
    """``best`` (None: nothing planned yet) or, if faster, the function planned with one
    pair alone unfused and every other fused, for each pair (not the per-point choice's
    own ``realized`` set again): one plan per pair, from the pair tables already cached."""
    for alone in originals:
        if realized == {alone}:
            continue
        clone, twin = _twins(function, originals)
        seconds = best[2].seconds if best is not None else math.inf
        unfuse(twin[alone], "run as two operators: the model-wide plan of the function is faster with this pair "
                            f"alone unfused than the {seconds * 1e6:.3f} us of its per-pair choice"
               if best is not None else "run as two operators: the model-wide plan of the function has no room "
                                        "for its per-pair choice")
        kept = {twin[o]: pairs[o] for o in originals if o is not alone}
        planned = _planned_or_none(plan, clone, kept)
        if planned is not None and planned[1].seconds < seconds * (1 - 1e-12):
            best, best_pairs = (clone, *planned), kept
    return best, best_pairs


def _planned_or_none(plan, function, kept: dict):
    """``plan(function, kept, False)``, or None when that alternative does not plan."""
    try:
        return plan(function, kept, False)
    except (ModelFitError, PlanError, DiagnosticException):
        return None


@dataclass
class PartitionGradPair(RewritePattern):
    """One fused ``igo.grad_pair`` -> relayouts onto the chip + ``rtensor.grad_pair`` +
    relayouts back (as `irc.lowering.te_to_rtensor.PartitionTensorOp` does for a te.op)."""

    decisions: dict = field(default_factory=dict)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: igo.GradPairOp, rewriter: PatternRewriter) -> None:
        decision = self.decisions.get(op)
        if decision is None:
            return
        bound_dx, bound_dw = op.bound_dx(), op.bound_dw()
        operands = {op.dy: None, op.w: None, op.x: None}
        elements = {}
        for bound, values, result in ((bound_dx, op.operands_of(op.dx_expression.expr, op.w), op.dx),
                                      (bound_dw, op.operands_of(op.dw_expression.expr, op.x), op.dw)):
            for name, value in zip(bound.expr.inputs, values):
                elements[name] = value.type.get_element_type()
            elements[bound.expr.output.tensor] = result.type.get_element_type()
        layouts = {**layout_types(bound_dx, decision.plan, elements), **layout_types(bound_dw, decision.plan, elements)}
        dy_name = igo.shared_tensor(op.dx_expression.expr, op.dw_expression.expr)
        names = {op.dy: dy_name,
                 op.w: next(n for n in bound_dx.expr.inputs if n != dy_name),
                 op.x: next(n for n in bound_dw.expr.inputs if n != dy_name)}
        for value in operands:
            operands[value] = relayout_onto(value, layouts[names[value]], op, rewriter)
        attributes = {k: v for k, v in op.attributes.items()}
        attributes[PLANNED] = FloatAttr(float(decision.plan.score.cycles), f64)
        attributes[SUMMARY_ATTR] = StringAttr(summary(decision.comparison))
        planned = GradPairOp(op.dx_expression, op.dw_expression, operands[op.dy], operands[op.w], operands[op.x],
                             layouts[bound_dx.expr.output.tensor], layouts[bound_dw.expr.output.tensor],
                             decision.plan.op_factors, attributes)
        planned.location = op.location
        back_dx = RelayoutOp(planned.dx, op.dx.type)
        back_dw = RelayoutOp(planned.dw, op.dw.type)
        rewriter.replace(op, [planned, back_dx, back_dw], [back_dx.result, back_dw.result])


# ---------------------------------------------------------------------------
# rtensor.grad_pair: its plan, checks and lowering
# ---------------------------------------------------------------------------


def stated_plan(op: GradPairOp) -> Plan:
    stated = op.plan()
    return Plan(stated.axes, stated.op_factors, dict(stated.temporal_factors))


def check_pair(op: GradPairOp, device, cost) -> Plan:
    """Every constraint of the fused plan `op` states on `device` (the T10 constraints
    over its five tensors, `irc.plans.pair.check_pair_plan`), its types' replicas
    and padding, and its ``planned_cycles``; the scored plan. Raises `PairPlanError`."""
    plan = stated_plan(op)
    try:
        spec = pair_spec_of(op)
    except SpecError as error:
        raise PairPlanError(f"the planner cannot describe this pair as one plan: {error}") from None
    try:
        score = check_pair_plan(spec, plan, device, cost)
    except (PlanError, CostModelError) as error:
        raise PairPlanError(f"plan breaks a constraint: {error}") from None
    scored = Plan(plan.axes, plan.op_factors, plan.temporal_factors, score)
    elements = {name: t.element_type for name, t in op.tensor_types().items()}
    expected = {**layout_types(op.bound_dx(), scored, elements), **layout_types(op.bound_dw(), scored, elements)}
    for name, type_ in op.tensor_types().items():
        want = expected[name]
        if type_.replica_count != want.replica_count:
            raise PairPlanError(f"{name} has replicas={type_.replica_count}, but the plan gives {want.replica_count} "
                                f"(cores sharing {name}'s partition / prod(f_t))")
        if type_.padded_shape != want.padded_shape:
            raise PairPlanError(f"{name} has padded shape {'x'.join(map(str, type_.padded_shape))}, but the plan "
                                f"pads it to {'x'.join(map(str, want.padded_shape))}")
    stated_cycles = op.attributes.get(PLANNED)
    if isinstance(stated_cycles, FloatAttr) and not math.isclose(stated_cycles.value.data, score.cycles,
                                                                  rel_tol=1e-9, abs_tol=1e-6):
        raise PairPlanError(f"{PLANNED} says {stated_cycles.value.data:,.2f} cycles, but the plan takes "
                            f"{score.cycles:,.2f} on {device.name} under {cost.name}")
    return scored


__all__ = [
    "PLANNED",
    "PairDecision",
    "PairPlanError",
    "PartitionGradPair",
    "SUMMARY_ATTR",
    "UNFUSED_ATTR",
    "check_pair",
    "pair_spec_of",
    "plan_pairs",
    "decide_fusion",
    "stated_plan",
    "unfuse",
]
