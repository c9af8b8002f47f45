"""The tile schedules of one GEMM layer's backward pass on an NPU and their simulation
on the double-buffered scratchpad (IGO §2.2, §4.2-4.3, §5): the machinery under
`irc.cost.igo`. Pure functions of a layer and an `NpuDevice`; no IR.

The layer is the forward GEMM ``X(M,K) · W(K,N) -> Y(M,N)`` (a convolution in its
im2col view, §6.1); its backward pass is ``dX = dY · Wᵀ`` (M x K) and
``dW = Xᵀ · dY`` (K x N). Tiled by (tm, tk, tn), a *step* is one tile GEMM: a dX step
(i, j, k) reads dY(i,j) and W(k,j) and accumulates into dX(i,k); a dW step (i, j, k)
reads X(i,k) and dY(i,j) and accumulates into dW(k,j).

Orders (§4.2-4.3). The two traditional orders keep what the array holds in place from
step to step (`irc.cost.igo_array`): output-stationary, dX ``for i, k, j`` and dW
``for k, j, i`` (each output tile's steps in a row); weight-stationary, dX
``for k, j, i`` and dW ``for j, i, k`` (each right-hand tile's steps in a row).
``baseline`` runs every dX step, then every dW step, as two operators (`BASELINES`);
``interleave`` alternates one step of each traditional order; ``dx-major`` walks dY
row-major (for i, j: the dX steps of dY tile (i,j) over k, then its dW steps),
``dw-major`` column-major (for j, i). These read each dY tile once for both gradients
but keep a whole gradient partial (dW resp. dX), which spills to DRAM when the
scratchpad cannot hold it (§4.3). ``dx-major-dw-first`` and ``dw-major-dw-first`` walk dY
the same ways but run each dY tile's dW steps before its dX steps: the round that loads
a dY tile is then the one that also loads X, and the round after it loads little, so the
DMA of the next dY tile overlaps the longer dX round (irc's extension: on a layer whose
dX steps are long and dW steps short, the dX-first walk stalls on every dY tile). ``forward`` (the layer's Y = X·W) and ``dw-only``
(a lone weight gradient) are single operators a training step also runs.

Partitions (§5): the GEMM split along M (weight-sharing: W shared, dW summed over the
parts), N (dY-sharing: X shared, dX summed) or K (ifmap-sharing: dY shared, nothing
summed), into parts run one after another on one core or side by side on the cores.

The scratchpad (`plan_transfers`): half of it holds tiles while the other half fills
(double buffering, §2.2), so the resident set is at most half the SPM. It is a
software-managed cache of tiles: a step's tiles must all be resident; a miss loads the
tile from DRAM; when space is needed the least recently used tile goes (§4.2's reuse
criterion; `POLICIES`). An evicted partial sum is written to DRAM and read back at its
next use (a spill); a finished output tile is written once and freed. Parts on
different cores accumulate into their own partial tiles, summed in the SPM when the
last part is done (partials not resident are read back first).

Time (`simulate`): a step's compute is its core's systolic array running it
(`irc.cost.igo_array`: SCALE-Sim's cycles, with the array's content kept from step to
step); the DMA of the tiles a round needs overlaps the previous round's compute (double
buffering, one DMA queue); what the DMA cannot hide is stall. Cores run their steps in
lockstep rounds (a round takes its slowest core's step). Summing partials on the vector
unit is taken as free.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from irc.cost.igo_array import closed_form, fold_overhead

ORDERS = ("baseline", "interleave", "dx-major", "dw-major", "dx-major-dw-first", "dw-major-dw-first")
FUSED_ORDERS = ("interleave", "dx-major", "dw-major", "dx-major-dw-first", "dw-major-dw-first")
DY_MAJOR = {"dx-major": ("ijck", 0), "dw-major": ("jick", 0), "dx-major-dw-first": ("ijck", 1),
            "dw-major-dw-first": ("jick", 1)}
"""The dY-tile-major orders: their loop nest (c: which gradient) and the gradient whose
steps run first on each dY tile (0: dX, 1: dW)."""
SCHEMES = ("weight-sharing", "dy-sharing", "ifmap-sharing")
SPLIT_DIM = {"weight-sharing": "M", "dy-sharing": "N", "ifmap-sharing": "K"}
"""The GEMM dimension each partition scheme splits (§5, Fig. 11)."""
SINGLE_ORDERS = ("forward", "dw-only")
"""One operator each (see the module docstring): not a pair, not lowered."""
TENSORS = ("dY", "X", "W", "dX", "dW")
OUTPUTS = ("dX", "dW", "Y")
"""The tensors steps accumulate into (partials that spill, tiles stored once)."""
BASELINES = ("separate", "shared", "paper")
"""What the baseline keeps in the scratchpad between its two GEMMs.

``separate`` (the default): dX and dW are two operators, as "conventional training
accelerators such as TPUv3 with XLA" run them (§3.2, §4.2), each loading its operands
from DRAM, so "a common operand (dY_i) is fetched from the external memory twice" (§3.2;
§3.3 removes "one of the two accesses for dY"; §2.3). The dX operator's input tiles are
dropped when it ends; the dW operator loads its own (on several cores, once every core
has finished dX). A baseline split into parts over time (§5) is a dX and a dW operator
per part; a gradient summed over the parts stays an open partial sum across them.

