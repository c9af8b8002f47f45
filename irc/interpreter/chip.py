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

import json
import math
from dataclasses import dataclass, field

import numpy as np
from xdsl.interpreter import InterpretationError

from irc.cost import DEFAULT_COST_MODEL, CostModel, CostModelError, OpWork, SubTask, get_cost_model
from irc.devices import Device, load_device
from irc.devices.topology import exchange_bytes, on_mesh, operator_contention, preload_pressure, preload_seconds
from irc.dialects.te_expr import (
    Access,
    AffineIndex,
    Binary,
    BoundExpr,
    IndirectIndex,
    TensorExpr,
    fold,
    gather_parts,
    product_reads,
)
from irc.interpreter import numerics
from irc.interpreter.offchip import PreloadFlow, offchip_lines, offchip_summary, preload_link_rates
from irc.interpreter.te_eval import compute_dtype, evaluate

CORE_AXIS = "__core__"
CATEGORIES = ("compute", "shift", "sync", "reduction", "setup", "relayout", "host_io")


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


@dataclass
class Event:
    category: str
    name: str
    start: float
    cycles: float
    cores: int
    where: str
    links: dict | None = None   # a preload's: link -> bytes per cycle (one trace track per link)


@dataclass
class Report:
    """Chip time and its breakdown, peak SRAM per core and utilisation."""

    device: str
    cost_model: str
    clock_hz: float
    cycles: dict[str, float]
    peak_sram_bytes: int
    sram_bytes: int
    cores_used: int
    device_cores: int
    steps: int
    events: list[Event] = field(default_factory=list, repr=False)
    interpreter_peak_bytes: int = 0
    """The interpreter's own peak resident memory when the report was made (the host's,
    not the chip's)."""
    hbm_events: list[Event] = field(default_factory=list, repr=False)
    hbm_bytes: float = 0.0
    hbm_bytes_per_s: float = 0.0

    @classmethod
    def combine(cls, reports: list["Report"]) -> "Report":
        """One report over several chips a run used (one per target), times added."""
        if len(reports) == 1:
            return reports[0]
        first = reports[0]
        categories = dict.fromkeys(k for r in reports for k in r.cycles)
        return cls(
            device="+".join(dict.fromkeys(r.device for r in reports)),
            cost_model="+".join(dict.fromkeys(r.cost_model for r in reports)),
            clock_hz=first.clock_hz,
            cycles={k: sum(r.cycles.get(k, 0.0) for r in reports) for k in categories},
            peak_sram_bytes=max(r.peak_sram_bytes for r in reports),
            sram_bytes=max(r.sram_bytes for r in reports),
            cores_used=max(r.cores_used for r in reports),
            device_cores=max(r.device_cores for r in reports),
            steps=sum(r.steps for r in reports),
            events=[e for r in reports for e in r.events],
            interpreter_peak_bytes=max(r.interpreter_peak_bytes for r in reports),
            hbm_events=[e for r in reports for e in r.hbm_events], hbm_bytes=sum(r.hbm_bytes for r in reports),
            hbm_bytes_per_s=first.hbm_bytes_per_s,
        )

    @property
    def total_cycles(self) -> float:
        return float(sum(self.cycles.values()))

    @property
    def kernel_cycles(self) -> float:
        """The operators' compute-shift time: chip time without host I/O, the weights'
        setups and the on-chip relayouts between operators (what the planner predicts
        per operator)."""
        return self.model_cycles - self.cycles.get("relayout", 0.0) - self.cycles.get("setup", 0.0)

    @property
    def model_cycles(self) -> float:
        """Chip time without host I/O: the operators, the setups of their weights and the
        relayouts between them (what the model-wide planner predicts)."""
        return self.total_cycles - self.cycles.get("host_io", 0.0)

    @property
    def seconds(self) -> float:
        return self.total_cycles / self.clock_hz

    @property
    def compute_utilisation(self) -> float:
        total = self.total_cycles
        return self.cycles.get("compute", 0.0) / total if total else 0.0

    @property
    def core_utilisation(self) -> float:
        return self.cores_used / self.device_cores if self.device_cores else 0.0

    def as_dict(self) -> dict:
        return {
            "device": self.device,
            "cost_model": self.cost_model,
            "cycles": dict(self.cycles),
            "total_cycles": self.total_cycles,
            "kernel_cycles": self.kernel_cycles,
            "model_cycles": self.model_cycles,
            "seconds": self.seconds,
            "peak_sram_bytes": self.peak_sram_bytes,
            "sram_bytes": self.sram_bytes,
            "cores_used": self.cores_used,
            "device_cores": self.device_cores,
            "compute_utilisation": self.compute_utilisation,
            "core_utilisation": self.core_utilisation,
            "steps": self.steps,
            "interpreter_peak_bytes": self.interpreter_peak_bytes,
            **self._offchip_dict(),
        }

    def _offchip_dict(self) -> dict:
        if not self.hbm_events:
            return {}

        return {"offchip": offchip_summary(self)}

    def __str__(self) -> str:
        total = self.total_cycles or 1.0
        lines = [
            f"chip time on {self.device} ({self.cost_model} cost model): "
            f"{self.total_cycles:,.0f} cycles = {self.seconds * 1e3:.4f} ms",
        ]
        for name in CATEGORIES:
            value = self.cycles.get(name, 0.0)
            lines.append(f"  {name:<10} {value:>14,.0f} cycles  {100 * value / total:5.1f}%")
        lines.append(f"  kernels without host I/O: {self.kernel_cycles:,.0f} cycles")
        if self.cycles.get("relayout", 0.0) or self.cycles.get("setup", 0.0):
            lines.append(f"  kernels, setups and relayouts without host I/O: {self.model_cycles:,.0f} cycles")
        lines.append(
            f"peak SRAM per core: {self.peak_sram_bytes:,} of {self.sram_bytes:,} bytes "
            f"({100 * self.peak_sram_bytes / max(self.sram_bytes, 1):.1f}%)"
        )
        lines.append(
            f"utilisation: {self.cores_used} of {self.device_cores} cores, "
            f"compute {100 * self.compute_utilisation:.1f}% of chip time, {self.steps} compute steps"
        )
        if self.interpreter_peak_bytes:
            lines.append(f"interpreter peak memory: {self.interpreter_peak_bytes / 2**20:,.0f} MiB (host)")
        if self.hbm_events:
            lines += offchip_lines(self)
        return "\n".join(lines)

    def chrome_trace(self) -> dict:
        """Chrome/Perfetto trace: one track per category, microseconds."""
        tids = {name: i for i, name in enumerate(CATEGORIES + ("preload_wait", "contention", "hbm", "links"))}
        scale = 1e6 / self.clock_hz
        events = [
            {"name": "thread_name", "ph": "M", "pid": 0, "tid": tid, "args": {"name": name}}
            for name, tid in tids.items()
        ]
        events.append({"name": "process_name", "ph": "M", "pid": 0, "args": {"name": self.device}})
        for event in self.events + self.hbm_events:
            events.append({
                "name": event.name, "cat": event.category, "ph": "X", "pid": 0,
                "tid": tids[event.category], "ts": event.start * scale,
                "dur": event.cycles * scale,
                "args": {"cycles": event.cycles, "cores": event.cores, "at": event.where},
            })
        links: dict = {}   # one track per link a preload loads, busiest first within a preload
        for event in self.hbm_events:
            for link, rate in sorted((event.links or {}).items(), key=lambda item: -item[1]):
                name = "link " + " ".join(map(str, link))
                if name not in links:
                    links[name] = len(tids) + len(links)
                    events.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": links[name],
                                   "args": {"name": name}})
                events.append({
                    "name": f"{event.name} ({rate:.3g} B/cycle)", "cat": "links", "ph": "X", "pid": 0,
                    "tid": links[name], "ts": event.start * scale, "dur": event.cycles * scale,
                    "args": {"bytes_per_cycle": rate, "at": event.where},
                })
        return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": self.as_dict()}

    def write_trace(self, path: str) -> None:
        with open(path, "w") as stream:
            json.dump(self.chrome_trace(), stream)


