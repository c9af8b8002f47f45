"""The adapter from the te dialect's parsed expressions to the planner's `OpSpec`.

T10 §4.2 describes an operator to the planner by its axes, the axes indexing each
tensor dimension, and its kind (which per-step cost formula prices its sub-task;
IPU_COST_FACTS §2). `op_spec_from_expr` reads all three off a `BoundExpr`:

- axes and extents in `BoundExpr.extents` order (output axes first, then reduction
  axes), tensors output first and then the inputs in operand order;
- each dimension lists the axes of its affine index; an axis with coefficient ``c``
  is listed ``|c|`` times (once when its extent is 1: it only takes the value 0).
  The planner sizes a dimension as "sum of its listed axes' spans minus (listed - 1)",
  which with this multiset reading is exactly the contiguous range the index covers,
  ``sum |c| * (span - 1) + 1``: ``h+r`` gives ``("h", "r")`` (T10 §5 "compound
  axis"), the strided window ``2*h+r`` gives ``("h", "h", "r")`` and the row-major
  merged read ``16*o2+o3`` (ONNX Reshape) gives ``("o2",) * 16 + ("o3",)``, so the
  planner's memory, shift bytes and relayout sizes are the partition the compute-shift
  kernel really holds (`irc.schedule.geometry`: a partition of a dimension is the
  contiguous range of its index over the partition's axis ranges);
- a dimension indexed by a constant (``A[0,m,k]``, a broadcast ``B[0,0,d]``) is no
  dimension of the plan: every partition holds the one slice at that constant, so
  it is dropped from the `TensorSpec` (a tensor indexed only by constants has no
  dims: every core holds the same elements);
- a window ``Y[i] = X[i+2] where i in 4`` (an axis bound by ``where`` reading part of
  a larger dimension) needs nothing special: the axis' extent is the binding and the
  partitions are ranges of the index, offset by its constant;
- the kind from the expression's structure (see `classify`);
- the reduction axes no plan may pad, because their padded points (loads pad with
  zeros) would change the fold (`fold_changing_axes`; ``OpSpec.unpadded_axes``).

A gather ``Y[i,j] = E[I[i],j]`` (kind ``gather``) is partitioned over the index tensor's
axes and the table's other dims: the dims indexed by the index values are held whole by
every partition (``TensorSpec.whole``), so the table is resident on the cores (or
rotates along its other axes), never cut by rows.

What the planner or the compute-shift lowering cannot describe raises `SpecError`
with the reason (the op then runs on the host): an index read from another tensor
anywhere but a gather's table read, an output dimension whose index combines several axes
of extent > 1 (a merged ``Y[4*i+j]`` or summed ``Y[h+r]`` write: one core's
partition of it is not a block that its store can write without overwriting the
neighbours' elements), a tensor read with two different index patterns, or an
expression node this adapter does not know (the expression language grows).
"""

from __future__ import annotations

from collections.abc import Sequence

from irc.dialects.te_expr import Access, AffineIndex, Binary, BoundExpr, Call, Const, IndirectIndex, gather_parts, walk_nodes
from irc.plans.errors import SpecError
from irc.plans.spec import OpSpec, TensorSpec


def _walk(node):
    """Every node of a body, refusing node types the adapter does not know; the reads
    inside an indirect index (``I[i]`` of ``E[I[i],j]``) follow their access. Iterative
    (`walk_nodes`), so any depth of body works."""
    for found in walk_nodes(node):
        if not isinstance(found, (Access, Const, Call, Binary)):
            raise SpecError(
                f"the planner cannot describe a {type(found).__name__} node ({found}) of a tensor expression"
            )
        yield found


def _product_factors(node) -> list | None:
    """The leaves of a pure product (reads and constants), or None. A read widened by
    ``cast`` is a factor too: an INT8 matmul accumulating in INT32 multiplies
    ``cast(A[m,k]) * cast(B[k,n])`` (seeds/001 s3.1.2)."""
    if isinstance(node, Binary) and node.op == "*":
        left, right = _product_factors(node.lhs), _product_factors(node.rhs)
        return None if left is None or right is None else left + right
    if isinstance(node, (Access, Const)):
        return [node]
    if isinstance(node, Call) and node.function == "cast" and len(node.args) == 1 and isinstance(node.args[0], Access):
        return [node.args[0]]
    return None


ZERO_PRESERVING = frozenset(
    {"cast", "relu", "neg", "abs", "tanh", "erf", "gelu", "sqrt", "sign", "floor", "ceil", "round"}
)
"""Functions with ``f(0) = 0`` that are finite on finite inputs: applied to a read that
loads a padded zero, they still give zero."""


