"""A ``ShiftKernel`` as a straight-line SPMD instruction list (T10 s4.4, s5).

This is the device program of one operator, before it is printed as ``device`` IR:
allocate every partition (and a same-size receive buffer for each rotating tensor, T10 s5
"multi-copy shift with buffer"), load the initial placement from host memory, zero the
output, then the unrolled loop nest - one compute per step, and between steps a shift
plus one barrier event per tensor of the advancing level - then the partial-sum reduction
over the output's replicas, the store of one copy of every output partition, and the
frees. Per-core differences are functions of the core id: tables, or closed forms that
the SPMD device program states (``build_program(kernel, core)``).

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
    origins: object             # per-core table (see module docstring)


@dataclass
class Fill:
    buffer: str
    value: float


@dataclass
class Compute:
    step: int
    windows: dict[str, object]  # buffer -> per-core window offsets (output included)


@dataclass
class Shift:
    buffer: str
    receive: str
    source: object              # per core: the core it receives from
    level: int


@dataclass
class Sync:
    level: int


@dataclass
class Reduce:
    buffer: str
    keys: object                # per core: which output partition it holds a copy of
    replicas: int               # copies of each partition (cores with an equal key)


@dataclass
class Store:
    buffer: str
    origins: object             # per-core table
    keys: object                # the first core of each key's group writes its tile


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


def build_program(kernel: ShiftKernel, core=None) -> Program:
    """The instructions of ``kernel``. Per-core values are numpy tables (``core=None``:
    rows per core, compressed to one row when all agree), or, given a symbolic core id
    ``core`` (any value supporting ``+ * // %`` by integers, e.g. an affine expression),
    closed forms in it: one value per table column. A shift partner whose closed form
    does not match the ring's actual neighbour stays a table."""
    program = Program(kernel)
    emit = program.instructions.append
    cores = kernel.cores
    symbolic = core is not None
    start = kernel.start_digits(core) if symbolic else kernel.start

    def table(values):
        return values if symbolic else compress(values)

    for tensor in kernel.tensors.values():
        emit(Alloc(tensor.name, tensor.partition_shape, cores, tensor.dtype, tensor.name))
        if tensor.rotating:
            emit(Alloc(receive_name(tensor.name), tensor.partition_shape, cores, tensor.dtype, tensor.name))
    for tensor in kernel.inputs:
        emit(Load(tensor.name, tensor.name, table(kernel.partition_origin(tensor, start, core))))
    emit(Fill(kernel.output.name, 0.0))
    sources = {}
    for l, level in enumerate(kernel.levels):
        for name in level.tensors:
            layout = kernel.tensors[name]
            numeric = kernel.source(layout, l)
            closed = np.broadcast_to(np.asarray(kernel.source_of(layout, l), dtype=np.int64), (cores,))
            exact = symbolic and (closed == numeric).all()
            sources[(name, l)] = kernel.source_of(layout, l, core) if exact else numeric
    counters = [0] * len(kernel.levels)
    step = 0
    for event, value in kernel.schedule():
        if event == "compute":
            digits = kernel.digits_after(start, counters) if symbolic else value
            emit(Compute(step, {
                name: table(kernel.window_offset(t, digits, core)) for name, t in kernel.tensors.items()
            }))
            step += 1
        else:
            counters[value] += 1
            for name in kernel.levels[value].tensors:
                emit(Shift(name, receive_name(name), sources[(name, value)], value))
                emit(Sync(value))
    out = kernel.output
    final = kernel.digits_after(start, kernel.final_counters()) if symbolic else kernel.final_digits()
    keys = kernel.replica_key(final, core)
    if not symbolic:
        keys = np.broadcast_to(np.asarray(keys, dtype=np.int64), (cores,))
    emit(Reduce(out.name, keys, out.rings))
    emit(Store(out.name, table(kernel.partition_origin(out, final, core)), keys))
    for tensor in kernel.tensors.values():
        emit(Free(tensor.name))
        if tensor.rotating:
            emit(Free(receive_name(tensor.name)))
    return program
