"""`rotation-align`: give every `shift.kernel` its aligned compute-shift loop nest.

Rewrites a kernel that only states its rings (``shift.ring`` per tensor: f_t per axis)
into the same kernel with the loop nest of seed 003 s3.2 ("Aligning the rotations",
"Sub-operator scheduling") and T10 s4.2/s4.4:

- steps per axis = the largest temporal factor on it; the factors on an axis must divide
  one another, and are peeled into one ``shift.loop`` per distinct pace, so a tensor with
  a smaller factor rotates only at the coarser loop, every ``steps / f_t`` steps;
- loop order: the planner's (T10 s4.4: the smaller tensor's shifts inside, where they
  run more often - generalised to "costlier shift step outside");
- initial placement: per-core start digits such that the partitions a core's sub-task
  needs are on that core at every step (``irc.schedule.placement``).

A kernel whose paces cannot be aligned is an error naming the axis and the factors.
Kernels that already have loops are checked, not changed.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern
from xdsl.utils.exceptions import DiagnosticException

from irc.diagnostics import location_of
from irc.dialects.shift import KernelOp
from irc.lowering.shift_ir import KernelIRError, build_for, kernel_of, write_loops


def _error(op, message: str) -> DiagnosticException:
    return DiagnosticException(f"{location_of(op)}: error: '{op.name}' op {message}")


class AlignKernel(RewritePattern):
    """shift.kernel with rings only -> shift.kernel with rings + aligned loops + compute."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: KernelOp, rewriter: PatternRewriter) -> None:
        try:
            if op.loops() or op.has_compute():
                kernel_of(op)
                return
            kernel = build_for(op)
        except KernelIRError as error:
            raise _error(op, str(error)) from None
        write_loops(op, kernel)
        rewriter.handle_operation_modification(op)


@dataclass(frozen=True)
class RotationAlign(ModulePass):
    """``rotation-align``: rings -> aligned loop nest with initial placement."""

    name = "rotation-align"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(AlignKernel(), apply_recursively=False).rewrite_module(op)
