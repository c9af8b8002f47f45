"""The backward pass of one GEMM layer on an NPU with a double-buffered scratchpad
(IGO §2.2, §3, §4.2-4.3, §5): tile schedules, the scratchpad they run in, and what
they cost. Pure functions of a layer and an `NpuDevice`; no IR.

The layer is the forward GEMM ``X(M,K) · W(K,N) -> Y(M,N)`` (a convolution in its
im2col view, §6.1); its backward pass is ``dX = dY · Wᵀ`` (M x K) and
``dW = Xᵀ · dY`` (K x N). Tiled by (tm, tk, tn), a *step* is one tile GEMM: a dX step
(i, j, k) reads dY(i,j) and W(k,j) and accumulates into dX(i,k); a dW step (i, j, k)
reads X(i,k) and dY(i,j) and accumulates into dW(k,j).

Orders (§4.2-4.3): ``baseline`` runs every dX step (output-stationary: for i, k, j)
then every dW step (for k, j, i), as two operators (`BASELINES`); ``interleave``
alternates one step of each of those two traditional orders; ``dx-major`` walks dY row-major (for i, j, k: the dX step, then
the dW step of the same dY tile), ``dw-major`` column-major (for j, i, k). The last two
read each dY tile once for both gradients but keep a whole gradient partial (dW resp.
dX), which spills to DRAM when the scratchpad cannot hold it (§4.3).

Single operators, for what a training step costs besides the pairs (never lowered:
those ops stay `te`): ``forward`` is the layer's forward GEMM Y = X·W (for i, j, k:
Y(i,j) accumulates over k, the dX step's loop nest), ``dw-only`` the lone weight
gradient of a layer whose input needs no gradient (the baseline's dW operator).

Partitions (§5): the GEMM split along M (weight-sharing: W shared, dW summed over the
parts), N (dY-sharing: X shared, dX summed) or K (ifmap-sharing: dY shared, nothing
summed), into parts run one after another on one core or side by side on the cores.

The scratchpad (`simulate`): half of it holds tiles while the other half fills (double
buffering, §2.2), so the resident set is at most half the SPM. It is a software-managed
cache of tiles: a step's tiles must all be resident; a miss loads the tile from DRAM;
when space is needed the least recently used tile goes (§4.2's reuse criterion; `POLICIES`). An evicted partial sum is written to DRAM and read back at
its next use (a spill); a finished output tile is written once and freed. Parts on
different cores accumulate into their own partial tiles, summed in the SPM when the
last part is done (partials not resident are read back first).

Time: a step's compute is SCALE-Sim's GEMM cycles of its tile (`NpuDevice.gemm_cycles`);
the DMA of the tiles a round needs overlaps the previous round's compute (double
buffering, one DMA queue, `simulate`); what the DMA cannot hide is stall. Cores run
their steps in lockstep rounds (a round takes its slowest core's step). Summing partials
on the vector unit is taken as free.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

ORDERS = ("baseline", "interleave", "dx-major", "dw-major")
FUSED_ORDERS = ("interleave", "dx-major", "dw-major")
SCHEMES = ("weight-sharing", "dy-sharing", "ifmap-sharing")
SPLIT_DIM = {"weight-sharing": "M", "dy-sharing": "N", "ifmap-sharing": "K"}
"""The GEMM dimension each partition scheme splits (§5, Fig. 11)."""
SINGLE_ORDERS = ("forward", "dw-only")
"""One operator each (see the module docstring): not a pair, not lowered."""
TENSORS = ("dY", "X", "W", "dX", "dW")
OUTPUTS = ("dX", "dW", "Y")
"""The tensors steps accumulate into (partials that spill, tiles stored once)."""
BASELINES = ("separate", "shared")
"""What the baseline keeps in the scratchpad between its two GEMMs.

``separate`` (the default) is the paper's baseline: dX and dW are two operators, as
"conventional training accelerators such as TPUv3 with XLA" run them (§3.2, §4.2), and
each loads its operands from DRAM, so "a common operand (dY_i) is fetched from the
external memory twice" (§3.2; §3.3 removes "one of the two accesses for dY"; §2.3: only
a fused operator's input "is loaded only once from the off-chip memory, not for each
operator"). The dX operator's input tiles are dropped when it ends; the dW operator
loads its own (on several cores, once every core has finished dX: each operator is data
parallel over all of them). Its first tiles still load while dX's last round computes
(double buffering across the boundary, which favours the baseline by at most one fill).
A baseline split into parts over time on one core (§5) is a dX and a dW operator per
part; a gradient summed over the parts stays an open partial sum across them.

