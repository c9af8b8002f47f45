"""Whether the device program an ELK plan makes packs in a core's SRAM (issue 23, item 5).

ELK's scheduler counts bytes: an op's execution space and the preload-state bytes of the
ops resident while it runs (s4.2, s4.3). The compiled program holds the same bytes, but
as buffers at fixed offsets, each from its alloc to its free; `preload-schedule` places
them with `device-alloc`'s packing (`irc.planner.packing.place`) and narrows a frontier
whose buffers do not pack, or fails where narrowing cannot help. ``program_buffers``
states the buffers a plan's program holds, in its order, as the lowering makes them
(`irc.lowering.shift_to_device`, `irc.passes.preload_schedule`): per op, the loads
anchored before it (each weight's preload-state buffer, each input it holds the one copy
of, in its execute layout), then its execute buffers (its output, the partitions of its
inputs not held in place, their rotation buffers), freed after it; an output read later
kept, at its rounded size, to its last reader; a relayouted input several consumers
share (the plan's ``shared``, `irc.planner.relayout_sharing`) kept by its holder to its
last sharer, which hold no buffer of their own for it. ``packs`` places them with the same
function. The account is the planner's, not the program itself: windows and relayout
scratch are not stated.
"""

from __future__ import annotations

from typing import Sequence

from irc.planner.idle import held_in_place
from irc.planner.model import ModelSpec, _ModelProblem
from irc.planner.op_table import FrontierCache
from irc.planner.packing import Interval, place
from irc.planner.preload_plan import PreloadPlan


def load_anchors(order: Sequence[int], frontier: Sequence[int]) -> list[int]:
    """Per op, the op before which its load is issued (`irc.passes.preload_schedule`'s
    ``anchors``): the one after the last op whose frontier reaches its slot."""
    n = len(order)
    after, i = [-1] * n, -1
    for slot in range(n):
        while i + 1 < n and frontier[i + 1] <= slot:
            i += 1
        after[slot] = i
    pos = [0] * n
    for t, k in enumerate(order):
        pos[k] = t
    return [after[pos[k]] + 1 for k in range(n)]


class _Buffers:
    """The intervals of one program, built op by op."""

    def __init__(self) -> None:
        self.intervals: list[Interval] = []
        self.position = 0
        self.op = 0                      # the op whose loads or execution is being stated
        self.op_at: list[int] = []       # per position, that op

    def alloc(self, size: float, key: object) -> Interval | None:
        if size <= 0:
            return None
        interval = Interval(key, int(size), self.position, -1)
        self.intervals.append(interval)
        self.step()
        return interval

    def step(self) -> int:
        """The next position (of op ``self.op``)."""
        self.op_at.append(self.op)
        self.position += 1
        return self.position - 1


def program_buffers(model: ModelSpec, cache: FrontierCache, plan: PreloadPlan,
                    own_inputs: Sequence[Sequence[str]] | None = None,
                    problem: _ModelProblem | None = None) -> tuple[list[Interval], list[int]]:
    """The buffers ``plan``'s device program holds (module docstring), in program order,
    and per position the op it belongs to (a load to the op it is issued before)."""
    problem = _ModelProblem(model, cache, None) if problem is None else problem
    n = len(model.ops)
    own_inputs = [()] * n if own_inputs is None else own_inputs
    anchor = load_anchors(plan.schedule.order, plan.schedule.frontier)
    last_read: dict[tuple[int, str], int] = {}
    for i, across in enumerate(problem.live):
        for held in across:
            last_read[held] = max(last_read.get(held, i), i)
    # a copy several ops read: loaded before the first, kept to the last (its holder's name)
    spans = {(home, name): (first, last) for weights in (False, True)
             for first, last, _, home, name in model.shared_spans(weights=weights)}
    loads: dict[int, list[int]] = {}
    for k in plan.schedule.order:
        first = min([anchor[k]] + [anchor[spans[(k, w)][0]] for w in model.ops[k].weights if (k, w) in spans])
        loads.setdefault(first, []).append(k)
    kept_copies, reads = _shared_copies(problem, plan)
    buffers = _Buffers()
    until: dict[int, list[Interval]] = {}
    for i in range(n):
        buffers.op = i
        for k in loads.get(i, ()):
            for interval, name in _preloaded(model, problem.tables, plan, k, own_inputs[k], buffers):
                until.setdefault(spans.get((k, name), (k, k))[1], []).append(interval)
        shared = {name for name in own_inputs[i] if (i, name) in spans}
        freed, output = _execute(model, problem.tables, plan, i, set(own_inputs[i]) - shared, buffers,
                                 reads.get(i, set()))
        for interval in [f for f in freed if f.op[0] == "exec" and (i, f.op[2]) in kept_copies]:
            freed.remove(interval)   # a shared copy: kept to its last sharer
            until.setdefault(kept_copies[(i, interval.op[2])], []).append(interval)
        reduce = buffers.step()
        name = model.ops[i].spec.output.name
        canonical = f"t{model.ops[i].spec.tensor_index(name)}"
        last = last_read.get((i, canonical), i)
        if output is not None and last > i:   # read later: kept, rounded at its reduce
            held = problem.held_bytes(i, plan.exec_plan[i], canonical)
            if held < output.size:
                output.shrink = (reduce, held)
            until.setdefault(last, []).append(output)
        elif output is not None:
            freed.append(output)
        for interval in freed + until.pop(i, []):
            interval.end = reduce + 1
        buffers.step()
    for interval in buffers.intervals:
        if interval.end < 0:
            interval.end = buffers.position
    return buffers.intervals, buffers.op_at


