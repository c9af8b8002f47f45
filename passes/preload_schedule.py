"""`preload-schedule`: load a device program's off-chip data ahead of its use (ELK s4.2, s4.5).

On a chip with off-chip memory (HBM), a function's arguments rest in HBM (ELK s2.2:
everything a model needs is loaded into HBM before it runs), so each ``device.load`` of a
function argument is an HBM read the cores wait for. This pass rewrites each one into
ELK's device functions (s4.5, Figure 15): a ``device.preload_async`` of the data into its
buffer, issued while earlier operators execute, and a ``device.wait`` right before the
buffer's first use (with a plan's frontiers, at the start of the operator that first
uses it, as the plan's timeline has it); the preloaded buffer is then redistributed into its execute-state
layout by the ``device.relayout`` that already follows (a weight's idle layout is its
preload-state plan, s4.3).

Operators are the kernels of the block, in program order (each ends with its
``device.reduce`` and the stores and frees after it). Which loads run while an operator
executes is ELK's preload frontier (s4.2): the preload-order position of the first load
that waits for the operator to finish. A program `rtensor-partition` planned with ELK
states the plan on each kernel's ``device.reduce`` as ``irc.preload = {slot, frontier}``
(the kernel's place in the preload order, s4.4, and its frontier), and the pass issues
the loads in that order at those frontiers: what the plan says is what runs. Without a
plan, loads keep program order and each frontier is the widest whose preloaded buffers
fit beside the operator's own (plans are fixed at this level, so by Theorem 4.2 the
widest is the inductive scheduler's choice): the rule the planner times a plan within
SRAM by, from its own account (`irc.planner.resident_loads.resident_frontiers`).

Either way the frontiers are checked against the program's real liveness: the moved
program is placed with `device-alloc`'s own placement (every buffer from its alloc to its
free, fragmentation included), and an operator where a buffer does not fit has its
frontier narrowed until everything does (the plan counts every buffer the program
keeps, `irc.planner.elk.preload_ops`, and checks that the placement packs them,
`irc.planner.preload_packing`, as it does for a plan within SRAM; a plan made otherwise
may not pack: the function's
``irc.remark`` counts the narrowed frontiers and why). The bytes live are checked
against a model-wide plan's account (``irc.planned_peak_bytes``), the packing against
the core. Preloads keep their order (rule 2); a preload placed
after an operator starts once it is done (rule 1); only the ``device.wait`` of its own
buffer blocks on it (rule 3). The allocations move with their preloads, so buffer
offsets are reassigned: run ``device-alloc`` afterwards (the ``inference`` pipeline
does). A plan that paces its preloads (``irc.preloaded``'s ``link_share``, θ) puts its
share on every ``device.preload_async``. A device without off-chip memory is an error (``if_offchip=true``: the program is
left as it is).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DictionaryAttr, FloatAttr, IntegerAttr, ModuleOp, StringAttr, UnitAttr
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, BlockArgument, Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from irc.diagnostics import location_of
from irc.dialects.device import AllocOp, FreeOp, LoadOp, PreloadAsyncOp, ReduceOp, StoreOp, WaitOp, i64_attr
from irc.lowering.te_to_rtensor import PLANNED_PEAK_ATTR, PRELOAD_ATTR, PRELOADED_ATTR
from irc.passes.device_alloc import first_over, live_intervals, peak_live_bytes, place
from irc.planner.preload import PreloadFitError, _order_bounds
from irc.planner.preload_designs import widest_frontiers
from irc.planner.resident_loads import resident_frontiers
from irc.target import TargetError, device_of, require_target


def operator_segments(ops: list[Operation]) -> list[int]:
    """Per op of a block, the index of the operator (kernel) it belongs to: a kernel ends
    with its ``device.reduce`` (a kernel of several products, a fused gradient pair, with
    its last: one per product, with stores between) and the stores and frees right after
    it (the last one with the rest of the block)."""
    segment, current, closing = [], 0, False
    for op in ops:
        if closing and not isinstance(op, (StoreOp, FreeOp, ReduceOp)):
            current += 1
            closing = False
        segment.append(current)
        if isinstance(op, ReduceOp):
            closing = True
    if not closing and current > 0:   # what follows the last kernel (the return) is part of it
        segment = [min(s, current - 1) for s in segment]
    return segment


def plan_of(ops: list[Operation], segment: list[int], count: int) -> tuple[list[int], list[int]] | None:
    """The preload order (operators by slot) and frontiers a plan states on the kernels'
    ``device.reduce``s, or None when some operator states none (or they do not form one
    order: then the program is scheduled without a plan)."""
    slots, frontiers = [None] * count, [None] * count
    for op, seg in zip(ops, segment):
        attr = op.attributes.get(PRELOAD_ATTR) if isinstance(op, ReduceOp) else None
        if isinstance(attr, DictionaryAttr):
            slot, frontier = attr.data.get("slot"), attr.data.get("frontier")
            if isinstance(slot, IntegerAttr) and isinstance(frontier, IntegerAttr):
                slots[seg], frontiers[seg] = int(slot.value.data), int(frontier.value.data)
    if any(s is None for s in slots) or sorted(slots) != list(range(count)):
        return None
    order = sorted(range(count), key=slots.__getitem__)
    return order, [min(count, max(0, q)) for q in frontiers]


@dataclass
class BlockSchedule:
    """What ``schedule_block`` did to one block."""

    preloads: int
    planned: bool          # the frontiers and order came from the plan's ``irc.preload``
    narrowed: int          # operators whose frontier the real liveness narrowed
    frontiers: list[int]
    order: list[int]
    fragmented: int = 0    # of them, where the live bytes fit but no placement packed them


class _Block:
    """A block's operators, HBM loads and the program a choice of frontiers makes of it."""

    def __init__(self, block: Block) -> None:
        self.ops = list(block.ops)
        self.segment = operator_segments(self.ops)
        self.count = self.segment[-1] + 1 if self.ops else 0
        index = {op: i for i, op in enumerate(self.ops)}
        self.loads = [op for op in self.ops if isinstance(op, LoadOp) and isinstance(op.source, BlockArgument)
                      and op.source.block is block and isinstance(op.buffer.owner, AllocOp)]
        self.first_use: dict[LoadOp, Operation | None] = {}
        self.owner: dict[LoadOp, int] = {}
        for load in self.loads:
            users = [use.operation for use in load.buffer.uses if use.operation is not load
                     and index.get(use.operation, -1) > index[load]]
            use = min(users, key=index.__getitem__) if users else None
            self.first_use[load] = use
            self.owner[load] = self.segment[index[use]] if use is not None else self.segment[index[load]]
        self.moved = {load.buffer.owner for load in self.loads} | set(self.loads)
        self.preload_bytes = [0] * self.count
        for load in self.loads:
            self.preload_bytes[self.owner[load]] += int(load.buffer.owner.bytes.value.data)
        # anchors: the first op of each operator that never moves (a block ends with its
        # terminator, which never moves)
        self.anchor: list[Operation | None] = [None] * (self.count + 1)
        for op, seg in zip(self.ops, self.segment):
            if op not in self.moved and self.anchor[seg] is None:
                self.anchor[seg] = op
        for seg in range(self.count - 1, -1, -1):
            if self.anchor[seg] is None:
                self.anchor[seg] = self.anchor[seg + 1]

    def own_bytes(self) -> list[int]:
        """Per operator, the most bytes per core live at one of its ops when nothing later
        is preloaded: everything the unmoved program holds there, plus its own preloaded
        buffers from the operator's start (they move there at the latest)."""
        sequence = self.sequence(None)
        intervals = live_intervals(None, sequence)
        walk_top = [t for t, top in enumerate(sequence) for _ in top.walk()]
        live = [0] * (len(walk_top) + 1)
        for interval in intervals:
            for position in range(interval.start, min(interval.end, len(walk_top))):
                live[position] += interval.bytes_at(position)
        segment_of = {op: seg for op, seg in zip(self.ops, self.segment)}
        for load in self.loads:   # a moved load (and its alloc) sits before its owner's anchor
            segment_of[load] = segment_of[load.buffer.owner] = self.owner[load]
        own = [0] * self.count
        for position, top in enumerate(walk_top):
            seg = segment_of[sequence[top]]
            own[seg] = max(own[seg], live[position])
        return own

    def sequence(self, anchors: dict[LoadOp, int] | None) -> list[Operation]:
        """The block's top-level ops in the order a schedule makes: each moved load (and
        its alloc) right before the anchor of operator ``anchors[load]`` (None: before the
        anchor of its own operator), in preload order."""
        at: dict[Operation, list[LoadOp]] = {}
        for load in self.ordered_loads:
            segment = self.owner[load] if anchors is None else anchors[load]
            at.setdefault(self.anchor[segment], []).append(load)
        sequence = []
        for op in self.ops:
            if op in self.moved:
                continue
            for load in at.get(op, ()):
                sequence += [load.buffer.owner, load]
            sequence.append(op)
        return sequence

    def order_loads(self, pos: list[int]) -> None:
        index = {op: i for i, op in enumerate(self.ops)}
        self.ordered_loads = sorted(self.loads, key=lambda load: (pos[self.owner[load]], index[load]))

    def anchors(self, order: list[int], frontiers: list[int]) -> dict[LoadOp, int]:
        """Per load, the operator before which its preload is issued: the one after the
        last operator whose frontier reaches its slot (frontiers rise, so this is where
        every earlier operator's frontier is passed)."""
        pos = [0] * self.count
        for t, k in enumerate(order):
            pos[k] = t
        after, i = [-1] * self.count, -1
        for slot in range(self.count):
            while i + 1 < self.count and frontiers[i + 1] <= slot:
                i += 1
            after[slot] = i
        return {load: after[pos[self.owner[load]]] + 1 for load in self.loads}