``shared`` is the stronger baseline irc had before: the two GEMMs are one walk through
one cache, so a dY tile loaded for dX is still a hit for dW when fewer tiles than half
the SPM holds were loaded in between (§4.2's reuse criterion applied across the two
operators), so a layer whose dY fits the resident half reads it once."""
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
    W(k,j)); (i, j, k) index the M, N and K tiles;
    `part` is the partition whose partial output it accumulates into when parts run
    on different cores (else 0)."""

    kind: str
    i: int
    j: int
    k: int
    part: int = 0

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


@dataclass
class Cost:
    """What a schedule costs: DRAM bytes per tensor, cycles."""

    read: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    written: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    compute_cycles: int = 0
    stall_cycles: float = 0.0
    steps: int = 0

    @property
    def dram_bytes(self) -> int:
        return sum(self.read.values()) + sum(self.written.values())

    @property
    def cycles(self) -> float:
        return self.compute_cycles + self.stall_cycles

    def as_dict(self) -> dict:
        return {
            "read": dict(self.read), "written": dict(self.written), "dram_bytes": self.dram_bytes,
            "compute_cycles": self.compute_cycles, "stall_cycles": self.stall_cycles, "cycles": self.cycles,
        }


# ---------------------------------------------------------------------------
# Tiles and schedules
# ---------------------------------------------------------------------------


def tile_counts(layer: Layer, tiling: Tiling) -> tuple[int, int, int]:
    """(M tiles, N tiles, K tiles)."""
    return (math.ceil(layer.M / tiling.tm), math.ceil(layer.N / tiling.tn), math.ceil(layer.K / tiling.tk))


def tile_bytes(tile: tuple, layer: Layer, tiling: Tiling) -> int:
    """Bytes of a tile (edge tiles are smaller)."""
    def edge(index: int, size: int, full: int) -> int:
        return min(size, full - index * size)

    name = tile[0]
    rows_cols = {
        "dY": (edge(tile[1], tiling.tm, layer.M), edge(tile[2], tiling.tn, layer.N)),
        "W": (edge(tile[1], tiling.tk, layer.K), edge(tile[2], tiling.tn, layer.N)),
        "X": (edge(tile[1], tiling.tm, layer.M), edge(tile[2], tiling.tk, layer.K)),
        "dX": (edge(tile[1], tiling.tm, layer.M), edge(tile[2], tiling.tk, layer.K)),
        "dW": (edge(tile[1], tiling.tk, layer.K), edge(tile[2], tiling.tn, layer.N)),
        "Y": (edge(tile[1], tiling.tm, layer.M), edge(tile[2], tiling.tn, layer.N)),
    }[name]
    return rows_cols[0] * rows_cols[1] * layer.element_bytes


def step_shape(step: Step, layer: Layer, tiling: Tiling) -> tuple[int, int, int]:
    """(m, k, n) of the step's tile GEMM: dX = dY(tm x tn) · Wᵀ(tn x tk); dW = Xᵀ(tk x tm) · dY(tm x tn);
    Y = X(tm x tk) · W(tk x tn)."""
    tm = min(tiling.tm, layer.M - step.i * tiling.tm)
    tn = min(tiling.tn, layer.N - step.j * tiling.tn)
    tk = min(tiling.tk, layer.K - step.k * tiling.tk)
    return {"dx": (tm, tn, tk), "dw": (tk, tm, tn), "fw": (tm, tk, tn)}[step.kind]


def _order(order: str, irange, jrange, krange, part: int) -> list[Step]:
    dx = [Step("dx", i, j, k, part) for i in irange for k in krange for j in jrange]
    dw = [Step("dw", i, j, k, part) for k in krange for j in jrange for i in irange]
    if order == "baseline":
        return dx + dw
    if order == "dw-only":
        return dw
    if order == "forward":
        return [Step("fw", i, j, k, part) for i in irange for j in jrange for k in krange]
    if order == "interleave":
        return [s for pair in zip(dx, dw) for s in pair]
    if order == "dx-major":
        return [Step(kind, i, j, k, part) for i in irange for j in jrange for k in krange for kind in ("dx", "dw")]
    if order == "dw-major":
        return [Step(kind, i, j, k, part) for j in jrange for i in irange for k in krange for kind in ("dx", "dw")]
    raise ValueError(f"unknown order '{order}' (known: {', '.join(ORDERS + SINGLE_ORDERS)})")


