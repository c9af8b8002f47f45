"""Interpreter implementations of the `npu` dialect: one `@impl` per op.

An `npu.kernel` runs its body on a `KernelRun`: DRAM holds the kernel's tensors as the
matrices of its GEMM view, the scratchpad (SPM) holds tiles as numpy arrays, and every
op moves or computes real numbers, so a program that forgets a load, accumulates into a
spilled partial or stores a tile twice computes nothing: it faults (`NpuFault`, naming
the op and the tile). What the program costs is counted as it runs, never taken from a
model: DRAM bytes read and written per tensor (each DMA's tile), compute cycles and
stall cycles. Each core's systolic array runs its GEMMs as SCALE-Sim times them, for the
tile each GEMM actually multiplies, on the dataflow the device has, and keeps the fold
it ran last: a GEMM into the same output tile (output-stationary) or over the same
right-hand tile (weight-stationary) as the core's previous one continues it without a
fill and drain (`irc.cost.igo_array.run_step`). The report puts the arrays' cycles beside
SCALE-Sim's closed form for the kernel's GEMMs whole and names the difference: the
refills its tiling and order force.

Time (IGO §2.2, the same rules as `irc.cost.igo.simulate`): one DMA queue in program
order at the DRAM bandwidth. A load or reload fills the other half of the SPM, so it
starts once the round computing when it is issued has started; a spill or store starts
once the round that last wrote its tile has ended. A round (an `npu.swap` and its GEMMs,
one per core, in lockstep: the slowest sets its length) starts when the previous round
has ended, its operand tiles have arrived and the spills that made room for them are
done. Stall is the kernel's end (its last round or DMA) minus its compute.

Occupancy: every tile present (resident, partial, finished and not yet written back)
counts; it must fit the whole SPM, and the input tiles one round's fill loads must fit
the half being filled.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.interpreter import InterpretationError, Interpreter, InterpreterFunctions, impl, register_impls

from irc.diagnostics import location_of
from irc.dialects.dtypes import numpy_dtype
from irc.dialects.npu import (
    LAYOUT,
    FreeOp,
    GemmOp,
    KernelOp,
    LoadOp,
    MatmulOp,
    ReloadOp,
    SpillOp,
    StoreOp,
    SwapOp,
    ViewError,
    values_of,
)
from irc.cost.igo import Layer, Tiling, closed_form_of, split_of
from irc.cost.igo_array import run_step
from irc.dialects.device import element_bytes
from irc.interpreter.te_eval import compute_dtype
from irc.target import TargetError, npu_device_of, require_target

RUNS_KEY = "npu_runs"
CURRENT_KEY = "npu_current"
TENSORS = ("dY", "W", "X", "dX", "dW", "Y")


class NpuFault(InterpretationError):
    """An illegal NPU program step, in IR terms."""


def where(op) -> str:
    return f"{location_of(op)}: error: '{op.name}' op"


@dataclass
class KernelReport:
    """What one executed `npu.kernel` cost."""

    name: str
    read: dict[str, int]
    written: dict[str, int]
    compute_cycles: float
    stall_cycles: float
    peak_spm_bytes: int
    gemms: int
    array_cycles: int = 0
    """Every core's array busy, summed (`compute_cycles` is the rounds', lockstep)."""
    fresh_folds: int = 0
    closed_form_cycles: int = 0
    """SCALE-Sim's cycles for the kernel's GEMMs whole (per part of its split)."""
    closed_form_folds: int = 0
    events: list[tuple[str, str, float, float]] = field(default_factory=list, repr=False)
    """(lane, label, start, end) in cycles from the kernel's start."""

    @property
    def cycles(self) -> float:
        return self.compute_cycles + self.stall_cycles

    @property
    def dram_bytes(self) -> int:
        return sum(self.read.values()) + sum(self.written.values())

    @property
    def refills(self) -> int:
        """Folds loaded into an array beyond the closed form's: what the tiling and order force."""
        return self.fresh_folds - self.closed_form_folds

    @property
    def refill_cycles(self) -> int:
        return self.array_cycles - self.closed_form_cycles


