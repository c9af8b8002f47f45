"""ELK's preload scheduling as pure functions (seeds/004 s2.2, s4.2-s4.4; IPU_COST_FACTS s6).

A chip with off-chip memory runs a model operator by operator: each op's data is
*preloaded* from HBM into a *preload-state* layout while earlier ops execute, then
*distributed* over the exchange into its *execute-state* layout and executed (s2.2, s4.5).
Everything here works on numbers only (no IR, no device file): a ``PreloadOp`` is one op's
execute-state plans (execution space per core, cycles), its preload-state plans (preload
space per core) and the distribution cycles between each pair, plus its HBM bytes.

- ``inductive_schedule`` (s4.2, Theorem 4.2): from the last op backwards, pick for each op
  the number of ops preloaded before or during its execution (its *preload frontier*)
  that lets it start latest; each op's load ends when it executes or when the next load
  in preload order starts, whichever is first (HBM loads are serial). O(KN) calls of the
  allocation for N ops of which at most K fit on chip; optimal for any allocation that
  depends only on (op, resident set) (``exhaustive_schedule`` is the reference). A preload
  order other than the execution order is supported (s4.4).
- ``cost_aware_split`` (s4.3): start every involved op at its fastest plan, then shrink
  the op whose next smaller plan saves the most space per extra cycle until all fit.
- ``CostAwareAllocation`` (s4.3, the paper: default) shrinks the executing op's
  execute-state plan and the preloaded ops' preload-state plans together;
  ``ExecOnlyAllocation`` (the artifact, IPU_COST_FACTS s6) only optimises the executing
  op against the space the preloaded ops already hold.
- ELK-Full's preload orders (s4.4), the baselines of s6.1, the bounds and the widest
  frontiers of fixed plans are in ``irc.planner.preload_designs``.

Times are cycles; memory is bytes per core.
"""

from __future__ import annotations

import dataclasses
import bisect
import heapq
import itertools
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from irc.devices.topology import operator_contention, paced_preload, preload_yield, preloaded_contention
from irc.plans.errors import PlanError


class PreloadFitError(PlanError):
    """An op that fits in SRAM under no plan even with nothing preloaded; names the op and bytes."""

    def __init__(self, op: str, needed: float, available: float) -> None:
        super().__init__(
            f"op '{op}' cannot run even with preloading: its smallest plan needs {int(needed)} bytes per core "
            f"(its execute state and the tensors kept on chip across it, each at the most its holder's "
            f"plans place), the chip has {int(available)}"
        )
        self.op, self.needed, self.available = op, needed, available


class OrderError(PlanError):
    """A preload order that forces more ops on chip at once than fit."""


