"""The `igo` dialect: a layer's two gradients fused over their shared output gradient
(IGO, MICRO'23, §4.2-4.3).

`igo.grad_pair` holds the input gradient ``dX = dY · Wᵀ`` and the weight gradient
``dW = Xᵀ · dY`` of one layer as two tensor expressions over the same dY, with the tile
access order its tiled loop walks dY in. It computes exactly what the two `te.op`s it
replaces compute. On an NPU (`igo-to-npu`) the fused orders turn it into one tiled loop
that reads each dY tile once for both gradients; the order ``sequential`` is the
unfused baseline in the same op (every dX tile, then every dW tile: dY read twice), not
a fused pair. On an inter-core chip it has no order: `rtensor-partition` gives it one
compute-shift plan whose dY ring feeds both gradients (`rtensor.grad_pair`).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, StringAttr, TensorType
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, opt_prop_def, prop_def, result_def, traits_def
from xdsl.traits import NoMemoryEffect
from xdsl.utils.exceptions import VerifyException

from irc.dialects.te import ExprAttr, verify_element_types
from irc.dialects.te_expr import Access, BoundExpr, ExprError, TensorExpr, product_factors

SCHEMES = ("weight-sharing", "dy-sharing", "ifmap-sharing")
"""Partitions of the fused GEMM (§5, Fig. 11): split M (W shared), N (X shared) or K (dY
shared); an op may carry ``partition = "<scheme>"`` and ``parts = n : i64``."""
ORDERS = ("sequential", "interleave", "dx-major", "dw-major", "dx-major-dw-first", "dw-major-dw-first")
"""Tile access orders of the pair's loop: ``sequential`` (every dX tile, then every dW
tile: the unfused baseline, dY read twice; never chosen by ``order=cost``), ``interleave`` (the two traditional orders, one
step of each in turn, §4.2), ``dx-major`` and ``dw-major`` (both walk dY row- resp.
column-major, §4.3), and the same two walks running each dY tile's dW steps before its
dX steps (``dx-major-dw-first``, ``dw-major-dw-first``: irc's, `irc.cost.igo_sim`)."""
FUSED_ORDERS = ORDERS[1:]
"""The orders that read each dY tile once for both gradients (§4.2-4.3)."""


def contraction_reads(expr: TensorExpr) -> tuple[Access, Access] | None:
    """The two reads of ``OUT[...] += c * A[...] * B[...]`` (affine indices), else None."""
    factors = product_factors(expr) if expr.combiner == "+=" else None
    if factors is None:
        return None
    reads = [f for f in factors if isinstance(f, Access)]
    if len(reads) != 2 or reads[0].tensor == reads[1].tensor:
        return None
    return reads[0], reads[1]


def shared_tensor(dx: TensorExpr, dw: TensorExpr) -> str:
    """The name of the tensor both gradients read (dY); raises `VerifyException` when
    they do not share exactly one."""
    common = set(dx.inputs) & set(dw.inputs)
    if len(common) != 1:
        raise VerifyException(
            f"the gradients do not share dY: dX reads {', '.join(dx.inputs)} and dW reads "
            f"{', '.join(dw.inputs)}"
        )
    return common.pop()


def forward_name(forward) -> str:
    """How a diagnostic names a layer: its forward `te.op`'s result and expression."""
    hint = forward.output.name_hint
    return f"{'%' + hint + ' = ' if hint else ''}\"{forward.expression.text}\""


@irdl_op_definition
class GradPairOp(IRDLOperation):
    """A layer's input and weight gradients computed in one tiled loop over their shared
    output gradient (IGO §4.2). `dx_expression` reads dY and W (``dX[m,k] += dY[m,n] *
    W[k,n]``), `dw_expression` reads dY and X (``dW[k,n] += dY[m,n] * X[m,k]``); both are
    contractions (``+=`` of a product of two reads) and must read the same tensor, which
    binds `dy`. `order` is the tile access order on an NPU (`ORDERS`, §4.3; absent for an
    inter-core chip, where the pair's plan decides what moves); the optional attributes
    ``partition`` (`SCHEMES`) and ``parts`` say how the GEMM is split (§5: over time on one
    core, or over the cores); ``tiles = array<i64: tm, tk, tn>`` the tile sizes its order
    runs with on an NPU (igo-fuse records the ones it priced). The results are dX and dW,
    equal to what the two expressions compute alone."""

    name = "igo.grad_pair"

    dx_expression = prop_def(ExprAttr)
    dw_expression = prop_def(ExprAttr)
    order = opt_prop_def(StringAttr)
    dy = operand_def(TensorType)
    w = operand_def(TensorType)
    x = operand_def(TensorType)
    dx = result_def(TensorType)
    dw = result_def(TensorType)

    traits = traits_def(NoMemoryEffect())

    assembly_format = (
        "`dx` $dx_expression `dw` $dw_expression ` ` `(` $dy `,` $w `,` $x `)` (`order` $order^)? attr-dict "
        "`:` functional-type(operands, results)"
    )

    def __init__(self, dx_expression, dw_expression, dy: SSAValue, w: SSAValue, x: SSAValue,
                 dx_type: Attribute, dw_type: Attribute, order: str | None = "interleave",
                 attributes: dict[str, Attribute] | None = None):
        wrap = lambda e: e if isinstance(e, ExprAttr) else ExprAttr(e)  # noqa: E731
        properties = {"dx_expression": wrap(dx_expression), "dw_expression": wrap(dw_expression)}
        if order is not None:
            properties["order"] = StringAttr(order)
        super().__init__(
            operands=[dy, w, x], result_types=[dx_type, dw_type], properties=properties, attributes=attributes,
        )

    def operands_of(self, expr: TensorExpr, other: SSAValue) -> list[SSAValue]:
        """The op's operands in the order `expr` reads its tensors (dY and `other`)."""
        dy_name = shared_tensor(self.dx_expression.expr, self.dw_expression.expr)
        return [self.dy if name == dy_name else other for name in expr.inputs]

    def bound_dx(self) -> BoundExpr:
        return _bind(self.dx_expression.expr, self.operands_of(self.dx_expression.expr, self.w), self.dx)

    def bound_dw(self) -> BoundExpr:
        return _bind(self.dw_expression.expr, self.operands_of(self.dw_expression.expr, self.x), self.dw)

    def verify_(self) -> None:
        if self.order is not None and self.order.data not in ORDERS:
            raise VerifyException(f"unknown order '{self.order.data}' (known: {', '.join(ORDERS)})")
        scheme, parts = self.attributes.get("partition"), self.attributes.get("parts")
        if (scheme is None) != (parts is None):
            raise VerifyException("'partition' and 'parts' go together")
        if scheme is not None:
            if not isinstance(scheme, StringAttr) or scheme.data not in SCHEMES:
                raise VerifyException(f"partition must be one of {', '.join(SCHEMES)}, got {scheme}")
            if not isinstance(parts, IntegerAttr) or parts.value.data < 2:
                raise VerifyException(f"parts must be an integer of at least 2, got {parts}")
        tiles = self.attributes.get("tiles")
        if tiles is not None and not (isinstance(tiles, DenseArrayBase) and len(tiles.get_values()) == 3
                                      and all(isinstance(v, int) and v >= 1 for v in tiles.get_values())):
            raise VerifyException(f"tiles must be three positive sizes (tm, tk, tn), got {tiles}")
        dx, dw = self.dx_expression.expr, self.dw_expression.expr
        for which, expr in (("dX", dx), ("dW", dw)):
            if contraction_reads(expr) is None:
                raise VerifyException(f"the {which} expression '{expr}' is not a contraction of two tensors (+= A * B)")
        shared_tensor(dx, dw)
        for which, expr, other, result in (("dX", dx, self.w, self.dx), ("dW", dw, self.x, self.dw)):
            try:
                _bind(expr, self.operands_of(expr, other), result)
            except ExprError as error:
                raise VerifyException(f"the {which} expression '{expr}': {error.message}") from None
            verify_element_types(expr, self.operands_of(expr, other), result)


def _bind(expr: TensorExpr, operands: Sequence[SSAValue], result: SSAValue) -> BoundExpr:
    return expr.bind([tuple(v.type.get_shape()) for v in operands], tuple(result.type.get_shape()))  # type: ignore[union-attr]


IGO = Dialect("igo", [GradPairOp], [])
