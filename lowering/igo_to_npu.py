"""``igo-to-npu``: each `igo.grad_pair` becomes an `npu.kernel`, the program that computes
the layer's dX and dW on an NPU with a double-buffered scratchpad (IGO, MICRO'23, §2.2
double-buffered SPM, §4.2-4.3 interleaving and tile access order, §5 partitioning).

It rewrites::

    %dx, %dw = igo.grad_pair dx "..." dw "..." (%dy, %w, %x) order "dx-major" {partition = ..., parts = ...}

into ``npu.kernel`` over the layer's GEMM view (`irc.dialects.npu.gemm_view`) whose body
walks the tiles in the op's order (``sequential``: every dX step, then every dW step: the
unfused baseline, by default as two operators, the dX operator's tiles dropped before
the dW operator loads its own; ``baseline=paper`` keeps the dY tiles the dW operator
reuses within half the SPM, `irc.cost.igo.BASELINES`), split as its partition says (over
time on one core, or over the cores), with the scratchpad managed as `irc.cost.igo` plans
it: the tiles each round needs are loaded into the half being filled while the previous
round computes, evicted input tiles are freed, evicted partial sums spilled and
reloaded, finished gradient tiles summed over their parts and written back once. The
tiles are the pair's (``tiles``, recorded by igo-fuse), else the best for its order and
partition (`irc.planner.igo`). The rest of the function (the forward pass, the
elementwise backward ops, lone gradients) stays `te`. The module's target becomes the
NPU (``irc.target``, cost ``igo``).

A layer whose one step does not fit half the scratchpad, even in 1x1x1 tiles, is an
error at the layer's forward op (igo-fuse gives the pair its location) naming the
layer and the bytes needed and available. A pair without a tile order (fused for an
inter-core chip) is an error.
"""

from __future__ import annotations

import math

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import DiagnosticException

from irc.cost.igo import (
    BASELINES,
    POLICIES,
    Layer,
    ScratchpadError,
    Tiling,
    operator_starts,
    plan_transfers,
    queue,
    schedule,
    split_of,
)
from irc.planner.igo import evaluate
from irc.devices import load_device
from irc.devices.loader import DeviceError
from irc.devices.npu import NpuDevice
from irc.diagnostics import location_of
from irc.dialects.dtypes import byte_width
from irc.dialects.igo import GradPairOp, forward_name
from irc.dialects.npu import (
    FreeOp,
    GemmOp,
    KernelOp,
    LoadOp,
    ReloadOp,
    SpillOp,
    StoreOp,
    SwapOp,
    ViewError,
    gemm_view,
)
from irc.dialects.target import TARGET_ATTR, TargetAttr
from irc.dialects.te import TensorOp
from irc.target import npu_device_of, target_attr

COST = "igo"
"""The cost model an NPU target names: `irc.cost.igo`'s scratchpad model."""
COST_ORDER = {"sequential": "baseline"}


def npu_target(device) -> TargetAttr:
    """The self-contained target of an ``NpuDevice``."""
    return target_attr(device, COST)


def resolve_device(module: ModuleOp, name: str, cores: int, pass_name: str = "igo-to-npu"):
    """The NPU to lower for: `name` (with `cores`, 0: the file's count), or the module's
    NPU target when `name` is empty (`pass_name` prefixes the diagnostics)."""
    if not name:
        target = module.attributes.get(TARGET_ATTR)
        if not isinstance(target, TargetAttr):
            raise DiagnosticException(f"{pass_name}: the module has no irc.target; name the NPU: {pass_name}{{device=...}}")
        device = npu_device_of(target)
    else:
        try:
            device = load_device(name)
        except DeviceError as error:
            raise DiagnosticException(f"{pass_name}: {error}") from None
        if not isinstance(device, NpuDevice):
            raise DiagnosticException(f"{pass_name}: device '{name}' is not an NPU (family = \"npu\")")
    if cores:
        try:
            device = device.with_cores(cores)
        except ValueError as error:
            raise DiagnosticException(f"{pass_name}: {error}") from None
    return device


def target_npu(module: ModuleOp, name: str, cores: int, pass_name: str):
    """The NPU a pass lowers `module` for (`resolve_device`), written as the module's
    target; a module that already targets another chip is one diagnostic."""
    device = resolve_device(module, name, cores, pass_name)
    have = module.attributes.get(TARGET_ATTR)
    target = npu_target(device)
    if isinstance(have, TargetAttr) and have != target and have.cost_name != COST:
        raise DiagnosticException(
            f"{pass_name}: the module targets '{have.device_name}' ({have.cost_name}), not the NPU {device.name}"
        )
    module.attributes[TARGET_ATTR] = target
    return device