def _zero_preserving_read(node) -> Access | None:
    """The read under a chain of zero-preserving functions (``cast(A[k])``,
    ``relu(-A[k])``, ``A[k] / 4``), or None: the node is zero wherever that read is."""
    while True:
        if isinstance(node, Access):
            return node
        if isinstance(node, Call) and node.function in ZERO_PRESERVING and len(node.args) == 1:
            node = node.args[0]
        elif isinstance(node, Binary) and node.op == "/" and isinstance(node.rhs, Const) and node.rhs.value != 0:
            node = node.lhs
        else:
            return None


def fold_changing_axes(bound: BoundExpr) -> tuple[str, ...]:
    """The reduction axes whose padded points would change the fold (`OpSpec.unpadded_axes`).

    A load pads a partition past its tensor's extent with zeros, so a padded point of a
    reduction axis ``k`` adds nothing to a ``+=`` when the body is a product whose
    factors are constants and zero-preserving functions of reads (`ZERO_PRESERVING`:
    finite wherever their read is), one of which reads ``k`` alone in a dimension of
    exactly ``k``'s extent (``cast(A[m,k]) * 0.5``, ``relu(X[i,k]) * W[k,j]``): that
    factor is zero there. Every other reduction axis is fold-changing: ``+= exp(X[k])``
    (``exp(0) = 1``), ``+= (X[k] - M) * (X[k] - M)``, a window of a larger dimension
    (the padded points read real elements), every ``max=``/``min=`` fold (a zero may
    exceed every element).
    """
    expr = bound.expr
    reductions = expr.reduction_axes
    if not reductions:
        return ()
    if expr.combiner != "+=":
        return tuple(reductions)
    factors, stack = [], [expr.body]
    while stack:
        node = stack.pop()
        if isinstance(node, Binary) and node.op == "*":
            stack += [node.lhs, node.rhs]
        else:
            factors.append(node)
    reads = [_zero_preserving_read(f) for f in factors if not isinstance(f, Const)]
    if any(read is None for read in reads):
        return tuple(reductions)
    extents = dict(bound.extents)

    def zeroes(axis: str) -> bool:
        return any(
            getattr(index, "simple_axis", None) == axis and bound.shapes[read.tensor][position] == extents[axis]
            for read in reads for position, index in enumerate(read.indices)
        )

    return tuple(axis for axis in reductions if not zeroes(axis))


MAX_COEFFICIENT = 4096
"""Largest stride of an index term the planner describes (it lists the axis that often)."""


def _dims(
    access: Access, extents: dict[str, int], is_output: bool = False, shape: tuple[int, ...] | None = None,
) -> tuple[tuple[str, ...], ...]:
    """The planner dims of one access (module docstring): constant dims dropped, an axis
    listed once per unit of its coefficient. With ``shape``, dims indexed by another
    tensor's values (a gather's table) are held whole and left out too."""
    dims = []
    for position, index in enumerate(access.indices):
        if isinstance(index, IndirectIndex) and shape is not None:
            continue
        if not isinstance(index, AffineIndex):
            raise SpecError(
                f"dimension {position} of {access.tensor} is indexed by {index}, which is not "
                f"an affine index of axes; the planner cannot partition it"
            )
        if not index.axes:
            continue  # the slice at a constant: not a dimension of the plan
        varying = [(axis, coeff) for axis, coeff in index.terms if extents[axis] > 1]
        if is_output and (len(varying) > 1 or any(coeff != 1 for _, coeff in varying)):
            axes = ", ".join(f"{axis} (extent {extents[axis]})" for axis, _ in varying)
            raise SpecError(
                f"output dimension {position} of {access.tensor} is indexed by '{index}', which "
                f"combines the axes {axes}: a core's partition of it is not a block of "
                f"{access.tensor}, so storing it would overwrite other cores' elements"
            )
        dim: list[str] = []
        for axis, coeff in index.terms:
            if extents[axis] > 1 and abs(coeff) > MAX_COEFFICIENT:
                raise SpecError(
                    f"dimension {position} of {access.tensor} steps {abs(coeff)} elements per step of {axis}; "
                    f"the planner describes strides up to {MAX_COEFFICIENT}"
                )
            dim.extend([axis] * (abs(coeff) if extents[axis] > 1 else 1))
        dims.append(tuple(dim))
    return tuple(dims)


def _is_plain(index) -> bool:
    """An index that is one axis (``k``) or a constant (``0``): a plain or sliced read."""
    return isinstance(index, AffineIndex) and (index.simple_axis is not None or not index.terms)


