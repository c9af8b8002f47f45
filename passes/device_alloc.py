"""`device-alloc`: assign SRAM offsets to device buffers and check capacity (T10 s4.4).

T10 s4.4 "Sub-tensor placement": allocate every partition in each core's local memory
and reuse the memory of buffers that are dead. The same offset is used on every core of
the buffer's core set (SPMD). Every buffer's live range is known (from its
``device.alloc`` to its ``device.free``, or to the end of the function: a weight resting
in its idle layout), so the placement is decided with the whole program in view:

1. first fit in program order (a ``device.alloc`` takes the lowest offset where it fits
   among the buffers live at that point, a ``device.free`` releases its range);
2. if that leaves a core without room although the bytes live at every point fit (the
   free space is fragmented), the buffers are placed offline, largest first and then
   longest-lived first, each at the lowest offset free over its whole live range (the
   buffers resting throughout pack at the bottom, the short-lived ones above them);
3. if neither packs them, the offline placement is searched over orders near largest
   first (each buffer's size weighed by a seeded random factor, the same for every run
   of the same program), a bounded number of them: a plan's byte count is a packing
   more often than the two fixed orders find (issue 23, item 5: OPT-1.3B at batch 8 and
   sequence 512, 157 buffers, has 2,124 bytes per core to spare; largest first places
   one 52,368 bytes past the core's end, the 149th order of the search packs them
   exactly). Programs of about 2,000 buffers or more are not searched (the budget).

A ``device.reduce`` that rounds an accumulator in place keeps the first bytes of its
range for the rounded result and releases the rest (the buffer shrinks at the reduce;
the offline placement places a buffer beside it at the bytes it holds while the two are
live, and reserves the whole range of the buffer being placed).

The placement is `irc.planner.packing`'s, which the planner checks its ELK plans with.

A program whose live buffers exceed a core's SRAM at some point (or that no placement
packs) is an error at the ``device.alloc`` that does not fit, naming the core, the
buffers live there with their bytes, and the total.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from irc.diagnostics import location_of
from irc.dialects.device import AllocOp, FreeOp, ReduceOp, i64_attr
from irc.planner.packing import (  # noqa: F401  (re-exported: the placement is the planner's too)
    SEARCH_ORDERS, SEARCH_WORK, STRATEGIES, Interval, first_fit, first_over, offline_placement, online_first_fit,
    peak_live_bytes, place, searched_placement,
)
from irc.target import TargetError, device_of, require_target, set_target


def _alloc_of(value) -> AllocOp | None:
    """The alloc a buffer value comes from (through in-place rounding reduces)."""
    op = value.owner
    while isinstance(op, ReduceOp):
        op = op.buffer.owner
    return op if isinstance(op, AllocOp) else None


def live_intervals(func, ops=None) -> list[Interval]:
    """Every ``device.alloc`` of ``func`` with its live range (to its free, or to the end);
    with ``ops``, of that sequence of top-level ops instead (an order a pass considers
    before it moves anything, e.g. `preload-schedule`)."""
    intervals, by_op, position = [], {}, 0
    walked = func.walk() if ops is None else (inner for top in ops for inner in top.walk())
    for position, inner in enumerate(walked):
        if isinstance(inner, AllocOp):
            by_op[inner] = Interval(inner, int(inner.bytes.value.data), position, -1)
            intervals.append(by_op[inner])
        elif isinstance(inner, ReduceOp) and inner.result is not None and _alloc_of(inner.buffer) in by_op:
            by_op[_alloc_of(inner.buffer)].shrink = (position, inner.result.type.bytes)
        elif isinstance(inner, FreeOp) and _alloc_of(inner.buffer) in by_op:
            by_op[_alloc_of(inner.buffer)].end = position
    for interval in intervals:
        if interval.end < 0:
            interval.end = position + 1
    return intervals


@dataclass(frozen=True)
class DeviceAlloc(ModulePass):
    """``device-alloc{device=...}``: SRAM offsets for every buffer; overflow is an error.
    The chip is the ``irc.target`` of the function (or of the module around it);
    ``device``, when given, must be the same chip (a module without a target gets it)."""

    name = "device-alloc"

    device: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not any(isinstance(o, AllocOp) for o in op.walk()):
            return
        if self.device:
            try:
                set_target(op, self.device)
            except TargetError as error:
                raise DiagnosticException(f"{location_of(op)}: error: device-alloc: {error}") from None
        for func in op.walk():
            if not isinstance(func, FuncOp) or not func.body.blocks:
                continue
            if not any(isinstance(o, AllocOp) for o in func.walk()):
                continue
            try:
                device = device_of(require_target(func))
            except TargetError as error:
                raise DiagnosticException(f"{location_of(func)}: error: device-alloc: {error}") from None
            intervals = live_intervals(func)
            for interval in intervals:
                cores = int(interval.op.cores.value.data)
                if cores > device.cores:
                    raise DiagnosticException(
                        f"{location_of(interval.op)}: error: 'device.alloc' op buffer "
                        f"{interval.op.buffer_name.data} is placed on {cores} cores but {device.name} has {device.cores}"
                    )
            offsets, culprit = place(intervals, device.sram_bytes)
            if culprit is not None:
                self._overflow(intervals, offsets, device)
            for interval in intervals:
                interval.op.properties["offset"] = i64_attr(offsets[interval.op])

    @staticmethod
    def _overflow(intervals: list[Interval], offsets: dict[AllocOp, int], device) -> None:
        """The error at the first buffer that does not fit: where the live bytes exceed
        SRAM, else the first one first fit places past its end (fragmentation no
        placement could pack)."""
        culprit = first_over(intervals, device.sram_bytes) or next(
            i for i in sorted(intervals, key=lambda i: i.start) if offsets[i.op] + i.size > device.sram_bytes)
        live = [o for o in intervals if o.start < culprit.start < o.end]
        live.sort(key=lambda o: offsets[o.op])
        listing = ", ".join(f"{o.op.buffer_name.data} ({o.bytes_at(culprit.start)} B)" for o in live)
        need = sum(o.bytes_at(culprit.start) for o in live) + culprit.size
        raise DiagnosticException(
            f"{location_of(culprit.op)}: error: 'device.alloc' op SRAM overflow on core 0: "
            f"buffer {culprit.op.buffer_name.data} ({culprit.size} B) does not fit next to the live buffers "
            f"{listing or 'none'}: {need} bytes needed (first free offset {offsets[culprit.op]}), "
            f"core has {device.sram_bytes} bytes on {device.name}"
        )
