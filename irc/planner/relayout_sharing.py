"""One relayout per tensor and layout: consumers of one tensor that want it in the same
layout share one copy (issue 24, item 1).

Q, K and V read one norm's output, an FFN's gate and up projections one tensor; where
their plans cut that tensor alike, moving it once serves them all. The first consumer in
program order (the *holder*) relayouts the tensor into its layout as before and keeps
that buffer past its own run; each later consumer wanting the same layout (a *sharer*)
reads the holder's buffer in place, with no relayout and no buffer of its own; the last
sharer frees it. The copy is then on chip from the holder to the last sharer: the ops in
between that are not sharers hold it beside their own buffers, and a copy is shared only
where those ops still fit (``fitting_copies``). The device program
(`irc.lowering.shift_to_device`) does what the plan states: the holder's and sharers'
inputs are named on their ops (``HELD_ATTR``, ``SHARED_ATTR``).

Two layouts are the same when every core holds the same box of the tensor
(``shared_layout_key``): neither plan rotates it, each of its dims is indexed by one axis,
the plans number the cores alike (row-major over the op axes they cut, ``F_op``) and
give each dim the same one of those axes (or none) and the same span.
Shared: edges from one tensor on chip (an op's output, or the copy of an input several
ops read) to different single-product consumers, without data movements between.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from irc.planner.model_spec import kept_bytes
from irc.planner.relayout import dim_extents
from irc.plans.plan import Plan
from irc.plans.spec import OpSpec

HELD_ATTR = "irc.relayout_held"
"""On an op: its inputs whose relayouted copy it keeps for later consumers (an array of
input names)."""
SHARED_ATTR = "irc.relayout_shared"
"""On an op: its inputs it reads from an earlier consumer's copy instead of relayouting
them (an array of input names)."""


def shared_layout_key(spec: OpSpec, plan: Plan, tensor: str) -> tuple | None:
    """What decides which box of ``tensor`` each core holds under ``plan`` (module
    docstring), or None where that layout is not shared (the tensor rotates, a dim is not
    one axis, a dim is held whole)."""
    if any(f > 1 for f in plan.temporal_factors[tensor]):
        return None
    found = spec.tensor(tensor)
    if found.whole:
        return None
    score = plan._scored()
    axes = spec.axis_names
    factors = [int(f) for f in plan.op_factors]
    cut = [d for d, f in enumerate(factors) if f > 1]   # the cores' grid, row-major (uncut axes add nothing)
    dims = []
    for dim in found.dims:
        if len(dim) != 1:
            return None
        d = axes.index(dim[0])
        dims.append((cut.index(d) if d in cut else None, int(score.steps_per_axis[d] * score.step_tiles[d])))
    return (tuple(factors[d] for d in cut), tuple(dims), dim_extents(spec, tensor), spec.bytes_of(tensor))


@dataclass(frozen=True)
class SharedCopy:
    """One copy several consumers read: the edge (index into the problem's ``edges``)
    whose relayout makes it, the edges reading it instead, the ops holding it (its
    holder's consumer to its last sharer's) and its bytes per core."""

    holder: int
    sharers: tuple[int, ...]
    first: int
    last: int
    nbytes: int
    readers: frozenset[int]


def shareable_copies(problem, exec_plan: Sequence[int]) -> list[SharedCopy]:
    """Every copy that could be shared under the execute-state plans ``exec_plan`` (one
    index per op into ``problem``'s tables), memory aside: per tensor on chip and layout
    key, the first consumer's edge and the later consumers' (a consumer reading the
    tensor through two of its inputs shares neither). Only copies that move bytes."""
    tables = problem.tables
    found = []
    for edges in sharing_groups(problem):
        keyed: dict[tuple, list[int]] = {}
        for k in edges:
            edge = problem.edges[k]
            table = tables[edge.consumer]
            key = shared_layout_key(table.spec, table.active[exec_plan[edge.consumer]], edge.tensor)
            if key is not None:
                keyed.setdefault(key, []).append(k)
        for ks in keyed.values():
            if len(ks) < 2:
                continue
            holder = problem.edges[ks[0]]
            nbytes, _ = problem.relayout(holder, exec_plan[holder.consumer], exec_plan[holder.producer])
            if nbytes == 0:
                continue   # the holder copies locally: so does every sharer, nothing to keep
            table = tables[holder.consumer]
            size = kept_bytes(table.spec, table.active[exec_plan[holder.consumer]], holder.tensor)
            readers = frozenset(problem.edges[k].consumer for k in ks)
            found.append(SharedCopy(ks[0], tuple(ks[1:]), holder.consumer, max(readers), size, readers))
    return sorted(found, key=lambda c: (c.first, c.holder))


def fitting_copies(copies: Sequence[SharedCopy], used: Sequence[float], capacity: float) -> list[SharedCopy]:
    """The ``copies`` kept where they fit, in order: a copy is on chip beside the own
    buffers of every op between its holder and its last sharer that does not read it,
    whose bytes per core (``used``, each op's as its plan counts them) plus the copies
    kept so far must stay within ``capacity``."""
    extra = [0.0] * len(used)
    kept = []
    for copy in copies:
        between = [i for i in range(copy.first + 1, copy.last) if i not in copy.readers]
        if all(used[i] + extra[i] + copy.nbytes <= capacity for i in between):
            for i in between:
                extra[i] += copy.nbytes
            kept.append(copy)
    return kept


def copy_bytes(copies, n: int) -> list[float]:
    """Per op of ``n``, the bytes per core of the shared relayout copies it holds beside
    its own buffers (`irc.planner.relayout_sharing`: between a copy's holder and its last
    sharer, not reading it)."""
    found = [0.0] * n
    for copy in copies:
        for i in range(copy.first + 1, copy.last):
            if i not in copy.readers:
                found[i] += copy.nbytes
    return found


def edge_cycles(problem, exec_plan: Sequence[int], copies: Sequence[SharedCopy]) -> list[float]:
    """Per edge of ``problem``, the cycles its relayout takes under ``exec_plan`` with the
    ``copies`` shared (a sharer's edge: none)."""
    shared = {k for copy in copies for k in copy.sharers}
    return [0.0 if k in shared else float(problem.relayout(edge, exec_plan[edge.consumer],
                                                             exec_plan[edge.producer])[1])
            for k, edge in enumerate(problem.edges)]


def held_and_shared(problem, copies: Sequence[SharedCopy]) -> tuple[dict[int, list[str]], dict[int, list[str]]]:
    """Per op, its inputs (by their names in the op's spec) whose copy it holds, and those
    it reads from an earlier consumer's copy (``HELD_ATTR``, ``SHARED_ATTR``)."""
    held: dict[int, list[str]] = {}
    shared: dict[int, list[str]] = {}
    names = lambda k: problem.model.ops[problem.edges[k].consumer].spec.tensors[  # noqa: E731
        int(problem.edges[k].tensor[1:])].name
    for copy in copies:
        held.setdefault(problem.edges[copy.holder].consumer, []).append(names(copy.holder))
        for k in copy.sharers:
            shared.setdefault(problem.edges[k].consumer, []).append(names(k))
    return held, shared


def sharing_groups(problem) -> list[list[int]]:
    """The edges (indices into ``problem.edges``) that may share copies, per tensor on
    chip, in their consumers' program order (``shareable_copies``' rule, plans aside)."""
    groups: dict[tuple[int, str], list[int]] = {}
    for k, edge in enumerate(problem.edges):
        if edge.moved or edge.view is not None or edge.producer == edge.consumer:
            continue
        if problem.model.ops[edge.consumer].pair is not None:
            continue
        groups.setdefault((edge.producer, edge.source), []).append(k)
    found = []
    for edges in groups.values():
        consumers = [problem.edges[k].consumer for k in edges]
        alone = sorted((k for k in edges if consumers.count(problem.edges[k].consumer) == 1),
                       key=lambda k: problem.edges[k].consumer)
        if len(alone) > 1:
            found.append(alone)
    return found


class SharedPricing:
    """The cycles of a set of edges under per-op execute states with copies shared
    (memory aside, as ``shareable_copies``): for a search that moves ops between states
    (`irc.planner.elk.Relayouts.refine`). Memoised per edge and state pair."""

    def __init__(self, problem) -> None:
        self.problem = problem
        self.groups = sharing_groups(problem)
        self.group_of = {k: g for g, edges in enumerate(self.groups) for k in edges}
        self._cycles: dict[tuple[int, int, int], float] = {}
        self._keys: dict[tuple[int, int], tuple | None] = {}

    def edge(self, k: int, states: Sequence[int]) -> float:
        edge = self.problem.edges[k]
        key = (k, states[edge.consumer], states[edge.producer])
        found = self._cycles.get(key)
        if found is None:
            found = self._cycles[key] = float(self.problem.relayout(edge, key[1], key[2])[1])
        return found

    def key(self, k: int, state: int) -> tuple | None:
        found = self._keys.get((k, state), ())
        if found == ():
            edge = self.problem.edges[k]
            table = self.problem.tables[edge.consumer]
            found = self._keys[(k, state)] = shared_layout_key(table.spec, table.active[state], edge.tensor)
        return found

    def cycles(self, edges: Sequence[int], states: Sequence[int]) -> float:
        """Cycles of ``edges`` and of every edge sharing a group with one of them, under
        ``states``: an edge whose consumer wants the layout an earlier consumer of its
        group already made costs none (the group's first consumer with it pays)."""
        total = 0.0
        touched = []
        for k in edges:
            g = self.group_of.get(k)
            if g is None:
                total += self.edge(k, states)
            elif g not in touched:
                touched.append(g)
        for g in touched:
            made: set = set()
            for k in self.groups[g]:
                key = self.key(k, states[self.problem.edges[k].consumer])
                if key is None or key not in made:
                    total += self.edge(k, states)
                    made.add(key)
        return total