@dataclass
class NpuReport:
    """An NPU run: its kernels one after another on `device` (an ``NpuDevice``)."""

    device: Any
    kernels: list[KernelReport]

    @property
    def read(self) -> dict[str, int]:
        return {t: sum(k.read.get(t, 0) for k in self.kernels) for t in TENSORS}

    @property
    def written(self) -> dict[str, int]:
        return {t: sum(k.written.get(t, 0) for k in self.kernels) for t in TENSORS}

    @property
    def compute_cycles(self) -> float:
        return sum(k.compute_cycles for k in self.kernels)

    @property
    def stall_cycles(self) -> float:
        return sum(k.stall_cycles for k in self.kernels)

    @property
    def total_cycles(self) -> float:
        return self.compute_cycles + self.stall_cycles

    @property
    def model_cycles(self) -> float:
        return self.total_cycles

    @property
    def dram_bytes(self) -> int:
        return sum(k.dram_bytes for k in self.kernels)

    def __str__(self) -> str:
        d = self.device
        us = self.total_cycles / d.clock_hz * 1e6
        lines = [
            f"NPU {d.name} ({d.cores} core{'s' if d.cores > 1 else ''}, {d.pe_rows}x{d.pe_cols} PEs, "
            f"{d.spm_bytes:,} B SPM, {d.dram_bytes_per_s / 1e9:g} GB/s DRAM), {len(self.kernels)} kernel(s)",
            f"chip time: {self.total_cycles:,.0f} cycles = {us:,.2f} us "
            f"(compute {self.compute_cycles:,.0f}, stall {self.stall_cycles:,.0f} = "
            f"{100 * self.stall_cycles / max(self.total_cycles, 1):.1f}%)",
            f"{'DRAM traffic':<14}{'read':>14}{'written':>14}",
        ]
        read, written = self.read, self.written
        for tensor in TENSORS:
            if read[tensor] or written[tensor]:
                lines.append(f"  {tensor:<12}{read[tensor]:>14,}{written[tensor]:>14,}")
        lines.append(f"  {'total':<12}{sum(read.values()):>14,}{sum(written.values()):>14,}")
        array = sum(k.array_cycles for k in self.kernels)
        closed = sum(k.closed_form_cycles for k in self.kernels)
        lines.append(f"arrays: {array:,} cycles = SCALE-Sim's {closed:,} for the GEMMs whole + {array - closed:,} "
                     f"in {sum(k.refills for k in self.kernels):,} refills (folds reloaded: tile edges, reductions "
                     "split across tiles, orders alternating GEMMs)")
        for k in self.kernels:
            lines.append(f"kernel {k.name}: {k.cycles:,.0f} cycles (stall {k.stall_cycles:,.0f}), "
                         f"DRAM {k.dram_bytes:,} B, peak SPM {k.peak_spm_bytes:,} B, {k.gemms} tile GEMMs; "
                         f"arrays {k.array_cycles:,} = SCALE-Sim's {k.closed_form_cycles:,} + {k.refill_cycles:,} "
                         f"in {k.refills:,} refills")
        return "\n".join(lines)

    def chrome_trace(self) -> dict:
        """The kernels' rounds and DMAs as a Chrome/Perfetto trace (microseconds)."""
        us = 1e6 / self.device.clock_hz
        events, offset = [], 0.0
        for number, k in enumerate(self.kernels):
            for lane, label, start, end in k.events:
                events.append({"name": label, "ph": "X", "pid": number, "tid": lane,
                               "ts": (offset + start) * us, "dur": (end - start) * us})
            offset += k.cycles
        return {"traceEvents": events, "displayTimeUnit": "ns"}


