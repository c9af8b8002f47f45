"""The `npu` dialect: a layer's backward GEMMs as a program of an NPU with a
double-buffered scratchpad (SPM) in front of DRAM (IGO, MICRO'23, §2.2, §4.2-4.3, §5).

An `npu.kernel` computes ``dX = dY · Wᵀ`` and ``dW = Xᵀ · dY`` of one layer. Its operands
(dY, W, X) and results (dX, dW) are the DRAM tensors, seen as matrices through the
layer's GEMM view (`gemm_view`: dY is M x N, W is K x N, X is M x K, im2col and col2im
for a convolution, §6.1). Its body is straight-line device code over tiles of those
matrices, named by tensor and tile index (``"dY" <i, j>``: row tile i, column
tile j; a gradient's partial sum adds the part it belongs to): DMAs between DRAM and the
SPM, swaps of the double buffer and systolic tile GEMMs. Rounds are delimited by
`npu.swap`; a round's GEMMs (one per core) come first, then the DMAs issued while it
computes (the next round's fill and the previous rounds' write-back).

    %dx, %dw = npu.kernel dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]"
                 (%dy, %w, %x) {gemm = array<i64: 8, 32, 16>, tiles = array<i64: 8, 16, 16>,
                 order = "interleave"} : (...) -> (...) {
      npu.load "dY" <0, 0>
      npu.load "W" <0, 0>
      npu.swap
      npu.gemm "dx" <0, 0, 0> dataflow "os"
      ...
    }
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, IntAttr, IntegerAttr, StringAttr, TensorType, i64
from xdsl.ir import Attribute, Block, Dialect, ParametrizedAttribute, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import NoTerminator
from xdsl.utils.exceptions import VerifyException

from irc.dialects.igo import contraction_reads, shared_tensor
from irc.dialects.te import ExprAttr
from irc.dialects.te_expr import AffineIndex, ExprError, TensorExpr, product_factors

INPUTS = ("dY", "W", "X")
OUTPUTS = ("dX", "dW", "Y")
GEMMS = {"dx": ("dY", "W", "dX"), "dw": ("X", "dY", "dW"), "fw": ("X", "W", "Y")}
"""A tile GEMM's kind -> the tiles it reads and the output it accumulates into (``fw``:
the forward GEMM of an `npu.matmul`)."""
DATAFLOWS = ("os", "ws")
LAYOUT = {"dY": ("m", "n"), "W": ("k", "n"), "X": ("m", "k"), "dX": ("m", "k"), "dW": ("k", "n"), "Y": ("m", "n")}
"""Each tensor as a matrix of the GEMM: its row and column dimensions."""


def i64_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


@irdl_attr_definition
class TileAttr(ParametrizedAttribute):
    """A tile's indices (row tile, column tile[, part]) or a GEMM step's (i, j, k),
    written ``<0, 1>``."""

    name = "npu.tile"

    indices: ArrayAttr[IntAttr]

    def __init__(self, indices: Sequence[int]):
        super().__init__(ArrayAttr([IntAttr(int(i)) for i in indices]))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        values = parser.parse_comma_separated_list(parser.Delimiter.ANGLE, parser.parse_integer)
        return (ArrayAttr([IntAttr(v) for v in values]),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<" + ", ".join(str(i.data) for i in self.indices.data) + ">")


def values_of(attr) -> tuple[int, ...]:
    if isinstance(attr, TileAttr):
        return tuple(i.data for i in attr.indices.data)
    return tuple(int(v) for v in attr.get_values())


# ---------------------------------------------------------------------------
# The GEMM view of a gradient pair
# ---------------------------------------------------------------------------


class ViewError(ValueError):
    """A gradient pair that is no GEMM over plain axes of dY."""


@dataclass(frozen=True)
class GemmView:
    """A layer's tensors as the matrices of ``X(M,K) · W(K,N)``: the M, K and N axes
    (named as in the dX expression) and, per tensor, the indices its elements are read
    or written at (affine in those axes: a convolution's X is read im2col, its dX
    scatter-added col2im)."""

    extents: tuple[tuple[str, int], ...]
    axes: dict[str, tuple[str, ...]]
    """"m", "k", "n" -> the axes each GEMM dimension flattens (row-major)."""
    indices: dict[str, tuple[AffineIndex, ...]]

    @property
    def gemm(self) -> tuple[int, int, int]:
        extent = dict(self.extents)
        return tuple(math.prod(extent[a] for a in self.axes[d]) for d in ("m", "k", "n"))  # type: ignore[return-value]

    def index_arrays(self, tensor: str) -> tuple[np.ndarray, ...]:
        """Per dimension of `tensor`, the index of each element of its matrix (rows x cols)."""
        extent = dict(self.extents)
        rows, cols = (self.axes[d] for d in LAYOUT[tensor])
        axes = rows + cols
        shape = (math.prod(extent[a] for a in rows), math.prod(extent[a] for a in cols))
        grids = np.meshgrid(*[np.arange(extent[a]) for a in axes], indexing="ij") if axes else []
        values = {a: g.reshape(shape) for a, g in zip(axes, grids)}
        result = []
        for index in self.indices[tensor]:
            value = np.full(shape, index.constant, dtype=np.int64)
            for axis, coeff in index.terms:
                value = value + coeff * values[axis]
            result.append(value)
        return tuple(result)


def _plain(access, what: str) -> list[str]:
    axes = [i.simple_axis if isinstance(i, AffineIndex) else None for i in access.indices]
    if None in axes or len(set(axes)) != len(axes):
        raise ViewError(f"{what} '{access}' must index every dimension with its own plain axis")
    return axes  # type: ignore[return-value]


def gemm_view(dx: TensorExpr, dw: TensorExpr, shapes: dict[str, tuple[int, ...]]) -> GemmView:
    """The GEMM view of ``dX += dY * W`` and ``dW += dY * X`` (`shapes`: tensor -> shape,
    by the names of `INPUTS`/`OUTPUTS`); raises `ViewError` when the pair is not a GEMM
    whose dY and W are read with plain axes."""
    reads_dx, reads_dw = contraction_reads(dx), contraction_reads(dw)
    if reads_dx is None or reads_dw is None:
        raise ViewError("both gradients must be contractions of two tensors (+= A * B)")
    dy = shared_tensor(dx, dw)
    (dy_dx,) = [a for a in reads_dx if a.tensor == dy]
    (w_read,) = [a for a in reads_dx if a.tensor != dy]
    (dy_dw,) = [a for a in reads_dw if a.tensor == dy]
    (x_read,) = [a for a in reads_dw if a.tensor != dy]
    try:
        bound = dx.bind([shapes["dY" if t == dy else "W"] for t in dx.inputs], shapes["dX"])
    except ExprError as error:
        raise ViewError(error.message) from None
    extent = dict(bound.extents)
    dy_axes = _plain(dy_dx, "dY read")
    folded = set(dx.reduction_axes)
    n_axes = tuple(a for a in dy_axes if a in folded)
    m_axes = tuple(a for a in dy_axes if a not in folded)
    w_axes = _plain(w_read, "W read")
    k_axes = tuple(a for a in w_axes if a not in dy_axes)
    if folded != set(n_axes) or not set(n_axes) <= set(w_axes):
        raise ViewError(f"dX '{dx}' must fold exactly the axes dY and W share")
    mk = set(m_axes) | set(k_axes)
    if not set(dx.output.axes) <= mk:
        raise ViewError(f"dX '{dx.output}' may only use the axes of dY's rows and W's rows")
    # dW's axis names -> dX's: dY is read alike by both, dW is written like W is read.
    rename = dict(zip(_plain(dy_dw, "dY read"), dy_axes))
    for mine, theirs in zip(_plain(dw.output, "dW"), w_axes):
        if rename.setdefault(mine, theirs) != theirs:
            raise ViewError(f"dW '{dw.output}' and dY '{dy_dw}' disagree with dX's axes")
    if len(dy_dw.indices) != len(dy_axes) or len(dw.output.indices) != len(w_axes):
        raise ViewError("dW reads dY or writes W with another rank than dX")
    x_indices = []
    for index in x_read.indices:
        if not isinstance(index, AffineIndex) or not all(a in rename for a in index.axes):
            raise ViewError(f"X read '{x_read}' must be affine in dY's and dW's axes")
        x_indices.append(AffineIndex(tuple((rename[a], c) for a, c in index.terms), index.constant))
    if not {a for i in x_indices for a in i.axes} <= mk or {rename[a] for a in dw.reduction_axes} != set(m_axes):
        raise ViewError(f"dW '{dw}' must fold exactly the axes of dY's rows")
    plain = lambda axes: tuple(AffineIndex(((a, 1),)) for a in axes)  # noqa: E731
    return GemmView(
        extents=tuple((a, extent[a]) for a in (*m_axes, *k_axes, *n_axes)),
        axes={"m": m_axes, "k": k_axes, "n": n_axes},
        indices={"dY": plain(dy_axes), "W": plain(w_axes), "X": tuple(x_indices),
                 "dX": tuple(dx.output.indices), "dW": plain(w_axes)},
    )


def forward_view(expr: TensorExpr, shapes: dict[str, tuple[int, ...]]) -> GemmView:
    """The GEMM view of a forward contraction ``Y[m.., n..] += X[m.., k..] * W[k.., n..]``
    (`shapes`: "X", "W", "Y" -> shape; X is the first read, W the second): k folds the
    axes both reads share, m the output's axes X reads, n those W reads. X may be read
    affinely (a convolution's im2col); W and Y must use plain axes; an axis all three
    carry (a batched product) or a scale factor is no single GEMM (`ViewError`)."""
    factors = product_factors(expr) if expr.combiner == "+=" else None
    reads = contraction_reads(expr)
    if reads is None or len(factors) != 2:
        raise ViewError("a forward GEMM is a contraction of two tensors (+= A * B), without a scale")
    x_read, w_read = reads
    try:
        bound = expr.bind([shapes["X" if t == x_read.tensor else "W"] for t in expr.inputs], shapes["Y"])
    except ExprError as error:
        raise ViewError(error.message) from None
    extent = dict(bound.extents)
    w_axes, y_axes = _plain(w_read, "W read"), _plain(expr.output, "output")
    x_axes = {a for index in x_read.indices if isinstance(index, AffineIndex) for a in index.axes}
    if any(not isinstance(index, AffineIndex) for index in x_read.indices):
        raise ViewError(f"X read '{x_read}' must be affine in the axes")
    folded = set(expr.reduction_axes)
    k_axes = tuple(a for a in w_axes if a in folded)
    n_axes = tuple(a for a in y_axes if a in w_axes)
    m_axes = tuple(a for a in y_axes if a not in w_axes)
    if set(n_axes) & x_axes:
        raise ViewError(f"axes {sorted(set(n_axes) & x_axes)} index X, W and the output: a batched product")
    if folded != set(k_axes) or not x_axes <= set(m_axes) | folded or set(w_axes) != set(k_axes) | set(n_axes):
        raise ViewError(f"'{expr}' must fold exactly the axes W shares with X, and W must index only them "
                        f"and the output's")
    plain = lambda axes: tuple(AffineIndex(((a, 1),)) for a in axes)  # noqa: E731
    return GemmView(
        extents=tuple((a, extent[a]) for a in (*m_axes, *k_axes, *n_axes)),
        axes={"m": m_axes, "k": k_axes, "n": n_axes},
        indices={"X": tuple(x_read.indices), "W": plain(w_axes), "Y": plain(y_axes)},
    )


# ---------------------------------------------------------------------------
# Ops
# ---------------------------------------------------------------------------


def _check_tile(op, tensors: Sequence[str], length: int) -> None:
    if op.tensor.data not in tensors:
        raise VerifyException(f"'{op.tensor.data}' is not one of {', '.join(tensors)}")
    tile = values_of(op.tile)
    if len(tile) != length:
        raise VerifyException(f"a tile of {op.tensor.data} has {length} indices here, got {len(tile)}")
    if min(tile, default=0) < 0:
        raise VerifyException(f"tile indices must be non-negative, got {list(tile)}")


class _TileOp(IRDLOperation):
    tensor = prop_def(StringAttr)
    tile = prop_def(TileAttr)

    assembly_format = "$tensor $tile attr-dict"

    def __init__(self, tensor: str, tile: Sequence[int]):
        super().__init__(properties={"tensor": StringAttr(tensor), "tile": TileAttr(tile)})

    def key(self) -> tuple:
        return (self.tensor.data, *values_of(self.tile))


@irdl_op_definition
class LoadOp(_TileOp):
    """A DMA of one tile of an input (dY, W or X) from DRAM into the half of the SPM being
    filled while the current round computes (§2.2); the tile is usable from the next
    `npu.swap` on and stays resident until `npu.free`."""

    name = "npu.load"

    def verify_(self) -> None:
        _check_tile(self, INPUTS, 2)


@irdl_op_definition
class FreeOp(_TileOp):
    """Drops an input tile from the SPM (evicted, or used for the last time): no DMA."""

    name = "npu.free"

    def verify_(self) -> None:
        _check_tile(self, INPUTS, 2)


@irdl_op_definition
class SpillOp(_TileOp):
    """A DMA writing a gradient's partial sum (tile ``i, j, part``) to DRAM to make room
    in the SPM (§4.3: the partials dX- and dW-major orders keep); it leaves the SPM."""

    name = "npu.spill"

    def verify_(self) -> None:
        _check_tile(self, OUTPUTS, 3)


@irdl_op_definition
class ReloadOp(_TileOp):
    """A DMA reading a spilled partial sum (tile ``i, j, part``) back into the SPM, before
    a GEMM accumulates into it again or before its gradient tile is stored."""

    name = "npu.reload"

    def verify_(self) -> None:
        _check_tile(self, OUTPUTS, 3)


@irdl_op_definition
class StoreOp(_TileOp):
    """The write-back of a finished gradient tile: its ``parts`` partial sums (one per
    core that accumulated into it, all resident) are summed in the SPM and written to
    DRAM once; they leave the SPM."""

    name = "npu.store"

    parts = opt_prop_def(IntegerAttr)

    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, tensor: str, tile: Sequence[int], parts: int = 1):
        super().__init__(tensor, tile)
        if parts != 1:
            self.properties["parts"] = IntegerAttr(parts, i64)

    def part_count(self) -> int:
        return 1 if self.parts is None else int(self.parts.value.data)

    def verify_(self) -> None:
        _check_tile(self, OUTPUTS, 2)
        if self.part_count() < 1:
            raise VerifyException(f"parts must be positive, got {self.part_count()}")


@irdl_op_definition
class SwapOp(IRDLOperation):
    """The double buffer's swap: the half that was filling becomes the one the next
    round computes on; the round starts once the previous one has ended and its fill
    (the loads of its tiles, the spills that made room) has arrived."""

    name = "npu.swap"

    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class GemmOp(IRDLOperation):
    """One systolic tile GEMM of round's `core` (default 0): ``"dx"`` step (i, j, k)
    accumulates dY(i,j) · W(k,j)ᵀ into dX(i,k), ``"dw"`` accumulates X(i,k)ᵀ · dY(i,j)
    into dW(k,j), partial sum `part` (default 0). `dataflow` is the array's
    (output- or weight-stationary), which sets its cycles (SCALE-Sim's formulas)."""

    name = "npu.gemm"

    kind = prop_def(StringAttr)
    step = prop_def(TileAttr)
    dataflow = prop_def(StringAttr)
    core = opt_prop_def(IntegerAttr)
    part = opt_prop_def(IntegerAttr)

    assembly_format = "$kind $step `dataflow` $dataflow attr-dict"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, kind: str, step: Sequence[int], dataflow: str, core: int = 0, part: int = 0):
        properties: dict[str, Attribute] = {"kind": StringAttr(kind), "step": TileAttr(step),
                                            "dataflow": StringAttr(dataflow)}
        if core:
            properties["core"] = IntegerAttr(core, i64)
        if part:
            properties["part"] = IntegerAttr(part, i64)
        super().__init__(properties=properties)

    def core_index(self) -> int:
        return 0 if self.core is None else int(self.core.value.data)

    def part_index(self) -> int:
        return 0 if self.part is None else int(self.part.value.data)

    def tiles(self) -> tuple[tuple, tuple, tuple]:
        """The keys of the two tiles it reads and the partial it accumulates into."""
        i, j, k = values_of(self.step)
        if self.kind.data == "dx":
            return ("dY", i, j), ("W", k, j), ("dX", i, k, self.part_index())
        if self.kind.data == "fw":
            return ("X", i, k), ("W", k, j), ("Y", i, j, self.part_index())
        return ("X", i, k), ("dY", i, j), ("dW", k, j, self.part_index())

    def verify_(self) -> None:
        if self.kind.data not in GEMMS:
            raise VerifyException(f"kind must be one of {', '.join(GEMMS)}, got '{self.kind.data}'")
        step = values_of(self.step)
        if len(step) != 3 or min(step) < 0:
            raise VerifyException(f"step must be three non-negative tile indices (i, j, k), got {list(step)}")
        if self.dataflow.data not in DATAFLOWS:
            raise VerifyException(f"dataflow must be one of {', '.join(DATAFLOWS)}, got '{self.dataflow.data}'")
        if self.core_index() < 0 or self.part_index() < 0:
            raise VerifyException("core and part must be non-negative")


DMA_OPS = (LoadOp, SpillOp, ReloadOp, StoreOp)
BODY_OPS = (*DMA_OPS, FreeOp, SwapOp, GemmOp)


@irdl_op_definition
class KernelOp(IRDLOperation):
    """A layer's input and weight gradients as one NPU program (IGO §4.2): `gemm` is
    (M, K, N) of the layer's GEMM view, `tiles` the tile sizes (tm, tk, tn), `order` the
    tile access order the body walks (informative: the body is the program). The body
    holds only `npu` ops, every tile index within the tile counts; between two swaps
    the round's GEMMs come before the DMAs issued while it computes."""

    name = "npu.kernel"

    dx_expression = prop_def(ExprAttr)
    dw_expression = prop_def(ExprAttr)
    gemm = prop_def(DenseArrayBase)
    tiles = prop_def(DenseArrayBase)
    order = prop_def(StringAttr)
    dy = operand_def(TensorType)
    w = operand_def(TensorType)
    x = operand_def(TensorType)
    dx = result_def(TensorType)
    dw = result_def(TensorType)
    body = region_def("single_block")

    traits = traits_def(NoTerminator())

    assembly_format = (
        "`dx` $dx_expression `dw` $dw_expression ` ` `(` $dy `,` $w `,` $x `)` attr-dict "
        "`:` functional-type(operands, results) $body"
    )
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, dx_expression, dw_expression, dy: SSAValue, w: SSAValue, x: SSAValue,
                 dx_type: Attribute, dw_type: Attribute, gemm: Sequence[int], tiles: Sequence[int],
                 order: str, body: Region | None = None):
        wrap = lambda e: e if isinstance(e, ExprAttr) else ExprAttr(e)  # noqa: E731
        super().__init__(
            operands=[dy, w, x], result_types=[dx_type, dw_type],
            properties={"dx_expression": wrap(dx_expression), "dw_expression": wrap(dw_expression),
                        "gemm": i64_array(gemm), "tiles": i64_array(tiles), "order": StringAttr(order)},
            regions=[body or Region(Block())],
        )

    def shapes(self) -> dict[str, tuple[int, ...]]:
        values = {"dY": self.dy, "W": self.w, "X": self.x, "dX": self.dx, "dW": self.dw}
        return {name: tuple(v.type.get_shape()) for name, v in values.items()}  # type: ignore[union-attr]

    def view(self) -> GemmView:
        return gemm_view(self.dx_expression.expr, self.dw_expression.expr, self.shapes())

    def tile_counts(self) -> dict[str, int]:
        """Tiles along "m", "k" and "n"."""
        return _tile_counts(self)

    def verify_(self) -> None:
        _verify_tiled_gemm(self, "the expressions give", ("dx", "dw"))


