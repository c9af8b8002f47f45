"""One PE's timelines on MTIA (seeds/001 Figure 8), event by event.

A matmul's producer issues its DMAs into the circular buffers in loop order, each waiting
for space; the consumer's MMLs wait for their blocks; an embedding bag's rows stream in
behind one another and the SIMD engine pools each as it arrives. `irc.interpreter.mtia`
runs the programs' numbers and asks these functions for their time; the names it exports
(`MtiaRunError`, the circular buffer values) are re-exported from there.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.utils.exceptions import InterpretationError

from irc.cost.mtia import TILE_K, TILE_M, TILE_N, dma_arrival, dpe_block_cycles, tile_turnaround_cycles
from irc.interpreter.mtia_report import KernelRecord


class MtiaRunError(InterpretationError):
    """A fault of an MTIA program found while running it (a circular buffer too small)."""


@dataclass
class StreamInfo:
    """How a DMA streams one tensor into a circular buffer."""

    level: str
    passes: int
    block: tuple[int, int]
    reads: int                 # distinct reads the memory serves (multicast groups)
    hops: int


@dataclass
class CircularBuffer:
    name: str
    depth: int
    grid: tuple[int, int]
    shape: tuple[int, int]
    element_bytes: int
    data: np.ndarray | None = None
    stream: StreamInfo | None = None
    gathered: Any = None               # a GatheredBags, once a mtia.gather filled it


def gather_timeline(device, counts: list, work: dict) -> tuple[list, dict]:
    """One PE's gather-and-pool program event by event (the closed form is
    ``irc.cost.mtia.gather_pool_cycles``): its indices arrive; a DMA command per row,
    issued one after another once the row has a slot in the ``window``-row buffer, each
    row streaming in behind the last; the SIMD engine adds each row when it is there and
    frees its slot. ``counts``: rows per bag, in gather order, grouped per sample.
    Returns when each sample's last row is pooled and the timeline's categories."""
    issue = float(device.dma_issue_cycles)
    simd = work["simd"]
    window = work["window"]
    indices = dma_arrival(device, 0.0, 0.0, work["index_bytes"], "sram", work["index_share"], work["hops"])
    issued = queue = pooled = 0.0
    frees: list = []
    first = None
    busy = 0.0
    sample_ends = []
    j = 0
    for sample in counts:
        for bag in sample:
            for _ in range(bag):
                at = indices if j == 0 else issued + issue
                if j >= window:
                    at = max(at, frees[j - window])
                issued = at
                queue = dma_arrival(device, at, queue, work["row_bytes"], work["level"], work["share"], work["hops"])
                start = max(queue, pooled)
                if first is None:
                    first = start
                pooled = start + simd
                busy += simd
                frees.append(pooled)
                j += 1
        sample_ends.append(pooled if j else indices)
    if first is None:   # no rows at all: the indices and the (empty) samples
        return sample_ends, {"fill": indices, "compute": 0.0, "dma_wait": 0.0}
    return sample_ends, {"fill": first, "compute": busy, "dma_wait": pooled - first - busy}


def _level_shares(a: CircularBuffer, b: CircularBuffer, written: dict) -> dict:
    """Per operand, the level's traffic per byte queued from one PE's stream of it.

    A level's bandwidth is shared by every PE's queue: a byte of one PE's queue costs the
    level's whole traffic (reads multicast once, and the result's writes) per byte
    queued from it, so the queues drain together at the level's rate."""
    served: dict = {}
    queued: dict = {}
    for buffer in (a, b):
        s = buffer.stream
        slice_bytes = math.prod(buffer.shape) * buffer.element_bytes
        served[s.level] = served.get(s.level, 0.0) + s.reads * slice_bytes * s.passes
        queued[s.level] = queued.get(s.level, 0.0) + slice_bytes * s.passes
    for level, nbytes in written.items():
        served[level] = served.get(level, 0.0) + nbytes
    return {key: served[buffer.stream.level] / queued[buffer.stream.level] for key, buffer in (("a", a), ("b", b))}