def _is_simple(access: Access) -> bool:
    """Every index of ``access`` is plain (`_is_plain`)."""
    return all(_is_plain(i) for i in access.indices)


def _compound_reduction(access: Access, reductions: set[str]) -> bool:
    """True when a dimension mixes a reduction axis with an output axis (a window,
    ``h+r``); a merge of reduction axes alone (``16*k1+k2``) is no window."""
    return any(
        len(index.axes) > 1 and reductions & set(index.axes) and set(index.axes) - reductions
        for index in access.indices
    )


def classify(bound: BoundExpr) -> str:
    """The operator kind of `irc.cost.KINDS` that prices this expression.

    - ``matmul``: ``+=`` of a product of two plainly indexed tensors (and constants)
      whose reduction axes index both (a plain index is one axis or a constant);
    - ``conv``: ``+=`` of a product of two tensors where a dimension of one mixes a
      reduction axis into a spatial index (``X[n,c,h+r,w+s] * W[f,c,r,s]``);
    - ``pool``: a fold (``+=``/``max=``/``min=``) over one tensor with such a window;
    - ``reduce``: any other fold over one tensor;
    - ``gather``: ``=`` of one read of a table at rows another tensor's values give
      (``Y[i,j] = E[I[i],j]``, `gather_parts`);
    - ``unary`` / ``elementwise``: ``=`` of plain reads of one / several tensors;
    - ``other``: everything else (shifted writes or reads, three-way products, ...).
    """
    expr = bound.expr
    reductions = set(expr.reduction_axes)
    accesses = [node for node in _walk(expr.body) if isinstance(node, Access)]
    tensors = list(dict.fromkeys(a.tensor for a in accesses))
    if gather_parts(expr) is not None:
        return "gather"
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
    bound: BoundExpr, dtype_bytes: int, axis_order: Sequence[str] | None = None,
    tensor_bytes: dict[str, int] | None = None,
) -> OpSpec:
    """The planner's description of a bound tensor expression (raises `SpecError`).

    Axes are listed in `bound.extents` order (the order `rtensor.op`'s ``F_op`` uses)
    unless `axis_order` gives a permutation of them (`reading_order` for seed 003's
    output format). ``dtype_bytes`` is the output's element size; ``tensor_bytes`` gives
    any tensor whose elements differ (a cast's input, a comparison's operands).
    """
    sizes = {name: int(b) for name, b in (tensor_bytes or {}).items() if int(b) != int(dtype_bytes)}
    try:
        expr = bound.expr
        extents = dict(bound.extents)
        order = tuple(extents) if axis_order is None else tuple(axis_order)
        if sorted(order) != sorted(extents):
            raise SpecError(
                f"axis order {list(order)} is not a permutation of the axes {list(extents)}"
            )
        accesses = [node for node in _walk(expr.body) if isinstance(node, Access)]
        tensors = [TensorSpec(expr.output.tensor, _dims(expr.output, extents, is_output=True),
                              sizes.get(expr.output.tensor))]
        gather = gather_parts(expr)
        for name in expr.inputs:
            reads = [a for a in accesses if a.tensor == name]
            if gather is not None and name == gather[0].tensor:
                whole = tuple(size for index, size in zip(gather[0].indices, bound.shapes[name])
                              if isinstance(index, IndirectIndex))
                tensors.append(TensorSpec(name, _dims(reads[0], extents, shape=bound.shapes[name]),
                                          sizes.get(name), whole))
                continue
            patterns = {a.indices for a in reads}
            if len(patterns) > 1:
                listing = ", ".join(sorted(str(a) for a in dict.fromkeys(reads)))
                raise SpecError(
                    f"tensor {name} is read with {len(patterns)} different index patterns "
                    f"({listing}); the planner gives each tensor one layout"
                )
            tensors.append(TensorSpec(name, _dims(reads[0], extents), sizes.get(name)))
        return OpSpec(
            axes=tuple((axis, int(extents[axis])) for axis in order),
            tensors=tuple(tensors),
            reduction_axes=tuple(expr.reduction_axes),
            kind=classify(bound),
            dtype_bytes=int(dtype_bytes),
            combiner=expr.combiner,
            unpadded_axes=fold_changing_axes(bound),
        )
    except SpecError:
        raise
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as error:
        # A construct of a newer expression language this adapter does not know.
        raise SpecError(
            f"the planner cannot describe '{getattr(bound, 'expr', bound)}': {error}"
        ) from None


__all__ = ["ZERO_PRESERVING", "classify", "fold_changing_axes", "op_spec_from_expr", "reading_order"]
