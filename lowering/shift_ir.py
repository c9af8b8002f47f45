"""Between `shift.kernel` IR and ``ShiftKernel``: read a kernel op, write its loop nest.

A kernel op states its expression, grid and rings; with the module's ``irc.target`` that
determines one aligned ``ShiftKernel`` (``irc.schedule.kernel``). It is built once per
distinct kernel (``_built``, keyed by everything the build reads), however many passes,
lowerings and interpreters ask for it.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from xdsl.dialects.builtin import FloatAttr
from xdsl.ir import Block, Region

from xdsl.utils.exceptions import VerifyException

from irc.dialects.device import array_values, core_id, core_table
from irc.dialects.shift import ComputeOp, KernelOp, LoopOp, RingOp
from irc.cost import CostModelError
from irc.devices import DeviceError
from irc.dialects.dtypes import UnsupportedTypeError, numpy_dtype
from irc.lowering.target import TargetError, cost_of, device_of, require_target
from irc.planner import Plan, PlanError
from irc.schedule.kernel import AlignError, ShiftKernel, build_shift_kernel, check_alignment
from irc.schedule.spec import UnsupportedExpression


class KernelIRError(ValueError):
    """A `shift.kernel` whose rings or loops do not make an aligned program."""


def plan_of(op: KernelOp):
    """The bound expression and the (unscored) plan a kernel op states."""
    bound = op.bound()
    axes = tuple(a for a, _ in bound.extents)
    temporal = {ring.tensor.data: tuple(int(x) for x in array_values(ring.temporal)) for ring in op.rings()}
    grid = tuple(int(x) for x in array_values(op.grid))
    return bound, Plan(axes, grid, temporal)


_built: dict[tuple, ShiftKernel | KernelIRError] = {}
"""Kernels built so far, by what the build reads (a failed build is kept as its error)."""


def _key(op: KernelOp, target) -> tuple:
    return (
        op.expression.data,
        tuple((tuple(v.type.get_shape()), v.type.get_element_type()) for v in op.inputs),
        (tuple(op.output.type.get_shape()), op.output.type.get_element_type()),
        tuple(int(x) for x in array_values(op.grid)),
        tuple((ring.tensor.data, tuple(int(x) for x in array_values(ring.temporal))) for ring in op.rings()),
        target,
    )


def _copy(kernel: ShiftKernel) -> ShiftKernel:
    """A kernel that may be re-ordered (``kernel_of``) without touching the cached one."""
    return dataclasses.replace(
        kernel, start=kernel.start.copy(),
        tensors={name: dataclasses.replace(t) for name, t in kernel.tensors.items()},
    )


def build_for(op: KernelOp) -> ShiftKernel:
    """The aligned kernel the planner's loop order and placement give for ``op``'s rings
    on the module's target."""
    try:
        target = require_target(op)
    except TargetError as error:
        raise KernelIRError(str(error)) from None
    key = _key(op, target)
    if key not in _built:
        bound, plan = plan_of(op)
        try:
            dtype = numpy_dtype(op.output.type.get_element_type())
            dtypes = {
                name: numpy_dtype(value.type.get_element_type())
                for name, value in zip(bound.expr.inputs, op.inputs)
            }
        except UnsupportedTypeError as error:
            raise KernelIRError(f"{error}; the chip stores f16, f32, f64, integers and i1") from None
        try:
            _built[key] = build_shift_kernel(
                bound, plan, device_of(target), cost_of(target), dtype, dtypes=dtypes
            )
        except (AlignError, PlanError, UnsupportedExpression, DeviceError, CostModelError, TargetError) as error:
            _built[key] = KernelIRError(str(error))
    found = _built[key]
    if isinstance(found, KernelIRError):
        raise KernelIRError(str(found))
    return _copy(found)


