"""Whether the device program a plan makes packs in a core's SRAM (issue 23, item 5).

A plan counts bytes: ELK's scheduler an op's execution space and the preload-state bytes
of the ops resident while it runs (s4.2, s4.3), Algorithm 1 the idle weights, the
tensors kept across an op and its active plan. The compiled program holds the same bytes,
but as buffers at fixed offsets, each from its alloc to its free; `device-alloc` places
them (`irc.planner.packing.place`), and `preload-schedule` narrows a frontier whose
buffers do not pack, or fails where narrowing cannot help. ``chosen_buffers`` states the
buffers a program holds, in its order, as the lowering makes them
(`irc.lowering.shift_to_device`, `irc.passes.preload_schedule`): per op, the loads
anchored before it (each weight's preload-state buffer, each input it holds the one copy
of, in its execute layout, and the copy of a shared input it is the first to read, in
its holder's layout: a fused gradient pair reads a copy it never holds), then its
execute buffers in the kernel's order (each weight's copy, unless a weight loaded for
its op alone rests as it executes; its outputs, a fused pair's dX and dW; its other
inputs' partitions, a window read with its halo, a fused pair's inputs from outside
loaded into it; each rotating tensor's receive buffer), freed after it; each output read
later kept, at its rounded size, to its last reader; a relayouted input several
consumers share (`irc.planner.relayout_sharing`)
kept by its holder to its last sharer, which hold no buffer of their own for it. These
are every ``device.alloc`` the lowering makes: a relayout or setup writes its
destination buffer (no scratch). ``program_buffers`` states an ELK plan's program
(`irc.planner.elk.packed_decision` checks it), ``resident_buffers`` a plan within
SRAM's (weights resting throughout; `irc.lowering.model_from_ir.plan_function` checks
it), each placed with the same function.
"""

from __future__ import annotations

from typing import Sequence

from irc.planner.idle import IdlePlan, held_in_place
from irc.planner.model import ModelSpec, _ModelProblem
from irc.planner.model_spec import ModelOp, kept_bytes
from irc.planner.op_table import FrontierCache, canonical_spec
from irc.planner.packing import Interval, peak_live_bytes, place
from irc.planner.preload_plan import PreloadPlan
from irc.plans.plan import Plan


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
    chosen = []
    for op, table, j, r in zip(model.ops, problem.tables, plan.exec_plan, plan.preload_plan):
        chosen.append((table.active[j], table.idle[table.idle_index[r, j]] if op.weights else None))
    anchor = load_anchors(plan.schedule.order, plan.schedule.frontier)
    return chosen_buffers(model, chosen, plan.schedule.order, anchor, own_inputs, _shared_copies(problem, plan))


def chosen_buffers(model: ModelSpec, chosen: Sequence[tuple[Plan, IdlePlan | None]], order: Sequence[int],
                   anchor: Sequence[int], own_inputs: Sequence[Sequence[str]] | None = None,
                   copies: tuple[dict, dict] = ({}, {}), input_anchor: Sequence[int] | None = None,
                   resting: bool = False, input_loads: Sequence[Sequence[tuple[int, str]]] | None = None
                   ) -> tuple[list[Interval], list[int]]:
    """The buffers of the program that runs each op with its ``chosen`` (active plan, idle
    plan or None) (module docstring): op k's loads (its weights, then the inputs it holds
    the copy of, ``own_inputs[k]``; or ``input_loads[k]``: (holder op, its name) of each
    input loaded before op k, in the holder's execute layout) issued before op
    ``anchor[k]``, in the load ``order``; ``copies`` the shared relayout copies
    (``_shared_copies``); with ``input_anchor``, op k's inputs are loaded apart from its
    weights, before op ``input_anchor[k]``. A weight loaded for its op only is freed after
    it (or its last reader) and read where it rests when its idle layout is its execute
    layout (`irc.planner.idle.held_in_place`); ``resting``: each rests in its idle layout
    to the end instead, and its op gathers its own copy (a plan within SRAM's). Each
    output (a fused pair's dX and dW) is reduced in turn. A plan may name its tensors as
    its op does or canonically."""
    n = len(model.ops)
    if input_loads is None:
        own = [()] * n if own_inputs is None else own_inputs
        input_loads = [[(k, name) for name in names] for k, names in enumerate(own)]
    last_read: dict[tuple[int, str], int] = {}
    for i, across in enumerate(model.live_across()):
        for holder, name in across:
            held = (holder, f"t{model.ops[holder].spec.tensor_index(name)}")
            last_read[held] = max(last_read.get(held, i), i)
    # a copy several ops read: loaded before the first, kept to the last (its holder's name)
    spans = {(home, name): (first, last) for weights in (False, True)
             for first, last, _, home, name in model.shared_spans(weights=weights)}
    loads = _issued_loads(model, order, anchor, input_loads, spans, input_anchor)
    kept_copies, reads = copies
    buffers = _Buffers()
    until: dict[int, list[Interval]] = {}
    for i in range(n):
        buffers.op = i
        for k, weights, entries in loads.get(i, ()):
            for interval, holder, name in _preloaded(model, chosen, k, weights, entries, buffers):
                if not (resting and interval.op[0] == "weight"):   # (a resting weight: to the end)
                    until.setdefault(spans.get((holder, name), (holder, holder))[1], []).append(interval)
        loaded = {name for holder, name in input_loads[i] if holder == i and (i, name) not in spans}
        freed, outputs = _execute(model.ops[i], chosen[i], i, loaded, buffers, reads.get(i, set()), not resting)
        for interval in [f for f in freed if f.op[0] == "exec" and (i, f.op[2]) in kept_copies]:
            freed.remove(interval)   # a shared copy: kept to its last sharer
            until.setdefault(kept_copies[(i, interval.op[2])], []).append(interval)
        for canonical, output in outputs:   # each reduced in turn; read later: kept, rounded at its reduce
            reduce = buffers.step()
            last = last_read.get((i, canonical), i)
            if last > i:
                _round_kept(model.ops[i], chosen[i][0], canonical, output, reduce)
                until.setdefault(last, []).append(output)
            else:
                freed.append(output)
        if not outputs:
            buffers.step()
        for interval in freed + until.pop(i, []):
            interval.end = buffers.position
        buffers.step()
    for interval in buffers.intervals:
        if interval.end < 0:
            interval.end = buffers.position
    return buffers.intervals, buffers.op_at


