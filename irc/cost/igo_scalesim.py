"""SCALE-Sim 3's memory model, ``memory=scalesim`` (IGO §6.1: "We develop a cycle-level
simulator for DNN training on NPUs, building upon SCALE-Sim"). Pure functions; no IR.

SCALE-Sim gives a systolic array three SRAMs, each double-buffered: ifmap (the left
operand), filter (the right one) and ofmap (the output). Here each is a third of a core's
scratchpad, in whole KB of elements (SCALE-Sim counts one word per element; its buffer
sizes are KB of words). A GEMM ``ifmap(M x K) · filter(K x N)`` runs fold by fold in
SCALE-Sim's order: output-stationary ``for each R-col fold of N: for each R-row fold of
M``, the fold reading an R-row strip of ifmap and a C-col strip of filter over all of K;
weight-stationary ``for each C-col fold of N: for each R-row fold of K``, reading an
R-col strip of ifmap over all of M and one R x C block of filter, and writing every
fold's M x C partial sums.

Its DRAM request stream (its default "CALC" interface, `ReadBuffer`): a read buffer is
100 sets of ``floor(words / 100)`` elements, half active, half prefetching; the elements
the array asks for, in the order it asks, go into the current set unless already in the
active half's sets; when 50 sets have filled, they are fetched from DRAM and the next
half starts empty. So DRAM reads are the elements that are new within their window of
50 sets' worth of distinct elements; an element read again after the window moved on is
read again. Every output element the array emits is written (os: once; ws: once per
fold of K). `gemm_traffic` reproduces SCALE-Sim 3.0.0's DRAM reads and writes per GEMM
exactly (tests/cost/test_igo_scalesim.py, against figures the real package computed:
benchmarks/scalesim_reference.py).

A backward pass on this model (`simulate`; `irc.planner.igo.scalesim_search` picks its tiles): the baseline is SCALE-Sim's two layers,
``dX = dY · Wᵀ`` and ``dW = Xᵀ · dY``, each a whole GEMM with fresh buffers (dY is the
first's ifmap and the second's filter, read by both). A fused order is one operator
whose tile GEMMs (`irc.cost.igo_sim` schedules, each tile GEMM in SCALE-Sim's fold
order) stream through the same three buffers, its dW computed as ``dWᵀ = dYᵀ · X`` so that
dY is the ifmap of both GEMMs and a dY element the dW step asks for is a hit while its
dX read is in the same window. Where the fused orders' fold strips of dY cross (dX reads
dY by rows, dWᵀ by columns) the buffer tracks R x R cells of dY, each an interval of its
elements in a fixed order (exact for the whole GEMMs, where every strip is its own
cell). Partial sums are written as SCALE-Sim writes outputs (every tile GEMM its own),
never read back, as SCALE-Sim's weight-stationary folds are. Time: the array's cycles
(`irc.cost.igo_array`) with each tile GEMM's reads fetched while the previous one
computes and its writes drained after it, on one DMA queue at the DRAM bandwidth."""

from __future__ import annotations

import dataclasses
import math
from bisect import bisect_right
from dataclasses import dataclass, field

from irc.cost.igo_sim import FUSED_ORDERS, Cost, Layer, Rounds, Tiling, array_work, schedule

SETS = 100
ACTIVE_SETS = 50


def buffer_words(device, element_bytes: int) -> int:
    """Words (elements) of each of SCALE-Sim's three buffers on one core of `device`: a
    third of its scratchpad, in whole KB of elements."""
    return device.spm_bytes_per_core // 3 // element_bytes // 1024 * 1024


