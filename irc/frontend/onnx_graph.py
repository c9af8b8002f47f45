"""The pieces of the ONNX importer that its converters (`onnx_ops`) and its driver
(`onnx_import`) share: the tensor/value model, the expression body builder, the
`Importer` that emits te ops, and the importer's errors. Neither of those two modules
imports the other for them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    ModuleOp,
    NameLoc,
    NoneAttr,
    Signedness,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, SSAValue
from xdsl.utils.exceptions import VerifyException

from irc.dialects.te import OpaqueOp, TensorOp
from irc.dialects.te_expr import ExprError, parse_expression

NAME_ATTR = "irc.name"
WEIGHT_ATTR = "irc.weight"
MIN_OPSET = 13

MAX_DIMENSION = 1 << 40
"""The largest tensor dimension irc imports (as `irc-plan` plans: int64 stays exact); it
bounds the graph's inputs and every node's outputs."""
MAX_CONSTANT_BYTES = 1 << 30
"""The largest constant the importer folds (evaluates at import time and stores as a
weight); a node whose folded output would be larger is an error naming it."""


class OnnxImportError(Exception):
    """A model the importer cannot translate; the message says which node and why."""


# ---------------------------------------------------------------------------
# Element types
# ---------------------------------------------------------------------------

_ELEMENT_TYPES: dict[np.dtype, Attribute] = {
    np.dtype(np.float16): Float16Type(),
    np.dtype(np.float32): Float32Type(),
    np.dtype(np.float64): Float64Type(),
    np.dtype(np.bool_): IntegerType(1),
    np.dtype(np.int8): IntegerType(8),
    np.dtype(np.int16): IntegerType(16),
    np.dtype(np.int32): IntegerType(32),
    np.dtype(np.int64): IntegerType(64),
    np.dtype(np.uint8): IntegerType(8, Signedness.UNSIGNED),
    np.dtype(np.uint16): IntegerType(16, Signedness.UNSIGNED),
    np.dtype(np.uint32): IntegerType(32, Signedness.UNSIGNED),
    np.dtype(np.uint64): IntegerType(64, Signedness.UNSIGNED),
}


def element_type(dtype: np.dtype) -> Attribute:
    try:
        return _ELEMENT_TYPES[np.dtype(dtype)]
    except (KeyError, TypeError):
        raise UnsupportedDtype(f"element type {dtype} is not supported") from None


class UnsupportedDtype(OnnxImportError):
    pass


def onnx_dtype(elem_type: int) -> np.dtype:
    try:
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, ValueError, TypeError):
        dtype = None
    if dtype is None or dtype not in _ELEMENT_TYPES:
        name = onnx.TensorProto.DataType.Name(elem_type) if elem_type in onnx.TensorProto.DataType.values() else str(elem_type)
        raise UnsupportedDtype(f"element type {name} is not supported")
    return dtype


# ---------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Tensor:
    """A value computed at run time: an SSA value with its static shape and dtype."""

    ssa: SSAValue
    shape: tuple[int, ...]
    dtype: np.dtype
    onnx_name: str | None = None
    """The graph input this value is, if it is one."""

    @property
    def rank(self) -> int:
        return len(self.shape)


Value = Tensor | np.ndarray


def shape_of(value: Value) -> tuple[int, ...]:
    return tuple(value.shape)


def dtype_of(value: Value) -> np.dtype:
    return np.dtype(value.dtype)


_TENSOR_NAMES = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWX"]


def _literal(value) -> str | None:
    """The expression literal of a scalar, or None when it has none (inf, nan)."""
    if np.asarray(value).dtype.kind in "iu" and abs(int(value)) >= 2**53:
        return None  # not exact as an expression number: read it from a weight
    number = float(value)
    if not np.isfinite(number):
        return None
    if number.is_integer() and abs(number) < 2**53:
        text = str(int(number))
    else:
        text = repr(number)
    return f"({text})" if number < 0 else text


class Body:
    """Builds the text of one tensor expression and the operands it reads.

    `read(value, indices)` returns the access text for `value` (a fresh tensor name
    the first time a value is read) or, for a finite scalar constant, its literal.
    """

    def __init__(self, importer: Importer):
        self.importer = importer
        self.names: dict[int, tuple[str, Tensor]] = {}

    def read(self, value: Value, indices) -> str:
        if isinstance(value, np.ndarray):
            if value.size == 1:
                literal = _literal(value.reshape(-1)[0])
                if literal is not None:
                    return literal
            value = self.importer.weight(value)
        key = id(value)
        if key not in self.names:
            position = len(self.names)
            name = _TENSOR_NAMES[position] if position < len(_TENSOR_NAMES) else f"T{position}"
            self.names[key] = (name, value)
        name = self.names[key][0]
        return f"{name}[{','.join(str(i) for i in indices)}]"

    def broadcast_read(self, value: Value, out_axes: list[str]) -> str:
        """Read `value` broadcast (numpy rules) to the output axes."""
        shape = shape_of(value)
        offset = len(out_axes) - len(shape)
        indices = [
            "0" if size == 1 else out_axes[offset + dim] for dim, size in enumerate(shape)
        ]
        return self.read(value, indices)


def axes(count: int, prefix: str = "d") -> list[str]:
    return [f"{prefix}{i}" for i in range(count)]


def broadcast_shapes(*shapes) -> tuple[int, ...]:
    """The numpy broadcast of ``shapes``; a `NodeError` (the importer names the node)
    when they do not broadcast."""
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise NodeError(f"shapes {', '.join(map(str, shapes))} do not broadcast") from None


# ---------------------------------------------------------------------------
# Importer
# ---------------------------------------------------------------------------


@dataclass
class ImportResult:
    module: ModuleOp
    weights: dict[str, np.ndarray] = field(default_factory=dict)
    """Weight arguments by name (the ``irc.name`` of each ``irc.weight`` argument)."""
    input_names: list[str] = field(default_factory=list)
    output_names: list[str] = field(default_factory=list)


class NodeError(OnnxImportError):
    """Raised by a converter; the importer adds the node, its op type and opset."""


class Importer:
    def __init__(self, model: onnx.ModelProto, opset: int):
        self.model = model
        self.opset = opset
        self.block = Block()
        self.values: dict[str, Value] = {}
        self.weights: dict[str, np.ndarray] = {}
        self.weight_args: dict[int, Tensor] = {}
        self.weight_names: dict[int, str] = {}
        self.weight_keep: list[np.ndarray] = []
        self.value_info: dict[str, onnx.TypeProto] = {}
        self.node = None

    # -- weights --------------------------------------------------------------

    def name_constant(self, array: np.ndarray, name: str) -> None:
        self.weight_names.setdefault(id(array), name)

    def weight(self, array: np.ndarray) -> Tensor:
        """The function argument that carries the constant `array`."""
        key = id(array)
        if key in self.weight_args:
            return self.weight_args[key]
        name = self.weight_names.get(key)
        if name is None:
            base = self.node.output[0] if self.node is not None and self.node.output else "const"
            name = f"{base}.const"
        unique, count = name, 1
        while unique in self.weights:
            unique, count = f"{name}.{count}", count + 1
        array = np.array(array, order="C", copy=False) if array.flags.c_contiguous else array.copy(order="C")
        type_ = TensorType(element_type(array.dtype), array.shape)
        arg = self.block.insert_arg(type_, len(self.block.args))
        tensor = Tensor(arg, tuple(array.shape), array.dtype)
        self.weight_args[key] = tensor
        self.weight_keep.append(array)  # keep id() stable
        self.weights[unique] = array
        self._weight_order.append(unique)
        return tensor

    # -- emission ---------------------------------------------------------------

    def emit(
        self, body: Body, text: str, shape, dtype, attributes: dict | None = None
    ) -> Tensor:
        """Append ``te.op`` `text` reading `body`'s operands; returns its result."""
        shape = tuple(int(s) for s in shape)
        try:
            expr = parse_expression(text)
        except ExprError as error:  # a converter bug, reported without a traceback
            raise NodeError(f"internal error: bad expression {text!r}: {error.message}") from None
        by_name = {name: tensor for name, tensor in body.names.values()}
        operands = [by_name[name].ssa for name in expr.inputs]
        op = TensorOp(text, operands, TensorType(element_type(dtype), shape), attributes)
        try:  # the node's own error (an Exp of integers), not the whole module's later
            op.verify()
        except VerifyException as error:
            op.erase(safe_erase=False)
            raise NodeError(str(error).splitlines()[0]) from None
        self.block.add_op(op)
        self.locate(op)
        return Tensor(op.output, shape, np.dtype(dtype))

    def locate(self, op) -> None:
        """Give ``op`` the name of the node it comes from as its location (diagnostics down
        to the device program name it: ``loc("/m/embeddings/Gather")``)."""
        if self.node is not None:
            name = self.node.name or (self.node.output[0] if self.node.output else "")
            if name:
                op.location = NameLoc(StringAttr(name), NoneAttr())

    def emit_opaque(self, kind: str, inputs: list[Value], outputs, attributes) -> list[Tensor]:
        tensors = [self.as_tensor(v) for v in inputs]
        types = [TensorType(element_type(d), s) for s, d in outputs]
        op = OpaqueOp(kind, [t.ssa for t in tensors], types, attributes)
        self.block.add_op(op)
        self.locate(op)
        return [Tensor(r, tuple(s), np.dtype(d)) for r, (s, d) in zip(op.results, outputs)]

    def as_tensor(self, value: Value) -> Tensor:
        return self.weight(value) if isinstance(value, np.ndarray) else value

    def copy(self, value: Value, shape=None) -> Tensor:
        """A te op that copies `value` (used when a graph output is a constant/input)."""
        body = Body(self)
        tensor = self.as_tensor(value)
        out = axes(tensor.rank)
        text = f"Y[{','.join(out)}] = {body.read(tensor, out)}"
        return self.emit(body, text, tensor.shape, tensor.dtype)

    # -- shapes -----------------------------------------------------------------

    def inferred(self, name: str):
        """(shape, dtype) of a value from shape inference, or None if unknown."""
        type_ = self.value_info.get(name)
        if type_ is None or not type_.HasField("tensor_type"):
            return None
        tensor_type = type_.tensor_type
        if not tensor_type.HasField("shape"):
            return None
        dims = []
        for dim in tensor_type.shape.dim:
            if not dim.HasField("dim_value"):
                return None
            dims.append(dim.dim_value)
        return tuple(dims), onnx_dtype(tensor_type.elem_type)