@dataclass(eq=False)
class PreloadOp:
    """One operator as the preload scheduler sees it (s4.3, Figure 11).

    ``exec_bytes[j]``/``exec_cycles[j]``: execute-state plan j (execution space per core,
    local execution cycles: compute and the op's own shifts; ``exchange_cycles[j]`` of them
    keep the exchange busy). ``preload_bytes[r]``: preload-state plan r (preload space per
    core). ``distribute[r, j]``: cycles of the data distribution phase turning preload state
    r into execute state j (inf where r cannot feed j). ``load_cycles[r]``: the preload's
    duration (the HBM roofline or the exchange's delivery, whichever is longer, s4.2).
    ``transfer_cycles[j]``: the cycles execute state j's own exchange transfers (its
    shifts) take, which preloads compete with for the exchange's links (the distribution
    phase is all transfer too); ``load_pressure[r]``: the share of the busiest link a
    preload of state r takes while it runs (``irc.devices.topology.preload_pressure``; 0:
    no contention). ``signature`` equal for identical ops of identical layers; ``layer``
    (or None) groups ops for reordering (s4.4)."""

    name: str
    hbm_bytes: float
    exec_bytes: np.ndarray
    exec_cycles: np.ndarray
    preload_bytes: np.ndarray
    distribute: np.ndarray
    load_cycles: np.ndarray
    exchange_cycles: np.ndarray | None = None
    signature: object = None
    layer: int | None = None
    transfer_cycles: np.ndarray | None = None
    load_pressure: np.ndarray | None = None
    own_bytes: np.ndarray | None = None
    """[R, J]: the bytes per core preload state r still holds while execute state j runs
    (the preload-state buffers the device program keeps through the op, less those its
    execute state uses in place: ``irc.planner.idle.in_place_bytes``); zeros by default.
    Part of the op's execution space (``exec_space``)."""
    input_loads: np.ndarray | None = None   # [J]: its other inputs' loads into state j's layout
    """Cycles (and ``input_pressure`` the link share) of the preloads of the inputs that are
    not weights, each into execute state j's layout (``load_time``); zeros by default."""
    input_pressure: np.ndarray | None = None
    pair_loads: np.ndarray | None = None
    """[R, J] (optional): the load of preload state r when it feeds execute state j, where
    that differs by j (a table row's idle plan is the fastest of its size for each j, and
    their padded slices read other bytes); ``pair_pressure`` its link share.
    ``load_cycles[r]`` is then the least of row r (``load_time`` uses the pair's)."""
    pair_pressure: np.ndarray | None = None
    reserve: float = 0.0
    """Bytes per core kept free while it executes, for its buffers to pack
    (`irc.planner.elk.packed_decision`)."""
    input_parts: tuple | None = None
    """The loads ``input_loads`` sums, one ([J] cycles, [J] link share) per input the device
    program preloads on its own (None: ``input_loads`` is one load); ``paced`` paces each."""
    link_share: float = 1.0
    """The share of its busiest link each of its preloads may take (``paced``)."""
    part_shares: tuple | None = None
    """Where its loads are paced each to its own share (``paced_like``): (its weights',
    each input's); None: all to ``link_share``."""
    _memo: dict = field(default_factory=dict, init=False, repr=False)   # the allocations ask the same again

    def __post_init__(self) -> None:
        self.exec_bytes = np.asarray(self.exec_bytes, dtype=np.float64)
        self.exec_cycles = np.asarray(self.exec_cycles, dtype=np.float64)
        self.preload_bytes = np.asarray(self.preload_bytes, dtype=np.float64)
        self.distribute = np.asarray(self.distribute, dtype=np.float64).reshape(len(self.preload_bytes), len(self.exec_bytes))
        self.load_cycles = np.asarray(self.load_cycles, dtype=np.float64)
        if self.exchange_cycles is None:
            self.exchange_cycles = np.zeros_like(self.exec_cycles)
        self.transfer_cycles = (np.zeros_like(self.exec_cycles) if self.transfer_cycles is None
                                else np.asarray(self.transfer_cycles, dtype=np.float64))
        self.load_pressure = (np.zeros_like(self.load_cycles) if self.load_pressure is None
                              else np.broadcast_to(np.asarray(self.load_pressure, dtype=np.float64),
                                                   self.load_cycles.shape).copy())
        if self.signature is None:
            self.signature = self.name
        self.own_bytes = (np.zeros_like(self.distribute) if self.own_bytes is None
                          else np.asarray(self.own_bytes, dtype=np.float64).reshape(self.distribute.shape))
        shape = self.exec_cycles.shape
        self.input_loads = np.zeros(shape) if self.input_loads is None else np.reshape(self.input_loads, shape)
        self.input_pressure = np.zeros(shape) if self.input_pressure is None else np.reshape(self.input_pressure, shape)

    def paced(self, share: float) -> "PreloadOp":
        """The op with every preload paced to at most ``share`` of its busiest link
        (``irc.devices.topology.paced_preload``, ELK's artifact's NoC load threshold θ):
        its weights' load in each preload state and each input load, as the chip times
        the ``device.preload_async``s that carry ``link_share``."""
        if self.link_share < 1.0 or self.part_shares is not None:
            raise ValueError(f"op '{self.name}' is paced already (link share {self.link_share})")
        if share >= 1.0:
            return self
        return self._paced_parts(share, [share] * len(self._parts()))

    def paced_like(self, seed: "PreloadOp", r: int, j: int) -> "PreloadOp":
        """The op with each of its loads (its weights', each input's) paced to the link
        share that load took in ``seed`` (the same op planned on a slower HBM, maybe
        paced) for preload state r and execute state j, where it would now take more:
        each part's link time does not depend on the HBM, so each lasts as long as it did
        then, and the pair's load takes the cycles and link share it took
        (``load_time``, ``load_share``). Pacing every part at their average share
        instead would stretch the parts above it and leave those below it shorter."""
        (seed_weights, seed_inputs), (weights, inputs) = seed.shares_of_parts(r, j), self.shares_of_parts(r, j)
        if len(seed_inputs) != len(inputs):
            raise ValueError(f"op '{self.name}' loads {len(inputs)} inputs apart, its seed {len(seed_inputs)}")
        if not any(0.0 < then < now for then, now in zip((seed_weights, *seed_inputs), (weights, *inputs))):
            return self
        taken = [then for then in (seed_weights, *seed_inputs) if then > 0]   # a part with no link time: unpaced
        return self._paced_parts(seed_weights if seed_weights > 0 else 1.0,
                                 [then if then > 0 else 1.0 for then in seed_inputs], max(taken, default=1.0))

    def shares_of_parts(self, r: int, j: int) -> tuple[float, tuple[float, ...]]:
        """The link shares of the load of preload state r for execute state j: its
        weights' and each input's (``input_parts``)."""
        weights = self.load_pressure[r] if self.pair_pressure is None else self.pair_pressure[r, j]
        return float(weights), tuple(float(shares[j]) for _, shares in self._parts())

    def _parts(self) -> tuple:
        """The ([J] cycles, [J] link share) of each input load (``input_parts``)."""
        if self.input_parts is not None:
            return self.input_parts
        return ((self.input_loads, self.input_pressure),) if self.input_loads.any() else ()

    def _paced_parts(self, weights: float, inputs: Sequence[float], per_part: float | None = None) -> "PreloadOp":
        """The op with its weights' loads paced to ``weights`` and its input loads each
        to its share of ``inputs`` (``paced``; ``per_part``: ``paced_like``'s, its
        ``link_share``)."""
        loads, pressure = zip(*(paced_preload(c, p, weights) for c, p in zip(self.load_cycles, self.load_pressure))) \
            if len(self.load_cycles) else ((), ())
        paced_parts = []
        for (cycles, shares), share in zip(self._parts(), inputs):
            both = [paced_preload(c, p, share) for c, p in zip(cycles, shares)]
            paced_parts.append((np.array([c for c, _ in both]), np.array([p for _, p in both])))
        pair_loads, pair_pressure = self.pair_loads, self.pair_pressure
        if pair_loads is not None:   # each (preload state, execute state) pair's own read, paced alike
            both = [paced_preload(c, p, weights) for c, p in zip(pair_loads.ravel(), pair_pressure.ravel())]
            pair_loads = np.array([c for c, _ in both]).reshape(self.pair_loads.shape)
            pair_pressure = np.array([p for _, p in both]).reshape(self.pair_pressure.shape)
        total = sum((c for c, _ in paced_parts), np.zeros_like(self.exec_cycles))
        link = sum((c * p for c, p in paced_parts), np.zeros_like(self.exec_cycles))
        share_of = np.divide(link, total, out=np.zeros_like(total), where=total > 0)
        return dataclasses.replace(self, load_cycles=np.array(loads, dtype=np.float64),
                                   load_pressure=np.array(pressure, dtype=np.float64), input_loads=total,
                                   input_pressure=share_of, input_parts=tuple(paced_parts),
                                   link_share=weights if per_part is None else per_part, pair_loads=pair_loads,
                                   pair_pressure=pair_pressure,
                                   part_shares=None if per_part is None else (weights, tuple(inputs)))

    def most_pressure(self) -> float:
        """The largest link share any of its loads takes (pacing below it changes nothing)."""
        parts = self._parts()
        pairs = [] if self.pair_pressure is None else [float(self.pair_pressure.max(initial=0.0))]
        return float(max([0.0, *self.load_pressure, *pairs] + [float(p[c > 0].max(initial=0.0)) for c, p in parts]))

    def load_time(self, r: int, j: int) -> float:
        """Cycles of the op's load in preload state r for execute state j: its weights'
        preload and its other inputs' (``input_loads``), back to back on the HBM."""
        own = self.load_cycles[r] if self.pair_loads is None else self.pair_loads[r, j]
        return float(own + self.input_loads[j])

    def load_share(self, r: int, j: int) -> float:
        """The link share of that load (``load_pressure``), averaged over its cycles."""
        total = self.load_time(r, j)
        own, share = ((self.load_cycles[r], self.load_pressure[r]) if self.pair_loads is None
                      else (self.pair_loads[r, j], self.pair_pressure[r, j]))
        both = share * own + self.input_pressure[j] * self.input_loads[j]
        return float(both / total) if total > 0 else float(share)

    def least_load(self) -> float:
        """The shortest load of any pair of states (``load_time``)."""
        return float(self.load_cycles.min() + self.input_loads.min()) if len(self.load_cycles) else 0.0

    def exec_space(self, r: int, j: int) -> float:
        """Bytes per core while execute state j runs from preload state r: its execution
        space and what its own preload state still holds (``own_bytes``)."""
        return float(self.exec_bytes[j] + self.own_bytes[r, j]) if r >= 0 else float(self.exec_bytes[j])

    def transfers(self, r: int, j: int) -> float:
        """Cycles of exchange transfers when execute state j runs from preload state r: its
        distribution phase and its own shifts."""
        return float(self.distribute[r, j] + self.transfer_cycles[j])

    def min_preload(self) -> float:
        return float(self.preload_bytes.min()) if len(self.preload_bytes) else 0.0

    def min_exec(self) -> float:
        """The least execution space of any pair of states (``exec_space``)."""
        space = np.where(np.isfinite(self.distribute), self.exec_bytes[None, :] + self.own_bytes, np.inf)
        least = float(space.min()) if space.size else np.inf
        return least if np.isfinite(least) else float(self.exec_bytes.min())

    def preload_cost(self, r: int, j: int, charge: float = 1.0) -> float:
        """What preload state r costs execute state j (s4.3, Figure 11 tradeoffs 2 and 3):
        its distribution phase, plus ``charge`` times the exchange time its extra
        broadcast adds to the load over the smallest state's (the contention a larger
        preload state causes; 0 where the load is hidden behind execution anyway)."""
        return float(self.distribute[r, j] + charge * (self.load_cycles[r] - self.load_cycles.min()))

    def fastest_preload(self, j: int, at_most: float = np.inf, charge: float = 1.0) -> int:
        """The preload state of least ``preload_cost`` (with ``charge``) for execute state j
        within ``at_most`` bytes (-1: none; ties: the smaller state)."""
        key = ("fastest", j, at_most, charge)
        if key not in self._memo:
            self._memo[key] = self._fastest_preload(j, at_most, charge)
        return self._memo[key]

    def _fastest_preload(self, j: int, at_most: float, charge: float) -> int:
        ok = np.isfinite(self.distribute[:, j]) & (self.preload_bytes <= at_most)
        if not ok.any():
            return -1
        times = np.where(ok, self.distribute[:, j] + charge * (self.load_cycles - self.load_cycles.min()), np.inf)
        best = times.min()
        candidates = np.flatnonzero(times == best)
        return int(candidates[np.argmin(self.preload_bytes[candidates])])

    @classmethod
    def simple(cls, name: str, exec_plans: Sequence[tuple[float, float]], preload_plans: Sequence[tuple[float, float]],
               load_cycles: Sequence[float] | float, hbm_bytes: float = 0.0, **extra) -> "PreloadOp":
        """An op whose distribution time depends on the preload state only:
        ``exec_plans`` = [(bytes, cycles)], ``preload_plans`` = [(bytes, distribute cycles)]."""
        eb, ec = zip(*exec_plans)
        pb, pd = zip(*preload_plans)
        loads = np.broadcast_to(np.asarray(load_cycles, dtype=np.float64), (len(pb),)).copy()
        return cls(name, hbm_bytes, np.array(eb), np.array(ec), np.array(pb),
                   np.repeat(np.array(pd)[:, None], len(eb), axis=1), loads, **extra)