def _peak_resident_bytes() -> int:
    """This process's peak resident memory (Linux reports it in KiB)."""
    try:
        import resource  # POSIX only
    except ImportError:  # not on every platform
        return 0
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def op_dtype(buffer_dtype: np.dtype, dtype_bytes: int) -> np.dtype:
    """The op's own element type, of ``dtype_bytes`` bytes, whose partial results a
    buffer of ``buffer_dtype`` accumulates (the buffer's type when they are as wide)."""
    buffer_dtype = np.dtype(buffer_dtype)
    if int(dtype_bytes) == buffer_dtype.itemsize or buffer_dtype.kind not in "fiu":
        return buffer_dtype
    return np.dtype(f"{buffer_dtype.kind}{int(dtype_bytes)}")


def local_expression(expr: TensorExpr, tiles: dict[str, int], cores: int,
                     held: dict[str, tuple[int, ...]] | None = None) -> BoundExpr:
    """The sub-task of one step on every core at once: ``expr`` over step tiles, with a
    leading core axis on every tensor and indices relative to each window's origin. A
    dim read at another tensor's values (a gather's table) is held whole: its size is
    the buffer's, from ``held`` (tensor -> buffer shape)."""

    def localise(access: Access) -> Access:
        indices = [AffineIndex(((CORE_AXIS, 1),), 0)]
        for index in access.indices:
            if isinstance(index, IndirectIndex):
                indices.append(IndirectIndex(localise(index.access)))
                continue
            constant = sum(-c * (tiles[a] - 1) for a, c in index.terms if c < 0)
            indices.append(AffineIndex(index.terms, constant))
        return Access(access.tensor, tuple(indices))

    def rewrite(node, operands):  # children first (`fold`), so any depth of body works
        if isinstance(node, Access):
            return localise(node)
        if isinstance(node, Binary):
            return Binary(node.op, *operands)
        if hasattr(node, "args"):
            return type(node)(node.function, tuple(operands))
        return node

    local = TensorExpr(
        localise(expr.output), expr.combiner, fold(expr.body, rewrite),
        ((CORE_AXIS, cores), *((a, tiles[a]) for a in expr.axes)),
    )

    def shape(access: Access):
        return tuple(
            cores if i == 0 else held[access.tensor][i - 1] if isinstance(index, IndirectIndex)
            else sum(abs(c) * (tiles[a] - 1) for a, c in index.terms) + 1
            for i, index in enumerate(access.indices)
        )

    inputs = [shape(local.accesses_of(name)[0]) for name in local.inputs]
    return local.bind(inputs, shape(local.output))


