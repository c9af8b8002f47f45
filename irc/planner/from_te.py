"""The adapter from the te dialect's parsed expressions to the planner's `OpSpec`.

T10 §4.2 describes an operator to the planner by its axes, the axes indexing each
tensor dimension, and its kind (which per-step cost formula prices its sub-task;
IPU_COST_FACTS §2). `op_spec_from_expr` reads all three off a `BoundExpr`:

- axes and extents in `BoundExpr.extents` order (output axes first, then reduction
  axes), tensors output first and then the inputs in operand order;
- each dimension lists the axes of its affine index (``h+r`` gives ``("h", "r")``,
  T10 §5 "compound axis"; coefficients and offsets only change the halo);
- the kind from the expression's structure (see `classify`).

Anything the planner cannot describe - a dimension indexed by a constant, a tensor
read with two different index patterns, or an expression node this adapter does not
know (the expression language grows) - raises `SpecError` with the reason.
"""

from __future__ import annotations

from collections.abc import Sequence

from dialects.te_expr import Access, AffineIndex, Binary, BoundExpr, Call, Const
from irc.planner.errors import SpecError
from irc.planner.spec import OpSpec, TensorSpec


def _walk(node):
    """Every node of a body, refusing node types the adapter does not know; the reads
    inside an indirect index (``I[i]`` of ``E[I[i],j]``) follow their access."""
    if isinstance(node, Access):
        yield node
        for index in node.indices:
            inner = getattr(index, "access", None)
            if isinstance(inner, Access):
                yield from _walk(inner)
    elif isinstance(node, Const):
        yield node
    elif isinstance(node, Call):
        yield node
        for arg in node.args:
            yield from _walk(arg)
    elif isinstance(node, Binary):
        yield node
        yield from _walk(node.lhs)
        yield from _walk(node.rhs)
    else:
        raise SpecError(
            f"the planner cannot describe a {type(node).__name__} node ({node}) of a tensor expression"
        )


def _product_factors(node) -> list | None:
    """The leaves of a pure product (reads and constants), or None."""
    if isinstance(node, Binary) and node.op == "*":
        left, right = _product_factors(node.lhs), _product_factors(node.rhs)
        return None if left is None or right is None else left + right
    if isinstance(node, (Access, Const)):
        return [node]
    return None


def _dims(access: Access) -> tuple[tuple[str, ...], ...]:
    dims = []
    for position, index in enumerate(access.indices):
        if not isinstance(index, AffineIndex):
            raise SpecError(
                f"dimension {position} of {access.tensor} is indexed by {index}, which is not "
                f"an affine index of axes; the planner cannot partition it"
            )
        if not index.axes:
            raise SpecError(
                f"dimension {position} of {access.tensor} is indexed by the constant {index}; "
                f"the planner needs every dimension indexed by an axis"
            )
        dims.append(index.axes)
    return tuple(dims)


def _is_simple(access: Access) -> bool:
    return all(isinstance(i, AffineIndex) and i.simple_axis is not None for i in access.indices)


def _compound_reduction(access: Access, reductions: set[str]) -> bool:
    """True when a dimension mixes several axes, one of them a reduction axis (a window)."""
    return any(len(index.axes) > 1 and reductions & set(index.axes) for index in access.indices)


def classify(bound: BoundExpr) -> str:
    """The operator kind of `irc.cost.KINDS` that prices this expression.

    - ``matmul``: ``+=`` of a product of two plainly indexed tensors (and constants)
      whose reduction axes index both;
    - ``conv``: ``+=`` of a product of two tensors where a dimension of one mixes a
      reduction axis into a spatial index (``X[n,c,h+r,w+s] * W[f,c,r,s]``);
    - ``pool``: a fold (``+=``/``max=``/``min=``) over one tensor with such a window;
    - ``reduce``: any other fold over one tensor;
    - ``unary`` / ``elementwise``: ``=`` of plain reads of one / several tensors;
    - ``other``: everything else (shifted writes or reads, three-way products, ...).
    """
    expr = bound.expr
    reductions = set(expr.reduction_axes)
    accesses = [node for node in _walk(expr.body) if isinstance(node, Access)]
    tensors = list(dict.fromkeys(a.tensor for a in accesses))
    if expr.combiner == "=":
        plain = _is_simple(expr.output) and all(_is_simple(a) for a in accesses)
        if not plain or not tensors:
            return "other"
        return "unary" if len(tensors) == 1 else "elementwise"
    if len(tensors) == 1:
        return "pool" if _compound_reduction(accesses[0], reductions) else "reduce"
    factors = _product_factors(expr.body)
    reads = [f for f in factors or () if isinstance(f, Access)]
    if expr.combiner != "+=" or factors is None or len(reads) != 2 or len(tensors) != 2:
        return "other"
    first, second = reads
    if _compound_reduction(first, reductions) or _compound_reduction(second, reductions):
        return "conv"
    if _is_simple(first) and _is_simple(second) and all(
        axis in first.axes and axis in second.axes for axis in reductions
    ):
        return "matmul"
    return "other"


def reading_order(bound: BoundExpr) -> tuple[str, ...]:
    """Axes in order of first appearance in the inputs, then the output: the order of
    seed 003's output format (``C[m,n] += A[m,k] * B[k,n]`` gives m, k, n)."""
    expr = bound.expr
    names = [a for node in _walk(expr.body) if isinstance(node, Access) for a in node.axes]
    names += list(expr.output.axes) + [axis for axis, _ in bound.extents]
    return tuple(dict.fromkeys(names))


def op_spec_from_expr(
    bound: BoundExpr, dtype_bytes: int, axis_order: Sequence[str] | None = None
) -> OpSpec:
    """The planner's description of a bound tensor expression (raises `SpecError`).

    Axes are listed in `bound.extents` order (the order `rtensor.op`'s ``F_op`` uses)
    unless `axis_order` gives a permutation of them (`reading_order` for seed 003's
    output format).
    """
    try:
        expr = bound.expr
        extents = dict(bound.extents)
        order = tuple(extents) if axis_order is None else tuple(axis_order)
        if sorted(order) != sorted(extents):
            raise SpecError(
                f"axis order {list(order)} is not a permutation of the axes {list(extents)}"
            )
        accesses = [node for node in _walk(expr.body) if isinstance(node, Access)]
        tensors = [TensorSpec(expr.output.tensor, _dims(expr.output))]
        for name in expr.inputs:
            reads = [a for a in accesses if a.tensor == name]
            patterns = {a.indices for a in reads}
            if len(patterns) > 1:
                listing = ", ".join(sorted(str(a) for a in dict.fromkeys(reads)))
                raise SpecError(
                    f"tensor {name} is read with {len(patterns)} different index patterns "
                    f"({listing}); the planner gives each tensor one layout"
                )
            tensors.append(TensorSpec(name, _dims(reads[0])))
        return OpSpec(
            axes=tuple((axis, int(extents[axis])) for axis in order),
            tensors=tuple(tensors),
            reduction_axes=tuple(expr.reduction_axes),
            kind=classify(bound),
            dtype_bytes=int(dtype_bytes),
        )
    except SpecError:
        raise
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as error:
        # A construct of a newer expression language this adapter does not know.
        raise SpecError(
            f"the planner cannot describe '{getattr(bound, 'expr', bound)}': {error}"
        ) from None


__all__ = ["classify", "op_spec_from_expr", "reading_order"]
