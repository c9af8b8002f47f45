"""Between `shift.kernel` IR and ``ShiftKernel``: read a kernel op, write its loop nest.

A kernel op states its expression, grid and rings (the plan) and, once `rotation-align`
ran, its loop nest and placement: ``kernel_of`` reads the ``ShiftKernel``
(``irc.schedule.kernel``) the IR states, deciding nothing; ``build_for`` is what
`rotation-align` itself asks the schedule for (the planner's loop order, T10's placement)
and ``write_loops`` writes it. Each is built once per distinct kernel (``_built``, keyed by
everything the build reads, least recently used dropped first).
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict

import numpy as np
from xdsl.dialects.builtin import FloatAttr, ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region
from xdsl.utils.exceptions import VerifyException

from irc.cost import DEFAULT_COST_MODEL, CostModelError
from irc.devices import DeviceError
from irc.dialects.device import array_values, core_id, core_table
from irc.dialects.dtypes import UnsupportedTypeError, element_type, numpy_dtype
from irc.dialects.shift import ComputeOp, KernelOp, LoopOp, RingOp
from irc.dialects.target import TARGET_ATTR
from irc.lowering.rtensor_to_shift import kernel_op_for
from irc.planner import Plan, PlanError
from irc.schedule.geometry import AlignError, ShiftKernel
from irc.schedule.kernel import assemble_kernel, build_shift_kernel
from irc.schedule.pair_kernel import assemble_fused_kernel, build_fused_kernel
from irc.schedule.spec import UnsupportedExpression
from irc.target import TargetError, cost_of, device_of, require_target, target_attr


class KernelIRError(ValueError):
    """A `shift.kernel` whose rings or loops do not make an aligned program."""


def plan_of(op: KernelOp):
    """The bound expressions (one per product) and the (unscored) plan a kernel op states."""
    bounds = op.bounds()
    axes = tuple(a for a, _ in bounds[0].extents)
    temporal = {ring.tensor.data: tuple(int(x) for x in array_values(ring.temporal)) for ring in op.rings()}
    grid = tuple(int(x) for x in array_values(op.grid))
    return bounds, Plan(axes, grid, temporal)


class _Built(OrderedDict):
    """Kernels built so far, by what the build reads (a failed build is kept as its
    error); the least recently used go first past ``limit`` (a kernel holds per-core
    tables)."""

    limit = 256

    def remember(self, key, value):
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.limit:
            self.popitem(last=False)
        return value


_built = _Built()


def _key(op: KernelOp, target, loops: tuple = ()) -> tuple:
    return (
        tuple(e.text for e in op.exprs),
        tuple((tuple(v.type.get_shape()), v.type.get_element_type()) for v in op.inputs),
        tuple((tuple(v.type.get_shape()), v.type.get_element_type()) for v in op.outputs),
        tuple(int(x) for x in array_values(op.grid)),
        tuple((ring.tensor.data, tuple(int(x) for x in array_values(ring.temporal))) for ring in op.rings()),
        target,
        loops,
    )


def _copy(kernel: ShiftKernel) -> ShiftKernel:
    """A kernel its reader may change without touching the cached one."""
    return dataclasses.replace(
        kernel, start=kernel.start.copy(),
        tensors={name: dataclasses.replace(t) for name, t in kernel.tensors.items()},
    )


def _dtypes(op: KernelOp) -> dict[str, np.dtype]:
    """The element type of every tensor of the kernel, by name (results included)."""
    try:
        dtypes = {name: numpy_dtype(value.type.get_element_type())
                  for name, value in zip(op.operand_names(), op.inputs)}
        for expression, value in zip(op.exprs, op.outputs):
            dtypes[expression.expr.output.tensor] = numpy_dtype(value.type.get_element_type())
    except UnsupportedTypeError as error:
        raise KernelIRError(f"{error}; the chip stores f16, f32, f64, integers and i1") from None
    return dtypes


_BUILD_ERRORS = (AlignError, PlanError, UnsupportedExpression, DeviceError, CostModelError, TargetError)


def _cached(op: KernelOp, loops: tuple, build) -> ShiftKernel:
    try:
        target = require_target(op)
    except TargetError as error:
        raise KernelIRError(str(error)) from None
    key = _key(op, target, loops)
    found = _built.get(key)
    if found is None:
        bounds, plan = plan_of(op)
        dtypes = _dtypes(op)
        try:
            found = build(bounds, plan, device_of(target), cost_of(target), dtypes)
        except _BUILD_ERRORS as error:
            found = KernelIRError(str(error))
        _built.remember(key, found)
    if isinstance(found, KernelIRError):
        raise KernelIRError(str(found))
    return _copy(found)


def build_for(op: KernelOp) -> ShiftKernel:
    """The aligned kernel the planner's loop order and T10's placement give for ``op``'s
    rings on the module's target: what `rotation-align` writes (one operator's, or the
    products' under their joint plan, ``build_fused_kernel``)."""

    def build(bounds, plan, device, cost, dtypes):
        if len(bounds) > 1:
            return build_fused_kernel(bounds, plan, device, cost, dtypes)
        (bound,) = bounds
        return build_shift_kernel(bound, plan, device, cost, dtypes[bound.expr.output.tensor], dtypes=dtypes)

    return _cached(op, (), build)