def _is_constant(index) -> bool:
    return isinstance(index, AffineIndex) and not index.terms


def _slice_constants(array: np.ndarray, access: Access) -> tuple[np.ndarray, list[str]]:
    """``array`` with its constant-indexed dimensions indexed away, and the axes of the rest."""
    if not any(_is_constant(i) for i in access.indices):
        return array, [i.simple_axis for i in access.indices]
    picked = tuple(i.constant if _is_constant(i) else slice(None) for i in access.indices)
    return array[picked], [i.simple_axis for i in access.indices if not _is_constant(i)]


def contract(bound: BoundExpr, arrays: dict[str, np.ndarray], work: np.dtype,
             classes: dict[str, np.ndarray] | None = None) -> np.ndarray | None:
    """A batched-BLAS evaluation of a two-read product (``np.matmul`` on stacked
    (batch, m, k) x (batch, k, n)); None when the expression is not one.

    Constant read indices select their slice first; an output dimension at a constant
    (index 0 of a window, as every local expression has) and output axes no input
    reads (the product repeats along them) are put back around the product."""
    expr = bound.expr
    found = product_reads(expr)
    if found is None or expr.combiner not in ("=", "+="):
        return None
    scale, (left, right) = found
    if left.tensor == right.tensor:
        return None
    if any(_is_constant(i) and i.constant != 0 for i in expr.output.indices):
        return None
    x, la = _slice_constants(arrays[left.tensor], left)
    y, ra = _slice_constants(arrays[right.tensor], right)
    written = [i.simple_axis for i in expr.output.indices if not _is_constant(i)]
    if len(set(la)) != len(la) or len(set(ra)) != len(ra) or len(set(written)) != len(written):
        return None
    ext = bound.extent
    spread = [a for a in written if a not in la and a not in ra]
    oa = [a for a in written if a not in spread]
    z = _contract_axes(x, y, la, ra, oa, spread, scale, bound, work, classes, left, right)
    if spread:
        z = z.reshape(z.shape + (1,) * len(spread)).transpose([(oa + spread).index(a) for a in written])
        z = np.broadcast_to(z, [ext[a] for a in written])
    constants = [d for d, i in enumerate(expr.output.indices) if _is_constant(i)]
    return np.expand_dims(z, tuple(constants)) if constants else z


