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
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import NoTerminator
from xdsl.utils.exceptions import VerifyException

import numpy as np

from irc.dialects.device import CORE_TABLE, MAX_CORES, array_values, core_table, i64_array, i64_attr, table_attr
from irc.dialects.dtypes import UnsupportedTypeError, numpy_dtype
from irc.dialects.te import ExprAttr
from irc.dialects.te_expr import ExprError


@irdl_op_definition
class KernelOp(IRDLOperation):
    """One operator as a compute-shift program on ``prod(grid)`` cores of the module's
    target: its expression, ``F_op`` per axis (``grid``), the rings of each tensor and
    the loop nest that computes one sub-task per step and rotates tensors between steps
    (``planned_cycles``: the cost model's time for it, once aligned). Reads its inputs
    from and writes its result to host tensors."""

    name = "shift.kernel"

    expression = prop_def(ExprAttr)
    grid = prop_def(DenseArrayBase)
    planned_cycles = opt_prop_def(FloatAttr)
    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)
    body = region_def("single_block")

    traits = traits_def(NoTerminator())

    assembly_format = "$expression `(` $inputs `)` attr-dict `:` functional-type($inputs, $output) $body"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, expression: str, inputs: Sequence[SSAValue], result_type: Attribute,
                 grid: Sequence[int], body: Region | None = None):
        super().__init__(
            operands=[list(inputs)], result_types=[result_type],
            properties={"expression": ExprAttr(expression), "grid": i64_array(grid)},
            regions=[body or Region(Block())],
        )

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

    def has_compute(self) -> bool:
        return any(isinstance(op, ComputeOp) for op in self.walk())

    def bound(self):
        expr = self.expression.expr
        return expr.bind([tuple(v.type.get_shape()) for v in self.inputs], tuple(self.output.type.get_shape()))

    def verify_(self) -> None:
        expr = self.expression.expr
        for value in (*self.inputs, self.output):
            element = value.type.get_element_type()
            try:
                numpy_dtype(element)
            except UnsupportedTypeError:
                raise VerifyException(
                    f"element type {element} ({value.type}) is not one the chip stores: f16, f32, f64, i1 and "
                    f"8-, 16-, 32- and 64-bit integers"
                ) from None
        try:
            bound = self.bound()
        except ExprError as error:
            raise VerifyException(f"'{self.expression.text}': {error.message}") from None
        axes = [a for a, _ in bound.extents]
        grid = array_values(self.grid)
        if len(grid) != len(axes):
            raise VerifyException(
                f"grid has {len(grid)} factors but '{self.expression.text}' has {len(axes)} axes ({', '.join(axes)})"
            )
        if (grid < 1).any():
            raise VerifyException(f"grid factors must be positive, got {grid.tolist()}")
        cores = math.prod(int(g) for g in grid)  # exact: numpy's int64 product would wrap
        if cores > MAX_CORES:
            raise VerifyException(f"grid {grid.tolist()} spans {cores} cores; irc handles at most {MAX_CORES}")
        tensors = [expr.output.tensor, *expr.inputs]
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
        # Whether the loops are the aligned schedule of the rings depends on the plan's
        # step tiles on the target: `shift-to-device` and the interpreter check that.
        for loop in self.loops():
            bad = [t.data for t in loop.rotating.data if t.data not in rings]
            if bad:
                raise VerifyException(f"the loop on axis {loop.axis.data} rotates unknown tensor {bad[0]}")
            if loop.axis.data not in axes:
                raise VerifyException(f"loop on unknown axis {loop.axis.data}; axes are {', '.join(axes)}")


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
        if len(inner) != 1 or not isinstance(inner[0], (LoopOp, ComputeOp)):
            raise VerifyException("a shift.loop body holds exactly one shift.loop or shift.compute")


@irdl_op_definition
class ComputeOp(IRDLOperation):
    """The sub-task of the current step on every core: the kernel's expression over one
    step tile per axis, on the partitions each core holds now (T10 s4.2 "sub-task")."""

    name = "shift.compute"

    assembly_format = "attr-dict"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self):
        super().__init__()


SHIFT = Dialect("shift", [KernelOp, RingOp, LoopOp, ComputeOp], [])
