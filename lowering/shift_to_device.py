"""`shift-to-device`: lower every aligned `shift.kernel` to SPMD `device` instructions.

T10 s4.4 ("allocate", "compute", "shift", sub-tensor placement) and s5 (kernel code
generation, multi-copy shift with buffer); DESIGN.md s3. A kernel becomes, in place:

- ``device.alloc`` of each tensor's partition (and a receive buffer per rotating tensor);
- ``device.load`` of each input's initial placement (per-core tile origins);
- ``device.fill`` of the output with its combiner's identity;
- the loop nest unrolled: per step one ``device.mma`` (a two-read contraction) or
  ``device.vector`` (anything else) with per-core window offsets; between steps, per
  tensor of the advancing loop, a ``device.shift`` (ring permutation) and a ``device.sync``
  (each shift plus one barrier event per tensor of the advancing level);
- ``device.reduce`` of the output's partial copies, a ``device.store`` of one copy of every
  output partition into a host tensor, and ``device.free`` of every buffer.

Numerics: an output left with partial sums (``ShiftKernel.holds_partial_sums``: a ``+=``
whose reduction the plan splits over cores or steps) is allocated as an accumulator (f32
for f16; i32 for narrower integers) through the loop, and ``device.reduce`` rounds it once
into the output's type, in place, after combining the copies; the te level likewise
accumulates in f32 and rounds once.

SPMD: every per-core value (tile origins, window offsets, ring partners, replica groups)
is the kernel's geometry (``irc.schedule.kernel``) evaluated at the symbolic core id
``d0``, so it prints as an ``affine_map<(d0) -> (...)>`` whose size does not depend on
the number of cores.

The chip is the module's ``irc.target``. Between operators data goes through host
memory (store, then the next kernel's load).
"""

from __future__ import annotations

from dataclasses import dataclass

import math

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from irc.dialects.device import (
    AllocOp,
    core_id,
    BufferType,
    FillOp,
    FreeOp,
    LoadOp,
    MmaOp,
    ReduceOp,
    RelayoutOp,
    ShiftOp,
    StoreOp,
    SyncOp,
    VectorOp,
)
from irc.dialects.shift import KernelOp
from irc.dialects.te import TensorOp
from irc.dialects.te_expr import product_reads
from irc.dialects.dtypes import element_type
from irc.schedule.kernel import initial_placement
from irc.diagnostics import location_of


def _error(op: Operation, message: str) -> DiagnosticException:
    return DiagnosticException(f"{location_of(op)}: error: '{op.name}' op {message}")


def identity_value(combiner: str, dtype: np.dtype) -> float:
    """A finite identity (the dtype's extreme for max=/min=), printable in IR."""
    if combiner in ("max=", "min="):
        info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
        return float(info.min if combiner == "max=" else info.max)
    return 0.0


def _sources(kernel, core) -> dict[tuple[str, int], object]:
    """Per (tensor, level): the core each core receives from when the level advances, as
    a function of the core id where its closed form matches the ring's actual neighbour
    on every core (always, for placements ``rotation-align`` writes), else a table."""
    sources = {}
    for l, level in enumerate(kernel.levels):
        for name in level.tensors:
            layout = kernel.tensors[name]
            actual = kernel.source(layout, l)
            closed = np.broadcast_to(np.asarray(kernel.source_of(layout, l), dtype=np.int64), (kernel.cores,))
            exact = core is not None and (closed == actual).all()
            sources[(name, l)] = kernel.source_of(layout, l, core) if exact else actual
    return sources


@dataclass
class Resident:
    """An operator's output kept on chip for the operators that read it: its buffer, its
    layout (per-core origins, and the replica groups whose lowest core holds the reduced
    tile) and the kernel that produced it (whose plan prices a relayout out of it)."""

    buffer: SSAValue
    origins: object
    group: object
    kernel: object
    shape: tuple[int, ...]
    moves: tuple[tuple[str, tuple[int, ...]], ...] = ()
    """Data movements (expression, shape it makes) between the buffer and the reader."""


@dataclass
class IdleWeight:
    """A weight resting on chip in its idle layout (T10 s4.3.2) for the whole function:
    its buffer, per-core origins, and what turning it active costs at each use (the
    planner's setup: every slice gathered, one barrier per slice)."""

    buffer: SSAValue
    origins: object
    shape: tuple[int, ...]
    setup_bytes: int
    setup_barriers: int


