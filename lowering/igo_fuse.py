"""``igo-fuse``: each layer's dX/dW pair over one dY becomes one `igo.grad_pair` (IGO,
MICRO'23, §4.2 interleaving, §4.3 tile access order).

It rewrites, for a forward contraction ``Y = X · W`` (a `te.op` ``+=`` of two reads),
the two backward `te.op`s te-autodiff appends for it, ``dX[...] += dY[...] * W[...]``
(shaped like X) and ``dW[...] += dY[...] * X[...]`` (shaped like W), both reading the
same dY, into::

    %dx, %dw = igo.grad_pair dx "..." dw "..." (%dy, %w, %x) order "dx-major"

A layer whose input needs no gradient (the first layer: no dX) keeps its lone dW op.
On an NPU `order` chooses the tile access order: ``cost`` (the default) prices the three
fused orders of `irc.dialects.igo.FUSED_ORDERS` on `device` with the scratchpad model
of `irc.cost.igo` (including the spills of the partial sums dX- and dW-major orders
keep) and the unfused pair (``sequential``, under `baseline`), and keeps the cheapest,
so no pair is slower for fusing; ``paper`` applies Algorithm 1 as printed
(`irc.cost.igo.paper_order`); an order's name fixes it, ``sequential`` included (the
unfused baseline kept in one op: by default the paper's two operators, each loading dY
from DRAM, `irc.cost.igo.BASELINES`; what a benchmark compares against).

On an inter-core chip (a device of the IPU kind, such as ``ipu-mk2``) there are no
scratchpad tiles to order: the pair is fused without an order or a partition, and
`rtensor-partition` gives it one compute-shift plan whose dY ring feeds both gradients
(or runs the two gradients as separate operators where that is faster,
`irc.lowering.igo_pair_partition`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import DiagnosticException

from irc.cost.igo import BASELINES, MEMORIES, Layer, ScratchpadError, split_of
from irc.planner.igo import best_order, best_partition, evaluate, paper_order
from irc.devices import Device, load_device
from irc.devices.loader import DeviceError
from irc.devices.npu import NpuDevice
from irc.diagnostics import location_of
from irc.dialects.dtypes import byte_width
from irc.dialects.igo import ORDERS, SCHEMES, GradPairOp, contraction_reads, forward_name
from irc.dialects.te import TensorOp
from irc.dialects.te_expr import Access, Binary, Call, Expr, TensorExpr
from irc.lowering.igo_to_npu import batch_axes

CHOICES = ("cost", "paper", *ORDERS)
PARTITIONS = ("cost", "none", *SCHEMES)
COST_ORDER = {"sequential": "baseline"}
"""The order names of `irc.cost.igo` where they differ from the dialect's."""


def _rename(expr: TensorExpr, old: str, new: str) -> TensorExpr:
    def visit(node: Expr) -> Expr:
        if isinstance(node, Access):
            return Access(new if node.tensor == old else node.tensor, node.indices)
        if isinstance(node, Binary):
            return Binary(node.op, visit(node.lhs), visit(node.rhs))
        if isinstance(node, Call):
            return Call(node.function, tuple(visit(a) for a in node.args))
        return node

    return TensorExpr(expr.output, expr.combiner, visit(expr.body), expr.bindings)


def _reads(op: TensorOp) -> dict:
    """value -> tensor name, for a contraction op."""
    return {v: name for name, v in zip(op.parsed().inputs, op.inputs)}


@dataclass(frozen=True)
class Pair:
    forward: TensorOp
    dx: TensorOp
    dw: TensorOp
    dy: object
    x: object
    w: object


def find_pairs(block: Block) -> list[Pair]:
    """The (dX, dW) pairs of the block's forward contractions (see the module docstring)."""
    contractions = [op for op in block.ops if isinstance(op, TensorOp) and contraction_reads(op.parsed())]
    readers: dict = {}
    for op in contractions:
        for value in op.inputs:
            readers.setdefault(value, []).append(op)
    pairs, taken = [], set()
    for forward in contractions:
        if len(forward.inputs) != 2:
            continue
        x, w = forward.inputs
        for dx in readers.get(w, []):
            # dX reads W and dY; it is shaped like X, or like X's im2col columns when a
            # strided read made te-autodiff write it through a column GEMM
            if dx is forward or dx in taken or len(dx.inputs) != 2:
                continue
            (dy,) = [v for v in dx.inputs if v is not w] or [None]
            if dy is None or dy.type != forward.output.type or dy is x:
                continue
            found = [dw for dw in readers.get(x, []) if dw is not forward and dw not in taken and dw is not dx
                     and dw.output.type == w.type and dy in dw.inputs and set(dw.inputs) == {dy, x}]
            if found:
                pairs.append(Pair(forward, dx, found[0], dy, x, w))
                taken.update((dx, found[0]))
                break
    return pairs