``paper`` is the baseline IGO's evaluation measures against (§4.2): the same two
operators, but a dY tile the dX operator read is reused by the dW operator when "the
distance between the dX_i and dW_i calculations" is under "the number of tiled
computations that can be loaded in half of the SPM": when fewer bytes than the resident
half holds were loaded since its last use (and it is still resident); otherwise it is
read again. The other input tiles are dropped at the boundary as in ``separate``.

``shared``: the two GEMMs are one walk through one cache (every tile may stay across
the boundary; on several cores each core goes on to its dW steps when its dX steps are
done)."""
POLICIES = ("lru", "belady")
"""Scratchpad replacement: ``lru`` is §4.2's criterion (a tile is reused when fewer tiles
than half the SPM holds were loaded since its last use), the default; ``belady`` (evict
the tile used farthest ahead: the best a compiler knowing the schedule can do) is the
stronger baseline the benchmark also reports."""


class ScratchpadError(ValueError):
    """A scratchpad too small for one step's tiles."""

    def __init__(self, needed: int, available: int):
        super().__init__(f"one step needs {needed} bytes of scratchpad but {available} are available "
                         f"(half of the SPM: the other half is the double buffer)")
        self.needed = needed
        self.available = available


@dataclass(frozen=True)
class Layer:
    """The forward GEMM ``X(M,K) · W(K,N)`` of a layer, its element size and name."""

    M: int
    K: int
    N: int
    element_bytes: int = 2
    name: str = "layer"


@dataclass(frozen=True)
class Tiling:
    tm: int
    tk: int
    tn: int


@dataclass(frozen=True)
class Step:
    """One tile GEMM: ``kind`` is "dx", "dw" or "fw" (the forward Y(i,j) += X(i,k) ·
    W(k,j)); (i, j, k) index the M, N and K tiles; `part` is the partition whose partial
    output it accumulates into when parts run on different cores (else 0); `core` the
    core that runs it."""

    kind: str
    i: int
    j: int
    k: int
    part: int = 0
    core: int = 0

    def inputs(self) -> tuple[tuple, tuple]:
        if self.kind == "dx":
            return ("dY", self.i, self.j), ("W", self.k, self.j)
        if self.kind == "fw":
            return ("X", self.i, self.k), ("W", self.k, self.j)
        return ("X", self.i, self.k), ("dY", self.i, self.j)

    def output(self) -> tuple:
        if self.kind == "dx":
            return ("dX", self.i, self.k, self.part)
        if self.kind == "fw":
            return ("Y", self.i, self.j, self.part)
        return ("dW", self.k, self.j, self.part)

    def stationary(self, dataflow: str) -> tuple:
        """What the array holds while the step runs: its output tile (os) or its
        right-hand tile (ws: Wᵀ for dX, dY for dW, W for the forward GEMM)."""
        if dataflow == "os":
            return self.output()
        if self.kind == "dw":
            return ("dw", "dY", self.i, self.j)
        return (self.kind, "W", self.k, self.j)


@dataclass
class Cost:
    """What a schedule costs: DRAM bytes per tensor, cycles, and what the arrays did
    (`array_cycles`: every core's compute, summed; `closed_form_cycles` and
    `closed_form_folds`: SCALE-Sim's for the schedule's GEMMs whole, per part;
    `fresh_folds`: the folds loaded into an array)."""

    read: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    written: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    compute_cycles: int = 0
    stall_cycles: float = 0.0
    steps: int = 0
    spill_bytes: int = 0
    array_cycles: int = 0
    fresh_folds: int = 0
    closed_form_cycles: int = 0
    closed_form_folds: int = 0
    tiling: Tiling | None = None

    @property
    def dram_bytes(self) -> int:
        return sum(self.read.values()) + sum(self.written.values())

    @property
    def cycles(self) -> float:
        return self.compute_cycles + self.stall_cycles

    @property
    def refill_cycles(self) -> int:
        """Array cycles beyond SCALE-Sim's closed form: the refills the tiling forces."""
        return self.array_cycles - self.closed_form_cycles

    @property
    def refills(self) -> int:
        return self.fresh_folds - self.closed_form_folds

    def as_dict(self) -> dict:
        return {
            "read": dict(self.read), "written": dict(self.written), "dram_bytes": self.dram_bytes,
            "compute_cycles": self.compute_cycles, "stall_cycles": self.stall_cycles, "cycles": self.cycles,
            "spill_bytes": self.spill_bytes, "refills": self.refills, "refill_cycles": self.refill_cycles,
        }


# ---------------------------------------------------------------------------
# Tiles and schedules
# ---------------------------------------------------------------------------


def tile_counts(layer: Layer, tiling: Tiling) -> tuple[int, int, int]:
    """(M tiles, N tiles, K tiles)."""
    return (math.ceil(layer.M / tiling.tm), math.ceil(layer.N / tiling.tn), math.ceil(layer.K / tiling.tk))