class ReadBuffer:
    """SCALE-Sim 3's read buffer in its estimate-bandwidth (CALC) mode, over atoms: each
    atom a run of distinct elements always asked for in the same order, tracked as the
    interval of its positions seen in the current window (see the module docstring)."""

    def __init__(self, words: int):
        per_set = words // SETS
        self.window = ACTIVE_SETS * per_set if per_set else math.inf
        self.count = 0
        self.seen: dict = {}
        self.reads = 0

    def visit(self, atom, size: int) -> int:
        """Ask for every element of `atom` (`size` of them) in order; the DRAM reads it takes."""
        before = self.reads
        position = 0
        while position < size:
            low, high = self.seen.get(atom, (0, 0))
            if low <= position < high:
                position = high
                continue
            end = low if position < low else size
            new = end - position
            room = self.window - self.count
            if new < room:
                self.count += new
                self.reads += new
                self.seen[atom] = (min(low, position), max(high, end)) if high > low else (position, end)
                position = end
            else:  # the window fills at the room-th new element: a new window starts after it
                self.reads += room
                self.count = 0
                self.seen.clear()
                position += room
        return self.reads - before


def _triangle(count: int) -> int:
    return count * (count + 1) // 2


class _Fold:
    """The output elements a fold emits: `rows` x `cols` of them on a skewed diagonal,
    line l of the fold holding those with row + col = l, in column order."""

    def __init__(self, rows: int, cols: int):
        self.rows, self.cols = rows, cols
        self.lines = rows + cols - 1
        self.total = rows * cols
        self.low = min(rows, cols)

    def before(self, line: int) -> int:
        """Elements in the fold's lines before `line`."""
        if line <= self.low:
            return _triangle(line)
        if line <= self.lines - self.low:
            return _triangle(self.low) + (line - self.low) * self.low
        return self.total - _triangle(self.lines - line)

    def line_of(self, element: int) -> int:
        """The line holding the fold's `element`-th output (0-based)."""
        low, high = 0, self.lines - 1
        while low < high:
            middle = (low + high + 1) // 2
            if self.before(middle) <= element:
                low = middle
            else:
                high = middle - 1
        return low


