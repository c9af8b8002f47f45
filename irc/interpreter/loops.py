"""Batched execution of a compute-shift loop nest (T10 s4.4, DESIGN.md s5).

A kernel's device program states its loop nest unrolled: per step one ``device.mma`` with
per-core window tables (one per product, for a kernel of several: a fused gradient
pair), between steps ``device.shift`` (a ring permutation of a buffer) and
``device.sync``. Executed instruction by instruction, every step is a handful of numpy
calls over all cores, but a rotating plan with hundreds of steps of small tiles re-reads
its stationary operands once per step. ``run_loop`` executes such a run of instructions
(per product, on one output and the same inputs; the products' outputs independent) at
once, with a number of numpy calls that depends neither on the cores nor, beyond reading
each instruction's tables, on the steps:

1. Shifts are permutations: instead of moving data, each buffer keeps a table of which
   original core's data every core holds (``holder``); at each step, core ``c`` reads the
   window at its offset in the original data of ``holder[c]``. Every sub-task (step,
   core) is thus named by the content of its input windows (content ids, which the chip
   keeps per core: equal ids hold equal data, plus the window offset) and by the output
   window it adds into (original core and offset: the partial sum travels with its data).
2. The sub-tasks are a block matrix product when they form a grid: each left window is
   one (r, i, l), each right window one (r, l, j), each output window one (r, i, j), and
   every (r, i, l, j) occurs once. Then the run computes, for every group r, the whole
   ``[A_(i,l)] @ [B_(l,j)]`` with one batched matmul over the stacked windows: each
   distinct window is read and converted once, and the k-sum of all steps and of every
   step's tile happens inside the matmul, in f32 (the accumulators' type). The grid is
   found from the ids alone (connected components: windows sharing a row, a column or a
   k-block), and checked: anything else is run instruction by instruction.
3. The output windows receive their sums, the buffers take their final permutation, and
   the timeline records every instruction with the cycles its sequential execution pays
   (planned == interpreted holds as before).

The chip's checks stay exact: every buffer must be live and written on every core the run
reads, every window inside its buffer; when one fails the run is executed instruction by
instruction, which raises the fault at the instruction that commits it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from irc.dialects.te_expr import AffineIndex, TensorExpr, product_reads
from irc.interpreter.te_eval import compute_dtype


@dataclass
class Compute:
    """One ``device.mma`` of the run: its window tables (output first), where it is, and
    the product (``Loop.products``) it computes a step of."""

    tables: list[np.ndarray]
    where: str
    name: str
    product: int = 0


@dataclass
class Shift:
    buffer: object
    receive: object
    source: np.ndarray
    where: str


@dataclass
class Sync:
    cores: int
    where: str


@dataclass
class Product:
    """The compute steps of a run on one output and the same inputs."""

    expression: TensorExpr
    tiles: dict[str, int]
    output: object
    inputs: list
    subtask: object


@dataclass
class Loop:
    """A run of compute steps of one or more products (a kernel of several products
    computes a step of each between two shifts; their outputs are independent), with the
    shifts and syncs between them, in program order."""

    products: list[Product]
    cores: int
    events: list


def _compact(labels: np.ndarray, bound: int | None = None, first: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """Labels renumbered 0.. in order of value, and (with ``first``) the first position of
    each: by a dense table when the labels are small non-negative integers (O(n)), else by
    sorting."""
    n = len(labels)
    if n == 0:
        return labels.astype(np.int64), np.zeros(0, dtype=np.int64)
    bound = int(labels.max()) + 1 if bound is None else bound
    if labels.min() >= 0 and bound <= 4 * n + 1024:
        present = np.zeros(bound, dtype=bool)
        present[labels] = True
        remap = np.cumsum(present) - 1
        ids = remap[labels]
        if not first:
            return ids, None
        positions = np.empty(int(remap[-1]) + 1, dtype=np.int64)
        positions[ids[::-1]] = np.arange(n - 1, -1, -1)   # the last write of each id is its first
        return ids, positions
    _, positions, inverse = np.unique(labels, return_index=True, return_inverse=True)
    return inverse.reshape(-1), positions


def _components(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Connected components of the bipartite graph whose edges are (x[n], y[n]): a label
    per edge (x, y compact ids)."""
    nx, ny = int(x.max()) + 1, int(y.max()) + 1
    if nx * ny <= len(x) // 4:
        # few distinct edges (the components of rows and columns): label each once
        pair, first = _compact(x * ny + y, nx * ny)
        return _components(x[first], y[first])[pair]
    label = x.copy()
    by_y = np.empty(ny, dtype=np.int64)
    by_x = np.empty(nx, dtype=np.int64)
    while True:
        by_y.fill(np.iinfo(np.int64).max)
        np.minimum.at(by_y, y, label)
        new = by_y[y]
        by_x.fill(np.iinfo(np.int64).max)
        np.minimum.at(by_x, x, new)
        new = np.minimum(new, by_x[x])
        if (new == label).all():
            return _compact(label, len(by_x), first=False)[0]
        label = new