def kernel_program(rounds, transfers, dataflow: str) -> list:
    """The body ops of a schedule (`irc.cost.igo.schedule`) and its planned transfers
    (with frees), in program order (`irc.cost.igo.queue`)."""
    parts: dict[tuple, set] = {}
    for steps in rounds:
        for step in steps:
            parts.setdefault(step.output()[:3], set()).add(step.output())
    ops: list = []
    for kind, t, tr in queue(transfers, len(rounds)):
        if kind == "round":
            ops.append(SwapOp())
            for step in rounds[t]:
                ops.append(GemmOp(step.kind, (step.i, step.j, step.k), dataflow, step.core, step.part))
        elif tr.kind == "free":
            ops.append(FreeOp(tr.tile[0], tr.tile[1:3]))
        elif tr.kind == "load":
            ops.append(ReloadOp(tr.tile[0], tr.tile[1:4]) if tr.partial else LoadOp(tr.tile[0], tr.tile[1:3]))
        elif tr.partial:
            ops.append(SpillOp(tr.tile[0], tr.tile[1:4]))
        else:
            ops.append(StoreOp(tr.tile[0], tr.tile[1:3], len(parts[tr.tile[:3]])))
    return ops


def tiles_of(op) -> Tiling | None:
    """The tiles a gradient pair or kernel states (`tiles = array<i64: tm, tk, tn>`), if any."""
    attr = op.tiles if isinstance(op, KernelOp) else op.attributes.get("tiles")
    if attr is None:
        return None
    return Tiling(*(int(v) for v in attr.get_values()))


def plan_of(op, device, policy: str = "lru", tiling=None, baseline: str = "separate"):
    """(layer, tiling, rounds, transfers) of a gradient pair (or of the kernel lowered
    from one) on `device`, as `irc.cost.igo` evaluates it: its tiles are `tiling`, else
    the ones it states (when they fit `device`: igo-fuse may have priced another NPU),
    else the best for its order and partition (`baseline`: what a ``sequential`` pair
    keeps between its two GEMMs)."""
    view = gemm_view(op.dx_expression.expr, op.dw_expression.expr, {
        "dY": tuple(op.dy.type.get_shape()), "W": tuple(op.w.type.get_shape()), "X": tuple(op.x.type.get_shape()),
        "dX": tuple(op.dx.type.get_shape()), "dW": tuple(op.dw.type.get_shape()),
    })
    m, k, n = view.gemm
    layer = Layer(M=m, K=k, N=n, element_bytes=byte_width(op.dy.type.get_element_type()),
                  name=f"{op.dx_expression.expr.output.tensor}/{op.dw_expression.expr.output.tensor} "
                       f"({location_of(op)})")
    scheme, parts = op.attributes.get("partition"), op.attributes.get("parts")
    scheme, parts = split_of(device, scheme.data if scheme is not None else None,
                             int(parts.value.data) if parts is not None else None)
    if device.cores > 1 and parts > device.cores:
        raise ValueError(f"{parts} parts for {device.cores} cores")
    order = COST_ORDER.get(op.order.data, op.order.data)

    def planned(tiling):
        if any(t > d for t, d in zip((tiling.tm, tiling.tk, tiling.tn), (m, k, n))):
            raise ValueError(f"tiles {[tiling.tm, tiling.tk, tiling.tn]} exceed the GEMM (M, K, N) = {[m, k, n]}")
        rounds = schedule(layer, tiling, order, scheme, parts, device.cores, baseline, device.dataflow)
        transfers = plan_transfers(rounds, layer, tiling, device.spm_bytes // 2, policy, frees=True,
                                   flush_before=operator_starts(rounds, order, baseline), paper=baseline == "paper")
        return layer, tiling, rounds, transfers

    if tiling is not None:
        return planned(tiling)
    stated = tiles_of(op)
    if stated is not None:
        try:
            return planned(stated)
        except ScratchpadError:
            pass  # priced for another NPU: search this one's
    return planned(evaluate(layer, device, order, scheme, parts, policy=policy, baseline=baseline).tiling)