def schedule_block(block: Block, capacity: int, sram: int | None = None, timed: bool = False) -> BlockSchedule:
    """Rewrite ``block``'s HBM loads into preloads and waits (module docstring): the live
    bytes within ``capacity`` per core, the buffers packed within ``sram`` (default the
    same: a plan's account may be less than the core, its buffers may use all of it);
    ``timed``: a plan within SRAM timed the loads, each operator waiting for its own at
    its start (as with a plan's stated frontiers)."""
    shape = _Block(block)
    if not shape.loads:
        return BlockSchedule(0, False, 0, [], [])
    count = shape.count
    planned = plan_of(shape.ops, shape.segment, count)
    order, upper = planned if planned is not None else (list(range(count)), None)
    pos, lower = _order_bounds(order)
    shape.order_loads(pos)
    own = shape.own_bytes()

    def unfit(seg: int, why: str) -> DiagnosticException:
        first = next(op for op, s in zip(shape.ops, shape.segment) if s == seg)
        return DiagnosticException(
            f"{location_of(first)}: error: preload-schedule: operator {seg + 1} of the block cannot run even "
            f"with preloading: {why}"
        )

    try:
        # without a stated plan, the planner's rule for a plan within SRAM (its wait model's)
        frontiers = resident_frontiers(own, shape.preload_bytes, capacity) if planned is None else \
            widest_frontiers(own, shape.preload_bytes, capacity, order, upper)
    except PreloadFitError as error:
        seg = int(error.op)
        held = int(error.needed) - own[seg]
        raise unfit(seg, f"its own buffers take {own[seg]} bytes per core" + (
            f" and the loads the preload order keeps on chip beside it {held}, {int(error.needed)} in all"
            if held > 0 else "") + f"; the core has {capacity}") from None
    wanted = list(frontiers) if upper is None else [max(lower[i], min(count, upper[i])) for i in range(count)]
    narrowed = {i for i in range(count) if frontiers[i] < wanted[i]}
    fragmented = _narrow_to_placement(shape, order, frontiers, lower, (capacity, sram or capacity), unfit, narrowed)
    _rewrite(block, shape, shape.anchors(order, frontiers), planned is not None or timed)
    return BlockSchedule(len(shape.loads), planned is not None, len(narrowed), frontiers, order, len(fragmented))