_DIMS = {"dY": ("M", "N"), "W": ("K", "N"), "X": ("M", "K"), "dX": ("M", "K"), "dW": ("K", "N"), "Y": ("M", "N")}


def _edge(index: int, size: int, full: int) -> int:
    return min(size, full - index * size)


def tile_bytes(tile: tuple, layer: Layer, tiling: Tiling) -> int:
    """Bytes of a tile (edge tiles are smaller)."""
    sizes = {"M": (tiling.tm, layer.M), "N": (tiling.tn, layer.N), "K": (tiling.tk, layer.K)}
    rows, cols = (sizes[d] for d in _DIMS[tile[0]])
    return _edge(tile[1], *rows) * _edge(tile[2], *cols) * layer.element_bytes


def step_shape(step: Step, layer: Layer, tiling: Tiling) -> tuple[int, int, int]:
    """(m, r, c) of the step's tile GEMM (rows, reduction, columns): dX = dY(tm x tn) ·
    Wᵀ(tn x tk); dW = Xᵀ(tk x tm) · dY(tm x tn); Y = X(tm x tk) · W(tk x tn)."""
    tm = _edge(step.i, tiling.tm, layer.M)
    tn = _edge(step.j, tiling.tn, layer.N)
    tk = _edge(step.k, tiling.tk, layer.K)
    return {"dx": (tm, tn, tk), "dw": (tk, tm, tn), "fw": (tm, tk, tn)}[step.kind]


KINDS = ("dx", "dw", "fw")
TRADITIONAL = {"os": {"dx": "ikj", "dw": "kji", "fw": "ijk"}, "ws": {"dx": "kji", "dw": "jik", "fw": "jki"}}
"""The loop nest (outermost first) of each GEMM's traditional order per dataflow: each
stationary tile's steps in a row (its output tile, os; its right-hand tile, ws)."""


def _nest(axes: str, ranges: dict[str, range]) -> dict[str, np.ndarray]:
    """The indices of a loop nest over `axes` (outermost first), flattened."""
    grids = np.meshgrid(*[np.arange(ranges[a].start, ranges[a].stop) for a in axes], indexing="ij")
    return {a: g.ravel() for a, g in zip(axes, grids)}


def _order(order: str, ranges: dict[str, range], dataflow: str = "os") -> tuple[np.ndarray, ...]:
    """(kind, i, j, k) of an order's steps over the tile ranges "i", "j", "k"."""
    def traditional(kind: str) -> tuple[np.ndarray, ...]:
        loops = _nest(TRADITIONAL[dataflow][kind], ranges)
        return np.full(loops["i"].size, KINDS.index(kind)), loops["i"], loops["j"], loops["k"]

    if order in ("baseline", "interleave"):
        dx, dw = traditional("dx"), traditional("dw")
        if order == "baseline":
            return tuple(np.concatenate(pair) for pair in zip(dx, dw))
        out = []
        for a, b in zip(dx, dw):
            both = np.empty(a.size + b.size, dtype=np.int64)
            both[0::2], both[1::2] = a, b
            out.append(both)
        return tuple(out)
    if order in ("dw-only", "forward"):
        return traditional("dw" if order == "dw-only" else "fw")
    if order in DY_MAJOR:
        nest, first = DY_MAJOR[order]
        loops = _nest(nest, {**ranges, "c": range(2)})
        return loops["c"] ^ first, loops["i"], loops["j"], loops["k"]
    raise ValueError(f"unknown order '{order}' (known: {', '.join(ORDERS + SINGLE_ORDERS)})")


