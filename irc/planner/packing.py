"""Placing buffers with known live ranges in a core's SRAM (T10 s4.4 "Sub-tensor
placement"): the one packing `device-alloc` assigns offsets with, `preload-schedule`
checks ELK's frontiers with, and the planner checks the programs its preload plans make
with (`irc.planner.preload_packing`), so that a plan the planner accepts packs as the
compiled program does (issue 23, item 5). Pure Python over numbers: no IR.

Every buffer is an ``Interval``: what it is, its bytes per core and live range
``[start, end)`` in program order (optionally shrinking in place at a position). The
same offset serves every core (SPMD). ``place`` tries, in turn:

1. first fit in program order (an alloc takes the lowest offset where it fits among the
   buffers live at that point, a free releases its range);
2. if that leaves no room although the bytes live at every point fit (fragmentation),
   the buffers placed offline, largest first and then longest-lived first, each at the
   lowest offset free over its whole live range;
3. if neither packs them, the offline placement over orders near largest first (each
   buffer's size weighed by a seeded random factor, the same for every run of the same
   program), a bounded number of them (``SEARCH_WORK``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Hashable


def first_fit(live: list[tuple[int, int]], size: int) -> int:
    """The lowest offset where ``size`` bytes fit between the live ``[start, end)`` ranges."""
    offset = 0
    for start, end in sorted(live):
        if offset + size <= start:
            return offset
        offset = max(offset, end)
    return offset


@dataclass
class Interval:
    """One buffer: what it is (``op``), its bytes, and live range ``[start, end)`` in program order."""

    op: Hashable   # what the buffer is (a ``device.alloc``; a planner's key)
    size: int
    start: int
    end: int
    shrink: tuple[int, int] | None = None   # (position, bytes kept) of an in-place rounding

    def bytes_at(self, position: int) -> int:
        if self.shrink is not None and position >= self.shrink[0]:
            return self.shrink[1]
        return self.size


def peak_live_bytes(intervals: list[Interval]) -> int:
    """The most bytes per core live at once (each buffer from its alloc to its free, at its
    size there): what a program holds at its peak, and what a plan's memory account
    (`irc.planner.model`: ``ModelPlan.peak_bytes``) must equal."""
    events = sorted([(i.start, i.size) for i in intervals] + [(i.end, -i.bytes_at(i.end)) for i in intervals]
                    + [(i.shrink[0], i.shrink[1] - i.size) for i in intervals if i.shrink is not None])
    live = peak = 0
    for _, change in events:   # frees before allocs at one position (sorted by change)
        live += change
        peak = max(peak, live)
    return peak


def online_first_fit(intervals: list[Interval]) -> dict[Hashable, int]:
    """Offsets by first fit in program order (1. of the module docstring)."""
    events = sorted([(i.start, 2, i) for i in intervals] + [(i.end, 0, i) for i in intervals]
                    + [(i.shrink[0], 1, i) for i in intervals if i.shrink is not None],
                    key=lambda e: (e[0], e[1]))
    live: dict[Hashable, tuple[int, int]] = {}
    offsets = {}
    for _, kind, interval in events:
        if kind == 0:
            live.pop(interval.op, None)
            continue
        if kind == 1:   # rounded in place: the result keeps the first bytes
            start, _ = live[interval.op]
            live[interval.op] = (start, start + interval.shrink[1])
            continue
        offset = first_fit(list(live.values()), interval.size)
        offsets[interval.op] = offset
        live[interval.op] = (offset, offset + interval.size)
    return offsets


def offline_placement(intervals: list[Interval], key) -> dict[Hashable, int]:
    """Offsets placing the buffers in ``key`` order, each at the lowest offset free over
    its whole live range (2. of the module docstring): beside a placed buffer at the bytes
    that one holds while the two are live (a buffer rounded in place before they meet
    holds only its first bytes; the one being placed is held whole throughout)."""
    placed: list[tuple[Interval, int]] = []
    offsets = {}
    for interval in sorted(intervals, key=key):
        taken = [(offset, offset + other.bytes_at(max(other.start, interval.start))) for other, offset in placed
                 if other.start < interval.end and interval.start < other.end]
        offset = first_fit(taken, interval.size)
        offsets[interval.op] = offset
        placed.append((interval, offset))
    return offsets


SEARCH_WORK = 4_000_000
"""The search (3. of the module docstring) tries at most this many buffer pairs in all
(each order places n buffers against up to n placed ones: a 157-buffer program gets
``SEARCH_ORDERS`` orders, a 2,000-buffer one a few)."""
SEARCH_ORDERS = 256


def searched_placement(intervals: list[Interval], capacity: int) -> dict[Hashable, int] | None:
    """Offsets within ``capacity`` from the offline placement in orders near largest first
    (3. of the module docstring), or None when none of the orders tried packs. The
    factors are drawn per buffer in program order from a fixed seed, so a program and
    the same program with other ops between its allocs get the same placement."""
    if not intervals:
        return {}
    in_order = sorted(intervals, key=lambda i: (i.start, i.end, -i.size))
    orders = min(SEARCH_ORDERS, SEARCH_WORK // len(intervals) ** 2)
    rng = random.Random(0)
    for _ in range(orders):
        weight = {interval.op: interval.size * (0.7 + 0.6 * rng.random()) for interval in in_order}
        offsets = offline_placement(in_order, lambda i: (-weight[i.op], i.start))
        if _peak(intervals, offsets) <= capacity:
            return offsets
    return None


STRATEGIES = (
    lambda i: (-i.size, i.start),                      # largest first
    lambda i: (-(i.end - i.start), -i.size, i.start),  # longest-lived first
)


def _peak(intervals: list[Interval], offsets: dict[Hashable, int]) -> int:
    return max((offsets[i.op] + i.size for i in intervals), default=0)


def place(intervals: list[Interval], capacity: int) -> tuple[dict[Hashable, int], Interval | None]:
    """Offsets for ``intervals`` in ``capacity`` bytes per core (1., 2. then 3. of the
    module docstring), and None or the first buffer that does not fit (where the live bytes
    exceed the capacity, else the first one placed past its end)."""
    offsets = online_first_fit(intervals)
    if _peak(intervals, offsets) <= capacity:
        return offsets, None
    over = first_over(intervals, capacity)
    if over is None:
        for strategy in STRATEGIES:
            packed = offline_placement(intervals, strategy)
            if _peak(intervals, packed) <= capacity:
                return packed, None
        packed = searched_placement(intervals, capacity)
        if packed is not None:
            return packed, None
    culprit = over or next(i for i in sorted(intervals, key=lambda i: i.start) if offsets[i.op] + i.size > capacity)
    return offsets, culprit


def first_over(intervals: list[Interval], capacity: int) -> Interval | None:
    """The first buffer whose alloc brings the live bytes over ``capacity``."""
    events = sorted([(i.start, i.size, i) for i in intervals]
                    + [(i.end, -i.bytes_at(i.end), i) for i in intervals]
                    + [(i.shrink[0], i.shrink[1] - i.size, i) for i in intervals if i.shrink is not None],
                    key=lambda e: (e[0], e[1]))
    live = 0
    for _, change, interval in events:
        live += change
        if change > 0 and live > capacity:
            return interval
    return None