@dataclass
class _Producer:
    """The producer of Figure 8: one DMA queue per PE (its fabric interface) filling the
    circular buffers ``a`` and ``b`` in issue order, each block waiting for the space the
    consumer's POPs free."""

    device: Any
    buffers: dict                      # "a"/"b" -> CircularBuffer
    block_bytes: dict
    share: dict
    filled: dict = field(default_factory=lambda: {"a": 0.0, "b": 0.0})
    pops: dict = field(default_factory=lambda: {"a": [], "b": []})   # (time, bytes), in time order
    arrival: dict = field(default_factory=dict)
    issue_at: float = 0.0
    queue: float = 0.0
    count: int = 0

    def space_time(self, key: str, earliest: float) -> float:
        """When buffer ``key`` has room for one more block, at ``earliest`` or later."""
        need = self.filled[key] + self.block_bytes[key] - self.buffers[key].depth
        if need <= 0:
            return earliest
        popped = 0.0
        for when, nbytes in self.pops[key]:
            popped += nbytes
            if popped >= need:
                return max(earliest, when)
        buffer = self.buffers[key]
        raise MtiaRunError(
            f"circular buffer {buffer.name} ({buffer.depth} bytes) cannot take the next block: the MML still "
            f"needs every block in it (the program deadlocks; the buffer must hold the slice it keeps)")

    def dma(self, key: str, index) -> None:
        """Issue the DMA of block ``index`` of operand ``key``; note when it arrives."""
        start = self.space_time(key, self.issue_at + (self.device.dma_issue_cycles if self.count else 0))
        self.issue_at = start
        # in issue order: the cost model's one formula for a read (multicast_read_cycles is its lone read)
        stream = self.buffers[key].stream
        done = dma_arrival(self.device, start, self.queue, self.block_bytes[key], stream.level, self.share[key],
                           stream.hops)
        self.queue = done
        self.arrival[(key, index)] = done
        self.filled[key] += self.block_bytes[key]
        self.count += 1

    def pop(self, key: str, when: float, nbytes: float) -> None:
        """Free ``nbytes`` of buffer ``key`` at ``when`` (a block's last use)."""
        bisect.insort(self.pops[key], (when, nbytes))


def _consume(device, producer: _Producer, tiles: tuple[int, int, int], chain: int, mml_cycles: float,
             record: KernelRecord) -> list:
    """The consumer of Figure 8: per output tile and k step, the four MMLs once their
    blocks are in and the accumulators free, driving the producer in loop order. Fills
    ``record``'s cycles and returns when each output tile's MMLs end."""
    tiles_m, tiles_n, steps = tiles
    a_resident = producer.buffers["a"].stream.passes == 1
    b_resident = producer.buffers["b"].stream.passes == 1
    block_bytes = producer.block_bytes
    mml_end = 0.0
    acc_free = 0.0
    busy = stall = banks = 0.0
    first_start = None
    tile_ends = []
    for i in range(tiles_m):
        for j in range(tiles_n):
            for s in range(steps):
                if j == 0 or not a_resident:
                    producer.dma("a", (i, j if not a_resident else 0, s))
                if i == 0 or not b_resident:
                    producer.dma("b", (j, i if not b_resident else 0, s))
                ready = max(producer.arrival[("a", (i, j if not a_resident else 0, s))],
                            producer.arrival[("b", (j, i if not b_resident else 0, s))])
                if s == 0 and acc_free > mml_end:   # the banks still send the last tile
                    banks += acc_free - mml_end
                free = max(mml_end, acc_free if s == 0 else 0.0)
                start = max(free, ready)
                stall += start - free
                if first_start is None:
                    first_start = start
                    stall = 0.0
                mml_end = start + mml_cycles
                busy += mml_cycles
                if not a_resident or j == tiles_n - 1:
                    producer.pop("a", mml_end, block_bytes["a"])
                if not b_resident or i == tiles_m - 1:
                    producer.pop("b", mml_end, block_bytes["b"])
            tile_ends.append(mml_end)
            acc_free = mml_end + tile_turnaround_cycles(device, chain)
    record.cycles = {"fill": float(first_start or 0.0), "compute": busy, "dma_wait": stall, "acc_wait": banks}
    record.last_mml_end = mml_end
    return tile_ends


def matmul_timeline(device, op, a: CircularBuffer, b: CircularBuffer, record: KernelRecord,
                    written: dict, chain: int) -> list:
    """Figure 8 on one PE: the producer's DMAs and the consumer's MMLs, with the stalls
    the circular buffers impose. Fills ``record`` (cycles by category, traffic, command
    counts) and returns, per output tile, when its MMLs end. ``written``: bytes the
    kernel's store writes per level (they share the levels' bandwidth)."""
    m, k, n = op.extents()
    tiles_m, tiles_n, steps = m // TILE_M, n // TILE_N, k // TILE_K
    b_in = a.element_bytes
    block_bytes = {"a": TILE_M * TILE_K * a.element_bytes, "b": TILE_N * TILE_K * b.element_bytes}
    share = _level_shares(a, b, written)
    for key, buffer in (("a", a), ("b", b)):
        if buffer.depth < block_bytes[key]:
            raise MtiaRunError(f"circular buffer {buffer.name} has {buffer.depth} bytes, less than one "
                               f"{block_bytes[key]}-byte block")
    producer = _Producer(device, {"a": a, "b": b}, block_bytes, share)
    tile_ends = _consume(device, producer, (tiles_m, tiles_n, steps), chain, 4 * dpe_block_cycles(device, b_in),
                         record)
    record.mml_commands = 4 * tiles_m * tiles_n * steps
    record.dma_commands = producer.count
    pes = a.grid[0] * a.grid[1]
    for buffer in (a, b):
        s = buffer.stream
        slice_bytes = math.prod(buffer.shape) * buffer.element_bytes
        record.traffic.add(s.level, s.reads * slice_bytes * s.passes)
        record.traffic.add("local", pes * slice_bytes * s.passes)
    record.traffic.add("local", pes * record.mml_commands * 2 * 32 * 32 * b_in)
    return tile_ends
