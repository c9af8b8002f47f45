"""`shift-to-device`: lower every aligned `shift.kernel` to SPMD `device` instructions.

T10 s4.4 ("allocate", "compute", "shift", sub-tensor placement), s4.3.2 (idle and active
plans, setup, layout changes between operators) and s5 (kernel code generation,
multi-copy shift with buffer); DESIGN.md s3. A kernel becomes, in place:

- ``device.alloc`` of each tensor's partition (and a receive buffer per rotating tensor);
- each input in its initial placement (per-core tile origins): a weight gathered from
  the idle slices its ring group keeps at rest (``device.relayout {setup}``), an
  activation moved on chip from where its producer left it (``device.relayout``; where
  the plan says so, `irc.planner.relayout_sharing`, read in place from an earlier
  kernel's copy in the same layout, which that kernel keeps to its last reader), an
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
from xdsl.dialects.builtin import ArrayAttr, ModuleOp
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
from irc.planner.relayout_sharing import HELD_ATTR, SHARED_ATTR, shared_layout_key
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
               loads: dict | None = None, outputs: list[list[Output]] | None = None,
               copies: dict | None = None, hold: dict | None = None):
    """The SPMD device program of ``kernel`` (an aligned ``irc.schedule.ShiftKernel``: one
    operator, or several products under one plan).

    Inputs: an input named in ``resident`` moves on chip from where its producer (or the
    copy of an input shared with other kernels) left it (``device.relayout``, priced as
    the planner prices the layout change); a weight named in
    ``weights`` (an ``IdleWeight``) is gathered from the slices the cores keep at rest
    into its active layout (the setup of T10 s4.3.2, ``device.relayout {setup}``); the
    others are loaded from the host: ``op``'s operand (or the value ``inputs`` gives in
    its place), or ``loads[name] = (host value, movements)``. An input named in
    ``copies`` (a ``Resident`` in this kernel's layout: an earlier kernel's relayouted
    input, `irc.planner.relayout_sharing`) is read where it is, neither moved nor freed;
    one named in ``hold`` is kept after the kernel, ``hold[name]`` set to its ``Resident``.
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
    products = kernel.products
    results = list(op.outputs)
    if outputs is None:
        outputs = [[Output(None, result.type)] if store_output else [] for result in results]
    keep = keep or [False] * len(products)
    weights = weights or {}
    copies = copies or {}
    program = _DeviceProgram(kernel, op, prefix, inputs)
    program.buffers.update({name: copy.buffer for name, copy in copies.items()})
    program.allocate(weights)
    program.bring_inputs(resident or {}, weights, loads or {}, skip=set(copies))
    program.run_steps()
    stores, kept = program.reduce_and_store(results, outputs, keep)
    held = {product.output for product, k in zip(products, keep) if k}
    held |= {name for name, weight in weights.items() if weight.in_place}   # freed with the preloaded weights
    held |= set(copies) | set(hold or ())   # a shared copy: freed after its last reader
    for name in hold or ():
        hold[name] = program.resident_input(name)
    for name in kernel.tensors:
        if name not in held:
            program.ops.append(FreeOp(program.buffers[name]))
        if name in program.receives:
            program.ops.append(FreeOp(program.receives[name]))
    return program.ops, stores, kept


def _compute_of(kernel, i: int) -> tuple:
    """Product ``i``'s compute instruction: its expression, sub-task, roles, op class
    (`device.gather`, `device.mma` for a product of two reads, else `device.vector`) and
    its accumulator's identity."""
    product = kernel.products[i]
    expr = product.bound.expr
    subtask = kernel.subtask(i)
    if product.spec.kind == "gather":
        compute_class = GatherOp
    elif expr.combiner in ("=", "+=") and product_reads(expr) is not None:
        compute_class = MmaOp
    else:
        compute_class = VectorOp
    return (expr, subtask, {k: int(v) for k, v in subtask.roles.items()}, compute_class,
            identity_value(expr.combiner, product.dtype))