def _issued_loads(model: ModelSpec, order: Sequence[int], anchor: Sequence[int],
                  input_loads: Sequence[Sequence[tuple[int, str]]], spans: dict,
                  input_anchor: Sequence[int] | None) -> dict[int, list[tuple[int, bool, Sequence]]]:
    """Per op, the loads issued before it (``chosen_buffers``), in the load order: (op k,
    whether its weights are loaded, the inputs loaded for it). A shared weight is loaded
    before its first reader's anchor."""
    loads: dict[int, list[tuple[int, bool, Sequence]]] = {}
    for k in order:
        first = min([anchor[k]] + [anchor[spans[(k, w)][0]] for w in model.ops[k].weights if (k, w) in spans])
        if input_anchor is None:
            loads.setdefault(first, []).append((k, True, input_loads[k]))
        else:   # (the weights before the inputs loaded before the same op)
            loads.setdefault(first, []).insert(sum(w for _, w, _ in loads.get(first, ())), (k, True, ()))
            loads.setdefault(input_anchor[k], []).append((k, False, input_loads[k]))
    return loads


def _round_kept(op: ModelOp, active, canonical: str, output: Interval, reduce: int) -> None:
    """An output kept for later readers shrinks to its rounded size at its reduce (an
    accumulator wider than its type: `irc.planner.model_spec.kept_bytes`)."""
    key = _key(op, active, canonical)
    held = kept_bytes(op.spec if key != canonical else canonical_spec(op.spec), active, key)
    if held < output.size:
        output.shrink = (reduce, held)


def _key(op: ModelOp, plan, canonical: str) -> str:
    """The name ``plan`` (an active or idle plan of ``op``) gives op's tensor ``canonical``:
    that one, or the op's own name for it."""
    factors = plan.temporal_factors if isinstance(plan, Plan) else plan.weight_bytes
    return canonical if canonical in factors else op.spec.tensors[int(canonical[1:])].name


def _preloaded(model: ModelSpec, chosen: Sequence[tuple[Plan, IdlePlan | None]], k: int, weights: bool,
               entries: Sequence[tuple[int, str]], buffers: _Buffers) -> list[tuple[Interval, int, str]]:
    """Loads issued for op ``k``, with the op holding each and its name there: each of its
    weights' preload-state buffer (with ``weights``), then each input of ``entries``
    ((holder op, its name): in the holder's execute layout; the holder is op k, or the
    later op whose layout holds the copy of an input op k reads first)."""
    op, (active, idle) = model.ops[k], chosen[k]
    found = []
    for w in op.weights if weights and idle is not None else ():   # (no idle plan: the inputs only)
        canonical = f"t{op.spec.tensor_index(w)}"
        found.append((buffers.alloc(idle.weight_bytes.get(_key(op, idle, canonical), 0), ("weight", k, canonical)),
                      k, w))
    for holder, name in entries:
        held, plan = model.ops[holder], chosen[holder][0]
        canonical = f"t{held.spec.tensor_index(name)}"
        size = plan.score.memory.partitions[_key(held, plan, canonical)]
        found.append((buffers.alloc(size, ("input", holder, canonical)), holder, name))
    return [(interval, holder, name) for interval, holder, name in found if interval is not None]


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


