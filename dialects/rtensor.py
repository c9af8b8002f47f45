"""The `rtensor` dialect: operators with compute-shift plans (T10 §3.2, §4.1-4.2).

T10's rTensor abstraction attaches a partition plan to every tensor of an operator.
The op carries the operator partition factors ``F_op`` (one per axis of its tensor
expression); each tensor's *type* carries its layout on the chip: the spatial factors
``fs`` (how many core groups split each dimension), the temporal factors ``ft`` (how
many rotating sub-partitions each core group's share is cut into), the replica count
(how many rings hold a copy) and the padded shape. A dimension indexed by a compound
index such as ``h+r`` is partitioned per basic axis (T10 §5, "compound axis"), so its
factors are written per term: ``fs=[1,1,2+1,2+1]``.

    %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = array<i64: 1, 4, 368>
           : (!rtensor.tensor<32x5120xf16, fs=[1,4], ft=[1,4], replicas=368>,
              !rtensor.tensor<5120x15360xf16, fs=[4,368], ft=[1,1]>)
           -> !rtensor.tensor<32x15360xf16, fs=[1,368], ft=[1,1], replicas=4>

The verifier of `rtensor.op` checks what the op states by itself (its types' factors
form one plan); the ``rtensor-check`` pass checks that plan against every T10 constraint
on the module's ``irc.target`` (``irc.lowering.rtensor_plan``), so IR and planner agree. `rtensor.relayout` changes a tensor's layout (or moves it between the host
and the chip) and has a cost. Model-wide planning (T10 §4.3.2) records on a
weight-carrying `rtensor.op` the idle plan its weights rest in between uses and the
setup cycles of turning it active (``idle = #rtensor.idle<...>``, `IdlePlanAttr`),
also checked against the plan by the verifier. `rtensor.grad_pair` is a layer's two
gradients under one plan (`irc.planner.igo_pair`): the dY partition it rotates feeds
both products.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import DenseArrayBase, i64
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import NoMemoryEffect
from xdsl.utils.exceptions import VerifyException

from irc.dialects.dtypes import element_bytes  # noqa: F401 (re-exported to the lowering)
from irc.dialects.igo import contraction_reads
from irc.dialects.rtensor_types import IdlePlanAttr, RTensorType, tensor_like  # noqa: F401 (re-exported)
from irc.dialects.te import ExprAttr, verify_element_types
from irc.dialects.te_expr import AffineIndex, BoundExpr, ExprError, TensorExpr


@dataclass(frozen=True)
class OpPlan:
    """What an `rtensor.op` states of its plan: F_op and, per tensor, f_t per op axis
    (the planner's ``Plan`` without a score)."""

    axes: tuple[str, ...]
    op_factors: tuple[int, ...]
    temporal_factors: dict[str, tuple[int, ...]]

IDLE_ATTR = "idle"
"""The attribute of a weight-carrying `rtensor.op` holding its `IdlePlanAttr`."""


# ---------------------------------------------------------------------------
# Layout <-> plan mapping shared by the op and the partition pass
# ---------------------------------------------------------------------------


def _index_terms(bound: BoundExpr, tensor: str) -> tuple[AffineIndex, ...]:
    expr = bound.expr
    if tensor == expr.output.tensor:
        return expr.output.indices
    accesses = expr.accesses_of(tensor)
    return accesses[0].indices


def _partitioning_axes(index) -> tuple[str, ...]:
    """The axes whose partition factors cut a dim read at ``index``: none for a constant
    and for an index read from another tensor (a gather's table dim is held whole)."""
    return index.axes if isinstance(index, AffineIndex) else ()


def layout_types(bound: BoundExpr, plan, element_type) -> dict[str, RTensorType]:
    """The `RTensorType` of every tensor of `bound` under a scored `irc.planner.Plan`;
    ``element_type`` is one element type for all, or one per tensor name."""
    score = plan.score
    if score is None:
        raise ValueError("layout_types needs a scored plan (irc.planner.check_plan)")
    axes = list(plan.axes)
    padded_extent = dict(zip(axes, score.padded_extents))
    types = {}
    for tensor, shape in bound.shapes.items():
        indices = _index_terms(bound, tensor)
        spatial, temporal, padded = [], [], []
        for size, index in zip(shape, indices):
            # a dimension read at a constant index (or a gather's table dim, read at the
            # index tensor's values) is not partitioned: fs = ft = [1]
            terms = _partitioning_axes(index)
            spatial.append([plan.op_factors[axes.index(a)] for a in terms] or [1])
            temporal.append([plan.temporal_factors[tensor][axes.index(a)] for a in terms] or [1])
            high = index.value_range(padded_extent)[1] if isinstance(index, AffineIndex) else size - 1
            padded.append(max(size, high + 1))
        element = element_type[tensor] if isinstance(element_type, dict) else element_type
        types[tensor] = RTensorType(shape, element, spatial, temporal, score.replicas[tensor], padded)
    return types


# ---------------------------------------------------------------------------
# Ops
# ---------------------------------------------------------------------------


@irdl_op_definition
class RTensorOp(IRDLOperation):
    """One operator of a tensor expression, executed compute-shift under a plan.

    ``expression`` is the te expression (as on `te.op`); ``F_op`` gives the operator
    partition factor of each axis of the expression, in the order
    `TensorExpr.axes` lists them (output axes first, then reduction axes); each
    operand's and the result's `!rtensor.tensor` type gives that tensor's spatial and
    temporal factors, replicas and padding. The chip and cost model the plan was made
    for are the module's ``irc.target``; the verifier checks what the op states by
    itself (the types' factors form one plan), and the ``rtensor-check`` pass checks
    the plan against every T10 constraint on the target.
    """

    name = "rtensor.op"

    expression = prop_def(ExprAttr)
    op_factors = prop_def(DenseArrayBase, prop_name="F_op")
    inputs = var_operand_def(RTensorType)
    output = result_def(RTensorType)

    traits = traits_def(NoMemoryEffect())

    assembly_format = (
        "$expression ` ` `(` $inputs `)` `F_op` `=` qualified($F_op) attr-dict `:` functional-type($inputs, $output)"
    )

    def __init__(
        self,
        expression: str | TensorExpr | ExprAttr,
        inputs: Sequence[SSAValue],
        result_type: RTensorType,
        op_factors: Sequence[int],
        attributes: dict[str, Attribute] | None = None,
    ):
        super().__init__(
            operands=[inputs],
            result_types=[result_type],
            properties={
                "expression": expression if isinstance(expression, ExprAttr) else ExprAttr(expression),
                "F_op": DenseArrayBase.from_list(i64, [int(f) for f in op_factors]),
            },
            attributes=attributes,
        )

    # -- the contract used by the lowering to shift -----------------------
    @property
    def factors(self) -> tuple[int, ...]:
        """F_op, one per axis of `bound().extents`."""
        return tuple(int(f) for f in self.op_factors.get_values())

    def parsed(self) -> TensorExpr:
        return self.expression.expr

    def tensor_types(self) -> dict[str, RTensorType]:
        """The layout of each tensor of the expression, by tensor name."""
        expr = self.parsed()
        types = {expr.output.tensor: self.output.type}
        for name, value in zip(expr.inputs, self.inputs):
            types[name] = value.type
        return types  # type: ignore[return-value]

    def bound(self) -> BoundExpr:
        """The expression with axis extents from the global shapes of the types."""
        return self.parsed().bind(
            [tuple(v.type.get_shape()) for v in self.inputs],  # type: ignore[union-attr]
            tuple(self.output.type.get_shape()),  # type: ignore[union-attr]
        )

    def plan(self) -> OpPlan:
        """F_op and, per tensor, f_t per op axis, as the types state them.

        Raises `VerifyException` when the types' factors cannot be read as one plan.
        """
        bound = self.bound()
        axes = tuple(axis for axis, _ in bound.extents)
        factors = self.factors
        if len(factors) != len(axes):
            raise VerifyException(
                f"F_op has {len(factors)} entries but the expression has {len(axes)} axes "
                f"({', '.join(axes)})"
            )
        temporal = _stated_temporal(bound, self.tensor_types(), axes, factors)
        return OpPlan(axes, factors, temporal)

    def verify_(self) -> None:
        expr = self.parsed()
        try:
            self.bound()
        except ExprError as error:
            raise VerifyException(f"'{self.expression.text}': {error.message}") from None
        verify_element_types(expr, self.inputs, self.output)
        plan = self.plan()
        attr = self.attributes.get(IDLE_ATTR)
        if attr is not None:
            if not isinstance(attr, IdlePlanAttr):
                raise VerifyException(f"attribute '{IDLE_ATTR}' must be a #rtensor.idle, got {attr}")
            self.idle_factors(attr, plan)

    # -- the idle plan of model-wide planning ------------------------------
    def idle_factors(self, attr: IdlePlanAttr, plan: OpPlan | None = None) -> dict[str, tuple[int, ...]]:
        """The idle f_t per op axis of each weight an ``idle`` attribute names; raises
        `VerifyException` when they are not a finer cut of the active plan's."""
        bound = self.bound()
        plan = plan or self.plan()
        expr = bound.expr
        axes = list(plan.axes)
        factors = {}
        for name, dims in attr.temporal_factors.items():
            if name not in expr.inputs:
                raise VerifyException(
                    f"idle plan names '{name}', which is not an input of the expression "
                    f"(inputs: {', '.join(expr.inputs)})"
                )
            indices = _index_terms(bound, name)
            if len(dims) != len(indices):
                raise VerifyException(
                    f"idle ft of {name} has {len(dims)} dimension(s) but {name} has {len(indices)}"
                )
            per_axis = dict.fromkeys(axes, 1)
            seen: dict[str, int] = {}
            for dim, (terms, index) in enumerate(zip(dims, indices)):
                if not _partitioning_axes(index):  # a constant (or indirect) index: not partitioned
                    if tuple(terms) != (1,):
                        raise VerifyException(
                            f"idle ft of {name} dimension {dim} must be [1]: it is read at the "
                            f"index '{index}', which no axis partitions"
                        )
                    continue
                if len(terms) != len(index.axes):
                    raise VerifyException(
                        f"idle ft of {name} dimension {dim} gives {len(terms)} factor(s) but its index "
                        f"'{index}' has {len(index.axes)} term(s)"
                    )
                for axis, factor in zip(index.axes, terms):
                    if seen.setdefault(axis, factor) != factor:
                        raise VerifyException(
                            f"idle ft of {name} on axis {axis} is both {seen[axis]} and {factor}"
                        )
                    active = plan.temporal_factors[name][axes.index(axis)]
                    if factor % active:
                        raise VerifyException(
                            f"idle ft of {name} on axis {axis} is {factor}, not a multiple of its "
                            f"active ft {active}: an idle plan only cuts the active partition finer"
                        )
                    per_axis[axis] = factor
            factors[name] = tuple(per_axis.values())
        return factors


@irdl_op_definition
class RelayoutOp(IRDLOperation):
    """Changes where a tensor lives: the same global tensor in another layout.

    Between two `!rtensor.tensor` types it is an on-chip exchange that moves every
    core's data into the layout the consumer's plan wants (T10 §4.3.2: the cost of
    changing layouts between operators). From a builtin ``tensor`` to an
    `!rtensor.tensor` it distributes a host (off-chip) tensor onto the chip, and back
    it gathers the tensor off the chip; the partition pass uses these at function
    boundaries. The global shape and element type never change.
    """

    name = "rtensor.relayout"

    source = operand_def(Attribute)
    result = result_def(Attribute)

    traits = traits_def(NoMemoryEffect())

    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, result_type: Attribute):
        super().__init__(operands=[source], result_types=[result_type])

    def verify_(self) -> None:
        source, result = self.source.type, self.result.type
        source_shape, source_element = tensor_like(source, "the source")
        result_shape, result_element = tensor_like(result, "the result")
        if not isinstance(source, RTensorType) and not isinstance(result, RTensorType):
            raise VerifyException(
                "relayout between two builtin tensors moves nothing; one side must be an "
                "!rtensor.tensor"
            )
        if source_shape != result_shape:
            raise VerifyException(
                f"relayout keeps the global shape, but the source is "
                f"{'x'.join(map(str, source_shape))} and the result "
                f"{'x'.join(map(str, result_shape))}"
            )
        if source_element != result_element:
            raise VerifyException(
                f"relayout keeps the element type, but the source has {source_element} "
                f"and the result {result_element}"
            )

    # -- cost -------------------------------------------------------------
    @property
    def is_host_transfer(self) -> bool:
        """True when one side is a builtin (host / off-chip) tensor."""
        return not (
            isinstance(self.source.type, RTensorType) and isinstance(self.result.type, RTensorType)
        )

    def bytes_per_core(self) -> int:
        """Bytes each core receives (or sends off the chip).

        Onto the chip or between layouts: the destination's resident per-core
        partition (T10 §4.1: one temporal sub-partition per core); zero when both
        layouts are the same. Off the chip: the source's per-core partition.
        """
        source, result = self.source.type, self.result.type
        if source == result:
            return 0
        side = result if isinstance(result, RTensorType) else source
        assert isinstance(side, RTensorType)
        return side.partition_bytes()


