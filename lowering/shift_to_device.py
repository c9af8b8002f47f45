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

SPMD: every per-core value (tile origins, window offsets, ring partners, replica groups)
is the kernel's geometry (``irc.schedule.kernel``) evaluated at the symbolic core id
``d0``, so it prints as an ``affine_map<(d0) -> (...)>`` whose size does not depend on
the number of cores.

The chip is the module's ``irc.target``. Between operators data goes through host
memory (store, then the next kernel's load).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
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


def device_ops(kernel, op: KernelOp, prefix: str, inputs=None) -> tuple[list[Operation], Operation]:
    """The SPMD device program of ``kernel`` (an aligned ``irc.schedule.ShiftKernel``) and
    its store; it reads ``op``'s inputs (or the values ``inputs`` in their place). Every
    per-core value is the kernel's geometry at the symbolic core id (module docstring);
    a kernel whose loops start elsewhere than the placement gets per-core tables."""
    placed = np.array_equal(initial_placement(kernel), kernel.start)
    core = core_id() if placed else None
    expr = kernel.bound.expr
    operands = {name: value for name, value in zip(expr.inputs, op.inputs if inputs is None else inputs)}
    elements = {name: value.type.get_element_type() for name, value in operands.items()}
    elements[expr.output.tensor] = op.output.type.get_element_type()
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

    for name, layout in kernel.tensors.items():
        buffers[name] = alloc(name, layout)
        if layout.rotating:
            receives[name] = alloc(f"{name}.recv", layout)
    start = kernel.start_digits(core) if placed else list(kernel.start)
    for layout in kernel.inputs:
        ops.append(LoadOp(operands[layout.name], buffers[layout.name], kernel.partition_origin(layout, start, core)))
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
    ops.append(ReduceOp(
        buffers[out.name], group, out.rings, expr.combiner, subtask.kind, roles,
        int(work.out_step_elems), int(work.out_resident_elems), kernel.cores,
    ))
    store = StoreOp(buffers[out.name], op.output.type, kernel.partition_origin(out, final, core), group, identity)
    ops.append(store)
    for name in kernel.tensors:
        ops.append(FreeOp(buffers[name]))
        if name in receives:
            ops.append(FreeOp(receives[name]))
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