def layer_of(dx_expr: TensorExpr, dy_name: str, extents: dict[str, int], element_bytes: int, name: str):
    """The forward GEMM ``X(M,K) · W(K,N)`` of a dX expression ``dX += dY * W``: N is dY's
    axes dX folds, M the rest of dY's, K the axes of W that dY lacks (im2col view)."""
    (dy_access,) = [a for a in contraction_reads(dx_expr) if a.tensor == dy_name]
    (w_access,) = [a for a in contraction_reads(dx_expr) if a.tensor != dy_name]
    dy_axes = set(dy_access.axes)
    folded = set(dx_expr.reduction_axes)
    size = lambda axes: math.prod(extents[a] for a in axes)  # noqa: E731
    n_axes = [a for a in dy_access.axes if a in folded]
    m_axes = [a for a in dy_access.axes if a not in folded]
    k_axes = [a for a in w_access.axes if a not in dy_axes]
    return Layer(M=size(m_axes), K=size(k_axes), N=size(n_axes), element_bytes=element_bytes, name=name)


def _batch_axes(dx_expr: TensorExpr, dy_name: str) -> set[str]:
    """The axes dY and W both carry that dX does not fold: a batch of GEMMs
    (`irc.lowering.igo_to_npu.batch_axes`, on the expression before the op exists)."""
    axes_of = lambda tensor: {a for access in dx_expr.accesses_of(tensor) for a in access.axes}  # noqa: E731
    others = [t for t in dx_expr.inputs if t != dy_name]
    return (axes_of(dy_name) & {a for t in others for a in axes_of(t)}) - set(dx_expr.reduction_axes)


def choose_order(layer, choice: str, device, memory: str = "irc", baseline: str = "separate") -> str:
    """The tile order of a layer's pair: ``cost`` prices the fused orders (§4.3,
    "evaluates all three") and the unfused pair (`baseline`), keeping the cheapest, so a
    pair is never slower fused than not (issue 25); ``paper``: Algorithm 1; else the
    order named."""
    if choice in ORDERS:
        return choice
    if choice == "paper":
        return paper_order(layer)
    order = best_order(layer, device, memory=memory, baseline=baseline)[0]
    return "sequential" if order == "baseline" else order


def choose_partition(layer, order: str, choice: str, device, baseline: str = "separate",
                     memory: str = "irc") -> tuple[str, int] | None:
    """The partition (§5) of a fused layer: ``cost`` prices every scheme (on one core
    split into 1, 2 or 4 parts over time, else into the cores) and keeps the cheapest,
    None when that is no split; ``none`` never splits; a scheme's name splits into the
    cores (2 parts over time on one core)."""
    if choice == "none":
        return None
    if choice in SCHEMES:
        return choice, max(device.cores, 2)
    (scheme, parts), _ = best_partition(layer, device, COST_ORDER.get(order, order), baseline=baseline, memory=memory)
    return None if parts == 1 else (scheme, parts)


