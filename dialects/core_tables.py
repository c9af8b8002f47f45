"""Per-core tables of the chip dialects: what differs between the cores of an SPMD op (where
a tile starts, which core a ring receives from, which pieces a relayout moves), written as
an ``affine_map<(d0) -> (...)>`` of the core id ``d0`` with one result per column, or as a
dense ``array<i64: ...>`` of one row per core (or one row shared by every core) where no
closed form is known; and their evaluation on every core with numpy, as the verifiers and
the interpreter need it."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import AffineMapAttr, DenseArrayBase, IntegerAttr, i64
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
)
from xdsl.irdl import AnyOf, base
from xdsl.utils.exceptions import VerifyException


def i64_attr(value: int) -> IntegerAttr:
    return IntegerAttr(int(value), i64)


def i64_array(values) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in np.asarray(values).reshape(-1).tolist()])


def array_values(attr: DenseArrayBase) -> np.ndarray:
    return np.asarray(attr.get_values(), dtype=np.int64)


def _int(attr: IntegerAttr) -> int:
    return int(attr.value.data)


CORE_TABLE = AnyOf([base(DenseArrayBase), base(AffineMapAttr)])
"""A per-core table: an affine map of the core id, or dense rows."""


def core_id() -> AffineExpr:
    """The core id, ``d0`` of a per-core affine map."""
    return AffineExpr.dimension(0)


def table_attr(values) -> DenseArrayBase | AffineMapAttr:
    """The attribute of a per-core table: closed forms in ``core_id()`` (a list, one per
    column, or one value) become an affine map; a numpy table stays dense."""
    if isinstance(values, np.ndarray):
        return i64_array(values)
    if not isinstance(values, (list, tuple)):
        values = [values]
    exprs = tuple(simplify(v) if isinstance(v, AffineExpr) else AffineExpr.constant(int(v)) for v in values)
    return AffineMapAttr(AffineMap(1, 0, exprs))


def simplify(expr: AffineExpr) -> AffineExpr:
    """Folds what xDSL leaves into shorter equal forms: ``e mod 1`` is 0, ``e floordiv 1``
    is ``e``; ``(e mod a) mod b`` is ``e mod b`` when b divides a; ``(e floordiv a) floordiv
    b`` is ``e floordiv (a * b)``; ``(e mod m) floordiv a`` is ``(e floordiv a) mod (m / a)``
    when a divides m; ``(e * a) floordiv b`` is ``e floordiv (b / a)`` and ``(e * a) mod b``
    is ``(e mod (b / a)) * a`` when a divides b, ``e * (a / b)`` and 0 when b divides a
    (true for every integer e)."""
    if not isinstance(expr, AffineBinaryOpExpr):
        return expr
    lhs, rhs = simplify(expr.lhs), simplify(expr.rhs)
    if isinstance(rhs, AffineConstantExpr) and rhs.value == 1:
        if expr.kind == AffineBinaryOpKind.Mod:
            return AffineExpr.constant(0)
        if expr.kind in (AffineBinaryOpKind.FloorDiv, AffineBinaryOpKind.CeilDiv, AffineBinaryOpKind.Mul):
            return lhs
    if isinstance(rhs, AffineConstantExpr) and isinstance(lhs, AffineBinaryOpExpr) \
            and isinstance(lhs.rhs, AffineConstantExpr) and rhs.value > 0 and lhs.rhs.value > 0:
        if lhs.kind == AffineBinaryOpKind.Mul and rhs.value % lhs.rhs.value == 0:
            a, b = lhs.rhs.value, rhs.value
            if expr.kind == AffineBinaryOpKind.FloorDiv:
                return simplify(lhs.lhs // (b // a))
            if expr.kind == AffineBinaryOpKind.Mod:
                return simplify((lhs.lhs % (b // a)) * a)
        if lhs.kind == AffineBinaryOpKind.Mul and lhs.rhs.value % rhs.value == 0:
            a, b = lhs.rhs.value, rhs.value
            if expr.kind == AffineBinaryOpKind.FloorDiv:
                return simplify(lhs.lhs * (a // b))
            if expr.kind == AffineBinaryOpKind.Mod:
                return AffineExpr.constant(0)
        if expr.kind == lhs.kind == AffineBinaryOpKind.Mod and lhs.rhs.value % rhs.value == 0:
            return simplify(lhs.lhs % rhs.value)
        if expr.kind == lhs.kind == AffineBinaryOpKind.FloorDiv:
            return simplify(lhs.lhs // (lhs.rhs.value * rhs.value))
        if expr.kind == AffineBinaryOpKind.FloorDiv and lhs.kind == AffineBinaryOpKind.Mod \
                and lhs.rhs.value % rhs.value == 0:
            return simplify((lhs.lhs // rhs.value) % (lhs.rhs.value // rhs.value))
    if lhs is expr.lhs and rhs is expr.rhs:
        return expr
    return {
        AffineBinaryOpKind.Add: lambda: lhs + rhs,
        AffineBinaryOpKind.Mul: lambda: lhs * rhs,
        AffineBinaryOpKind.FloorDiv: lambda: lhs // rhs,
        AffineBinaryOpKind.CeilDiv: lambda: lhs.ceil_div(rhs),
        AffineBinaryOpKind.Mod: lambda: lhs % rhs,
    }[expr.kind]()


_NUMPY_OPS = {
    AffineBinaryOpKind.Add: np.add,
    AffineBinaryOpKind.Mul: np.multiply,
    AffineBinaryOpKind.FloorDiv: np.floor_divide,
    AffineBinaryOpKind.CeilDiv: lambda a, b: -np.floor_divide(-a, b),
    AffineBinaryOpKind.Mod: np.mod,
}


def _check_origins(origins: np.ndarray, tensor, tile, cores: int, what: str) -> None:
    """Tiles of a tensor start at most one tile before it and at most as far past it as
    ``cores`` tiles reach (the padding a grid of tiles adds): the interpreter pads the
    host tensor to the tiles, so an origin beyond that is refused, not allocated."""
    tensor, tile = np.asarray(list(tensor), dtype=np.int64), np.asarray(list(tile), dtype=np.int64)
    if origins.size == 0 or origins.shape[-1] != tensor.size:
        return
    low, high = -tile, np.maximum(tensor, tile * cores)
    bad = np.argwhere((origins < low) | (origins > high))
    if bad.size:
        core, dim = (int(v) for v in bad[0])
        raise VerifyException(
            f"core {core}: {what} {origins[core].tolist()} puts a tile of {tile.tolist()} at {int(origins[core, dim])} "
            f"in dimension {dim}, outside [{int(low[dim])}, {int(high[dim])}] for a tensor of shape {tensor.tolist()}"
        )


MAX_CORES = 1 << 20
MAX_RELAYOUT_ELEMENTS = 1 << 40
"""Most elements of the tensor a relayout moves (as a tensor dimension may have: sizes stay
exact in int64)."""
"""The most cores a device op may run on (verifiers evaluate per-core maps on each)."""


def evaluate_affine(expr: AffineExpr, cores: np.ndarray, pieces: np.ndarray | None = None) -> np.ndarray:
    """``expr`` at every core id of ``cores`` at once (numpy, one call per node); with
    ``pieces``, a map of the core ``d0`` and a relayout's piece ``d1`` (broadcast)."""
    if isinstance(expr, AffineConstantExpr):
        if not -(2**62) <= expr.value < 2**62:
            raise VerifyException(f"the constant {expr.value} of a per-core map is beyond what irc computes (2**62)")
        return np.full(np.broadcast_shapes(cores.shape, () if pieces is None else pieces.shape), expr.value,
                       dtype=np.int64)
    if isinstance(expr, AffineDimExpr):
        if expr.position == 1 and pieces is not None:
            return pieces
        if expr.position != 0:
            raise VerifyException(f"a per-core map has one dimension (the core id d0), got d{expr.position}")
        return cores
    if isinstance(expr, AffineBinaryOpExpr):
        lhs, rhs = evaluate_affine(expr.lhs, cores, pieces), evaluate_affine(expr.rhs, cores, pieces)
        if expr.kind in (AffineBinaryOpKind.FloorDiv, AffineBinaryOpKind.CeilDiv, AffineBinaryOpKind.Mod) \
                and (rhs <= 0).any():
            raise VerifyException(f"'{expr}' divides by a non-positive value")
        return _NUMPY_OPS[expr.kind](lhs, rhs)
    raise VerifyException(f"a per-core map uses symbols, which have no value: {expr}")


