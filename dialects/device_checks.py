"""The `device` dialect's buffer type and the checks its ops share.

`BufferType` is the same-shaped region of every core's SRAM; the helpers state and check
an op's data movements (``moves``), its sub-task's kind and roles, and a compute step's
windows. `irc.dialects.device` registers the type and re-exports every name here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import irdl_attr_definition
from xdsl.utils.exceptions import VerifyException

from irc.dialects.core_tables import array_values, i64_array
from irc.dialects.shaped import LocalShapedType
from irc.dialects.te import ExprAttr
from irc.dialects.te_expr import OPERATOR_ROLES, ExprError, IndirectIndex


@irdl_attr_definition
class BufferType(LocalShapedType):
    """A buffer of ``shape`` elements of ``element_type`` in the SRAM of each core of a
    core set (the per-core partition of a tensor, or its receive buffer)."""

    name = "device.buffer"


def buffer_of(value: SSAValue, what: str) -> BufferType:
    """The `BufferType` of ``value``; a `VerifyException` naming ``what`` otherwise."""
    if not isinstance(value.type, BufferType):
        raise VerifyException(f"{what} must be a !device.buffer, got {value.type}")
    return value.type


def moves_properties(moves: Sequence[tuple[str, Sequence[int]]]) -> dict[str, Attribute]:
    """The ``moves``/``moved_shapes`` properties of data movements applied on the way (one
    tensor expression ``Y[...] = X[...]`` each, with the shape it makes)."""
    if not moves:
        return {}
    return {"moves": ArrayAttr([ExprAttr(text) for text, _ in moves]),
            "moved_shapes": ArrayAttr([i64_array(moved) for _, moved in moves])}


def movements_of(op) -> list[tuple[ExprAttr, tuple[int, ...]]]:
    """An op's data movements with the shape each produces (none: empty)."""
    if op.moves is None:
        return []
    return [(expr, tuple(int(d) for d in array_values(shape)))
            for expr, shape in zip(op.moves.data, op.moved_shapes.data)]


def verify_moves(op, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Check that the movements bind one after the other from ``shape``; the final shape."""
    if (op.moves is None) != (op.moved_shapes is None) or (
            op.moves is not None and len(op.moves.data) != len(op.moved_shapes.data)):
        raise VerifyException("moves and moved_shapes go together, one shape per movement")
    for expr, moved in movements_of(op):
        if not isinstance(expr, ExprAttr):
            raise VerifyException(f"moves holds tensor expressions, got {expr}")
        try:
            expr.expr.bind([shape], moved)
        except ExprError as error:
            raise VerifyException(f"'{expr.data}': {error.message}") from None
        shape = moved
    return shape


def check_kind(kind: str, roles: DictionaryAttr, compute: bool = True) -> None:
    """A sub-task the cost model can price: a known kind with, for a compute step, the
    roles it needs; every role a non-negative integer."""
    if kind not in OPERATOR_ROLES:
        raise VerifyException(f"unknown kind '{kind}'; kinds are {', '.join(OPERATOR_ROLES)}")
    missing = [role for role in OPERATOR_ROLES[kind] if role not in roles.data] if compute else []
    if missing:
        raise VerifyException(f"a {kind} sub-task needs roles {', '.join(OPERATOR_ROLES[kind])}; "
                              f"{', '.join(missing)} missing")
    for role, value in roles.data.items():
        if not isinstance(value, IntegerAttr) or not 0 <= value.value.data <= 1 << 62:
            raise VerifyException(f"role {role} must be a non-negative integer, got {value}")


def check_windows(expr, tile: dict[str, int], buffers: Sequence[SSAValue], tables: Sequence[np.ndarray]) -> None:
    """Every core's window of each tensor of a compute step (``buffers`` and ``tables``:
    the output's, then the inputs') lies inside its buffer."""
    accesses = [expr.output] + [expr.accesses_of(name)[0] for name in expr.inputs]
    names = [expr.output.tensor, *expr.inputs]
    for name, access, value, table in zip(names, accesses, buffers, tables):
        shape = buffer_of(value, f"buffer of {name}").get_shape()
        if len(shape) != len(access.indices):
            raise VerifyException(f"{name} has rank {len(access.indices)} but its buffer has rank {len(shape)}")
        need = [shape[d] if isinstance(i, IndirectIndex) else
                sum(abs(c) * (tile[a] - 1) for a, c in i.terms) + 1 for d, i in enumerate(access.indices)]
        end = table + np.array(need)
        if (table < 0).any() or (end > np.array(shape)).any():
            core = int(np.argwhere((table < 0) | (end > np.array(shape)))[0][0])
            raise VerifyException(
                f"core {core}: the window of {name} at {table[core].tolist()} with extent {need} "
                f"lies outside its buffer of shape {list(shape)}"
            )


def ops_after(op: Operation):
    """The ops after ``op`` in its block, in order (empty when it has no block)."""
    current = op.next_op
    while current is not None:
        yield current
        current = current.next_op