# ----------------------------------------------------------------------------------------
# s4.3: the cost-aware split of SRAM among the executing op and the preloaded ones


def pareto_curve(points: Sequence[tuple[float, float]]) -> list[tuple[float, float, int]]:
    """The (bytes, cycles, index) points no other point beats on both, bytes descending
    (cycles ascending): the order in which the split shrinks an op."""
    order = sorted(range(len(points)), key=lambda k: (points[k][0], points[k][1], k))
    kept: list[tuple[float, float, int]] = []
    best = np.inf
    for k in order:
        size, time = points[k]
        if not np.isfinite(time):
            continue
        if time < best:
            kept.append((size, time, k))
            best = time
    return kept[::-1]


def cost_aware_split(curves: Sequence[Sequence[tuple[float, float, int]]], capacity: float) -> list[int] | None:
    """ELK s4.3's inter-operator trade-off: each curve is one involved op's Pareto plans
    (``pareto_curve``, bytes descending). Start from every op's fastest plan; while the
    total exceeds ``capacity``, move the op whose next plan has the largest
    saved bytes / extra cycles (no extra cycles: infinitely cost-effective) one step down
    its curve. Returns each op's position on its curve, or None if even the smallest
    plans do not fit."""
    if any(not curve for curve in curves):
        return None
    if sum(curve[-1][0] for curve in curves) > capacity:
        return None
    at = [0] * len(curves)
    total = sum(curve[0][0] for curve in curves)
    heap: list[tuple[float, int, int]] = []

    def push(k: int) -> None:
        curve = curves[k]
        if at[k] + 1 < len(curve):
            saved = curve[at[k]][0] - curve[at[k] + 1][0]
            extra = curve[at[k] + 1][1] - curve[at[k]][1]
            ratio = np.inf if extra <= 0 else saved / extra
            heapq.heappush(heap, (-ratio, k, at[k]))

    for k in range(len(curves)):
        push(k)
    while total > capacity:
        _, k, was = heapq.heappop(heap)
        if was != at[k]:
            continue
        total -= curves[k][at[k]][0] - curves[k][at[k] + 1][0]
        at[k] += 1
        push(k)
    return at


