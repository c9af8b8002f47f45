"""`example-annotate-points`: tag every `te.op` with the size of its iteration space.

Rewrites ``te.op "..."`` into the same op with ``{example.points = N : i64}``, where N
is the product of its axis extents, read from irc's parsed tensor-expression form.
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from irc.dialects.te import TensorOp


@dataclass
class _Annotate(RewritePattern):
    attribute: str

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TensorOp, rewriter: PatternRewriter) -> None:
        if self.attribute in op.attributes:
            return
        op.attributes[self.attribute] = IntegerAttr(op.bound().iteration_points, i64)
        rewriter.notify_op_modified(op)


@dataclass(frozen=True)
class AnnotateIterationPoints(ModulePass):
    name = "example-annotate-points"

    attribute: str = "example.points"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(_Annotate(self.attribute)).rewrite_module(op)
