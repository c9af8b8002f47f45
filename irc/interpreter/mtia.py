"""Interpreter of the `mtia` dialect: real numbers on every PE, and a timeline of the
producer/consumer program of section 4 (seeds/001) with its memory traffic per level.

Values: a circular buffer is a ``CircularBuffer`` (every PE's slice, a leading
[rows, cols] axis pair, plus how its DMA streams it); accumulators are ``Accumulators``
(every PE's partial sums, which PEs hold final sums, and the kernel's timeline so far).

Timing follows Figure 8 for one PE (the program is SPMD and every PE's slices have the
same shape, so every PE's timeline is the same; the reduction chain is the one place
where PEs differ, and it is timed end to end). The producer issues the DMAs in the loop
order (m chunks, n chunks, k steps), each waiting for space in its circular buffer; the
consumer's four MMLs of a k step wait until their blocks have arrived (the hardware
stall), and the accumulators of a tile are free again once the reduction engine has sent
them on. Blocks leave a buffer (POP) after their last use. Every constant comes from the
target's device description through ``irc.cost.mtia``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.interpreter import Interpreter, InterpreterFunctions, impl, register_impls
from xdsl.utils.exceptions import InterpretationError

from irc.cost import OpWork, SubTask, get_cost_model
from irc.cost.mtia import (
    TILE_M,
    TILE_N,
    edge_hops,
    gather_share,
    reduction_chain_cycles,
    simd_cycles,
    stream_cycles,
)
from irc.devices import family_of
from irc.diagnostics import location_of
from irc.dialects.device import core_table as _core_table
from irc.dialects.dtypes import numpy_dtype
from irc.dialects.mtia import (
    CircularBufferInitOp,
    CombineOp,
    DmaOp,
    FreeOp,
    GatherOp,
    LoadOp,
    MatMulOp,
    PoolOp,
    PutOp,
    ReduceOp,
    ShiftOp,
    SimdOp,
    StepOp,
    StoreOp,
    TileOp,
    accumulator_element,
    element_bytes,
    simd_traffic,
)
from irc.dialects.te import OpaqueOp, TensorOp
from irc.interpreter.chip import Chip, scatter_tiles
from irc.interpreter.kernels import KernelError, check_indices, check_offsets
from irc.interpreter.te_eval import evaluate
from irc.interpreter.mtia_report import KernelRecord, MtiaReport, Traffic  # noqa: F401 (re-exported)
from irc.interpreter.mtia_timeline import (  # noqa: F401 (MtiaRunError and the values re-exported)
    CircularBuffer,
    MtiaRunError,
    StreamInfo,
    gather_timeline,
    matmul_timeline,
)
from irc.target import MtiaTargetError, require_mtia_target

MACHINES_KEY = "mtia_machines"


class MtiaMachine:
    """The state of one MTIA chip over a run: the kernels it executed, and the ops of its
    program left at te level (the host runs them; the chip time does not count them)."""

    def __init__(self, device, host_ops=()):
        self.device = device
        self.kernels: list[KernelRecord] = []
        self.host_ops = list(host_ops)
        self._chip = None
        self.rotation: RotationKernel | None = None   # the T10 kernel being run

    @property
    def chip(self):
        """The PEs as the cores of a T10 chip (``irc.interpreter.chip.Chip``): tiles in
        local memory, steps, shifts and reductions with real numbers, priced by the
        ``mtia`` cost model (its categories are moved into the kernel's record)."""
        if self._chip is None:
            self._chip = Chip(self.device, get_cost_model(family_of(self.device).cost_model))
        return self._chip

    def report(self) -> MtiaReport:
        return MtiaReport(self.device.name, self.device.clock_hz, self.device.pes, list(self.kernels),
                          list(self.host_ops))


def _host_ops(op) -> list[str]:
    """The te ops of the program ``op`` belongs to, named as a report lists them."""
    top = op
    while top.parent_op() is not None:
        top = top.parent_op()
    names = []
    for each in top.walk():
        if isinstance(each, TensorOp):
            names.append(f"te.op \"{each.expression.text}\"")
        elif isinstance(each, OpaqueOp):
            names.append(f"te.opaque \"{each.kind.data}\"")
    return names


def machines(interpreter: Interpreter) -> dict:
    return interpreter.get_data(MtiaFunctions, MACHINES_KEY, dict)


def _machine(interpreter: Interpreter, op) -> MtiaMachine:
    try:
        target, device = require_mtia_target(op)
    except MtiaTargetError as error:
        raise MtiaRunError(f"{location_of(op)}: error: '{op.name}' op: {error}") from None
    table = machines(interpreter)
    if target not in table:
        table[target] = MtiaMachine(device, _host_ops(op))
    return table[target]


@dataclass
class Accumulators:
    values: np.ndarray                 # [rows, cols, m, n]
    holders: np.ndarray                # [rows, cols] bool: PEs holding final sums
    grid: tuple[int, int]
    record: KernelRecord
    tile_ends: list                    # per output tile: when its sums are final
    acc_bytes: int
    tile_elements: int = TILE_M * TILE_N   # elements one tile_ends entry writes
    exact_writes: bool = False         # the store writes only what lies inside the result


ORIGIN_LIMIT = 2**62
"""Largest origin coordinate irc computes (int64 with room for the block added to it)."""


def _origins(op, grid) -> np.ndarray:
    """origin(d0, d1) of every PE: [rows, cols, rank]; a coordinate beyond ``ORIGIN_LIMIT``
    is an error at the op (a block there lies outside any tensor irc can hold)."""
    rows, cols = grid
    affine = op.origin.data
    values = [[affine.eval([r, c], []) for c in range(cols)] for r in range(rows)]
    if any(abs(v) >= ORIGIN_LIMIT for row in values for point in row for v in point):
        raise MtiaRunError(f"{location_of(op)}: error: '{op.name}' op origin {affine} reaches beyond 2**62 on the "
                           f"{rows}x{cols} PE grid")
    return np.array(values, dtype=np.int64)


def _window(tensor: np.ndarray, origin, shape) -> np.ndarray:
    """The ``shape`` window of ``tensor`` at ``origin``, zero outside it."""
    out = np.zeros(shape, dtype=tensor.dtype)
    lo = [max(0, int(o)) for o in origin]
    hi = [min(t, int(o) + s) for t, o, s in zip(tensor.shape, origin, shape)]
    if all(h > l for l, h in zip(lo, hi)):
        src = tuple(slice(l, h) for l, h in zip(lo, hi))
        dst = tuple(slice(l - int(o), h - int(o)) for l, h, o in zip(lo, hi, origin))
        out[dst] = tensor[src]
    return out


def _distinct_reads(origins: np.ndarray, multicast: str) -> int:
    """Reads the memory serves: one per group of PEs in one row (column) reading the same
    slice; every PE's own without multicast."""
    rows, cols = origins.shape[:2]
    keys = set()
    for r in range(rows):
        for c in range(cols):
            line = r if multicast == "row" else c if multicast == "column" else (r, c)
            keys.add((line, tuple(origins[r, c])))
    return len(keys)


@dataclass
class GatheredBags:
    """What a ``mtia.gather`` left in a circular buffer for its ``mtia.pool``: the table
    (the level's data), every bag's pooled rows ``pooled`` (in the accumulators' type:
    the sums are the pooling's, computed here once for all PEs), and per PE the row
    counts of its bags in gather order (samples, then tables)."""

    op: GatherOp
    pooled: np.ndarray                 # [tables * batch, dim], bag b = t * batch + s
    counts: np.ndarray                 # [tables * batch] rows per bag
    first: np.ndarray                  # [rows, cols] first sample of each PE
    row_bytes: int
    index_bytes: int                   # per index
    offset_bytes: int                  # per offset


def _bag_sums(table: np.ndarray, rows: np.ndarray, starts: np.ndarray, ends: np.ndarray, accumulate,
              mode: str) -> np.ndarray:
    """Every bag's sum (or mean) of ``table[rows[starts[b]:ends[b]]]`` in ``accumulate``,
    added row after row as the SIMD engine does; an empty bag is zeros."""
    data = np.concatenate([table[rows].astype(accumulate), np.zeros((1, table.shape[1]), dtype=accumulate)])
    sums = np.add.reduceat(data, np.minimum(starts, len(rows)), axis=0)
    counts = ends - starts
    sums[counts == 0] = 0
    if mode == "mean":
        divided = sums / np.maximum(counts, 1)[:, None]
        sums = divided.astype(accumulate) if np.issubdtype(accumulate, np.floating) else np.trunc(divided).astype(
            accumulate)
    return sums


@dataclass
class RotationKernel:
    """A T10 plan's program being run: its record, and its loads so far (one prologue:
    ``(level, bytes the level serves, bytes one PE takes in, latency)`` each)."""

    record: KernelRecord
    loads: list = field(default_factory=list)


def _rotation(machine: MtiaMachine, pes: int) -> RotationKernel:
    if machine.rotation is None:
        record = KernelRecord(name="rotation", pes=pes, engine="DPE", kind="rotation")
        machine.rotation = RotationKernel(record)
        machine.kernels.append(record)
    return machine.rotation


def _charged(machine: MtiaMachine, op, run) -> Any:
    """Run ``run()`` on the machine's chip and move the cycles it recorded, by category,
    into the open T10 kernel's record (a shift's barrier under sync, as the planner)."""
    chip = machine.chip
    before = dict(chip.cycles)
    result = run()
    record = machine.rotation.record if machine.rotation is not None else None
    for category, cycles in chip.cycles.items():
        delta = cycles - before.get(category, 0.0)
        if delta and record is not None:
            record.cycles[category] = record.cycles.get(category, 0.0) + delta
    return result


def _where(op) -> str:
    return f"{location_of(op)}: error: '{op.name}' op"


@register_impls
class MtiaFunctions(InterpreterFunctions):
    @impl(CircularBufferInitOp)
    def run_cb_init(self, interpreter: Interpreter, op: CircularBufferInitOp, args: tuple[Any, ...]):
        _machine(interpreter, op)
        slice_type = op.buffer.type
        return (CircularBuffer(op.buffer_name.data, int(op.depth.value.data), op.grid_shape,
                               slice_type.get_shape(), element_bytes(slice_type.element_type)),)

    @impl(DmaOp)
    def run_dma(self, interpreter: Interpreter, op: DmaOp, args: tuple[Any, ...]):
        tensor, buffer = np.asarray(args[0]), args[1]
        device = _machine(interpreter, op).device
        rows, cols = buffer.grid
        origins = _origins(op, buffer.grid)
        buffer.data = np.stack([np.stack([_window(tensor, origins[r, c], buffer.shape) for c in range(cols)])
                                for r in range(rows)])
        multicast = op.multicast.data if device.has_multicast else "none"
        buffer.stream = StreamInfo(op.level.data, op.read_passes, tuple(int(v) for v in op.block.get_values()),
                                   _distinct_reads(origins, multicast), int(cols + rows // 2))
        return ()

    @impl(MatMulOp)
    def run_mml(self, interpreter: Interpreter, op: MatMulOp, args: tuple[Any, ...]):
        a, b = args
        machine = _machine(interpreter, op)
        for buffer in (a, b):
            if buffer.data is None:
                raise MtiaRunError(f"circular buffer {buffer.name} is read by an MML before any DMA filled it")
        rhs = np.swapaxes(b.data, -1, -2) if op.transposed else b.data
        if np.issubdtype(a.data.dtype, np.integer):
            values = np.matmul(a.data.astype(np.int64), rhs.astype(np.int64))
        else:
            values = np.matmul(a.data.astype(np.float32), rhs.astype(np.float32))
        rows, cols = a.grid
        hint = op.result.name_hint or ""
        name = hint[:-4] if hint.endswith("_acc") else f"mml({a.name},{b.name})"
        record = KernelRecord(name=name, pes=rows * cols)
        tile_ends = matmul_timeline(machine.device, op, a, b, record, _written(op), _chain(op))
        machine.kernels.append(record)
        acc_bytes = element_bytes(op.result.type.element_type)
        return (Accumulators(values, np.ones((rows, cols), dtype=bool), a.grid, record, tile_ends, acc_bytes),)

    @impl(ReduceOp)
    def run_reduce(self, interpreter: Interpreter, op: ReduceOp, args: tuple[Any, ...]):
        (acc,) = args
        device = _machine(interpreter, op).device
        chain = int(op.chain.value.data)
        rows, cols = acc.grid
        values = acc.values
        holders = np.zeros((rows, cols), dtype=bool)
        summed = np.zeros_like(values)
        if op.direction.data == "west-east":
            groups = values.reshape(rows, cols // chain, chain, *values.shape[2:]).sum(axis=2)
            for g in range(cols // chain):
                summed[:, g * chain + chain - 1] = groups[:, g]
                holders[:, g * chain + chain - 1] = True
        else:
            groups = values.reshape(rows // chain, chain, cols, *values.shape[2:]).sum(axis=1)
            for g in range(rows // chain):
                summed[g * chain + chain - 1] = groups[g]
                holders[g * chain + chain - 1] = True
        tile_bytes = TILE_M * TILE_N * device.accumulator_bytes
        hop = float(reduction_chain_cycles(device, tile_bytes, chain))
        # tile t's sums leave the chain after its chain passes (pipelined: the link is
        # busy one tile's bytes per tile)
        link = tile_bytes / device.reduction_link_bytes_per_cycle
        ends, previous = [], 0.0
        for end in acc.tile_ends:
            done = max(end + hop, previous + link)
            ends.append(done)
            previous = done
        return (Accumulators(summed, holders, acc.grid, acc.record, ends, acc.acc_bytes),)

    @impl(StoreOp)
    def run_store(self, interpreter: Interpreter, op: StoreOp, args: tuple[Any, ...]):
        (acc,) = args
        device = _machine(interpreter, op).device
        out_type = op.result.type
        dtype = numpy_dtype(out_type.get_element_type())
        shape = tuple(out_type.get_shape())
        result = np.zeros(shape, dtype=dtype)
        origins = _origins(op, acc.grid)
        rows, cols = acc.grid
        block = acc.values.shape[2:]
        writers = inside = 0
        for r in range(rows):
            for c in range(cols):
                if not acc.holders[r, c]:
                    continue
                writers += 1
                lo = origins[r, c]
                hi = [min(s, int(o) + b) for s, o, b in zip(shape, lo, block)]
                if any(h <= int(o) for h, o in zip(hi, lo)):
                    continue
                part = acc.values[r, c][tuple(slice(0, h - int(o)) for h, o in zip(hi, lo))]
                result[tuple(slice(int(o), h) for o, h in zip(lo, hi))] = _convert(part, dtype)
                inside += part.size
        out_bytes = element_bytes(out_type.get_element_type())
        tile_out = acc.tile_elements * out_bytes
        level = op.level.data
        record = acc.record
        written = (inside if acc.exact_writes else writers * math.prod(block)) * out_bytes
        record.traffic.add(level, written)
        record.traffic.add("local", written)
        # the writers' DMAs: one tile each time its sums are final, at the PE link's rate
        xfer = tile_out / device.noc_pe_bytes_per_cycle
        done = 0.0
        for end in acc.tile_ends:
            done = max(end + device.dma_issue_cycles + device.level_latency_cycles(level) + xfer, done + xfer)
        record.cycles["drain"] = max(0.0, done - record.last_mml_end)
        record.dma_commands += len(acc.tile_ends)
        return (result,)


    @impl(GatherOp)
    def run_gather(self, interpreter: Interpreter, op: GatherOp, args: tuple[Any, ...]):
        table = np.asarray(args[0])
        indices = np.asarray(args[1]).astype(np.int64).reshape(-1)
        offsets = np.asarray(args[2]).astype(np.int64).reshape(-1)
        buffer = args[3]
        _machine(interpreter, op)
        where = f"{location_of(op)}: error: '{op.name}' op"
        rows = op.table_rows
        batch, tables = op.batch_size, len(rows)
        bags = tables * batch
        starts = np.cumsum([0, *rows])
        try:
            check_offsets(where, offsets, indices.size)
            ends = np.append(offsets[1:], indices.size) if offsets.size == bags else offsets[1:bags + 1]
            lo = int(offsets[0]) if offsets.size else 0
            table_of = np.zeros(indices.size, dtype=np.int64)
            for t in range(tables):
                first, last = int(offsets[t * batch]), int(ends[(t + 1) * batch - 1])
                check_indices(where, indices[first:last], rows[t], f"table {t}: " if tables > 1 else "", first)
                table_of[first:last] = starts[t]
        except KernelError as error:
            raise MtiaRunError(str(error)) from None
        global_rows = (indices + table_of)[lo:]
        accumulate = numpy_dtype(accumulator_type(op))
        mode = _pool_mode(op)
        pooled = _bag_sums(table, global_rows, offsets[:bags] - lo, ends - lo, accumulate, mode)
        buffer.data = np.empty((0,))   # the rows stream through; the pooling has their sums
        buffer.gathered = GatheredBags(op, pooled, (ends - offsets[:bags]).astype(np.int64),
                                       _origins_1(op, buffer.grid), table.shape[1] * table.dtype.itemsize,
                                       np.asarray(args[1]).dtype.itemsize, np.asarray(args[2]).dtype.itemsize)
        return ()

    @impl(PoolOp)
    def run_pool(self, interpreter: Interpreter, op: PoolOp, args: tuple[Any, ...]):
        (buffer,) = args
        machine = _machine(interpreter, op)
        device = machine.device
        gathered = buffer.gathered
        if gathered is None:
            raise MtiaRunError(f"{location_of(op)}: error: '{op.name}' op pools circular buffer {buffer.name}, "
                               f"which no mtia.gather filled")
        gather = gathered.op
        batch, tables = gather.batch_size, len(gather.table_rows)
        samples = gather.samples_per_pe
        dim = buffer.shape[1]
        rows_grid, cols_grid = buffer.grid
        values = np.zeros((rows_grid, cols_grid, samples, tables * dim), dtype=gathered.pooled.dtype)
        holders = np.zeros((rows_grid, cols_grid), dtype=bool)
        plan: dict = {}
        for r in range(rows_grid):
            for c in range(cols_grid):
                first = int(gathered.first[r, c])
                mine = [s for s in range(first, first + samples) if 0 <= s < batch]
                if not mine:
                    continue
                holders[r, c] = True
                for i, s in enumerate(mine):
                    for t in range(tables):
                        values[r, c, i, t * dim:(t + 1) * dim] = gathered.pooled[t * batch + s]
                plan[(r, c)] = [[int(gathered.counts[t * batch + s]) for t in range(tables)] for s in mine]
        record = KernelRecord(name=op.result.name_hint.removesuffix("_pooled") if op.result.name_hint else
                              f"pool({buffer.name})", pes=rows_grid * cols_grid, engine="SIMD", kind="embedding")
        level = gather.level.data
        rows_of = {pe: sum(map(sum, bags)) for pe, bags in plan.items()}
        total_rows = sum(rows_of.values())
        index_of = {pe: rows_of[pe] * gathered.index_bytes + (len(bags) * tables + 1) * gathered.offset_bytes
                    for pe, bags in plan.items()}
        total_index = sum(index_of.values())
        element = gather.table.type.get_element_type()
        common = {"simd": float(simd_cycles(device, dim, element_bytes(element))), "level": level,
                  "row_bytes": gathered.row_bytes, "window": buffer.shape[0],
                  "hops": edge_hops(device, rows_grid, cols_grid)}
        stores = [use.operation for use in op.result.uses if isinstance(use.operation, StoreOp)]
        out_bytes = element_bytes(stores[0].result.type.get_element_type()) if stores else 4
        pooled_bytes = batch * tables * dim * out_bytes
        slowest = None
        for pe, bags in plan.items():
            own = rows_of[pe] * gathered.row_bytes
            work = dict(common, index_bytes=index_of[pe], index_share=total_index / max(index_of[pe], 1),
                        share=gather_share(level, total_rows * gathered.row_bytes, pooled_bytes, own))
            ends, cycles = gather_timeline(device, bags, work)
            if slowest is None or ends[-1] > slowest[0][-1]:
                slowest = (ends, cycles, pe)
        ends, cycles, pe = slowest if slowest is not None else ([], {"fill": 0.0, "compute": 0.0, "dma_wait": 0.0},
                                                                None)
        record.cycles = dict(cycles)
        record.last_mml_end = ends[-1] if ends else 0.0
        record.dma_commands = (rows_of[pe] + 1) if pe is not None else 0
        row_bytes = total_rows * gathered.row_bytes
        record.traffic.add(level, row_bytes)
        record.traffic.add("sram", total_index)
        record.traffic.add("local", 2 * row_bytes + total_index)
        machine.kernels.append(record)
        return (Accumulators(values, holders, buffer.grid, record, list(ends), element_bytes(op.result.type.element_type),
                             tile_elements=tables * dim, exact_writes=True),)

    @impl(SimdOp)
    def run_simd(self, interpreter: Interpreter, op: SimdOp, args: tuple[Any, ...]):
        machine = _machine(interpreter, op)
        device = machine.device
        out_dtype = numpy_dtype(op.output.type.get_element_type())
        bound = op.bound()
        try:
            values = evaluate(bound, [np.asarray(a) for a in args], out_dtype)
        except InterpretationError as error:
            raise MtiaRunError(f"{location_of(op)}: error: '{op.name}' op {error}") from None
        read, write = simd_traffic(op.inputs, op.output, op.levels)
        pes = int(op.pes.value.data)
        cycles, terms = stream_cycles(device, read, write, bound.iteration_points,
                                      element_bytes(op.output.type.get_element_type()), pes)
        body = max(terms.values())
        record = KernelRecord(name=op.output.name_hint or f"simd({op.expression.text})", pes=pes, engine="SIMD",
                              kind="stream")
        record.cycles = {"fill": cycles - body, "compute": terms["compute"], "dma_wait": body - terms["compute"]}
        record.dma_commands = len(op.inputs) + 1
        moved = 0.0
        for source in (read, write):
            for level, nbytes in source.items():
                record.traffic.add(level, nbytes)
                moved += nbytes
        record.traffic.add("local", 2 * moved)
        machine.kernels.append(record)
        return (values,)


    # -- T10 plans on the PE grid ----------------------------------------------------------

    @impl(TileOp)
    def run_tile(self, interpreter: Interpreter, op: TileOp, args: tuple[Any, ...]):
        machine = _machine(interpreter, op)
        pes = int(op.pes.value.data)
        if pes > machine.device.pes:
            raise MtiaRunError(f"{_where(op)} tile {op.tile_name.data} lives on {pes} PEs; "
                               f"{machine.device.name} has {machine.device.pes}")
        _rotation(machine, pes)
        type_ = op.tile.type
        tile = _charged(machine, op, lambda: machine.chip.alloc(
            op.tile_name.data, type_.get_shape(), numpy_dtype(type_.element_type), pes, int(op.offset.value.data),
            _where(op)))
        if op.fill is not None:
            machine.chip.fill(tile, float(op.fill.value.data), _where(op))
        return (tile,)

    @impl(LoadOp)
    def run_load(self, interpreter: Interpreter, op: LoadOp, args: tuple[Any, ...]):
        machine = _machine(interpreter, op)
        device = machine.device
        host, tile = np.asarray(args[0]), args[1]
        origins = _core_table(op.origins, len(tile.shape), tile.cores, "origins")
        machine.chip._gather_into(tile, host, origins)
        kernel = _rotation(machine, tile.cores)
        level = op.level.data
        # PEs reading the same block share one multicast read (each its own without it)
        distinct = len(np.unique(origins, axis=0)) if device.has_multicast else tile.cores
        kernel.loads.append((level, distinct * tile.bytes, tile.bytes, device.level_latency_cycles(level)))
        kernel.record.traffic.add(level, distinct * tile.bytes)
        kernel.record.traffic.add("local", tile.cores * tile.bytes)
        kernel.record.dma_commands += 1
        # the operator's loads go out together: one latency, one PE link carrying all of
        # them, each level serving its distinct partitions (the planner's load term)
        served = {}
        for lvl, nbytes, _, _ in kernel.loads:
            served[lvl] = served.get(lvl, 0.0) + nbytes
        ingress = sum(per_pe for _, _, per_pe, _ in kernel.loads)
        busiest = max(nbytes / device.level_bytes_per_cycle(lvl) for lvl, nbytes in served.items())
        kernel.record.cycles["load"] = max(latency for *_, latency in kernel.loads) + max(
            ingress / device.noc_pe_bytes_per_cycle, busiest)
        return ()

    @impl(StepOp)
    def run_step(self, interpreter: Interpreter, op: StepOp, args: tuple[Any, ...]):
        machine = _machine(interpreter, op)
        output, *inputs = args
        tables = op.window_tables()
        tiles = op.tile_map()
        roles = {k: int(v.value.data) for k, v in op.roles.data.items()}
        subtask = SubTask(op.kind.data, op.subtask_bytes(), int(math.prod(tiles.values())) if tiles else 1, roles)
        _charged(machine, op, lambda: machine.chip.compute(
            op.parsed(), tiles, int(op.pes.value.data), output, tables[0], list(zip(inputs, tables[1:])), subtask,
            _where(op), f"{op.name} step {int(op.step.value.data)}"))
        _rotation(machine, output.cores).record.steps += 1
        return ()

    @impl(ShiftOp)
    def run_shift(self, interpreter: Interpreter, op: ShiftOp, args: tuple[Any, ...]):
        machine = _machine(interpreter, op)
        tile, receive = args
        source = op.sources(tile.cores)

        def shift():
            machine.chip.shift(tile, receive, source, _where(op))
            machine.chip.sync(tile.cores, _where(op))

        _charged(machine, op, shift)
        record = _rotation(machine, tile.cores).record
        record.shifts += 1
        record.traffic.add("local", 2 * tile.cores * tile.bytes)   # read out of one PE, into another
        return ()

    @impl(CombineOp)
    def run_combine(self, interpreter: Interpreter, op: CombineOp, args: tuple[Any, ...]):
        machine = _machine(interpreter, op)
        (tile,) = args
        roles = {k: int(v.value.data) for k, v in op.roles.data.items()}
        work = OpWork(SubTask(op.kind.data, tile.dtype.itemsize, 1, roles), 0, 0, 0, int(op.replicas.value.data),
                      int(op.out_step_elems.value.data), int(op.out_resident_elems.value.data),
                      int(op.pes.value.data), partial_bytes=tile.dtype.itemsize)
        _charged(machine, op, lambda: machine.chip.reduce(tile, op.group_table(), op.combiner.data, work, _where(op)))
        return ()

    @impl(PutOp)
    def run_put(self, interpreter: Interpreter, op: PutOp, args: tuple[Any, ...]):
        machine = _machine(interpreter, op)
        device = machine.device
        (tile,) = args
        out_type = op.result.type
        dtype = numpy_dtype(out_type.get_element_type())
        origins = _core_table(op.origins, len(tile.shape), tile.cores, "origins")
        writers = op.writers(tile.cores)
        assembled = np.zeros(tuple(out_type.get_shape()), dtype=tile.dtype)
        scatter_tiles(assembled, tile.data[writers], origins[writers], tile.shape)
        result = _convert(assembled, dtype)
        kernel = _rotation(machine, tile.cores)
        record = kernel.record
        level = op.level.data
        per_pe = math.prod(tile.shape) * element_bytes(out_type.get_element_type())
        record.cycles["store"] = device.level_latency_cycles(level) + max(
            per_pe / device.noc_pe_bytes_per_cycle, per_pe * len(writers) / device.level_bytes_per_cycle(level))
        record.traffic.add(level, per_pe * len(writers))
        record.traffic.add("local", per_pe * len(writers))
        record.dma_commands += 1
        record.name = op.result.name_hint or f"rotation({tile.name})"
        return (result,)

    @impl(FreeOp)
    def run_free(self, interpreter: Interpreter, op: FreeOp, args: tuple[Any, ...]):
        machine = _machine(interpreter, op)
        machine.chip.free(args[0], _where(op))
        if not machine.chip.live:   # the kernel's last tile: its program is over
            machine.rotation = None
        return ()


def _pool_mode(gather: GatherOp) -> str:
    pool = next((use.operation for use in gather.buffer.uses if isinstance(use.operation, PoolOp)), None)
    return pool.mode.data if pool is not None else "sum"


def accumulator_type(gather: GatherOp):
    return accumulator_element(gather.table.type.get_element_type())


def _origins_1(op: GatherOp, grid) -> np.ndarray:
    """first(d0, d1) of every PE: [rows, cols]."""
    rows, cols = grid
    affine = op.first.data
    return np.array([[affine.eval([r, c], [])[0] for c in range(cols)] for r in range(rows)], dtype=np.int64)


def _chain(op: MatMulOp) -> int:
    """PEs per reduction chain of this product (1 when it is not reduced)."""
    for use in op.result.uses:
        if isinstance(use.operation, ReduceOp):
            return int(use.operation.chain.value.data)
    return 1


def _written(op: MatMulOp) -> dict:
    """Bytes the store of this product writes, per level: the chain ends' (or every
    PE's) blocks, found through the product's uses (mml -> [reduce ->] store)."""
    value = op.result
    for _ in range(2):
        for use in list(value.uses):
            user = use.operation
            if isinstance(user, StoreOp):
                acc_type = op.result.type
                block = math.prod(acc_type.get_shape()) * element_bytes(user.result.type.get_element_type())
                rows, cols = op.lhs.owner.grid_shape if isinstance(op.lhs.owner, CircularBufferInitOp) else (1, 1)
                writers = rows * cols
                if isinstance(value.owner, ReduceOp):
                    writers //= int(value.owner.chain.value.data)
                return {user.level.data: float(writers * block)}
            if isinstance(user, ReduceOp):
                value = user.result
                break
    return {}


def _convert(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Accumulators into the result's element type: integers wrap as the hardware's
    INT32 does, floats round once."""
    if np.issubdtype(dtype, np.integer):
        return values.astype(np.int64).astype(dtype)
    return values.astype(dtype)