@dataclass
class Allocation:
    """What one allocation decides for an executing op and its resident set."""

    cycles: float                     # the executing op's execute time (distribution + execution)
    exec_plan: int
    preload_plan: int                 # the executing op's own preload state (may shrink later)
    shrunk: dict[int, int] = field(default_factory=dict)   # resident op -> its new preload state
    charged: float = 0.0              # extra distribution cycles of shrunk resident ops
    own: float = 0.0                  # bytes its own preload state holds while it executes (``own_bytes``)


class OutgoingLinks:
    """The relayouts between ops' execute states (T10 s4.3.2): ``consumers[i]`` the ops
    reading op i's outputs, ``cost(i, j, k, jk)`` the cycles of moving them from op i's
    state j into op k's state jk. The inductive scheduler (s4.2) picks op i's state after
    its readers' and before its producers': each of op i's states is charged what its
    producers must send it at the least (``least_in``: their states are open yet) and
    what it sends its readers beyond what they were charged, so an op prefers states its
    neighbours' layouts already match and the charges add up to the relayouts the plan
    runs. ``labels[i][t]`` says what the edge to op i's t-th reader is (equal labels,
    equal costs: identical layers share their allocations)."""

    def __init__(self, consumers: Sequence[Sequence[int]], cost: Callable[[int, int, int, int], float],
                 labels: Sequence[Sequence[object]], states: Sequence[int]) -> None:
        self.consumers = [tuple(c) for c in consumers]
        self.cost = cost
        self.labels = [tuple(label) for label in labels]
        self.states = list(states)
        self.producers: list[list[int]] = [[] for _ in consumers]
        for i, readers in enumerate(self.consumers):
            for k in readers:
                self.producers[k].append(i)
        self.in_labels = [tuple(self.labels[p][self.consumers[p].index(k)] for p in self.producers[k])
                          for k in range(len(self.consumers))]
        self._least: dict[tuple[int, int, int], float] = {}

    def least_in(self, p: int, k: int, jk: int) -> float:
        """The least cycles producer p sends op k in state jk, over p's states."""
        key = (p, k, jk)
        if key not in self._least:
            self._least[key] = min(self.cost(p, jp, k, jk) for jp in range(self.states[p]))
        return self._least[key]

    def cycles(self, i: int, j: int, chosen: dict[int, int]) -> float:
        """What op i in state j is charged: its producers' least, its readers' excess."""
        incoming = sum(self.least_in(p, i, j) for p in self.producers[i])
        outgoing = sum(self.cost(i, j, k, chosen[k]) - self.least_in(i, k, chosen[k])
                       for k in self.consumers[i] if k in chosen)
        return float(incoming + outgoing)

    def key(self, i: int, chosen: dict[int, int]) -> tuple:
        """What ``cycles`` of op i depends on besides its own state (for memo keys)."""
        return self.in_labels[i], tuple(zip(self.labels[i], (chosen.get(k) for k in self.consumers[i])))


