"""A ``ShiftKernel`` as a straight-line SPMD instruction list (T10 s4.4, s5).

This is the device program of one operator, before it is printed as ``device`` IR:
allocate every partition (and a same-size receive buffer for each rotating tensor, T10 s5
"multi-copy shift with buffer"), load the initial placement from host memory, zero the
output, then the unrolled loop nest - one compute per step, and between steps a shift
plus one barrier event per tensor of the advancing level - then the partial-sum reduction
over the output's replicas, the store of one copy of every output partition, and the
frees. Per-core differences are tables indexed by the core id.

Between operators the first version goes through host memory: each operator stores its
output and the next one loads it (costed at link bandwidth, reported as host I/O).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from irc.cost import OpWork
from irc.schedule.kernel import ShiftKernel


@dataclass
class Alloc:
    buffer: str
    shape: tuple[int, ...]
    cores: int
    dtype: np.dtype
    tensor: str                 # the tensor whose partition (or receive twin) it holds


@dataclass
class Load:
    buffer: str
    tensor: str                 # host value: the operator's input name
    origins: np.ndarray         # (cores, rank)


@dataclass
class Fill:
    buffer: str
    value: float


@dataclass
class Compute:
    step: int
    windows: dict[str, np.ndarray]   # buffer -> (cores, rank) window offsets (output included)


@dataclass
class Shift:
    buffer: str
    receive: str
    source: np.ndarray          # (cores,)
    level: int


@dataclass
class Sync:
    level: int


@dataclass
class Reduce:
    buffer: str
    groups: np.ndarray          # (groups, replicas)


@dataclass
class Store:
    buffer: str
    origins: np.ndarray         # (cores, rank)
    cores: np.ndarray           # which cores' tiles are written


@dataclass
class Free:
    buffer: str


@dataclass
class Program:
    kernel: ShiftKernel
    instructions: list = field(default_factory=list)

    def reduction_work(self) -> OpWork:
        work = self.kernel.op_work()
        return OpWork(work.subtask, 0, 0, 0, work.partial_copies, work.out_step_elems,
                      work.out_resident_elems, work.cores)


def first_fit(live: list[tuple[int, int]], size: int) -> int:
    """The lowest offset where ``size`` bytes fit between the live ``[start, end)`` ranges."""
    offset = 0
    for start, end in sorted(live):
        if offset + size <= start:
            return offset
        offset = max(offset, end)
    return offset


def receive_name(name: str) -> str:
    return f"{name}.recv"


def compress(table: np.ndarray) -> np.ndarray:
    """A per-core table, reduced to one row when every core has the same entry."""
    table = np.asarray(table, dtype=np.int64)
    if table.ndim == 2 and len(table) and (table == table[0]).all():
        return table[:1]
    return table


def build_program(kernel: ShiftKernel) -> Program:
    program = Program(kernel)
    emit = program.instructions.append
    cores = kernel.cores
    for tensor in kernel.tensors.values():
        emit(Alloc(tensor.name, tensor.partition_shape, cores, tensor.dtype, tensor.name))
        if tensor.rotating:
            emit(Alloc(receive_name(tensor.name), tensor.partition_shape, cores, tensor.dtype, tensor.name))
    for tensor in kernel.inputs:
        emit(Load(tensor.name, tensor.name, compress(kernel.partition_origin(tensor, kernel.start))))
    emit(Fill(kernel.output.name, 0.0))
    sources = {
        (name, l): kernel.source(kernel.tensors[name], l)
        for l, level in enumerate(kernel.levels) for name in level.tensors
    }
    digits = kernel.start.copy()
    step = 0
    for event, value in kernel.schedule():
        if event == "compute":
            digits = value
            emit(Compute(step, {
                name: compress(kernel.window_offset(t, digits)) for name, t in kernel.tensors.items()
            }))
            step += 1
        else:
            for name in kernel.levels[value].tensors:
                emit(Shift(name, receive_name(name), sources[(name, value)], value))
                emit(Sync(value))
    out = kernel.output
    final = kernel.final_digits()
    groups = kernel.replica_groups()
    emit(Reduce(out.name, groups))
    emit(Store(out.name, compress(kernel.partition_origin(out, final)), np.sort(groups[:, 0])))
    for tensor in kernel.tensors.values():
        emit(Free(tensor.name))
        if tensor.rotating:
            emit(Free(receive_name(tensor.name)))
    return program


def run_program(program: Program, inputs: dict[str, np.ndarray], chip, where: str = "kernel") -> np.ndarray:
    """Execute ``program`` on ``chip`` (an ``irc.interpreter.chip.Chip``); the output."""
    from irc.interpreter.chip import local_expression  # noqa: F401  (keeps the import cheap)
    from irc.interpreter.te_eval import compute_dtype  # noqa: F401

    kernel = program.kernel
    expr = kernel.bound.expr
    tiles = dict(zip(kernel.axes, kernel.tiles))
    buffers = {}
    out_name = kernel.output.name
    out_shape = kernel.bound.shapes[out_name]
    from irc.interpreter.chip import _identity
    result = np.full(out_shape, _identity(expr.combiner, kernel.dtype), dtype=kernel.dtype)
    subtask = kernel.subtask()
    for ins in program.instructions:
        if isinstance(ins, Alloc):
            size = int(np.prod(ins.shape)) * ins.dtype.itemsize
            offset = first_fit([(b.offset, b.offset + b.bytes) for b in chip.live.values()], size)
            buffers[ins.buffer] = chip.alloc(ins.buffer, ins.shape, ins.dtype, ins.cores, offset, where)
        elif isinstance(ins, Load):
            chip.load(buffers[ins.buffer], inputs[ins.tensor], ins.origins, where)
        elif isinstance(ins, Fill):
            chip.fill(buffers[ins.buffer], _identity(expr.combiner, kernel.dtype), where)
        elif isinstance(ins, Compute):
            chip.compute(
                expr, tiles, kernel.cores, buffers[out_name], ins.windows[out_name],
                [(buffers[name], ins.windows[name]) for name in expr.inputs], subtask, where,
                f"step {ins.step}",
            )
        elif isinstance(ins, Shift):
            chip.shift(buffers[ins.buffer], buffers[ins.receive], ins.source, where)
        elif isinstance(ins, Sync):
            chip.sync(kernel.cores, where)
        elif isinstance(ins, Reduce):
            chip.reduce(buffers[ins.buffer], ins.groups, expr.combiner, program.reduction_work(), where)
        elif isinstance(ins, Store):
            chip.store(buffers[ins.buffer], result, np.broadcast_to(ins.origins, (kernel.cores, len(out_shape))),
                       ins.cores, where)
        elif isinstance(ins, Free):
            chip.free(buffers.pop(ins.buffer), where)
    return result
