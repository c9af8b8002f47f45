"""Host arrays cut into per-core tiles and written back, vectorised over cores.

A tile's origin is where it starts in the host array; tiles may cross its end (padding)
or repeat (replicated operands). Re-exported from `irc.interpreter.chip`.
"""

from __future__ import annotations

import numpy as np


def _pad_for(host: np.ndarray, origins: np.ndarray, shape) -> tuple[np.ndarray, np.ndarray]:
    """``host`` zero-padded so every tile lies inside, and the origins shifted to match."""
    if origins.size == 0:
        return host, origins
    low = np.maximum(0, -origins.min(axis=0))
    high = np.maximum(0, origins.max(axis=0) + np.array(shape) - np.array(host.shape))
    if low.any() or high.any():
        host = np.pad(host, list(zip(low.tolist(), high.tolist())))
    return host, origins + low


def gather_tiles(host: np.ndarray, origins: np.ndarray, shape, cores: int) -> np.ndarray:
    """(cores, *shape): the tile of ``host`` at each core's origin, zeros outside."""
    tiles, copies = gather_distinct_tiles(host, origins, shape, cores)
    # a replicated operand: each tile picked once, then copied whole (memcpy speed)
    return tiles if copies is None else tiles[copies]


def gather_distinct_tiles(host: np.ndarray, origins: np.ndarray, shape,
                          cores: int) -> tuple[np.ndarray, np.ndarray | None]:
    """``gather_tiles`` as (tiles, None), or for a replicated operand (cores of other
    output blocks hold the same tile; at most half as many tiles as cores) as its
    distinct tiles and the one each core holds: ``tiles[copies]``."""
    origins = np.broadcast_to(np.asarray(origins, dtype=np.int64), (cores, len(shape)))
    shape = tuple(int(s) for s in shape)
    if shape and all(s > 0 for s in shape) and (origins >= 0).all():
        distinct, first, copies = np.unique(origins, axis=0, return_index=True, return_inverse=True)
        if 2 * len(distinct) <= cores:
            return _gather_blocks(host, origins[first], shape), copies.reshape(-1)
        return _gather_blocks(host, origins, shape), None
    return _gather_padded(host, origins, shape, cores), None


def _gather_padded(host: np.ndarray, origins: np.ndarray, shape: tuple[int, ...], cores: int) -> np.ndarray:
    """``gather_tiles`` through index arrays over ``host`` padded to hold every tile."""
    host, origins = _pad_for(host, origins, shape)
    index = [
        origins[:, d].reshape((cores,) + (1,) * len(shape))
        + np.arange(s).reshape((1,) * (d + 1) + (s,) + (1,) * (len(shape) - d - 1))
        for d, s in enumerate(shape)
    ]
    return host[tuple(index)] if shape else np.broadcast_to(host, (cores,)).copy()


EDGE_SHARE = 0.05
"""Above this share of tiles crossing a tensor's end, a scatter writes them through a padded
copy of it (one pass) rather than element by element."""