def idle_weights(kernel, op: KernelOp, block: Block, prefix: str, only: set[SSAValue]):
    """For each weight of ``op`` among ``only`` that is an argument of ``block`` with an
    idle plan on ``op``: the ops that load it once into its idle layout, and its
    ``IdleWeight``."""
    from irc.dialects.rtensor import IDLE_ATTR, IdlePlanAttr

    attr = op.attributes.get(IDLE_ATTR)
    if not isinstance(attr, IdlePlanAttr):
        return [], {}
    placed = np.array_equal(initial_placement(kernel), kernel.start) and kernel.closed_form()
    core = core_id() if placed else None
    idle_factors = op_idle_factors(kernel, attr)
    ops, found = [], {}
    for name, value in zip(kernel.bound.expr.inputs, op.inputs):
        if name not in idle_factors or value.owner is not block or value not in only:
            continue
        layout = kernel.tensors[name]
        partition = kernel.idle_partition(layout, idle_factors[name], core)
        if partition is None:
            continue
        shape, origins = partition
        slices = math.prod(idle_factors[name]) // layout.ring_size
        buffer = AllocOp(f"{prefix}{name}.idle", BufferType(shape, value.type.get_element_type()), kernel.cores)
        buffer.buffer.name_hint = f"{name}_idle"
        ops += [buffer, LoadOp(value, buffer.buffer, origins)]
        nbytes = buffer.buffer.type.bytes
        found[name] = IdleWeight(buffer.buffer, origins, tuple(value.type.get_shape()),
                                 slices * nbytes if slices > 1 else 0, slices if slices > 1 else 0)
    return ops, found


def op_idle_factors(kernel, attr) -> dict[str, tuple[int, ...]]:
    """Idle f_t per op axis of each weight of an ``#rtensor.idle`` (per dim and term)."""
    factors = {}
    axes = kernel.axes
    for name, dims in attr.temporal_factors.items():
        layout = kernel.tensors.get(name)
        if layout is None:
            continue
        per_axis = list(layout.temporal)
        for index, terms in zip(layout.indices, dims):
            for (axis, _), factor in zip(index.terms, terms):
                per_axis[axes.index(axis)] = factor
        factors[name] = tuple(per_axis)
    return factors