def _contract_axes(x, y, la, ra, oa, spread, scale, bound, work, classes, left, right) -> np.ndarray:
    """The product over plain axes: ``oa`` the output axes the inputs read."""
    ext = bound.extent
    batch = [a for a in oa if a in la and a in ra]
    m = [a for a in oa if a in la and a not in ra]
    n = [a for a in oa if a in ra and a not in la]
    k = [a for a in la if a in ra and a not in oa]
    if (classes is not None and not only_sum(la, ra, oa) and batch == [CORE_AXIS]
            and x.ndim == len(la) and y.ndim == len(ra)):
        grouped = _grouped_contract(x, y, la, ra, oa, m, n, k, ext, classes[left.tensor],
                                    classes[right.tensor], work)
        if grouped is not None:
            return grouped * work.type(scale) if scale != 1 else grouped
    x = np.asarray(x, dtype=work)
    y = np.asarray(y, dtype=work)
    only_l = [a for a in la if a not in ra and a not in oa]
    only_r = [a for a in ra if a not in la and a not in oa]
    if only_l:
        x = x.sum(axis=tuple(la.index(a) for a in only_l))
        la = [a for a in la if a not in only_l]
    if only_r:
        y = y.sum(axis=tuple(ra.index(a) for a in only_r))
        ra = [a for a in ra if a not in only_r]
    size = lambda axes: int(math.prod(ext[a] for a in axes))  # noqa: E731
    x = x.transpose([la.index(a) for a in batch + m + k]).reshape(size(batch), size(m), size(k))
    y = y.transpose([ra.index(a) for a in batch + k + n]).reshape(size(batch), size(k), size(n))
    z = np.matmul(x, y).reshape([ext[a] for a in batch + m + n])
    z = z.transpose([(batch + m + n).index(a) for a in oa])
    unread = [a for a, _ in bound.extents if a not in la + ra + oa + spread and a not in only_l + only_r]
    factor = scale * math.prod(ext[a] for a in unread)
    return z * work.type(factor) if factor != 1 else z


def only_sum(la, ra, oa) -> bool:
    """True when an axis is read by one operand only and summed (pre-reduced first)."""
    return any(a not in oa and (a not in la or a not in ra) for a in la + ra)


def _components(cx: np.ndarray, cy: np.ndarray) -> np.ndarray:
    """Connected components of the bipartite graph core = edge (x class, y class)."""
    comp = cx.copy()
    while True:
        by_y = np.full(cy.max() + 1, np.iinfo(np.int64).max)
        np.minimum.at(by_y, cy, comp)
        new = by_y[cy]
        by_x = np.full(cx.max() + 1, np.iinfo(np.int64).max)
        np.minimum.at(by_x, cx, new)
        new = np.minimum(new, by_x[cx])
        if (new == comp).all():
            return comp
        comp = new


