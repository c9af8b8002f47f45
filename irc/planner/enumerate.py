"""Enumerate the plan space of one operator (T10 s4.2 constraints, s4.3.1 pruning).

Spatial plans: every ``F_op`` with any integer factor per axis (extents are padded up to
a multiple, T10 s4.3.1), ``F_op[d] <= L_d``, cores used between the parallelism floor
and the device's core count, and padded volume within ``max_padding``; a reduction
axis whose padded points would change the fold (``OpSpec.unpadded_axes``) is only cut
as ``OpSpec.padding_admitted`` allows, so every plan of the space lowers.

Temporal plans, per spatial plan: per axis the tuple of ``f_t`` of the tensors indexing
it, each a divisor of its tensor's sharing count, forming a divisibility chain, the
largest at most the per-core extent; then the per-axis tuples are combined keeping only
tensors whose ``prod(f_t)`` divides their sharing count and plans within ``max_padding``.

The space is walked in two levels, so that the search can bound before it enumerates:

- *step groups*: a spatial plan and its steps per axis ``T_d`` (the largest ``f_t`` on
  axis d). A group fixes the step tiles, the compute sub-task, the padding and hence
  the compute time, and bounds the memory (``irc.planner.bounds``). Groups are streamed
  in chunks of bounded size, in lexicographic order of (F_op, T).
- *candidates*: a group expanded into every ``f_t`` assignment with those steps; only
  the groups a bound cannot discard are expanded (``PlanSpace.expand``), again in
  chunks of bounded size.

The per-axis options (admissible steps, pace tuples) depend only on the sharing counts
of the tensors indexing the axis and its per-core extent, so they are computed once per
distinct (sharing counts, extent) row and shared by every spatial plan and group with
that row; the pace tuples of one steps value depend only on the sharing counts' gcds
with it (``_paces_with_steps``). Every candidate carries an order key (its spatial
plan's index, then per axis its pace tuple in mixed radix, which orders one row's tuples
as their index in its table does): sorting by it gives the order of the full
enumeration, which breaks ties between equal plans the same way whatever was pruned.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator

import numpy as np

from irc.devices import Device
from irc.plans.constraints import PADDING_TOLERANCE, minimum_cores
from irc.plans.spec import OpSpec

# Rows materialised at once while streaming groups or candidates: bounds the peak memory
# of a search whatever the size of its plan space.
GROUP_CHUNK = 1 << 18
CANDIDATE_CHUNK = 1 << 16


@dataclass(frozen=True)
class CandidateSet:
    """``op_factors[i]`` (F_op) and ``temporal_factors[i, v, d]`` (f_t) of candidate i;
    ``order[i]``: its key in the full enumeration's order (spatial plan index, then per
    axis a key ordering its pace tuple as its index in the axis' table does), or None."""

    op_factors: np.ndarray        # int64 [N, axes]
    temporal_factors: np.ndarray  # int64 [N, tensors, axes]
    order: np.ndarray | None = None  # int64 [N, 1 + axes]

    def __len__(self) -> int:
        return len(self.op_factors)


@dataclass(frozen=True)
class StepGroups:
    """Step groups: ``plan[g]`` indexes ``PlanSpace.op_factors``, ``steps[g, d]`` is T_d."""

    plan: np.ndarray   # int64 [G]
    steps: np.ndarray  # int64 [G, axes]

    def __len__(self) -> int:
        return len(self.plan)

    def take(self, index) -> StepGroups:
        return StepGroups(self.plan[index], self.steps[index])

    @staticmethod
    def concatenate(parts: list[StepGroups], n_axes: int) -> StepGroups:
        if not parts:
            return StepGroups(np.zeros(0, dtype=np.int64), np.zeros((0, n_axes), dtype=np.int64))
        return StepGroups(np.concatenate([p.plan for p in parts]), np.concatenate([p.steps for p in parts]))