def device_ops(kernel, op: KernelOp, prefix: str, inputs=None, resident: dict | None = None,
               keep_output: bool = False, store_output: bool = True, weights: dict | None = None):
    """The SPMD device program of ``kernel`` (an aligned ``irc.schedule.ShiftKernel``): it
    reads ``op``'s inputs (or the values ``inputs`` in their place) from the host, or,
    for an input named in ``resident``, moves it on chip from where its producer left it
    (``device.relayout``, priced as the planner prices the layout change). Its output is
    stored to the host when ``store_output``, and stays on chip when ``keep_output``. A
    weight named in ``weights`` (an ``IdleWeight``) is gathered from the slices the cores
    keep at rest into its active layout (the setup of T10 s4.3.2).
    Returns ``(ops, store or None, Resident of the output or None)``. Every per-core
    value is the kernel's geometry at the symbolic core id (module docstring); a kernel
    whose loops start elsewhere than the placement gets per-core tables."""
    from irc.lowering.target import device_and_cost
    from irc.planner.relayout import relayout_cost

    resident = resident or {}
    weights = weights or {}
    placed = np.array_equal(initial_placement(kernel), kernel.start) and kernel.closed_form()
    core = core_id() if placed else None
    expr = kernel.bound.expr
    operands = {name: value for name, value in zip(expr.inputs, op.inputs if inputs is None else inputs)}
    elements = {name: value.type.get_element_type() for name, value in operands.items()}
    elements[expr.output.tensor] = op.output.type.get_element_type()
    # partial sums accumulate wider (f32 for f16), rounded once by the reduce
    elements[expr.output.tensor] = element_type(kernel.output.dtype)
    identity = identity_value(expr.combiner, kernel.dtype)
    subtask = kernel.subtask()
    roles = {k: int(v) for k, v in subtask.roles.items()}
    compute_class = MmaOp if (expr.combiner in ("=", "+=") and product_reads(expr) is not None) else VectorOp
    names = [expr.output.tensor, *expr.inputs]
    ops: list[Operation] = []
    buffers, receives = {}, {}

    def alloc(name: str, layout) -> SSAValue:
        buffer = AllocOp(f"{prefix}{name}", BufferType(layout.partition_shape, elements[layout.name]), kernel.cores)
        buffer.buffer.name_hint = name.replace(".", "_")
        ops.append(buffer)
        return buffer.buffer

    start = kernel.start_digits(core) if placed else list(kernel.start)
    # Weights first: each gathers its active partition from the slices at rest, and its
    # idle slice is released before the other buffers exist (it lies inside the active
    # partition, which is how the planner counts the op's memory).
    for name, weight in weights.items():
        layout = kernel.tensors[name]
        buffers[name] = alloc(name, layout)
        ops.append(RelayoutOp(weight.buffer, buffers[name], weight.shape, weight.origins,
                              core_id() if placed else np.arange(kernel.cores),
                              kernel.partition_origin(layout, start, core), weight.setup_bytes, weight.setup_barriers))
        ops.append(FreeOp(weight.buffer))
    for name, layout in kernel.tensors.items():
        if name not in buffers:
            buffers[name] = alloc(name, layout)
        if layout.rotating:
            receives[name] = alloc(f"{name}.recv", layout)
    for layout in kernel.inputs:
        if layout.name in weights:
            continue
        origins = kernel.partition_origin(layout, start, core)
        source = resident.get(layout.name)
        if source is None:
            ops.append(LoadOp(operands[layout.name], buffers[layout.name], origins))
            continue
        producer = source.kernel
        device, cost = device_and_cost(op)
        nbytes, _ = relayout_cost(producer.spec, producer.plan, kernel.spec, kernel.plan, layout.name,
                                  device, cost, producer_tensor=producer.output.name, whole=bool(source.moves))
        barriers = device.syncs_per_shift if nbytes else 0   # one shift event, as the planner prices it
        ops.append(RelayoutOp(source.buffer, buffers[layout.name], source.shape, source.origins, source.group,
                              origins, nbytes, barriers, source.moves))
    ops.append(FillOp(buffers[expr.output.tensor], identity))
    sources = _sources(kernel, core)
    counters = [0] * len(kernel.levels)
    step = 0
    for event, value in kernel.schedule():
        if event == "compute":
            digits = kernel.digits_after(start, counters)
            windows = [kernel.window_offset(kernel.tensors[n], digits, core) for n in names]
            ops.append(compute_class(
                str(expr), buffers[expr.output.tensor], [buffers[n] for n in expr.inputs],
                kernel.tiles, kernel.cores, windows, subtask.kind, roles, step,
                # the sub-task's own element size, where the output accumulates wider
                subtask.dtype_bytes if subtask.dtype_bytes != kernel.output.dtype.itemsize else None,
            ))
            step += 1
        else:
            counters[value] += 1
            for name in kernel.levels[value].tensors:
                ops.append(ShiftOp(buffers[name], receives[name], sources[(name, value)]))
                ops.append(SyncOp(kernel.cores))
    out = kernel.output
    final = kernel.digits_after(start, kernel.final_counters())
    group = kernel.replica_key(final, core)
    work = kernel.op_work()
    widened = kernel.output.dtype != kernel.dtype   # partial sums in wider accumulators
    rounded = op.output.type.get_element_type() if widened else None
    reduce = ReduceOp(
        buffers[out.name], group, out.rings, expr.combiner, subtask.kind, roles,
        int(work.out_step_elems), int(work.out_resident_elems), kernel.cores, rounded,
    )
    ops.append(reduce)
    if rounded is not None:
        buffers[out.name] = reduce.result
        reduce.result.name_hint = f"{out.name}_rounded"
    origins = kernel.partition_origin(out, final, core)
    store = None
    if store_output:
        store = StoreOp(buffers[out.name], op.output.type, origins, group, identity)
        ops.append(store)
    for name in kernel.tensors:
        if not (keep_output and name == out.name):
            ops.append(FreeOp(buffers[name]))
        if name in receives:
            ops.append(FreeOp(receives[name]))
    kept = None
    if keep_output:
        kept = Resident(buffers[out.name], origins, group, kernel, tuple(op.output.type.get_shape()))
    return ops, store, kept