def lower_pair(op: GradPairOp, device, policy: str = "lru", tiling=None, baseline: str = "separate") -> KernelOp:
    """The `npu.kernel` of a gradient pair (`tiling`: the pair's, or searched, when None)."""
    try:
        layer, tiling, rounds, transfers = plan_of(op, device, policy, tiling, baseline)
    except ViewError as error:
        raise DiagnosticException(f"{location_of(op)}: error: 'igo.grad_pair' op has no GEMM view: {error}") from None
    except ScratchpadError as error:
        raise DiagnosticException(
            f"{location_of(op)}: error: 'igo.grad_pair' op layer {layer_name(op)} does not fit "
            f"{device.name}'s scratchpad: {error}"
        ) from None
    except ValueError as error:
        raise DiagnosticException(f"{location_of(op)}: error: 'igo.grad_pair' op {error}") from None
    dram = sum(math.prod(v.type.get_shape()) * byte_width(v.type.get_element_type())
               for v in (op.dy, op.w, op.x, op.dx, op.dw))
    if device.dram_bytes is not None and dram > device.dram_bytes:
        raise DiagnosticException(
            f"{location_of(op)}: error: 'igo.grad_pair' op layer {layer_name(op)}'s tensors (dY, W, X, dX, dW) need "
            f"{dram} B of DRAM, more than {device.name}'s {device.dram_bytes} B"
        )
    body = Block(kernel_program(rounds, transfers, device.dataflow))
    kernel = KernelOp(op.dx_expression, op.dw_expression, op.dy, op.w, op.x, op.dx.type, op.dw.type,
                      (layer.M, layer.K, layer.N), (tiling.tm, tiling.tk, tiling.tn), op.order.data, Region(body))
    for name in ("partition", "parts"):  # what the body's split follows, for the reader
        if name in op.attributes:
            kernel.attributes[name] = op.attributes[name]
    kernel.location = op.location
    return kernel


def batch_axes(op: GradPairOp) -> set[str]:
    """The axes dY, W and X all carry (a batched GEMM, as attention's ``P·V``): such a
    pair is not one GEMM and is left to the `igo` level."""
    dx, dw = op.dx_expression.expr, op.dw_expression.expr
    dy = (set(dx.inputs) & set(dw.inputs)).pop()
    axes_of = lambda tensors: {a for t in tensors for access in dx.accesses_of(t) for a in access.axes}  # noqa: E731
    return (axes_of([dy]) & axes_of([t for t in dx.inputs if t != dy])) - set(dx.reduction_axes)


def layer_name(op: GradPairOp) -> str:
    """The forward layer a pair differentiates (its contraction reading X and W, as
    `irc.lowering.igo_fuse.forward_name` names it), else its gradients' names."""
    for use in op.w.uses:
        forward = use.operation
        if isinstance(forward, TensorOp) and forward is not op and op.x in forward.inputs and op.w in forward.inputs:
            return forward_name(forward)
    return f"with gradients '{op.dx_expression.expr.output.tensor}/{op.dw_expression.expr.output.tensor}'"


@dataclass(frozen=True)
class IgoToNpu(ModulePass):
    """``igo-to-npu{device=npu-edge cores=0 policy=lru baseline=separate}``: lower every
    gradient pair to an NPU program (`device` empty: the module's NPU target; `cores` 0:
    the device file's count; `policy`: the scratchpad's replacement, ``lru`` or
    ``belady``; `baseline`: a ``sequential`` pair as two operators, ``separate``, as two
    operators that reuse dY within half the SPM, ``paper`` (IGO §4.2), or as one walk
    through one cache, ``shared``)."""

    name = "igo-to-npu"

    device: str = "npu-edge"
    cores: int = 0
    policy: str = "lru"
    baseline: str = "separate"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.policy not in POLICIES:
            raise DiagnosticException(f"igo-to-npu: unknown policy={self.policy}; known: {', '.join(POLICIES)}")
        if self.baseline not in BASELINES:
            raise DiagnosticException(
                f"igo-to-npu: unknown baseline={self.baseline}; known: {', '.join(BASELINES)}")
        device = target_npu(op, self.device, self.cores, "igo-to-npu")
        rewriter = Rewriter()
        for pair in [o for o in op.walk() if isinstance(o, GradPairOp)]:
            if pair.order is None:
                raise DiagnosticException(
                    f"{location_of(pair)}: error: 'igo.grad_pair' op has no tile order (igo-fuse fused it for an "
                    f"inter-core chip); run igo-fuse{{device={device.name}}} for an NPU"
                )
            if batch_axes(pair):
                continue  # a batched GEMM (attention's products): no GEMM view, stays igo
            kernel = lower_pair(pair, device, self.policy, baseline=self.baseline)
            rewriter.replace_op(pair, kernel)
