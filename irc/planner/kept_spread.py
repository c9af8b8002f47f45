"""The tensors kept on chip across each op, spread by their holders' plans (issue 23, item 5).

ELK counts the tensors kept on chip across an op (the activations a training step keeps
for its backward pass, the one copy of an input or a weight several ops read) in that
op's execution space, each at the most its holder's plans may place on a core
(`irc.planner.preload_ops`): a holder free to take a plan that replicates its output,
or keeps a weight's copy in a larger idle layout, takes that room from every op the
tensor is kept across. Where that leaves an op no room, ``spread_holders`` restricts the
holders of the tensors kept across it, largest saving first, to the (preload, execute)
states that keep those tensors at their least bytes per core (spread over the chip),
among the states in which the holder itself still fits, until the op fits. The count
stays the most of the states each holder may still take (what an op holds itself, per
state), so what ELK plans is what the program holds (the packing check,
`irc.planner.preload_packing`, then places it), and the holders no op is short of room
for keep their fastest plans. An op that has no room with the holders spread as far as
they fit is a ``SpreadFitError`` naming its bytes, as is a plan whose program does not
pack. (A decode loop is not spread: its ops are one token's and the next's first layer.)
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from irc.planner.model import ModelSpec, _ModelProblem
from irc.planner.op_table import FrontierCache, OpTable
from irc.planner.preload import PreloadFitError, PreloadOp
from irc.planner.preload_packing import packing_deficit
from irc.planner.preload_plan import PreloadPlan
from irc.plans.errors import PlanError

Masks = list  # per op, None (every state) or a [R, J] bool array of the states it may take


class SpreadFitError(PreloadFitError):
    """An op with no room although the holders of the tensors kept on chip across it are
    spread (``spread_holders``), or whose program so planned does not pack in a core:
    names the op, the bytes ``needed`` per core of ``available``, and why (``reason``)."""

    def __init__(self, op: str, needed: float, available: float, reason: str) -> None:
        PlanError.__init__(self, f"op '{op}' cannot run even with preloading: {reason}")
        self.op, self.needed, self.available = op, needed, available


def states_of(table: OpTable, mask: np.ndarray | None) -> np.ndarray:
    """[R, J]: the (preload, execute) states an op of ``table`` may take under ``mask``."""
    pairs = np.isfinite(table.table)
    return pairs if mask is None else pairs & mask


def held_states(problem: _ModelProblem, holder: int, tensor: str) -> np.ndarray:
    """[R, J]: bytes per core of ``holder``'s tensor ``tensor`` (canonical) kept on chip
    in each of its states (its execute plan's partition)."""
    table = problem.tables[holder]
    row = [problem.held_bytes(holder, j, tensor) for j in range(len(table.active))]
    return np.broadcast_to(np.asarray(row, dtype=np.float64), table.table.shape)


def idle_states(table: OpTable, tensor: str) -> np.ndarray:
    """[R, J]: bytes per core of the weight ``tensor`` (canonical) in each state's idle
    plan: the preload-state copy kept from its first reader to its last."""
    sizes = np.array([idle.weight_bytes.get(tensor, 0) for idle in table.idle], dtype=np.float64)
    return sizes[table.idle_index]


def kept_terms(model: ModelSpec, problem: _ModelProblem) -> list[list[tuple[int, np.ndarray, float]]]:
    """Per op, the tensors kept on chip across it as (holder, [R, J] bytes per core in each
    of the holder's states, the most any of its plans places): the activations and
    shared inputs (``_ModelProblem.live``) and the preload-state copy of each weight
    several ops read, from its first reader to its last (its holder's own op apart:
    there it is the op's preload state; the most: its largest idle slice)."""
    terms = [[(h, held_states(problem, h, t), problem.held_bytes(h, -1, t)) for h, t in across]
             for across in problem.live]
    for first, last, _, home, name in model.shared_spans(weights=True):
        table, canonical = problem.tables[home], f"t{model.ops[home].spec.tensor_index(name)}"
        most = max(idle.weight_bytes[canonical] for idle in table.idle)
        for i in range(first, last + 1):
            if i != home:
                terms[i].append((home, idle_states(table, canonical), most))
    return terms


def kept_across(model: ModelSpec, problem: _ModelProblem, masks: Masks | None = None,
                terms: list | None = None) -> list:
    """Per op, bytes per core of the tensors kept on chip across it (``kept_terms``).
    Without ``masks``, a number: each at the most any of its holder's plans places (an
    activation) or any of its idle plans holds (a weight's copy). With them, a [J] array
    (per execute state of the op): each tensor another op holds at the most of the
    states that op may take, each the op holds itself at what that state places."""
    terms = kept_terms(model, problem) if terms is None else terms
    if masks is None:
        return [int(sum(most for _, _, most in across)) for across in terms]
    return [_kept_of(i, across, problem, masks) for i, across in enumerate(terms)]


def _kept_of(i: int, across: Sequence[tuple[int, np.ndarray, float]], problem: _ModelProblem,
             masks: Masks) -> np.ndarray:
    """``kept_across`` of op ``i`` under ``masks``: [J]."""
    found = np.zeros(len(problem.tables[i].active))
    for holder, sizes, most in across:
        if holder == i:
            found += sizes[0]
        else:
            found += most if masks[holder] is None else sizes[states_of(problem.tables[holder], masks[holder])].max()
    return found


class _Spread:
    """``spread_holders``' state: the ops as first priced (the kept tensors at the most),
    the masks so far and each op's kept bytes under them."""

    def __init__(self, model: ModelSpec, problem: _ModelProblem, ops: Sequence[PreloadOp], room: float) -> None:
        self.problem, self.ops, self.room = problem, list(ops), room
        self.terms = kept_terms(model, problem)
        was = kept_across(model, problem, None, self.terms)
        self.own = [op.exec_bytes[None, :] - w + op.own_bytes for op, w in zip(ops, was)]   # [R, J] its own bytes
        self.masks: Masks = [None] * len(ops)
        self.kept = kept_across(model, problem, self.masks, self.terms)

    def space(self, k: int, kept: np.ndarray | None = None) -> np.ndarray:
        """[R, J]: op ``k``'s execution space in each state it may take (else inf), with
        ``kept`` bytes kept across it (default: under the masks so far)."""
        kept = self.kept[k] if kept is None else kept
        states = states_of(self.problem.tables[k], self.masks[k])
        return np.where(states & np.isfinite(self.ops[k].distribute), self.own[k] + kept[None, :], np.inf)

    def best(self, i: int) -> tuple[int, np.ndarray] | None:
        """The holder of tensors kept across op ``i`` (not op ``i``: what it holds counts
        per state already) whose restriction to its states keeping them least, among
        those it fits in, saves op ``i`` the most bytes, and that mask."""
        across, best = self.terms[i], None
        least_now = self.space(i).min()
        for holder in dict.fromkeys(h for h, _, _ in across if h != i):
            fits = self.space(holder) <= self.room
            if not fits.any():
                continue
            total = sum(sizes for h, sizes, _ in across if h == holder)
            spread = fits & (total <= total[fits].min())
            masks = list(self.masks)
            masks[holder] = spread
            saving = least_now - self.space(i, _kept_of(i, across, self.problem, masks)).min()
            if saving > 0 and (best is None or saving > best[0]):
                best = (saving, holder, spread)
        return None if best is None else (best[1], best[2])


def spread_holders(model: ModelSpec, problem: _ModelProblem, ops: Sequence[PreloadOp], room: float) -> Masks:
    """Per op, None or the [R, J] states it may take (module docstring): each op of
    ``ops`` (priced with the tensors kept across each at the most: ``kept_across``
    without masks) that has no state within ``room`` bytes per core has the holders of
    the tensors kept across it restricted, the largest saving first, to the states
    keeping them least among those the holder itself fits in, until it fits or none
    saves more."""
    spread = _Spread(model, problem, ops, room)
    for i in range(len(ops)):
        while spread.space(i).min() > room:
            best = spread.best(i)
            if best is None:
                break
            spread.masks[best[0]] = best[1]
            spread.kept = kept_across(model, problem, spread.masks, spread.terms)
    return spread.masks


def spread_search(search: Callable, model: ModelSpec, problem: _ModelProblem, room: float,
                  weaker: dict[str, str] | None = None, found: tuple | None = None) -> tuple:
    """(the search, its ops, the masks): ``search(problem, weaker, masks)`` with
    ``problem``'s holders spread where an op has no room within ``room`` bytes
    (``spread_holders``, from ``found``: ``search(problem, weaker)``'s result if made)."""
    _, ops = search(problem, weaker) if found is None else found
    masks = spread_holders(model, problem, ops, room)
    return (*search(problem, weaker, masks), masks)


def spread_fallback(search: Callable, decide: Callable, model: ModelSpec, plain: _ModelProblem,
                    room: float, loop: bool) -> tuple:
    """(the search, its ops, ``decide``'s decisions of it, whether the holders were
    spread): ``search(plain)``, else, where an op has no room and not ``loop`` (a decode
    loop's ops are its token's twice over), the search with the holders spread
    (``spread_search``); a ``SpreadFitError`` where an op still has none."""
    found = search(plain)
    try:
        return found[0], found[1], decide(found[0]), False
    except PreloadFitError:
        if loop:
            raise
    first, ops, masks = spread_search(search, model, plain, room, found=found)
    try:
        return first, ops, decide(first), True
    except PreloadFitError as error:
        spaces = [np.where(np.isfinite(op.distribute), op.exec_bytes[None, :] + op.own_bytes, np.inf) for op in ops]
        at = max(range(len(ops)), key=lambda k: spaces[k].min())   # the op short of the most room
        if spaces[at].min() <= room:
            raise
        needed = spaces[at].min()
        kept = kept_across(model, plain, masks)[at][np.unravel_index(spaces[at].argmin(), spaces[at].shape)[1]]
        raise SpreadFitError(ops[at].name, needed, room, (
            f"its smallest plan needs {int(needed)} bytes per core, {int(kept)} of them the tensors kept on chip "
            f"across it with their holders' plans spread over the chip as far as they fit, the core has "
            f"{int(room)}")) from None


def check_packs(model: ModelSpec, cache: FrontierCache, plan: PreloadPlan,
                input_loads: Sequence[Sequence[str]] | None, problem: _ModelProblem) -> None:
    """A ``PreloadFitError`` where ``plan``'s program does not pack in a core (ELK planned
    it with holders spread, and ``packed_decision`` found no plan that packs), rather
    than `preload-schedule` narrowing its frontiers or failing."""
    sram = int(cache.device.sram_bytes)
    deficit, at = packing_deficit(model, cache, plan, sram, input_loads, problem)
    if deficit:
        raise SpreadFitError(model.ops[at].name, sram + deficit, sram, (
            f"the tensors kept on chip across the ops fit only spread over the chip by their holders' "
            f"plans, and the program of the plans chosen so does not pack in a core: its buffers "
            f"allocated at this op end {deficit} bytes past the core's {sram}"))


__all__ = ["SpreadFitError", "check_packs", "kept_across", "kept_terms", "spread_fallback", "spread_holders",
           "spread_search", "states_of"]
