"""Import an ONNX graph into one `func.func` of `te` ops (seed 004 §5, seed 000 §4.2).

ELK (seed 004 §5) takes models through ONNX and reads "layer information, operator
definitions and tensor shapes" from the graph; T10 (seed 000 §4.2) states operators
as tensor expressions and leaves the few that none can state to vendor kernels. The
importer does both: every node becomes one or more `te.op`s (converters in
`irc.frontend.onnx_ops`), a `te.opaque` where no expression can state it (CumSum,
ArgMax, TopK, ...), or nothing at all when it folds.

* **Shapes** come from onnx's shape inference (with data propagation) after the
  graph inputs' dynamic dimensions are fixed (``--shape input_ids=1x128``).
* **Folding**: a node whose inputs are all constants (initializers, Constant nodes,
  the output of Shape on a statically shaped value, ...) is evaluated at import time
  with ``onnx.reference``; pure shape arithmetic therefore disappears.
* **Weights**: a constant that a `te` op reads becomes a function argument named by
  its ONNX name with the unit attribute ``irc.weight`` (scalars are written into the
  expression as literals instead); `irc.frontend.weights` stores them beside the IR.
* **Names**: graph inputs and outputs keep their ONNX names in ``irc.name``.

Errors are `OnnxImportError`s naming the node, its op type and the opset.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import numpy_helper
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    ModuleOp,
    Signedness,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from irc.dialects.te import OpaqueOp, TensorOp
from irc.dialects.te_expr import ExprError, parse_expression

NAME_ATTR = "irc.name"
WEIGHT_ATTR = "irc.weight"
MIN_OPSET = 13


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
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise OnnxImportError(f"shapes {', '.join(map(str, shapes))} do not broadcast") from None


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
        self.block.add_op(op)
        return Tensor(op.output, shape, np.dtype(dtype))

    def emit_opaque(self, kind: str, inputs: list[Value], outputs, attributes) -> list[Tensor]:
        tensors = [self.as_tensor(v) for v in inputs]
        types = [TensorType(element_type(d), s) for s, d in outputs]
        op = OpaqueOp(kind, [t.ssa for t in tensors], types, attributes)
        self.block.add_op(op)
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


def _opset_of(model: onnx.ModelProto) -> int:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return entry.version
    return 0


def _sanitize(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def load_model(path: str) -> onnx.ModelProto:
    """Read and check an ONNX file; `OnnxImportError` for anything that is not one."""
    try:
        with open(path, "rb") as stream:
            data = stream.read()
    except OSError as error:
        raise OnnxImportError(f"cannot read {path}: {error.strerror}") from None
    try:
        model = onnx.ModelProto()
        model.ParseFromString(data)
    except Exception:  # protobuf's DecodeError and friends
        raise OnnxImportError(
            f"{path} is not an ONNX model (it does not decode as an ONNX protobuf; "
            f"truncated or another format)"
        ) from None
    if not model.HasField("graph") or (not model.graph.node and not model.graph.output):
        raise OnnxImportError(f"{path} is not an ONNX model (it has no graph)")
    if not model.opset_import:
        raise OnnxImportError(f"{path} is not an ONNX model (it declares no opset)")
    for tensor in model.graph.initializer:
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            raise OnnxImportError(
                f"initializer '{tensor.name}' keeps its data in an external file; "
                f"load it with onnx.load(..., load_external_data=True) and save it inline"
            )
    return model


def parse_shape_overrides(items) -> dict[str, tuple[int, ...]]:
    """``["input_ids=1x128", "mask=1x128"]`` -> ``{"input_ids": (1, 128), ...}``."""
    shapes = {}
    for item in items or ():
        name, sep, dims = item.rpartition("=")
        if not sep or not name:
            raise OnnxImportError(f"--shape '{item}' must look like NAME=2x3x4")
        try:
            shape = tuple(int(d) for d in dims.split("x")) if dims else ()
        except ValueError:
            raise OnnxImportError(f"--shape '{item}': dimensions must be integers joined by 'x'") from None
        if any(d <= 0 for d in shape):
            raise OnnxImportError(f"--shape '{item}': dimensions must be positive")
        shapes[name] = shape
    return shapes


def _fix_input_shapes(model: onnx.ModelProto, shapes: Mapping[str, tuple[int, ...]]) -> None:
    initializers = {t.name for t in model.graph.initializer}
    inputs = {i.name: i for i in model.graph.input if i.name not in initializers}
    symbols = {
        dim.dim_param
        for info in inputs.values()
        for dim in info.type.tensor_type.shape.dim
        if dim.dim_param
    }
    for name, shape in list(shapes.items()):
        if name in inputs:
            continue
        if name in symbols and len(shape) == 1:  # `--shape batch=2` fixes a symbol
            for info in inputs.values():
                for dim in info.type.tensor_type.shape.dim:
                    if dim.dim_param == name:
                        dim.dim_value = shape[0]
            continue
        known = ", ".join(inputs) or "none"
        more = f"; dimension symbols: {', '.join(sorted(symbols))}" if symbols else ""
        raise OnnxImportError(
            f"--shape names '{name}', which is not a graph input (inputs: {known}{more})"
        )
    shapes = {n: s for n, s in shapes.items() if n in inputs}
    for name, value_info in inputs.items():
        tensor_type = value_info.type.tensor_type
        if name in shapes:
            shape = shapes[name]
            if tensor_type.HasField("shape") and len(tensor_type.shape.dim) != len(shape):
                raise OnnxImportError(
                    f"--shape gives input '{name}' rank {len(shape)} but the model "
                    f"declares rank {len(tensor_type.shape.dim)}"
                )
            tensor_type.shape.Clear()
            for size in shape:
                tensor_type.shape.dim.add().dim_value = size
            continue
        if not tensor_type.HasField("shape"):
            raise OnnxImportError(f"input '{name}' has no shape; give one with --shape {name}=2x3")
        for dim in tensor_type.shape.dim:
            if not dim.HasField("dim_value") or dim.dim_value <= 0:
                symbol = dim.dim_param or "?"
                dims = "x".join(
                    str(d.dim_value) if d.HasField("dim_value") else "N"
                    for d in tensor_type.shape.dim
                )
                raise OnnxImportError(
                    f"input '{name}' has a dynamic dimension '{symbol}'; fix it with "
                    f"--shape {name}={dims}"
                )


def import_model(
    model: onnx.ModelProto, shapes: Mapping[str, tuple[int, ...]] | None = None,
    function_name: str = "main", constants: Mapping[str, np.ndarray] | None = None,
) -> ImportResult:
    """Translate `model` into a module holding one function of te ops.

    `shapes` fixes the dimensions of graph inputs; `constants` binds graph inputs
    to values, which turns them into initializers (e.g. the `shape` input of a
    Reshape that a test feeds at run time).
    """
    from irc.frontend import onnx_ops  # the converters register themselves

    opset = _opset_of(model)
    if opset < MIN_OPSET:
        raise OnnxImportError(
            f"the model uses opset {opset}; the importer supports opset {MIN_OPSET} and later "
            f"(convert it with onnx.version_converter)"
        )
    for entry in model.opset_import:
        if entry.domain not in ("", "ai.onnx"):
            used = any(n.domain == entry.domain for n in model.graph.node)
            if used:
                node = next(n for n in model.graph.node if n.domain == entry.domain)
                raise OnnxImportError(
                    f"node '{node.name or node.output[0]}' ({entry.domain}.{node.op_type}, "
                    f"opset {opset}): operators of domain '{entry.domain}' are not supported"
                )
    model = onnx.ModelProto.FromString(model.SerializeToString())  # never touch the caller's
    for name, value in (constants or {}).items():
        if not any(i.name == name for i in model.graph.input):
            raise OnnxImportError(f"--constant names '{name}', which is not a graph input")
        model.graph.initializer.append(numpy_helper.from_array(np.asarray(value), name))
    _fix_input_shapes(model, shapes or {})
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception as error:  # onnx raises InferenceError / ValidationError subclasses
        raise OnnxImportError(f"onnx shape inference failed: {_sanitize(str(error))}") from None

    importer = Importer(inferred, opset)
    importer._weight_order = []
    graph = inferred.graph
    for info in (*graph.value_info, *graph.output, *graph.input):
        importer.value_info[info.name] = info.type

    initializers = {}
    for tensor in graph.initializer:
        try:
            array = numpy_helper.to_array(tensor)
        except Exception as error:
            raise OnnxImportError(f"initializer '{tensor.name}' cannot be read: {error}") from None
        initializers[tensor.name] = array

    input_names = []
    for info in graph.input:
        if info.name in initializers:
            continue
        if not info.type.HasField("tensor_type"):
            kind = info.type.WhichOneof("value")
            raise OnnxImportError(f"input '{info.name}' is a {kind}; only tensor inputs are supported")
        tensor_type = info.type.tensor_type
        dtype = onnx_dtype(tensor_type.elem_type)
        shape = tuple(d.dim_value for d in tensor_type.shape.dim)
        arg = importer.block.insert_arg(TensorType(element_type(dtype), shape), len(importer.block.args))
        importer.values[info.name] = Tensor(arg, shape, dtype, info.name)
        input_names.append(info.name)
    for name, array in initializers.items():
        importer.values[name] = array
        importer.name_constant(array, name)
    importer.values[""] = None  # an omitted optional input

    for node in graph.node:
        importer.node = node
        label = f"node '{node.name or node.output[0]}' ({node.op_type}, opset {opset})"
        try:
            onnx_ops.convert_node(importer, node)
        except UnsupportedDtype as error:
            raise OnnxImportError(f"{label}: {error}") from None
        except NodeError as error:
            wrapped = OnnxImportError(f"{label}: {error}")
            wrapped.input_name = getattr(error, "input_name", None)
            raise wrapped from None
        except OnnxImportError:
            raise
        except ExprError as error:
            raise OnnxImportError(f"{label}: internal error: {error.message}") from None
    importer.node = None

    outputs: list[Tensor] = []
    output_names = []
    for info in graph.output:
        value = importer.values.get(info.name)
        if value is None:
            raise OnnxImportError(f"graph output '{info.name}' is computed by no node")
        if isinstance(value, np.ndarray) or value.ssa in importer.block.args:
            value = importer.copy(value)  # results are op results, never arguments
        outputs.append(value)
        output_names.append(info.name)
    importer.block.add_op(ReturnOp(*[t.ssa for t in outputs]))

    arg_attrs = []
    weight_by_arg = {id(t.ssa): name for name, t in zip(importer._weight_order, importer.weight_args.values())}
    input_iter = iter(input_names)
    for arg in importer.block.args:
        name = weight_by_arg.get(id(arg))
        if name is not None:
            arg_attrs.append(DictionaryAttr({NAME_ATTR: StringAttr(name), WEIGHT_ATTR: UnitAttr()}))
        else:
            arg_attrs.append(DictionaryAttr({NAME_ATTR: StringAttr(next(input_iter))}))
    res_attrs = [DictionaryAttr({NAME_ATTR: StringAttr(n)}) for n in output_names]
    function = FuncOp(
        function_name,
        ([a.type for a in importer.block.args], [t.ssa.type for t in outputs]),
        Region(importer.block),
        arg_attrs=ArrayAttr(arg_attrs),
        res_attrs=ArrayAttr(res_attrs),
    )
    module = ModuleOp([function])
    try:
        module.verify()
    except VerifyException as error:  # a converter bug: still a diagnostic, not a traceback
        raise OnnxImportError(f"internal error: the imported IR does not verify: {error}") from None
    return ImportResult(module, dict(importer.weights), input_names, output_names)


def import_onnx(
    path: str, shapes: Mapping[str, tuple[int, ...]] | None = None,
    constants: Mapping[str, np.ndarray] | None = None,
) -> ImportResult:
    """Load the ONNX file at `path` and import it (see `import_model`)."""
    return import_model(load_model(path), shapes, constants=constants)