def _stated_temporal(bound: BoundExpr, types: dict[str, RTensorType], axes: Sequence[str],
                     factors: Sequence[int]) -> dict[str, tuple[int, ...]]:
    """Per tensor of `bound`, f_t per axis of `axes` as its `types` state them; checks
    that every dimension's fs is F_op on its axes (`factors`, one per axis of `axes`)."""
    temporal = {}
    for tensor, type_ in types.items():
        indices = _index_terms(bound, tensor)
        per_axis: dict[str, int | None] = dict.fromkeys(axes, None)
        for dim, index in enumerate(indices):
            terms = _partitioning_axes(index)
            fs, ft = type_.spatial_factors[dim], type_.temporal_factors[dim]
            if not terms:
                if fs != (1,) or ft != (1,):
                    raise VerifyException(
                        f"{tensor} dimension {dim} is read at the index '{index}', which no axis "
                        f"partitions: fs and ft must be [1], got fs={list(fs)} ft={list(ft)}"
                    )
                continue
            if len(fs) != len(terms):
                raise VerifyException(
                    f"{tensor} dimension {dim} is indexed by '{index}' ({len(terms)} term(s)) "
                    f"but its type gives {len(fs)} factor(s): {type_}"
                )
            for axis, s, t in zip(terms, fs, ft):
                expected = factors[list(axes).index(axis)]
                if s != expected:
                    raise VerifyException(
                        f"fs of {tensor} on axis {axis} (dimension {dim}) is {s}, but F_op on {axis} is {expected}"
                    )
                if per_axis[axis] is not None and per_axis[axis] != t:
                    raise VerifyException(f"ft of {tensor} on axis {axis} is both {per_axis[axis]} and {t}")
                per_axis[axis] = t
        temporal[tensor] = tuple(1 if v is None else v for v in per_axis.values())
    return temporal