def fuse(pair: Pair, choice: str, device, partition: str = "none", baseline: str = "separate",
         memory: str = "irc") -> GradPairOp:
    """The `igo.grad_pair` replacing `pair` (not yet inserted); `device` None: an
    inter-core chip (no order, no partition). On an NPU the pair records its order, its
    partition and the tiles its order and partition are priced with (`tiles`; on irc's
    memory model, the one igo-to-npu lowers to)."""
    dx_expr, dw_expr = pair.dx.parsed(), pair.dw.parsed()
    g_dx, g_dw = _reads(pair.dx)[pair.dy], _reads(pair.dw)[pair.dy]
    # One name for dY in both expressions, different from the other tensors'.
    name = g_dx
    others = {_reads(pair.dx)[pair.w], _reads(pair.dw)[pair.x]}
    if g_dw != g_dx or name in others:
        name = next(f"DY{k}" if k else "DY" for k in range(len(others) + 2)
                    if (f"DY{k}" if k else "DY") not in others)
        dx_expr, dw_expr = _rename(dx_expr, g_dx, name), _rename(dw_expr, g_dw, name)
    extents = pair.dx.bound().extent
    layer = layer_of(dx_expr, name, extents, byte_width(pair.dy.type.get_element_type()), forward_name(pair.forward))
    attributes = {"irc.gemm": StringAttr(f"M={layer.M} K={layer.K} N={layer.N}")}
    # a batched pair (attention's products) runs one GEMM per batch element: price one
    batch = math.prod(extents[a] for a in _batch_axes(dx_expr, name))
    layer = replace(layer, M=layer.M // batch)
    if device is None:
        return GradPairOp(dx_expr, dw_expr, pair.dy, pair.w, pair.x, pair.dx.output.type, pair.dw.output.type,
                          None, attributes)
    order = choose_order(layer, choice, device, memory, baseline)
    split = choose_partition(layer, order, partition, device, baseline, memory)
    if split is not None:
        attributes["partition"], attributes["parts"] = StringAttr(split[0]), IntegerAttr(split[1], i64)
    fused = GradPairOp(dx_expr, dw_expr, pair.dy, pair.w, pair.x, pair.dx.output.type, pair.dw.output.type,
                       order, attributes)
    if not batch_axes(fused):  # a batched pair (attention's products) stays igo: no tiles of one GEMM
        scheme, parts = split_of(device, *(split or (None, None)))
        tiling = evaluate(layer, device, COST_ORDER.get(order, order), scheme, parts, baseline=baseline).tiling
        fused.attributes["tiles"] = DenseArrayBase.from_list(i64, [tiling.tm, tiling.tk, tiling.tn])
    return fused


def _check_dram(pair, device) -> None:
    """A pair whose tensors (dY, W, X, dX, dW) do not fit an NPU's DRAM is an error at the
    layer, before its tile orders are priced."""
    capacity = getattr(device, "dram_bytes", None)
    if capacity is None:
        return
    values = (pair.dy, pair.w, pair.x, pair.dx.output, pair.dw.output)
    need = sum(math.prod(v.type.get_shape()) * byte_width(v.type.get_element_type()) for v in values)
    if need > capacity:
        raise DiagnosticException(
            f"{location_of(pair.forward)}: error: 'te.op' op the gradients of layer {forward_name(pair.forward)} "
            f"and their operands (dY, W, X, dX, dW) need {need} B of DRAM, more than {device.name}'s {capacity} B")


@dataclass(frozen=True)
class IgoFuse(ModulePass):
    """``igo-fuse{order=cost partition=none device=npu-edge cores=0 baseline=separate
    memory=irc}``: fuse each layer's gradient pair. `partition` (§5): ``cost`` picks each
    layer's scheme and parts with the cost model, ``none`` leaves the GEMM whole, a
    scheme's name imposes it. `cores` 0 keeps the device file's core count. `baseline` is
    how a ``sequential`` pair is priced (`irc.cost.igo.BASELINES`; igo-to-npu's option of
    the same name). `memory` the memory model the choices are priced on
    (`irc.cost.igo.MEMORIES`: irc's scratchpad, or SCALE-Sim's buffers). An inter-core
    `device` (``ipu-mk2``) takes none of these: its pairs are fused without an order."""

    name = "igo-fuse"

    order: str = "cost"
    partition: str = "none"
    device: str = "npu-edge"
    cores: int = 0
    baseline: str = "separate"
    memory: str = "irc"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.order not in CHOICES:
            raise DiagnosticException(f"igo-fuse: unknown order={self.order}; known: {', '.join(CHOICES)}")
        if self.baseline not in BASELINES:
            raise DiagnosticException(f"igo-fuse: unknown baseline={self.baseline}; known: {', '.join(BASELINES)}")
        if self.partition not in PARTITIONS:
            raise DiagnosticException(
                f"igo-fuse: unknown partition={self.partition}; known: {', '.join(PARTITIONS)}"
            )
        if self.memory not in MEMORIES:
            raise DiagnosticException(f"igo-fuse: unknown memory={self.memory}; known: {', '.join(MEMORIES)}")
        try:
            device = load_device(self.device)
        except DeviceError as error:
            raise DiagnosticException(f"igo-fuse: {error}") from None
        inter_core = isinstance(device, Device)
        if not isinstance(device, NpuDevice) and not inter_core:
            raise DiagnosticException(
                f"igo-fuse: device '{self.device}' is neither an NPU (family = \"npu\") nor an inter-core "
                f"chip of the IPU kind"
            )
        if inter_core:
            if self.order != "cost" or self.partition != "none" or self.cores or self.memory != "irc":
                raise DiagnosticException(
                    f"igo-fuse: {device.name} is an inter-core chip: its pairs get no tile order, scratchpad "
                    "partition, core count or memory model here (rtensor-partition plans them); leave order, "
                    "partition, cores and memory unset"
                )
            device = None
        if self.cores:
            try:
                device = device.with_cores(self.cores)
            except ValueError as error:
                raise DiagnosticException(f"igo-fuse: {error}") from None
        rewriter = Rewriter()
        for function in [f for f in op.walk() if isinstance(f, FuncOp) and f.body.blocks]:
            block = function.body.block
            for pair in find_pairs(block):
                _check_dram(pair, device)
                try:
                    fused = fuse(pair, self.order, device, self.partition, self.baseline, self.memory)
                except ScratchpadError as error:
                    raise DiagnosticException(
                        f"{location_of(pair.forward)}: error: 'te.op' op the gradients of layer "
                        f"{forward_name(pair.forward)} do not fit {device.name}'s scratchpad: {error}"
                    ) from None
                first = pair.dx if block.get_operation_index(pair.dx) < block.get_operation_index(pair.dw) else pair.dw
                # diagnostics about the pair point at the layer it differentiates
                fused.location = pair.forward.location
                rewriter.insert_op(fused, InsertPoint.before(first))
                pair.dx.output.replace_all_uses_with(fused.dx)
                pair.dw.output.replace_all_uses_with(fused.dw)
                rewriter.erase_op(pair.dx)
                rewriter.erase_op(pair.dw)
