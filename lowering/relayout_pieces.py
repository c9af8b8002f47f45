"""The exchange permutation of a relayout, as SPMD pieces (issue 11; T10 s4.3.2, s5).

A ``device.relayout`` moves a tensor between two on-chip layouts over the exchange. This
module states *which* data moves: per destination core ``d0`` and piece ``d1`` (of
``count``), the source core, the offset of the piece in the source core's buffer and
its offset in the destination's buffer, as one ``affine_map<(d0, d1) -> (source core,
source offsets..., destination offsets...)>``; every piece has the same shape. The map is
built from the two layouts' geometry (`irc.schedule.geometry`) in closed form and checked
against the per-core tables before it is used; where no closed form is known the
relayout keeps its tile maps (``source_origins``/``source_group``, the same move stated
by where each tile lies).

- A weight's setup (idle -> active, T10 Figure 9): a core's active partition is the
  ``M`` slices its ring group keeps at rest; piece ``j`` comes from the group member
  holding slice ``j`` (same coordinates on the axes indexing the weight, free index
  moved by ``(j - own slice) * rings``) into slice ``j``'s place in the partition.
- A relayout between two block layouts (an operator's output, or the copy of an input
  shared by several operators, not rotating, every dim one axis or a constant): along
  every dim the destination's range either holds whole source blocks (``T = k*S``,
  aligned) or lies inside one (``T <= S``); piece ``(k_1, ...)`` is the block the
  destination's range meets there, read from the copy on the destination's own
  coordinates along the source's other cut axes (its own, if it holds the block: nothing
  moves; on a mesh a near one) when every copy is valid, else from the lowest core
  holding that block (an operator's output, whose other copies held partial sums).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.ir.affine import AffineExpr

from irc.dialects.te_expr import IndirectIndex


@dataclass(frozen=True)
class Pieces:
    """A relayout as pieces: per piece (``count`` of them), one value per core of the
    source core, source offsets and destination offsets, all of shape ``shape``. Each
    entry is an affine expression of ``d0`` (the core) and ``d1`` (the piece), or, with
    ``table``, one (cores, count, 1 + 2 * rank) array."""

    count: int
    shape: tuple[int, ...]
    columns: tuple | None = None
    table: np.ndarray | None = None


@dataclass(frozen=True)
class _BlockDim:
    size: int      # S: elements of a block along the dim
    offset: int    # a: where block 0 starts
    blocks: int    # G: blocks along the dim (the grid of its axis)
    place: int     # core-id weight of the axis' coordinate (0 for a constant dim)
    axis: int = -1  # the axis (-1 for a constant dim)


def _block_dims(kernel, name: str) -> list[_BlockDim] | None:
    """The dims of ``name``'s layout in ``kernel`` as blocks (module docstring), or None."""
    layout = kernel.tensors[name]
    if layout.rotating:
        return None
    dims, used = [], set()
    places = [math.prod(kernel.grid[d + 1:]) for d in range(len(kernel.grid))]
    for r, index in enumerate(layout.indices):
        if isinstance(index, IndirectIndex):
            return None
        if not index.terms:
            dims.append(_BlockDim(layout.partition_shape[r], index.constant, 1, 0))
            continue
        if len(index.terms) != 1 or index.terms[0][1] != 1:
            return None
        d = kernel.axis_index(index.terms[0][0])
        span = kernel.steps_per_axis[d] * kernel.tiles[d]
        if d in used or d in kernel.clamped or layout.partition_shape[r] != span:
            return None
        used.add(d)
        dims.append(_BlockDim(span, index.constant, kernel.grid[d], places[d], d))
    return dims


def _radix(counts: list[int], d1):
    """The digit of each dim of piece ``d1`` (mixed radix, last dim fastest; ``d1`` is
    below the product of ``counts``)."""
    digits, stride, total = [], 1, math.prod(counts)
    for count in reversed(counts):
        value = d1 if stride == 1 else d1 // stride
        digits.append(0 if count == 1 else value if stride * count == total else value % count)
        stride *= count
    return digits[::-1]


