"""`shift-to-device`: lower every aligned `shift.kernel` to SPMD `device` instructions.

T10 s4.4 ("allocate", "compute", "shift", sub-tensor placement) and s5 (kernel code
generation, multi-copy shift with buffer); DESIGN.md s3. A kernel becomes, in place:

- ``device.alloc`` of each tensor's partition (and a receive buffer per rotating tensor);
- ``device.load`` of each input's initial placement (per-core tile origins);
- ``device.fill`` of the output with its combiner's identity;
- the loop nest unrolled: per step one ``device.mma`` (a two-read contraction) or
  ``device.vector`` (anything else) with per-core window offsets; between steps, per
  tensor of the advancing loop, a ``device.shift`` (ring permutation) and a ``device.sync``;
- ``device.reduce`` of the output's partial copies, a ``device.store`` of one copy of every
  output partition into a host tensor, and ``device.free`` of every buffer.

The chip is the module's ``irc.target``. Between operators data goes through host
memory (store, then the next kernel's load).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern
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
    ShiftOp,
    StoreOp,
    SyncOp,
    VectorOp,
)
from irc.dialects.shift import KernelOp
from irc.dialects.te_expr import product_reads
from irc.diagnostics import location_of


def _error(op: Operation, message: str) -> DiagnosticException:
    return DiagnosticException(f"{location_of(op)}: error: '{op.name}' op {message}")


def identity_value(combiner: str, dtype: np.dtype) -> float:
    """A finite identity (the dtype's extreme for max=/min=), printable in IR."""
    if combiner in ("max=", "min="):
        info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
        return float(info.min if combiner == "max=" else info.max)
    return 0.0


def device_ops(kernel, op: KernelOp, prefix: str, inputs=None) -> tuple[list[Operation], Operation]:
    """The device instructions of ``kernel`` (an ``irc.schedule.ShiftKernel``) and the store;
    they read ``op``'s inputs (or the values ``inputs`` in their place)."""
    from irc.schedule.program import Alloc, Compute, Fill, Free, Load, Reduce, Shift, Store, Sync, build_program

    program = build_program(kernel, core_id())
    expr = kernel.bound.expr
    operands = {name: value for name, value in zip(expr.inputs, op.inputs if inputs is None else inputs)}
    elements = {name: value.type.get_element_type() for name, value in operands.items()}
    elements[expr.output.tensor] = op.output.type.get_element_type()
    buffers = {}
    ops: list[Operation] = []
    subtask = kernel.subtask()
    roles = {k: int(v) for k, v in subtask.roles.items()}
    compute_class = MmaOp if (expr.combiner in ("=", "+=") and product_reads(expr) is not None) else VectorOp
    names = [expr.output.tensor, *expr.inputs]
    out = kernel.output
    store = None
    for ins in program.instructions:
        if isinstance(ins, Alloc):
            alloc = AllocOp(f"{prefix}{ins.buffer}", BufferType(ins.shape, elements[ins.tensor]), ins.cores)
            alloc.buffer.name_hint = ins.buffer.replace(".", "_")
            buffers[ins.buffer] = alloc.buffer
            ops.append(alloc)
        elif isinstance(ins, Load):
            ops.append(LoadOp(operands[ins.tensor], buffers[ins.buffer], ins.origins))
        elif isinstance(ins, Fill):
            ops.append(FillOp(buffers[ins.buffer], identity_value(expr.combiner, kernel.dtype)))
        elif isinstance(ins, Compute):
            ops.append(compute_class(
                str(expr), buffers[expr.output.tensor], [buffers[n] for n in expr.inputs],
                kernel.tiles, kernel.cores, [ins.windows[n] for n in names], subtask.kind, roles, ins.step,
            ))
        elif isinstance(ins, Shift):
            ops.append(ShiftOp(buffers[ins.buffer], buffers[ins.receive], ins.source))
        elif isinstance(ins, Sync):
            ops.append(SyncOp(kernel.cores))
        elif isinstance(ins, Reduce):
            work = program.reduction_work()
            ops.append(ReduceOp(
                buffers[ins.buffer], ins.keys, ins.replicas, expr.combiner, subtask.kind, roles,
                int(work.out_step_elems), int(work.out_resident_elems), kernel.cores,
            ))
        elif isinstance(ins, Store):
            store = StoreOp(buffers[ins.buffer], op.output.type, ins.origins, ins.keys,
                            identity_value(expr.combiner, kernel.dtype))
            ops.append(store)
        elif isinstance(ins, Free):
            ops.append(FreeOp(buffers[ins.buffer]))
    return ops, store


@dataclass
class LowerKernel(RewritePattern):
    """One aligned shift.kernel -> its device instruction sequence."""

    counter: list

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: KernelOp, rewriter: PatternRewriter) -> None:
        from irc.lowering.shift_ir import KernelIRError, kernel_of

        try:
            kernel = kernel_of(op)  # raises when rotations are not yet aligned
        except KernelIRError as error:
            raise _error(op, str(error)) from None
        self.counter[0] += 1
        ops, store = device_ops(kernel, op, f"k{self.counter[0]}.")
        rewriter.replace(op, ops, [store.result])


@dataclass(frozen=True)
class ShiftToDevice(ModulePass):
    """``shift-to-device``: aligned shift.kernel -> device alloc/load/mma/shift/sync/store."""

    name = "shift-to-device"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(LowerKernel([0]), apply_recursively=False).rewrite_module(op)