class WriteBuffer:
    """SCALE-Sim 3's ofmap write buffer in its estimate-bandwidth mode: outputs fill
    request lines of `width` (the array's columns); once more than the drain half holds
    is buffered and the previous drain is over, the line being filled is closed and a
    drain of ``ceil(drain half / width)`` lines starts, writing each line whole but for
    the unused slots of its last one (the padding of a line closed early and drained
    before the last is written too: SCALE-Sim's count). Cycles: one demand line a cycle;
    a drain of n lines ends n - 1 cycles after it starts. `fold` takes the outputs of
    one fold event by event (a drain, or a stall when the buffer is full while draining),
    not element by element."""

    def __init__(self, words: int, width: int):
        self.total = words
        self.active = math.ceil(words * 0.5)
        self.batch = math.ceil((words - self.active) / width)
        self.width = width
        self.free = words
        self.filling = 0          # outputs in the line being filled
        self.pending: list[list[int]] = []  # runs [outputs per line, lines] not yet drained
        self.drain_end = 0
        self.stall = 0            # cycles the array has stalled on a full buffer
        self.writes = 0

    def _push(self, outputs: int, lines: int = 1) -> None:
        if lines <= 0:
            return
        if self.pending and self.pending[-1][0] == outputs:
            self.pending[-1][1] += lines
        else:
            self.pending.append([outputs, lines])

    def _store(self, count: int) -> None:
        """`count` outputs into the line being filled (closing the full ones)."""
        self.free -= count
        filled = self.filling + count
        self._push(self.width, filled // self.width)
        self.filling = filled % self.width

    def _drain(self, cycle: int) -> int:
        if self.filling:
            self._push(self.filling)
            self.filling = 0
        taken, last = 0, 0
        while taken < self.batch and self.pending:
            run = self.pending[0]
            use = min(run[1], self.batch - taken)
            taken, last = taken + use, run[0]
            run[1] -= use
            if not run[1]:
                self.pending.pop(0)
        written = (taken - 1) * self.width + last
        self.writes += written
        self.free += written
        return cycle + taken - 1

    def fold(self, first_line: int, rows: int, cols: int) -> None:
        """The outputs of one fold, its first output line being the demand's `first_line`."""
        fold = _Fold(rows, cols)
        done = 0
        while done < fold.total:
            left = fold.total - done
            if self.free - left >= self.active:  # no drain and no stall in the rest of the fold
                self._store(left)
                return
            # the first output after which fewer than `active` slots are free, and the first
            # at or after the end of the drain in progress: a drain starts at the later one
            by_space = done + max(self.free - self.active, 0)
            late = self.drain_end - self.stall - first_line
            by_time = fold.before(max(0, min(late, fold.lines))) if late > 0 else 0
            full = done + self.free - 1  # the output that fills the buffer
            start = max(by_space, by_time, done)
            if full < start:  # full while a drain is in progress: the array stalls
                line = fold.line_of(full)
                self._store(full - done + 1)
                cycle = first_line + line + self.stall
                waited = self.drain_end - cycle
                self.stall += waited
                # the rest of the line comes at the drain's end: the next output drains
                done = full + 1
                if done < fold.total and fold.line_of(done) == line:
                    self._store(1)
                    self.drain_end = self._drain(self.drain_end)
                    done += 1
                continue
            if start >= fold.total:
                self._store(fold.total - done)
                return
            self._store(start - done + 1)
            self.drain_end = self._drain(first_line + fold.line_of(start) + self.stall)
            done = start + 1

    def finish(self, cycle: int) -> None:
        """Drain everything left (SCALE-Sim's last drains)."""
        if self.filling:
            self._push(self.filling)
            self.filling = 0
        while self.pending:
            cycle = self._drain(cycle) + 1


@dataclass(frozen=True)
class GemmTraffic:
    """SCALE-Sim's DRAM traffic of one GEMM, in elements."""

    ifmap_reads: int
    filter_reads: int
    ofmap_writes: int


def _folds(extent: int, size: int) -> list[tuple[int, int]]:
    return [(start, min(start + size, extent)) for start in range(0, extent, size)]


def gemm_traffic(m: int, k: int, n: int, rows: int, cols: int, dataflow: str, words: int) -> GemmTraffic:
    """SCALE-Sim 3's DRAM reads and writes for ``ifmap(m x k) · filter(k x n)`` on a
    `rows` x `cols` array with three buffers of `words` elements (one layer, fresh
    buffers)."""
    ifmap, weights, out = ReadBuffer(words), ReadBuffer(words), WriteBuffer(words, cols)
    line = 0
    if dataflow == "os":
        per_fold = k + rows + cols - 2  # demand lines a fold takes: its compute cycles
        for c0, c1 in _folds(n, cols):
            for r0, r1 in _folds(m, rows):
                ifmap.visit(("row", r0), (r1 - r0) * k)
                weights.visit(("col", c0), k * (c1 - c0))
                # outputs drain from the bottom row up, after the reduction streams through
                out.fold(line + k - 1 + rows - (r1 - r0), r1 - r0, c1 - c0)
                line += per_fold
    else:
        per_fold = 2 * rows + m + cols - 2
        for c0, c1 in _folds(n, cols):
            for r0, r1 in _folds(k, rows):
                ifmap.visit(("col", r0), m * (r1 - r0))
                weights.visit(("block", r0, c0), (r1 - r0) * (c1 - c0))
                out.fold(line + 2 * rows - 1, m, c1 - c0)
                line += per_fold
    out.finish(line - 1 + out.stall)
    return GemmTraffic(ifmap.reads, weights.reads, out.writes)


# ---------------------------------------------------------------------------
# A backward pass on SCALE-Sim's buffers
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Operand:
    """A tile GEMM's operand: `tensor`'s block ``rows x cols`` (in the tensor's own
    coordinates), read transposed when `transposed` (rows of the operand are the
    tensor's columns)."""

    tensor: str
    rows: tuple[int, int]
    cols: tuple[int, int]
    transposed: bool = False


def _operands(kind: str, i: int, j: int, k: int, layer: Layer, tiling: Tiling, fused: bool):
    """(ifmap, filter, output tensor, M', K', N') of a step as SCALE-Sim runs it: dX =
    dY · Wᵀ; dW = Xᵀ · dY (the baseline's layer) or dWᵀ = dYᵀ · X (a fused operator's)."""
    m = (i * tiling.tm, min((i + 1) * tiling.tm, layer.M))
    n = (j * tiling.tn, min((j + 1) * tiling.tn, layer.N))
    kk = (k * tiling.tk, min((k + 1) * tiling.tk, layer.K))
    size = lambda span: span[1] - span[0]  # noqa: E731
    if kind == "dx":
        return Operand("dY", m, n), Operand("W", kk, n, True), "dX", size(m), size(n), size(kk)
    if kind == "fw":
        return Operand("X", m, kk), Operand("W", kk, n), "Y", size(m), size(kk), size(n)
    if fused:
        return Operand("dY", m, n, True), Operand("X", m, kk), "dW", size(n), size(m), size(kk)
    return Operand("X", m, kk, True), Operand("dY", m, n), "dW", size(kk), size(m), size(n)


@dataclass
class _Buffers:
    """One core's three buffers and the cuts each tensor's cells are tracked in (the
    boundaries of every strip the operator reads of it)."""

    words: int
    rows: int
    cols: int
    dataflow: str
    ifmap: ReadBuffer = field(init=False)
    filter: ReadBuffer = field(init=False)
    cuts: dict = field(default_factory=dict)
    cells: dict = field(default_factory=dict)

    def __post_init__(self):
        self.reset()

    def reset(self):
        self.ifmap, self.filter = ReadBuffer(self.words), ReadBuffer(self.words)

    def read(self, buffer: ReadBuffer, strip: Operand, time_on_rows: bool) -> int:
        """Ask for a strip cell by cell along its time axis (the operand's rows when
        `time_on_rows`, else its columns); the DRAM reads it takes."""
        cells = self.cells.get((strip, time_on_rows))
        if cells is None:
            row_cuts, col_cuts = self.cuts[strip.tensor]
            rows, cols = _cells(strip.rows, row_cuts), _cells(strip.cols, col_cuts)
            pairs = [(r, c) for r in rows for c in cols] if time_on_rows != strip.transposed else \
                [(r, c) for c in cols for r in rows]
            cells = self.cells[(strip, time_on_rows)] = [((strip.tensor, r, c), (r[1] - r[0]) * (c[1] - c[0]))
                                                         for r, c in pairs]
        seen, total = buffer.seen, 0
        for atom, size in cells:
            if seen.get(atom) != (0, size):  # not every element a hit already
                total += buffer.visit(atom, size)
        return total


def _spans(start: int, stop: int, width: int) -> list[tuple[int, int]]:
    return [(a, min(a + width, stop)) for a in range(start, stop, width)]


def _cells(span: tuple[int, int], cuts: list[int]) -> list[tuple[int, int]]:
    """`span` cut at the sorted `cuts` inside it."""
    inner = cuts[bisect_right(cuts, span[0]):bisect_right(cuts, span[1] - 1)]
    points = [span[0], *inner, span[1]]
    return list(zip(points, points[1:]))


def strips(operand: Operand, of_rows: bool, width: int) -> list[Operand]:
    """The operand's `width`-wide strips: of its rows when `of_rows`, else of its columns
    (each the whole other way)."""
    if of_rows != operand.transposed:  # strips of the tensor's rows
        return [Operand(operand.tensor, span, operand.cols, operand.transposed)
                for span in _spans(*operand.rows, width)]
    return [Operand(operand.tensor, operand.rows, span, operand.transposed) for span in _spans(*operand.cols, width)]


def block(operand: Operand, rows: tuple[int, int], cols: tuple[int, int]) -> Operand:
    """The operand's block at its `rows` x `cols` (offsets into the operand)."""
    tensor_rows, tensor_cols = (cols, rows) if operand.transposed else (rows, cols)
    return Operand(operand.tensor, (operand.rows[0] + tensor_rows[0], operand.rows[0] + tensor_rows[1]),
                   (operand.cols[0] + tensor_cols[0], operand.cols[0] + tensor_cols[1]), operand.transposed)


def folds_of(a: Operand, b: Operand, m: int, k: int, n: int, rows: int, cols: int, dataflow: str):
    """A tile GEMM's folds in SCALE-Sim's order: per fold its ifmap strip, its filter
    strip or block, the line (from the fold's start) its first output drains at, its
    outputs (rows, columns) and the demand lines it takes."""
    if dataflow == "os":
        left, right = strips(a, True, rows), strips(b, False, cols)
        return [(x, y, k - 1 + rows - (x_rows := _span(x, a, True)), x_rows, _span(y, b, False), k + rows + cols - 2)
                for y in right for x in left]
    left = strips(a, False, rows)
    return [(x, block(b, (r * rows, min(r * rows + rows, k)), (c0, c1)), 2 * rows - 1, m, c1 - c0,
             2 * rows + m + cols - 2)
            for c0, c1 in _folds(n, cols) for r, x in enumerate(left)]


def _span(strip: Operand, operand: Operand, of_rows: bool) -> int:
    """How many of the operand's rows (`of_rows`) or columns a strip of it covers."""
    tensor_rows = of_rows != operand.transposed
    span = strip.rows if tensor_rows else strip.cols
    return span[1] - span[0]


def _prepare(layer: Layer, tiling: Tiling, device, order: str, scheme, parts: int):
    """A schedule on SCALE-Sim's buffers: its rounds, steps, each step's operands and
    folds, and each core's buffers with the cuts of every strip its steps read."""
    rounds = Rounds.of(schedule(layer, tiling, order, scheme, parts, device.cores, "separate", device.dataflow))
    fused = order in FUSED_ORDERS
    steps = [step for t in range(len(rounds)) for step in rounds[t]]
    plans = [_operands(s.kind, s.i, s.j, s.k, layer, tiling, fused) for s in steps]
    rows, cols, dataflow = device.pe_rows, device.pe_cols, device.dataflow
    folds = [folds_of(a, b, m, k, n, rows, cols, dataflow) for a, b, _, m, k, n in plans]
    cuts: dict[int, dict[str, tuple[set, set]]] = {}
    for step, fold_list in zip(steps, folds):
        mine = cuts.setdefault(step.core, {})
        for strip in (x for fold in fold_list for x in fold[:2]):
            row_cuts, col_cuts = mine.setdefault(strip.tensor, (set(), set()))
            row_cuts.update(strip.rows)
            col_cuts.update(strip.cols)
    words = buffer_words(device, layer.element_bytes)
    buffers = {core: _Buffers(words, rows, cols, dataflow, {t: (sorted(r), sorted(c)) for t, (r, c) in mine.items()})
               for core, mine in cuts.items()}
    return rounds, fused, steps, plans, folds, buffers


def _run_step(buffer: _Buffers, writes: list, folds: list, kind: str, dy_once, cost: Cost, eb: int,
              dy_bytes: int = 0) -> int:
    """One tile GEMM's folds through its core's buffers: the reads it adds to `cost`,
    its outputs into the write buffer (``[buffer, demand line, outputs]``); the bytes read.
    ``dy_once``: True, the dW GEMM's dY comes free (Fig. 6); ``"once"``, dY's reads past
    its size (``dy_bytes``) come free (each dY byte read once, in any order)."""
    loaded = 0
    free_dy = dy_once is True and kind == "dw"  # Fig. 6: the dW GEMM's dY comes free
    for left, right, first, out_rows, out_cols, lines in folds:
        got = buffer.read(buffer.ifmap, left, buffer.dataflow == "ws")
        taken = buffer.read(buffer.filter, right, True)
        if free_dy:
            got, taken = (0 if left.tensor == "dY" else got), (0 if right.tensor == "dY" else taken)
        elif dy_once == "once":
            room = max(0, dy_bytes - cost.read["dY"]) // eb   # dY words still to read once
            if left.tensor == "dY":
                got = min(got, room)
            elif right.tensor == "dY":
                taken = min(taken, room)
        cost.read[left.tensor] += got * eb
        cost.read[right.tensor] += taken * eb
        loaded += (got + taken) * eb
        writes[0].fold(writes[1] + first, out_rows, out_cols)
        writes[1] += lines
        writes[2] += out_rows * out_cols
    return loaded


def simulate(layer: Layer, tiling: Tiling, device, order: str, scheme, parts: int, dy_once: bool | str = False,
             bound: float = math.inf) -> Cost | None:
    """The cost of `order` on SCALE-Sim's buffers with `tiling` (see the module
    docstring); None once it cannot beat `bound` cycles."""
    rounds, fused, steps, plans, folds, buffers = _prepare(layer, tiling, device, order, scheme, parts)
    computes, array_cycles, fresh = array_work(rounds, layer, tiling, device)
    words, cols = buffer_words(device, layer.element_bytes), device.pe_cols
    out = {core: [WriteBuffer(words, cols), 0, 0] for core in buffers}  # buffer, demand line, outputs
    starts = rounds.starts.tolist()
    cost = Cost(tiling=tiling, array_cycles=array_cycles, fresh_folds=fresh)
    rate, eb = device.dram_bytes_per_cycle, layer.element_bytes
    still = sum(computes)
    spans: list[tuple[float, float]] = []
    dma_free, pending, last_output = 0.0, 0, "dX"

    def finish() -> int:
        """Drain the write buffers (SCALE-Sim's layer end); the bytes its drains add."""
        extra = 0
        for core, (buffer, line, emitted) in out.items():
            buffer.finish(line - 1 + buffer.stall)
            extra += (buffer.writes - emitted) * eb
            out[core] = [WriteBuffer(words, cols), 0, 0]
        cost.written[last_output] += extra
        return extra

    for t in range(len(rounds)):
        if t and not fused and steps[starts[t]].kind != steps[starts[t] - 1].kind:
            pending += finish()  # the next layer: fresh buffers
            for buffer in buffers.values():
                buffer.reset()
        loaded = emitted = 0
        for s in range(starts[t], starts[t + 1]):
            loaded += _run_step(buffers[steps[s].core], out[steps[s].core], folds[s], steps[s].kind, dy_once, cost, eb,
                                layer.M * layer.N * eb)
            outputs = sum(fold[3] * fold[4] for fold in folds[s]) * eb
            cost.written[plans[s][2]] += outputs
            emitted += outputs
            last_output = plans[s][2]
        # this round's reads, then the previous round's writes, on one DMA queue
        dma_free = max(dma_free, spans[-1][0] if spans else 0.0) + loaded / rate
        fill_done = dma_free
        if pending:
            dma_free = max(dma_free, spans[-1][1]) + pending / rate
        start = max(spans[-1][1] if spans else 0.0, fill_done)
        spans.append((start, start + computes[t]))
        still -= computes[t]
        pending = emitted
        if max(start + computes[t] + still, dma_free) > bound * (1 + 1e-12) + 1e-9:
            return None
    pending += finish()
    if pending:
        dma_free = max(dma_free, spans[-1][1]) + pending / rate
    cost.compute_cycles = sum(computes)
    cost.steps = len(steps)
    cost.stall_cycles = max(spans[-1][1] if spans else 0.0, dma_free) - cost.compute_cycles
    return cost


def whole_tiling(layer: Layer, scheme, parts: int) -> Tiling:
    """Tiles as SCALE-Sim runs a layer: the whole GEMM, or one part of the split."""
    tiling = Tiling(layer.M, layer.K, layer.N)
    if scheme is None or parts == 1:
        return tiling
    dim = {"weight-sharing": "tm", "dy-sharing": "tn", "ifmap-sharing": "tk"}[scheme]
    extent = {"tm": layer.M, "tn": layer.N, "tk": layer.K}[dim]
    return dataclasses.replace(tiling, **{dim: -(-extent // parts)})