def _block_cases(dims, target_shape, q: np.ndarray):
    """Per dim, how a target tile meets the source's blocks: ``"whole"`` blocks (and how
    many) or ``"inside"`` one block; None when a tile straddles blocks partly."""
    cases, counts = [], []
    for r, (dim, t) in enumerate(zip(dims, target_shape)):
        rel = q[:, r] - dim.offset
        if t % dim.size == 0 and not (rel % dim.size).any():
            cases.append("whole")
            counts.append(t // dim.size)
        elif ((rel // dim.size) == ((rel + t - 1) // dim.size)).all():
            cases.append("inside")
            counts.append(1)
        else:
            return None
    return cases, counts


def block_pieces(source_kernel, source_tensor: str, source_origins: np.ndarray, writers: np.ndarray,
                 target_origins_table: np.ndarray, target_shape, tensor_shape, target_origins_symbolic=None):
    """The pieces of a relayout from ``source_tensor``'s block layout in ``source_kernel``
    (per-core ``source_origins``, its ``writers`` holding valid tiles) into tiles of
    ``target_shape`` at ``target_origins_table`` (and, for a closed form, their symbolic
    origins), or None (module docstring)."""
    dims = _block_dims(source_kernel, source_tensor)
    if dims is None or len(dims) != len(target_shape):
        return None
    q = target_origins_table
    split = _block_cases(dims, target_shape, q)
    if split is None:
        return None
    cases, counts = split
    count = math.prod(counts)
    shape = tuple(d.size if c == "whole" else t for d, c, t in zip(dims, cases, target_shape))

    wraps = [True] * len(dims)   # whether a dim's blocks run past the grid (only into padding)
    # the source's other cut axes: a block's copies differ only there
    grid = source_kernel.grid
    used = {d.axis for d in dims}
    spare = [(math.prod(grid[a + 1:]), g) for a, g in enumerate(grid) if g > 1 and a not in used]
    near = [bool(spare)]   # read each block from the copy on the core's own coordinates there

    def columns(origins, d1, core=None):
        digits = _radix(counts, d1)
        source, source_offsets, target_offsets, raw = 0, [], [], []
        for dim, case, q_r, k, wrap in zip(dims, cases, origins, digits, wraps):
            block = (q_r - dim.offset) // dim.size + (k if case == "whole" else 0)
            raw.append(block)
            source = source + ((block % dim.blocks) if wrap else block) * dim.place
            source_offsets.append(0 if case == "whole" else (q_r - dim.offset) % dim.size)
            target_offsets.append(k * dim.size if case == "whole" else 0)
        if near[0] and core is not None:
            for place, g in spare:
                source = source + ((core if place == 1 else core // place) % g) * place
        return source, source_offsets, target_offsets, raw

    # check the closed form against the tables: every piece comes from a core holding
    # that block (or lands outside the tensor, where the relayout writes zeros). A block
    # is read from its copy on the reading core's own coordinates along the source's other
    # cut axes (the core's own when it holds it; on a mesh the nearer one) when every
    # copy is valid, else from the lowest core holding it (the others hold partial sums).
    cores = q.shape[0]
    d1 = np.arange(count, dtype=np.int64)[:, None]
    ids = np.arange(cores, dtype=np.int64)[None, :]

    def holds() -> bool:
        wraps[:] = [True] * len(dims)
        source, _, target_offsets, raw = columns([q[:, r][None, :] for r in range(len(dims))], d1, ids)
        source = np.broadcast_to(np.asarray(source, dtype=np.int64), (count, cores))
        wraps[:] = [bool(((np.asarray(b) < 0) | (np.asarray(b) >= d.blocks)).any()) for b, d in zip(raw, dims)]
        if source.min() < 0 or source.max() >= len(source_origins) or not np.isin(source, writers).all():
            return False
        for r, (dim, block) in enumerate(zip(dims, raw)):
            block = np.broadcast_to(np.asarray(block), (count, cores))
            inside = (block >= 0) & (block < dim.blocks)
            if (source_origins[source, r][inside] != (block * dim.size + dim.offset)[inside]).any():
                return False
            start = q[:, r][None, :] + np.broadcast_to(np.asarray(target_offsets[r]), (count, cores))
            outside = (start >= tensor_shape[r]) | (start + shape[r] <= 0)
            if (~inside & ~outside).any():
                return False
        return True

    if not holds():
        near[0] = False
        if not spare or not holds():
            return None
    if target_origins_symbolic is None:
        return Pieces(count, shape, table=_table(lambda at, k: columns(at, k, ids), [q[:, r] for r in range(len(dims))],
                                                  count, cores))
    symbolic = columns(list(target_origins_symbolic), AffineExpr.dimension(1), AffineExpr.dimension(0))
    return Pieces(count, shape, columns=(symbolic[0], *symbolic[1], *symbolic[2]))


def setup_pieces(kernel, name: str, idle_factors: tuple[int, ...], slice_shape, core=None):
    """The pieces of a weight's setup from its idle slices into its active partition
    (module docstring), with ``core`` symbolic (a closed form) or None (a table); None
    when the group members do not hold the slices the closed form names."""
    layout = kernel.tensors[name]
    multipliers = [i // t for i, t in zip(idle_factors, layout.temporal)]
    count = math.prod(multipliers)
    cut = [d for d in range(len(kernel.axes)) if multipliers[d] > 1]

    ring, group = layout.ring_size, layout.ring_size * count
    one_group = layout.rings == count   # the sharing cores form one group of slices

    def columns(at, d1):
        phi = kernel._free_index(layout, at)
        # the member whose slice index (phi // ring) mod count is d1, the rest of phi kept
        base = 0 if one_group else (phi // group) * group
        source = kernel.core_at_free_index(layout, base + (phi % ring if ring > 1 else 0) + d1 * ring, at)
        digits = dict(zip(cut, _radix([multipliers[d] for d in cut], d1)))
        offsets = []
        for r, index in enumerate(layout.indices):
            axes = [kernel.axis_index(a) for a, _ in getattr(index, "terms", ()) if kernel.axis_index(a) in digits]
            offsets.append(digits[axes[0]] * slice_shape[r] if axes else 0)
        return source, [0] * len(layout.indices), offsets

    cores = kernel.cores
    ids = np.arange(cores, dtype=np.int64)[None, :]
    d1 = np.arange(count, dtype=np.int64)[:, None]
    source, _, offsets = columns(ids, d1)
    source = np.broadcast_to(np.asarray(source, dtype=np.int64), (count, cores))
    # slice j of a core's partition lies where its group member keeps slice j at rest
    found = kernel.idle_partition(layout, idle_factors)
    if found is None:
        return None
    _, idle_origins = found
    active = kernel.partition_origin(layout, list(kernel.start))
    for r in range(len(layout.indices)):
        want = active[:, r][None, :] + np.broadcast_to(np.asarray(offsets[r]), (count, cores))
        if (idle_origins[source, r] != want).any():
            return None
    if core is None:
        return Pieces(count, tuple(slice_shape), table=_table(lambda at, k: columns(at, k), ids[0], count, cores))
    symbolic = columns(core, AffineExpr.dimension(1))
    return Pieces(count, tuple(slice_shape), columns=(symbolic[0], *symbolic[1], *symbolic[2]))


def _table(columns, origins, count: int, cores: int) -> np.ndarray:
    """(cores, count, 1 + 2 * rank) of a piece map evaluated at every core and piece."""
    d1 = np.arange(count, dtype=np.int64)[:, None]
    found = columns([np.asarray(o)[None, :] for o in origins] if isinstance(origins, list) else origins[None, :], d1)
    flat = [found[0], *found[1], *found[2]]
    return np.stack([np.broadcast_to(np.asarray(c, dtype=np.int64), (count, cores)).T for c in flat], axis=2)