_TABLES: dict = {}
"""Affine per-core tables already evaluated (a loop nest repeats its maps), read-only."""
_TABLES_BY_ID: dict = {}
"""The same tables by the identity of their map attribute (with it, so the id is not reused)."""


def core_table(attr, columns: int, cores: int, what: str) -> np.ndarray:
    """A per-core table of ``columns`` entries per row, one row per core: an affine map
    evaluated at every core id, or dense rows (one row for every core, or one shared)."""
    if isinstance(attr, AffineMapAttr):
        # by identity first: hashing a map attribute walks its expression trees, which
        # costs more than the lookup saves when every step of an unrolled loop asks
        known = _TABLES_BY_ID.get((id(attr), columns, cores))
        if known is not None and known[0] is attr:
            return known[1]
        key = (attr, columns, cores)
        found = _TABLES.get(key)
        if found is None:
            found = _evaluate_map(attr, columns, cores, what)
            found.flags.writeable = False
            if len(_TABLES) >= 4096:
                _TABLES.clear()
            _TABLES[key] = found
        if len(_TABLES_BY_ID) >= 4096:
            _TABLES_BY_ID.clear()
        _TABLES_BY_ID[(id(attr), columns, cores)] = (attr, found)   # the attribute kept: its id stays its own
        return found
    return _dense_table(attr, columns, cores, what)


