"""The `shift` dialect: the compute-shift program of each operator (T10 s4.2, s4.4).

A `shift.kernel` is one operator mapped onto ``prod(grid)`` cores: its tensor expression,
the operator partition factors ``F_op`` (``grid``), one `shift.ring` per tensor (its
temporal factors ``f_t`` per op axis: how its rings are cut), and - once `rotation-align`
has run - the loop nest of `shift.loop`s around one `shift.compute`:

    %c = shift.kernel "C[m,n] += A[m,k] * B[k,n]" (%a, %b)
           {grid = array<i64: 2, 4, 1>, planned_cycles = 1234.0 : f64}
           : (tensor<8x12xf32>, tensor<12x16xf32>) -> tensor<8x16xf32> {
      shift.ring "C" {temporal = array<i64: 1, 1, 1>}
      shift.ring "A" {temporal = array<i64: 1, 1, 4>}
      shift.ring "B" {temporal = array<i64: 1, 1, 2>}
      shift.loop "k" {trips = 2, stride = 2, rotating = ["A", "B"], start = array<i64: ...>} {
        shift.loop "k" {trips = 2, stride = 1, rotating = ["A"], start = array<i64: ...>} {
          shift.compute
        }
      }
    }

A loop of ``trips`` runs its body ``trips`` times and, between two runs, rotates each
``rotating`` tensor one partition along its rings; it does not rewind, so every run of
an inner loop visits all its values starting where the previous run stopped. ``start``
(a map of the core id, or a table) is the per-core initial value of the loop's digit (the initial placement, T10 s4.4).
A kernel may run several products over the same axes under one plan (a layer's gradient
pair, `irc.planner.igo_pair`): one expression and one result per product, the tensors
they share read once (one operand, one ring), and one ``shift.compute`` per product,
naming its output, at every step:

    %dx, %dw = shift.kernel "DX[m,k] += G[m,n] * W[k,n]", "DW[k,n] += G[m,n] * X[m,k]" (%g, %w, %x)
                 {grid = array<i64: 2, 2, 4>} : (...) -> (tensor<...>, tensor<...>) {
      shift.ring "DX" {...}  shift.ring "DW" {...}  shift.ring "G" {...}  ...
      shift.loop "n" {trips = 4, stride = 1, rotating = ["G"], start = ...} {
        shift.compute "DX"
        shift.compute "DW"
      }
    }

The chip is the module's ``irc.target``; ``planned_cycles``, written by
`rotation-align`, is the time the cost model predicts for the kernel; a kernel reading
weights may carry the ``idle = #rtensor.idle<...>`` plan its weights rest in between
uses (model-wide planning), which `shift-to-device` keeps them in.
The kernel reads and writes host tensors: between operators data goes through the host.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, Dialect, Region, SSAValue
from xdsl.irdl import (
    ParsePropInAttrDict,
    IRDLOperation,
    var_result_def,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
)
from xdsl.irdl.declarative_assembly_format import (
    AttributeVariable,
    CustomDirective,
    ParsingState,
    PrintingState,
    irdl_custom_directive,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import NoTerminator
from xdsl.utils.exceptions import VerifyException

import numpy as np

from irc.dialects.device import CORE_TABLE, MAX_CORES, array_values, core_table, i64_array, i64_attr, table_attr
from irc.dialects.dtypes import UnsupportedTypeError, numpy_dtype
from irc.dialects.te import ExprAttr, parse_checked_expression
from irc.dialects.te_expr import ExprError


@irdl_custom_directive
class ExpressionList(CustomDirective):
    """The kernel's expressions as string literals separated by commas: one operator's
    ``"C[m,n] += A[m,k] * B[k,n]"``, or the products of a fused kernel."""

    expressions: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        expressions = [ExprAttr(parse_checked_expression(parser))]
        while parser.parse_optional_punctuation(",") is not None:
            expressions.append(ExprAttr(parse_checked_expression(parser)))
        self.expressions.set(state, ArrayAttr(expressions))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        attr = self.expressions.get(op)
        assert isinstance(attr, ArrayAttr)
        printer.print_list(attr.data, lambda e: printer.print_string_literal(e.text))


@irdl_op_definition
class KernelOp(IRDLOperation):
    """Products mapped onto ``prod(grid)`` cores of the module's target as one
    compute-shift program: one tensor expression per result (one operator, or a layer's
    gradient pair under one plan), over the same axes (the first expression's order), ``F_op``
    per axis (``grid``), the rings of each tensor (a tensor several expressions read is
    one operand with one ring) and the loop nest that computes one sub-task of every
    product per step and rotates tensors between steps (``planned_cycles``: the cost
    model's time for it, once aligned). The operands are the tensors read, in the order
    the expressions first read them. Reads its inputs from and writes its results to host
    tensors."""

    name = "shift.kernel"

    expressions = prop_def(ArrayAttr[ExprAttr])
    grid = prop_def(DenseArrayBase)
    planned_cycles = opt_prop_def(FloatAttr)
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    body = region_def("single_block")

    traits = traits_def(NoTerminator())

    assembly_format = (
        "custom<ExpressionList>($expressions) `(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs) $body"
    )
    irdl_options = (ParsePropInAttrDict(),)
    custom_directives = (ExpressionList,)

    def __init__(self, expressions: str | Sequence[str], inputs: Sequence[SSAValue],
                 result_types: Attribute | Sequence[Attribute], grid: Sequence[int], body: Region | None = None):
        texts = [expressions] if isinstance(expressions, (str, ExprAttr)) else list(expressions)
        types = [result_types] if isinstance(result_types, Attribute) else list(result_types)
        super().__init__(
            operands=[list(inputs)], result_types=[types],
            properties={"expressions": ArrayAttr([e if isinstance(e, ExprAttr) else ExprAttr(e) for e in texts]),
                        "grid": i64_array(grid)},
            regions=[body or Region(Block())],
        )

    @property
    def exprs(self) -> list[ExprAttr]:
        return list(self.expressions.data)

    @property
    def expression(self) -> ExprAttr:
        """The expression of a one-product kernel (an operator)."""
        if len(self.expressions.data) != 1:
            raise ValueError(f"a kernel of {len(self.expressions.data)} products has no single expression")
        return self.expressions.data[0]

    @property
    def output(self) -> SSAValue:
        """The result of a one-product kernel (an operator)."""
        if len(self.outputs) != 1:
            raise ValueError(f"a kernel of {len(self.outputs)} products has no single output")
        return self.outputs[0]

    def operand_names(self) -> list[str]:
        """The tensor each operand is: the expressions' inputs, each once, in the order
        they are first read."""
        return list(dict.fromkeys(name for e in self.expressions.data for name in e.expr.inputs))

    def rings(self) -> list["RingOp"]:
        return [op for op in self.body.block.ops if isinstance(op, RingOp)]

    def loops(self) -> list["LoopOp"]:
        """The loop nest, outermost first (empty before `rotation-align`)."""
        nest, block = [], self.body.block
        while True:
            loop = next((op for op in block.ops if isinstance(op, LoopOp)), None)
            if loop is None:
                return nest
            nest.append(loop)
            block = loop.body.block

    def computes(self) -> list["ComputeOp"]:
        """The computes of the innermost level, one per product (empty before `rotation-align`)."""
        loops = self.loops()
        block = loops[-1].body.block if loops else self.body.block
        return [op for op in block.ops if isinstance(op, ComputeOp)]

    def has_compute(self) -> bool:
        return any(isinstance(op, ComputeOp) for op in self.walk())

    def bounds(self) -> list:
        """Each expression bound to the shapes of the operands it reads and its result."""
        return [self._bind(e, result) for e, result in zip(self.expressions.data, self.outputs)]

    def _bind(self, expression: ExprAttr, result: SSAValue):
        operands = dict(zip(self.operand_names(), self.inputs))
        return expression.expr.bind([tuple(operands[n].type.get_shape()) for n in expression.expr.inputs],
                                    tuple(result.type.get_shape()))

    def bound(self):
        """The bound expression of a one-product kernel (an operator)."""
        return self._bind(self.expression, self.output)

    def verify_(self) -> None:
        outputs, names = self._verify_products()
        axes = self._verify_iteration_space()
        rings = self._verify_rings([*outputs, *names], axes)
        self._verify_levels(outputs, rings, axes)

    def _verify_products(self) -> tuple[list[str], list[str]]:
        """One expression per result, independent of each other, reading one operand per
        tensor, in element types the chip stores; the written and the read tensors."""
        expressions = self.exprs
        if not expressions:
            raise VerifyException("a kernel needs at least one expression")
        if len(expressions) != len(self.outputs):
            raise VerifyException(
                f"{len(expressions)} expressions but {len(self.outputs)} results: each expression computes one"
            )
        names = self.operand_names()
        outputs = [e.expr.output.tensor for e in expressions]
        for name in outputs:
            if outputs.count(name) > 1 or name in names:
                raise VerifyException(
                    f"tensor {name} is written by one expression and {'written' if name not in names else 'read'} "
                    "by another: the products of a kernel are independent"
                )
        if len(names) != len(self.inputs):
            raise VerifyException(
                f"the expressions read {len(names)} tensors ({', '.join(names)}) but the kernel has "
                f"{len(self.inputs)} operands"
            )
        for value in (*self.inputs, *self.outputs):
            element = value.type.get_element_type()
            try:
                numpy_dtype(element)
            except UnsupportedTypeError:
                raise VerifyException(
                    f"element type {element} ({value.type}) is not one the chip stores: f16, f32, f64, i1 and "
                    f"8-, 16-, 32- and 64-bit integers"
                ) from None
        return outputs, names

    def _verify_iteration_space(self) -> list[str]:
        """Every expression binds to its types over one iteration space, which the grid
        cuts into at most `MAX_CORES` cores; the kernel's axes."""
        expressions = self.exprs
        bounds = []
        for expression, result in zip(expressions, self.outputs):
            try:
                bounds.append(self._bind(expression, result))
            except ExprError as error:
                raise VerifyException(f"'{expression.text}': {error.message}") from None
        extents = bounds[0].extents
        axes = [a for a, _ in extents]
        for expression, bound in zip(expressions[1:], bounds[1:]):
            if sorted(bound.extents) != sorted(extents):
                describe = lambda e: ", ".join(f"{a}={n}" for a, n in e)  # noqa: E731
                raise VerifyException(
                    f"'{expression.text}' ranges over {describe(bound.extents)}, not over the kernel's axes "
                    f"{describe(extents)}: the products of a kernel share one iteration space"
                )
        grid = array_values(self.grid)
        if len(grid) != len(axes):
            raise VerifyException(
                f"grid has {len(grid)} factors but '{expressions[0].text}' has {len(axes)} axes ({', '.join(axes)})"
            )
        if (grid < 1).any():
            raise VerifyException(f"grid factors must be positive, got {grid.tolist()}")
        cores = math.prod(int(g) for g in grid)  # exact: numpy's int64 product would wrap
        if cores > MAX_CORES:
            raise VerifyException(f"grid {grid.tolist()} spans {cores} cores; irc handles at most {MAX_CORES}")
        return axes

    def _verify_rings(self, tensors: list[str], axes: list[str]) -> dict:
        """One ring per tensor, with one positive temporal factor per axis; tensor -> factors."""
        rings = {}
        for ring in self.rings():
            if ring.tensor.data not in tensors:
                raise VerifyException(f"ring of unknown tensor {ring.tensor.data}; tensors are {', '.join(tensors)}")
            if ring.tensor.data in rings:
                raise VerifyException(f"tensor {ring.tensor.data} has two rings")
            temporal = array_values(ring.temporal)
            if len(temporal) != len(axes):
                raise VerifyException(
                    f"ring of {ring.tensor.data} has {len(temporal)} temporal factors but the kernel has "
                    f"{len(axes)} axes ({', '.join(axes)})"
                )
            if (temporal < 1).any() or math.prod(int(t) for t in temporal) > MAX_CORES:
                raise VerifyException(
                    f"temporal factors of {ring.tensor.data} must be positive, at most {MAX_CORES} in product, got "
                    f"{temporal.tolist()}"
                )
            rings[ring.tensor.data] = temporal
        missing = [t for t in tensors if t not in rings]
        if missing:
            raise VerifyException(f"no shift.ring for tensor {', '.join(missing)}")
        return rings

    def _verify_levels(self, outputs: list[str], rings: dict, axes: list[str]) -> None:
        """The loops rotate known tensors on known axes, and the innermost level holds one
        compute per product."""
        # Whether the loops are the aligned schedule of the rings depends on the plan's
        # step tiles on the target: `shift-to-device` and the interpreter check that.
        for loop in self.loops():
            bad = [t.data for t in loop.rotating.data if t.data not in rings]
            if bad:
                raise VerifyException(f"the loop on axis {loop.axis.data} rotates unknown tensor {bad[0]}")
            if loop.axis.data not in axes:
                raise VerifyException(f"loop on unknown axis {loop.axis.data}; axes are {', '.join(axes)}")
        computes = self.computes()
        if computes or self.loops():
            stated = [None if c.tensor is None else c.tensor.data for c in computes]
            named = len(outputs) > 1   # one product's compute may leave its output unnamed
            if len(computes) != len(outputs) or any(s != w and (named or s is not None)
                                                    for s, w in zip(stated, outputs)):
                raise VerifyException(
                    f"the innermost level holds one shift.compute per product, in order"
                    f"{' and naming its output' if named else ''} ({', '.join(outputs)}), got "
                    f"{', '.join(s or '(unnamed)' for s in stated) or 'none'}"
                )


@irdl_op_definition
class RingOp(IRDLOperation):
    """The rings of one tensor: its sub-tensor on each core group is cut into
    ``prod(temporal)`` partitions (``temporal`` = f_t per op axis of the kernel) that
    rotate around rings of that many cores; cores sharing the sub-tensor form
    sharing / prod(temporal) replica rings."""

    name = "shift.ring"

    tensor = prop_def(StringAttr)
    temporal = prop_def(DenseArrayBase)

    assembly_format = "$tensor attr-dict"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, tensor: str, temporal: Sequence[int]):
        super().__init__(properties={"tensor": StringAttr(tensor), "temporal": i64_array(temporal)})

    def verify_(self) -> None:
        temporal = array_values(self.temporal)
        if (temporal < 1).any():
            raise VerifyException(f"temporal factors of {self.tensor.data} must be positive, got {temporal.tolist()}")


@irdl_op_definition
class LoopOp(IRDLOperation):
    """One level of the compute-shift loop nest along ``axis``: ``trips`` runs of the
    body, rotating every ``rotating`` tensor by one partition between runs; the loop's
    digit weighs ``stride`` step tiles of the axis and starts at ``start[core]``."""

    name = "shift.loop"

    axis = prop_def(StringAttr)
    trips = prop_def(IntegerAttr[I64])
    stride = prop_def(IntegerAttr[I64])
    rotating = prop_def(ArrayAttr[StringAttr])
    start = prop_def(CORE_TABLE)
    body = region_def("single_block")

    traits = traits_def(NoTerminator())

    assembly_format = "$axis attr-dict-with-keyword $body"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, axis: str, trips: int, stride: int, rotating: Sequence[str], start, body: Region):
        super().__init__(
            properties={"axis": StringAttr(axis), "trips": i64_attr(trips), "stride": i64_attr(stride),
                        "rotating": ArrayAttr([StringAttr(t) for t in rotating]), "start": table_attr(start)},
            regions=[body],
        )

    def verify_(self) -> None:
        trips = int(self.trips.value.data)
        if trips < 2:
            raise VerifyException(f"a loop on axis {self.axis.data} needs at least 2 trips, got {trips}")
        kernel = self.parent_op()
        while kernel is not None and not isinstance(kernel, KernelOp):
            kernel = kernel.parent_op()
        if isinstance(self.start, DenseArrayBase):
            start = array_values(self.start)
        elif kernel is not None:
            start = core_table(self.start, 1, int(np.prod(array_values(kernel.grid))), "start")
        else:
            start = np.zeros(0, dtype=np.int64)
        if start.size and (start.min() < 0 or start.max() >= trips):
            raise VerifyException(
                f"start digits of the loop on axis {self.axis.data} must lie in [0, {trips}), "
                f"got {int(start.min() if start.min() < 0 else start.max())}"
            )
        if not self.rotating.data:
            raise VerifyException(f"the loop on axis {self.axis.data} rotates no tensor")
        inner = [op for op in self.body.block.ops]
        if not (len(inner) == 1 and isinstance(inner[0], LoopOp)) and \
                not (inner and all(isinstance(op, ComputeOp) for op in inner)):
            raise VerifyException("a shift.loop body holds exactly one shift.loop, or the shift.computes of the "
                                  "kernel's products")


@irdl_op_definition
class ComputeOp(IRDLOperation):
    """The sub-task of the current step on every core: one product's expression over one
    step tile per axis, on the partitions each core holds now (T10 s4.2 "sub-task");
    ``tensor`` names the product by its output (needed when the kernel has several)."""

    name = "shift.compute"

    tensor = opt_prop_def(StringAttr)

    assembly_format = "($tensor^)? attr-dict"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, tensor: str | None = None):
        super().__init__(properties={} if tensor is None else {"tensor": StringAttr(tensor)})


SHIFT = Dialect("shift", [KernelOp, RingOp, LoopOp, ComputeOp], [])
