"""The `te` dialect: operators as tensor expressions (T10 §3.2, seed 003 §3.2).

`te.op` carries its meaning as a tensor expression in the language of `te_expr`
(grammar in `te.lark`), held by a `#te.expr<"...">` attribute (`ExprAttr`) that is
checked when it is made or parsed, so a malformed expression never reaches a verifier
or a pass; passes read the parsed form through `TensorOp.bound()`. Every level's ops
that compute an expression (`rtensor.op`, `shift.kernel`, `device.mma`/`vector`) hold
the same attribute.
`te.opaque` holds an operator no tensor expression can state (sort, top-k): it keeps
the source operator's name and attributes and is executed by a named kernel.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import AnyFloat, BFloat16Type, IntegerAttr, IntegerType, Signedness, StringAttr, TensorType, i1
from xdsl.ir import Attribute, Data, Dialect, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import NoMemoryEffect
from xdsl.utils.exceptions import VerifyException

from irc.dialects.te_expr import (
    BoundExpr,
    ExprError,
    TensorExpr,
    check_element_types,
    parse_expression,
)


@irdl_attr_definition
class ExprAttr(Data[TensorExpr]):
    """A tensor expression (``OUT[axes] <combiner> body [where ...]``) in its parsed form
    (`te_expr.TensorExpr`): parsed once, when the attribute is made or read, and valid by
    construction (a malformed text is an error pointing into the string). Printed as its
    canonical text, a string literal, so ops whose declarative format holds
    ``$expression`` read ``te.op "C[m,n] += A[m,k] * B[k,n]" (...)``; the generic form is
    ``#te.expr"..."`` (``#te.expr<"...">`` parses too)."""

    name = "te.expr"

    def __init__(self, expression: str | TensorExpr):
        if isinstance(expression, str):
            try:
                expression = parse_expression(expression)
            except ExprError as error:
                raise VerifyException(f"'{expression}': {error.message}") from None
        super().__init__(expression)

    @property
    def expr(self) -> TensorExpr:
        return self.data

    @property
    def text(self) -> str:
        """The canonical text of the expression."""
        return str(self.data)

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> TensorExpr:
        bracketed = parser.parse_optional_punctuation("<") is not None
        expr = parse_checked_expression(parser)
        if bracketed:
            parser.parse_punctuation(">")
        return expr

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string_literal(str(self.data))


def parse_checked_expression(parser: AttrParser) -> TensorExpr:
    """A string literal holding a valid tensor expression, parsed; an error points into
    the string."""
    start = parser.pos
    text = parser.parse_str_literal("tensor expression")
    try:
        return parse_expression(text)
    except ExprError as error:
        # Point into the string literal (past its opening quote) when we can.
        column = 0 if error.column is None else error.column + 1
        position = min(start + column, parser.pos - 1)
        parser.raise_error(error.message, position, position + 1)


def verify_element_types(expr: TensorExpr, inputs: Sequence[SSAValue], output: SSAValue) -> None:
    """Each tensor's element type is what the expression makes of it (`check_element_types`:
    equal, except where the expression converts), for any op carrying an expression."""
    try:
        check_element_types(
            expr,
            {n: v.type.get_element_type() for n, v in zip(expr.inputs, inputs)},  # type: ignore[union-attr]
            output.type.get_element_type(),  # type: ignore[union-attr]
            i1,
            lambda t: isinstance(t, IntegerType) and t.width.data > 1,
            lambda t: isinstance(t, AnyFloat),
            constant_range,
        )
    except ExprError as error:
        raise VerifyException(error.message) from None


_FLOAT_MAX = {16: 65504.0, 32: 3.4028234663852886e38, 64: float("inf")}


def constant_range(element_type: Attribute) -> tuple[float, float] | None:
    """The values a constant of ``element_type`` may take: an integer type's range
    (signless as signed, as the interpreter stores it; i1 is 0 or 1), a float type's
    finite range; None where unbounded or unknown."""
    if isinstance(element_type, IntegerType):
        width = element_type.width.data
        if width == 1:
            return (0, 1)
        if element_type.signedness.data == Signedness.UNSIGNED:
            return (0, 2**width - 1)
        return (-(2 ** (width - 1)), 2 ** (width - 1) - 1)
    if isinstance(element_type, AnyFloat):
        limit = _FLOAT_MAX.get(element_type.bitwidth, float("inf"))
        if isinstance(element_type, BFloat16Type):
            limit = 3.3895313892515355e38
        return (-limit, limit)
    return None


