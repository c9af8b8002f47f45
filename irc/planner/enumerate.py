"""Enumerate the plan space of one operator (T10 s4.2 constraints, s4.3.1 pruning).

Spatial plans: every ``F_op`` with any integer factor per axis (extents are padded up to
a multiple, T10 s4.3.1), ``F_op[d] <= L_d``, cores used between the parallelism floor
and the device's core count, and padded volume within ``max_padding``.

Temporal plans, per spatial plan: per axis the tuple of ``f_t`` of the tensors indexing
it, each a divisor of its tensor's sharing count, forming a divisibility chain, the
largest at most the per-core extent; then the per-axis tuples are combined keeping only
tensors whose ``prod(f_t)`` divides their sharing count and plans within ``max_padding``.

The result is a flat ``CandidateSet`` of integer arrays, scored all at once by
``irc.planner.vector_score``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from irc.devices import Device
from irc.planner.constraints import PADDING_TOLERANCE, minimum_cores
from irc.planner.spec import OpSpec


@dataclass(frozen=True)
class CandidateSet:
    """``op_factors[i]`` (F_op) and ``temporal_factors[i, v, d]`` (f_t) of candidate i."""

    op_factors: np.ndarray        # int64 [N, axes]
    temporal_factors: np.ndarray  # int64 [N, tensors, axes]

    def __len__(self) -> int:
        return len(self.op_factors)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def spatial_plans(
    spec: OpSpec,
    device: Device,
    min_utilization: float,
    max_padding: float,
    max_partitioned_axes: int | None = None,
) -> list[tuple[int, ...]]:
    """Every admissible F_op, in lexicographic order."""
    extents = spec.extents
    floor = minimum_cores(spec, device, min_utilization)
    limit = max_padding * (1 + PADDING_TOLERANCE)
    # per axis: admissible factors and their padding ratios (each ratio >= 1, so a
    # partial product above the limit prunes the whole subtree)
    options = []
    for extent in extents:
        axis_options = []
        for factor in range(1, min(extent, device.cores) + 1):
            ratio = factor * _ceil_div(extent, factor) / extent
            if ratio <= limit:
                axis_options.append((factor, ratio))
        options.append(axis_options)
    # largest product reachable by the remaining axes, for the utilisation floor
    reach = [1] * (len(extents) + 1)
    for d in range(len(extents) - 1, -1, -1):
        reach[d] = min(device.cores, reach[d + 1] * max(f for f, _ in options[d]))

    plans: list[tuple[int, ...]] = []

    def extend(d: int, chosen: list[int], cores: int, ratio: float, split_axes: int) -> None:
        if d == len(extents):
            if cores >= floor:
                plans.append(tuple(chosen))
            return
        if cores * reach[d] < floor:
            return
        for factor, axis_ratio in options[d]:
            if cores * factor > device.cores:
                break  # factors ascend
            if ratio * axis_ratio > limit:
                continue
            splits = split_axes + (factor > 1)
            if max_partitioned_axes is not None and splits > max_partitioned_axes:
                continue
            chosen.append(factor)
            extend(d + 1, chosen, cores * factor, ratio * axis_ratio, splits)
            chosen.pop()

    extend(0, [], 1, 1.0, 0)
    return plans


@lru_cache(maxsize=None)
def _divisors(n: int) -> tuple[int, ...]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return tuple(sorted(set(small + [n // d for d in small])))


@lru_cache(maxsize=200_000)
def _axis_paces(sharing: tuple[int, ...], limit: int) -> tuple[tuple[int, ...], ...]:
    """f_t tuples on one axis for the tensors indexing it: each a divisor of that tensor's
    sharing count, all at most ``limit``, pairwise dividing one another."""
    choices = [[d for d in _divisors(p) if d <= limit] for p in sharing]
    paces = []
    for combo in itertools.product(*choices):
        ordered = sorted(combo)
        if all(b % a == 0 for a, b in zip(ordered, ordered[1:])):
            paces.append(combo)
    return tuple(paces)


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


def candidate_set(
    spec: OpSpec,
    device: Device,
    min_utilization: float,
    max_padding: float,
    rotation: bool = True,
    max_partitioned_axes: int | None = None,
) -> CandidateSet:
    """All admissible (F_op, f_t) pairs as flat arrays, F_op in lexicographic order.

    The temporal factors are combined axis by axis for all spatial plans at once (a
    ragged cross product per spatial plan), pruning after every axis the partial
    combinations whose prod(f_t) no longer divides a tensor's sharing count or whose
    padding already exceeds the limit.
    """
    axes = spec.axis_names
    tensors = spec.tensors
    n_axes, n_tensors = len(axes), len(tensors)
    extents = spec.extents
    limit = max_padding * (1 + PADDING_TOLERANCE)
    spatial = spatial_plans(spec, device, min_utilization, max_padding, max_partitioned_axes)
    if not spatial:
        return CandidateSet(
            np.zeros((0, n_axes), dtype=np.int64), np.zeros((0, n_tensors, n_axes), dtype=np.int64)
        )
    op_factors = np.asarray(spatial, dtype=np.int64)                     # [S, D]
    n_plans = len(spatial)
    indexed = np.array([[t.indexed_by(a) for a in axes] for t in tensors])  # [V, D]
    sharing = np.where(indexed[None], 1, op_factors[:, None, :]).prod(axis=2)  # [S, V]
    per_core = -(-np.asarray(extents)[None, :] // op_factors)           # [S, D]
    base_ratio = (op_factors * per_core / np.asarray(extents)[None, :]).prod(axis=1)

    # running partial combinations, grouped by spatial plan
    counts = np.ones(n_plans, dtype=np.int64)
    plan_of = np.arange(n_plans)
    factors = np.ones((n_plans, n_tensors, n_axes), dtype=np.int64)
    products = np.ones((n_plans, n_tensors), dtype=np.int64)
    ratio = base_ratio.copy()
    sharing_list = sharing.tolist()
    per_core_list = per_core.tolist()
    for d, axis in enumerate(axes):
        members = [v for v, t in enumerate(tensors) if t.indexed_by(axis)]
        # this axis' admissible paces per spatial plan (cached by sharing counts and extent)
        pace_rows: list[tuple[int, ...]] = []
        pace_counts = np.empty(n_plans, dtype=np.int64)
        for i in range(n_plans):
            if rotation:
                paces = _axis_paces(tuple(sharing_list[i][v] for v in members), per_core_list[i][d])
            else:
                paces = (tuple(1 for _ in members),)
            pace_rows.extend(paces)
            pace_counts[i] = len(paces)
        paces = np.asarray(pace_rows, dtype=np.int64).reshape(-1, len(members))
        steps = paces.max(axis=1)
        pace_plan = np.repeat(np.arange(n_plans), pace_counts)
        extent = per_core[pace_plan, d]
        pace_ratio = steps * (-(-extent // steps)) / extent

        group, left, right = _ragged_cross(counts, pace_counts)
        new_products = products[left].copy()
        new_products[:, members] *= paces[right]
        new_ratio = ratio[left] * pace_ratio[right]
        keep = (sharing[group] % new_products == 0).all(axis=1) & (new_ratio <= limit)
        left, right, group = left[keep], right[keep], group[keep]
        factors = factors[left]
        factors[:, members, d] = paces[right]
        products = new_products[keep]
        ratio = new_ratio[keep]
        plan_of = group
        counts = np.bincount(group, minlength=n_plans)
    return CandidateSet(op_factors[plan_of], factors)