def _interior_blocks(host: np.ndarray, shape) -> np.ndarray:
    """The whole blocks of ``host`` as a (*blocks, *shape) view (a ragged edge left out)."""
    whole = [h // s for h, s in zip(host.shape, shape)]
    cropped = host[tuple(slice(0, w * s) for w, s in zip(whole, shape))]
    rank = len(shape)
    inter = [x for w, s in zip(whole, shape) for x in (w, s)]
    return cropped.reshape(inter).transpose(list(range(0, 2 * rank, 2)) + list(range(1, 2 * rank, 2)))


def _edge_index(host: np.ndarray, origins: np.ndarray, shape) -> tuple[tuple, np.ndarray]:
    """Index arrays of the tiles at ``origins`` clipped into ``host``, and which elements
    lie inside it."""
    count, index, inside = len(origins), [], np.ones((len(origins), *shape), dtype=bool)
    for d, s in enumerate(shape):
        idx = origins[:, d].reshape((count,) + (1,) * len(shape)) + np.arange(s).reshape(
            (1,) * (d + 1) + (s,) + (1,) * (len(shape) - d - 1))
        inside &= idx < host.shape[d]
        index.append(np.broadcast_to(np.minimum(idx, host.shape[d] - 1), inside.shape))
    return tuple(index), inside


def _window_grid(host: np.ndarray, step, shape) -> np.ndarray:
    """Every window of ``shape`` whose origin is a multiple of ``step`` and that lies wholly
    in ``host``, as a read-only (*positions, *shape) view of it (no copy): with ``step``
    equal to ``shape`` the blocks of a block grid, with a smaller step overlapping windows
    (a padded step tile reading into its neighbour's rows)."""
    positions = [max(0, (h - s) // t + 1) if h >= s else 0 for h, s, t in zip(host.shape, shape, step)]
    strides = [t * stride for t, stride in zip(step, host.strides)] + list(host.strides)
    return np.lib.stride_tricks.as_strided(host, shape=tuple(positions) + tuple(shape), strides=tuple(strides),
                                           writeable=False)


def _gather_blocks(host: np.ndarray, origins: np.ndarray, shape) -> np.ndarray:
    """``gather_tiles`` for tiles whose origins lie on a grid (per dim, multiples of their
    greatest common divisor): every tile picked through a strided view of ``host`` in one
    copy (no padded copy of ``host``), then the tiles crossing its end rewritten: zeros,
    and their inside parts picked the same way, one pick per distinct inside extent (a
    handful, not one per tile)."""
    tile = np.array(shape)
    if len(origins) == 0:
        return np.zeros((0, *shape), dtype=host.dtype)
    step = np.gcd.reduce(origins, axis=0)
    step = np.where(step > 0, step, tile)            # every origin 0 on a dim: any step
    extent = np.minimum(tile, np.maximum(np.array(host.shape) - origins, 0))   # inside part per tile
    whole = (extent == tile).all(axis=1)
    view = _window_grid(host, step.tolist(), shape)
    if whole.all():
        return view[tuple((origins // step).T)]
    positions = np.array(view.shape[:len(shape)])
    if (positions > 0).all():   # crossing tiles first read a whole tile in place, rewritten below
        out = view[tuple(np.minimum(origins // step, positions - 1).T)]
    else:
        out = np.zeros((len(origins), *shape), dtype=host.dtype)
    edge = np.flatnonzero(~whole)
    out[edge] = 0
    kinds, which = np.unique(extent[edge], axis=0, return_inverse=True)
    for kind, inside in enumerate(kinds):
        if not inside.all():
            continue                                 # wholly outside: zeros
        picked = edge[which.reshape(-1) == kind]
        part = _window_grid(host, step.tolist(), inside.tolist())[tuple((origins[picked] // step).T)]
        out[(picked,) + tuple(slice(0, int(e)) for e in inside)] = part
    return out


def scatter_tiles(host: np.ndarray, tiles: np.ndarray, origins: np.ndarray, shape) -> None:
    """Write each tile into ``host`` at its origin; parts outside ``host`` are dropped."""
    cores = tiles.shape[0]
    if cores == 0:
        return
    if not shape:  # a scalar: every writer holds the whole of it
        host[...] = tiles[0]
        return
    origins = np.broadcast_to(np.asarray(origins, dtype=np.int64), (cores, len(shape)))
    if _scatter_blocks(host, tiles, origins, tuple(int(s) for s in shape)):
        return
    index, mask = [], np.ones(tiles.shape, dtype=bool)
    for d, s in enumerate(shape):
        idx = origins[:, d].reshape((cores,) + (1,) * len(shape)) + np.arange(s).reshape(
            (1,) * (d + 1) + (s,) + (1,) * (len(shape) - d - 1)
        )
        mask &= (idx >= 0) & (idx < host.shape[d])
        index.append(np.broadcast_to(idx, tiles.shape))
    if mask.all():
        host[tuple(index)] = tiles
    else:
        host[tuple(i[mask] for i in index)] = tiles[mask]


def _scatter_blocks(host: np.ndarray, tiles: np.ndarray, origins: np.ndarray, shape) -> bool:
    """``scatter_tiles`` for tiles on a block grid of ``host`` (origins multiples of the
    tile shape): whole blocks assigned through a blocked view, tiles crossing its end
    element by element (the parts outside dropped), without index arrays the size of all
    the tiles. False (nothing written) for tiles off the grid."""
    if not all(s > 0 for s in shape) or (origins < 0).any() or (origins % np.array(shape)).any():
        return False
    tile, extent = np.array(shape), np.array(host.shape)
    whole = (origins + tile <= extent).all(axis=1)
    inside_host = (origins < extent).all(axis=1)       # wholly outside: padding, dropped
    if (whole.sum() < (1 - EDGE_SHARE) * inside_host.sum()):  # many cross the end: a padded copy
        grown = [-(-h // s) * s for h, s in zip(host.shape, shape)]
        target = np.zeros(grown, dtype=host.dtype)
        target[tuple(slice(0, h) for h in host.shape)] = host
        _interior_blocks(target, shape)[tuple((origins[inside_host] // tile).T)] = tiles[inside_host]
        host[...] = target[tuple(slice(0, h) for h in host.shape)]
        return True
    if whole.any():
        _interior_blocks(host, shape)[tuple((origins[whole] // tile).T)] = tiles[whole]
    edge = np.flatnonzero(~whole & inside_host)
    if edge.size:
        index, inside = _edge_index(host, origins[edge], shape)
        host[tuple(i[inside] for i in index)] = tiles[edge][inside]
    return True