class KernelRun:
    """The state of one executing `npu.kernel` (see the module docstring)."""

    def __init__(self, op: KernelOp | MatmulOp, device, dram: dict[str, np.ndarray], work: np.dtype):
        self.op, self.device, self.dram, self.work = op, device, dram, work
        self.sizes = dict(zip("mkn", values_of(op.tiles)))
        values = (op.x, op.w, op.y) if isinstance(op, MatmulOp) else (op.dy, op.w, op.x, op.dx, op.dw)
        names = ("X", "W", "Y") if isinstance(op, MatmulOp) else TENSORS
        self.element_bytes = {name: element_bytes(v.type.get_element_type()) for name, v in zip(names, values)}
        self.spm: dict[tuple, np.ndarray] = {}
        self.spill_area: dict[tuple, np.ndarray] = {}
        self.touched: set[tuple] = set()
        self.stored: set[tuple] = set()
        self.used = self.peak = 0
        self.fill_bytes = 0
        self.read: dict[str, int] = defaultdict(int)
        self.written: dict[str, int] = defaultdict(int)
        self.usable_from: dict[tuple, int] = {}
        self.arrival: dict[tuple, float] = {}
        self.written_round: dict[tuple, int] = {}
        self.spans: list[tuple[float, float]] = []
        self.events: list[tuple[str, str, float, float]] = []
        self.dma_free = 0.0
        self.spills_done = 0.0  # spills issued in the current fill phase
        self.round = -1
        self.open = False  # the current round's GEMMs are still being issued
        self.round_cycles = 0.0
        self.round_ready = 0.0
        self.round_gate = 0.0
        self.round_cores: set[int] = set()
        self.compute = 0.0
        self.gemms = 0
        self.resident_fold: dict[int, tuple | None] = {}
        self.array_cycles = 0
        self.fresh_folds = 0

    # tiles -----------------------------------------------------------------

    def tile_slice(self, key: tuple) -> tuple[slice, slice]:
        rows, cols = LAYOUT[key[0]]
        a, b = key[1], key[2]
        return (slice(a * self.sizes[rows], (a + 1) * self.sizes[rows]),
                slice(b * self.sizes[cols], (b + 1) * self.sizes[cols]))

    def nbytes(self, key: tuple) -> int:
        rows, cols = self.tile_slice(key)
        shape = self.dram[key[0]][rows, cols].shape
        return shape[0] * shape[1] * self.element_bytes[key[0]]

    def place(self, op, key: tuple, value: np.ndarray) -> None:
        size = self.nbytes(key)
        if self.used + size > self.device.spm_bytes:
            raise NpuFault(f"{where(op)} {describe(key)} ({size} B) does not fit the SPM: "
                           f"{self.used} of {self.device.spm_bytes} B are taken")
        self.spm[key] = value
        self.used += size
        self.peak = max(self.peak, self.used)

    def drop(self, key: tuple) -> np.ndarray:
        self.used -= self.nbytes(key)
        return self.spm.pop(key)

    # time ------------------------------------------------------------------

    def close_round(self) -> None:
        """Fix the current round's start and end once its GEMMs are all issued."""
        if not self.open:
            return
        self.open = False
        previous = self.spans[-1][1] if self.spans else 0.0
        start = max(previous, self.round_ready, self.round_gate)
        self.spans.append((start, start + self.round_cycles))
        self.events.append(("compute", f"round {self.round}", start, start + self.round_cycles))
        self.compute += self.round_cycles

    def dma(self, op, key: tuple, earliest: float, fill: bool = False) -> float:
        self.close_round()
        size = self.nbytes(key)
        start = max(self.dma_free, earliest)
        self.dma_free = start + self.device.dram_cycles(size)
        self.events.append(("dma", f"{op.name.split('.')[1]} {describe(key)}", start, self.dma_free))
        if fill:
            self.fill_bytes += size
            if self.fill_bytes > self.device.spm_bytes // 2:
                raise NpuFault(f"{where(op)} the fill of round {self.round + 1} takes {self.fill_bytes} B, more "
                               f"than the half of the SPM being filled ({self.device.spm_bytes // 2} B)")
        return self.dma_free

    def round_start(self) -> float:
        self.close_round()
        return self.spans[self.round][0] if self.round >= 0 else 0.0

    def ready(self, key: tuple) -> float:
        """When the data of a partial is final: the end of the round that last wrote it."""
        rounds = [self.written_round[p] for p in self.partials(key)] if len(key) == 3 else [self.written_round[key]]
        return max(self.spans[r][1] for r in rounds)

    def partials(self, key: tuple) -> list[tuple]:
        return sorted(p for p in self.touched if p[:3] == key[:3])

    def finish(self) -> float:
        self.close_round()
        end = max(self.spans[-1][1] if self.spans else 0.0, self.dma_free)
        return end