def _tensor_types(types: Sequence[Attribute], what: str) -> list[TensorType]:
    for index, type_ in enumerate(types):
        if not isinstance(type_, TensorType):
            raise VerifyException(f"{what} #{index} must be a ranked tensor, got {type_}")
    return list(types)  # type: ignore[return-value]


@irdl_op_definition
class TensorOp(IRDLOperation):
    """One operator stated as a tensor expression.

    `expression` is the text ``OUT[axes] <combiner> body [where axis in N, ...]``.
    The operands bind, in order, to the input tensors in the order the body first
    reads them, and the single result is the output tensor; axis extents come from
    those types. Example: ``%c = te.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) :
    (tensor<32x64xf16>, tensor<64x16xf16>) -> tensor<32x16xf16>`` is a matmul whose
    reduction axis `k` has extent 64. Element types agree except where the
    expression converts (comparisons yield i1, ``cast``, ``select``'s condition,
    indirect indices read integers; see `check_element_types`).
    """

    name = "te.op"

    expression = prop_def(ExprAttr)
    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)

    traits = traits_def(NoMemoryEffect())

    assembly_format = "$expression ` ` `(` $inputs `)` attr-dict `:` functional-type($inputs, $output)"

    def __init__(
        self,
        expression: str | TensorExpr | ExprAttr,
        inputs: Sequence[SSAValue],
        result_type: Attribute,
        attributes: dict[str, Attribute] | None = None,
    ):
        if not isinstance(expression, ExprAttr):
            expression = ExprAttr(expression)
        super().__init__(
            operands=[inputs],
            result_types=[result_type],
            properties={"expression": expression},
            attributes=attributes,
        )

    def parsed(self) -> TensorExpr:
        """The parsed expression."""
        return self.expression.expr

    def bound(self) -> BoundExpr:
        """The expression with axis extents inferred from operand/result types."""
        input_types = _tensor_types([v.type for v in self.inputs], "operand")
        (output_type,) = _tensor_types([self.output.type], "result")
        return self.parsed().bind(
            [tuple(t.get_shape()) for t in input_types], tuple(output_type.get_shape())
        )

    def verify_(self) -> None:
        expr = self.parsed()
        try:
            self.bound()
        except ExprError as error:
            raise VerifyException(f"'{self.expression.text}': {error.message}") from None
        verify_element_types(expr, self.inputs, self.output)
        for value in (*self.inputs, self.output):
            if any(d < 0 for d in value.type.get_shape()):  # type: ignore[union-attr]
                raise VerifyException(
                    f"dynamic shapes are not supported: {value.type}; fix them first"
                )


@irdl_op_definition
class OpaqueOp(IRDLOperation):
    """An operator that no tensor expression can state (sort, top-k, ...).

    `kind` names the operator in its source's terms (an ONNX op type such as
    ``"TopK"``); its attributes carry the source attributes. It is executed by the
    kernel registered under that name and costed as a fixed vendor kernel (T10 §4.2:
    "the few operators that cannot be expressed use vendor kernels").
    """

    name = "te.opaque"

    kind = prop_def(StringAttr)
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)

    assembly_format = (
        "$kind `(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs)"
    )

    def __init__(
        self,
        kind: str,
        inputs: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        attributes: dict[str, Attribute] | None = None,
    ):
        super().__init__(
            operands=[inputs],
            result_types=[result_types],
            properties={"kind": StringAttr(kind)},
            attributes=attributes,
        )

    def verify_(self) -> None:
        if not self.kind.data:
            raise VerifyException("te.opaque needs a non-empty kind")
        if not self.outputs:
            raise VerifyException(f"te.opaque \"{self.kind.data}\" has no results")
        axis = self.attributes.get("axis")
        if isinstance(axis, IntegerAttr) and self.inputs:
            rank = len(self.inputs[0].type.get_shape())  # type: ignore[union-attr]
            if not -max(rank, 1) <= axis.value.data < max(rank, 1):
                raise VerifyException(
                    f"te.opaque \"{self.kind.data}\": axis {axis.value.data} is out of range for its input of rank {rank}"
                )


TE = Dialect("te", [TensorOp, OpaqueOp], [ExprAttr])
