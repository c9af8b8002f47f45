"""`rtensor-partition`: give every `te.op` a compute-shift plan (T10 §4.3, §4.3.1).

Rewrites each ``te.op`` into an ``rtensor.op`` whose ``F_op`` and operand/result
layouts (``!rtensor.tensor`` types) are the fastest plan that fits on the device
under the cost model (``irc.planner.search``: the intra-operator search of T10
§4.3.1 over the constrained space of §4.2). Data enters and leaves the chip through
``rtensor.relayout`` ops, so function signatures keep builtin tensor types:

    %c = te.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) : (...) -> tensor<...>

becomes

    %a1 = rtensor.relayout %a : tensor<...> -> !rtensor.tensor<..., fs=[...], ft=[...]>
    %b1 = rtensor.relayout %b : ...
    %c1 = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a1, %b1) F_op = [...] on "ipu-mk2" cost "t10" : ...
    %c  = rtensor.relayout %c1 : !rtensor.tensor<...> -> tensor<...>

A value produced by one ``rtensor.op`` and consumed by another goes straight from
one to the other when their layouts agree, and through one on-chip
``rtensor.relayout`` when they differ (T10 §4.3.2's layout change between operators).

``mode=op`` (the default) plans each operator on its own; the model-wide trade-off of
T10 §4.3.2 (Algorithm 1) is ``mode=model``, not available yet. An operator no plan
fits is an error naming the op and the least memory per core any plan needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from dialects.rtensor import RelayoutOp, RTensorOp, RTensorType, element_bytes, layout_types
from dialects.te import TensorOp
from dialects.te_expr import ExprError
from irc.diagnostics import location_of

MODES = ("op",)
"""Planning modes implemented so far (``model`` is T10 §4.3.2's model-wide trade-off)."""


def _error(op: Operation, message: str) -> DiagnosticException:
    return DiagnosticException(f"{location_of(op)}: error: '{op.name}' op {message}")


def plan_tensor_op(op: TensorOp, device, cost, cache: dict):
    """The bound expression of `op` and its fastest fitting scored plan.

    Raises a located `DiagnosticException` when the planner cannot describe the op or
    no plan fits (naming the least memory per core any plan needs). `cache` maps
    `OpSpec`s to results: a model repeats its operators.
    """
    from irc.planner import PlanError, SpecError, search
    from irc.planner.from_te import op_spec_from_expr

    text = op.expression.data
    try:
        bound = op.bound()
    except ExprError as error:
        raise _error(op, f"'{text}': {error.message}") from None
    element = op.output.type.get_element_type()  # type: ignore[union-attr]
    try:
        spec = op_spec_from_expr(bound, element_bytes(element))
    except (SpecError, VerifyException) as error:
        raise _error(op, f'"{text}": the planner cannot describe it: {error}') from None
    if spec not in cache:
        try:
            cache[spec] = search(spec, device, cost).best
        except PlanError as error:
            cache[spec] = error
    found = cache[spec]
    if isinstance(found, PlanError):
        raise _error(op, f'"{text}" on {device.name}: {found}')
    return bound, found


@dataclass
class PartitionTensorOp(RewritePattern):
    """One ``te.op`` -> relayouts onto the chip + ``rtensor.op`` + a relayout back."""

    device: object
    cost: object
    plans: dict[TensorOp, tuple] = field(default_factory=dict)
    """The bound expression and plan of each te.op, found before rewriting."""

    @staticmethod
    def _on_chip(value: SSAValue, want: RTensorType, op: Operation, rewriter: PatternRewriter) -> SSAValue:
        """`value` in layout `want`, reusing an rtensor producer when there is one."""
        producer = value.owner
        if isinstance(producer, RelayoutOp) and isinstance(producer.source.type, RTensorType):
            value = producer.source
            if value.type == want:
                return value
        relayout = RelayoutOp(value, want)
        rewriter.insert(relayout, InsertPoint.before(op))
        return relayout.result

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TensorOp, rewriter: PatternRewriter) -> None:
        if op not in self.plans:
            return
        bound, plan = self.plans[op]
        result_type = op.output.type
        assert isinstance(result_type, TensorType)
        element = result_type.get_element_type()
        layouts = layout_types(bound, plan, element)
        expr = bound.expr
        inputs = [
            self._on_chip(value, layouts[name], op, rewriter)
            for name, value in zip(expr.inputs, op.inputs)
        ]
        planned = RTensorOp(
            op.expression.data,
            inputs,
            layouts[expr.output.tensor],
            plan.op_factors,
            self.device.name,
            self.cost.name,
            attributes=dict(op.attributes),
        )
        back = RelayoutOp(planned.output, result_type)
        rewriter.replace(op, [planned, back], [back.result])


class EraseUnusedRelayout(RewritePattern):
    """A relayout nobody reads (left behind when its consumer took the rtensor value)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: RelayoutOp, rewriter: PatternRewriter) -> None:
        if not op.result.uses:
            rewriter.erase(op)


@dataclass(frozen=True)
class RTensorPartition(ModulePass):
    """Plan every te.op: ``rtensor-partition{device=ipu-mk2 cost=t10 mode=op}``."""

    name = "rtensor-partition"

    device: str = "ipu-mk2"
    cost: str = "t10"
    mode: str = "op"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from irc.cost import CostModelError, get_cost_model
        from irc.devices import DeviceError, load_device

        if self.mode not in MODES:
            raise DiagnosticException(
                f"rtensor-partition: mode={self.mode} is not available yet; "
                f"known modes: {', '.join(MODES)} (model-wide planning, T10 §4.3.2, is future work)"
            )
        try:
            device = load_device(self.device)
            cost = get_cost_model(self.cost)
        except (DeviceError, CostModelError) as error:
            raise DiagnosticException(f"rtensor-partition: {error}") from None
        # Plan every op first, so that a failure is one diagnostic on untouched IR.
        cache: dict = {}
        plans = {
            te_op: plan_tensor_op(te_op, device, cost, cache)
            for te_op in op.walk()
            if isinstance(te_op, TensorOp)
        }
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [PartitionTensorOp(device, cost, plans), EraseUnusedRelayout()]
            ),
        ).rewrite_module(op)
