"""Kernels for `te.opaque` ops: operators no tensor expression states.

Each kernel is registered under the op's `kind` (the source operator's name, e.g. an
ONNX op type) and receives the op (for its attributes) and numpy inputs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import IntegerAttr

from irc.dialects.dtypes import numpy_dtype

Kernel = Callable[..., list[np.ndarray]]
KERNELS: dict[str, Kernel] = {}


class KernelError(RuntimeError):
    pass


def kernel(kind: str):
    def register(function: Kernel) -> Kernel:
        KERNELS[kind] = function
        return function

    return register


def run_kernel(op, inputs: list[np.ndarray]) -> list[np.ndarray]:
    kind = op.kind.data
    if kind not in KERNELS:
        known = ", ".join(sorted(KERNELS)) or "none"
        raise KernelError(f"no kernel for te.opaque \"{kind}\" (known: {known})")
    results = KERNELS[kind](op, *inputs)
    return [
        np.asarray(r).astype(numpy_dtype(t.get_element_type()))
        for r, t in zip(results, op.result_types, strict=True)
    ]


def _int_attr(op, name: str, default: int) -> int:
    attr = op.attributes.get(name)
    if attr is None:
        return default
    if not isinstance(attr, IntegerAttr):
        raise KernelError(f"attribute '{name}' of te.opaque \"{op.kind.data}\" must be an integer")
    return attr.value.data


@kernel("Sort")
def _sort(op, x):
    axis = _int_attr(op, "axis", -1)
    descending = bool(_int_attr(op, "descending", 0))
    result = np.sort(x, axis=axis, kind="stable")
    return [np.flip(result, axis=axis) if descending else result]


@kernel("TopK")
def _top_k(op, x, k=None):
    # ONNX TopK: k from the second input or the attribute; largest first by default.
    count = int(np.asarray(k).reshape(-1)[0]) if k is not None else _int_attr(op, "k", 1)
    axis = _int_attr(op, "axis", -1)
    largest = bool(_int_attr(op, "largest", 1))
    if not largest:
        keys = x
    elif x.dtype.kind == "u":
        keys = np.iinfo(x.dtype).max - x  # negation would wrap around
    else:
        keys = -x
    order = np.argsort(keys, axis=axis, kind="stable")
    indices = np.take(order, np.arange(count), axis=axis)
    return [np.take_along_axis(x, indices, axis=axis), indices.astype(np.int64)]


@kernel("CumSum")
def _cumsum(op, x):
    # ONNX CumSum: `exclusive` shifts by one (first element 0), `reverse` sums from the end.
    axis = _int_attr(op, "axis", 0)
    values = np.flip(x, axis) if _int_attr(op, "reverse", 0) else x
    total = np.cumsum(values, axis=axis, dtype=values.dtype)
    if _int_attr(op, "exclusive", 0):
        total = total - values
    return [np.flip(total, axis) if _int_attr(op, "reverse", 0) else total]


def _arg_extreme(op, x, pick):
    axis = _int_attr(op, "axis", 0)
    keepdims = bool(_int_attr(op, "keepdims", 1))
    if _int_attr(op, "select_last_index", 0):
        flipped = pick(np.flip(x, axis), axis=axis)
        index = x.shape[axis] - 1 - flipped
    else:
        index = pick(x, axis=axis)
    if keepdims:
        index = np.expand_dims(index, axis)
    return [index.astype(np.int64)]


@kernel("ArgMax")
def _argmax(op, x):
    return _arg_extreme(op, x, np.argmax)


@kernel("ArgMin")
def _argmin(op, x):
    return _arg_extreme(op, x, np.argmin)


@kernel("Trilu")
def _trilu(op, x):
    k = _int_attr(op, "k", 0)
    return [np.triu(x, k) if _int_attr(op, "upper", 1) else np.tril(x, k)]


@kernel("ScatterElements")
def _scatter_elements(op, data, indices, updates):
    # ONNX ScatterElements: out[..., indices[p], ...] (at `axis`) takes updates[p];
    # reduction "add" sums the updates that land on one element (a gather's gradient).
    axis = _int_attr(op, "axis", 0) % data.ndim
    reduction = op.attributes.get("reduction")
    reduction = reduction.data if reduction is not None else "none"
    size = data.shape[axis]
    where = np.asarray(indices).astype(np.int64)
    where = np.where(where < 0, where + size, where)
    if where.size and (where.min() < 0 or where.max() >= size):
        raise KernelError(f"ScatterElements index outside [-{size}, {size}) on axis {axis}")
    grid = list(np.indices(where.shape, sparse=True))
    grid[axis] = where
    out = np.array(data, copy=True)
    if reduction == "add":
        np.add.at(out, tuple(grid), updates)
    elif reduction == "none":
        out[tuple(grid)] = updates
    else:
        raise KernelError(f"ScatterElements reduction '{reduction}' is not supported (none, add)")
    return [out]