def kernel_of(op: KernelOp) -> ShiftKernel:
    """The kernel as ``op`` states it, read from the IR: its rings give the plan, its
    ``shift.loop`` nest the levels (axis, trips, stride, rotating tensors) and their
    start digits (the placement, an SPMD map of the core id). Nothing is searched or
    re-decided; the loops must be the rings' levels and the start digits must make every
    ring's partitions meet (a ``KernelIRError`` says which does not)."""
    loops = op.loops()
    grid = tuple(int(x) for x in array_values(op.grid))
    cores = int(np.prod(grid)) if grid else 1
    levels, starts = [], []
    for loop in loops:
        axis, trips, stride = loop.axis.data, int(loop.trips.value.data), int(loop.stride.value.data)
        levels.append((axis, trips, stride, tuple(t.data for t in loop.rotating.data)))
        try:
            starts.append(core_table(loop.start, 1, cores, f"start of the loop on axis {axis}")[:, 0])
        except VerifyException as error:
            raise KernelIRError(str(error)) from None
    rotates = any(int(x) > 1 for ring in op.rings() for x in array_values(ring.temporal))
    if rotates and not loops:
        raise KernelIRError("the kernel rotates tensors but has no shift.loop; run rotation-align")
    start = np.stack(starts).astype(np.int64) if starts else np.zeros((0, cores), dtype=np.int64)
    key = (tuple(levels), start.tobytes())

    def assemble(bounds, plan, device, cost, dtypes):
        try:
            if len(bounds) > 1:
                return assemble_fused_kernel(bounds, plan, device, cost, levels, start, dtypes=dtypes)
            (bound,) = bounds
            return assemble_kernel(bound, plan, device, cost, dtypes[bound.expr.output.tensor], levels, start,
                                   dtypes=dtypes)
        except AlignError as error:
            message = str(error)
            if "do not match" not in message and "stride" not in message and "shape" not in message:
                message = f"the loops' start digits do not align the rings: {message}"
            raise AlignError(message) from None

    return _cached(op, key, assemble)


def write_loops(op: KernelOp, kernel: ShiftKernel) -> None:
    """Put the loop nest of ``kernel`` (and one compute per product) into ``op``'s body,
    and its predicted time into ``planned_cycles``."""
    op.planned_cycles = FloatAttr(kernel.planned_cycles, 64)
    for existing in list(op.body.block.ops):
        if not isinstance(existing, RingOp):
            existing.detach()
            existing.erase()
    closed = kernel.start_digits(core_id())
    numeric = np.stack([np.broadcast_to(np.asarray(v, dtype=np.int64), (kernel.cores,))
                        for v in kernel.start_digits()]) if kernel.levels else kernel.start
    exact = np.array_equal(numeric, kernel.start)
    named = len(kernel.products) > 1
    inner: Block = Block([ComputeOp(p.output if named else None) for p in kernel.products])
    for l in reversed(range(len(kernel.levels))):
        level = kernel.levels[l]
        if exact:
            start = closed[l]   # the placement as a function of the core id (SPMD)
        else:
            start = kernel.start[l]
            start = start[:1] if (start == start[0]).all() else start
        inner = Block([LoopOp(level.axis, level.trips, level.stride, level.tensors, start, Region(inner))])
    for nested in list(inner.ops):
        nested.detach()
        op.body.block.add_op(nested)


def kernel_module(kernel: ShiftKernel, input_dtypes: dict[str, np.dtype] | None = None, cost: str = DEFAULT_COST_MODEL):
    """A module whose ``@main`` runs ``kernel`` (a built ``ShiftKernel``) as one aligned
    `shift.kernel` on its device: what `rotation-align` would have written for its plan
    (one result per product). ``input_dtypes`` gives the inputs' element types (default:
    the first output's)."""
    dtypes = input_dtypes or {}
    input_types = [TensorType(element_type(dtypes.get(n, kernel.dtype)), kernel.bound_of(n).shapes[n])
                   for n in kernel.operand_names]
    output_types = [TensorType(element_type(p.dtype), p.bound.shapes[p.output]) for p in kernel.products]
    block = Block(arg_types=input_types)
    op = kernel_op_for([str(p.bound.expr) for p in kernel.products], block.args, output_types, kernel.plan)
    write_loops(op, kernel)
    block.add_ops([op, ReturnOp(*op.outputs)])
    module = ModuleOp([FuncOp("main", (input_types, output_types), Region(block))])
    module.attributes[TARGET_ATTR] = target_attr(kernel.device, kernel.cost.name if cost is None else cost)
    return module