@irdl_op_definition
class GradPairOp(IRDLOperation):
    """A layer's two gradients under ONE compute-shift plan (irc's own extension of T10
    to IGO's fused pair, `irc.planner.igo_pair`): ``dX += dY * W`` (`dx_expression`) and
    ``dW += dY * X`` (`dw_expression`) range over the same axes, and ``F_op`` gives one
    partition factor per axis, in the dX expression's axis order (output axes first, then
    reduction axes). Each operand's and result's `!rtensor.tensor` type gives that
    tensor's spatial and temporal factors as on `rtensor.op`; dY's, read by both
    products, is stated once, so its partition rotates on one ring and feeds both
    gradients at every step. The verifier checks that the types' factors form one plan;
    `rtensor-check` checks that plan against the T10 constraints over the five tensors on
    the module's target. Computes what the two expressions compute alone."""

    name = "rtensor.grad_pair"

    dx_expression = prop_def(ExprAttr)
    dw_expression = prop_def(ExprAttr)
    op_factors = prop_def(DenseArrayBase, prop_name="F_op")
    dy = operand_def(RTensorType)
    w = operand_def(RTensorType)
    x = operand_def(RTensorType)
    dx = result_def(RTensorType)
    dw = result_def(RTensorType)

    traits = traits_def(NoMemoryEffect())

    assembly_format = (
        "`dx` $dx_expression `dw` $dw_expression ` ` `(` $dy `,` $w `,` $x `)` `F_op` `=` qualified($F_op) "
        "attr-dict `:` functional-type(operands, results)"
    )

    def __init__(self, dx_expression, dw_expression, dy: SSAValue, w: SSAValue, x: SSAValue,
                 dx_type: RTensorType, dw_type: RTensorType, op_factors: Sequence[int],
                 attributes: dict[str, Attribute] | None = None):
        wrap = lambda e: e if isinstance(e, ExprAttr) else ExprAttr(e)  # noqa: E731
        super().__init__(
            operands=[dy, w, x], result_types=[dx_type, dw_type],
            properties={"dx_expression": wrap(dx_expression), "dw_expression": wrap(dw_expression),
                        "F_op": DenseArrayBase.from_list(i64, [int(f) for f in op_factors])},
            attributes=attributes,
        )

    @property
    def factors(self) -> tuple[int, ...]:
        return tuple(int(f) for f in self.op_factors.get_values())

    def dy_name(self) -> str:
        common = set(self.dx_expression.expr.inputs) & set(self.dw_expression.expr.inputs)
        if len(common) != 1:
            raise VerifyException(
                f"the gradients do not share dY: dX reads {', '.join(self.dx_expression.expr.inputs)} and dW "
                f"reads {', '.join(self.dw_expression.expr.inputs)}"
            )
        return common.pop()

    def _read_values(self, expr: TensorExpr, other: SSAValue) -> list[SSAValue]:
        dy = self.dy_name()
        return [self.dy if name == dy else other for name in expr.inputs]

    def _bind(self, expr: TensorExpr, other: SSAValue, result: SSAValue) -> BoundExpr:
        operands = self._read_values(expr, other)
        return expr.bind([tuple(v.type.get_shape()) for v in operands], tuple(result.type.get_shape()))  # type: ignore[union-attr]

    def bound_dx(self) -> BoundExpr:
        return self._bind(self.dx_expression.expr, self.w, self.dx)

    def bound_dw(self) -> BoundExpr:
        return self._bind(self.dw_expression.expr, self.x, self.dw)

    def operands_of_dx(self) -> list[SSAValue]:
        """The dX expression's operands in the order it reads them (dY and W)."""
        return self._read_values(self.dx_expression.expr, self.w)

    def operands_of_dw(self) -> list[SSAValue]:
        """The dW expression's operands in the order it reads them (dY and X)."""
        return self._read_values(self.dw_expression.expr, self.x)

    @property
    def axes(self) -> tuple[str, ...]:
        """The shared axes, in the order F_op lists them (the dX expression's)."""
        return tuple(axis for axis, _ in self.bound_dx().extents)

    def tensor_types(self) -> dict[str, RTensorType]:
        """The layout of each of the five tensors, by name (dX, dW, dY, W, X)."""
        dx, dw = self.dx_expression.expr, self.dw_expression.expr
        dy = self.dy_name()
        w = next(n for n in dx.inputs if n != dy)
        x = next(n for n in dw.inputs if n != dy)
        return {dx.output.tensor: self.dx.type, dw.output.tensor: self.dw.type, dy: self.dy.type,  # type: ignore[dict-item]
                w: self.w.type, x: self.x.type}  # type: ignore[dict-item]

    def plan(self) -> OpPlan:
        """F_op and, per tensor of both products, f_t per shared axis, as the types state
        them (raises `VerifyException` when they are not one plan)."""
        bound_dx, bound_dw = self.bound_dx(), self.bound_dw()
        axes = self.axes
        extents = dict(bound_dx.extents)
        other = dict(bound_dw.extents)
        if set(other) != set(extents) or any(other[a] != extents[a] for a in extents):
            raise VerifyException(
                "the gradients must range over the same axes with the same extents: dX over "
                f"{', '.join(f'{a}={e}' for a, e in bound_dx.extents)}, dW over "
                f"{', '.join(f'{a}={e}' for a, e in bound_dw.extents)}"
            )
        factors = self.factors
        if len(factors) != len(axes):
            raise VerifyException(
                f"F_op has {len(factors)} entries but the gradients have {len(axes)} axes ({', '.join(axes)})"
            )
        types = self.tensor_types()
        if len(types) != 5:
            raise VerifyException(f"the pair's five tensors need distinct names, got {', '.join(types)}")
        dx, dw = self.dx_expression.expr, self.dw_expression.expr
        temporal = _stated_temporal(bound_dx, {n: types[n] for n in (dx.output.tensor, *dx.inputs)}, axes, factors)
        temporal.update(_stated_temporal(bound_dw, {n: types[n] for n in (dw.output.tensor, *dw.inputs)},
                                         axes, factors))
        return OpPlan(axes, factors, temporal)

    def verify_(self) -> None:
        dx, dw = self.dx_expression.expr, self.dw_expression.expr
        for which, expr in (("dX", dx), ("dW", dw)):
            if contraction_reads(expr) is None:
                raise VerifyException(f"the {which} expression '{expr}' is not a contraction of two tensors (+= A * B)")
        self.dy_name()
        for which, expr, bind, operands, result in (
            ("dX", dx, self.bound_dx, self.operands_of_dx, self.dx),
            ("dW", dw, self.bound_dw, self.operands_of_dw, self.dw),
        ):
            try:
                bind()
            except ExprError as error:
                raise VerifyException(f"the {which} expression '{expr}': {error.message}") from None
            verify_element_types(expr, operands(), result)
        self.plan()


RTENSOR = Dialect("rtensor", [RTensorOp, RelayoutOp, GradPairOp], [RTensorType, IdlePlanAttr])