def _grouped_contract(x, y, la, ra, oa, m, n, k, ext, cx, cy, work):
    """Cores whose operand windows hold equal data (same content ids and offsets) share
    work: in each group of cores forming a complete grid of distinct left x right
    operands, one wide gemm (stacked lefts x concatenated rights) computes exactly their
    products, converting each distinct operand to the compute dtype once. None when the
    cores do not group (the batched path is used)."""
    cores = x.shape[0]
    comp = _components(cx, cy)
    labels, comp = np.unique(comp, return_inverse=True)
    if len(labels) > max(1, cores // 8):
        return None
    size = lambda axes: int(math.prod(ext[a] for a in axes))  # noqa: E731
    M, N, K = size(m), size(n), size(k)
    xl = x.transpose([0] + [la.index(a) for a in m + k]).reshape(cores, M, K)
    yl = y.transpose([0] + [ra.index(a) for a in k + n]).reshape(cores, K, N)
    out = np.empty((cores, M, N), dtype=work)
    order = np.argsort(comp, kind="stable")
    bounds = np.searchsorted(comp[order], np.arange(len(labels) + 1))
    for g in range(len(labels)):
        members = order[bounds[g]:bounds[g + 1]]
        ux, ix = np.unique(cx[members], return_inverse=True)
        uy, iy = np.unique(cy[members], return_inverse=True)
        if len(ux) * len(uy) != len(members):
            return None
        rep_x = members[np.unique(ix, return_index=True)[1]]
        rep_y = members[np.unique(iy, return_index=True)[1]]
        left = np.empty((len(rep_x), M, K), dtype=work)
        np.copyto(left, xl[rep_x], casting="unsafe")
        right = np.empty((K, len(rep_y), N), dtype=work)
        for j, core in enumerate(rep_y.tolist()):  # one cast-copy per distinct operand
            right[:, j, :] = yl[core]
        product = (left.reshape(-1, K) @ right.reshape(K, -1)).reshape(len(rep_x), M, len(rep_y), N)
        out[members] = product[ix.reshape(-1), :, iy.reshape(-1), :]
    z = out.reshape([cores] + [ext[a] for a in m + n])
    return z.transpose([([CORE_AXIS] + m + n).index(a) for a in oa])


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
        self._record("host_io", f"load {buffer.name}", cycles, buffer.cores, where)

    def preload(self, buffer: Buffer, host: np.ndarray, origins: np.ndarray, where: str) -> None:
        """Start loading ``host`` (resting in off-chip memory) into ``buffer`` (ELK s4.5
        ``preload_async``): the data is in place at once, but the buffer may be read only
        after ``wait``. The load starts when the chip reaches it and the off-chip memory
        is done with the previous one (preloads are serial), and lasts the HBM roofline of
        the distinct tiles or the exchange's delivery of every core's tile, whichever is
        longer (``irc.devices.topology.preload_seconds``)."""
        if self.device.offchip is None:
            raise self.fault(where, f"device.preload_async on {self.device.name}, which has no off-chip memory")
        self._gather_into(buffer, np.asarray(host), origins)
        distinct = len(np.unique(buffer.tags)) if buffer.tags is not None else buffer.cores
        tile = buffer.bytes
        hbm_bytes = float(distinct * tile)
        cycles = preload_seconds(self.device, tile, hbm_bytes) * self.device.clock_hz
        start = max(self.now, self.hbm_free)
        self.hbm_free = start + cycles
        self.in_flight[id(buffer)] = self.hbm_free
        self.hbm_bytes += hbm_bytes
        event = Event("hbm", f"preload {buffer.name}", start, cycles, buffer.cores, where)
        self.hbm_events.append(event)
        if cycles > 0:
            rates = preload_link_rates(self.device, tile, cycles, hbm_bytes)
            event.links = rates   # the trace shows the preload on every link it loads
            self.flows.append(PreloadFlow(start, start + cycles, rates, preload_pressure(self.device, tile, cycles,
                                                                                        hbm_bytes),
                                          id(buffer), event))

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
        self._record("host_io", f"store {buffer.name}", cycles, buffer.cores, where)

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
        closed, waits for preloads and host I/O left out."""
        busy = [(e.start, e.start + e.cycles) for e in self.events[self.operator_first:]
                if e.category not in ("preload_wait", "host_io", "contention") and e.cycles > 0]
        transfers, self.operator_transfers = self.operator_transfers, 0.0
        first = min((s for s, _ in busy), default=self.now)
        self.flows = [flow for flow in self.flows if flow.end > first]
        if self.flows and transfers > 0:
            extra = operator_contention(busy, transfers, [(f.start, f.end, f.pressure) for f in self.flows])
            if extra > 0:
                self.cycles.setdefault("contention", 0.0)
                cores = max((e.cores for e in self.events[self.operator_first:]), default=1)
                self._record("contention", f"contention {name}".rstrip(), extra, cores, where)
        self.operator_first = len(self.events)

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

def _pad_for(host: np.ndarray, origins: np.ndarray, shape) -> tuple[np.ndarray, np.ndarray]:
    """``host`` zero-padded so every tile lies inside, and the origins shifted to match."""
    if origins.size == 0:
        return host, origins
    low = np.maximum(0, -origins.min(axis=0))
    high = np.maximum(0, origins.max(axis=0) + np.array(shape) - np.array(host.shape))
    if low.any() or high.any():
        host = np.pad(host, list(zip(low.tolist(), high.tolist())))
    return host, origins + low


def gather_tiles(host: np.ndarray, origins: np.ndarray, shape, cores: int) -> np.ndarray:
    """(cores, *shape): the tile of ``host`` at each core's origin, zeros outside."""
    tiles, copies = gather_distinct_tiles(host, origins, shape, cores)
    # a replicated operand: each tile picked once, then copied whole (memcpy speed)
    return tiles if copies is None else tiles[copies]


def gather_distinct_tiles(host: np.ndarray, origins: np.ndarray, shape,
                          cores: int) -> tuple[np.ndarray, np.ndarray | None]:
    """``gather_tiles`` as (tiles, None), or for a replicated operand (cores of other
    output blocks hold the same tile; at most half as many tiles as cores) as its
    distinct tiles and the one each core holds: ``tiles[copies]``."""
    origins = np.broadcast_to(np.asarray(origins, dtype=np.int64), (cores, len(shape)))
    shape = tuple(int(s) for s in shape)
    if shape and all(s > 0 for s in shape) and (origins >= 0).all():
        distinct, first, copies = np.unique(origins, axis=0, return_index=True, return_inverse=True)
        if 2 * len(distinct) <= cores:
            return _gather_blocks(host, origins[first], shape), copies.reshape(-1)
        return _gather_blocks(host, origins, shape), None
    return _gather_padded(host, origins, shape, cores), None


def _gather_padded(host: np.ndarray, origins: np.ndarray, shape: tuple[int, ...], cores: int) -> np.ndarray:
    """``gather_tiles`` through index arrays over ``host`` padded to hold every tile."""
    host, origins = _pad_for(host, origins, shape)
    index = [
        origins[:, d].reshape((cores,) + (1,) * len(shape))
        + np.arange(s).reshape((1,) * (d + 1) + (s,) + (1,) * (len(shape) - d - 1))
        for d, s in enumerate(shape)
    ]
    return host[tuple(index)] if shape else np.broadcast_to(host, (cores,)).copy()


PIECE_CHUNK = 1 << 22
"""Destination elements a relayout by pieces moves per chunk of cores (its write counts
and index arrays are this size, not the tensor's)."""

EDGE_SHARE = 0.05
"""Above this share of tiles crossing a tensor's end, a scatter writes them through a padded
copy of it (one pass) rather than element by element."""


def _interior_blocks(host: np.ndarray, shape) -> np.ndarray:
    """The whole blocks of ``host`` as a (*blocks, *shape) view (a ragged edge left out)."""
    whole = [h // s for h, s in zip(host.shape, shape)]
    cropped = host[tuple(slice(0, w * s) for w, s in zip(whole, shape))]
    rank = len(shape)
    inter = [x for w, s in zip(whole, shape) for x in (w, s)]
    return cropped.reshape(inter).transpose(list(range(0, 2 * rank, 2)) + list(range(1, 2 * rank, 2)))


def _edge_index(host: np.ndarray, origins: np.ndarray, shape) -> tuple[tuple, np.ndarray]:
    """Index arrays of the tiles at ``origins`` clipped into ``host``, and which elements
    lie inside it."""
    count, index, inside = len(origins), [], np.ones((len(origins), *shape), dtype=bool)
    for d, s in enumerate(shape):
        idx = origins[:, d].reshape((count,) + (1,) * len(shape)) + np.arange(s).reshape(
            (1,) * (d + 1) + (s,) + (1,) * (len(shape) - d - 1))
        inside &= idx < host.shape[d]
        index.append(np.broadcast_to(np.minimum(idx, host.shape[d] - 1), inside.shape))
    return tuple(index), inside


def _window_grid(host: np.ndarray, step, shape) -> np.ndarray:
    """Every window of ``shape`` whose origin is a multiple of ``step`` and that lies wholly
    in ``host``, as a read-only (*positions, *shape) view of it (no copy): with ``step``
    equal to ``shape`` the blocks of a block grid, with a smaller step overlapping windows
    (a padded step tile reading into its neighbour's rows)."""
    positions = [max(0, (h - s) // t + 1) if h >= s else 0 for h, s, t in zip(host.shape, shape, step)]
    strides = [t * stride for t, stride in zip(step, host.strides)] + list(host.strides)
    return np.lib.stride_tricks.as_strided(host, shape=tuple(positions) + tuple(shape), strides=tuple(strides),
                                           writeable=False)


def _gather_blocks(host: np.ndarray, origins: np.ndarray, shape) -> np.ndarray:
    """``gather_tiles`` for tiles whose origins lie on a grid (per dim, multiples of their
    greatest common divisor): every tile picked through a strided view of ``host`` in one
    copy (no padded copy of ``host``), then the tiles crossing its end rewritten: zeros,
    and their inside parts picked the same way, one pick per distinct inside extent (a
    handful, not one per tile)."""
    tile = np.array(shape)
    if len(origins) == 0:
        return np.zeros((0, *shape), dtype=host.dtype)
    step = np.gcd.reduce(origins, axis=0)
    step = np.where(step > 0, step, tile)            # every origin 0 on a dim: any step
    extent = np.minimum(tile, np.maximum(np.array(host.shape) - origins, 0))   # inside part per tile
    whole = (extent == tile).all(axis=1)
    view = _window_grid(host, step.tolist(), shape)
    if whole.all():
        return view[tuple((origins // step).T)]
    positions = np.array(view.shape[:len(shape)])
    if (positions > 0).all():   # crossing tiles first read a whole tile in place, rewritten below
        out = view[tuple(np.minimum(origins // step, positions - 1).T)]
    else:
        out = np.zeros((len(origins), *shape), dtype=host.dtype)
    edge = np.flatnonzero(~whole)
    out[edge] = 0
    kinds, which = np.unique(extent[edge], axis=0, return_inverse=True)
    for kind, inside in enumerate(kinds):
        if not inside.all():
            continue                                 # wholly outside: zeros
        picked = edge[which.reshape(-1) == kind]
        part = _window_grid(host, step.tolist(), inside.tolist())[tuple((origins[picked] // step).T)]
        out[(picked,) + tuple(slice(0, int(e)) for e in inside)] = part
    return out


def scatter_tiles(host: np.ndarray, tiles: np.ndarray, origins: np.ndarray, shape) -> None:
    """Write each tile into ``host`` at its origin; parts outside ``host`` are dropped."""
    cores = tiles.shape[0]
    if cores == 0:
        return
    if not shape:  # a scalar: every writer holds the whole of it
        host[...] = tiles[0]
        return
    origins = np.broadcast_to(np.asarray(origins, dtype=np.int64), (cores, len(shape)))
    if _scatter_blocks(host, tiles, origins, tuple(int(s) for s in shape)):
        return
    index, mask = [], np.ones(tiles.shape, dtype=bool)
    for d, s in enumerate(shape):
        idx = origins[:, d].reshape((cores,) + (1,) * len(shape)) + np.arange(s).reshape(
            (1,) * (d + 1) + (s,) + (1,) * (len(shape) - d - 1)
        )
        mask &= (idx >= 0) & (idx < host.shape[d])
        index.append(np.broadcast_to(idx, tiles.shape))
    if mask.all():
        host[tuple(index)] = tiles
    else:
        host[tuple(i[mask] for i in index)] = tiles[mask]


def _scatter_blocks(host: np.ndarray, tiles: np.ndarray, origins: np.ndarray, shape) -> bool:
    """``scatter_tiles`` for tiles on a block grid of ``host`` (origins multiples of the
    tile shape): whole blocks assigned through a blocked view, tiles crossing its end
    element by element (the parts outside dropped), without index arrays the size of all
    the tiles. False (nothing written) for tiles off the grid."""
    if not all(s > 0 for s in shape) or (origins < 0).any() or (origins % np.array(shape)).any():
        return False
    tile, extent = np.array(shape), np.array(host.shape)
    whole = (origins + tile <= extent).all(axis=1)
    inside_host = (origins < extent).all(axis=1)       # wholly outside: padding, dropped
    if (whole.sum() < (1 - EDGE_SHARE) * inside_host.sum()):  # many cross the end: a padded copy
        grown = [-(-h // s) * s for h, s in zip(host.shape, shape)]
        target = np.zeros(grown, dtype=host.dtype)
        target[tuple(slice(0, h) for h in host.shape)] = host
        _interior_blocks(target, shape)[tuple((origins[inside_host] // tile).T)] = tiles[inside_host]
        host[...] = target[tuple(slice(0, h) for h in host.shape)]
        return True
    if whole.any():
        _interior_blocks(host, shape)[tuple((origins[whole] // tile).T)] = tiles[whole]
    edge = np.flatnonzero(~whole & inside_host)
    if edge.size:
        index, inside = _edge_index(host, origins[edge], shape)
        host[tuple(i[inside] for i in index)] = tiles[edge][inside]
    return True


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