def kernel_of(op: KernelOp) -> ShiftKernel:
    """The kernel as ``op`` states it: its loops' order and start digits are checked
    against the aligned levels of its rings, then used as given."""
    kernel = build_for(op)
    loops = op.loops()
    if not loops and not kernel.levels:
        return kernel
    if not loops:
        raise KernelIRError("the kernel rotates tensors but has no shift.loop; run rotation-align")
    wanted = {(lv.axis, lv.trips, lv.stride, tuple(sorted(lv.tensors))): i for i, lv in enumerate(kernel.levels)}
    order, starts = [], []
    for loop in loops:
        key = (loop.axis.data, int(loop.trips.value.data), int(loop.stride.value.data),
               tuple(sorted(t.data for t in loop.rotating.data)))
        if key not in wanted:
            expected = "; ".join(
                f"axis {a} trips {t} stride {s} rotating {', '.join(r)}" for a, t, s, r in wanted
            ) or "none"
            raise KernelIRError(
                f"loop on axis {key[0]} (trips {key[1]}, stride {key[2]}, rotating {', '.join(key[3])}) "
                f"does not match the rings' paces; expected levels: {expected}"
            )
        index = wanted[key]
        if index in order:
            raise KernelIRError(f"two loops for the level on axis {key[0]} rotating {', '.join(key[3])}")
        order.append(index)
        try:
            start = core_table(loop.start, 1, kernel.cores, f"start of the loop on axis {key[0]}")[:, 0]
        except VerifyException as error:
            raise KernelIRError(str(error)) from None
        starts.append(start)
    if len(order) != len(kernel.levels):
        missing = [kernel.levels[i] for i in range(len(kernel.levels)) if i not in order]
        raise KernelIRError(
            "missing loop for the level on axis " + ", ".join(f"{lv.axis} rotating {', '.join(lv.tensors)}" for lv in missing)
        )
    kernel.levels = tuple(kernel.levels[i] for i in order)
    kernel.start = np.stack(starts).astype(np.int64)
    for tensor in kernel.tensors.values():   # levels are indices: renumber them
        remap = {old: new for new, old in enumerate(order)}
        object.__setattr__(tensor, "levels", tuple(sorted(
            (remap[i] for i in tensor.levels),
            key=lambda i: (kernel.axes.index(kernel.levels[i].axis), -kernel.levels[i].stride),
        )))
    try:
        check_alignment(kernel)
    except AlignError as error:
        raise KernelIRError(f"the loops' start digits do not align the rings: {error}") from None
    return kernel


def write_loops(op: KernelOp, kernel: ShiftKernel) -> None:
    """Put the loop nest of ``kernel`` (and its compute) into ``op``'s body, and its
    predicted time into ``planned_cycles``."""
    op.planned_cycles = FloatAttr(float(kernel.plan.score.cost.total), 64)
    for existing in list(op.body.block.ops):
        if not isinstance(existing, RingOp):
            existing.detach()
            existing.erase()
    closed = kernel.start_digits(core_id())
    numeric = np.stack([np.broadcast_to(np.asarray(v, dtype=np.int64), (kernel.cores,))
                        for v in kernel.start_digits()]) if kernel.levels else kernel.start
    exact = np.array_equal(numeric, kernel.start)
    inner: Block = Block([ComputeOp()])
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


def kernel_module(kernel: ShiftKernel, input_dtypes: dict[str, np.dtype] | None = None, cost: str = "t10"):
    """A module whose ``@main`` runs ``kernel`` (a built ``ShiftKernel``) as one aligned
    `shift.kernel` on its device: what `rotation-align` would have written for its plan.
    ``input_dtypes`` gives the inputs' element types (default: the output's)."""
    from xdsl.dialects.builtin import ModuleOp, TensorType
    from xdsl.dialects.func import FuncOp, ReturnOp

    from irc.dialects.target import TARGET_ATTR
    from irc.dialects.dtypes import element_type
    from irc.lowering.rtensor_to_shift import kernel_op_for
    from irc.lowering.target import target_attr

    expr = kernel.bound.expr
    dtypes = input_dtypes or {}
    input_types = [
        TensorType(element_type(dtypes.get(n, kernel.dtype)), kernel.bound.shapes[n]) for n in expr.inputs
    ]
    output_type = TensorType(element_type(kernel.dtype), kernel.bound.shapes[expr.output.tensor])
    block = Block(arg_types=input_types)
    op = kernel_op_for(str(expr), block.args, output_type, kernel.plan)
    write_loops(op, kernel)
    block.add_ops([op, ReturnOp(op.output)])
    module = ModuleOp([FuncOp("main", (input_types, [output_type]), Region(block))])
    module.attributes[TARGET_ATTR] = target_attr(kernel.device, kernel.cost.name if cost is None else cost)
    return module
