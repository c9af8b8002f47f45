"""A function's te ops read as a graph, for the model-wide planner's adapter.

Which arguments are weights (``irc.weight``), which te ops only move data and run as
layout changes between their producer and their readers (`absorbed_movements`), what a
reader sees through them (`read_view`), where an input several ops read is loaded once
(`input_homes`), and which te ops are live. `irc.lowering.model_from_ir` builds its
`ModelSpec` on these and re-exports every public name here.
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import DictionaryAttr
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from irc.dialects import igo
from irc.dialects.shift import KernelOp
from irc.dialects.te import TensorOp
from irc.dialects.te_expr import Access, AffineIndex, BoundExpr, ExprError

WEIGHT_ATTR = "irc.weight"
"""Unit argument attribute marking a function argument as a weight (irc.frontend.weights)."""


def is_weight(value: SSAValue) -> bool:
    """True when `value` is a function argument marked ``irc.weight``."""
    if not isinstance(value, BlockArgument):
        return False
    function = value.block.parent_op()
    if not isinstance(function, FuncOp) or function.arg_attrs is None:
        return False
    attrs = function.arg_attrs.data
    if value.index >= len(attrs):
        return False
    entry = attrs[value.index]
    return isinstance(entry, DictionaryAttr) and WEIGHT_ATTR in entry.data


def is_movement(op) -> bool:
    """Whether ``op`` only moves data (``Y[...] = X[...]``: one read, affine indices, no
    reduction, one element type): a transpose, a merge or split of axes, a slice or a
    broadcast."""
    if not isinstance(op, TensorOp):
        return False
    try:
        expr = op.parsed()
    except ExprError:
        return False
    body = expr.body
    return (
        expr.combiner == "=" and isinstance(body, Access) and len(op.inputs) == 1
        and not expr.reduction_axes
        and all(isinstance(i, AffineIndex) for i in (*body.indices, *expr.output.indices))
        and op.inputs[0].type.get_element_type() == op.output.type.get_element_type()  # type: ignore[union-attr]
    )


def is_layout_change(op) -> bool:
    """A data movement that keeps every element once (a transpose, a reshape merging or
    splitting axes, dims of extent 1 added or dropped): as many elements out as in and
    every output axis read. Such an op is a layout change, never a computation."""
    if not is_movement(op):
        return False
    expr = op.parsed()
    read = set(expr.body.axes)
    return (math.prod(op.inputs[0].type.get_shape()) == math.prod(op.output.type.get_shape())  # type: ignore[union-attr]
            and all(axis in read for axis in expr.output.axes))


def _is_argument(value: SSAValue) -> bool:
    return isinstance(value, BlockArgument) and isinstance(value.block.parent_op(), FuncOp)


def absorbed_movements(ops: list, plannable) -> set[TensorOp]:
    """The data movements that run as layout changes instead of computations: every
    movement the planner cannot describe (a merged output index) and every layout change
    (`is_layout_change`) reading a planned op, another such movement or a function
    argument, whose every reader is a planned op, such a movement or the function's
    return; a chain starting at an argument must reach a planned op. Between planned ops
    they become the relayout from one to the other, at the edges the origins of the
    ``device.load`` or ``device.store`` (`irc.lowering.shift_to_device`)."""
    candidates = [op for op in ops if is_movement(op) and (op not in plannable or is_layout_change(op))]
    absorbed = set(candidates)
    changed = True
    while changed:
        changed = False
        for op in candidates:
            if op not in absorbed:
                continue
            source = op.inputs[0]
            readers = [use.operation for use in op.output.uses]
            planned = lambda o: o in plannable and o not in absorbed  # noqa: E731
            fed = planned(source.owner) or source.owner in absorbed or _is_argument(source)
            read = bool(readers) and all(planned(r) or r in absorbed or isinstance(r, ReturnOp) for r in readers)
            if not (fed and read and _reaches_chip(op, absorbed, planned)):
                absorbed.discard(op)
                changed = True
    return absorbed


def _reaches_chip(op, absorbed, planned) -> bool:
    """Whether a movement chain through ``op`` has a planned op at one end."""
    value = op.inputs[0]
    while value.owner in absorbed:
        value = value.owner.inputs[0]
    if planned(value.owner):
        return True
    stack = [op]
    while stack:
        for use in stack.pop().output.uses:
            if planned(use.operation):
                return True
            if use.operation in absorbed:
                stack.append(use.operation)
    return False


def through_movements(value: SSAValue, movements) -> tuple[SSAValue, tuple[TensorOp, ...]]:
    """The value ``value`` is, through absorbed movements, and the movements in the order
    they apply (first reads the origin)."""
    chain = []
    while value.owner in movements:
        chain.append(value.owner)
        value = value.owner.inputs[0]
    return value, tuple(reversed(chain))


def _tensor_dim_map(chain) -> tuple[int | None, ...] | None:
    """Per dim of the chain's result, the dim of its origin (None: a dim of extent 1),
    when every movement only permutes dims and adds or drops dims of extent 1."""
    mapping = None
    for op in chain:
        expr = op.parsed()
        out_shape, in_shape = op.output.type.get_shape(), op.inputs[0].type.get_shape()
        where = {}
        for p, index in enumerate(expr.body.indices):
            if index.simple_axis is not None:
                where[index.simple_axis] = p
            elif index.terms or in_shape[p] != 1:
                return None
        step = []
        for d, index in enumerate(expr.output.indices):
            axis = index.simple_axis
            if axis is None:
                if index.terms or out_shape[d] != 1:
                    return None
                step.append(None)
            elif axis not in where or in_shape[where[axis]] != out_shape[d]:
                return None
            else:
                step.append(where[axis])
        if len({p for p in step if p is not None}) != sum(1 for p in step if p is not None):
            return None
        mapping = tuple(step) if mapping is None else tuple(None if p is None else mapping[p] for p in step)
    return mapping


def _spec_dims(access, shape) -> list[int | None] | None:
    """Per tensor dim of an access, its dim in the planner's `TensorSpec` (constant dims of
    extent 1 are none); None when a constant index picks from a larger dim."""
    dims, count = [], 0
    for index, size in zip(access.indices, shape):
        if not isinstance(index, AffineIndex):
            return None
        if not index.terms:
            if size != 1:
                return None
            dims.append(None)
        else:
            dims.append(count)
            count += 1
    return dims


def read_view(chain, source_bound: BoundExpr, source_tensor: str, reader_bound: BoundExpr,
              reader_tensor: str) -> tuple[int | None, ...] | None:
    """The planner's view of a read through the movements ``chain`` (`ModelOp.read_views`):
    per plan dim of ``reader_tensor``, the plan dim of ``source_tensor`` it is, or None when
    the movements do more than permute dims."""
    mapping = _tensor_dim_map(chain) if chain else None
    if mapping is None:
        return None

    def access(bound, name):
        expr = bound.expr
        return expr.output if name == expr.output.tensor else expr.accesses_of(name)[0]

    source = _spec_dims(access(source_bound, source_tensor), source_bound.shapes[source_tensor])
    reader = _spec_dims(access(reader_bound, reader_tensor), reader_bound.shapes[reader_tensor])
    if source is None or reader is None:
        return None
    view: list[int | None] = [None] * sum(1 for d in reader if d is not None)
    for d, spec_dim in enumerate(reader):
        if spec_dim is not None:
            view[spec_dim] = None if mapping[d] is None else source[mapping[d]]
    return tuple(view)


def input_homes(ops: list, planned, movements, may_hold=None, weights: bool = False) -> dict[tuple, tuple]:
    """Inputs from outside read by several planned ops, loaded once (issue 11): per
    ``(op, operand position)`` that reads such an input from another op's copy, the
    ``(op, operand position)`` holding it. The copy is the input as read by the first op
    reading it directly (through no movement), which readers through movements relayout
    with the movements applied; with no direct reader, readers through equal movements
    share one copy. Only ops in ``may_hold`` (default: every planned op) hold a copy: a
    fused gradient pair (a kernel of two products) reads from one, as the device
    program does (`irc.lowering.shift_to_device.lower_block`). ``weights``: the same for
    the arguments marked ``irc.weight`` instead (issue 23: a weight several ops read rests
    once, in its holder's idle layout, and the others receive it from there)."""
    readers: dict[SSAValue, list[tuple]] = {}
    for op in ops:
        if op not in planned:
            continue
        for position, value in enumerate(op.operands):
            origin, _ = through_movements(value, movements)
            if _is_argument(origin) and is_weight(origin) == weights:
                readers.setdefault(origin, []).append((op, position, value))
    def view_of(value):   # readers through equal movement chains (a copy per layer) share a view
        _, chain = through_movements(value, movements)
        return tuple((m.expression.text, tuple(m.output.type.get_shape())) for m in chain)

    homes = {}
    for origin, found in readers.items():
        direct = [r for r in found if r[2] is origin and (may_hold is None or r[0] in may_hold)]
        keys = [view_of(r[2]) for r in found]
        views = [direct] if direct else [[r for r, k in zip(found, keys) if k == key] for key in dict.fromkeys(keys)]
        for view in views:
            # the copy must hold every element
            whole = [r for r in view if (may_hold is None or r[0] in may_hold) and _reads_whole(*r[:2])]
            if not whole:
                continue
            home = whole[0][:2]
            for op, position, _ in (found if direct else view):
                if (op, position) != home:
                    homes[(op, position)] = home
    return homes


def operand_read(op, position: int) -> tuple[BoundExpr, str]:
    """The bound expression reading operand ``position`` of ``op`` (a ``te.op``, a
    ``shift.kernel`` of one or several products, an ``igo.grad_pair``) and the tensor
    it names it."""
    if isinstance(op, KernelOp):
        name = op.operand_names()[position]
        return next(b for b in op.bounds() if name in b.expr.inputs), name
    if isinstance(op, igo.GradPairOp):
        value = op.operands[position]
        for bound, other in ((op.bound_dx(), op.w), (op.bound_dw(), op.x)):
            for name, read in zip(bound.expr.inputs, op.operands_of(bound.expr, other)):
                if read is value:
                    return bound, name
    bound = op.bound()
    return bound, bound.expr.inputs[position]


def _reads_whole(op, position: int) -> bool:
    """Whether ``op`` reads every element of its operand ``position`` (no window of it)."""
    bound, name = operand_read(op, position)
    extents = bound.extent
    for index, size in zip(bound.expr.accesses_of(name)[0].indices, bound.shapes[name]):
        if not isinstance(index, AffineIndex) or index.value_range(extents) != (0, size - 1):
            return False
    return True


def tensor_ops(scope: Operation | Block) -> list[TensorOp]:
    ops = scope.walk() if isinstance(scope, Operation) else (o for top in scope.ops for o in top.walk())
    return [op for op in ops if isinstance(op, TensorOp)]


def live_tensor_ops(scope: Operation | Block) -> list[TensorOp]:
    """The te ops whose results something reads, directly or through other live ops. A
    te op is pure, so xDSL's rewrites erase one whose results nothing reads before it
    runs (dead-code elimination): it is no part of the model, and planning it would
    count cycles the chip never spends."""
    ops = tensor_ops(scope)
    dead: set[Operation] = set()
    for op in reversed(ops):  # a reader follows what it reads
        if all(use.operation in dead for result in op.results for use in result.uses):
            dead.add(op)
    return [op for op in ops if op not in dead]