class CostAwareAllocation:
    """ELK s4.3 (the paper, the default): the executing op's execute-state plan and the
    resident ops' preload-state plans are split by ``cost_aware_split``. A resident op's
    execute state is already fixed (it was scheduled earlier, s4.2); shrinking its preload
    state lengthens its distribution phase, which is charged to the executing op's time.
    The executing op's own preload state starts at its fastest and may be shrunk by the
    ops that execute before it."""

    def __init__(self, ops: Sequence[PreloadOp], capacity: float, smallest: bool = False,
                 charge: Sequence[float] | None = None, exec_cap: float = np.inf,
                 links: "OutgoingLinks | None" = None) -> None:
        self.ops = ops
        self.capacity = capacity
        self.smallest = smallest
        self.exec_cap = exec_cap
        self.links = links
        self.charge = [1.0] * len(ops) if charge is None else list(charge)
        self.exec_plan: dict[int, int] = {}
        self.preload_plan: dict[int, int] = {}
        self.own: dict[int, float] = {}   # per scheduled op, the own preload bytes its space counted
        self._outgoing: dict[tuple[int, int], float] = {}

    def own_preload(self, i: int, j: int) -> int:
        """The executing op's preload state: its fastest for execute state j (s4.3), or
        with ``smallest`` its smallest (the other end Static also tries, s6.1)."""
        op = self.ops[i]
        if not self.smallest:
            return op.fastest_preload(j, charge=self.charge[i])
        ok = np.flatnonzero(np.isfinite(op.distribute[:, j]))
        if not len(ok):
            return -1
        return int(ok[np.argmin(op.preload_bytes[ok])])

    def streaming(self, resident: Sequence[int], states: dict[int, int] | None = None) -> list[tuple[float, float]]:
        """The loads of the ``resident`` ops (in preload order) as the scheduler sees them
        stream while the executing op runs (s4.2, Figure 10): (cycles, pressure) of each
        one's preload state (``states`` overriding), the latest first."""
        states = {} if states is None else states
        found = []
        for k in reversed(resident):
            r, j = states.get(k, self.preload_plan[k]), self.exec_plan[k]
            memo = self.ops[k]._memo   # (asked again for every allocation it is resident in)
            load = memo.get(("load", r, j))
            if load is None:
                load = memo[("load", r, j)] = (self.ops[k].load_time(r, j), self.ops[k].load_share(r, j))
            found.append(load)
        return found

    def contention(self, i: int, j: int, r: int, streaming: list[tuple[float, float]],
                   memo: dict | None = None) -> float:
        """The interconnect contention op i's execute state j (from preload state r) meets
        beside ``streaming`` loads (s4.3: its transfers and theirs share the link;
        ``irc.devices.topology.preloaded_contention``); ``memo``: the answers for these
        loads, by (j, r)."""
        op = self.ops[i]
        if not streaming or op.transfers(r, j) <= 0:
            return 0.0
        found = None if memo is None else memo.get((j, r))
        if found is None:
            found = preloaded_contention(float(op.exec_cycles[j] + op.distribute[r, j]), op.transfers(r, j), streaming)
            if memo is not None:
                memo[(j, r)] = found
        return found

    def exec_curve(self, i: int, streaming: list[tuple[float, float]] = ()) -> list[tuple[float, float, int]]:
        op = self.ops[i]
        points = []
        cap = max(self.exec_cap, op.min_exec())
        # the same loads stream beside op i in many allocations (other resident sets, orders, ways)
        memo = op._memo.setdefault(("contention", tuple(streaming)), {})
        for j in range(len(op.exec_bytes)):
            if op.exec_bytes[j] > cap:   # a capped execution space (``plan_preloads``' caps)
                points.append((np.inf, np.inf))   # (kept in place: a point's index is its state j)
                continue
            r = self.own_preload(i, j)
            points.append((op.exec_space(r, j), np.inf if r < 0 else
                           op.exec_cycles[j] + op.distribute[r, j] + self.contention(i, j, r, streaming, memo)
                           + self.outgoing(i, j)))
        return pareto_curve(points)

    def outgoing(self, i: int, j: int) -> float:
        """Cycles of the relayouts op i's execute state j sends to the ops reading its
        outputs, at the states they were given (scheduled later ops, s4.2)."""
        if self.links is None:
            return 0.0
        # op i's readers are scheduled before it and keep their states: asked once per (i, j)
        found = self._outgoing.get((i, j))
        if found is None:
            found = self._outgoing[(i, j)] = self.links.cycles(i, j, self.exec_plan)
        return found

    def preload_curve(self, k: int) -> list[tuple[float, float, int]]:
        """Resident op k's preload states it may shrink to: smaller ones that hold no more
        while it executes than its execution space counted (``own``)."""
        op = self.ops[k]
        j, now = self.exec_plan[k], self.preload_plan[k]
        own = self.own.get(k, np.inf)
        key = ("curve", j, now, own, self.charge[k])
        if key not in op._memo:
            op._memo[key] = self._preload_curve(op, j, now, own, self.charge[k])
        return op._memo[key]

    @staticmethod
    def _preload_curve(op: PreloadOp, j: int, now: int, own: float, charge: float) -> list[tuple[float, float, int]]:
        points = [(op.preload_bytes[r], op.preload_cost(r, j, charge))
                  if op.preload_bytes[r] <= op.preload_bytes[now] and op.own_bytes[r, j] <= own
                  else (np.inf, np.inf) for r in range(len(op.preload_bytes))]
        return [p for p in pareto_curve(points) if np.isfinite(p[0])]

    def __call__(self, i: int, resident: Sequence[int]) -> Allocation | None:
        curves = [self.exec_curve(i, self.streaming(resident))] + [self.preload_curve(k) for k in resident]
        at = cost_aware_split(curves, self.capacity - self.ops[i].reserve)
        if at is None:
            return None
        j = curves[0][at[0]][2]
        op = self.ops[i]
        shrunk, charged = {}, 0.0
        for k, curve, a in zip(resident, curves[1:], at[1:]):
            r = curve[a][2]
            if r != self.preload_plan[k]:
                shrunk[k] = r
                kop = self.ops[k]
                charged += kop.distribute[r, self.exec_plan[k]] - kop.distribute[self.preload_plan[k], self.exec_plan[k]]
                # (its load only gets shorter: that gain is the later placement's)
        r = self.own_preload(i, j)
        # the contention beside the resident ops' final (possibly shrunk) preload states
        cycles = (op.exec_cycles[j] + op.distribute[r, j] + self.contention(i, j, r, self.streaming(resident, shrunk))
                  + self.outgoing(i, j))
        return Allocation(float(cycles + charged), j, r, shrunk, charged, float(op.own_bytes[r, j]))

    def commit(self, i: int, allocation: Allocation) -> None:
        self.exec_plan[i] = allocation.exec_plan
        self.preload_plan[i] = allocation.preload_plan
        self.preload_plan.update(allocation.shrunk)
        self.own[i] = allocation.own


