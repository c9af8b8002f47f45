"""`rtensor-to-shift`: each planned `rtensor.op` becomes a `shift.kernel` with its rings.

Seed 003 s3.2 / T10 s4.2: an rTensor plan (``F_op`` on the op, ``f_t`` in each tensor's
``!rtensor.tensor`` type) is a compute-shift program once its rings are stated. This pass
rewrites

    %a1 = rtensor.relayout %a : tensor<...> -> !rtensor.tensor<...>
    %c1 = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a1, %b1) F_op = array<i64: ...> : ...
    %c  = rtensor.relayout %c1 : !rtensor.tensor<...> -> tensor<...>

into

    %c = shift.kernel "C[m,n] += A[m,k] * B[k,n]" (%a, %b) {grid = array<i64: ...>, ...} : ... {
      shift.ring "C" {temporal = array<i64: ...>}   // f_t per op axis, one ring op per tensor
      ...
    }

An `rtensor.grad_pair` (a layer's two gradients under one plan) becomes one kernel of
two products: both expressions, both results, dY, W and X as its operands and one ring
per tensor from the pair's plan, so that the loop nest `rotation-align` gives it rotates
dY once per step for both gradients (`irc.planner.igo_pair`).

`rotation-align` then adds the loop nest. The relayouts disappear at this level: a
kernel reads the values its operands were relayouted from, and the layouts they need
are the kernels' own (their rings). `shift-to-device` turns each producer -> consumer
edge between two kernels into an on-chip ``device.relayout`` priced as the planner's
relayout, and touches the host only at the function's edges.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import DiagnosticException

from irc.diagnostics import location_of
from irc.dialects.rtensor import IDLE_ATTR, GradPairOp, RelayoutOp, RTensorOp
from irc.dialects.shift import KernelOp, RingOp
from irc.lowering.igo_pair_partition import stated_plan
from irc.lowering.te_to_rtensor import PRELOAD_ATTR
from irc.planner.relayout_sharing import HELD_ATTR, SHARED_ATTR
from irc.target import TargetError, chip_cost_of, require_target


def kernel_op_for(expressions, inputs, result_types, plan) -> KernelOp:
    """A `shift.kernel` of one expression (or several products, one result each) stating
    ``plan``'s rings (F_op as grid, one ring per tensor)."""
    kernel = KernelOp(expressions, inputs, result_types, plan.op_factors)
    for name, factors in plan.temporal_factors.items():
        kernel.body.block.add_op(RingOp(name, factors))
    return kernel


@dataclass
class LowerToHost(RewritePattern):
    """Walking in program order: relayouts resolve to the host tensor holding their data;
    an rtensor.op becomes a shift.kernel reading and writing host tensors."""

    host: dict = field(default_factory=dict)

    def host_of(self, value, op):
        if isinstance(value.type, TensorType):
            return value
        if value in self.host:
            return self.host[value]
        raise DiagnosticException(
            f"{location_of(op)}: error: '{op.name}' op operand of type {value.type} comes from "
            "neither a relayout nor a planned operator"
        )

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, GradPairOp):
            self.lower_pair(op, rewriter)
        elif isinstance(op, RelayoutOp):
            host = self.host_of(op.source, op)
            if isinstance(op.result.type, TensorType):
                rewriter.replace(op, [], [host])
            else:
                self.host[op.result] = host
                if not op.result.uses:
                    rewriter.erase(op)
        elif isinstance(op, RTensorOp):
            plan = op.plan()
            expr = op.bound().expr
            plan = type(plan)(plan.axes, plan.op_factors,
                              {t: plan.temporal_factors[t] for t in (expr.output.tensor, *expr.inputs)})
            kernel = kernel_op_for(
                op.expression.text, [self.host_of(v, op) for v in op.inputs],
                op.output.type.with_global(), plan,
            )
            if IDLE_ATTR in op.attributes:  # where its weights rest between uses (model-wide plan)
                kernel.attributes[IDLE_ATTR] = op.attributes[IDLE_ATTR]
            for name in (PRELOAD_ATTR, HELD_ATTR, SHARED_ATTR):   # its place in an ELK plan (preload order,
                if name in op.attributes:                          # frontier, relayouts shared)
                    kernel.attributes[name] = op.attributes[name]
            kernel.location = op.location
            kernel.output.name_hint = op.output.name_hint
            rewriter.insert(kernel, InsertPoint.before(op))
            self.host[op.output] = kernel.output


    def lower_pair(self, op, rewriter: PatternRewriter) -> None:
        """One kernel computing both gradients of a fused pair (module docstring)."""
        dx, dw = op.dx_expression.expr, op.dw_expression.expr
        values = dict(zip(dx.inputs, op.operands_of_dx()))
        values.update(zip(dw.inputs, op.operands_of_dw()))
        operands = list(dict.fromkeys([*dx.inputs, *dw.inputs]))
        plan = stated_plan(op)
        tensors = [dx.output.tensor, dw.output.tensor, *operands]   # rings: results first, then operands
        plan = type(plan)(plan.axes, plan.op_factors, {t: plan.temporal_factors[t] for t in tensors})
        kernel = kernel_op_for([op.dx_expression.text, op.dw_expression.text],
                               [self.host_of(values[name], op) for name in operands],
                               [op.dx.type.with_global(), op.dw.type.with_global()], plan)
        kernel.location = op.location
        rewriter.insert(kernel, InsertPoint.before(op))
        for result, lowered in zip((op.dx, op.dw), kernel.outputs):
            lowered.name_hint = result.name_hint
            self.host[result] = lowered


class EraseDeadRTensor(RewritePattern):
    """An rtensor.op or on-chip relayout left without users once everything reads host tensors."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, (RelayoutOp, RTensorOp, GradPairOp)) and all(not r.uses for r in op.results):
            rewriter.erase(op)


@dataclass(frozen=True)
class RTensorToShift(ModulePass):
    """``rtensor-to-shift``: rtensor.op -> shift.kernel (rings); relayouts -> host tensors."""

    name = "rtensor-to-shift"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for planned in op.walk():
            if isinstance(planned, (RTensorOp, GradPairOp)):
                try:
                    chip_cost_of(require_target(planned))
                except TargetError as error:
                    raise DiagnosticException(f"{location_of(planned)}: error: '{planned.name}' op {error}") from None
        PatternRewriteWalker(LowerToHost(), apply_recursively=False, walk_reverse=False).rewrite_module(op)
        PatternRewriteWalker(EraseDeadRTensor(), walk_reverse=True).rewrite_module(op)