def _split(count: int, parts: int) -> list[range]:
    """`count` tiles in `parts` contiguous blocks, as even as can be (empty blocks dropped)."""
    bounds = [round(p * count / parts) for p in range(parts + 1)]
    return [range(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


def part_blocks(layer: Layer, tiling: Tiling, scheme: str | None, parts: int) -> list[dict[str, range]]:
    """The tile ranges ("i": M, "j": N, "k": K) of each part of the split (one part: the
    whole)."""
    mt, nt, kt = tile_counts(layer, tiling)
    ranges = {"i": range(mt), "j": range(nt), "k": range(kt)}
    if scheme is None or parts == 1:
        return [ranges]
    axis = {"M": "i", "N": "j", "K": "k"}[SPLIT_DIM[scheme]]
    return [{**ranges, axis: r} for r in _split(len(ranges[axis]), parts)]


class Rounds(Sequence):
    """A schedule: rounds of steps, one per busy core (``rounds[t]`` is a list of `Step`),
    held as arrays (kind index into `KINDS`, i, j, k, part, core; round t is steps
    ``starts[t]`` to ``starts[t+1]``)."""

    def __init__(self, kind, i, j, k, part, core, starts):
        self.arrays = tuple(np.asarray(a, dtype=np.int64) for a in (kind, i, j, k, part, core))
        self.starts = np.asarray(starts, dtype=np.int64)
        self._lists = None

    @classmethod
    def of(cls, rounds) -> Rounds:
        """`rounds` itself, or the `Rounds` of a list of lists of steps."""
        if isinstance(rounds, Rounds):
            return rounds
        steps = [s for r in rounds for s in r]
        columns = [[KINDS.index(s.kind) for s in steps]] + [[getattr(s, f) for s in steps]
                                                            for f in ("i", "j", "k", "part", "core")]
        return cls(*columns, np.cumsum([0] + [len(r) for r in rounds]))

    def lists(self) -> tuple[list, ...]:
        if self._lists is None:
            self._lists = tuple(a.tolist() for a in self.arrays) + (self.starts.tolist(),)
        return self._lists

    def __len__(self) -> int:
        return len(self.starts) - 1

    def __getitem__(self, t):
        if isinstance(t, slice):
            return [self[u] for u in range(*t.indices(len(self)))]
        if t < 0:
            t += len(self)
        kind, i, j, k, part, core, starts = self.lists()
        return [Step(KINDS[kind[s]], i[s], j[s], k[s], part[s], core[s]) for s in range(starts[t], starts[t + 1])]


def _lockstep(streams: list[tuple[np.ndarray, ...]]) -> tuple[list[np.ndarray], np.ndarray]:
    """The columns of rounds taking the t-th step of every core's stream, and the rounds'
    starts."""
    position = np.concatenate([np.arange(s[0].size) for s in streams])
    stream = np.concatenate([np.full(s[0].size, p) for p, s in enumerate(streams)])
    order = np.lexsort((stream, position))
    columns = [np.concatenate([s[c] for s in streams])[order] for c in range(len(streams[0]))]
    counts = np.bincount(position) if position.size else np.zeros(0, dtype=np.int64)
    return columns, np.concatenate([[0], np.cumsum(counts)])


def schedule(layer: Layer, tiling: Tiling, order: str, scheme: str | None = None, parts: int = 1,
             cores: int = 1, baseline: str = "separate", dataflow: str = "os") -> Rounds:
    """The rounds of steps: one list per round, one step per busy core.

    `scheme` splits the GEMM into `parts` (None: no split); with ``cores > 1`` the parts
    run on the cores side by side (parts must equal cores), else one after another. The
    ``separate`` and ``paper`` baselines on several cores run the dX operator's rounds on
    every core, then the dW operator's (`BASELINES`); ``shared`` lets each core go on to
    its dW steps when its dX steps are done. `dataflow` picks the traditional orders."""
    if baseline not in BASELINES:
        raise ValueError(f"unknown baseline '{baseline}' (known: {', '.join(BASELINES)})")
    blocks = part_blocks(layer, tiling, scheme, parts)
    if cores == 1:
        columns = [np.concatenate(c) for c in zip(*(_order(order, b, dataflow) for b in blocks))]
        n = columns[0].size
        return Rounds(*columns, np.zeros(n), np.zeros(n), np.arange(n + 1))
    if len(blocks) > cores:
        raise ValueError(f"{len(blocks)} parts for {cores} cores")
    # Parts that split a reduction (M for dW, N for dX) accumulate separately per core.
    reduced = {"M": 1, "N": 0, "K": 2}.get(SPLIT_DIM.get(scheme or "", ""), -1)
    streams = []
    for p, block in enumerate(blocks):
        kind, i, j, k = _order(order, block, dataflow)
        streams.append((kind, i, j, k, np.where(kind == reduced, p, 0), np.full(kind.size, p)))
    if order == "baseline" and baseline != "shared":
        phases = [_lockstep([tuple(c[s[0] == kind] for c in s) for s in streams]) for kind in (0, 1)]
        (first, a), (second, b) = phases
        return Rounds(*(np.concatenate(pair) for pair in zip(first, second)), np.concatenate([a, b[1:] + a[-1]]))
    columns, starts = _lockstep(streams)
    return Rounds(*columns, starts)


def operator_starts(rounds, order: str, baseline: str = "separate") -> frozenset[int]:
    """The rounds that start an operator after another when the baseline's GEMMs are
    separate operators (``separate`` and ``paper``, `BASELINES`): each round whose step
    kinds differ from the previous round's; none for one walk (a fused order, or the
    ``shared`` baseline)."""
    if order != "baseline" or baseline == "shared":
        return frozenset()
    rounds = Rounds.of(rounds)
    if len(rounds) == 0:
        return frozenset()
    kinds = np.bitwise_or.reduceat(1 << rounds.arrays[0], rounds.starts[:-1])
    return frozenset((np.nonzero(kinds[1:] != kinds[:-1])[0] + 1).tolist())


def closed_form_of(layer: Layer, tiling: Tiling, order: str, scheme: str | None, parts: int,
                   device) -> tuple[int, int]:
    """SCALE-Sim's cycles and folds for the schedule's GEMMs whole: per part of the split,
    its dX and dW GEMMs (its forward GEMM, or its dW alone, for the single orders)."""
    cycles = folds = 0
    for block in part_blocks(layer, tiling, scheme, parts):
        m, n, k = (_extent(block[a], size, full) for a, size, full in
                   (("i", tiling.tm, layer.M), ("j", tiling.tn, layer.N), ("k", tiling.tk, layer.K)))
        gemms = {"forward": [(m, k, n)], "dw-only": [(k, m, n)]}.get(order, [(m, n, k), (k, m, n)])
        for shape in gemms:
            c, f = closed_form(*shape, device.pe_rows, device.pe_cols, device.dataflow)
            cycles, folds = cycles + c, folds + f
    return cycles, folds


def _extent(tiles: range, size: int, full: int) -> int:
    return min(tiles.stop * size, full) - tiles.start * size if len(tiles) else 0


# ---------------------------------------------------------------------------
# The scratchpad
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Transfer:
    """One DMA of a tile: ``load`` into the SPM before round `round` computes, or
    ``store`` out of it (a spilled partial before round `round`, or a finished output
    tile after round `round`, ``after``); ``free`` drops an input tile without a DMA."""

    round: int
    kind: str  # "load" | "store" | "free"
    tile: tuple
    nbytes: int
    partial: bool = False
    after: bool = False
    ready_round: int = -1
    """For a store: the round that last wrote the tile (its data is final when that
    round ends); -1 for a load."""


CODES = ("dY", "W", "X", "dX", "dW", "Y")
"""Tensors in the order of their integer codes (the outputs from ``dX`` on)."""


class _Tiles:
    """A schedule's tiles as integers: each step's two inputs and output (`in1`, `in2`,
    `out`, lists), and per tile its bytes, last round used, tensor (`name`), key
    (``(tensor, a, b)``, outputs ``(tensor, a, b, part)``, made on demand) and (belady)
    every round used."""

    def __init__(self, rounds: Rounds, layer: Layer, tiling: Tiling, uses: bool):
        kind, i, j, k, part, _ = rounds.arrays
        self.base = base = max(tile_counts(layer, tiling)) + 1
        self.parts = parts = int(part.max()) + 1 if part.size else 1
        encode = lambda c, a, b, p: ((c * base + a) * base + b) * parts + p  # noqa: E731
        in1 = encode(np.where(kind == 0, 0, 2), i, np.where(kind == 0, j, k), 0)
        in2 = encode(np.where(kind == 1, 0, 1), np.where(kind == 1, i, k), j, 0)
        out = encode(kind + 3, np.where(kind == 1, k, i), np.where(kind == 0, k, j), part)
        self.in1, self.in2, self.out = in1.tolist(), in2.tolist(), out.tolist()
        self.per_tensor = base * base * parts
        self.first_output = 3 * self.per_tensor
        self.dy_end = self.per_tensor
        step_round = np.repeat(np.arange(len(rounds)), np.diff(rounds.starts)).tolist()
        # rounds only grow along the schedule: each tile's last entry, in step order, is its last use
        self.last_use = dict(zip(np.stack([in1, in2, out], axis=1).ravel().tolist(), np.repeat(step_round, 3).tolist()))
        unique = np.fromiter(self.last_use, dtype=np.int64, count=len(self.last_use))
        p, rest = unique % parts, unique // parts
        b, rest = rest % base, rest // base
        a, code = rest % base, rest // base
        extent = {"M": (tiling.tm, layer.M), "N": (tiling.tn, layer.N), "K": (tiling.tk, layer.K)}
        edges = {d: np.minimum(size, full - np.arange(base) * size) for d, (size, full) in extent.items()}
        rows = np.stack([edges[_DIMS[c][0]] for c in CODES])
        cols = np.stack([edges[_DIMS[c][1]] for c in CODES])
        self.size = dict(zip(unique.tolist(), (rows[code, a] * cols[code, b] * layer.element_bytes).tolist()))
        self._keys: dict[int, tuple] = {}
        self.partials: dict[int, list[int]] = defaultdict(list)
        if parts > 1:
            for t in sorted(unique[unique >= self.first_output].tolist()):
                self.partials[t - t % parts].append(t)
        self.uses: dict[int, list[int]] = {}
        if uses:
            for t, w in zip(self.in1 + self.in2 + self.out, step_round * 3):
                positions = self.uses.setdefault(t, [])
                if not positions or positions[-1] != w:
                    positions.append(w)
            for positions in self.uses.values():
                positions.sort()

    def name(self, tile: int) -> str:
        return CODES[tile // self.per_tensor]

    def key(self, tile: int) -> tuple:
        found = self._keys.get(tile)
        if found is None:
            rest, p = divmod(tile, self.parts)
            rest, b = divmod(rest, self.base)
            code, a = divmod(rest, self.base)
            found = self._keys[tile] = (CODES[code], a, b) if code < 3 else (CODES[code], a, b, p)
        return found


LOAD, STORE, FREE = 0, 1, 2
"""Kinds of a planned transfer in `_plan` (`Transfer.kind`: "load", "store", "free")."""


class _Scratchpad:
    """The resident half of the SPM while a schedule is planned (`_plan`): tiles in order
    of last use (LRU first), the partial sums spilled, and the transfers it plans as
    tuples ``(kind, tile, bytes, partial, after, ready_round)``."""

    def __init__(self, tiles: _Tiles, capacity: int, policy: str, frees: bool, pin_dy: bool = False):
        self.tiles, self.capacity, self.policy, self.frees = tiles, capacity, policy, frees
        self.pin_dy = pin_dy
        self.resident: dict[int, int] = {}
        self.spilled: set[int] = set()
        self.written_in: dict[int, int] = {}
        self.cursor: dict[int, int] = defaultdict(int)
        self.used = self.loaded = 0

    def drop(self, tile: int, into: list) -> None:
        """An input tile leaves without a DMA (listed as a free with `frees`)."""
        self.used -= self.resident.pop(tile)
        if self.frees:
            into.append((FREE, tile, self.tiles.size[tile], False, False, -1))

    def next_use(self, tile: int, now: int) -> float:
        positions, c = self.tiles.uses[tile], self.cursor[tile]
        while c < len(positions) and positions[c] < now:
            c += 1
        self.cursor[tile] = c
        return positions[c] if c < len(positions) else math.inf

    def fetch(self, tile: int, needed: list, t: int, before: list) -> None:
        """Make `tile` resident for round t: a hit, or room made (evicting, spilling a
        partial sum) and a load (a reload, for a spilled partial)."""
        resident, size = self.resident, self.tiles.size
        if tile in resident:
            resident[tile] = resident.pop(tile)  # most recently used
            return
        nbytes = size[tile]
        while self.used + nbytes > self.capacity:
            pinned = self.tiles.dy_end if self.pin_dy else 0   # dY tiles stay until their last use
            candidates = (v for v in resident if v not in needed and v >= pinned)
            victim = next(candidates, None) if self.policy == "lru" else \
                max(candidates, key=lambda v: self.next_use(v, t), default=None)
            if victim is None:   # only pinned dY tiles could go
                raise ScratchpadError(self.used + nbytes, self.capacity)
            if victim >= self.tiles.first_output:
                # a partial sum needed again: written now, read back at its next use
                self.used -= resident.pop(victim)
                before.append((STORE, victim, size[victim], True, False, self.written_in[victim]))
                self.spilled.add(victim)
            else:
                self.drop(victim, before)
        resident[tile] = nbytes
        self.used += nbytes
        if tile < self.tiles.first_output:
            before.append((LOAD, tile, nbytes, False, False, -1))
            self.loaded += nbytes
        elif tile in self.spilled:
            before.append((LOAD, tile, nbytes, True, False, -1))
            self.spilled.discard(tile)

    def finish(self, needed: list, t: int) -> list:
        """The write-backs of the output tiles whose every partial is done after round t:
        the partials are summed in the SPM (spilled ones read back first) and the sum is
        written once."""
        tiles, after, finished = self.tiles, [], set()
        last_use, size = tiles.last_use, tiles.size
        for out in needed:
            if out < tiles.first_output or last_use[out] != t:
                continue
            if tiles.parts == 1:
                partials, whole = (out,), out
            else:
                whole = out - out % tiles.parts
                partials = tiles.partials[whole]
                if whole in finished or any(last_use[p] > t for p in partials):
                    continue
                finished.add(whole)  # once, however many of its partials this round wrote
            for partial in partials:
                if partial in self.spilled:
                    after.append((LOAD, partial, size[partial], True, True, -1))
                    self.spilled.discard(partial)
                elif partial in self.resident:
                    self.used -= self.resident.pop(partial)
            after.append((STORE, whole, size[out], False, True, t))
        return after


def _plan(rounds: Rounds, tiles: _Tiles, capacity: int, policy: str, frees: bool, flush_before, paper: bool,
          pin_dy: bool = False):
    """`plan_rounds` on integer tiles: yields ``(t, before, after)`` with transfers as
    tuples ``(kind, tile, bytes, partial, after, ready_round)``."""
    spm = _Scratchpad(tiles, capacity, policy, frees, pin_dy)
    paper = paper and not pin_dy   # a pinned dY tile is reused however far its next use
    size, last_use, first_output, dy_end = tiles.size, tiles.last_use, tiles.first_output, tiles.dy_end
    in1, in2, out_of = tiles.in1, tiles.in2, tiles.out
    starts = rounds.lists()[-1]
    operator_start = 0
    last_used_at: dict[int, tuple[int, int]] = {}  # tile -> (round, bytes loaded by then)
    dead: list[tuple] = []
    for t in range(len(starts) - 1):
        before: list[tuple] = dead if frees else []
        dead = []
        if t in flush_before:
            operator_start = t
            for tile in [x for x in spm.resident if x < first_output and not ((paper or pin_dy) and x < dy_end)]:
                spm.drop(tile, before)
        first, stop = starts[t], starts[t + 1]
        if stop - first == 1:
            needed = [in1[first], in2[first], out_of[first]]
        else:
            needed = list(dict.fromkeys(x for s in range(first, stop) for x in (in1[s], in2[s], out_of[s])))
        need_bytes = sum(size[x] for x in needed)
        if need_bytes > capacity:
            raise ScratchpadError(need_bytes, capacity)
        if paper:  # §4.2: a dY tile from the previous operator is reused within half the SPM of loads
            for tile in needed:
                if tile in spm.resident and tile < dy_end and last_used_at[tile][0] < operator_start \
                        and spm.loaded - last_used_at[tile][1] >= capacity:
                    spm.drop(tile, before)
        for tile in needed:
            spm.fetch(tile, needed, t, before)
        if paper:
            for tile in needed:
                last_used_at[tile] = (t, spm.loaded)
        for s in range(first, stop):
            spm.written_in[out_of[s]] = t
        after = spm.finish(needed, t)
        for tile in needed:
            if tile < first_output and last_use[tile] == t:
                spm.drop(tile, dead)
        yield t, before, after
    yield len(starts) - 1, dead, []


_KIND_NAMES = ("load", "store", "free")


def plan_rounds(rounds, layer: Layer, tiling: Tiling, capacity: int, policy: str = "lru",
                frees: bool = False, flush_before=frozenset(), paper: bool = False, pin_dy: bool = False):
    """The DMAs of a schedule round by round (see the module docstring): yields
    ``(t, before, after)`` for t = 0 .. len(rounds), `before` the `Transfer`s issued
    before round t computes (frees of tiles dead after round t-1, the flush of an operator
    start, evictions, spills, loads and reloads), `after` the write-backs of the outputs
    round t finishes (t = len(rounds): the last frees only). Raises `ScratchpadError`
    when one round's tiles do not fit `capacity`. `policy` picks the tile to evict:
    ``lru`` the least recently used, ``belady`` the one used farthest in the future.
    `flush_before` (`operator_starts`): the rounds that start another operator; the input
    tiles resident then are dropped (open partial sums stay), except with `paper`
    (`BASELINES`) the dY tiles, which the next operator reuses only within half the SPM's
    worth of loads. With `pin_dy` a dY tile stays resident from its first use to its
    last (never evicted, never flushed: each dY tile read once), the other tiles making
    room; `ScratchpadError` when only pinned tiles could. Frees are listed only with
    `frees` (what a program needs, `irc.lowering.igo_to_npu`)."""
    if policy not in POLICIES:
        raise ValueError(f"unknown replacement policy '{policy}' (known: {', '.join(POLICIES)})")
    rounds = Rounds.of(rounds)
    tiles = _Tiles(rounds, layer, tiling, policy == "belady")
    key = tiles.key

    def transfer(t: int, raw: tuple) -> Transfer:
        kind, tile, nbytes, partial, after, ready = raw
        name = key(tile) if partial or kind != STORE else key(tile)[:3] + (0,)
        return Transfer(t, _KIND_NAMES[kind], name, nbytes, partial, after, ready)

    for t, before, after in _plan(rounds, tiles, capacity, policy, frees, flush_before, paper, pin_dy):
        yield t, [transfer(t, b) for b in before], [transfer(t, a) for a in after]


def plan_transfers(rounds, layer: Layer, tiling: Tiling, capacity: int, policy: str = "lru",
                   frees: bool = False, flush_before=frozenset(), paper: bool = False,
                   pin_dy: bool = False) -> list[Transfer]:
    """Every DMA (and, with `frees`, every free) of a schedule, in the order
    `plan_rounds` plans them."""
    transfers: list[Transfer] = []
    for _, before, after in plan_rounds(rounds, layer, tiling, capacity, policy, frees, flush_before, paper, pin_dy):
        transfers += before + after
    return transfers


def array_work(rounds: Rounds, layer: Layer, tiling: Tiling, device) -> tuple[list, int, int]:
    """Every round's compute (its slowest core's step), every step's cycles summed and the
    folds loaded, with each core's array keeping its fold from step to step: a step
    continues the fold in place when its core's previous step had the same stationary
    tile (`irc.cost.igo_array.run_step`, vectorised)."""
    kind, i, j, k, part, core = rounds.arrays
    if kind.size == 0:
        return [], 0, 0
    tm = np.minimum(tiling.tm, layer.M - i * tiling.tm)
    tn = np.minimum(tiling.tn, layer.N - j * tiling.tn)
    tk = np.minimum(tiling.tk, layer.K - k * tiling.tk)
    m, r, c = np.choose(kind, [tm, tk, tm]), np.choose(kind, [tn, tm, tk]), np.choose(kind, [tk, tn, tn])
    rows, cols = device.pe_rows, device.pe_cols
    base = max(tile_counts(layer, tiling)) + 1
    if device.dataflow == "os":  # the output tile stays
        folds, stream = -(-m // rows) * -(-c // cols), r
        stationary = ((kind * base + np.where(kind == 1, k, i)) * base + np.where(kind == 0, k, j)) * (
            int(part.max()) + 1) + part
    else:  # the right-hand tile stays, with its GEMM (Wᵀ for dX, W for the forward GEMM)
        folds, stream = -(-r // rows) * -(-c // cols), m
        stationary = (kind * base + np.where(kind == 1, i, k)) * base + j
    by_core = np.argsort(core, kind="stable")
    keys = stationary[by_core]
    same = np.zeros(kind.size, dtype=bool)
    same[by_core[1:]] = (keys[1:] == keys[:-1]) & (core[by_core][1:] == core[by_core][:-1])
    fresh = folds - same
    cycles = folds * stream + fresh * fold_overhead(rows, cols, device.dataflow)
    computes = np.maximum.reduceat(cycles, rounds.starts[:-1])
    return computes.tolist(), int(cycles.sum()), int(fresh.sum())


def _bytes_to_move(rounds: Rounds, layer: Layer) -> int:
    """What must cross the DRAM bus at least: every input tile of the rounds' products
    once, every output tile once."""
    kinds_used = set(rounds.arrays[0].tolist())
    tensors = {t for kind in kinds_used for t in ({0: ("dY", "W", "X", "dX"), 1: ("X", "dY", "dW"),
                                                   2: ("X", "W", "Y")}[kind])}
    dims = {"M": layer.M, "N": layer.N, "K": layer.K}
    return sum(dims[_DIMS[t][0]] * dims[_DIMS[t][1]] for t in tensors) * layer.element_bytes


def simulate(rounds, layer: Layer, tiling: Tiling, device, policy: str = "lru", flush_before=frozenset(),
             paper: bool = False, bound: float = math.inf, spill_free_best: bool = False,
             dy_once: bool | str = False) -> Cost | None:
    """DRAM traffic per tensor and cycles of `rounds` on `device` (an `NpuDevice`);
    `flush_before` and `paper`: `plan_rounds`'. With `dy_once` the dY tiles loaded for dW
    steps come free (IGO §3.3, Fig. 6: "we eliminate dY reads" of the dW computation);
    with ``dy_once="once"`` every dY tile's reloads are free (in any order: the bound over
    a schedule space, `irc.cost.igo.price`); ``"pinned"`` plans with `plan_rounds`'
    `pin_dy` (each dY tile read once by the schedule itself, every byte paid).

    One DMA queue at the device's DRAM bandwidth, in the order a program issues them
    (`irc.cost.igo.queue`): round t-1's fill (the loads and spills round t needs) and then round
    t-2's write-back are issued while round t-1 computes. A DMA starts when the queue is
    free and a load or reload once the round computing when it is issued has started (it
    fills the other half of the SPM, §2.2), a spill or store once the round that last
    wrote its tile has ended. Round t computes once round t-1 has ended and its fill is
    done (each core's array keeping its fold from step to step, `irc.cost.igo_array`);
    what the DMA cannot hide is stall.

    For a search (`irc.planner.igo`), None once the schedule cannot beat a best of
    `bound` cycles: its time so far plus the least compute still to come exceeds it
    (after its first spill, unless the best spills too: a spill-free schedule wins
    regardless) or, with `spill_free_best`, at its first spill."""
    rounds = Rounds.of(rounds)
    computes, array_cycles, fresh = array_work(rounds, layer, tiling, device)
    if spill_free_best and sum(computes) > bound * (1 + 1e-12) + 1e-9:
        return None  # its compute alone is longer than the best
    still = [0] * (len(computes) + 1)
    for t in range(len(computes) - 1, -1, -1):
        still[t] = still[t + 1] + computes[t]
    starts = rounds.lists()[-1]
    cost = Cost(tiling=tiling, array_cycles=array_cycles, fresh_folds=fresh)
    unmoved = _bytes_to_move(rounds, layer)
    loaded_once: set[int] = set()
    spans: list[tuple[float, float]] = []
    dma_free = 0.0
    pending: list[tuple] = []
    rate = device.dram_bytes_per_cycle
    dw = KINDS.index("dw")
    kinds = rounds.lists()[0]
    bound = bound * (1 + 1e-12) + 1e-9  # the same sums in another order: never cut a tie
    if policy not in POLICIES:
        raise ValueError(f"unknown replacement policy '{policy}' (known: {', '.join(POLICIES)})")
    tiles = _Tiles(rounds, layer, tiling, policy == "belady")
    name, dy_end = tiles.name, tiles.dy_end
    for t, before, after in _plan(rounds, tiles, device.spm_bytes // 2, policy, False, flush_before, paper,
                                  dy_once == "pinned"):
        fill_done = 0.0
        free_dy = dy_once is True and t < len(rounds) and kinds[starts[t]] == dw
        for kind, tile, nbytes, partial, late, ready in before + pending:
            if kind == FREE or (free_dy and kind == LOAD and tile < dy_end):
                continue
            if dy_once == "once" and kind == LOAD and tile < dy_end and tile in loaded_once:
                continue   # a dY tile's reload
            (cost.read if kind == LOAD else cost.written)[name(tile)] += nbytes
            if partial:
                cost.spill_bytes += nbytes
                if spill_free_best:
                    return None
            elif kind == STORE or tile not in loaded_once:
                unmoved -= nbytes
                loaded_once.add(tile)
            earliest = (spans[-1][0] if spans else 0.0) if kind == LOAD else spans[ready][1]
            dma_free = max(dma_free, earliest) + nbytes / rate
            if not late:
                fill_done = dma_free
        pending = after
        if t == len(rounds):
            break
        start = max(spans[-1][1] if spans else 0.0, fill_done)
        spans.append((start, start + computes[t]))
        if (cost.spill_bytes or spill_free_best) and max(start + computes[t] + still[t + 1],
                                                         dma_free + unmoved / rate) > bound:
            return None
    end = max(spans[-1][1] if spans else 0.0, dma_free)
    cost.compute_cycles = sum(computes)
    cost.steps = int(rounds.starts[-1])
    cost.stall_cycles = end - cost.compute_cycles
    return cost