def _evaluate_map(attr: AffineMapAttr, columns: int, cores: int, what: str) -> np.ndarray:
    mapping = attr.data
    if mapping.num_dims != 1 or mapping.num_symbols:
        raise VerifyException(f"{what} must be a map of the core id alone, (d0) -> (...), got {mapping}")
    if len(mapping.results) != columns:
        raise VerifyException(f"{what} has {len(mapping.results)} results; expected {columns}")
    ids = np.arange(cores, dtype=np.int64)
    if columns == 0:
        return np.zeros((cores, 0), dtype=np.int64)
    return np.stack([evaluate_affine(e, ids) for e in mapping.results], axis=1)


def _dense_table(attr, columns: int, cores: int, what: str) -> np.ndarray:
    values = array_values(attr)
    if columns == 0:
        return np.zeros((cores, 0), dtype=np.int64)
    if values.size == columns:
        return np.broadcast_to(values, (cores, columns))
    if values.size != columns * cores:
        raise VerifyException(
            f"{what} has {values.size} entries; expected {columns} (one row for all cores) or "
            f"{columns} x {cores} cores = {columns * cores}"
        )
    return values.reshape(cores, columns)


def core_vector(attr, cores: int, what: str) -> np.ndarray:
    """A per-core value (one column): ``(cores,)``; a dense array lists every core."""
    if isinstance(attr, AffineMapAttr):
        return core_table(attr, 1, cores, what)[:, 0]
    return array_values(attr)


def group_leaders(keys: np.ndarray) -> np.ndarray:
    """The lowest core of each group of cores with equal ``keys``, in core order."""
    _, first = np.unique(keys, return_index=True)
    return np.sort(first).astype(np.int64)


def groups_from_keys(keys: np.ndarray, replicas: int) -> np.ndarray:
    """(groups, replicas) core ids holding equal ``keys``, lowest core first in each row."""
    order = np.lexsort((np.arange(len(keys)), keys))
    return order.reshape(-1, replicas).astype(np.int64)


def piece_attr(pieces) -> DenseArrayBase | AffineMapAttr:
    """The ``pieces`` property: an affine map of the core ``d0`` and the piece ``d1``, or
    dense rows (cores x count x columns) where no closed form is known."""
    if pieces.table is not None:
        return i64_array(pieces.table)
    exprs = tuple(simplify(c) if isinstance(c, AffineExpr) else AffineExpr.constant(int(c)) for c in pieces.columns)
    return AffineMapAttr(AffineMap(2, 0, exprs))


def piece_table(attr, count: int, columns: int, cores: int) -> np.ndarray:
    """(cores, count, columns) of a ``pieces`` property (module docstring of RelayoutOp)."""
    if isinstance(attr, AffineMapAttr):
        mapping = attr.data
        if mapping.num_dims != 2 or mapping.num_symbols:
            raise VerifyException(f"pieces must be a map of the core and the piece, (d0, d1) -> (...), got {mapping}")
        if len(mapping.results) != columns:
            raise VerifyException(
                f"pieces has {len(mapping.results)} results; expected {columns} (source core, source offsets, "
                f"destination offsets)"
            )
        ids = np.arange(cores, dtype=np.int64)[:, None]
        piece = np.arange(count, dtype=np.int64)[None, :]
        return np.stack([np.broadcast_to(evaluate_affine(e, ids, piece), (cores, count)) for e in mapping.results],
                        axis=2)
    values = array_values(attr)
    if values.size != cores * count * columns:
        raise VerifyException(
            f"pieces has {values.size} entries; expected {cores} cores x {count} pieces x {columns} = "
            f"{cores * count * columns}"
        )
    return values.reshape(cores, count, columns)