def lower_block(block: Block, counter: list[int]) -> None:
    """Lower the kernels of ``block`` in program order, keeping every output that other
    kernels read on chip (moved into their layouts by ``device.relayout``) and going
    through the host only for the block's own inputs and for values something other than
    a kernel reads (the function's results, a host-fallback op)."""
    from irc.lowering.shift_ir import KernelIRError, kernel_of

    from irc.lowering.model_from_ir import absorbed_movements

    kernel_ops = [op for op in block.ops if isinstance(op, KernelOp)]
    position = {op: i for i, op in enumerate(kernel_ops)}
    # data movements between kernels run as the relayout from one to the other
    movements = absorbed_movements([op for op in block.ops if isinstance(op, (KernelOp, TensorOp))], set(kernel_ops))

    def origin(value: SSAValue) -> SSAValue:
        """The kernel output a value is, through data movements."""
        while value.owner in movements:
            value = value.owner.inputs[0]
        return value

    last_reader: dict[SSAValue, int] = {}
    for op in kernel_ops:
        for value in op.inputs:
            value = origin(value)
            if isinstance(value.owner, KernelOp) and value.owner in position:
                last_reader[value] = position[op]
    resident: dict[SSAValue, Resident] = {}
    stores: dict[KernelOp, StoreOp | None] = {}
    kernels = {}
    for op in kernel_ops:
        try:
            kernels[op] = kernel_of(op)  # raises when rotations are not yet aligned
        except KernelIRError as error:
            raise _error(op, str(error)) from None
    # weights read by one kernel each rest in their idle layout until it runs
    readers_of = {}
    for op in kernel_ops:
        for value in op.inputs:
            readers_of.setdefault(value, set()).add(op)
    resting: dict[KernelOp, dict[str, IdleWeight]] = {}
    first = block.first_op
    single = {value for value, readers in readers_of.items() if len(readers) == 1}
    for op in kernel_ops:
        ops, resting[op] = idle_weights(kernels[op], op, block, f"w{position[op] + 1}.", single)
        for new in ops:
            block.insert_op_before(new, first)
    for op in kernel_ops:
        kernel = kernels[op]
        counter[0] += 1
        names = kernel.bound.expr.inputs
        on_chip = {name: resident[value] for name, value in zip(names, op.inputs) if value in resident}
        readers = [use.operation for use in op.output.uses]
        kernel_readers = [r for r in readers if (isinstance(r, KernelOp) and r in position) or r in movements]
        ops, store, kept = device_ops(
            kernel, op, f"k{counter[0]}.", resident=on_chip, keep_output=bool(kernel_readers),
            store_output=len(kernel_readers) < len(readers) or not readers, weights=resting[op],
        )
        for new in ops:
            block.insert_op_before(new, op)
        # a resident value read for the last time here is freed right after this kernel
        for value in dict.fromkeys(origin(v) for v in op.inputs):
            if value in resident and last_reader.get(value) == position[op]:
                block.insert_op_before(FreeOp(resident.pop(value).buffer), op)
        if kept is not None:
            resident[op.output] = kept
            _follow_movements(op.output, kept, movements, resident)
        stores[op] = store
    for op in reversed([o for o in block.ops if o in stores or o in movements]):  # readers first
        store = stores.get(op)
        if store is not None:
            op.output.replace_all_uses_with(store.result)
        op.detach()
        op.erase()


def _follow_movements(value: SSAValue, kept: Resident, movements, resident: dict) -> None:
    """Readers of ``value`` through data movements find it on chip, with the movements to
    apply when they relayout it."""
    for use in list(value.uses):
        movement = use.operation
        if movement not in movements:
            continue
        shape = tuple(movement.output.type.get_shape())
        moved = Resident(kept.buffer, kept.origins, kept.group, kept.kernel, kept.shape,
                         kept.moves + ((movement.expression.text, shape),))
        resident[movement.output] = moved
        _follow_movements(movement.output, moved, movements, resident)


@dataclass(frozen=True)
class ShiftToDevice(ModulePass):
    """``shift-to-device``: aligned shift.kernel -> device alloc/load/mma/shift/sync/store."""

    name = "shift-to-device"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        counter = [0]
        blocks = list(dict.fromkeys(kernel.parent_block() for kernel in op.walk() if isinstance(kernel, KernelOp)))
        for block in blocks:
            lower_block(block, counter)
