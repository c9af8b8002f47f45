"""Between `shift.kernel` IR and ``ShiftKernel``: read a kernel op, write its loop nest."""

from __future__ import annotations

import numpy as np
from xdsl.ir import Block, Region

from irc.dialects.device import array_values
from irc.dialects.shift import ComputeOp, KernelOp, LoopOp, RingOp
from irc.cost import CostModelError
from irc.devices import DeviceError
from irc.interpreter.dtypes import numpy_dtype
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


def build_for(op: KernelOp) -> ShiftKernel:
    """The aligned kernel the planner's loop order and placement give for ``op``'s rings."""
    bound, plan = plan_of(op)
    dtype = numpy_dtype(op.output.type.get_element_type())
    dtypes = {
        name: numpy_dtype(value.type.get_element_type())
        for name, value in zip(bound.expr.inputs, op.inputs)
    }
    try:
        return build_shift_kernel(bound, plan, op.device.data, op.cost.data, dtype, dtypes=dtypes)
    except (AlignError, PlanError, UnsupportedExpression, DeviceError, CostModelError) as error:
        raise KernelIRError(str(error)) from None


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
        start = array_values(loop.start)
        if start.size not in (1, kernel.cores):
            raise KernelIRError(
                f"start of the loop on axis {key[0]} has {start.size} entries; expected 1 or one per core "
                f"({kernel.cores})"
            )
        starts.append(np.broadcast_to(start, (kernel.cores,)))
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
    """Put the loop nest of ``kernel`` (and its compute) into ``op``'s body."""
    for existing in list(op.body.block.ops):
        if not isinstance(existing, RingOp):
            existing.detach()
            existing.erase()
    inner: Block = Block([ComputeOp()])
    for l in reversed(range(len(kernel.levels))):
        level = kernel.levels[l]
        start = kernel.start[l]
        start = start[:1] if (start == start[0]).all() else start
        inner = Block([LoopOp(level.axis, level.trips, level.stride, level.tensors, start, Region(inner))])
    for nested in list(inner.ops):
        nested.detach()
        op.body.block.add_op(nested)