@dataclass(frozen=True)
class StepPrefixes:
    """Step groups with the steps of ``depth[r]`` axes chosen (the first of
    ``PlanSpace.axis_order``): ``steps[r, d]`` is T_d on those axes and 1 on the others;
    ``ratio[r]`` the padding so far. A prefix of depth ``len(axes)`` is a step group."""

    plan: np.ndarray   # int64 [R]
    steps: np.ndarray  # int64 [R, axes]
    depth: np.ndarray  # int64 [R]
    ratio: np.ndarray  # float64 [R]

    def __len__(self) -> int:
        return len(self.plan)

    def take(self, index) -> StepPrefixes:
        return StepPrefixes(self.plan[index], self.steps[index], self.depth[index], self.ratio[index])

    def groups(self) -> StepGroups:
        return StepGroups(self.plan, self.steps)

    @staticmethod
    def concatenate(parts: list[StepPrefixes], n_axes: int) -> StepPrefixes:
        parts = [p for p in parts if len(p)]
        if not parts:
            return StepPrefixes(np.zeros(0, np.int64), np.zeros((0, n_axes), np.int64),
                                np.zeros(0, np.int64), np.zeros(0))
        return StepPrefixes(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("plan", "steps", "depth", "ratio")))


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def spatial_plans(
    spec: OpSpec,
    device: Device,
    min_utilization: float,
    max_padding: float,
    max_partitioned_axes: int | None = None,
) -> np.ndarray:
    """Every admissible F_op, in lexicographic order ([S, axes]).

    Built axis by axis over arrays of partial plans (no recursion per plan): each partial
    plan is extended by every factor of the next axis within the core count, the padding
    limit (each ratio >= 1, so a partial product above the limit prunes the subtree) and
    the partitioned-axes limit, after dropping partial plans that cannot reach the
    utilisation floor even with the largest factors of the remaining axes; rows extended
    in order, factors ascending, keep the lexicographic order. Memory: the partial plans
    within the core count, never their product with every factor."""
    extents = spec.extents
    n_axes = len(extents)
    floor = minimum_cores(spec, device, min_utilization)
    limit = max_padding * (1 + PADDING_TOLERANCE)
    # per axis: admissible factors and their padding ratios
    options = []
    for axis, extent in zip(spec.axis_names, extents):
        factors = np.arange(1, min(extent, device.cores) + 1, dtype=np.int64)
        ratios = factors * -(-extent // factors) / extent
        keep = ratios <= limit
        # an unpadded reduction axis (OpSpec.unpadded_axes) of a sum is cut evenly; a
        # max=/min= fold may clamp, which any factor allows (its steps are checked below)
        if axis in spec.unpadded_axes and spec.combiner not in ("max=", "min="):
            keep &= extent % factors == 0
        options.append((factors[keep], ratios[keep]))
    # largest product reachable by the remaining axes, for the utilisation floor
    reach = [1] * (n_axes + 1)
    for d in range(n_axes - 1, -1, -1):
        reach[d] = min(device.cores, reach[d + 1] * int(options[d][0].max()))
    plans = np.zeros((1, 0), dtype=np.int64)
    cores = np.ones(1, dtype=np.int64)
    ratio = np.ones(1)
    splits = np.zeros(1, dtype=np.int64)
    for d, (factors, ratios) in enumerate(options):
        alive = cores * reach[d] >= floor
        plans, cores, ratio, splits = plans[alive], cores[alive], ratio[alive], splits[alive]
        # each partial plan with the factors its core count leaves room for (ascending:
        # a prefix of the axis' options), rows in order
        counts = np.searchsorted(factors, device.cores // cores, side="right")
        row = np.repeat(np.arange(len(plans)), counts)
        option = np.arange(len(row)) - np.repeat(np.cumsum(counts) - counts, counts)
        padded = ratio[row] * ratios[option]
        split = splits[row] + (factors[option] > 1)
        ok = padded <= limit
        if max_partitioned_axes is not None:
            ok &= split <= max_partitioned_axes
        row, option = row[ok], option[ok]
        plans = np.concatenate([plans[row], factors[option][:, None]], axis=1)
        cores, ratio, splits = cores[row] * factors[option], padded[ok], split[ok]
    return plans[cores >= floor]


@lru_cache(maxsize=None)
def _divisors(n: int) -> tuple[int, ...]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return tuple(sorted(set(small + [n // d for d in small])))


@lru_cache(maxsize=16_384)
def _axis_pace_table(sharing: tuple[int, ...], limit: int) -> np.ndarray:
    """f_t tuples on one axis for the tensors indexing it [K, M]: each a divisor of that
    tensor's sharing count, all at most ``limit``, pairwise dividing one another; in
    lexicographic order of the per-tensor divisors (as ``itertools.product``)."""
    choices = [np.asarray([d for d in _divisors(p) if d <= limit], dtype=np.int64) for p in sharing]
    grids = np.meshgrid(*choices, indexing="ij")
    table = np.stack([g.reshape(-1) for g in grids], axis=1) if grids else np.ones((1, 0), np.int64)
    if table.shape[1] > 1:
        ordered = np.sort(table, axis=1)
        table = table[(ordered[:, 1:] % ordered[:, :-1] == 0).all(axis=1)]
    return table


@lru_cache(maxsize=65_536)
def _axis_steps(sharing: tuple[int, ...], limit: int) -> list[int]:
    """The admissible steps of one axis: the largest paces of ``_axis_pace_table``'s
    tuples. Every divisor ``d <= limit`` of one tensor's sharing count is one (with 1
    for the other tensors it is a chain), and nothing else is."""
    return sorted({d for p in sharing for d in _divisors(p) if d <= limit})


@lru_cache(maxsize=16_384)
def _paces_by_steps(sharing: tuple[int, ...], limit: int) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """The pace tuples of ``_axis_pace_table(sharing, limit)`` by their largest pace (the
    axis' steps): per steps, the tuples and their indices in that table's order."""
    table = _axis_pace_table(sharing, limit)
    largest = table.max(axis=1) if table.shape[1] else np.ones(len(table), np.int64)
    order = np.argsort(largest, kind="stable")
    values, starts = np.unique(largest[order], return_index=True)
    stops = np.append(starts[1:], len(order))
    return {
        int(t): (table[order[a:b]], order[a:b].astype(np.int64))
        for t, a, b in zip(values.tolist(), starts.tolist(), stops.tolist())
    }


@lru_cache(maxsize=65_536)
def _paces_with_steps(divisible: tuple[int, ...], steps: int) -> np.ndarray:
    """The pace tuples of an axis whose largest pace is ``steps``, each tensor's pace a
    divisor of its entry of ``divisible`` (its sharing count's gcd with ``steps``), the
    tuple a divisibility chain; in lexicographic order. Every pace of a chain whose
    largest is ``steps`` divides it, so these are ``_paces_by_steps(sharing, limit)[steps]``
    in the same order, whatever the per-core extent: far fewer distinct tables."""
    table = _axis_pace_table(divisible, steps)
    return table[table.max(axis=1) == steps] if table.shape[1] else table


@lru_cache(maxsize=4096)
def _divisor_array(n: int) -> np.ndarray:
    return np.asarray(_divisors(n), dtype=np.int64)


def _row_step_options(keys: np.ndarray, rotation: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``_axis_steps`` of every row of ``keys`` (sharing counts of an axis' tensors, then
    its per-core extent) at once, vectorised over the rows: (row [K], steps [K], padding
    ratio ``T * ceil(L / T) / L`` [K]), grouped by row, steps ascending within a row; one
    step (ratio 1) per row without ``rotation``."""
    n_rows = len(keys)
    extent = keys[:, -1]
    if not rotation:
        return np.arange(n_rows), np.ones(n_rows, np.int64), np.ones(n_rows, np.float64)
    if n_rows == 0 or keys.shape[1] == 1:   # no tensor indexes the axis: no steps
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64)
    sharing = keys[:, :-1]
    # the divisors of every distinct sharing count, flat, and each row's (count, member)
    values, position = np.unique(sharing, return_inverse=True)
    position = position.reshape(sharing.shape)
    divisors = [_divisor_array(int(v)) for v in values.tolist()]
    sizes = np.fromiter(map(len, divisors), dtype=np.int64, count=len(divisors))
    flat = np.concatenate(divisors)
    first = np.cumsum(sizes) - sizes
    counts = sizes[position].reshape(-1)                     # row-major: row, then member
    owner = np.repeat(np.repeat(np.arange(n_rows), sharing.shape[1]), counts)
    offset = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    steps = flat[np.repeat(first[position].reshape(-1), counts) + offset]
    keep = steps <= extent[owner]
    owner, steps = owner[keep], steps[keep]
    # per row: the distinct steps, ascending
    order = np.lexsort((steps, owner))
    owner, steps = owner[order], steps[order]
    distinct = np.ones(len(steps), dtype=bool)
    distinct[1:] = (owner[1:] != owner[:-1]) | (steps[1:] != steps[:-1])
    owner, steps = owner[distinct], steps[distinct]
    return owner, steps, steps * -(-extent[owner] // steps) / extent[owner]


def _unique_rows(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of an int64 matrix (lexicographic order) and each row's index
    among them: ``np.unique(keys, axis=0, return_inverse=True)`` by one lexsort."""
    if len(keys) == 0:
        return keys, np.zeros(0, dtype=np.int64)
    order = np.lexsort(keys.T[::-1])
    ordered = keys[order]
    first = np.ones(len(keys), dtype=bool)
    first[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    inverse = np.empty(len(keys), dtype=np.int64)
    inverse[order] = np.cumsum(first) - 1
    return ordered[first], inverse


def _ragged_cross(counts_left: np.ndarray, counts_right: np.ndarray):
    """Per group g, every (left, right) pair of its rows: row indices into the flat,
    group-contiguous left and right arrays."""
    pairs = counts_left * counts_right
    total = int(pairs.sum())
    group = np.repeat(np.arange(len(pairs)), pairs)
    start_out = np.cumsum(pairs) - pairs
    start_left = np.cumsum(counts_left) - counts_left
    start_right = np.cumsum(counts_right) - counts_right
    position = np.arange(total) - start_out[group]
    width = counts_right[group]
    return group, start_left[group] + position // width, start_right[group] + position % width


def _cut(weights: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """Consecutive [start, stop) ranges whose summed weights stay within ``budget``
    (a single row above it makes a range of its own)."""
    cumulative = np.cumsum(weights)
    ranges = []
    start, before = 0, 0
    while start < len(weights):
        stop = max(int(np.searchsorted(cumulative, before + budget, side="right")), start + 1)
        ranges.append((start, stop))
        before = int(cumulative[stop - 1])
        start = stop
    return ranges


class _PaceStore:
    """The pace tuples of one axis by (row, steps), as ``_paces_by_steps`` gives them,
    with their order keys, gathered into flat arrays the first time a (row, steps) is
    asked for: the blocks of every later expansion are read by index, with no table
    lookups or copies per call."""

    def __init__(self, row_keys: np.ndarray, width: int, rotation: bool) -> None:
        self.row_keys, self.width, self.rotation = row_keys, width, rotation
        self.blocks: dict[tuple[int, int], tuple[int, int]] = {}
        self.paces = np.zeros((64, width), dtype=np.int64)
        self.index = np.zeros(64, dtype=np.int64)
        self.filled = 0
        # a tuple's order key: its paces in mixed radix (each pace at most its sharing
        # count), which orders one row's tuples as their index in its full table does
        # (that table is in lexicographic order of the paces); the index itself when the
        # radix would overflow
        largest = int(row_keys[:, :-1].max()) if row_keys.size and width else 0
        self.powers = None
        if width and (largest + 1) ** width < 1 << 62:
            self.powers = np.asarray([(largest + 1) ** (width - 1 - j) for j in range(width)], dtype=np.int64)
        # the blocks stored so far, by key ``row * radix + steps`` (steps divide a sharing
        # count, so they are at most ``largest``), sorted, for vectorised lookups
        self.radix = max(largest, 1) + 1
        self.known = np.zeros(0, dtype=np.int64)
        self.known_start = np.zeros(0, dtype=np.int64)
        self.known_size = np.zeros(0, dtype=np.int64)

    def lookup(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(start, size) of the block of each distinct ``row * radix + steps`` in
        ``keys`` (ascending), storing the blocks not seen yet."""
        position = np.searchsorted(self.known, keys)
        seen = position < len(self.known)
        seen[seen] = self.known[position[seen]] == keys[seen]
        if not seen.all():
            missing = keys[~seen]
            if self.rotation and self.powers is not None:
                starts, sizes = self._store_gcd_blocks(missing)
            else:
                blocks = [self.block(*divmod(k, self.radix)) for k in missing.tolist()]
                starts = np.fromiter((b[0] for b in blocks), np.int64, len(blocks))
                sizes = np.fromiter((b[1] for b in blocks), np.int64, len(blocks))
            known = np.concatenate([self.known, missing])
            order = np.argsort(known, kind="stable")
            self.known = known[order]
            self.known_start = np.concatenate([self.known_start, starts])[order]
            self.known_size = np.concatenate([self.known_size, sizes])[order]
            position = np.searchsorted(self.known, keys)
        return self.known_start[position], self.known_size[position]

    def _store_gcd_blocks(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Store the blocks of ``keys`` (``row * radix + steps``, none stored yet) at once,
        as ``block`` would one by one (with rotation and mixed-radix order keys): the
        tables ``_paces_with_steps`` of the distinct (gcds, steps) looked up once each,
        then gathered; (start, size) per key."""
        rows, steps = np.divmod(keys, self.radix)
        divisible = np.gcd(self.row_keys[rows, :-1], steps[:, None])
        tables, which = _unique_rows(np.column_stack([divisible, steps]))
        found = [_paces_with_steps(tuple(t[:-1]), t[-1]) for t in tables.tolist()]
        table_sizes = np.fromiter(map(len, found), dtype=np.int64, count=len(found))
        sizes = table_sizes[which]
        total = int(sizes.sum())
        first = np.cumsum(table_sizes) - table_sizes
        offset = np.arange(total) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        paces = np.concatenate(found)[np.repeat(first[which], sizes) + offset]
        start = self.filled
        if start + total > len(self.index):
            capacity = max(2 * len(self.index), start + total)
            self.paces = np.concatenate([self.paces[:start], np.zeros((capacity - start, self.width), np.int64)])
            self.index = np.concatenate([self.index[:start], np.zeros(capacity - start, np.int64)])
        self.paces[start:start + total] = paces
        self.index[start:start + total] = paces @ self.powers
        self.filled = start + total
        return start + np.cumsum(sizes) - sizes, sizes

    def block(self, row: int, steps: int) -> tuple[int, int]:
        """(start, size) of the tuples of ``row`` with largest pace ``steps``."""
        found = self.blocks.get((row, steps))
        if found is not None:
            return found
        if not self.rotation:
            paces, index = np.ones((1, self.width), dtype=np.int64), np.zeros(1, dtype=np.int64)
        elif self.powers is not None:
            sharing = self.row_keys[row, :-1].tolist()
            paces = _paces_with_steps(tuple(math.gcd(p, steps) for p in sharing), steps)
            index = paces @ self.powers
        else:
            key = self.row_keys[row].tolist()
            paces, index = _paces_by_steps(tuple(key[:-1]), key[-1])[steps]
        start, size = self.filled, len(index)
        if start + size > len(self.index):
            capacity = max(2 * len(self.index), start + size)
            self.paces = np.concatenate([self.paces[:start], np.zeros((capacity - start, self.width), np.int64)])
            self.index = np.concatenate([self.index[:start], np.zeros(capacity - start, np.int64)])
        self.paces[start:start + size] = paces
        self.index[start:start + size] = index
        self.filled = start + size
        self.blocks[(row, steps)] = found = (start, size)
        return found


class PlanSpace:
    """The constrained plan space of one operator on one device (module docstring)."""

    def __init__(
        self,
        spec: OpSpec,
        device: Device,
        min_utilization: float,
        max_padding: float,
        rotation: bool = True,
        max_partitioned_axes: int | None = None,
    ) -> None:
        self.spec = spec
        self.rotation = rotation
        self.limit = max_padding * (1 + PADDING_TOLERANCE)
        axes = spec.axis_names
        tensors = spec.tensors
        self.n_axes, self.n_tensors = len(axes), len(tensors)
        self.extents = np.asarray(spec.extents, dtype=np.int64)
        spatial = spatial_plans(spec, device, min_utilization, max_padding, max_partitioned_axes)
        self.op_factors = np.asarray(spatial, dtype=np.int64).reshape(len(spatial), self.n_axes)  # [S, D]
        self.indexed = np.array([[t.indexed_by(a) for a in axes] for t in tensors])           # [V, D]
        self.sharing = np.where(self.indexed[None], 1, self.op_factors[:, None, :]).prod(axis=2)  # [S, V]
        self.per_core = -(-self.extents[None, :] // self.op_factors)                          # [S, D]
        base = (self.op_factors * self.per_core / self.extents[None, :]).prod(axis=1)
        self.base_ratio = base                                                                # [S]
        self.members = [np.flatnonzero(self.indexed[:, d]) for d in range(self.n_axes)]
        # per axis: distinct (sharing counts of its tensors, per-core extent) rows, their
        # admissible steps (flat, ascending per row) and the padding ratio of each
        self._row_of: list[np.ndarray] = []       # [S] -> row id
        self._row_keys: list[np.ndarray] = []     # [rows, members + 1]: sharing counts, extent
        self._start: list[np.ndarray] = []        # [S] first option of the plan's row
        self._count: list[np.ndarray] = []        # [S] options of the plan's row
        self._steps: list[np.ndarray] = []        # flat option values
        self._ratio: list[np.ndarray] = []        # flat option padding ratios
        for d in range(self.n_axes):
            keys = np.column_stack([self.sharing[:, self.members[d]], self.per_core[:, d]])
            unique, inverse = _unique_rows(keys)
            row, steps, ratio = _row_step_options(unique, rotation)
            if axes[d] in spec.unpadded_axes:
                # one core's span T * ceil(L' / T): exactly L' (F_op divides the extent,
                # above), or within the extent for a clamped max=/min= (``padding_admitted``)
                extent = unique[row, -1]
                span = steps * -(-extent // steps)
                admitted = -(-int(self.extents[d]) // extent) * span == int(self.extents[d])
                if spec.combiner in ("max=", "min="):
                    admitted |= span <= int(self.extents[d])
                row, steps, ratio = row[admitted], steps[admitted], ratio[admitted]
            counts = np.bincount(row, minlength=len(unique)).astype(np.int64)
            starts = np.cumsum(counts) - counts
            self._row_of.append(inverse)
            self._row_keys.append(unique)
            self._start.append(starts[inverse])
            self._count.append(counts[inverse])
            self._steps.append(steps)
            self._ratio.append(ratio)
        self._max_steps: np.ndarray | None = None
        # per axis: the pace tuples of each (row, steps) expanded so far, stored once
        self._pace_store = [_PaceStore(self._row_keys[d], len(self.members[d]), rotation) for d in range(self.n_axes)]
        # the order the search chooses steps in (any order is exact; this one bounds
        # tighter early): axes with at most two options first, then the axes with the
        # most options on average (the widest choices, fixed while the tree is narrow)
        mean_options = [float(c.mean()) if len(c) else 1.0 for c in self._count]
        self.axis_order = np.asarray(
            sorted(range(self.n_axes), key=lambda d: (mean_options[d] > 2, -mean_options[d], d)), dtype=np.int64
        )
        self.axis_rank = np.argsort(self.axis_order)

    @property
    def n_spatial(self) -> int:
        return len(self.op_factors)

    # -- step groups -------------------------------------------------------------------

    def groups(self, chunk: int = GROUP_CHUNK) -> Iterator[StepGroups]:
        """Every step group within the padding limit, in lexicographic order of (F_op, T),
        in chunks of at most about ``chunk`` groups."""
        if self.n_spatial == 0:
            return
        pending: list[StepGroups] = []
        held = 0
        for first in range(0, self.n_spatial, chunk):
            plan = np.arange(first, min(first + chunk, self.n_spatial))
            steps = np.zeros((len(plan), 0), dtype=np.int64)
            for part in self._extend(plan, steps, self.base_ratio[plan], 0, chunk):
                pending.append(part)
                held += len(part)
                if held >= chunk:
                    yield StepGroups.concatenate(pending, self.n_axes)
                    pending, held = [], 0
        if held:
            yield StepGroups.concatenate(pending, self.n_axes)

    def _extend(self, plan, steps, ratio, d: int, chunk: int) -> Iterator[StepGroups]:
        if len(plan) == 0:
            return
        if d == self.n_axes:
            yield StepGroups(plan, steps)
            return
        counts = self._count[d][plan]
        if int(counts.sum()) > 4 * chunk and len(plan) > 1:
            half = len(plan) // 2
            yield from self._extend(plan[:half], steps[:half], ratio[:half], d, chunk)
            yield from self._extend(plan[half:], steps[half:], ratio[half:], d, chunk)
            return
        row = np.repeat(np.arange(len(plan)), counts)
        option = self._start[d][plan][row] + (np.arange(len(row)) - (np.cumsum(counts) - counts)[row])
        new_ratio = ratio[row] * self._ratio[d][option]
        keep = new_ratio <= self.limit
        row, option = row[keep], option[keep]
        new_steps = np.concatenate([steps[row], self._steps[d][option][:, None]], axis=1)
        yield from self._extend(plan[row], new_steps, new_ratio[keep], d + 1, chunk)

    # -- step prefixes (the search's tree over steps, axis by axis) ---------------------

    def roots(self) -> StepPrefixes:
        """Every spatial plan with no steps chosen yet."""
        n = self.n_spatial
        return StepPrefixes(np.arange(n), np.ones((n, self.n_axes), dtype=np.int64),
                            np.zeros(n, dtype=np.int64), self.base_ratio.copy())

    def children(self, prefixes: StepPrefixes) -> StepPrefixes:
        """Each prefix (all of one depth) extended by every admissible steps of the next
        axis of ``axis_order`` within the padding limit, in order."""
        if len(prefixes) == 0:
            return prefixes
        d = int(self.axis_order[int(prefixes.depth[0])])
        plan = prefixes.plan
        counts = self._count[d][plan]
        row = np.repeat(np.arange(len(plan)), counts)
        option = self._start[d][plan][row] + (np.arange(len(row)) - (np.cumsum(counts) - counts)[row])
        ratio = prefixes.ratio[row] * self._ratio[d][option]
        keep = ratio <= self.limit
        row, option = row[keep], option[keep]
        steps = prefixes.steps[row]
        steps[:, d] = self._steps[d][option]
        return StepPrefixes(plan[row], steps, prefixes.depth[row] + 1, ratio[keep])

    @property
    def max_steps(self) -> np.ndarray:
        """[S, D]: the largest admissible T_d of each spatial plan."""
        if self._max_steps is None:
            self._max_steps = np.stack(
                [self._steps[d][self._start[d] + self._count[d] - 1] for d in range(self.n_axes)], axis=1
            ).reshape(self.n_spatial, self.n_axes) if self.n_spatial and self.n_axes else np.zeros(
                (self.n_spatial, self.n_axes), np.int64)
        return self._max_steps

    # -- candidates --------------------------------------------------------------------

    def _axis_options(self, groups: StepGroups, d: int):
        """Per group, the pace tuples of axis d with its steps: (counts [G], flat paces
        [K, M], flat indices [K], group-contiguous)."""
        store = self._pace_store[d]
        unique, inverse = np.unique(self._row_of[d][groups.plan] * store.radix + groups.steps[:, d],
                                    return_inverse=True)
        inverse = np.asarray(inverse).reshape(-1)
        starts, sizes = store.lookup(unique)
        counts = sizes[inverse]
        # gather each group's own block of rows, group-contiguous
        pos = np.repeat(starts[inverse], counts) + (np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts))
        return counts, store.paces[pos], store.index[pos]

    def expand(self, groups: StepGroups, chunk: int = CANDIDATE_CHUNK) -> Iterator[CandidateSet]:
        """Every candidate of ``groups``, in chunks of about ``chunk`` candidates (bounded
        by the product of the per-axis option counts before the divisibility check)."""
        if len(groups) == 0:
            return
        options = [self._axis_options(groups, d) for d in range(self.n_axes)]
        estimate = np.ones(len(groups), dtype=np.float64)
        for counts, _, _ in options:
            estimate *= counts
        starts = [np.cumsum(c) - c for c, _, _ in options]
        for lo, hi in _cut(np.minimum(estimate, 2**40).astype(np.int64), chunk):
            part = []
            for d, (counts, paces, index) in enumerate(options):
                begin = starts[d][lo]
                end = starts[d][hi - 1] + counts[hi - 1]
                part.append((counts[lo:hi], paces[begin:end], index[begin:end]))
            found = self._cross(groups.take(slice(lo, hi)), part)
            if len(found):
                yield found

    def _cross(self, groups: StepGroups, options) -> CandidateSet:
        n_groups = len(groups)
        n_tensors, n_axes = self.n_tensors, self.n_axes
        sharing = self.sharing[groups.plan]                                   # [G, V]
        counts = np.ones(n_groups, dtype=np.int64)
        group_of = np.arange(n_groups)
        factors = np.ones((n_groups, n_tensors, n_axes), dtype=np.int64)
        products = np.ones((n_groups, n_tensors), dtype=np.int64)
        order = np.zeros((n_groups, n_axes), dtype=np.int64)
        for d, (pace_counts, paces, index) in enumerate(options):
            members = self.members[d]
            group, left, right = _ragged_cross(counts, pace_counts)
            new_products = products[left]
            new_products[:, members] *= paces[right]
            keep = (sharing[group] % new_products == 0).all(axis=1)
            left, right, group = left[keep], right[keep], group[keep]
            factors = factors[left]
            factors[:, members, d] = paces[right]
            order = order[left]
            order[:, d] = index[right]
            products = new_products[keep]
            group_of = group
            counts = np.bincount(group, minlength=n_groups)
        plan = groups.plan[group_of]
        return CandidateSet(
            self.op_factors[plan], factors, np.concatenate([plan[:, None], order], axis=1)
        )


def candidate_set(
    spec: OpSpec,
    device: Device,
    min_utilization: float,
    max_padding: float,
    rotation: bool = True,
    max_partitioned_axes: int | None = None,
) -> CandidateSet:
    """All admissible (F_op, f_t) pairs as flat arrays, in the full enumeration's order
    (F_op lexicographic, then per axis the pace tuples in order). Materialises the whole
    space: for small spaces (no rotation, tests); the search streams ``PlanSpace``."""
    n_axes, n_tensors = len(spec.axes), len(spec.tensors)
    if not rotation:   # every f_t is 1: one candidate per spatial plan, in their order
        spatial = spatial_plans(spec, device, min_utilization, max_padding, max_partitioned_axes)
        order = np.zeros((len(spatial), 1 + n_axes), dtype=np.int64)
        order[:, 0] = np.arange(len(spatial))
        return CandidateSet(spatial, np.ones((len(spatial), n_tensors, n_axes), dtype=np.int64), order)
    space = PlanSpace(spec, device, min_utilization, max_padding, rotation, max_partitioned_axes)
    parts = [c for groups in space.groups() for c in space.expand(groups)]
    if not parts:
        return CandidateSet(
            np.zeros((0, n_axes), dtype=np.int64),
            np.zeros((0, n_tensors, n_axes), dtype=np.int64),
            np.zeros((0, 1 + n_axes), dtype=np.int64),
        )
    order_keys = np.concatenate([p.order for p in parts])
    order = np.lexsort(order_keys.T[::-1])
    return CandidateSet(
        np.concatenate([p.op_factors for p in parts])[order],
        np.concatenate([p.temporal_factors for p in parts])[order],
        order_keys[order],
    )