class ExecOnlyAllocation(CostAwareAllocation):
    """The artifact's split (IPU_COST_FACTS s6): resident ops keep their preload states;
    the executing op takes the fastest (preload state, execute state) pair whose execute
    state fits beside them. (The artifact reserves a geometric mean of the resident ops'
    smallest and chosen preload sizes; a program must fit, so their real sizes are used.)"""

    def __call__(self, i: int, resident: Sequence[int]) -> Allocation | None:
        op = self.ops[i]
        held = sum(self.ops[k].preload_bytes[self.preload_plan[k]] for k in resident)
        budget = self.capacity - op.reserve - held
        usable = op.exec_bytes[None, :] + op.own_bytes <= budget   # [R, J]: the pair's execution space
        if not usable.any():
            return None
        extra = self.charge[i] * (op.load_cycles - op.load_cycles.min())[:, None]   # the artifact's contention penalty
        outgoing = np.array([self.outgoing(i, j) for j in range(len(op.exec_bytes))])
        total = np.where(usable, op.exec_cycles[None, :] + op.distribute + extra + outgoing[None, :], np.inf)
        streaming = self.streaming(resident)
        if streaming:
            for r, j in zip(*np.nonzero(np.isfinite(total))):
                total[r, j] += self.contention(i, int(j), int(r), streaming)
        r, j = np.unravel_index(np.argmin(total), total.shape)
        if not np.isfinite(total[r, j]):
            return None
        cycles = (op.exec_cycles[j] + op.distribute[r, j] + self.contention(i, int(j), int(r), streaming)
                  + outgoing[j])
        return Allocation(float(cycles), int(j), int(r), own=float(op.own_bytes[r, j]))