def _tile_counts(op) -> dict[str, int]:
    """Tiles along "m", "k" and "n" of an op with ``gemm`` and ``tiles``."""
    return {d: math.ceil(size / tile) for d, size, tile in zip("mkn", values_of(op.gemm), values_of(op.tiles))}


def _verify_tiled_gemm(op, gives: str, products: tuple[str, ...]) -> None:
    """A tiled GEMM op's checks: its expressions are a GEMM view whose (M, K, N) is its
    ``gemm`` (``gives`` says what states it), its ``tiles`` fit, its body is the schedule."""
    try:
        view = op.view()
    except (ViewError, VerifyException) as error:
        raise VerifyException(f"not a GEMM view: {error}") from None
    gemm, tiles = values_of(op.gemm), values_of(op.tiles)
    if gemm != view.gemm:
        raise VerifyException(f"gemm says (M, K, N) = {gemm} but {gives} {view.gemm}")
    if len(tiles) != 3 or any(not 1 <= t <= g for t, g in zip(tiles, gemm)):
        raise VerifyException(f"tiles {list(tiles)} must be three sizes between 1 and (M, K, N) = {gemm}")
    _verify_body(op, products, _tile_counts(op))


def _verify_body(kernel, kinds: tuple[str, ...], counts: dict[str, int]) -> None:
    """A kernel's body: only `npu` ops, GEMMs of `kinds` over tensors of those GEMMs, every
    tile index within the tile `counts`, a round's GEMMs before its DMAs."""
    tensors = {t for kind in kinds for t in GEMMS[kind]}
    computing = False
    for op in kernel.body.block.ops:
        if not isinstance(op, BODY_OPS):
            raise VerifyException(f"'{op.name}' is not an npu op")
        if isinstance(op, SwapOp):
            computing = True
            continue
        if isinstance(op, GemmOp):
            if op.kind.data not in kinds:
                raise VerifyException(f"an npu.gemm of kind '{op.kind.data}' in '{kernel.name}' (kinds here: "
                                      f"{', '.join(kinds)})")
            if not computing:
                raise VerifyException("an npu.gemm must follow an npu.swap, before the round's DMAs")
            i, j, k = values_of(op.step)
            if i >= counts["m"] or j >= counts["n"] or k >= counts["k"]:
                raise VerifyException(f"npu.gemm step {[i, j, k]} is outside the {counts['m']}x{counts['n']}x{counts['k']} tiles")
            continue
        computing = False  # a DMA or free: the round's GEMMs are over
        if op.tensor.data not in tensors:
            raise VerifyException(f"'{op.name}' of {op.tensor.data} in '{kernel.name}' (its tensors: "
                                  f"{', '.join(sorted(tensors))})")
        rows, cols = LAYOUT[op.tensor.data]
        a, b = values_of(op.tile)[:2]
        if a >= counts[rows] or b >= counts[cols]:
            raise VerifyException(
                f"'{op.name}' of {op.tensor.data} tile {[a, b]} is outside its {counts[rows]}x{counts[cols]} tiles"
            )