def describe(key: tuple) -> str:
    text = f"{key[0]} tile <{key[1]}, {key[2]}>"
    return text + (f" part {key[3]}" if len(key) > 3 else "")


def matrices(op: KernelOp, args) -> tuple[dict[str, np.ndarray], Any, np.dtype]:
    try:
        view = op.view()
    except ViewError as error:
        raise NpuFault(f"{where(op)} {error}") from None
    work = compute_dtype(numpy_dtype(op.dx.type.get_element_type()))
    dram = {}
    for name, value in zip(("dY", "W", "X"), args):
        dram[name] = np.asarray(value)[view.index_arrays(name)].astype(work)
    m, k, n = view.gemm
    dram["dX"], dram["dW"] = np.zeros((m, k), work), np.zeros((k, n), work)
    return dram, view, work


@register_impls
class NpuFunctions(InterpreterFunctions):
    def run_of(self, interpreter: Interpreter, op) -> KernelRun:
        stack = interpreter.get_data(NpuFunctions, CURRENT_KEY, list)
        if not stack:
            raise NpuFault(f"{where(op)} outside an npu.kernel")
        return stack[-1]

    @impl(KernelOp)
    def run_kernel(self, interpreter: Interpreter, op: KernelOp, args: tuple[Any, ...]):
        try:
            device = npu_device_of(require_target(op))
        except TargetError as error:
            raise NpuFault(f"{where(op)} {error}") from None
        dram, view, work = matrices(op, args)
        name = f"{op.dx_expression.expr.output.tensor}/{op.dw_expression.expr.output.tensor} ({location_of(op)})"
        return self.execute(interpreter, op, device, dram, view, work, {"dX": op.dx, "dW": op.dw}, name)

    @impl(MatmulOp)
    def run_matmul(self, interpreter: Interpreter, op: MatmulOp, args: tuple[Any, ...]):
        try:
            device = npu_device_of(require_target(op))
        except TargetError as error:
            raise NpuFault(f"{where(op)} {error}") from None
        try:
            view = op.view()
        except ViewError as error:
            raise NpuFault(f"{where(op)} {error}") from None
        work = compute_dtype(numpy_dtype(op.y.type.get_element_type()))
        dram = {name: np.asarray(value)[view.index_arrays(name)].astype(work) for name, value in zip("XW", args)}
        m, _, n = view.gemm
        dram["Y"] = np.zeros((m, n), work)
        name = f"{op.expression.expr.output.tensor} ({location_of(op)})"
        return self.execute(interpreter, op, device, dram, view, work, {"Y": op.y}, name)

    def execute(self, interpreter: Interpreter, op, device, dram, view, work, outputs: dict, name: str):
        """Run a kernel's body on `dram` (its tensors as matrices), check every tile of
        `outputs` (tensor -> result value) was stored, record its report and return the
        outputs as tensors."""
        held = sum(matrix.size for matrix in dram.values()) * element_bytes(op.w.type.get_element_type())
        if device.dram_bytes is not None and held > device.dram_bytes:
            raise NpuFault(f"{where(op)} its tensors ({', '.join(dram)}) need {held} B of DRAM, more than "
                           f"{device.name}'s {device.dram_bytes} B")
        run = KernelRun(op, device, dram, work)
        stack = interpreter.get_data(NpuFunctions, CURRENT_KEY, list)
        stack.append(run)
        try:
            for inner in op.body.block.ops:
                interpreter.run_op(inner, ())
        finally:
            stack.pop()
        end = run.finish()
        counts = op.tile_counts()
        results = []
        for tensor, value in outputs.items():
            rows, cols = LAYOUT[tensor]
            for a in range(counts[rows]):
                for b in range(counts[cols]):
                    if (tensor, a, b) not in run.stored:
                        raise NpuFault(f"{where(op)} {tensor} tile <{a}, {b}> is never stored")
            out = np.zeros(value.type.get_shape(), work)
            np.add.at(out, view.index_arrays(tensor), run.dram[tensor])
            results.append(out.astype(numpy_dtype(value.type.get_element_type())))
        closed, folds = closed_form(op, device)
        interpreter.get_data(NpuFunctions, RUNS_KEY, list).append((device, KernelReport(
            name, dict(run.read), dict(run.written), run.compute, end - run.compute, run.peak, run.gemms,
            run.array_cycles, run.fresh_folds, closed, folds, run.events,
        )))
        return tuple(results)

    @impl(LoadOp)
    def run_load(self, interpreter: Interpreter, op: LoadOp, args: tuple[Any, ...]):
        run = self.run_of(interpreter, op)
        key = op.key()
        if key in run.spm:
            raise NpuFault(f"{where(op)} {describe(key)} is already in the SPM")
        rows, cols = run.tile_slice(key)
        run.place(op, key, run.dram[key[0]][rows, cols].copy())
        run.arrival[key] = run.dma(op, key, run.round_start(), fill=True)
        run.usable_from[key] = run.round + 1
        run.read[key[0]] += run.nbytes(key)
        return ()

    @impl(FreeOp)
    def run_free(self, interpreter: Interpreter, op: FreeOp, args: tuple[Any, ...]):
        run = self.run_of(interpreter, op)
        key = op.key()
        if key not in run.spm:
            raise NpuFault(f"{where(op)} {describe(key)} is not in the SPM")
        run.close_round()
        run.drop(key)
        return ()

    @impl(SpillOp)
    def run_spill(self, interpreter: Interpreter, op: SpillOp, args: tuple[Any, ...]):
        run = self.run_of(interpreter, op)
        key = op.key()
        if key not in run.spm:
            raise NpuFault(f"{where(op)} {describe(key)} is not in the SPM")
        run.close_round()
        run.spill_area[key] = run.drop(key)
        run.spills_done = run.dma(op, key, run.ready(key))
        run.written[key[0]] += run.nbytes(key)
        return ()

    @impl(ReloadOp)
    def run_reload(self, interpreter: Interpreter, op: ReloadOp, args: tuple[Any, ...]):
        run = self.run_of(interpreter, op)
        key = op.key()
        if key not in run.spill_area:
            raise NpuFault(f"{where(op)} {describe(key)} was not spilled")
        run.place(op, key, run.spill_area.pop(key))
        run.arrival[key] = run.dma(op, key, run.round_start())
        run.usable_from[key] = run.round + 1
        run.read[key[0]] += run.nbytes(key)
        return ()

    @impl(StoreOp)
    def run_store(self, interpreter: Interpreter, op: StoreOp, args: tuple[Any, ...]):
        run = self.run_of(interpreter, op)
        key = op.key()
        if key in run.stored:
            raise NpuFault(f"{where(op)} {describe(key)} is stored twice")
        partials = run.partials(key)
        missing = [p for p in partials if p not in run.spm]
        if missing:
            raise NpuFault(f"{where(op)} {describe(missing[0])} is not in the SPM")
        if len(partials) != op.part_count():
            raise NpuFault(f"{where(op)} {describe(key)} has {len(partials)} partial sum(s), the store says {op.part_count()}")
        run.close_round()
        ready = run.ready(key)
        total = sum(run.drop(p) for p in partials)
        rows, cols = run.tile_slice(key)
        run.dram[key[0]][rows, cols] = total
        run.stored.add(key)
        run.dma(op, key, ready)
        run.written[key[0]] += run.nbytes(key)
        return ()

    @impl(SwapOp)
    def run_swap(self, interpreter: Interpreter, op: SwapOp, args: tuple[Any, ...]):
        run = self.run_of(interpreter, op)
        run.close_round()
        run.round += 1
        run.open = True
        run.round_cycles, run.round_ready, run.round_cores = 0.0, 0.0, set()
        run.round_gate, run.spills_done, run.fill_bytes = run.spills_done, 0.0, 0
        return ()

    @impl(GemmOp)
    def run_gemm(self, interpreter: Interpreter, op: GemmOp, args: tuple[Any, ...]):
        run = self.run_of(interpreter, op)
        device = run.device
        if not run.open:
            raise NpuFault(f"{where(op)} a GEMM must follow an npu.swap, before the round's DMAs")
        if op.dataflow.data != device.dataflow:
            raise NpuFault(f"{where(op)} dataflow '{op.dataflow.data}' but {device.name}'s array is "
                           f"'{device.dataflow}'")
        core = op.core_index()
        if core >= device.cores or core in run.round_cores:
            raise NpuFault(f"{where(op)} core {core} is {'busy in this round' if core < device.cores else 'not on ' + device.name}")
        run.round_cores.add(core)
        a_key, b_key, out = op.tiles()
        for key in (a_key, b_key):
            if key not in run.spm or run.usable_from.get(key, 0) > run.round:
                raise NpuFault(f"{where(op)} {describe(key)} is not in the computing half of the SPM")
            run.round_ready = max(run.round_ready, run.arrival.get(key, 0.0))
        if out not in run.spm:
            if out[:3] in run.stored:
                raise NpuFault(f"{where(op)} {describe(out)} is already stored")
            if out in run.touched:
                raise NpuFault(f"{where(op)} {describe(out)} was spilled and not reloaded")
            rows, cols = run.tile_slice(out)
            run.place(op, out, np.zeros(run.dram[out[0]][rows, cols].shape, run.work))
            run.touched.add(out)
        elif run.usable_from.get(out, 0) > run.round:
            raise NpuFault(f"{where(op)} {describe(out)} is still being reloaded")
        run.round_ready = max(run.round_ready, run.arrival.get(out, 0.0))
        a, b = run.spm[a_key], run.spm[b_key]
        if op.kind.data == "dx":  # dY(tm x tn) · W(tk x tn)ᵀ
            m, k, n = a.shape[0], a.shape[1], b.shape[0]
            run.spm[out] += a @ b.T
        elif op.kind.data == "fw":  # X(tm x tk) · W(tk x tn)
            m, k, n = a.shape[0], a.shape[1], b.shape[1]
            run.spm[out] += a @ b
        else:  # X(tm x tk)ᵀ · dY(tm x tn)
            m, k, n = a.shape[1], a.shape[0], b.shape[1]
            run.spm[out] += a.T @ b
        # what the array holds: the output tile (os) or the right-hand tile, Wᵀ or dY (ws)
        stationary = out if device.dataflow == "os" else (op.kind.data, b_key)
        array, run.resident_fold[core] = run_step(run.resident_fold.get(core), stationary, m, k, n, device.pe_rows,
                                                  device.pe_cols, device.dataflow)
        run.round_cycles = max(run.round_cycles, array.cycles)
        run.array_cycles += array.cycles
        run.fresh_folds += array.fresh
        run.written_round[out] = run.round
        run.gemms += 1
        return ()


def closed_form(op: KernelOp | MatmulOp, device) -> tuple[int, int]:
    """SCALE-Sim's cycles and folds for the kernel's GEMMs whole (dX and dW, or the
    forward GEMM), per part of the split its body runs (the reference the report
    compares the arrays with)."""
    m, k, n = values_of(op.gemm)
    scheme = op.attributes.get("partition")
    parts = op.attributes.get("parts")
    scheme, count = split_of(device, scheme.data if scheme is not None else None,
                             int(parts.value.data) if parts is not None else None)
    order = "forward" if isinstance(op, MatmulOp) else "baseline"
    return closed_form_of(Layer(m, k, n), Tiling(*values_of(op.tiles)), order, scheme, count, device)


def npu_report(interpreter: Interpreter) -> NpuReport | None:
    """The NPU kernels a finished run executed, in order (None when there were none)."""
    runs = interpreter.get_data(NpuFunctions, RUNS_KEY, list)
    if not runs:
        return None
    return NpuReport(runs[0][0], [report for _, report in runs])

