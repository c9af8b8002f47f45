"""Kernels for `te.opaque` ops: operators no tensor expression states.

Each kernel is registered under the op's `kind` (the source operator's name, e.g. an
ONNX op type) and receives the op (for its attributes) and numpy inputs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import IntegerAttr

from irc.diagnostics import location_of
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
# ---------------------------------------------------------------------------------------
# Embedding tables (DLRM, seeds/001 section 6): memory-bound lookups with pooling
# ---------------------------------------------------------------------------------------


def _where(op) -> str:
    return f"{location_of(op)}: te.opaque \"{op.kind.data}\""


def _str_attr(op, name: str, default: str) -> str:
    attr = op.attributes.get(name)
    if attr is None:
        return default
    value = getattr(attr, "data", None)
    if not isinstance(value, str):
        raise KernelError(f"{_where(op)}: attribute '{name}' must be a string")
    return value


def check_offsets(where: str, offsets: np.ndarray, count: int) -> None:
    """The bag starts ``offsets`` into ``count`` indices: non-decreasing and inside
    ``[0, count]``; else an error naming the op (``where``) and the first bad position
    (positions are absolute in the op's offsets operand)."""
    if not offsets.size:
        return
    steps = np.flatnonzero(np.diff(offsets) < 0)
    if steps.size:
        i = int(steps[0]) + 1
        raise KernelError(f"{where}: offsets must not decrease, but offset {int(offsets[i])} at position "
                          f"{i} follows {int(offsets[i - 1])}")
    if offsets[0] < 0 or offsets[-1] > count:
        i = 0 if offsets[0] < 0 else int(np.flatnonzero(offsets > count)[0])
        raise KernelError(f"{where}: offset {int(offsets[i])} at position {i} is outside the {count} indices")


def check_indices(where: str, indices: np.ndarray, rows: int, what: str = "", first_position: int = 0) -> None:
    """Every index a row of a table of ``rows`` rows; else an error naming the op and the
    first bad position (``first_position`` is where ``indices`` starts in the operand)."""
    bad = np.flatnonzero((indices < 0) | (indices >= rows))
    if bad.size:
        i = int(bad[0])
        raise KernelError(f"{where}: index {int(indices[i])} at position {first_position + i} of the indices "
                          f"is outside {what}the table's {rows} rows")


def _pool(op, table: np.ndarray, indices: np.ndarray, offsets: np.ndarray, bags: int, mode: str,
          what: str = "", first_position: int = 0) -> np.ndarray:
    """Sum or mean of ``table``'s rows ``indices[offsets[b]:offsets[b+1]]`` per bag ``b``
    (the last bag runs to the end of ``indices``); an empty bag is zeros. The offsets
    are checked by the caller (``check_offsets``)."""
    check_indices(_where(op), indices, table.shape[0], what, first_position)
    ends = np.append(offsets[1:], indices.size) if offsets.size == bags else offsets[1:]
    out = np.zeros((bags, table.shape[1]), dtype=np.float64 if table.dtype.kind == "f" else np.int64)
    for b in range(bags):
        chosen = table[indices[int(offsets[b]):int(ends[b])]]
        if chosen.shape[0]:
            total = chosen.sum(axis=0, dtype=out.dtype)
            out[b] = total / chosen.shape[0] if mode == "mean" else total
    return out


@kernel("EmbeddingBag")
def _embedding_bag(op, table, indices, offsets):
    """PyTorch's ``embedding_bag`` (include_last_offset=False): bag ``b`` pools the rows
    ``indices[offsets[b]:offsets[b+1]]`` of ``table`` by ``mode`` ("sum" or "mean")."""
    mode = _str_attr(op, "mode", "sum")
    if mode not in ("sum", "mean"):
        raise KernelError(f"{_where(op)}: mode must be sum or mean, got '{mode}'")
    offsets = np.asarray(offsets, dtype=np.int64).reshape(-1)
    indices = np.asarray(indices, dtype=np.int64).reshape(-1)
    check_offsets(_where(op), offsets, indices.size)
    return [_pool(op, np.asarray(table), indices, offsets, offsets.size, mode)]


@kernel("TableBatchedEmbedding")
def _table_batched(op, weights, indices, offsets):
    """Several EmbeddingBags in one op (section 6: "merged together into one or more
    TableBatchedEmbedding operators"): the tables' rows are stacked in ``weights`` (table
    t has ``rows[t]`` rows), ``offsets`` holds ``tables x batch + 1`` bag starts into the
    flat ``indices`` (table-major; indices are rows of their own table), and the result
    concatenates every table's pooled rows: ``batch x (tables * dim)``."""
    mode = _str_attr(op, "mode", "sum")
    rows_attr = op.attributes.get("rows")
    if rows_attr is None or not hasattr(rows_attr, "get_values"):
        raise KernelError(f"{_where(op)}: needs rows = array<i64: ...>, the rows of each table")
    rows = [int(r) for r in rows_attr.get_values()]
    weights = np.asarray(weights)
    if sum(rows) != weights.shape[0]:
        raise KernelError(f"{_where(op)}: the tables' rows add up to {sum(rows)}, but weights has {weights.shape[0]}")
    offsets = np.asarray(offsets, dtype=np.int64).reshape(-1)
    indices = np.asarray(indices, dtype=np.int64).reshape(-1)
    tables = len(rows)
    if (offsets.size - 1) % tables:
        raise KernelError(f"{_where(op)}: {offsets.size} offsets are not tables x batch + 1 for {tables} tables")
    batch = (offsets.size - 1) // tables
    check_offsets(_where(op), offsets, indices.size)
    starts = np.cumsum([0] + rows)
    pooled = []
    for t in range(tables):
        bag_offsets = offsets[t * batch:(t + 1) * batch + 1]
        lo, hi = int(bag_offsets[0]), int(bag_offsets[-1])
        table = weights[starts[t]:starts[t + 1]]
        pooled.append(_pool(op, table, indices[lo:hi], bag_offsets[:-1] - lo, batch, mode,
                            what=f"table {t}: ", first_position=lo))
    return [np.concatenate(pooled, axis=1)]
