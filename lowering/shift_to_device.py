"""`shift-to-device`: lower every aligned `shift.kernel` to SPMD `device` instructions.

T10 s4.4 ("allocate", "compute", "shift", sub-tensor placement), s4.3.2 (idle and active
plans, setup, layout changes between operators) and s5 (kernel code generation,
multi-copy shift with buffer); DESIGN.md s3. A kernel becomes, in place:

- ``device.alloc`` of each tensor's partition (and a receive buffer per rotating tensor);
- each input in its initial placement (per-core tile origins): a weight gathered from
  the idle slices its ring group keeps at rest (``device.relayout {setup}``), an
  activation moved on chip from where its producer left it (``device.relayout``), an
  input from outside loaded from the host (``device.load``) - once, when several kernels
  read it (`lower_block`);
- ``device.fill`` of the output with its combiner's identity;
- the loop nest unrolled: per step one ``device.mma`` (a two-read contraction),
  ``device.gather`` (a table read at an index tensor's values) or ``device.vector``
  (anything else) with per-core window offsets - one per product of a kernel of
  several (a fused gradient pair: the dX and the dW step) -; between steps, per tensor
  of the advancing loop, a ``device.shift`` (ring permutation) and a ``device.sync``
  (each shift plus one barrier event per tensor of the advancing level): a tensor
  several products read is shifted once for all;
- ``device.reduce`` of each output's partial copies; an output stays on chip when
  other kernels read it, and a ``device.store`` writes it to the host only when the
  function returns it (or a host-fallback op reads it); ``device.free`` of the rest.

Numerics: an output left with partial sums (``ShiftKernel.holds_partial_sums``: a ``+=``
whose reduction the plan splits over cores or steps) is allocated as an accumulator (f32
for f16; i32 for narrower integers) through the loop, and ``device.reduce`` rounds it once
into the output's type, in place, after combining the copies; the te level likewise
accumulates in f32 and rounds once.

SPMD: every per-core value (tile origins, window offsets, ring partners, replica groups)
is the kernel's geometry (``irc.schedule.geometry``) evaluated at the symbolic core id
``d0``, so it prints as an ``affine_map<(d0) -> (...)>`` whose size does not depend on
the number of cores.

The chip is the module's ``irc.target``. Between operators data stays on chip: every
relayout and setup is an exchange permutation stated as SPMD pieces where their closed
form is known (`irc.lowering.relayout_pieces`), priced as the planner prices it, so
the interpreted whole-model time equals the model-wide plan's.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from irc.diagnostics import location_of
from irc.dialects.device import (
    AllocOp,
    BufferType,
    FillOp,
    FreeOp,
    GatherOp,
    LoadOp,
    MmaOp,
    ReduceOp,
    RelayoutOp,
    ShiftOp,
    StoreOp,
    SyncOp,
    VectorOp,
    core_id,
    core_table,
    core_vector,
    group_leaders,
    table_attr,
)
from irc.dialects.dtypes import element_type
from irc.dialects.rtensor import IDLE_ATTR, IdlePlanAttr
from irc.dialects.shift import KernelOp
from irc.dialects.te import TensorOp
from irc.dialects.te_expr import product_reads
from irc.lowering.model_from_ir import absorbed_movements, input_homes, is_weight, read_view, through_movements
from irc.lowering.relayout_pieces import block_pieces, setup_pieces
from irc.lowering.shift_ir import KernelIRError, kernel_of
from irc.lowering.te_to_rtensor import PRELOAD_ATTR, PRELOADED_ATTR
from irc.planner.relayout import relayout_cost
from irc.schedule.placement import initial_placement
from irc.target import device_and_cost


def _error(op: Operation, message: str) -> DiagnosticException:
    return DiagnosticException(f"{location_of(op)}: error: '{op.name}' op {message}")


def identity_value(combiner: str, dtype: np.dtype) -> float:
    """The value an accumulator of ``combiner`` starts from, as the interpreters' (``-inf``
    and ``+inf`` for ``max=``/``min=`` on floats, printed in hexadecimal; a type's
    extremes for integers; 0 for sums)."""
    if combiner in ("max=", "min="):
        if dtype.kind == "b":  # i1: false is max='s identity, true min='s
            return 0.0 if combiner == "max=" else 1.0
        if dtype.kind == "f":
            return -math.inf if combiner == "max=" else math.inf
        info = np.iinfo(dtype)
        return float(info.min if combiner == "max=" else info.max)
    return 0.0


@dataclass
class Resident:
    """A tensor kept on chip for the operators that read it: its buffer, its layout
    (per-core origins, and the replica groups whose lowest core holds the tile) and the
    kernel whose layout that is, with the tensor's name there (an operator's output, or
    an input from outside loaded once into the layout of one of its readers), whose plan
    prices a relayout out of it."""

    buffer: SSAValue
    origins: object
    group: object
    kernel: object
    tensor: str
    shape: tuple[int, ...]
    chain: tuple = ()
    """Data movements (te ops ``Y[...] = X[...]``) between the buffer and the reader."""
    at_rest: bool = False
    """A weight resting in its holder's idle layout (`IdleWeight`): a reader receives its
    whole partition from it, as the model-wide plan prices it (``ModelSpec.shares_weight``)."""

    @property
    def moves(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        return moves_of(self.chain)

    def through(self, movement) -> "Resident":
        return dataclasses.replace(self, chain=self.chain + (movement,))


def moves_of(chain) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """The (expression, shape it makes) of each data movement of ``chain``."""
    return tuple((m.expression.text, tuple(m.output.type.get_shape())) for m in chain)


@dataclass
class IdleWeight:
    """A weight resting on chip in its idle layout (T10 s4.3.2) for the whole function:
    its buffer, per-core origins, and what turning it active costs at each use (the
    planner's setup: every slice gathered in one exchange phase)."""

    buffer: SSAValue
    origins: object
    shape: tuple[int, ...]
    setup_bytes: int
    setup_barriers: int
    factors: tuple[int, ...] = ()
    """Its idle temporal factors, one per op axis."""
    group: object = None
    """Per core, the core whose slice it reads as its own (itself: every core keeps a
    slice loaded from the host), for a relayout out of it."""
    chain: tuple = ()
    """The data movements it was loaded through."""
    in_place: bool = False
    """Its buffer is its execute buffer too (a preloaded weight whose idle layout is its
    active one and that does not rotate: `irc.planner.idle.held_in_place`): held once."""


def idle_weights(kernel, op: KernelOp, prefix: str, movements=frozenset()):
    """For each weight of ``op`` (a function argument marked ``irc.weight``, read directly
    or through data movements) with an idle plan on ``op``: the ops that load it once
    into its idle layout (applying the movements on the way), and its ``IdleWeight``."""
    attr = op.attributes.get(IDLE_ATTR)
    if not isinstance(attr, IdlePlanAttr):
        return [], {}
    placed = np.array_equal(initial_placement(kernel), kernel.start) and kernel.closed_form()
    core = core_id() if placed else None
    idle_factors = op_idle_factors(kernel, attr)
    syncs = device_and_cost(op)[0].syncs_per_shift   # a setup is one exchange phase (`irc.planner.idle`)
    ops, found = [], {}
    for name, value in zip(kernel.operand_names, op.inputs):
        origin, chain = through_movements(value, movements)
        if name not in idle_factors or not is_weight(origin):
            continue
        layout = kernel.tensors[name]
        partition = kernel.idle_partition(layout, idle_factors[name], core)
        if partition is None:
            continue
        shape, origins = partition
        slices = math.prod(idle_factors[name]) // layout.ring_size
        buffer = AllocOp(f"{prefix}{name}.idle", BufferType(shape, value.type.get_element_type()), kernel.cores)
        buffer.buffer.name_hint = f"{name}_idle"
        ops += [buffer, LoadOp(origin, buffer.buffer, origins, moves_of(chain))]
        nbytes = buffer.buffer.type.bytes
        found[name] = IdleWeight(buffer.buffer, origins, tuple(value.type.get_shape()),
                                 slices * nbytes if slices > 1 else 0, syncs if slices > 1 else 0,
                                 idle_factors[name],
                                 core_id() if placed else np.arange(kernel.cores), chain)
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
            for (axis, _), factor in zip(getattr(index, "terms", ()), terms):
                per_axis[axes.index(axis)] = factor
        factors[name] = tuple(per_axis)
    return factors


@dataclass
class Output:
    """Where a kernel's output goes besides the chip: a host tensor of ``result_type``
    (after the data movements ``chain``), standing for ``value`` for its host readers."""

    value: SSAValue | None
    result_type: object
    chain: tuple = ()


def device_ops(kernel, op: KernelOp, prefix: str, inputs=None, resident: dict | None = None,
               keep: list[bool] | None = None, store_output: bool = True, weights: dict | None = None,
               loads: dict | None = None, outputs: list[list[Output]] | None = None):
    """The SPMD device program of ``kernel`` (an aligned ``irc.schedule.ShiftKernel``: one
    operator, or several products under one plan).

    Inputs: an input named in ``resident`` moves on chip from where its producer (or the
    copy of an input shared with other kernels) left it (``device.relayout``, priced as
    the planner prices the layout change); a weight named in
    ``weights`` (an ``IdleWeight``) is gathered from the slices the cores keep at rest
    into its active layout (the setup of T10 s4.3.2, ``device.relayout {setup}``); the
    others are loaded from the host: ``op``'s operand (or the value ``inputs`` gives in
    its place), or ``loads[name] = (host value, movements)``.
    Outputs, per product (result): stored to the host as ``outputs[i]`` lists (by
    default, with ``store_output``, one store of the result's type), kept on chip where
    ``keep[i]``. Per step, one compute instruction per product; between steps one
    ``device.shift`` per tensor of the advancing level (a tensor several products read
    is shifted once for all); after the loop each product's own output reduction.
    Returns ``(ops, stores, kept)``: per product its first store (or None) and the
    ``Resident`` of its kept output (or None); every store is in ``ops``, in ``outputs``
    order. Every per-core value is the kernel's geometry at the symbolic core id (module
    docstring); a kernel whose loops start elsewhere than the placement gets per-core
    tables."""
    resident = resident or {}
    weights = weights or {}
    loads = loads or {}
    products = kernel.products
    results = list(op.outputs)
    if outputs is None:
        outputs = [[Output(None, result.type)] if store_output else [] for result in results]
    keep = keep or [False] * len(products)
    placed = np.array_equal(initial_placement(kernel), kernel.start) and kernel.closed_form()
    core = core_id() if placed else None
    operands = dict(zip(kernel.operand_names, op.inputs if inputs is None else inputs))
    elements = {name: value.type.get_element_type() for name, value in operands.items()}
    for product in products:
        # partial sums accumulate wider (f32 for f16), rounded once by the reduce
        elements[product.output] = element_type(kernel.tensors[product.output].dtype)
    computes = []
    for i, product in enumerate(products):
        expr = product.bound.expr
        subtask = kernel.subtask(i)
        if product.spec.kind == "gather":
            compute_class = GatherOp
        elif expr.combiner in ("=", "+=") and product_reads(expr) is not None:
            compute_class = MmaOp
        else:
            compute_class = VectorOp
        computes.append((expr, subtask, {k: int(v) for k, v in subtask.roles.items()}, compute_class,
                         identity_value(expr.combiner, product.dtype)))
    ops: list[Operation] = []
    buffers, receives = {}, {}

    def alloc(name: str, layout) -> SSAValue:
        buffer = AllocOp(f"{prefix}{name}", BufferType(layout.partition_shape, elements[layout.name]), kernel.cores)
        buffer.buffer.name_hint = name.replace(".", "_")
        ops.append(buffer)
        return buffer.buffer

    start = kernel.start_digits(core) if placed else list(kernel.start)
    # Weights first: each gathers its active partition from the slices at rest, which
    # stay where they are for the next run (the idle layout is resident throughout).
    for name, weight in weights.items():
        layout = kernel.tensors[name]
        if weight.in_place:   # rests as it executes: read where it is
            buffers[name] = weight.buffer
            continue
        buffers[name] = alloc(name, layout)
        pieces = setup_pieces(kernel, name, weight.factors, weight.buffer.type.get_shape(), core)
        ops.append(RelayoutOp(weight.buffer, buffers[name], weight.shape, weight.origins,
                              core_id() if placed else np.arange(kernel.cores),
                              kernel.partition_origin(layout, start, core), weight.setup_bytes, weight.setup_barriers,
                              setup=True, pieces=pieces))
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
            host, chain = loads.get(layout.name, (operands[layout.name], ()))
            ops.append(LoadOp(host, buffers[layout.name], origins, moves_of(chain)))
            continue
        producer = source.kernel
        device, cost = device_and_cost(op)
        if source.at_rest:   # from a weight's idle layout: the whole partition (ModelSpec.edges)
            nbytes, _ = relayout_cost(producer.spec, producer.plan, kernel.spec, kernel.plan, layout.name, device,
                                      cost, producer_tensor=source.tensor, whole=True)
        elif producer is kernel and source.tensor == layout.name and not source.chain:
            nbytes = 0   # the copy of a shared input in this very layout: a local copy
        else:
            view = read_view(source.chain, producer.bound_of(source.tensor), source.tensor,
                             kernel.bound_of(layout.name), layout.name) if source.chain else None
            nbytes, _ = relayout_cost(producer.spec, producer.plan, kernel.spec, kernel.plan, layout.name, device,
                                      cost, producer_tensor=source.tensor, whole=bool(source.chain), view=view)
        barriers = device.syncs_per_shift if nbytes else 0   # one shift event, as the planner prices it
        pieces = None if source.chain or source.at_rest else \
            _relayout_pieces(source, kernel, layout, start, origins if placed else None)
        ops.append(RelayoutOp(source.buffer, buffers[layout.name], source.shape, source.origins, source.group,
                              origins, nbytes, barriers, source.moves, pieces=pieces))
    for product, (_, _, _, _, identity) in zip(products, computes):
        ops.append(FillOp(buffers[product.output], identity))
    sources = kernel.ring_sources(core)
    for event, value in kernel.walk(start):
        if event == "compute":
            step, digits = value
            for product, (expr, subtask, roles, compute_class, _) in zip(products, computes):
                names = [product.output, *product.inputs]
                windows = [kernel.window_offset(kernel.tensors[n], digits, core) for n in names]
                accumulator = kernel.tensors[product.output].dtype.itemsize
                ops.append(compute_class(
                    str(expr), buffers[product.output], [buffers[n] for n in product.inputs],
                    [kernel.tiles[kernel.axis_index(a)] for a in expr.axes], kernel.cores, windows, subtask.kind,
                    roles, step,
                    # the sub-task's own element size, where the output accumulates wider
                    subtask.dtype_bytes if subtask.dtype_bytes != accumulator else None,
                ))
        else:
            for name in kernel.levels[value].tensors:
                ops.append(ShiftOp(buffers[name], receives[name], sources[(name, value)]))
                ops.append(SyncOp(kernel.cores))
    final = kernel.digits_after(start, kernel.final_counters())
    stores: list = []
    kept: list = []
    for i, (product, result, (expr, subtask, roles, _, _)) in enumerate(zip(products, results, computes)):
        out = kernel.output_of(i)
        group = kernel.replica_key(final, core, i)
        work = kernel.op_work(i)
        widened = out.dtype != product.dtype   # partial sums in wider accumulators
        rounded = result.type.get_element_type() if widened else None
        reduce = ReduceOp(
            buffers[out.name], group, out.rings, expr.combiner, subtask.kind, roles,
            int(work.out_step_elems), int(work.out_resident_elems), kernel.cores, rounded,
        )
        ops.append(reduce)
        if rounded is not None:
            buffers[out.name] = reduce.result
            reduce.result.name_hint = f"{out.name}_rounded"
        origins = kernel.partition_origin(out, final, core)
        shape = tuple(result.type.get_shape())
        # elements of the result no core writes are 0, as at te level
        written = [StoreOp(buffers[out.name], output.result_type, origins, group, 0.0, moves_of(output.chain),
                           shape) for output in outputs[i]]
        ops += written
        stores.append(written[0] if written else None)
        kept.append(Resident(buffers[out.name], origins, group, kernel, out.name, shape) if keep[i] else None)
    held = {product.output for product, k in zip(products, keep) if k}
    held |= {name for name, weight in weights.items() if weight.in_place}   # freed with the preloaded weights
    for name in kernel.tensors:
        if name not in held:
            ops.append(FreeOp(buffers[name]))
        if name in receives:
            ops.append(FreeOp(receives[name]))
    return ops, stores, kept


def _relayout_pieces(source: Resident, kernel, layout, start, symbolic):
    """The pieces of the relayout of ``source`` into ``layout`` of ``kernel``, or None."""
    producer = source.kernel
    rank = len(source.shape)
    source_origins = core_table(table_attr(source.origins), rank, producer.cores, "origins")
    writers = group_leaders(core_vector(table_attr(source.group), producer.cores, "group"))
    numeric = start if all(isinstance(d, np.ndarray) for d in start) else list(kernel.start)
    target = kernel.partition_origin(layout, numeric)
    return block_pieces(producer, source.tensor, source_origins, writers, target, layout.partition_shape,
                        source.shape, symbolic)


def lower_block(block: Block, counter: list[int]) -> None:
    """Lower the kernels of ``block`` in program order so that the model lives on the
    chip (T10 s4.3.2; issue 11):

    - every weight with an idle plan is loaded once, at the start, into its idle layout
      (one copy per kernel reading it), stays there for the whole run, and is gathered
      into its active layout at each use (``device.relayout {setup}``);
    - an input from outside is loaded once, into the layout of the first kernel reading
      it directly (`irc.lowering.model_from_ir.input_homes`); its other readers relayout
      it from there;
    - every output other kernels read stays on chip and moves into their layouts by
      ``device.relayout``; data movements between kernels (`absorbed_movements`) are
      applied by those relayouts, and at the edges by the loads and stores;
    - the host sees only the block's inputs and the values something other than a kernel
      reads (the function's results, a host-fallback op), each stored once."""
    kernel_ops = [op for op in block.ops if isinstance(op, KernelOp)]
    position = {op: i for i, op in enumerate(kernel_ops)}
    movements = absorbed_movements([op for op in block.ops if isinstance(op, (KernelOp, TensorOp))], set(kernel_ops))
    # a kernel of several products (a fused gradient pair) reads a shared input from a
    # copy, never holds it (as the model-wide plan counts it: model_from_ir.function_model)
    homes = input_homes(kernel_ops, set(kernel_ops), movements, {op for op in kernel_ops if len(op.outputs) == 1})
    # a weight several kernels read rests once, in its holder's idle layout (a kernel of
    # several products loads its own, as model_from_ir.function_model plans it)
    singles = {op for op in kernel_ops if len(op.outputs) == 1}
    weight_homes = input_homes(kernel_ops, singles, movements, singles, weights=True)
    weight_span: dict[tuple, list[int]] = {}   # holder (kernel, operand) -> [first, last] reader
    for (op, index), home in weight_homes.items():
        span = weight_span.setdefault(home, [position[home[0]]] * 2)
        span[0], span[1] = min(span[0], position[op]), max(span[1], position[op])
    kernels = {}
    for op in kernel_ops:
        try:
            kernels[op] = kernel_of(op)  # raises when rotations are not yet aligned
        except KernelIRError as error:
            raise _error(op, str(error)) from None

    def key_of(op, index):
        """What an input is on chip: a kernel's output, or the home of a shared input."""
        origin, _ = through_movements(op.inputs[index], movements)
        if isinstance(origin.owner, KernelOp) and origin.owner in position:
            return origin
        if (op, index) in homes:
            return homes[(op, index)]
        if any(home == (op, index) for home in homes.values()):
            return (op, index)
        return None

    last_reader: dict = {}
    for op in kernel_ops:
        for index in range(len(op.inputs)):
            key = key_of(op, index)
            if key is not None:
                last_reader[key] = position[op]
    # weights with an idle plan rest in their idle layouts from the start, throughout;
    # on a function planned with ELK they rest in HBM instead and each is loaded into its
    # preload-state (idle) layout for its op only (`preload-schedule` moves the load earlier)
    function = block.parent_op()
    preloaded = function is not None and PRELOADED_ATTR in function.attributes
    resting: dict[KernelOp, dict[str, IdleWeight]] = {}
    first = block.first_op
    shared_until: dict[SSAValue, int] = {}   # the idle buffer of a shared weight -> its last reader
    for op in kernel_ops:
        ops, resting[op] = idle_weights(kernels[op], op, f"w{position[op] + 1}.", movements)
        if preloaded:   # loaded for this op only: where it rests as it executes, held once
            for name, weight in resting[op].items():
                weight.in_place = all(f == 1 for f in weight.factors) and not kernels[op].tensors[name].rotating
        before = op if preloaded else first
        for index, name in enumerate(kernels[op].operand_names):
            span = weight_span.get((op, index))
            if span is not None and name in resting[op]:   # loaded before its first reader, kept to its last
                shared_until[resting[op][name].buffer] = span[1]
                if preloaded:
                    before = kernel_ops[min(span[0], position[before])]
        for new in ops:
            new.location = op.location   # an error in it points at the op reading the weight
            block.insert_op_before(new, before)
    resident: dict = {}
    stores: list[tuple[SSAValue, StoreOp]] = []
    for op in kernel_ops:
        kernel = kernels[op]
        counter[0] += 1
        names = kernel.operand_names
        on_chip, loads = {}, {}
        for index, (name, value) in enumerate(zip(names, op.inputs)):
            if name in resting[op]:
                continue
            origin, chain = through_movements(value, movements)
            if (op, index) in weight_homes:
                holder, held_at = weight_homes[(op, index)]
                weight = resting[holder].get(kernels[holder].operand_names[held_at])
                if weight is None:   # its holder keeps it in no idle layout: from the host
                    loads[name] = (origin, chain)
                else:
                    on_chip[name] = Resident(weight.buffer, weight.origins, weight.group, kernels[holder],
                                             kernels[holder].operand_names[held_at], weight.shape,
                                             chain[len(weight.chain):], at_rest=True)
                continue
            key = key_of(op, index)
            if key is None:
                loads[name] = (origin, chain)
            elif isinstance(key, tuple):
                if key not in resident:
                    resident[key] = _load_home(block, op, key, kernels, movements, f"k{counter[0]}.")
                home = resident[key]
                on_chip[name] = dataclasses.replace(home, chain=chain[len(home.chain):])
            else:
                on_chip[name] = resident[value]
        keep, outputs = [], []
        for result in op.outputs:
            readers = [use.operation for use in result.uses]
            kernel_readers = [r for r in readers if r in position or r in movements]
            keep.append(bool(kernel_readers))
            outputs.append([Output(result, result.type)] if len(kernel_readers) < len(readers) or not readers else [])
            outputs[-1] += _returned_through(result, movements)
        ops, _, kept = device_ops(
            kernel, op, f"k{counter[0]}.", resident=on_chip, keep=keep,
            weights=resting[op], loads=loads, outputs=outputs,
        )
        for new in ops:
            new.location = op.location   # errors in the program point at the te op it computes
            block.insert_op_before(new, op)
            if isinstance(new, ReduceOp) and PRELOAD_ATTR in op.attributes:   # the ELK plan, for preload-schedule
                new.attributes[PRELOAD_ATTR] = op.attributes[PRELOAD_ATTR]
        stores += [(output.value, new) for output, new in zip((o for listed in outputs for o in listed),
                                                              (o for o in ops if isinstance(o, StoreOp)))]
        if preloaded:  # its weights' preload-state buffers are done with (a shared one after its last reader)
            done = [w.buffer for w in resting[op].values() if shared_until.get(w.buffer, -1) <= position[op]]
            done += [b for b, last in shared_until.items() if last == position[op] and b not in done]
            for buffer in done:
                block.insert_op_before(FreeOp(buffer), op)
        # an on-chip value read for the last time here is freed right after this kernel
        for index in range(len(op.inputs)):
            key = key_of(op, index)
            if key is not None and key in resident and last_reader.get(key) == position[op]:
                block.insert_op_before(FreeOp(resident.pop(key).buffer), op)
        for result, held in zip(op.outputs, kept):
            if held is not None:
                resident[result] = held
                _follow_movements(result, held, movements, resident)
    for value, store in stores:  # host readers (results, fallback ops) read the stored tensor
        store.result.name_hint = value.name_hint
        for use in list(value.uses):
            if use.operation not in position and use.operation not in movements:
                use.operation.operands[use.index] = store.result
    for op in reversed([o for o in block.ops if o in position or o in movements]):  # readers first
        op.detach()
        op.erase()


def _load_home(block: Block, reader: KernelOp, home: tuple, kernels, movements, prefix: str) -> Resident:
    """The copy of an input shared by several kernels, loaded from the host into the
    layout its home kernel (``home = (kernel op, operand index)``) reads it in, before
    ``reader`` (the first kernel reading it)."""
    op, index = home
    kernel = kernels[op]
    name = kernel.operand_names[index]
    layout = kernel.tensors[name]
    placed = np.array_equal(initial_placement(kernel), kernel.start) and kernel.closed_form()
    core = core_id() if placed else None
    start = kernel.start_digits(core) if placed else list(kernel.start)
    origins = kernel.partition_origin(layout, start, core)
    origin, chain = through_movements(op.inputs[index], movements)
    buffer = AllocOp(f"{prefix}{name}.in", BufferType(layout.partition_shape, origin.type.get_element_type()),
                     kernel.cores)
    buffer.buffer.name_hint = f"{name}_in"
    load = LoadOp(origin, buffer.buffer, origins, moves_of(chain))
    for new in (buffer, load):
        new.location = reader.location
        block.insert_op_before(new, reader)
    group = core_id() if placed else np.arange(kernel.cores)   # every core holds its tile
    return Resident(buffer.buffer, origins, group, kernel, name, tuple(op.inputs[index].type.get_shape()), chain)


def _returned_through(value: SSAValue, movements, chain=()) -> list[Output]:
    """The stores a kernel output needs for values derived from it by data movements
    that something other than a kernel or a movement reads (the function's results)."""
    found = []
    for use in value.uses:
        movement = use.operation
        if movement not in movements:
            continue
        moved = chain + (movement,)
        host = [u for u in movement.output.uses if u.operation not in movements and not isinstance(u.operation, KernelOp)]
        if host:
            found.append(Output(movement.output, movement.output.type, moved))
        found += _returned_through(movement.output, movements, moved)
    return found


def _follow_movements(value: SSAValue, kept: Resident, movements, resident: dict) -> None:
    """Readers of ``value`` through data movements find it on chip, with the movements to
    apply when they relayout it."""
    for use in list(value.uses):
        movement = use.operation
        if movement not in movements:
            continue
        moved = kept.through(movement)
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