@irdl_op_definition
class MatmulOp(IRDLOperation):
    """A forward contraction ``Y = X · W`` (`expression`, its reads X then W) as one NPU
    program: `gemm` is (M, K, N) of its GEMM view (`forward_view`), `tiles` the tile sizes
    (tm, tk, tn); the body loads X and W tiles, runs ``"fw"`` tile GEMMs (step (i, j, k):
    X(i,k) · W(k,j) into Y(i,j)) and stores Y's tiles, under the rules of `npu.kernel`."""

    name = "npu.matmul"

    expression = prop_def(ExprAttr)
    gemm = prop_def(DenseArrayBase)
    tiles = prop_def(DenseArrayBase)
    x = operand_def(TensorType)
    w = operand_def(TensorType)
    y = result_def(TensorType)
    body = region_def("single_block")

    traits = traits_def(NoTerminator())

    assembly_format = "$expression ` ` `(` $x `,` $w `)` attr-dict `:` functional-type(operands, results) $body"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, expression, x: SSAValue, w: SSAValue, y_type: Attribute, gemm: Sequence[int],
                 tiles: Sequence[int], body: Region | None = None):
        super().__init__(
            operands=[x, w], result_types=[y_type],
            properties={"expression": expression if isinstance(expression, ExprAttr) else ExprAttr(expression),
                        "gemm": i64_array(gemm), "tiles": i64_array(tiles)},
            regions=[body or Region(Block())],
        )

    def shapes(self) -> dict[str, tuple[int, ...]]:
        values = {"X": self.x, "W": self.w, "Y": self.y}
        return {name: tuple(v.type.get_shape()) for name, v in values.items()}  # type: ignore[union-attr]

    def view(self) -> GemmView:
        return forward_view(self.expression.expr, self.shapes())

    def tile_counts(self) -> dict[str, int]:
        """Tiles along "m", "k" and "n"."""
        return _tile_counts(self)

    def verify_(self) -> None:
        _verify_tiled_gemm(self, "the expression gives", ("fw",))


NPU = Dialect("npu", [KernelOp, MatmulOp, LoadOp, FreeOp, SpillOp, ReloadOp, StoreOp, SwapOp, GemmOp], [TileAttr])