class _DeviceProgram:
    """`device_ops`'s program as it is built: its ops, and the buffer (and receive
    buffer) of every tensor of the kernel."""

    def __init__(self, kernel, op: KernelOp, prefix: str, inputs):
        self.kernel, self.op, self.prefix = kernel, op, prefix
        self.placed = np.array_equal(initial_placement(kernel), kernel.start) and kernel.closed_form()
        self.core = core_id() if self.placed else None
        self.operands = dict(zip(kernel.operand_names, op.inputs if inputs is None else inputs))
        self.elements = {name: value.type.get_element_type() for name, value in self.operands.items()}
        for product in kernel.products:
            # partial sums accumulate wider (f32 for f16), rounded once by the reduce
            self.elements[product.output] = element_type(kernel.tensors[product.output].dtype)
        self.computes = [_compute_of(kernel, i) for i in range(len(kernel.products))]
        self.ops: list[Operation] = []
        self.buffers: dict = {}
        self.receives: dict = {}
        self.start = kernel.start_digits(self.core) if self.placed else list(kernel.start)

    def alloc(self, name: str, layout) -> SSAValue:
        """A buffer for ``layout`` on the kernel's cores."""
        buffer = AllocOp(f"{self.prefix}{name}", BufferType(layout.partition_shape, self.elements[layout.name]),
                         self.kernel.cores)
        buffer.buffer.name_hint = name.replace(".", "_")
        self.ops.append(buffer)
        return buffer.buffer

    def allocate(self, weights: dict) -> None:
        """Every tensor's buffer (and a rotating one's receive buffer). Weights first: each
        gathers its active partition from the slices at rest, which stay where they are
        for the next run (the idle layout is resident throughout)."""
        kernel, core = self.kernel, self.core
        for name, weight in weights.items():
            layout = kernel.tensors[name]
            if weight.in_place:   # rests as it executes: read where it is
                self.buffers[name] = weight.buffer
                continue
            self.buffers[name] = self.alloc(name, layout)
            pieces = setup_pieces(kernel, name, weight.factors, weight.buffer.type.get_shape(), core)
            self.ops.append(RelayoutOp(weight.buffer, self.buffers[name], weight.shape, weight.origins,
                                       core_id() if self.placed else np.arange(kernel.cores),
                                       kernel.partition_origin(layout, self.start, core), weight.setup_bytes,
                                       weight.setup_barriers, setup=True, pieces=pieces))
        for name, layout in kernel.tensors.items():
            if name not in self.buffers:
                self.buffers[name] = self.alloc(name, layout)
            if layout.rotating:
                self.receives[name] = self.alloc(f"{name}.recv", layout)

    def bring_inputs(self, resident: dict, weights: dict, loads: dict, skip=frozenset()) -> None:
        """Every input that is not a weight (nor in ``skip``): moved on chip from where it
        is resident, or loaded from the host; then each output's accumulator filled with
        its identity."""
        kernel = self.kernel
        for layout in kernel.inputs:
            if layout.name in weights or layout.name in skip:
                continue
            origins = kernel.partition_origin(layout, self.start, self.core)
            source = resident.get(layout.name)
            if source is None:
                host, chain = loads.get(layout.name, (self.operands[layout.name], ()))
                self.ops.append(LoadOp(host, self.buffers[layout.name], origins, moves_of(chain)))
                continue
            self.ops.append(self.relayout(source, layout, origins))
        for product, (_, _, _, _, identity) in zip(kernel.products, self.computes):
            self.ops.append(FillOp(self.buffers[product.output], identity))

    def relayout(self, source: Resident, layout, origins) -> RelayoutOp:
        """The move of resident ``source`` into ``layout``, priced as the planner prices
        the layout change (one shift event)."""
        kernel, producer = self.kernel, source.kernel
        device, cost = device_and_cost(self.op)
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
            _relayout_pieces(source, kernel, layout, self.start, origins if self.placed else None)
        return RelayoutOp(source.buffer, self.buffers[layout.name], source.shape, source.origins, source.group,
                          origins, nbytes, barriers, source.moves, pieces=pieces)

    def resident_input(self, name: str) -> Resident:
        """Input ``name`` as this kernel holds it, for later kernels to read in place (every
        core holds its own box: the layout does not rotate)."""
        kernel = self.kernel
        origins = kernel.partition_origin(kernel.tensors[name], self.start, self.core)
        group = core_id() if self.placed else np.arange(kernel.cores)
        return Resident(self.buffers[name], origins, group, kernel, name, tuple(self.operands[name].type.get_shape()))

    def run_steps(self) -> None:
        """Per step, one compute instruction per product; between steps one shift (and
        sync) per tensor of the advancing level."""
        kernel, core, buffers = self.kernel, self.core, self.buffers
        sources = kernel.ring_sources(core)
        for event, value in kernel.walk(self.start):
            if event == "compute":
                step, digits = value
                for product, (expr, subtask, roles, compute_class, _) in zip(kernel.products, self.computes):
                    names = [product.output, *product.inputs]
                    windows = [kernel.window_offset(kernel.tensors[n], digits, core) for n in names]
                    accumulator = kernel.tensors[product.output].dtype.itemsize
                    self.ops.append(compute_class(
                        str(expr), buffers[product.output], [buffers[n] for n in product.inputs],
                        [kernel.tiles[kernel.axis_index(a)] for a in expr.axes], kernel.cores, windows,
                        subtask.kind, roles, step,
                        # the sub-task's own element size, where the output accumulates wider
                        subtask.dtype_bytes if subtask.dtype_bytes != accumulator else None,
                    ))
            else:
                for name in kernel.levels[value].tensors:
                    self.ops.append(ShiftOp(buffers[name], self.receives[name], sources[(name, value)]))
                    self.ops.append(SyncOp(kernel.cores))

    def reduce_and_store(self, results: list, outputs: list[list[Output]], keep: list[bool]) -> tuple[list, list]:
        """Each product's output reduction (rounded once where it accumulated wider), its
        stores and, where kept, its `Resident`; per product the first store and that."""
        kernel, core, buffers = self.kernel, self.core, self.buffers
        final = kernel.digits_after(self.start, kernel.final_counters())
        stores: list = []
        kept: list = []
        for i, (product, result, (expr, subtask, roles, _, _)) in enumerate(
                zip(kernel.products, results, self.computes)):
            out = kernel.output_of(i)
            group = kernel.replica_key(final, core, i)
            work = kernel.op_work(i)
            widened = out.dtype != product.dtype   # partial sums in wider accumulators
            rounded = result.type.get_element_type() if widened else None
            reduce = ReduceOp(
                buffers[out.name], group, out.rings, expr.combiner, subtask.kind, roles,
                int(work.out_step_elems), int(work.out_resident_elems), kernel.cores, rounded,
            )
            self.ops.append(reduce)
            if rounded is not None:
                buffers[out.name] = reduce.result
                reduce.result.name_hint = f"{out.name}_rounded"
            origins = kernel.partition_origin(out, final, core)
            shape = tuple(result.type.get_shape())
            # elements of the result no core writes are 0, as at te level
            written = [StoreOp(buffers[out.name], output.result_type, origins, group, 0.0, moves_of(output.chain),
                               shape) for output in outputs[i]]
            self.ops += written
            stores.append(written[0] if written else None)
            kept.append(Resident(buffers[out.name], origins, group, kernel, out.name, shape) if keep[i] else None)
        return stores, kept


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
    lowering = _BlockLowering(block)
    lowering.place_weights()
    for op in lowering.kernel_ops:
        counter[0] += 1
        lowering.lower(op, f"k{counter[0]}.")
    lowering.hand_over()