def _split(count: int, parts: int) -> list[range]:
    """`count` tiles in `parts` contiguous blocks, as even as can be (empty blocks dropped)."""
    bounds = [round(p * count / parts) for p in range(parts + 1)]
    return [range(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


def schedule(layer: Layer, tiling: Tiling, order: str, scheme: str | None = None, parts: int = 1,
             cores: int = 1, baseline: str = "separate") -> list[list[Step]]:
    """The rounds of steps: one list per round, one step per busy core.

    `scheme` splits the GEMM into `parts` (None: no split); with ``cores > 1`` the parts
    run on the cores side by side (parts must equal cores), else one after another. The
    ``separate`` baseline on several cores runs the dX operator's rounds on every core,
    then the dW operator's (`BASELINES`); ``shared`` lets each core go on to its dW steps
    when its dX steps are done."""
    if baseline not in BASELINES:
        raise ValueError(f"unknown baseline '{baseline}' (known: {', '.join(BASELINES)})")
    mt, nt, kt = tile_counts(layer, tiling)
    ranges = {"M": range(mt), "N": range(nt), "K": range(kt)}
    if scheme is None or parts == 1:
        blocks = [dict(ranges)]
    else:
        dim = SPLIT_DIM[scheme]
        blocks = [{**ranges, dim: r} for r in _split(len(ranges[dim]), parts)]
    if cores == 1:
        steps = [s for b in blocks for s in _order(order, b["M"], b["N"], b["K"], 0)]
        return [[s] for s in steps]
    if len(blocks) > cores:
        raise ValueError(f"{len(blocks)} parts for {cores} cores")
    # Parts that split a reduction (M for dW, N for dX) accumulate separately per core.
    reduced = SPLIT_DIM.get(scheme or "", "")
    streams = []
    for p, b in enumerate(blocks):
        streams.append([
            Step(s.kind, s.i, s.j, s.k, p if (s.kind == "dw" and reduced == "M") or (s.kind == "dx" and reduced == "N")
                 or (s.kind == "fw" and reduced == "K") else 0)
            for s in _order(order, b["M"], b["N"], b["K"], 0)
        ])
    if order == "baseline" and baseline == "separate":
        return (_lockstep([[s for s in stream if s.kind == "dx"] for stream in streams])
                + _lockstep([[s for s in stream if s.kind == "dw"] for stream in streams]))
    return _lockstep(streams)


def _lockstep(streams: list[list[Step]]) -> list[list[Step]]:
    """Rounds taking the t-th step of every core's stream."""
    rounds = max((len(s) for s in streams), default=0)
    return [[s[t] for s in streams if t < len(s)] for t in range(rounds)]


def operator_starts(rounds: list[list[Step]], order: str, baseline: str = "separate") -> frozenset[int]:
    """The rounds that start an operator after another when the baseline's GEMMs are
    separate operators (`BASELINES`): each round whose step kinds differ from the
    previous round's; none for one walk (a fused order, or the ``shared`` baseline)."""
    if order != "baseline" or baseline != "separate":
        return frozenset()
    kinds = [{s.kind for s in steps} for steps in rounds]
    return frozenset(t for t in range(1, len(rounds)) if kinds[t] != kinds[t - 1])


# ---------------------------------------------------------------------------
# The scratchpad
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Transfer:
    """One DMA of a tile: ``load`` into the SPM before round `round` computes, or
    ``store`` out of it (a spilled partial before round `round`, or a finished output
    tile after round `round`, ``after``)."""

    round: int
    kind: str  # "load" | "store"
    tile: tuple
    nbytes: int
    partial: bool = False
    after: bool = False
    ready_round: int = -1
    """For a store: the round that last wrote the tile (its data is final when that
    round ends); -1 for a load."""


def plan_transfers(rounds: list[list[Step]], layer: Layer, tiling: Tiling, capacity: int,
                   policy: str = "lru", frees: bool = False, flush_before=frozenset()) -> list[Transfer]:
    """The DMAs a schedule needs with `capacity` bytes of resident tiles (see the module
    docstring); raises `ScratchpadError` when one round's tiles do not fit. `policy`
    picks the tile to evict: ``lru`` the least recently used, ``belady`` the one used
    farthest in the future. `flush_before` (`operator_starts`): the rounds that start
    another operator; the input tiles resident then are dropped (an operator does not
    inherit the previous one's; open partial sums stay, as any resident tile). With `frees`, the input tiles dropped without a
    DMA (evicted, flushed, or used for the last time at the end of round t: listed before
    round t+1's fill) are listed too, as ``kind = "free"`` (what a program needs,
    `irc.lowering.igo_to_npu`)."""
    if policy not in POLICIES:
        raise ValueError(f"unknown replacement policy '{policy}' (known: {', '.join(POLICIES)})")
    uses: dict[tuple, list[int]] = defaultdict(list)
    last_touch: dict[tuple, int] = {}
    parts_of: dict[tuple, set] = defaultdict(set)
    for t, steps in enumerate(rounds):
        for s in steps:
            for tile in (*s.inputs(), s.output()):
                if not uses[tile] or uses[tile][-1] != t:
                    uses[tile].append(t)
            last_touch[s.output()] = t
            parts_of[s.output()[:3]].add(s.output())
    cursor: dict[tuple, int] = defaultdict(int)
    resident: dict[tuple, int] = {}  # in order of last use (LRU first)
    spilled: set[tuple] = set()
    written_in: dict[tuple, int] = {}
    used = 0
    transfers: list[Transfer] = []

    def size(tile) -> int:
        return tile_bytes(tile[:3], layer, tiling)

    def next_use(tile, now) -> float:
        positions, c = uses[tile], cursor[tile]
        while c < len(positions) and positions[c] < now:
            c += 1
        cursor[tile] = c
        return positions[c] if c < len(positions) else math.inf

    for t, steps in enumerate(rounds):
        if t in flush_before:
            for tile in [x for x in resident if x[0] not in OUTPUTS]:
                used -= resident.pop(tile)
                if frees:
                    transfers.append(Transfer(t, "free", tile, size(tile)))
        needed = list(dict.fromkeys(x for s in steps for x in (*s.inputs(), s.output())))
        need_bytes = sum(size(x) for x in needed)
        if need_bytes > capacity:
            raise ScratchpadError(need_bytes, capacity)
        for tile in needed:
            if tile in resident:
                resident[tile] = resident.pop(tile)  # most recently used
                continue
            while used + size(tile) > capacity:
                candidates = (v for v in resident if v not in needed)
                if policy == "lru":
                    victim = next(candidates)
                else:
                    victim = max(candidates, key=lambda v: next_use(v, t))
                used -= resident.pop(victim)
                if frees and victim[0] not in OUTPUTS:
                    transfers.append(Transfer(t, "free", victim, size(victim)))
                if victim[0] in OUTPUTS:
                    # a partial sum needed again: written now, read back at its next use
                    transfers.append(Transfer(t, "store", victim, size(victim), partial=True,
                                              ready_round=written_in[victim]))
                    spilled.add(victim)
            resident[tile] = size(tile)
            used += size(tile)
            if tile[0] not in OUTPUTS:
                transfers.append(Transfer(t, "load", tile, size(tile)))
            elif tile in spilled:
                transfers.append(Transfer(t, "load", tile, size(tile), partial=True))
                spilled.discard(tile)
        for s in steps:
            written_in[s.output()] = t
        # Output tiles whose every partial is done: the partials are summed in the SPM
        # (spilled ones read back first) and the sum is written once.
        finished: set[tuple] = set()
        for out in [x for x in needed if x[0] in OUTPUTS and last_touch[x] == t]:
            if out[:3] in finished or any(last_touch[p] > t for p in parts_of[out[:3]]):
                continue
            finished.add(out[:3])  # once, however many of its partials this round wrote
            for partial in sorted(parts_of[out[:3]]):
                if partial in spilled:
                    transfers.append(Transfer(t, "load", partial, size(partial), partial=True, after=True))
                    spilled.discard(partial)
                elif partial in resident:
                    used -= resident.pop(partial)
            transfers.append(Transfer(t, "store", out[:3] + (0,), size(out), after=True, ready_round=t))
        for tile in [x for x in resident if x[0] not in OUTPUTS and next_use(x, t + 1) == math.inf]:
            used -= resident.pop(tile)
            if frees:
                transfers.append(Transfer(t + 1, "free", tile, size(tile)))
    return transfers


def simulate(rounds: list[list[Step]], layer: Layer, tiling: Tiling, device, policy: str = "lru",
             flush_before=frozenset()) -> Cost:
    """DRAM traffic per tensor and cycles of `rounds` on `device` (an `NpuDevice`);
    `flush_before`: `plan_transfers`'.

    One DMA queue at the device's DRAM bandwidth, in the order a program issues them
    (`queue`): round t-1's fill (the loads and spills round t needs) and then round
    t-2's write-back are issued while round t-1 computes. A DMA starts when the queue is
    free and (`timeline`) a load or reload once the round computing when it is issued
    has started (it fills the other half of the SPM, §2.2), a spill or store once the
    round that last wrote its tile has ended. Round t computes once round t-1 has ended
    and its fill is done; what the DMA cannot hide is stall."""
    capacity = device.spm_bytes // 2
    transfers = plan_transfers(rounds, layer, tiling, capacity, policy, flush_before=flush_before)
    cost = Cost()
    for tr in transfers:
        (cost.read if tr.kind == "load" else cost.written)[tr.tile[0]] += tr.nbytes
    computes = [max(device.gemm_cycles(*step_shape(s, layer, tiling)) for s in steps) for steps in rounds]
    end, _ = timeline(queue(transfers, len(rounds)), computes, device.dram_cycles)
    cost.compute_cycles = sum(computes)
    cost.steps = sum(len(steps) for steps in rounds)
    cost.stall_cycles = end - cost.compute_cycles
    return cost


def queue(transfers: list[Transfer], rounds: int) -> list[tuple[str, int, Transfer | None]]:
    """The program order of a schedule's DMAs and rounds: ``("dma", t, transfer)`` and
    ``("round", t, None)``; round t's fill comes before it, round t-1's write-back (the
    ``after`` transfers of round t-1) right after that fill."""
    before, after = defaultdict(list), defaultdict(list)
    for tr in transfers:
        (after if tr.after else before)[tr.round].append(tr)
    order: list[tuple[str, int, Transfer | None]] = []
    for t in range(rounds + 1):
        order += [("dma", t, tr) for tr in before[t]]
        order += [("dma", t - 1, tr) for tr in after[t - 1]]
        if t < rounds:
            order.append(("round", t, None))
    return order


def timeline(order, computes: list[float], dram_cycles) -> tuple[float, list[tuple[float, float]]]:
    """The end time of `order` (see `queue`) and each round's (start, end): the timing
    rules of `simulate`, which the NPU interpreter follows op by op."""
    spans: list[tuple[float, float]] = []
    dma_free = 0.0
    fill_done = 0.0  # the fill of the next round
    current = -1
    for kind, t, tr in order:
        if kind == "round":
            start = max(spans[-1][1] if spans else 0.0, fill_done)
            spans.append((start, start + computes[t]))
            fill_done, current = 0.0, t
            continue
        if tr.kind == "free":
            continue
        if tr.kind == "load":
            earliest = spans[current][0] if current >= 0 else 0.0
        else:
            earliest = spans[tr.ready_round][1]
        dma_free = max(dma_free, earliest) + dram_cycles(tr.nbytes)
        if not tr.after:
            fill_done = dma_free
    return max(spans[-1][1] if spans else 0.0, dma_free), spans


def default_tiling(layer: Layer, device) -> Tiling:
    """Tiles of the array's size times the largest power of two for which one fused
    step's five tiles (dY, X, W, dX, dW) on every core take at most a quarter of the
    resident half of the SPM, leaving the rest for reuse; clipped to the layer. The same tiles serve
    every order, so orders differ only in the order of the steps. A scratchpad too small
    for one round of array-sized tiles (every core's step: its two inputs and its
    output tile) gets smaller tiles, the largest dimension halved first, down to 1x1x1
    (`ScratchpadError` then names the bytes even the smallest tile needs)."""
    capacity = device.spm_bytes // 2
    tiling = _array_tiling(layer, device, capacity)
    dims = [tiling.tm, tiling.tk, tiling.tn]
    round_bytes = lambda tm, tk, tn: device.cores * (tm * tn + tk * tn + tm * tk) * layer.element_bytes  # noqa: E731
    while round_bytes(*dims) > capacity and max(dims) > 1:
        largest = dims.index(max(dims))
        dims[largest] = -(-dims[largest] // 2)
    return Tiling(*dims)


def _array_tiling(layer: Layer, device, capacity: int) -> Tiling:
    scale = 1
    while True:
        bigger = scale * 2
        tm, tk, tn = (min(layer.M, device.pe_rows * bigger), min(layer.K, device.pe_rows * bigger),
                      min(layer.N, device.pe_cols * bigger))
        step = (tm * tn + 2 * tk * tn + 2 * tm * tk) * layer.element_bytes * device.cores
        if step > capacity // 4 or (tm, tk, tn) == (min(layer.M, device.pe_rows * scale),
                                                     min(layer.K, device.pe_rows * scale),
                                                     min(layer.N, device.pe_cols * scale)):
            break
        scale = bigger
    return Tiling(min(layer.M, device.pe_rows * scale), min(layer.K, device.pe_rows * scale),
                  min(layer.N, device.pe_cols * scale))


def evaluate(layer: Layer, device, order: str, scheme: str | None = None, parts: int | None = None,
             tiling: Tiling | None = None, policy: str = "lru", baseline: str = "separate") -> Cost:
    """The cost of the layer's backward pass in `order` (and partition `scheme` into
    `parts`, default the device's cores) on `device`; `baseline` (`BASELINES`) says what
    order ``baseline`` keeps between its two GEMMs."""
    tiling = tiling or default_tiling(layer, device)
    cores = device.cores
    if parts is None:
        parts = cores if scheme is not None else 1
    if cores > 1 and scheme is None:
        scheme, parts = "weight-sharing", cores  # data parallel: the batch split over the cores
    rounds = schedule(layer, tiling, order, scheme, parts, cores, baseline)
    try:
        return simulate(rounds, layer, tiling, device, policy, operator_starts(rounds, order, baseline))
    except ScratchpadError as error:
        raise ScratchpadError(error.needed, error.available) from None


def paper_order(layer: Layer) -> str:
    """Algorithm 1 as printed: ``interleave`` when max(M,N,K)/min(M,N,K) < 4, else
    ``dw-major`` when K > N and K > M, else ``dx-major``.

    Where the prose and the listing disagree: the prose picks dX-major "when the size of
    dX is larger than the size of dW" (M·K > K·N, i.e. M > N) and dW-major "when the
    column dimension of dW significantly surpasses the row dimension" (N > K); the
    listing tests K against both M and N. The prose also calls the five tensors nearly
    square, the listing only compares M, N and K. This function follows the listing."""
    dims = (layer.M, layer.N, layer.K)
    if max(dims) / min(dims) < 4:
        return "interleave"
    if layer.K > layer.N and layer.K > layer.M:
        return "dw-major"
    return "dx-major"


def cheapest(costs: dict, options) -> object:
    """The option of `costs` priced lowest: fewest cycles, then fewest DRAM bytes, then
    the first in `options` (the one rule `igo-fuse` and `benchmarks/igo.py` choose by)."""
    options = list(options)
    return min(options, key=lambda o: (costs[o].cycles, costs[o].dram_bytes, options.index(o)))


def best_order(layer: Layer, device, tiling: Tiling | None = None, policy: str = "lru") -> tuple[str, dict[str, Cost]]:
    """The fused order the cost model prices lowest (§4.3: the three fused orders only;
    ties: the first of FUSED_ORDERS)."""
    costs = {o: evaluate(layer, device, o, tiling=tiling, policy=policy) for o in FUSED_ORDERS}
    return cheapest(costs, FUSED_ORDERS), costs


def partition_options(device) -> list[tuple[str, int]]:
    """The (scheme, parts) `best_partition` prices: on a multi-core device the parts are
    the cores; on one core, 1 (no split), 2 or 4 parts run one after another."""
    parts_options = (device.cores,) if device.cores > 1 else (1, 2, 4)
    return [(scheme, parts) for parts in parts_options for scheme in SCHEMES
            if not (parts == 1 and scheme != SCHEMES[0])]


def best_partition(layer: Layer, device, order: str, tiling: Tiling | None = None,
                   parts_options: tuple[int, ...] | None = None, policy: str = "lru",
                   baseline: str = "separate") -> tuple[tuple[str, int], dict]:
    """The partition (scheme, parts) the cost model prices lowest for `order`
    (`partition_options`, or the given `parts_options`; `baseline` when `order` is the
    baseline)."""
    options = partition_options(device) if parts_options is None else [
        (scheme, parts) for parts in parts_options for scheme in SCHEMES if not (parts == 1 and scheme != SCHEMES[0])]
    costs = {(scheme, parts): evaluate(layer, device, order, scheme if parts > 1 or device.cores > 1 else None,
                                       parts, tiling, policy, baseline)
             for scheme, parts in options}
    return cheapest(costs, options), costs