# ----------------------------------------------------------------------------------------
# s4.2: the inductive scheduler


@dataclass
class Schedule:
    """A schedule in cycles from the model's start: op i executes in
    [exec_start[i], exec_end[i]] and loads in [load_start[i], load_end[i]]; loads run in
    ``order``; ``frontier[i]`` is the preload-order position of the first load that waits
    for op i to finish (so the ops loaded before it and executed after op i are resident
    while op i runs: ``resident[i]``)."""

    order: list[int]
    frontier: list[int]
    resident: list[tuple[int, ...]]
    exec_start: np.ndarray
    exec_end: np.ndarray
    load_start: np.ndarray
    load_end: np.ndarray
    exec_plan: list[int] = field(default_factory=list)
    preload_plan: list[int] = field(default_factory=list)

    @property
    def latency(self) -> float:
        if len(self.exec_end) == 0:
            return 0.0
        return float(max(self.exec_end.max(), self.load_end.max()) - min(self.exec_start.min(), self.load_start.min()))

    def preload_numbers(self) -> list[int]:
        return [len(r) for r in self.resident]


def _order_bounds(order: Sequence[int]) -> tuple[list[int], list[int]]:
    n = len(order)
    if sorted(order) != list(range(n)):
        raise ValueError(f"a preload order must be a permutation of the ops 0..{n - 1}")
    pos = [0] * n
    for t, k in enumerate(order):
        pos[k] = t
    lower, running = [0] * n, 0
    for i in range(n):
        running = max(running, pos[i] + 1)
        lower[i] = running
    return pos, lower


def inductive_schedule(
    n: int,
    allocate: Callable[[int, tuple[int, ...]], Allocation | float | None],
    load_cycles: Callable[[int], float],
    order: Sequence[int] | None = None,
    commit: Callable[[int, Allocation], None] | None = None,
) -> Schedule:
    """ELK's two-level inductive scheduling (s4.2, Lemma 4.1 and Theorem 4.2), from the
    last op backwards with the model ending at time 0.

    For op i every preload frontier q (the preload-order position of the first load that
    waits for op i) from the least possible one upwards is tried; the ops loaded before
    position q that execute after op i are resident while it runs, and ``allocate(i,
    resident)`` gives op i's execute time (or None: they do not fit, and neither will a
    larger set). Op i ends at min(start of op i+1, start of the load at q) and starts
    its execute time earlier; the q with the latest start wins. Then every load whose
    op is scheduled is placed, latest first: it ends at min(its op's start, the next
    load's start). ``load_cycles(k)`` is read when op k's load is placed, after every op
    that may change it (``commit``) has been scheduled."""
    order = list(range(n)) if order is None else list(order)
    pos, lower = _order_bounds(order)
    exec_start = np.zeros(n)
    exec_end = np.zeros(n)
    load_start = np.zeros(n)
    load_end = np.zeros(n)
    frontier = [n] * n
    resident: list[tuple[int, ...]] = [()] * n
    exec_plan = [0] * n
    placed = n  # loads at positions >= placed are placed
    later: list[int] = []   # the preload-order positions of the ops after op i, ascending
    for i in range(n - 1, -1, -1):
        after = exec_start[i + 1] if i + 1 < n else 0.0
        best = None
        # the ops loaded before op i's least frontier that execute after it, in preload order
        held: list[int] = [order[t] for t in later[:bisect.bisect_left(later, lower[i])]]
        bisect.insort(later, pos[i])
        q = lower[i]
        while True:
            allocation = allocate(i, tuple(held))
            if allocation is None:
                break
            cycles = allocation if isinstance(allocation, (int, float)) else allocation.cycles
            end = after if q >= n else min(after, load_start[order[q]])
            start = end - cycles
            if best is None or start >= best[0]:   # ties: the wider frontier (loads start earlier)
                best = (start, end, q, tuple(held), allocation)
            if q >= n or end >= after:
                break  # later loads start after op i+1 does: more residents only cost space
            held.append(order[q])
            q += 1
        if best is None:
            raise OrderError(f"preload order {order}: the ops that must be on chip while op {i} runs do not fit")
        exec_start[i], exec_end[i], frontier[i], resident[i], allocation = best
        if not isinstance(allocation, (int, float)):
            exec_plan[i] = allocation.exec_plan
            if commit is not None:
                commit(i, allocation)
        while placed > 0 and order[placed - 1] >= i:
            k = order[placed - 1]
            end = exec_start[k] if placed >= n else min(exec_start[k], load_start[order[placed]])
            load_end[k] = end
            load_start[k] = end - load_cycles(k)
            placed -= 1
    origin = min(exec_start.min(), load_start.min()) if n else 0.0
    return Schedule(order, frontier, resident, exec_start - origin, exec_end - origin,
                    load_start - origin, load_end - origin, exec_plan)