class _BlockLowering:
    """`lower_block`'s state: the block's kernels, where their shared inputs and weights
    live, the weights at rest, the values resident on chip and the stores made."""

    def __init__(self, block: Block):
        self.block = block
        kernel_ops = [op for op in block.ops if isinstance(op, KernelOp)]
        self.kernel_ops = kernel_ops
        self.position = {op: i for i, op in enumerate(kernel_ops)}
        self.movements = movements = absorbed_movements(
            [op for op in block.ops if isinstance(op, (KernelOp, TensorOp))], set(kernel_ops))
        # a kernel of several products (a fused gradient pair) reads a shared input from a
        # copy, never holds it (as the model-wide plan counts it: model_from_ir.function_model)
        self.homes = input_homes(kernel_ops, set(kernel_ops), movements,
                                 {op for op in kernel_ops if len(op.outputs) == 1})
        # a weight several kernels read rests once, in its holder's idle layout (a kernel of
        # several products loads its own, as model_from_ir.function_model plans it)
        singles = {op for op in kernel_ops if len(op.outputs) == 1}
        self.weight_homes = input_homes(kernel_ops, singles, movements, singles, weights=True)
        self.weight_span: dict[tuple, list[int]] = {}   # holder (kernel, operand) -> [first, last] reader
        for (op, index), home in self.weight_homes.items():
            span = self.weight_span.setdefault(home, [self.position[home[0]]] * 2)
            span[0], span[1] = min(span[0], self.position[op]), max(span[1], self.position[op])
        self.kernels = {}
        for op in kernel_ops:
            try:
                self.kernels[op] = kernel_of(op)  # raises when rotations are not yet aligned
            except KernelIRError as error:
                raise _error(op, str(error)) from None
        self.last_reader: dict = {}
        for op in kernel_ops:
            for index in range(len(op.inputs)):
                key = self.key_of(op, index)
                if key is not None:
                    self.last_reader[key] = self.position[op]
        function = block.parent_op()
        self.preloaded = function is not None and PRELOADED_ATTR in function.attributes
        self.resting: dict[KernelOp, dict[str, IdleWeight]] = {}
        self.shared_until: dict[SSAValue, int] = {}   # the idle buffer of a shared weight -> its last reader
        self.resident: dict = {}
        self.stores: list[tuple[SSAValue, StoreOp]] = []
        # relayouted inputs several kernels read in one layout (the plan's HELD_ATTR/SHARED_ATTR)
        self.copies: dict[tuple, Resident] = {}   # (what it is on chip, layout key) -> the held copy
        self.copy_last: dict[tuple, int] = {}     # -> its last reader
        for op in kernel_ops:
            for name in _names(op, SHARED_ATTR):
                key = self.copy_key(op, name)
                if key is not None:
                    self.copy_last[key] = max(self.copy_last.get(key, -1), self.position[op])

    def copy_key(self, op: KernelOp, name: str) -> tuple | None:
        """What a relayouted copy of ``op``'s input ``name`` is: (what the input is on chip,
        the layout ``op`` reads it in, `irc.planner.relayout_sharing.shared_layout_key`)."""
        kernel = self.kernels[op]
        if name not in kernel.operand_names:
            return None
        source = self.key_of(op, kernel.operand_names.index(name))
        layout = shared_layout_key(kernel.spec, kernel.plan, name)
        return None if source is None or layout is None else (source, layout)

    def shared_copies(self, op: KernelOp, on_chip: dict) -> tuple[dict, dict]:
        """The inputs of ``op`` read from an earlier kernel's copy (taken out of
        ``on_chip``), and those whose copy it holds for later kernels (to be filled by
        `device_ops`): as the plan states them, where the layouts are the same."""
        kernel = self.kernels[op]
        copies, hold = {}, {}
        for name in _names(op, SHARED_ATTR):
            key = self.copy_key(op, name)
            copy = self.copies.get(key) if key is not None else None
            source = on_chip.get(name)
            if copy is not None and source is not None and not source.chain and _same_boxes(copy, kernel, name):
                copies[name] = copy
                del on_chip[name]
        for name in _names(op, HELD_ATTR):
            key = self.copy_key(op, name)
            source = on_chip.get(name)
            if key is not None and self.copy_last.get(key, -1) > self.position[op] and source is not None \
                    and not source.chain and not source.at_rest and not kernel.tensors[name].rotating:
                hold[name] = key
        return copies, hold

    def key_of(self, op, index):
        """What an input is on chip: a kernel's output, or the home of a shared input."""
        origin, _ = through_movements(op.inputs[index], self.movements)
        if isinstance(origin.owner, KernelOp) and origin.owner in self.position:
            return origin
        if (op, index) in self.homes:
            return self.homes[(op, index)]
        if any(home == (op, index) for home in self.homes.values()):
            return (op, index)
        return None

    def place_weights(self) -> None:
        """Weights with an idle plan rest in their idle layouts from the start, throughout;
        on a function planned with ELK they rest in HBM instead and each is loaded into its
        preload-state (idle) layout for its op only (`preload-schedule` moves the load earlier)."""
        first = self.block.first_op
        for op in self.kernel_ops:
            kernel = self.kernels[op]
            ops, self.resting[op] = idle_weights(kernel, op, f"w{self.position[op] + 1}.", self.movements)
            if self.preloaded:   # loaded for this op only: where it rests as it executes, held once
                for name, weight in self.resting[op].items():
                    weight.in_place = all(f == 1 for f in weight.factors) and not kernel.tensors[name].rotating
            before = op if self.preloaded else first
            for index, name in enumerate(kernel.operand_names):
                span = self.weight_span.get((op, index))
                if span is not None and name in self.resting[op]:   # loaded before its first reader, kept to its last
                    self.shared_until[self.resting[op][name].buffer] = span[1]
                    if self.preloaded:
                        before = self.kernel_ops[min(span[0], self.position[before])]
            for new in ops:
                new.location = op.location   # an error in it points at the op reading the weight
                self.block.insert_op_before(new, before)

    def inputs_of(self, op: KernelOp, prefix: str) -> tuple[dict, dict]:
        """Where each input of ``op`` that is not resting comes from: on chip (a weight
        at rest elsewhere, a kernel's output, a shared input's home, loaded on first use)
        or loaded from the host (value and movements)."""
        on_chip, loads = {}, {}
        for index, (name, value) in enumerate(zip(self.kernels[op].operand_names, op.inputs)):
            if name in self.resting[op]:
                continue
            origin, chain = through_movements(value, self.movements)
            if (op, index) in self.weight_homes:
                holder, held_at = self.weight_homes[(op, index)]
                holder_name = self.kernels[holder].operand_names[held_at]
                weight = self.resting[holder].get(holder_name)
                if weight is None:   # its holder keeps it in no idle layout: from the host
                    loads[name] = (origin, chain)
                else:
                    on_chip[name] = Resident(weight.buffer, weight.origins, weight.group, self.kernels[holder],
                                             holder_name, weight.shape, chain[len(weight.chain):], at_rest=True)
                continue
            key = self.key_of(op, index)
            if key is None:
                loads[name] = (origin, chain)
            elif isinstance(key, tuple):
                if key not in self.resident:
                    self.resident[key] = _load_home(self.block, op, key, self.kernels, self.movements, prefix)
                home = self.resident[key]
                on_chip[name] = dataclasses.replace(home, chain=chain[len(home.chain):])
            else:
                on_chip[name] = self.resident[value]
        return on_chip, loads

    def outputs_of(self, op: KernelOp) -> tuple[list[bool], list[list[Output]]]:
        """Per result: whether a kernel reads it (kept on chip) and the host tensors it is
        stored as (for the host's readers, and returned through movements)."""
        keep, outputs = [], []
        for result in op.outputs:
            readers = [use.operation for use in result.uses]
            kernel_readers = [r for r in readers if r in self.position or r in self.movements]
            keep.append(bool(kernel_readers))
            outputs.append([Output(result, result.type)] if len(kernel_readers) < len(readers) or not readers else [])
            outputs[-1] += _returned_through(result, self.movements)
        return keep, outputs

    def lower(self, op: KernelOp, prefix: str) -> None:
        """Put ``op``'s device program before it, then free what it read for the last time
        and note the outputs it keeps on chip."""
        block, position = self.block, self.position
        on_chip, loads = self.inputs_of(op, prefix)
        keep, outputs = self.outputs_of(op)
        copies, keys = self.shared_copies(op, on_chip)
        hold = dict.fromkeys(keys)
        ops, _, kept = device_ops(
            self.kernels[op], op, prefix, resident=on_chip, keep=keep,
            weights=self.resting[op], loads=loads, outputs=outputs, copies=copies, hold=hold,
        )
        for name, key in keys.items():
            self.copies[key] = hold[name]
        for new in ops:
            new.location = op.location   # errors in the program point at the te op it computes
            block.insert_op_before(new, op)
            if isinstance(new, ReduceOp) and PRELOAD_ATTR in op.attributes:   # the ELK plan, for preload-schedule
                new.attributes[PRELOAD_ATTR] = op.attributes[PRELOAD_ATTR]
        self.stores += [(output.value, new) for output, new in zip((o for listed in outputs for o in listed),
                                                                   (o for o in ops if isinstance(o, StoreOp)))]
        if self.preloaded:  # its weights' preload-state buffers are done with (a shared one after its last reader)
            done = [w.buffer for w in self.resting[op].values() if self.shared_until.get(w.buffer, -1) <= position[op]]
            done += [b for b, last in self.shared_until.items() if last == position[op] and b not in done]
            for buffer in done:
                block.insert_op_before(FreeOp(buffer), op)
        for key, last in self.copy_last.items():   # a shared copy after its last reader
            if last == position[op] and key in self.copies:
                block.insert_op_before(FreeOp(self.copies.pop(key).buffer), op)
        # an on-chip value read for the last time here is freed right after this kernel
        for index in range(len(op.inputs)):
            key = self.key_of(op, index)
            if key is not None and key in self.resident and self.last_reader.get(key) == position[op]:
                block.insert_op_before(FreeOp(self.resident.pop(key).buffer), op)
        for result, held in zip(op.outputs, kept):
            if held is not None:
                self.resident[result] = held
                _follow_movements(result, held, self.movements, self.resident)

    def hand_over(self) -> None:
        """Host readers (results, fallback ops) read the stored tensors; the kernels and
        the movements between them go."""
        for value, store in self.stores:
            store.result.name_hint = value.name_hint
            for use in list(value.uses):
                if use.operation not in self.position and use.operation not in self.movements:
                    use.operation.operands[use.index] = store.result
        for op in reversed([o for o in self.block.ops if o in self.position or o in self.movements]):  # readers first
            op.detach()
            op.erase()


def _names(op: KernelOp, attribute: str) -> list[str]:
    """The input names an op's ``attribute`` (``HELD_ATTR``, ``SHARED_ATTR``) lists."""
    found = op.attributes.get(attribute)
    return [item.data for item in found.data] if isinstance(found, ArrayAttr) else []


def _same_boxes(copy: Resident, kernel, name: str) -> bool:
    """Whether ``copy`` holds, on every core, the box of ``name`` that ``kernel`` reads
    there (the same cores, partition shape and origins), its layout not rotating."""
    layout, other = kernel.tensors[name], copy.kernel.tensors[copy.tensor]
    if layout.rotating or other.rotating or kernel.cores != copy.kernel.cores \
            or tuple(layout.partition_shape) != tuple(other.partition_shape):
        return False
    mine = kernel.partition_origin(layout, list(kernel.start))
    theirs = copy.kernel.partition_origin(other, list(copy.kernel.start))
    return np.array_equal(np.asarray(mine), np.asarray(theirs))


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
