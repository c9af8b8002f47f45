"""The planner's view (``OpSpec``) of a bound tensor expression, for compute-shift lowering.

The kind classification and the axis/tensor structure are the planner's own
(``irc.planner.from_te.op_spec_from_expr``), so the compute-shift program is costed
exactly as the plan it implements: constant indices, windows and merged read indices
are described there and lowered by ``irc.schedule.kernel``. This module adds what the
lowering cannot do: indices read from another tensor (gathers) are rejected with
``UnsupportedExpression``, as is everything the adapter raises ``SpecError`` for (its
message, e.g. a merged output index, is the reason).
"""

from __future__ import annotations

from irc.dialects.te_expr import AffineIndex, BoundExpr, walk_accesses
from irc.planner import OpSpec, SpecError


class UnsupportedExpression(ValueError):
    """A tensor expression the compute-shift lowering cannot partition."""


def op_spec_from_bound(bound: BoundExpr, dtype_bytes: int, tensor_bytes: dict[str, int] | None = None) -> OpSpec:
    """The ``OpSpec`` of ``bound`` (tensors: output first, then inputs in operand order;
    ``tensor_bytes`` for tensors whose elements are not the output's size)."""
    from irc.planner.from_te import op_spec_from_expr

    expr = bound.expr
    for access in (expr.output, *walk_accesses(expr.body)):
        for index in access.indices:
            if not isinstance(index, AffineIndex):
                raise UnsupportedExpression(
                    f"index '{index}' of {access.tensor} is read from another tensor (a gather); "
                    "compute-shift lowering supports affine indices only"
                )
    try:
        return op_spec_from_expr(bound, dtype_bytes, tensor_bytes=tensor_bytes)
    except SpecError as error:
        raise UnsupportedExpression(str(error)) from None