def _narrow_to_placement(shape: _Block, order: list[int], frontiers: list[int], lower: list[int],
                         capacities: tuple[int, int], unfit, narrowed: set[int]) -> set[int]:
    """Narrow ``frontiers`` (in place) until the bytes the program they make holds fit the
    first of ``capacities`` and `device-alloc`'s placement packs its buffers in the second,
    adding each operator narrowed to ``narrowed``; the operators narrowed where the bytes
    live fit but the placement does not pack them (fragmented)."""
    fragmented: set[int] = set()
    segment_of = dict(zip(shape.ops, shape.segment))
    capacity, sram = capacities
    while True:
        anchors = shape.anchors(order, frontiers)
        sequence = shape.sequence(anchors)
        intervals = live_intervals(None, sequence)
        culprit = first_over(intervals, capacity)
        if culprit is None:
            _, culprit = place(intervals, sram)
        if culprit is None:
            return fragmented
        walk_top = [t for t, top in enumerate(sequence) for _ in top.walk()]
        top = sequence[walk_top[culprit.start]]
        # a moved alloc sits before its anchor: it belongs to the anchor's operator
        seg = anchors[next(load for load in shape.loads if load.buffer.owner is top)] if top in shape.moved \
            else segment_of[top]
        live = sum(i.bytes_at(culprit.start) for i in intervals if i.start < culprit.start < i.end)
        need = max(1, live + culprit.size - capacity)
        capacity_there = capacity if live + culprit.size > capacity else sram
        if frontiers[seg] <= lower[seg]:
            total = live + culprit.size
            raise unfit(seg, f"buffer {culprit.op.buffer_name.data} ({culprit.size} bytes per core) does not fit "
                             f"beside the {live} bytes live there: " + (
                                 f"{total} bytes, the core has {capacity}" if total > capacity else
                                 f"{total} of the core's {capacity_there} bytes, but no placement of the program's "
                                 f"buffers leaves it a free range (fragmented)"))
        while frontiers[seg] > lower[seg] and need > 0:   # drop the latest resident loads first
            frontiers[seg] -= 1
            dropped = order[frontiers[seg]]
            if dropped > seg:
                need -= shape.preload_bytes[dropped]
        narrowed.add(seg)
        if live + culprit.size <= capacity:
            fragmented.add(seg)
        for i in range(seg - 1, -1, -1):
            frontiers[i] = max(lower[i], min(frontiers[i], frontiers[i + 1]))