def timeline(n: int, order: Sequence[int], frontier: Sequence[int], exec_cycles: Sequence[float],
             load_cycles: Sequence[float], transfer_cycles: Sequence[float] | None = None,
             pressure: Sequence[float] | None = None,
             yields: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Fixed decisions as they run, every activity as early as it may start (as the chip
    runs the program ``preload-schedule`` makes of them): (load_start, load_end,
    exec_start, exec_end). Edges: exec i -> exec i+1, load order[t] -> load order[t+1]
    (HBM loads are serial), load k -> exec k, exec i -> load order[frontier[i]] (that
    load needs the space op i frees). With ``transfer_cycles`` (op i's exchange
    transfers) and ``pressure`` (load k's share of the link), each op also waits for the
    link its transfers share with the loads running meanwhile
    (``irc.devices.topology.operator_contention``, the interpreter's rule): every load
    that can start before op i ends is issued by then (a later one waits for op i or an
    op after it). With ``yields`` the loads yield the link instead
    (``irc.devices.topology.preload_yield``, ELK's artifact's delay_comp=False): op i
    keeps its length and the loads running in it, and the loads after them, end later."""
    pos, _ = _order_bounds(order)
    waits_for: dict[int, list[int]] = {}
    for i, q in enumerate(frontier):
        if q < n:
            waits_for.setdefault(order[q], []).append(i)
    contended = transfer_cycles is not None and pressure is not None
    load_start, load_end = np.zeros(n), np.zeros(n)
    exec_start, exec_end = np.zeros(n), np.zeros(n)
    t_load = i_exec = 0
    running = 0   # loads before this preload-order position end before the op executing starts
    while i_exec < n or t_load < n:
        if t_load < n:
            k = order[t_load]
            blockers = waits_for.get(k, [])
            if all(b < i_exec for b in blockers):
                load_start[k] = max([load_end[order[t_load - 1]] if t_load else 0.0] + [exec_end[b] for b in blockers])
                load_end[k] = load_start[k] + load_cycles[k]
                t_load += 1
                continue
        if i_exec < n and pos[i_exec] < t_load:
            i = i_exec
            exec_start[i] = max(exec_end[i - 1] if i else 0.0, load_end[i])
            exec_end[i] = exec_start[i] + exec_cycles[i]
            if contended and transfer_cycles[i] > 0:
                # loads end in preload order and ops start in execution order, both later and
                # later: the loads still running when op i starts are those from ``running`` on
                while running < t_load and not load_end[order[running]] > exec_start[i]:
                    running += 1
                flows = [(load_start[order[t]], load_end[order[t]], pressure[order[t]]) for t in range(running, t_load)]
                busy = [(exec_start[i], exec_end[i])]
                yielded = preload_yield(busy, transfer_cycles[i], flows) if yields else None
                if yielded is not None:
                    first, delay = yielded
                    load_end[order[running + first]] += delay
                    for t in range(running + first + 1, t_load):
                        load_start[order[t]] += delay
                        load_end[order[t]] += delay
                else:
                    exec_end[i] += operator_contention(busy, transfer_cycles[i], flows)
            i_exec += 1
            continue
        raise ValueError("the decisions deadlock: a load waits for an op that waits for it")
    return load_start, load_end, exec_start, exec_end


def timeline_latency(n: int, order: Sequence[int], frontier: Sequence[int], exec_cycles: Sequence[float],
                     load_cycles: Sequence[float], transfer_cycles: Sequence[float] | None = None,
                     pressure: Sequence[float] | None = None, yields: bool = False) -> float:
    """The latency of fixed decisions (``timeline``): the longest path through them."""
    if n == 0:
        return 0.0
    _, load_end, _, exec_end = timeline(n, order, frontier, exec_cycles, load_cycles, transfer_cycles, pressure,
                                        yields)
    return float(max(load_end.max(), exec_end.max()))


def exhaustive_schedule(
    n: int,
    exec_cycles: Callable[[int, tuple[int, ...]], float | None],
    load_cycles: Callable[[int], float],
    order: Sequence[int] | None = None,
) -> tuple[float, list[int]]:
    """The least latency over every combination of preload frontiers (small n only): the
    reference the inductive scheduler must equal (Theorem 4.2)."""
    order = list(range(n)) if order is None else list(order)
    pos, lower = _order_bounds(order)
    choices = []
    for i in range(n):
        options = []
        for q in range(lower[i], n + 1):
            held = tuple(order[t] for t in range(q) if order[t] > i)
            cycles = exec_cycles(i, held)
            if cycles is None:
                break
            options.append((q, cycles))
        choices.append(options)
    loads = [load_cycles(k) for k in range(n)]
    best = (np.inf, [])
    for combo in itertools.product(*choices):
        latency = timeline_latency(n, order, [q for q, _ in combo], [c for _, c in combo], loads)
        if latency < best[0]:
            best = (latency, [q for q, _ in combo])
    return best
