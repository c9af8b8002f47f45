"""``te-to-npu``: each forward contraction ``Y = X · W`` (a `te.op` ``+=`` of two reads
with a GEMM view) becomes an `npu.matmul`, the program that computes it on an NPU with
a double-buffered scratchpad (IGO, MICRO'23, §2.2; the forward GEMM of §6.1's layers).

The body walks the output-stationary (or, on a weight-stationary array, weight-
stationary) loop nest of the forward GEMM over tiles searched for it
(`irc.planner.igo`, order ``forward``), split over the cores along M when the NPU
has several (weight-sharing: W shared, nothing summed), with the scratchpad managed as
`irc.cost.igo` plans it: the tiles of each round loaded into the half being filled
while the previous round computes, evicted tiles freed, Y's tiles stored once. What
has no single-GEMM view (elementwise ops, reductions, batched products such as
attention's, a scaled product) stays `te` and runs on the host; the module's target
becomes the NPU (cost ``igo``). ``inference{device=npu-edge}`` is this pass.

A contraction whose one step does not fit half the scratchpad, even in 1x1x1 tiles, is
an error at the op naming the layer and the bytes needed and available.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import DiagnosticException

from irc.cost.igo import POLICIES, Layer, ScratchpadError, operator_starts, plan_transfers, schedule
from irc.planner.igo import evaluate
from irc.cost.igo import split_of
from irc.diagnostics import location_of
from irc.dialects.dtypes import byte_width
from irc.dialects.igo import forward_name
from irc.dialects.npu import MatmulOp, ViewError, forward_view
from irc.dialects.te import TensorOp
from irc.lowering.igo_to_npu import kernel_program, target_npu

ORDER = "forward"
"""`irc.cost.igo`'s name of a lone forward GEMM's schedule."""


def view_of(op: TensorOp):
    """The GEMM view of a te op (`forward_view`), or None when it has none."""
    if len(op.inputs) != 2:
        return None
    expr = op.parsed()
    shapes = {"X": tuple(op.inputs[0].type.get_shape()), "W": tuple(op.inputs[1].type.get_shape()),
              "Y": tuple(op.output.type.get_shape())}
    try:
        return forward_view(expr, shapes)
    except ViewError:
        return None


def layer_of(op: TensorOp, view) -> Layer:
    """The forward GEMM of a te op as `irc.cost.igo` prices it, named as diagnostics name it."""
    m, k, n = view.gemm
    return Layer(M=m, K=k, N=n, element_bytes=byte_width(op.output.type.get_element_type()),
                 name=f"{forward_name(op)} ({location_of(op)})")


def lower_forward(op: TensorOp, view, device, policy: str = "lru") -> MatmulOp:
    """The `npu.matmul` of a forward contraction with GEMM view `view` on `device`, its
    tiles the best for the forward order (an error naming the layer when none fit)."""
    layer = layer_of(op, view)
    scheme, parts = split_of(device, None, None)
    try:
        tiling = evaluate(layer, device, ORDER, scheme, parts, policy=policy).tiling
    except ScratchpadError as error:
        raise DiagnosticException(
            f"{location_of(op)}: error: 'te.op' op layer {forward_name(op)} does not fit {device.name}'s "
            f"scratchpad: {error}"
        ) from None
    rounds = schedule(layer, tiling, ORDER, scheme, parts, device.cores, "separate", device.dataflow)
    transfers = plan_transfers(rounds, layer, tiling, device.spm_bytes // 2, policy, frees=True,
                               flush_before=operator_starts(rounds, ORDER))
    body = Block(kernel_program(rounds, transfers, device.dataflow))
    kernel = MatmulOp(op.expression, op.inputs[0], op.inputs[1], op.output.type, (layer.M, layer.K, layer.N),
                      (tiling.tm, tiling.tk, tiling.tn), Region(body))
    kernel.location = op.location
    return kernel


@dataclass(frozen=True)
class TeToNpu(ModulePass):
    """``te-to-npu{device=npu-edge cores=0 policy=lru}``: lower every forward contraction
    with a GEMM view to an NPU program (`device` empty: the module's NPU target; `cores`
    0: the device file's count; `policy`: the scratchpad's replacement, ``lru`` or
    ``belady``)."""

    name = "te-to-npu"

    device: str = "npu-edge"
    cores: int = 0
    policy: str = "lru"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.policy not in POLICIES:
            raise DiagnosticException(f"te-to-npu: unknown policy={self.policy}; known: {', '.join(POLICIES)}")
        device = target_npu(op, self.device, self.cores, "te-to-npu")
        rewriter = Rewriter()
        for te_op in [o for o in op.walk() if isinstance(o, TensorOp)]:
            view = view_of(te_op)
            if view is not None:
                rewriter.replace_op(te_op, lower_forward(te_op, view, device, self.policy))
