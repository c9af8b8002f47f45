"""The reference chip: every core's SRAM as numpy state, and a timeline (DESIGN.md s5).

State is vectorised across cores: a buffer is one array whose leading axis is the core
(``(cores, *partition_shape)``), so every instruction is a handful of numpy calls over
all cores at once, never a Python loop over cores. Each instruction acts on the core set
``[0, n)``; per-core differences (where a tile starts, which ring neighbour to receive
from) are tables indexed by the core id.

Numerics: buffers store their element type. A sub-task computes in f32 for f16 and f32
data (in f64 for f64, in int64 for integers) and adds into the stored result in that
precision. An output whose plan leaves partial sums is an f32 accumulator (i32 for
narrower integers; the lowering allocates it so) through every step and the cross-core
reduction, and ``reduce`` rounds it to the output's type once, in place: as the IPU's
AMP units accumulate f16 products in f32, and as the te level computes (f32, one
rounding). So a device result differs from te's only by the order of the f32 additions
before that one rounding.

Checks (``ChipFault`` names the instruction, its source location, the core and the
buffer): SRAM bounds and overlapping live buffers, capacity, a window outside its buffer,
a shift from or to a core without the buffer, reading a buffer a core never wrote (a
receive buffer holds nothing readable after the shift that used it).

A loop nest's compute steps, shifts and syncs run at once as a batched block product
where they form one (``irc.interpreter.loops``), with the same results, checks and
timeline as one instruction at a time.

Time: the chip is bulk synchronous, so chip time is the sum of its instructions' times.
Each instruction is timed with the same ``irc.cost`` functions the planner used
(``compute_cycles``, ``shift_cycles``, ``sync_cycles``, and ``op_time(...).reduction``
for the output shuffle), so a kernel's interpreted time equals its planned time. Host
transfers (``load``/``store``) are priced at the device's link bandwidth and reported
separately: the planner prices kernels, not the host round trips between them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

try:
    import resource   # POSIX only: the peak resident memory the report states
except ImportError:   # not on every platform
    resource = None

import numpy as np
from xdsl.interpreter import InterpretationError

from irc.cost import DEFAULT_COST_MODEL, CostModel, CostModelError, OpWork, SubTask, get_cost_model
from irc.devices import Device, load_device
from irc.devices.topology import (
    exchange_bytes,
    on_mesh,
    operator_contention,
    paced_preload,
    preload_yield,
    preload_pressure,
    preload_seconds,
)
from irc.dialects.te_expr import IndirectIndex, TensorExpr, gather_parts
from irc.interpreter import numerics
# The step's product, the host's tiles and the report are modules of their own; their
# public names are re-exported here, where the interpreter's users import them.
from irc.interpreter.contract import CORE_AXIS, contract, local_expression, only_sum  # noqa: F401
from irc.interpreter.host_tiles import gather_distinct_tiles, gather_tiles, scatter_tiles  # noqa: F401
from irc.interpreter.offchip import PreloadFlow, preload_link_rates
from irc.interpreter.report import CATEGORIES, Event, Report  # noqa: F401
from irc.interpreter.te_eval import compute_dtype, evaluate


class ChipFault(InterpretationError):
    """An illegal access during execution, in IR terms."""


@dataclass
class Buffer:
    """One SRAM buffer allocated at the same offset on cores ``[0, cores)``."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    cores: int
    offset: int
    stored: np.ndarray            # ``data``, or with ``copies`` its distinct rows
    written: np.ndarray           # (cores,) bool
    tags: np.ndarray | None = None  # (cores,) content ids: equal ids hold equal data
    live: bool = True
    version: int = 0                # bumped by every write
    shadow: np.ndarray | None = None  # the data in the compute dtype, for ``shadow_version``
    shadow_version: int = -1
    last_read_version: int = -1
    copies: np.ndarray | None = None  # (cores,): the row of ``stored`` each core holds

    @property
    def data(self) -> np.ndarray:
        """(cores, *shape): every core's data. A replicated load keeps each distinct tile
        once (``stored``, ``copies``) until something reads the data whole: a batched
        loop reads its windows from the distinct tiles (``rows``), and seed 003's B, held
        twice over 1,472 cores, is then never copied (315 MB of f16 per run)."""
        if self.copies is not None:
            self.stored, self.copies = self.stored[self.copies], None
        return self.stored

    @data.setter
    def data(self, value: np.ndarray) -> None:
        self.stored, self.copies = value, None

    def rows(self, cores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The data as stored, and the row of it that each of ``cores`` holds."""
        return self.stored, (cores if self.copies is None else self.copies[cores])

    def touch(self) -> None:
        self.version += 1
        self.shadow = None

    def computed(self, work: np.dtype) -> np.ndarray | None:
        """The data converted to ``work``, cached while unchanged: built on the second read
        of one version (a buffer read once per write is converted window by window)."""
        if self.dtype == work:
            return self.data
        if self.shadow is not None and self.shadow_version == self.version and self.shadow.dtype == work:
            return self.shadow
        if self.last_read_version == self.version:
            self.shadow, self.shadow_version = self.data.astype(work), self.version
            return self.shadow
        self.last_read_version = self.version
        return None

    @property
    def bytes(self) -> int:
        return int(math.prod(self.shape)) * self.dtype.itemsize


def _peak_resident_bytes() -> int:
    """This process's peak resident memory (Linux reports it in KiB)."""
    if resource is None:
        return 0
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def op_dtype(buffer_dtype: np.dtype, dtype_bytes: int) -> np.dtype:
    """The op's own element type, of ``dtype_bytes`` bytes, whose partial results a
    buffer of ``buffer_dtype`` accumulates (the buffer's type when they are as wide)."""
    buffer_dtype = np.dtype(buffer_dtype)
    if int(dtype_bytes) == buffer_dtype.itemsize or buffer_dtype.kind not in "fiu":
        return buffer_dtype
    return np.dtype(f"{buffer_dtype.kind}{int(dtype_bytes)}")


class Chip:
    """All cores of one device: buffers, live SRAM and the timeline."""

    def __init__(self, device: Device | str, cost: CostModel | str = DEFAULT_COST_MODEL):
        self.device = load_device(device)
        self.cost = get_cost_model(cost)
        self.now = 0.0
        self.cycles = {name: 0.0 for name in CATEGORIES}
        self.events: list[Event] = []
        self.live: dict[int, Buffer] = {}
        self.live_bytes = np.zeros(self.device.cores, dtype=np.int64)
        self.peak = 0
        self.cores_used = 0
        self.steps = 0
        self.hbm_free = 0.0                      # when the off-chip memory finishes its last preload
        self.in_flight: dict[int, float] = {}    # preloaded buffer -> the cycle its data arrives
        self.hbm_events: list[Event] = []        # preloads on the off-chip memory's own track
        self.hbm_bytes = 0.0
        self.flows: list = []   # preloads on the exchange (``irc.interpreter.offchip.PreloadFlow``), in issue order
        self.operator_first = 0          # index in ``events`` of the running operator's first event
        self.operator_transfers = 0.0    # its exchange transfers' cycles so far (``close_operator``)

    # -- bookkeeping ---------------------------------------------------------------------
    def _fresh_tags(self, cores: int) -> np.ndarray:
        """New content ids, distinct from every id handed out before."""
        base = getattr(self, "_next_tag", 0)
        self._next_tag = base + cores
        return np.arange(base, base + cores, dtype=np.int64)

    def _record(self, category: str, name: str, cycles: float, cores: int, where: str) -> None:
        cycles = float(cycles)
        self.events.append(Event(category, name, self.now, cycles, cores, where))
        self.cycles[category] += cycles
        self.now += cycles
        self.cores_used = max(self.cores_used, cores)

    def _overhead(self, cores: int) -> float:
        return self.device.inter_chip_overhead if cores > self.device.cores_per_chip else 1.0

    def report(self) -> Report:
        return Report(
            device=self.device.name, cost_model=self.cost.name, clock_hz=self.device.clock_hz,
            cycles=dict(self.cycles), peak_sram_bytes=int(self.peak),
            sram_bytes=self.device.sram_bytes, cores_used=self.cores_used,
            device_cores=self.device.cores, steps=self.steps, events=list(self.events),
            interpreter_peak_bytes=_peak_resident_bytes(),
            hbm_events=list(self.hbm_events), hbm_bytes=self.hbm_bytes,
            hbm_bytes_per_s=self.device.offchip.bytes_per_s if self.device.offchip else 0.0,
        )

    @staticmethod
    def fault(where: str, message: str) -> ChipFault:
        return ChipFault(f"{where} {message}")

    def _check_readable(self, buffer: Buffer, cores: int, where: str, what: str) -> None:
        if not buffer.live:
            raise self.fault(where, f"{what} reads buffer {buffer.name} after it was freed")
        if id(buffer) in self.in_flight:
            raise self.fault(where, f"{what} reads buffer {buffer.name} before the device.wait of its preload")
        if cores > buffer.cores:
            raise self.fault(
                where, f"core {buffer.cores} has no buffer {buffer.name} (allocated on cores 0..{buffer.cores - 1})"
            )
        unwritten = np.flatnonzero(~buffer.written[:cores])
        if unwritten.size:
            raise self.fault(
                where, f"core {int(unwritten[0])} reads buffer {buffer.name} before anything wrote it"
            )

    # -- instructions --------------------------------------------------------------------
    def alloc(self, name: str, shape, dtype, cores: int, offset: int, where: str) -> Buffer:
        dtype = np.dtype(dtype)
        shape = tuple(int(s) for s in shape)
        size = int(math.prod(shape)) * dtype.itemsize
        if cores > self.device.cores:
            raise self.fault(where, f"buffer {name} is allocated on {cores} cores, {self.device.name} has {self.device.cores}")
        if offset < 0 or offset + size > self.device.sram_bytes:
            raise self.fault(
                where, f"core 0: buffer {name} at SRAM offset {offset} with {size} bytes ends at byte "
                f"{offset + size}, beyond the {self.device.sram_bytes} bytes of SRAM"
            )
        for other in self.live.values():
            overlap = min(other.cores, cores) > 0 and offset < other.offset + other.bytes and other.offset < offset + size
            if overlap and size and other.bytes:
                raise self.fault(
                    where, f"core 0: buffer {name} [{offset}, {offset + size}) overlaps live buffer "
                    f"{other.name} [{other.offset}, {other.offset + other.bytes})"
                )
        buffer = Buffer(
            name, shape, dtype, cores, offset, np.zeros((cores, *shape), dtype=dtype),
            np.zeros(cores, dtype=bool), self._fresh_tags(cores),
        )
        self.live[id(buffer)] = buffer
        self.live_bytes[:cores] += size
        self.peak = max(self.peak, int(self.live_bytes.max()))
        self._record("compute", f"alloc {name}", 0.0, cores, where)
        return buffer

    def free(self, buffer: Buffer, where: str) -> None:
        if not buffer.live:
            raise self.fault(where, f"buffer {buffer.name} is freed twice")
        buffer.live = False
        self.live.pop(id(buffer), None)
        self.live_bytes[: buffer.cores] -= buffer.bytes
        buffer.data = np.zeros((0,), dtype=buffer.dtype)
        buffer.shadow = None  # the interpreter's scope keeps the value: drop its data now

    def fill(self, buffer: Buffer, value: float, where: str) -> None:
        buffer.data[...] = numerics.fill_value(value, buffer.dtype)
        buffer.written[:] = True
        buffer.touch()
        buffer.tags = np.full(buffer.cores, self._fresh_tags(1)[0], dtype=np.int64)
        self._record("compute", f"fill {buffer.name}", 0.0, buffer.cores, where)

    def _gather_into(self, buffer: Buffer, whole: np.ndarray, origins: np.ndarray) -> None:
        """Every core's tile of ``whole`` at its origin, written into ``buffer`` (a
        replicated operand's distinct tiles once, ``Buffer.data``)."""
        tiles, copies = gather_distinct_tiles(whole.astype(buffer.dtype, copy=False), origins, buffer.shape,
                                              buffer.cores)
        if copies is not None:
            buffer.stored, buffer.copies = tiles, copies
        elif tiles.flags.c_contiguous and tiles.base is None and tiles.shape == buffer.data.shape:
            buffer.data = tiles          # freshly gathered: take it instead of copying it
        else:
            buffer.data[...] = tiles
        buffer.written[:] = True
        buffer.touch()
        # cores gathering the same tile hold the same data
        origins = np.broadcast_to(np.asarray(origins, dtype=np.int64), (buffer.cores, len(buffer.shape)))
        _, inverse = np.unique(origins, axis=0, return_inverse=True)
        buffer.tags = self._fresh_tags(int(inverse.max()) + 1 if inverse.size else 0)[inverse.reshape(-1)]

    def load(self, buffer: Buffer, host: np.ndarray, origins: np.ndarray, where: str) -> None:
        self._gather_into(buffer, np.asarray(host), origins)
        cycles = buffer.bytes * self.device.link_cycles_per_byte
        self._host_io(f"load {buffer.name}", cycles, buffer.cores, where)

    def _host_io(self, name: str, cycles: float, cores: int, where: str) -> None:
        """Host I/O of ``cycles``: outside the model's time (the report's model cycles leave
        it out, as the planner does), so the off-chip memory's schedule pauses with it: the
        preloads in flight, and the HBM's next free cycle, move on by as much."""
        cycles = float(cycles)
        if cycles > 0 and self.hbm_free > self.now:
            self._postpone_offchip(self.now, cycles)
        self._record("host_io", name, cycles, cores, where)

    def _postpone_offchip(self, after: float, delay: float) -> None:
        """The off-chip schedule stops for ``delay`` cycles at cycle ``after``: a preload
        running then ends as much later, its ``hbm`` event with it and its per-link rates
        lower by as much (its bytes are the same); every preload starting later starts
        and ends as much later; so do the arrivals after ``after`` and the HBM's next
        free cycle. One rule for host I/O (``_host_io``) and for a preload yielding the
        link to an operator (``_delay_preloads``)."""
        for key, arrival in self.in_flight.items():
            if arrival > after:
                self.in_flight[key] = arrival + delay
        for flow in self.flows:
            if flow.end <= after:
                continue
            if flow.start >= after:
                flow.start += delay
                if flow.event is not None:
                    flow.event.start += delay
            else:
                stretch = (flow.end - flow.start) / (flow.end - flow.start + delay)
                for link in flow.rates:   # the same dict as the event's links
                    flow.rates[link] *= stretch
                if flow.event is not None:
                    flow.event.cycles += delay
            flow.end += delay
        self.hbm_free += delay

    def preload(self, buffer: Buffer, host: np.ndarray, origins: np.ndarray, where: str,
                link_share: float = 1.0, yields: bool = False) -> None:
        """Start loading ``host`` (resting in off-chip memory) into ``buffer`` (ELK s4.5
        ``preload_async``): the data is in place at once, but the buffer may be read only
        after ``wait``. The load starts when the chip reaches it and the off-chip memory
        is done with the previous one (preloads are serial), and lasts the HBM roofline of
        the distinct tiles or the exchange's delivery of every core's tile, whichever is
        longer (``irc.devices.topology.preload_seconds``), paced to at most ``link_share``
        of its busiest link (``irc.devices.topology.paced_preload``); ``yields``: it yields
        the link to a contending operator (``close_operator``)."""
        if self.device.offchip is None:
            raise self.fault(where, f"device.preload_async on {self.device.name}, which has no off-chip memory")
        self._gather_into(buffer, np.asarray(host), origins)
        distinct = len(np.unique(buffer.tags)) if buffer.tags is not None else buffer.cores
        tile = buffer.bytes
        hbm_bytes = float(distinct * tile)
        cycles = preload_seconds(self.device, tile, hbm_bytes) * self.device.clock_hz
        cycles, pressure = paced_preload(cycles, preload_pressure(self.device, tile, cycles, hbm_bytes), link_share)
        start = max(self.now, self.hbm_free)
        self.hbm_free = start + cycles
        self.in_flight[id(buffer)] = self.hbm_free
        self.hbm_bytes += hbm_bytes
        event = Event("hbm", f"preload {buffer.name}", start, cycles, buffer.cores, where)
        self.hbm_events.append(event)
        if cycles > 0:
            rates = preload_link_rates(self.device, tile, cycles, hbm_bytes)
            event.links = rates   # the trace shows the preload on every link it loads
            self.flows.append(PreloadFlow(start, start + cycles, rates, pressure, id(buffer), event, yields))

    def wait(self, buffer: Buffer, where: str) -> None:
        """Stall until ``buffer``'s preload has arrived: the exposed (not overlapped) load time."""
        arrival = self.in_flight.pop(id(buffer), None)
        if arrival is None:
            raise self.fault(where, f"device.wait for buffer {buffer.name}, which has no preload in flight")
        stall = max(0.0, arrival - self.now)
        self.cycles.setdefault("preload_wait", 0.0)
        self._record("preload_wait", f"wait {buffer.name}", stall, buffer.cores, where)

    def store(self, buffer: Buffer, host: np.ndarray, origins: np.ndarray, cores: np.ndarray,
              where: str) -> None:
        """Write the tiles of ``cores`` into ``host`` (in place), clipped to its shape."""
        if len(cores):
            self._check_readable(buffer, int(cores.max()) + 1, where, "store")
        scatter_tiles(host, buffer.data[cores], origins[cores], buffer.shape)
        cycles = int(math.prod(buffer.shape)) * host.dtype.itemsize * self.device.link_cycles_per_byte
        self._host_io(f"store {buffer.name}", cycles, buffer.cores, where)

    def relayout(self, source: Buffer, source_origins: np.ndarray, writers: np.ndarray, target: Buffer,
                 target_origins: np.ndarray, shape: tuple[int, ...], nbytes: int, barriers: int,
                 where: str, move=None, setup: bool = False) -> None:
        """Move a tensor between two on-chip layouts over the exchange: the tiles of
        ``writers`` in ``source`` (at ``source_origins``) become, per core of ``target``,
        the tile at ``target_origins`` (zeros outside the tensor). Timed as the cost
        model's shift of ``nbytes`` per core plus ``barriers`` barriers, as the planner
        prices relayouts and setups (``irc.planner.relayout``, ``irc.planner.idle``; a
        ``setup`` is reported apart); nothing crosses the host link."""
        if len(writers):
            self._check_readable(source, int(writers.max()) + 1, where, "relayout")
        whole = np.zeros(shape, dtype=source.dtype)
        scatter_tiles(whole, source.data[writers], source_origins[writers], source.shape)
        if move is not None:  # a data movement on the way (transpose, merged axes)
            whole = move(whole)
        self._gather_into(target, whole, target_origins)
        barrier = float(self.cost.sync_cycles(self.device)) / max(1, self.device.syncs_per_shift)
        cycles = float(self.cost.shift_cycles(self.device, nbytes)) + barriers * barrier
        category = "setup" if setup else "relayout"
        self._record(category, f"{category} {source.name} -> {target.name}", cycles, target.cores, where)
        self._transfer(cycles)

    def relayout_pieces(self, source: Buffer, target: Buffer, pieces: np.ndarray, piece_shape: tuple[int, ...],
                        target_origins: np.ndarray, shape: tuple[int, ...], nbytes: int, barriers: int,
                        where: str, setup: bool = False) -> None:
        """A relayout stated as pieces (``device.relayout``'s ``pieces``): core ``c`` of
        ``target`` receives, per piece ``k``, the box of ``piece_shape`` from core
        ``pieces[c, k, 0]``'s ``source`` at the source offsets into its own buffer at the
        destination offsets (boxes clipped to both buffers); every element of its tile
        inside the tensor must be written once, the rest is zero. Timed as ``relayout``.

        Cores are moved in chunks of at most ``PIECE_CHUNK`` destination elements, so the
        bookkeeping (write counts, and index arrays where a piece's offsets differ between
        cores) never grows with the whole tensor: only the result does. A piece whose
        offsets are the same on every core of a chunk (a weight's setup, where the idle
        and active layouts cut the same boxes) is copied as slices."""
        cores, rank = target.cores, len(shape)
        piece_shape = tuple(int(n) for n in piece_shape)
        for k in range(pieces.shape[1]):
            src = pieces[:, k, 0]
            if src.size and (src.min() < 0 or src.max() >= source.cores):
                bad = int(np.flatnonzero((src < 0) | (src >= source.cores))[0])
                raise self.fault(where, f"core {bad} receives piece {k} from core {int(src[bad])}, "
                                        f"which has no buffer {source.name}")
        result = np.zeros((cores, *target.shape), dtype=target.dtype)
        per_core = max(1, int(math.prod(target.shape)))
        chunk = max(1, PIECE_CHUNK // per_core)
        for first in range(0, cores, chunk):
            rows = slice(first, min(cores, first + chunk))
            self._pieces_into(result[rows], source, target, pieces[rows], piece_shape,
                              target_origins[rows], shape, where, first)
        target.data = result
        target.written[:] = True
        target.touch()
        # cores holding the same tile hold the same data (as after a load)
        _, inverse = np.unique(target_origins, axis=0, return_inverse=True)
        target.tags = self._fresh_tags(int(inverse.max()) + 1 if inverse.size else 0)[inverse.reshape(-1)]
        barrier = float(self.cost.sync_cycles(self.device)) / max(1, self.device.syncs_per_shift)
        senders = pieces[:, :, 0].reshape(-1)
        receivers = np.repeat(np.arange(cores), pieces.shape[1])
        piece_bytes = math.prod(piece_shape) * source.dtype.itemsize
        if self._on_mesh() and nbytes > 0:   # the busiest link's pieces (a box may be clipped: at most)
            # (a relayout priced at nothing moves what the producer's output shuffle
            # already paid for, IPU_COST_FACTS s5: as on an all-to-all exchange, no time)
            nbytes = exchange_bytes(self.device, senders, piece_bytes, receivers)
        cycles = float(self.cost.shift_cycles(self.device, nbytes)) + barriers * barrier
        category = "setup" if setup else "relayout"
        self._record(category, f"{category} {source.name} -> {target.name}", cycles, cores, where)
        self._transfer(cycles)

    def _pieces_into(self, out: np.ndarray, source: Buffer, target: Buffer, pieces: np.ndarray,
                     piece_shape: tuple[int, ...], target_origins: np.ndarray, shape: tuple[int, ...],
                     where: str, first: int) -> None:
        """``relayout_pieces`` for the cores ``first, first + len(out), ...``, into ``out``."""
        cores, rank = len(out), len(shape)
        written = np.zeros(out.shape, dtype=np.int32)
        box = None
        for k in range(pieces.shape[1]):
            src = pieces[:, k, 0]
            at, to = pieces[:, k, 1:1 + rank], pieces[:, k, 1 + rank:]
            if (at == at[:1]).all() and (to == to[:1]).all():
                # the same offsets on every core: the clipped box is one slice
                a0, t0 = at[0] if cores else np.zeros(rank, np.int64), to[0] if cores else np.zeros(rank, np.int64)
                lo = [max(0, -int(a), -int(t)) for a, t in zip(a0, t0)]
                hi = [min(n, source.shape[d] - int(a0[d]), target.shape[d] - int(t0[d]))
                      for d, n in enumerate(piece_shape)]
                if any(h <= l_ for l_, h in zip(lo, hi)):
                    continue
                unwritten = np.unique(src[~source.written[src]])
                if unwritten.size:
                    raise self.fault(where, f"core {int(unwritten[0])} sends buffer {source.name} before "
                                            f"anything wrote it")
                into = (slice(None),) + tuple(slice(int(t) + l_, int(t) + h) for t, l_, h in zip(t0, lo, hi))
                out[into] = source.data[(src,) + tuple(slice(int(a) + l_, int(a) + h) for a, l_, h in zip(a0, lo, hi))]
                written[into] += 1
                continue
            if box is None:
                grids = np.meshgrid(*[np.arange(n) for n in piece_shape], indexing="ij")
                box = [g.reshape(1, -1) for g in grids]                    # (1, box elements) per dim
            at = [at[:, d][:, None] + box[d] for d in range(rank)]
            to = [to[:, d][:, None] + box[d] for d in range(rank)]
            keep = np.ones((cores, math.prod(piece_shape)), dtype=bool)   # a scalar's box: one element
            for d in range(rank):
                keep &= (at[d] >= 0) & (at[d] < source.shape[d]) & (to[d] >= 0) & (to[d] < target.shape[d])
            rows = np.broadcast_to(np.arange(cores)[:, None], keep.shape)[keep]
            senders = np.broadcast_to(src[:, None], keep.shape)[keep]
            unwritten = np.unique(senders[~source.written[senders]]) if senders.size else senders
            if unwritten.size:
                raise self.fault(where, f"core {int(unwritten[0])} sends buffer {source.name} before anything wrote it")
            index = (rows, *[t[keep] for t in to])
            out[index] = source.data[(senders, *[a[keep] for a in at])]
            np.add.at(written, index, 1)
        inside = np.ones(out.shape, dtype=bool)
        for d in range(rank):
            position = target_origins[:, d].reshape((cores,) + (1,) * rank) + np.arange(target.shape[d]).reshape(
                (1,) * (d + 1) + (target.shape[d],) + (1,) * (rank - d - 1))
            inside &= (position >= 0) & (position < shape[d])
        wrong = inside & (written != 1)
        if wrong.any():
            core = first + int(np.argwhere(wrong)[0][0])
            raise self.fault(where, f"core {core}: the pieces write an element of {target.name}'s tile "
                                    f"{'more than once' if (written[inside] > 1).any() else 'not at all'}")
        out[~inside] = 0

    def gather(
        self, expression: TensorExpr, tiles: dict[str, int], cores: int, output: Buffer,
        out_offsets: np.ndarray, inputs: list[tuple[Buffer, np.ndarray]], subtask: SubTask,
        where: str, name: str,
    ) -> None:
        """One gather step (``device.gather``): the indices in every core's window select
        rows of its table partition, held whole along the indexed dims; an index outside
        them is a fault naming the core and the value."""
        table_read, index_read = gather_parts(expression)
        buffers = dict(zip(expression.inputs, inputs))
        table, _ = buffers[table_read.tensor]
        index, offsets = buffers[index_read.tensor]
        self._check_readable(index, cores, where, name)
        shape = tuple(sum(abs(c) * (tiles[a] - 1) for a, c in i.terms) + 1 for i in index_read.indices)
        values = read_window(index, offsets, shape, cores, where)
        for dim, read in enumerate(table_read.indices):
            if not isinstance(read, IndirectIndex):
                continue
            rows = table.shape[dim]
            bad = (values < 0) | (values >= rows)
            if bad.any():
                at = np.argwhere(bad)[0]
                raise self.fault(
                    where, f"core {int(at[0])}: index {int(values[tuple(at)])} read from {index.name} selects "
                    f"row {int(values[tuple(at)])} of table {table.name} (dim {dim}), which has {rows} rows"
                )
        self.compute(expression, tiles, cores, output, out_offsets, inputs, subtask, where, name,
                     held={table_read.tensor: table.shape})

    def compute(
        self, expression: TensorExpr, tiles: dict[str, int], cores: int, output: Buffer,
        out_offsets: np.ndarray, inputs: list[tuple[Buffer, np.ndarray]], subtask: SubTask,
        where: str, name: str, held: dict[str, tuple[int, ...]] | None = None,
    ) -> None:
        bound = local_expression(expression, tiles, cores, held)
        work = compute_dtype(output.dtype)
        arrays, classes = {}, {}
        for (buffer, offsets), tensor in zip(inputs, expression.inputs):
            self._check_readable(buffer, cores, where, name)
            shape = bound.shapes[tensor][1:]
            # each input computes in its own dtype's precision (a comparison reads floats
            # and writes i1), as te_eval.evaluate does
            arrays[tensor] = read_window(buffer, offsets, shape, cores, where,
                                         buffer.computed(compute_dtype(buffer.dtype)))
            offsets = np.broadcast_to(np.asarray(offsets, dtype=np.int64), (cores, len(shape)))
            key = np.concatenate([buffer.tags[:cores, None], offsets], axis=1)
            classes[tensor] = np.unique(key, axis=0, return_inverse=True)[1].reshape(-1)
        self._check_readable(output, cores, where, name)
        out_shape = bound.shapes[expression.output.tensor][1:]
        uniform = all(compute_dtype(buffer.dtype) == work for buffer, _ in inputs)
        result = contract(bound, arrays, work, classes) if uniform else None
        if result is None:
            result = evaluate(bound, [arrays[t] for t in expression.inputs], work,
                              op_dtype(output.dtype, subtask.dtype_bytes))
        current = read_window(output, out_offsets, out_shape, cores, where).astype(work)
        with np.errstate(over="ignore", invalid="ignore"):   # IEEE: f32 beyond f16 is inf
            result = numerics.combine(expression.combiner, current, result)
            write_window(output, out_offsets, result.astype(output.dtype), cores)
        output.tags = self._fresh_tags(output.cores)
        output.touch()
        self.steps += 1
        self._record("compute", name, self._priced(lambda: self.cost.compute_cycles(self.device, subtask), where),
                     cores, where)

    def _priced(self, price, where: str):
        """The cost model's price of a step; one it cannot price is a fault of the op."""
        try:
            return price()
        except CostModelError as error:
            raise ChipFault(f"{where} {error}") from None

    def shift(self, buffer: Buffer, receive: Buffer, source: np.ndarray, where: str) -> None:
        cores = len(source)
        for b in (buffer, receive):
            if cores > b.cores:
                raise self.fault(
                    where, f"core {b.cores}: the shift's destination has no buffer {b.name} "
                    f"(allocated on cores 0..{b.cores - 1})"
                )
        if source.size and (source.min() < 0 or source.max() >= buffer.cores):
            bad = int(np.flatnonzero((source < 0) | (source >= buffer.cores))[0])
            raise self.fault(where, f"core {bad} receives {buffer.name} from core {int(source[bad])}, which has no such buffer")
        self._check_readable(buffer, cores, where, "shift")
        receive.data[:cores] = buffer.data[source]
        receive.written[:cores] = True
        receive.tags = receive.tags.copy()
        receive.tags[:cores] = buffer.tags[source]
        buffer.data, receive.data = receive.data, buffer.data
        buffer.tags, receive.tags = receive.tags, buffer.tags
        buffer.touch()
        receive.touch()
        buffer.written, receive.written = receive.written, buffer.written
        receive.written[:cores] = False  # the exchange's landing area: nothing to read after
        self.record_shift(buffer, source, cores, where)

    def _on_mesh(self) -> bool:
        return on_mesh(self.device)

    def record_shift(self, buffer: Buffer, source: np.ndarray, cores: int, where: str) -> None:
        """The time of a shift of ``buffer`` (core c receives from ``source[c]``): the cost
        model's shift of its bytes, on a mesh of the bytes its busiest link carries
        (``irc.devices.topology.exchange_bytes``); it shares the exchange with preloads
        (``close_operator``)."""
        moved = exchange_bytes(self.device, source, buffer.bytes) if self._on_mesh() else buffer.bytes
        cycles = self.cost.shift_cycles(self.device, moved) * self._overhead(cores)
        self._record("shift", f"shift {buffer.name}", cycles, cores, where)
        self._transfer(cycles)

    def _transfer(self, cycles: float) -> None:
        """An exchange transfer of the running operator (a shift, relayout or distribution)
        just took ``cycles``: the link time preloads compete for (``close_operator``)."""
        self.operator_transfers += float(cycles)

    def close_operator(self, where: str, name: str = "") -> None:
        """The running operator is done (its ``device.reduce``): if its exchange transfers and
        the preloads streaming meanwhile needed more link time than its window had, it
        waits for the link (``irc.devices.topology.operator_contention``, ELK s3.3, s4.3),
        recorded as ``contention``. The window is the operator's events since the last one
        closed, waits for preloads and host I/O left out. Where the last preload streaming
        in it yields (``device.preload_async``'s ``yields``), the operator keeps its window
        and that preload and those after it end later instead (``_delay_preloads``)."""
        busy = [(e.start, e.start + e.cycles) for e in self.events[self.operator_first:]
                if e.category not in ("preload_wait", "host_io", "contention") and e.cycles > 0]
        transfers, self.operator_transfers = self.operator_transfers, 0.0
        first = min((s for s, _ in busy), default=self.now)
        self.flows = [flow for flow in self.flows if flow.end > first]
        if self.flows and transfers > 0:
            flows = [(f.start, f.end, f.pressure) for f in self.flows]
            yielded = preload_yield(busy, transfers, flows)
            if yielded is not None and self.flows[yielded[0]].yields:
                self._delay_preloads(*yielded)
                self.operator_first = len(self.events)
                return
            extra = operator_contention(busy, transfers, flows)
            if extra > 0:
                self.cycles.setdefault("contention", 0.0)
                cores = max((e.cores for e in self.events[self.operator_first:]), default=1)
                self._record("contention", f"contention {name}".rstrip(), extra, cores, where)
        self.operator_first = len(self.events)

    def _delay_preloads(self, first: int, delay: float) -> None:
        """Preload ``first`` of ``flows`` yields the link: it ends ``delay`` cycles later,
        and every preload after it (serial on the HBM) starts and ends as much later."""
        yielding = self.flows[first]
        # any cycle inside the yielding load: it is the one preload running then
        self._postpone_offchip((yielding.start + yielding.end) / 2, delay)

    def sync(self, cores: int, where: str) -> None:
        cycles = self.cost.sync_cycles(self.device) * self._overhead(cores)
        self._record("sync", "sync", cycles, cores, where)

    def reduce(self, buffer: Buffer, groups: np.ndarray, combiner: str, work: OpWork, where: str,
               rounded: np.dtype | None = None) -> Buffer | None:
        """Combine each group's partial copies into its lowest core. With ``rounded``, the
        buffer is an accumulator: the combination is rounded once into ``rounded`` in
        place, and the returned buffer (the accumulator's first bytes) replaces it."""
        if groups.size:
            self._check_readable(buffer, int(groups.max()) + 1, where, "reduce")
        if groups.ndim == 2 and groups.shape[1] > 1:
            stacked = buffer.data[groups].astype(compute_dtype(buffer.dtype))
            combined = numerics.reduce(combiner if combiner in numerics.ORDERED else "+=", stacked, 1)
            with np.errstate(over="ignore", invalid="ignore"):   # IEEE: beyond f16 is inf
                buffer.data[groups[:, 0]] = combined.astype(buffer.dtype)
            buffer.tags = self._fresh_tags(buffer.cores)
            buffer.touch()
        cycles = float(self._priced(lambda: self.cost.op_time(self.device, work).reduction, where))
        self._record("reduction", f"reduce {buffer.name}", cycles, int(work.cores), where)
        if rounded is None:
            return None
        with np.errstate(over="ignore", invalid="ignore"):
            data = buffer.data.astype(rounded)
        result = Buffer(buffer.name, buffer.shape, np.dtype(rounded), buffer.cores, buffer.offset,
                        data, buffer.written.copy(), buffer.tags)
        buffer.live = False
        self.live.pop(id(buffer), None)
        self.live_bytes[: buffer.cores] -= buffer.bytes - result.bytes
        buffer.data = np.zeros((0,), dtype=buffer.dtype)
        buffer.shadow = None  # the interpreter's scope keeps the value: drop its data now
        self.live[id(result)] = result
        return result


# -- tiles and windows (vectorised over cores) ---------------------------------------------


PIECE_CHUNK = 1 << 22
"""Destination elements a relayout by pieces moves per chunk of cores (its write counts
and index arrays are this size, not the tensor's)."""


_INDEX_CACHE: dict = {}


def _flat_window_index(buffer: Buffer, offsets: np.ndarray, shape, cores: int) -> np.ndarray:
    """(cores, window elements) indices into the flattened buffer state: one 1-D take
    or put per instruction instead of a multi-array fancy index. Loop nests repeat
    their window tables, so indices are cached by table."""
    key = (buffer.shape, tuple(shape), cores, np.ascontiguousarray(offsets).tobytes())
    found = _INDEX_CACHE.get(key)
    if found is not None:
        return found
    if len(_INDEX_CACHE) > 64:
        _INDEX_CACHE.clear()
    _INDEX_CACHE[key] = index = _build_window_index(buffer, offsets, shape, cores)
    return index


def _build_window_index(buffer: Buffer, offsets: np.ndarray, shape, cores: int) -> np.ndarray:
    strides = np.array([int(math.prod(buffer.shape[d + 1:])) for d in range(len(shape))], dtype=np.int64)
    size = int(math.prod(buffer.shape))
    pattern = np.zeros(1, dtype=np.int64)
    for d, s in enumerate(shape):
        pattern = (pattern[:, None] + np.arange(s, dtype=np.int64)[None, :] * strides[d]).reshape(-1)
    base = np.arange(cores, dtype=np.int64) * size + offsets @ strides
    return base[:, None] + pattern[None, :]


def read_window(buffer: Buffer, offsets: np.ndarray, shape, cores: int, where: str,
                source: np.ndarray | None = None) -> np.ndarray:
    """Each core's window of ``buffer`` (from ``source``, a same-shaped copy, if given)."""
    offsets = np.broadcast_to(np.asarray(offsets, dtype=np.int64), (cores, len(shape)))
    _check_window(buffer, offsets, shape, where)
    full = buffer.data if source is None else source
    data = full[:cores]
    if cores == 0 or (offsets == offsets[0]).all():
        first = offsets[0] if cores else np.zeros(len(shape), dtype=np.int64)
        return data[(slice(None),) + tuple(slice(o, o + s) for o, s in zip(first.tolist(), shape))]
    index = _flat_window_index(buffer, offsets, shape, cores)
    return full.reshape(-1).take(index).reshape((cores, *shape))


def write_window(buffer: Buffer, offsets: np.ndarray, values: np.ndarray, cores: int) -> None:
    shape = values.shape[1:]
    offsets = np.broadcast_to(np.asarray(offsets, dtype=np.int64), (cores, len(shape)))
    if cores == 0:
        return
    if (offsets == offsets[0]).all():
        buffer.data[(slice(0, cores),) + tuple(slice(o, o + s) for o, s in zip(offsets[0].tolist(), shape))] = values
        return
    index = _flat_window_index(buffer, offsets, shape, cores)
    flat = buffer.data.reshape(-1)
    flat[index.reshape(-1)] = values.reshape(-1)


def _check_window(buffer: Buffer, offsets: np.ndarray, shape, where: str) -> None:
    if offsets.size == 0:
        return
    bad = (offsets < 0) | (offsets + np.array(shape, dtype=np.int64) > np.array(buffer.shape, dtype=np.int64))
    if bad.any():
        core, dim = (int(x) for x in np.argwhere(bad)[0])
        raise Chip.fault(
            where, f"core {core}: window {list(offsets[core])}+{list(shape)} lies outside buffer "
            f"{buffer.name} of shape {list(buffer.shape)} (dimension {dim})"
        )
