"""`preload-schedule`: load a device program's off-chip data ahead of its use (ELK s4.2, s4.5).

On a chip with off-chip memory (HBM), a function's arguments rest in HBM (ELK s2.2:
everything a model needs is loaded into HBM before it runs), so each ``device.load`` of a
function argument is an HBM read the cores wait for. This pass rewrites each one into
ELK's device functions (s4.5, Figure 15): a ``device.preload_async`` of the data into its
buffer, issued while earlier operators execute, and a ``device.wait`` right before the
buffer's first use; the preloaded buffer is then redistributed into its execute-state
layout by the ``device.relayout`` that already follows (a weight's idle layout is its
preload-state plan, s4.3).

Operators are the kernels of the block, in program order (each ends with its
``device.reduce`` and the stores and frees after it). How early each operator's preload
may start is ELK's preload number (s4.2): the plans are fixed at this level, so an
operator's execute time does not depend on what is resident and Theorem 4.2's choice is
the widest frontier whose preloaded buffers fit beside the operator's own live buffers in
each core's SRAM (``irc.planner.preload.widest_frontiers``). Preloads keep program order
(rule 2); a preload placed after an operator starts once it is done (rule 1); only the
``device.wait`` of its own buffer blocks on it (rule 3). The allocations move with their
preloads, so buffer offsets are reassigned: run ``device-alloc`` afterwards (the
``inference`` pipeline does). A device without off-chip memory is an error
(``if_offchip=true``: the program is left as it is).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, BlockArgument, Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from irc.dialects.device import AllocOp, FreeOp, LoadOp, PreloadAsyncOp, ReduceOp, StoreOp, WaitOp, i64_attr
from irc.diagnostics import location_of


def operator_segments(ops: list[Operation]) -> list[int]:
    """Per op of a block, the index of the operator (kernel) it belongs to: a kernel ends
    with its ``device.reduce`` and the stores and frees right after it."""
    segment, current, closing = [], 0, False
    for op in ops:
        if closing and not isinstance(op, (StoreOp, FreeOp)):
            current += 1
            closing = False
        segment.append(current)
        if isinstance(op, ReduceOp):
            closing = True
    return segment


def schedule_block(block: Block, capacity: int) -> int:
    """Rewrite ``block``'s HBM loads into preloads and waits; returns how many."""
    from irc.planner.preload import PreloadFitError, widest_frontiers

    ops = list(block.ops)
    segment = operator_segments(ops)
    count = segment[-1] + 1 if ops else 0
    index = {op: i for i, op in enumerate(ops)}
    loads = [op for op in ops if isinstance(op, LoadOp) and isinstance(op.source, BlockArgument)
             and op.source.block is block and isinstance(op.buffer.owner, AllocOp)]
    if not loads:
        return 0
    first_use: dict[LoadOp, Operation] = {}
    owner: dict[LoadOp, int] = {}
    for load in loads:
        users = [use.operation for use in load.buffer.uses if use.operation is not load
                 and index.get(use.operation, -1) > index[load]]
        use = min(users, key=index.__getitem__) if users else None
        first_use[load] = use
        owner[load] = segment[index[use]] if use is not None else segment[index[load]]
    hbm_buffers = {load.buffer.owner for load in loads}
    preload_bytes = [0] * count
    for load in loads:
        preload_bytes[owner[load]] += int(load.buffer.owner.bytes.value.data)
    # each operator's own live bytes: everything but the HBM buffers, plus its own ones
    exec_bytes = [0] * count
    live = 0
    for op, seg in zip(ops, segment):
        if isinstance(op, AllocOp) and op not in hbm_buffers:
            live += int(op.bytes.value.data)
        exec_bytes[seg] = max(exec_bytes[seg], live)
        if isinstance(op, FreeOp) and isinstance(op.buffer.owner, AllocOp) and op.buffer.owner not in hbm_buffers:
            live -= int(op.buffer.owner.bytes.value.data)
    exec_bytes = [e + p for e, p in zip(exec_bytes, preload_bytes)]
    try:
        frontiers = widest_frontiers(exec_bytes, preload_bytes, capacity)
    except PreloadFitError as error:
        seg = int(error.op)
        first = next(op for op, s in zip(ops, segment) if s == seg)
        raise DiagnosticException(
            f"{location_of(first)}: error: preload-schedule: operator {seg + 1} of the block cannot run even "
            f"with preloading: its own buffers take {exec_bytes[seg]} bytes per core, the core has {capacity}"
        ) from None
    # the preload of operator k starts after the last operator whose frontier reaches k
    starts_after = [max([i for i in range(count) if frontiers[i] <= k], default=-1) for k in range(count)]
    first_of = {}
    for op, seg in zip(ops, segment):
        first_of.setdefault(seg, op)
    moved = {load.buffer.owner for load in loads} | set(loads)

    def anchor_at(start: Operation) -> Operation:
        """``start`` or the first op after it that does not move."""
        for op in ops[index[start]:]:
            if op not in moved:
                return op
        raise AssertionError("a block ends with its terminator, which never moves")

    loads.sort(key=lambda load: (owner[load], index[load]))   # preload in the order of use (rule 2)
    anchors = {load: anchor_at(first_of[starts_after[owner[load]] + 1]) for load in loads}
    for load in loads:
        alloc, anchor = load.buffer.owner, anchors[load]
        alloc.detach()
        block.insert_op_before(alloc, anchor)
        preload = PreloadAsyncOp(load.source, load.buffer, load.origins)
        block.insert_op_before(preload, anchor)
        wait = WaitOp(load.buffer)
        use = first_use[load]
        if use is not None:
            block.insert_op_before(wait, use)
        else:
            block.insert_op_after(load, wait)
        load.detach()
        load.erase()
    for op in block.ops:
        if isinstance(op, AllocOp):
            op.properties["offset"] = i64_attr(-1)
    return len(loads)


@dataclass(frozen=True)
class PreloadSchedule(ModulePass):
    """``preload-schedule``: HBM loads -> ``device.preload_async`` ahead + ``device.wait``."""

    name = "preload-schedule"

    if_offchip: bool = False
    """Leave a program for a chip without off-chip memory as it is (the ``inference``
    pipeline's setting) instead of refusing it."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from xdsl.dialects.func import FuncOp

        from irc.lowering.target import TargetError, device_of, require_target

        for func in op.walk():
            if not isinstance(func, FuncOp) or not func.body.blocks:
                continue
            if not any(isinstance(o, LoadOp) for o in func.walk()):
                continue
            try:
                device = device_of(require_target(func))
            except TargetError as error:
                raise DiagnosticException(f"{location_of(func)}: error: preload-schedule: {error}") from None
            if device.offchip is None:
                if self.if_offchip:
                    continue
                raise DiagnosticException(
                    f"{location_of(func)}: error: preload-schedule: device '{device.name}' has no off-chip "
                    f"memory to preload from (its description has no [offchip] section)"
                )
            for block in func.body.blocks:
                schedule_block(block, device.sram_bytes)