def _execute(op: ModelOp, chosen: tuple[Plan, IdlePlan | None], i: int, loaded: set[str], buffers: _Buffers,
             from_copies: set[str] = frozenset(), in_place: bool = True
             ) -> tuple[list[Interval], list[tuple[str, Interval]]]:
    """Op ``i``'s execute buffers in the order the kernel allocates them: each weight's (not
    one held in place), then each tensor's (its outputs: a fused pair's dX and dW; each
    input's partition, not one already loaded into it, not one it reads from a shared
    copy, ``from_copies``), each tensor's rotation buffer after it; returns those freed
    after it and its outputs (canonical name, buffer)."""
    active, idle = chosen
    memory = active.score.memory
    skip = {f"t{op.spec.tensor_index(name)}" for name in loaded} | set(from_copies)
    weights = {f"t{op.spec.tensor_index(name)}" for name in op.weights} if idle is not None else set()
    outputs = {f"t{op.spec.tensor_index(name)}" for name in op.outputs}
    freed = []
    for canonical in sorted(weights, key=lambda t: int(t[1:])):
        key = _key(op, active, canonical)
        if not (in_place and held_in_place(idle, active, _key(op, idle, canonical))):
            freed.append(buffers.alloc(memory.partitions.get(key, 0), ("exec", i, canonical)))
    kept = []
    for position in range(len(op.spec.tensors)):
        canonical = f"t{position}"
        key = _key(op, active, canonical)
        if canonical in outputs:
            kept.append((canonical, buffers.alloc(memory.partitions[key], ("output", i, canonical))))
        elif canonical not in weights and canonical not in skip:
            freed.append(buffers.alloc(memory.partitions.get(key, 0), ("exec", i, canonical)))
        freed.append(buffers.alloc(memory.rotation_buffers.get(key, 0), ("recv", i, canonical)))
    return [f for f in freed if f is not None], [(c, interval) for c, interval in kept if interval is not None]


def resident_buffers(model: ModelSpec, chosen: Sequence[tuple[Plan, IdlePlan | None]],
                     frontiers: Sequence[int] | None, own_inputs: Sequence[Sequence[str]]
                     ) -> tuple[list[Interval], list[int]]:
    """The buffers of the program a plan within SRAM makes (``chosen_buffers``): on a chip
    with off-chip memory its loads in program order, each issued as far ahead as its
    ``frontiers`` (`irc.planner.resident_loads`) let `preload-schedule` issue it; without
    (``frontiers`` None), every weight loaded into its idle layout at the start and each
    input an op holds the copy of loaded right before that op
    (`irc.lowering.shift_to_device.lower_block`). ``own_inputs``: ``loaded_inputs``'."""
    n = len(model.ops)
    loads = input_loads(model, own_inputs, every=frontiers is not None)
    if frontiers is not None:
        return chosen_buffers(model, chosen, range(n), load_anchors(range(n), frontiers), input_loads=loads,
                              resting=True)
    return chosen_buffers(model, chosen, range(n), [0] * n, input_anchor=range(n), resting=True, input_loads=loads)


def loaded_inputs(model: ModelSpec, own_inputs: Sequence[Sequence[str]]) -> list[tuple[str, ...]]:
    """Per op, the inputs from outside a plan within SRAM's program loads straight into its
    execute layout: ``own_inputs`` (`irc.planner.preload_ops.own_inputs`) and a fused
    gradient pair's inputs that are neither produced nor read from another op's copy (it
    loads its weight too: it has no idle plan)."""
    found = []
    for op, own in zip(model.ops, own_inputs):
        if op.pair is not None:
            own = tuple(t.name for t in op.spec.inputs
                        if t.name not in op.outputs and t.name not in op.producers and t.name not in op.shared_reads)
        found.append(tuple(own))
    return found


def input_loads(model: ModelSpec, own_inputs: Sequence[Sequence[str]], every: bool = True
                ) -> list[list[tuple[int, str]]]:
    """Per op, the inputs loaded before it, as (the op whose execute layout holds each, its
    name there): the copies of shared inputs its first reader loads, in its operand order
    (one whose holder runs later included: a fused pair reads a copy it never holds,
    `irc.lowering.shift_to_device._load_home`), then its ``own_inputs`` loaded into its
    own layout (``every`` False: only the copies; the others are among its execute buffers)."""
    homes = {(home, name): first for first, _, _, home, name in model.shared_spans()}
    found = []
    for i, op in enumerate(model.ops):
        copies = []
        for tensor in op.spec.inputs:
            home = op.shared_reads.get(tensor.name, (i, tensor.name))
            if homes.get(home) == i and (home[0] != i or tensor.name in own_inputs[i]) and home not in copies:
                copies.append(home)
        rest = [(i, name) for name in own_inputs[i] if (i, name) not in homes] if every else []
        found.append(copies + rest)
    return found


def resident_deficit(model: ModelSpec, chosen: Sequence[tuple[Plan, IdlePlan | None]],
                     frontiers: Sequence[int] | None, own_inputs: Sequence[Sequence[str]], capacity: int) -> int:
    """0 when the buffers of the program a plan within SRAM makes (``resident_buffers``)
    pack in ``capacity`` bytes per core by `device-alloc`'s placement, else how many bytes
    past the core's end its first fit places a buffer (or the live bytes exceed it by)."""
    intervals, _ = resident_buffers(model, chosen, frontiers, own_inputs)
    offsets, culprit = place(intervals, capacity)
    if culprit is None:
        return 0
    return max(1, max(offsets[i.op] + i.size for i in intervals) - capacity, peak_live_bytes(intervals) - capacity)


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