def _rewrite(block: Block, shape: _Block, anchors: dict[LoadOp, int], planned: bool) -> None:
    """Allocs and preloads before their anchors, a wait before each first use (with a
    plan, at the start of the operator that first uses the buffer, as the planner's
    timeline has it); offsets reset for `device-alloc`."""
    for load in shape.ordered_loads:
        alloc, anchor = load.buffer.owner, shape.anchor[anchors[load]]
        alloc.detach()
        block.insert_op_before(alloc, anchor)
        preload = PreloadAsyncOp(load.source, load.buffer, load.origins,
                                 [(expr.data, shape) for expr, shape in load.movements()])
        preload.location = load.location
        block.insert_op_before(preload, anchor)
    for load in shape.ordered_loads:
        wait = WaitOp(load.buffer)
        wait.location = load.location
        use = shape.first_use[load]
        if use is not None and planned:
            # ELK's timeline starts an operator once its loads are in (a weight it reads in
            # place is first used by a computation, not by a setup at the operator's start)
            block.insert_op_before(wait, shape.anchor[shape.owner[load]])
        elif use is not None:
            block.insert_op_before(wait, use)
        else:
            block.insert_op_after(load, wait)
        load.detach()
        load.erase()
    for op in block.ops:
        if isinstance(op, AllocOp):
            op.properties["offset"] = i64_attr(-1)


def _planned_link_share(func: FuncOp) -> FloatAttr | None:
    """The link share (θ) an ELK plan paces its preloads to (``irc.preloaded``'s
    ``link_share``), or None: unpaced."""
    plan = func.attributes.get(PRELOADED_ATTR)
    share = plan.data.get("link_share") if isinstance(plan, DictionaryAttr) else None
    return share if isinstance(share, FloatAttr) and share.value.data < 1.0 else None


@dataclass(frozen=True)
class PreloadSchedule(ModulePass):
    """``preload-schedule``: HBM loads -> ``device.preload_async`` ahead + ``device.wait``."""

    name = "preload-schedule"

    if_offchip: bool = False
    """Leave a program for a chip without off-chip memory as it is (the ``inference``
    pipeline's setting) instead of refusing it."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
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
            narrowed = planned = fragmented = 0
            capacity = device.sram_bytes
            peak = func.attributes.get(PLANNED_PEAK_ATTR)
            within = isinstance(peak, IntegerAttr) and PRELOADED_ATTR not in func.attributes
            if within:
                # a plan within SRAM: loads move ahead only as far as its own account allows
                capacity = min(capacity, max(int(peak.value.data), peak_live_bytes(live_intervals(func))))
            share = _planned_link_share(func)
            plan = func.attributes.get(PRELOADED_ATTR)
            yields = isinstance(plan, DictionaryAttr) and "yields" in plan.data
            for block in func.body.blocks:
                done = schedule_block(block, capacity, device.sram_bytes, within)
                for preload in (o for o in block.ops if isinstance(o, PreloadAsyncOp)):
                    if share is not None:
                        preload.properties["link_share"] = share
                    if yields:
                        preload.properties["yields"] = UnitAttr()
                # a plan's frontiers: ELK's stated ones, or those a plan within SRAM timed
                narrowed += done.narrowed if done.planned or within else 0
                fragmented += done.fragmented if done.planned or within else 0
                planned += done.planned
            if narrowed:
                func.attributes["irc.remark"] = StringAttr(
                    f"preload-schedule: narrowed {narrowed} of the plan's preload frontiers to fit SRAM: "
                    f"{narrowed - fragmented} where the buffers live exceed it (more than the plan counts), "
                    f"{fragmented} where they fit but device-alloc's placement cannot pack them (fragmented)")