def _preloaded(model, tables, plan, k, names: Sequence[str], buffers: _Buffers) -> list[tuple[Interval, str]]:
    """Op ``k``'s loads, with the name each holds: each weight's preload-state buffer, then
    the inputs ``names`` it holds the copy of, in its execute layout."""
    op = model.ops[k]
    table = tables[k]
    j, r = plan.exec_plan[k], plan.preload_plan[k]
    found = []
    if op.weights:
        idle = table.idle[table.idle_index[r, j]]
        for w in op.weights:
            canonical = f"t{op.spec.tensor_index(w)}"
            found.append((buffers.alloc(idle.weight_bytes.get(canonical, 0), ("weight", k, canonical)), w))
    memory = table.active[j].score.memory
    for name in names:
        canonical = f"t{op.spec.tensor_index(name)}"
        found.append((buffers.alloc(memory.partitions[canonical], ("input", k, canonical)), name))
    return [(interval, name) for interval, name in found if interval is not None]


def _shared_copies(problem: _ModelProblem, plan: PreloadPlan) -> tuple[dict[tuple[int, str], int], dict[int, set[str]]]:
    """The plan's shared relayout copies (``PreloadPlan.shared``): (holder op, its input's
    canonical name) -> the copy's last sharer, and per sharer the canonical names it reads
    from a copy."""
    held: dict[tuple[int, str], int] = {}
    reads: dict[int, set[str]] = {}
    for copy in plan.shared:
        edge = problem.edges[copy.holder]
        held[(edge.consumer, edge.tensor)] = copy.last   # (an edge names its consumer's tensor "tN")
        for k in copy.sharers:
            reads.setdefault(problem.edges[k].consumer, set()).add(problem.edges[k].tensor)
    return held, reads


def _execute(model, tables, plan, i, loaded: set[str], buffers: _Buffers,
             from_copies: set[str] = frozenset()) -> tuple[list[Interval], Interval | None]:
    """Op ``i``'s execute buffers: its output, then each input's partition (not a weight held
    in place, not an input already loaded into it, not one it reads from a shared copy,
    ``from_copies``) and rotation buffer; returns those freed after it and the output."""
    op = model.ops[i]
    table = tables[i]
    j, r = plan.exec_plan[i], plan.preload_plan[i]
    active = table.active[j]
    memory = active.score.memory
    idle = table.idle[table.idle_index[r, j]] if op.weights else None
    own = {f"t{op.spec.tensor_index(name)}" for name in loaded}
    output = f"t{op.spec.tensor_index(op.spec.output.name)}"
    kept, freed = None, []
    for position, tensor in enumerate(op.spec.tensors):   # the output first, as the kernel allocates them
        canonical = f"t{position}"
        in_place = idle is not None and canonical in idle.weight_bytes and held_in_place(idle, active, canonical)
        if canonical == output:
            kept = buffers.alloc(memory.partitions[canonical], ("output", i))
        elif not in_place and canonical not in own and canonical not in from_copies:
            freed.append(buffers.alloc(memory.partitions.get(canonical, 0), ("exec", i, canonical)))
        freed.append(buffers.alloc(memory.rotation_buffers.get(canonical, 0), ("recv", i, canonical)))
    return [f for f in freed if f is not None], kept


def packing_deficit(model: ModelSpec, cache: FrontierCache, plan: PreloadPlan, capacity: int,
                    own_inputs: Sequence[Sequence[str]] | None = None,
                    problem: _ModelProblem | None = None) -> tuple[int, int]:
    """(0, -1) when ``plan``'s program packs in ``capacity`` bytes per core by
    `device-alloc`'s placement (``place``: first fit in program order, at no more cost,
    when it fits), else (how many bytes past the core's end its first fit places a buffer
    or the live bytes exceed it, the op where the first buffer that does not fit is allocated)."""
    intervals, op_at = program_buffers(model, cache, plan, own_inputs, problem)
    offsets, culprit = place(intervals, capacity)
    if culprit is None:
        return 0, -1
    return max(1, max(offsets[i.op] + i.size for i in intervals) - capacity), op_at[culprit.start]