def _local(group: np.ndarray, label: np.ndarray, groups: int) -> tuple[np.ndarray, int] | None:
    """Each edge's label renumbered 0.. within its group (every label lies in one group);
    None unless every group has the same number of labels (then also that number)."""
    owner = np.empty(int(label.max()) + 1, dtype=np.int64)
    owner[label] = group
    counts = np.bincount(owner, minlength=groups)
    if counts.min() != counts.max():
        return None
    order = np.argsort(owner, kind="stable")
    local = np.empty(len(owner), dtype=np.int64)
    local[order] = np.arange(len(owner)) % int(counts[0])
    return local[label], int(counts[0])


def _distinct(keys: np.ndarray, bound: int) -> int:
    """How many distinct values ``keys`` (in ``[0, bound)``) holds."""
    return int(np.count_nonzero(np.bincount(keys, minlength=bound)))


def _content_ranks(tags: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per core the rank of its content id, contents ranked by the first core holding
    them; and that first core of each rank (where a window of that content is read)."""
    _, first, inverse = np.unique(tags, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[inverse.reshape(-1)], first[order]


def _window_ids(content: np.ndarray, flat: np.ndarray, which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Compact ids of windows named by (content rank, flat offset), in that order (the
    memory order of the windows at their first holders), and the first sub-task naming
    each id. Sub-task (step s, core c) reads its offset at ``flat[which[s], c]`` (the
    distinct tables' offsets: a loop nest repeats its tables, so they are ranked once)."""
    offset_ids, _ = _compact(flat.reshape(-1), first=False)
    offsets = int(offset_ids.max()) + 1 if offset_ids.size else 1
    return _compact(content * offsets + offset_ids.reshape(flat.shape)[which].reshape(-1))


def _flat_offsets(offsets: np.ndarray, shape) -> np.ndarray:
    """Row-major element index of each (.., rank) window origin inside ``shape``."""
    strides = np.array([math.prod(shape[d + 1:]) for d in range(len(shape))], dtype=np.int64)
    return offsets @ strides if len(shape) else np.zeros(offsets.shape[:-1], dtype=np.int64)


def _block_view(data: np.ndarray, shape) -> np.ndarray | None:
    """``data`` (cores, *full) viewed as (cores, *blocks, *shape), or None off the grid."""
    full = data.shape[1:]
    if not shape or not all(s > 0 and f % s == 0 for s, f in zip(shape, full)):
        return None
    rank = len(shape)
    inter = [data.shape[0]] + [x for f, s in zip(full, shape) for x in (f // s, s)]
    return data.reshape(inter).transpose([0] + [1 + 2 * d for d in range(rank)] + [2 + 2 * d for d in range(rank)])


def _affine(values: np.ndarray) -> tuple[int, list[int]] | None:
    """(base, per-axis steps) when ``values`` is ``base + sum_k step_k * index_k``."""
    base = int(values.reshape(-1)[0]) if values.size else 0
    steps = []
    for k, extent in enumerate(values.shape):
        unit = tuple(1 if d == k and extent > 1 else 0 for d in range(values.ndim))
        steps.append(int(values[unit]) - base if extent > 1 else 0)
    grid = base + sum(step * np.arange(extent).reshape([-1 if d == k else 1 for d in range(values.ndim)])
                      for k, (step, extent) in enumerate(zip(steps, values.shape)))
    return (base, steps) if np.array_equal(values, np.broadcast_to(grid, values.shape)) else None


def strided_windows(data: np.ndarray, cores: np.ndarray, offsets: np.ndarray, shape, layout: tuple[int, ...],
                    writeable: bool = False) -> np.ndarray | None:
    """``(*layout, *shape)``: the windows of ``data[cores[n]]`` at ``offsets[n]`` (n over
    ``layout`` in row-major order) as a strided view of ``data``, uncopied, when they lie
    on its block grid at places that are an affine function of their position in
    ``layout``; else None. ``writeable``: a view to write through (``data`` contiguous,
    the windows distinct)."""
    shape = tuple(int(s) for s in shape)
    if writeable and not data.flags.c_contiguous:
        return None
    view = _block_view(data, shape)
    if view is None or (offsets % np.array(shape)).any():
        return None
    coordinates = (cores,) + tuple((offsets // np.array(shape)).T)
    found = [_affine(c.reshape(layout)) for c in coordinates]
    if all(f is not None for f in found):
        start = view[tuple(base for base, _ in found)]
        strides = [sum(f[1][k] * view.strides[d] for d, f in enumerate(found)) for k in range(len(layout))]
        return np.lib.stride_tricks.as_strided(
            start, shape=tuple(layout) + start.shape, strides=tuple(strides) + start.strides, writeable=writeable)
    # blocks evenly spaced in memory: the core and block coordinates as one index, when
    # the windows span whole rows of the buffer (a k-block walking from one core's rows
    # into the next core's)
    lead = view.shape[:len(coordinates)]
    spanned = [d for d, extent in enumerate(lead) if extent > 1]
    if spanned and all(view.strides[d] == view.strides[e] * lead[e] for d, e in zip(spanned, spanned[1:])):
        flat = _affine(np.ravel_multi_index(coordinates, lead).reshape(layout))
        if flat is not None:
            base, steps = flat
            start = view[np.unravel_index(base, lead)]
            unit = view.strides[spanned[-1]]
            return np.lib.stride_tricks.as_strided(
                start, shape=tuple(layout) + start.shape, strides=tuple(s * unit for s in steps) + start.strides,
                writeable=writeable)
    return None


def gather_windows(data: np.ndarray, cores: np.ndarray, offsets: np.ndarray, shape,
                   layout: tuple[int, ...] | None = None) -> np.ndarray:
    """(n, *shape): the window of ``data[cores[n]]`` at ``offsets[n]`` for every n. With
    ``layout`` (n = its product), windows whose block coordinates are an affine function
    of their position in ``layout`` come back as a strided view of ``data``, uncopied:
    ``(*layout, *shape)`` (``strided_windows``)."""
    shape = tuple(int(s) for s in shape)
    if layout is not None:
        found = strided_windows(data, cores, offsets, shape, layout)
        if found is not None:
            return found
    view = _block_view(data, shape)
    if view is not None and not (offsets % np.array(shape)).any():
        # windows on the buffer's block grid: pick whole blocks (memcpy speed)
        return view[(cores,) + tuple((offsets // np.array(shape)).T)]
    index = [cores.reshape((-1,) + (1,) * len(shape))]
    for d, s in enumerate(shape):
        index.append(offsets[:, d].reshape((-1,) + (1,) * len(shape))
                     + np.arange(s).reshape((1,) * (d + 1) + (s,) + (1,) * (len(shape) - d - 1)))
    return data[tuple(index)]


def _plain_axes(indices) -> list[str | None]:
    return [None if isinstance(i, AffineIndex) and not i.terms else i.simple_axis for i in indices]


def run_loop(chip, loop: Loop) -> bool:
    """Execute ``loop`` on ``chip`` as a batched block product (module docstring); False,
    with nothing changed, when the run is not one (the caller runs it instruction by
    instruction)."""
    outputs = [p.output for p in loop.products]
    if len({id(o) for o in outputs}) != len(outputs) or \
            any(o is b for o in outputs for p in loop.products for b in p.inputs):
        return False   # one product reads or writes another's output: not independent
    plans = []
    for index in range(len(loop.products)):
        plan = _prepare(loop, index)
        if plan is None:
            return False
        plans.append(plan)
    _execute(chip, loop, plans)
    return True


@dataclass
class _Prepared:
    out_core: np.ndarray       # per output window: its original core
    out_offset: np.ndarray     # per output window: its offset (rank)
    sums: np.ndarray           # (groups, I, J, *window): each output window's sums (a view)
    holders: dict              # id(buffer) -> final holder table


def _prepare(loop: Loop, index: int) -> _Prepared | None:
    """Check that product ``index`` of ``loop`` is a block product and compute its sums;
    None (nothing changed) otherwise. Reads the chip's state, never writes it."""
    product = loop.products[index]
    expr = product.expression
    out, inputs, cores = product.output, product.inputs, loop.cores
    found = _independent_product(loop, index)
    if found is None:
        return None
    computes, scale, left, right, work = found
    roles = _axis_roles(expr, left, right)
    if roles is None:
        return None
    tiles = product.tiles
    factor = scale * math.prod(tiles[a] for a in expr.axes if a not in roles.lk + roles.rk + roles.wk)
    shapes = [_window_shape(access, tiles) for access in (expr.output, left, right)]
    order = [expr.output.tensor, left.tensor, right.tensor]
    names = [expr.output.tensor, *expr.inputs]
    position = {name: i for i, name in enumerate(names)}
    buffers = [out, *inputs]
    every = [b for p in loop.products for b in (p.output, *p.inputs)]   # what the run's shifts may move
    holder, snaps = _holders(loop, index, every, buffers)
    windows = _windows(computes, [position[name] for name in order], buffers, shapes, out, snaps, cores)
    if windows is None:
        return None
    named, tables, homes = windows
    located = _Located(tables, homes, cores)
    grid = _block_grid(named, shapes, len(computes) * cores)
    if grid is None:
        return None
    if grid.L > 1 and out.dtype.kind == "f" and out.dtype != work:
        return None   # several partial sums would each be rounded: run them step by step
    out_view = _block_view(out.data, shapes[0])
    if out_view is None or (tables[0][0] % np.array(shapes[0])).any():
        return None   # output windows off the block grid might overlap
    left_buffer, right_buffer = (buffers[position[nm]] for nm in order[1:])
    sums = _block_sums(grid, roles, tiles, shapes, (left_buffer, right_buffer), located, work, factor)
    pick = grid.firsts[0][grid.arranged[2].reshape(-1)]
    final = {id(b_): holder[id(b_)] for b_ in every}
    return _Prepared(*located(0, pick), sums, final)


def _independent_product(loop: Loop, index: int):
    """``(computes, scale, left, right, work)`` when product ``index`` is a sum of two
    distinct reads' product, its buffers live and written on the loop's cores, the
    shifts move its (and the other products') buffers into live receive buffers of
    their own, and its operands compute in one dtype; None otherwise."""
    product = loop.products[index]
    expr = product.expression
    out, inputs, cores = product.output, product.inputs, loop.cores
    computes = [e for e in loop.events if isinstance(e, Compute) and e.product == index]
    if not computes or expr.combiner != "+=":
        return None
    found = product_reads(expr)
    if found is None:
        return None
    scale, (left, right) = found
    buffers = [out, *inputs]
    if left.tensor == right.tensor or out in inputs or len(inputs) != 2:
        return None
    every = [b for p in loop.products for b in (p.output, *p.inputs)]   # what the run's shifts may move
    receives = {id(e.receive) for e in loop.events if isinstance(e, Shift)}
    for event in loop.events:
        if isinstance(event, Shift):
            if not any(event.buffer is b for b in every) or any(event.receive is b for b in every) \
                    or len(event.source) != cores:
                return None
            if not event.receive.live or event.receive.cores != cores:
                return None
    for buffer in buffers:
        if not buffer.live or buffer.cores != cores or not buffer.written[:cores].all():
            return None
    if len(receives) != len({id(e.buffer) for e in loop.events if isinstance(e, Shift)}):
        return None
    work = compute_dtype(out.dtype)
    if any(compute_dtype(b.dtype) != work for b in inputs):
        return None
    return computes, scale, left, right, work


@dataclass
class _Roles:
    """The axis roles of one sub-task (as irc.interpreter.contract.contract reads them): each
    read's and the output's axes per dim (None: a constant index), and the batch, m, n
    and k axes of the product."""

    la: list
    ra: list
    lk: list
    rk: list
    wk: list
    batch: list
    m: list
    n: list
    k: list


def _axis_roles(expr: TensorExpr, left, right) -> _Roles | None:
    """The product's axis roles, or None when an axis repeats in a tensor, the output
    spreads along an axis no read has, or a read sums an axis the other lacks."""
    la, ra, written = _plain_axes(left.indices), _plain_axes(right.indices), _plain_axes(expr.output.indices)
    lk, rk, wk = ([a for a in axes if a is not None] for axes in (la, ra, written))
    if len(set(lk)) != len(lk) or len(set(rk)) != len(rk) or len(set(wk)) != len(wk):
        return None
    if any(a not in lk and a not in rk for a in wk) or any(a not in wk and (a not in lk or a not in rk) for a in lk + rk):
        return None
    batch = [a for a in wk if a in lk and a in rk]
    m = [a for a in wk if a in lk and a not in rk]
    n = [a for a in wk if a in rk and a not in lk]
    k = [a for a in lk if a in rk and a not in wk]
    return _Roles(la, ra, lk, rk, wk, batch, m, n, k)


def _window_shape(access, tiles: dict) -> tuple[int, ...]:
    return tuple(1 if a is None else tiles[a] for a in _plain_axes(access.indices))


def _holders(loop: Loop, index: int, every: list, buffers: list) -> tuple[dict, dict]:
    """Which original core's data each core holds: per buffer the shifts may move, after
    the loop; per buffer of the product, at each of its compute steps."""
    cores = loop.cores
    holder = {id(b): np.arange(cores, dtype=np.int64) for b in every}
    snaps = {id(b): [] for b in buffers}
    for event in loop.events:
        if isinstance(event, Compute) and event.product == index:
            for b in buffers:
                snaps[id(b)].append(holder[id(b)])
        elif isinstance(event, Shift):
            holder[id(event.buffer)] = holder[id(event.buffer)][event.source]
    return holder, snaps


def _windows(computes: list, positions: list[int], buffers: list, shapes: list, out, snaps: dict, cores: int):
    """Per operand (output, left, right: their ``positions`` among the product's
    ``buffers`` and their window ``shapes``, in that order) the window ids of every
    sub-task, their offset tables and each content's first core; None when a window
    leaves its buffer.

    Inputs are identified by content (equal tags and offsets hold equal data), the output
    by place (its original core and offset: partial sums travel with it). A loop nest
    repeats its window tables: each distinct table is checked and flattened once, and a
    sub-task (step s, core c) reads row c of its step's table."""
    named, tables, homes = [], [], []
    for at, shape in zip(positions, shapes):
        buffer = buffers[at]
        distinct, which = {}, []
        for c in computes:
            table = c.tables[at]
            which.append(distinct.setdefault(id(table), (len(distinct), table))[0])
        stacked = np.stack([np.broadcast_to(t, (cores, len(shape))) for _, t in distinct.values()])
        if stacked.size and ((stacked < 0).any() or (stacked + np.array(shape) > np.array(buffer.shape)).any()):
            return None
        flat = _flat_offsets(stacked, buffer.shape)     # (distinct tables, cores)
        rank, home = _content_ranks(buffer.tags[:cores] if buffer is not out else np.arange(cores))
        content = rank[np.stack(snaps[id(buffer)]).reshape(-1)]      # (steps * cores)
        named.append(_window_ids(content, flat, np.array(which)))
        tables.append((stacked, np.array(which), content))
        homes.append(home)
    return named, tables, homes


@dataclass
class _Located:
    """Where the windows of the sub-tasks are, from `_windows`' tables and homes."""

    tables: list
    homes: list
    cores: int

    def __call__(self, lead: int, pick: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The first core holding the windows of sub-tasks ``pick`` of operand ``lead``,
        and their offsets."""
        stacked, which, content = self.tables[lead]
        return self.homes[lead][content[pick]], stacked[which[pick // self.cores], pick % self.cores]


@dataclass
class _Grid:
    """The sub-tasks as a block product: per group, rows i of I, columns j of J and
    k-blocks l of L; each operand's first sub-task per window and its windows arranged
    by place ((group, i, l) left, (group, l, j) right, (group, i, j) output)."""

    groups: int
    I: int  # noqa: E741 - the paper's block counts
    J: int
    L: int
    firsts: tuple      # output, left, right: the first sub-task of each window id
    arranged: tuple    # left, right, output: the window id at each place


def _block_grid(named: list, shapes: list, total: int) -> _Grid | None:
    """The grid of the block product the window ids form, or None when they form none.

    Rows (i) join output windows sharing a left window, columns (j) those sharing a right
    window, k-blocks (l) left and right windows met together (k-blocks are numbered in
    the memory order of the larger operand's windows, so that its windows, read in block
    order, are most often a strided view of its buffer)."""
    (g, g_first), (a, a_first), (b, b_first) = named
    left_larger = (int(a.max()) + 1) * math.prod(shapes[1]) > (int(b.max()) + 1) * math.prod(shapes[2])
    rows, cols = _components(a, g), _components(b, g)
    ks = _components(a, b) if left_larger else _components(b, a)
    group = _components(rows, cols)
    groups = int(group.max()) + 1
    found_i, found_j, found_l = _local(group, rows, groups), _local(group, cols, groups), _local(group, ks, groups)
    if found_i is None or found_j is None or found_l is None:
        return None
    (i, I), (j, J), (l, L) = found_i, found_j, found_l  # noqa: E741
    if groups * I * J * L != total:
        return None
    if _distinct(((group * I + i) * L + l) * J + j, total) != total:
        return None
    # each window's place in its stack: (group, i, l) for the left, (group, l, j) for the
    # right, (group, i, j) for the output; one window per place, one place per window
    places = [(a, (group * I + i) * L + l, (groups, I, L)),
              (b, (group * J + j) * L + l, (groups, J, L)),
              (g, (group * I + i) * J + j, (groups, I, J))]
    for ids, key, shape in places:
        count = math.prod(shape)
        if int(ids.max()) + 1 != count or _distinct(key, count) != count:
            return None
    arranged = tuple(np.empty(shape, dtype=np.int64) for _, _, shape in places)
    for arrange, (ids, key, _) in zip(arranged, places):
        arrange.reshape(-1)[key] = ids
    return _Grid(groups, I, J, L, (g_first, a_first, b_first), arranged)


def _block_sums(grid: _Grid, roles: _Roles, tiles: dict, shapes: list, operands: tuple, located: _Located,
                work: np.dtype, factor: float) -> np.ndarray:
    """Every output window's sums, (groups, I, J, *window), as a view of one stacked
    product of the operands' blocks (every distinct window once, converted to the
    compute dtype once)."""
    size = lambda axes: int(math.prod(tiles[a] for a in axes))  # noqa: E731
    batch, m, n, k = roles.batch, roles.m, roles.n, roles.k
    _, a_first, b_first = grid.firsts
    arrange_a, arrange_b, _ = grid.arranged

    def blocks_of(buffer, first, arrange, shape, axes, dims, lead):
        """The windows named in ``arrange``, as (*arrange.shape, TB, TR, TC) blocks."""
        pick = first[arrange.reshape(-1)]
        holders, offsets = located(lead, pick)
        # a replicated load's distinct tiles as they are (``Buffer.data``): no copies made
        found = gather_windows(*buffer.rows(holders), offsets, shape, arrange.shape)
        keep = [d for d, a_ in enumerate(axes) if a_ is not None]
        named = [axes[d] for d in keep]
        lead_ = arrange.ndim
        # (*arrange, *window) without the constant dims, tile axes in (TB, TR, TC) order:
        # only splits, drops of unit axes and transposes, so a view stays a view
        found = found.reshape(arrange.shape + tuple(shape[d] for d in keep))
        found = found.transpose(list(range(lead_)) + [lead_ + named.index(x) for x in dims[0] + dims[1] + dims[2]])
        return found.reshape(arrange.shape + (size(dims[0]), size(dims[1]), size(dims[2])))

    # left blocks (g, I, L, TB, TM, TK) as (g, TB, I, TM, L, TK), right blocks
    # (g, J, L, TB, TK, TN) as (g, TB, L, TK, J, TN): views, converted when stacked
    left_buffer, right_buffer = operands
    left = blocks_of(left_buffer, a_first, arrange_a, shapes[1], roles.la, (batch, m, k), 1)
    right = blocks_of(right_buffer, b_first, arrange_b, shapes[2], roles.ra, (batch, k, n), 2)
    left, right = left.transpose(0, 3, 1, 4, 2, 5), right.transpose(0, 3, 2, 4, 1, 5)
    product = _stacked_product(left, right, work)      # (g, TB, I*TM, J*TN)
    if factor != 1:
        product *= work.type(factor)
    # (g, TB, I*TM, J*TN) -> per output window (g, I, J) its tile in the buffer's layout,
    # as a view (splits and a transpose of the product, unit axes for constant dims)
    split = product.reshape((grid.groups,) + tuple(tiles[x] for x in batch) + (grid.I,) + tuple(tiles[x] for x in m)
                            + (grid.J,) + tuple(tiles[x] for x in n))
    at = {x: d for d, x in enumerate([None] + batch + [None] + m + [None] + n)}
    lead = [0, 1 + len(batch), 2 + len(batch) + len(m)]
    return split.transpose(lead + [at[x] for x in roles.wk]).reshape((grid.groups, grid.I, grid.J) + shapes[0])
SLAB_BYTES = 1 << 24   # the larger operand is stacked (converted) at most this much at a time


def _stacked_product(left: np.ndarray, right: np.ndarray, work: np.dtype) -> np.ndarray:
    """``[A_(i,l)] @ [B_(l,j)]`` per group and batch from the block views ``left``
    (g, TB, I, TM, L, TK) and ``right`` (g, TB, L, TK, J, TN), as (g, TB, I*TM, J*TN) in
    ``work``. One product over all columns is far faster in numpy than a batch of small
    ones; but stacking the larger operand whole would convert it into a fresh array as
    large as its buffer in f32 (630 MB for seed 003's B, replicas included), paying its
    page faults on every run: it is stacked a slab of its free blocks (rows of the left,
    columns of the right) at a time, into one scratch array, and each slab multiplied into
    its part of the result."""
    groups, TB, I, TM, L, TK = left.shape
    J, TN = right.shape[4], right.shape[5]
    product = np.empty((groups, TB, I * TM, J * TN), dtype=work)
    left_larger = left.size > right.size
    blocks, tile = (I, TM) if left_larger else (J, TN)
    slab = max(1, min(blocks, SLAB_BYTES // (groups * TB * L * TK * tile * work.itemsize)))
    if left_larger:   # the right whole: (g, TB, L*TK, J*TN)
        whole = np.empty((groups, TB, L * TK, J * TN), dtype=work)
        whole.reshape(groups, TB, L, TK, J, TN)[...] = right
    else:             # the left whole: (g, TB, I*TM, L*TK)
        whole = np.empty((groups, TB, I * TM, L * TK), dtype=work)
        whole.reshape(groups, TB, I, TM, L, TK)[...] = left
    scratch = np.empty(groups * TB * L * TK * slab * tile, dtype=work)
    for start in range(0, blocks, slab):
        count = min(slab, blocks - start)
        rows = slice(start * tile, (start + count) * tile)
        part = scratch[:groups * TB * L * TK * count * tile]
        if left_larger:   # rows start.. of the left: (g, TB, count*TM, L*TK)
            part = part.reshape(groups, TB, count * TM, L * TK)
            part.reshape(groups, TB, count, TM, L, TK)[...] = left[:, :, start:start + count]
            operands, target = (part, whole), product[:, :, rows]
        else:             # columns start.. of the right: (g, TB, L*TK, count*TN)
            part = part.reshape(groups, TB, L * TK, count * TN)
            part.reshape(groups, TB, L, TK, count, TN)[...] = right[:, :, :, :, start:start + count]
            operands, target = (whole, part), product[..., rows]
        if groups * TB == 1:   # numpy's 2-D product is faster than a batch of one
            operands = (operands[0][0, 0], operands[1][0, 0])
            target = target[0, 0]
        if count == blocks:
            np.matmul(*operands, out=target)
        else:   # numpy's product into a strided part of an array can be far slower
            target[...] = np.matmul(*operands)
    return product


def _execute(chip, loop: Loop, preps: list[_Prepared]) -> None:
    """Write the sums, put every buffer in its final place, record the timeline."""
    cores = loop.cores
    for product, prep in zip(loop.products, preps):
        out = product.output
        sums, work = prep.sums, prep.sums.dtype
        window = sums.shape[3:]
        # the windows in place when they are a strided view of the buffer (one pass), else
        # gathered, summed and scattered back; one rounding into the buffer's type either way
        target = strided_windows(out.data, prep.out_core, prep.out_offset, window, sums.shape[:3], writeable=True)
        if target is not None and out.dtype == work:
            target += sums
        elif target is not None:
            target[...] = target.astype(work) + sums
        else:
            view = _block_view(out.data, window)
            index = (prep.out_core,) + tuple((prep.out_offset // np.array(window)).T)
            current = view[index].astype(work, copy=False)
            current.reshape(sums.shape)[...] += sums
            view[index] = current
    # buffers take their final places (each once: products share inputs); a receive
    # buffer holds nothing readable after
    buffers = list({id(b): b for p in loop.products for b in (p.output, *p.inputs)}.values())
    for buffer in buffers:
        final = preps[0].holders[id(buffer)]
        if (final != np.arange(cores)).any() and buffer.copies is not None:
            buffer.copies = buffer.copies[final]      # distinct tiles stay as they are
        elif (final != np.arange(cores)).any():
            buffer.data = buffer.data[final]
            buffer.tags = buffer.tags[final]
            buffer.written = buffer.written[final]
        buffer.touch()
    for product in loop.products:
        product.output.tags = chip._fresh_tags(product.output.cores)
    for event in loop.events:
        if isinstance(event, Shift):
            event.receive.written[:] = False
            event.receive.touch()
    # the timeline: every instruction, as executed one by one
    compute = [chip.cost.compute_cycles(chip.device, p.subtask) for p in loop.products]
    for event in loop.events:
        if isinstance(event, Compute):
            chip.steps += 1
            chip._record("compute", event.name, compute[event.product], cores, event.where)
        elif isinstance(event, Shift):
            chip.record_shift(event.buffer, event.source, cores, event.where)
        else:
            chip.sync(event.cores, event.where)
