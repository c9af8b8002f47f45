"""The planner's view (``OpSpec``) of a bound tensor expression, for compute-shift lowering.

The kind classification and the axis/tensor structure are the planner's own
(``irc.plans.from_te.op_spec_from_expr``), so the compute-shift program is costed
exactly as the plan it implements: constant indices, windows, merged read indices and
a gather's table (held whole along its indexed dims) are described there and lowered by
``irc.schedule.kernel``. This module adds what the lowering cannot do: an index read
from another tensor anywhere but a gather's table read is rejected with
``UnsupportedExpression``, as is everything the adapter raises ``SpecError`` for (its
message, e.g. a merged output index, is the reason).
"""

from __future__ import annotations

from irc.dialects.te_expr import AffineIndex, BoundExpr, gather_parts, walk_accesses
from irc.plans import OpSpec, SpecError
from irc.plans.from_te import op_spec_from_expr


class UnsupportedExpression(ValueError):
    """A tensor expression the compute-shift lowering cannot partition."""


def op_spec_from_bound(bound: BoundExpr, dtype_bytes: int, tensor_bytes: dict[str, int] | None = None) -> OpSpec:
    """The ``OpSpec`` of ``bound`` (tensors: output first, then inputs in operand order;
    ``tensor_bytes`` for tensors whose elements are not the output's size)."""
    expr = bound.expr
    if gather_parts(expr) is None:
        for access in (expr.output, *walk_accesses(expr.body)):
            for index in access.indices:
                if not isinstance(index, AffineIndex):
                    raise UnsupportedExpression(
                        f"index '{index}' of {access.tensor} is read from another tensor outside a gather's "
                        "table read; compute-shift lowering supports affine indices there only"
                    )
    try:
        return op_spec_from_expr(bound, dtype_bytes, tensor_bytes=tensor_bytes)
    except SpecError as error:
        raise UnsupportedExpression(str(error)) from None
