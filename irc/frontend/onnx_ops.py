"""ONNX operators as tensor expressions: one converter per op type.

A converter receives the importer, the node and its input values (a `Tensor` for a
run-time value, a numpy array for a constant, None for an omitted optional input)
and returns the node's output values. Most emit `te.op`s (T10 §3.2: "operators as
tensor expressions"); the few that no expression can state emit `te.opaque` with a
kernel in `irc.interpreter.kernels` (T10 §4.2). Nodes whose inputs are all constant
are folded with ``onnx.reference`` before any converter runs, which removes shape
arithmetic (Shape -> Gather -> Concat -> Reshape chains) from exported graphs.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import helper
from onnx.reference import ReferenceEvaluator
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, StringAttr, i64

from irc.frontend.onnx_attributes import check_axes
from irc.frontend.onnx_graph import (
    MAX_CONSTANT_BYTES,
    MAX_DIMENSION,
    Body,
    Importer,
    NodeError,
    Tensor,
    Value,
    axes,
    broadcast_shapes,
    dtype_of,
    onnx_dtype,
    shape_of,
)

CONVERTERS = {}

NOT_FOLDABLE = {
    "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
    "Multinomial", "Bernoulli",
}


def converter(*op_types):
    def register(function):
        for op_type in op_types:
            CONVERTERS[op_type] = function
        return function

    return register


def supported_ops() -> list[str]:
    return sorted(CONVERTERS)


# ---------------------------------------------------------------------------
# Dispatch and folding
# ---------------------------------------------------------------------------


def attr(node, name, default=None):
    for attribute in node.attribute:
        if attribute.name == name:
            return helper.get_attribute_value(attribute)
    return default


def convert_node(im: Importer, node) -> None:
    inputs = []
    for name in node.input:
        if name not in im.values:
            raise NodeError(f"input '{name}' is produced by no earlier node")
        inputs.append(im.values[name])
    for attribute in node.attribute:
        if attribute.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
            raise NodeError(f"attribute '{attribute.name}' holds a subgraph; control flow is not supported")
    check_axes(node, [None if v is None else len(shape_of(v)) for v in inputs])
    inferred = [_inferred_shape(im, name) for name in node.output]
    for name, shape in zip(node.output, inferred):
        _check_dimensions(name, shape)
    present = [v for v in inputs if v is not None]
    function = CONVERTERS.get(node.op_type)
    outputs = None
    if node.op_type not in NOT_FOLDABLE and all(isinstance(v, np.ndarray) for v in present):
        try:
            _check_foldable(im, node, inferred)
            outputs = fold(im, node, inputs)
        except NodeError:
            if function is None or function is _must_fold:
                raise
            # onnx.reference's kernel failed on these values (a corner case of its own),
            # or the constant would be too large to keep: compute the node as irc does,
            # at run time, instead
    if outputs is None:
        if function is None:
            raise NodeError("unsupported operator")
        for name, shape in zip(node.output, inferred):
            _check_not_empty(name, shape)
        outputs = function(im, node, inputs)
    for name, value in zip(node.output, outputs):
        if isinstance(value, Tensor):
            _check_dimensions(name, value.shape)
            _check_not_empty(name, value.shape)
        if name:
            im.values[name] = value


def _inferred_shape(im: Importer, name: str) -> tuple[int, ...] | None:
    """The static shape shape inference gives the value ``name``, or None."""
    type_ = im.value_info.get(name) if name else None
    if type_ is None or not type_.HasField("tensor_type") or not type_.tensor_type.HasField("shape"):
        return None
    dims = type_.tensor_type.shape.dim
    if not all(dim.HasField("dim_value") for dim in dims):
        return None
    return tuple(dim.dim_value for dim in dims)


def _check_dimensions(name: str, shape: tuple[int, ...] | None) -> None:
    """Every dimension of output ``name`` within `MAX_DIMENSION` (before the node is
    converted, where shape inference knows the shape, and of what it converts to)."""
    if shape is not None and any(d > MAX_DIMENSION for d in shape):
        raise NodeError(f"output '{name}' would have shape {_shape_text(shape)}: a dimension of more than "
                        f"{MAX_DIMENSION} (2**40) is beyond what irc plans")


def _check_not_empty(name: str, shape: tuple[int, ...] | None) -> None:
    """A value computed at run time has elements (a folded constant may be empty)."""
    if name and shape is not None and any(d < 1 for d in shape):
        raise NodeError(f"output '{name}' would have no elements (shape {_shape_text(shape)}); irc has no empty tensors")


def _shape_text(shape) -> str:
    return "x".join(map(str, shape)) if shape else "a scalar"


def _check_foldable(im: Importer, node, inferred) -> None:
    """Refuse to fold a node whose inferred output would exceed `MAX_CONSTANT_BYTES`."""
    for name, shape in zip(node.output, inferred):
        if shape is None:
            continue
        type_ = im.value_info[name].tensor_type
        try:
            itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(type_.elem_type)).itemsize
        except (KeyError, ValueError, TypeError):
            itemsize = 8
        nbytes = math.prod(shape) * itemsize
        if nbytes > MAX_CONSTANT_BYTES:
            raise NodeError(f"its output '{name}' ({_shape_text(shape)}) is a constant of {nbytes / 2**30:,.0f} GiB; "
                            f"irc folds constants of at most {MAX_CONSTANT_BYTES >> 30} GiB")


def _fold_gather_elements(node, data, indices):
    """GatherElements with numpy (onnx.reference's kernel uses np.choose, which takes at
    most 64 choices, so it fails on a gathered axis longer than 64)."""
    axis = int(attr(node, "axis", 0))
    _check_gather_elements(data.shape, indices.shape, axis)
    axis = axis_index(axis, data.ndim, node)
    if ((indices < -data.shape[axis]) | (indices >= data.shape[axis])).any():
        raise NodeError(f"GatherElements index out of range for axis {axis} of size {data.shape[axis]}")
    return [np.take_along_axis(data, np.where(indices < 0, indices + data.shape[axis], indices), axis=axis)]


def _check_gather_elements(shape, index_shape, axis: int) -> None:
    """GatherElements' indices have the data's rank (at least 1) and, along every axis
    but the gathered one, no more elements than the data."""
    if len(index_shape) != len(shape) or not shape:
        raise NodeError(f"indices of shape {tuple(index_shape)} must have the rank of the data {tuple(shape)} "
                        f"(at least 1)")
    if any(i > d for position, (i, d) in enumerate(zip(index_shape, shape)) if position != axis % len(shape)):
        raise NodeError(f"indices of shape {tuple(index_shape)} reach past the data of shape {tuple(shape)}")


def _fold_range(node, start, limit, delta):
    """Range with numpy, saying why it cannot be folded (a delta of 0, a range too long
    to hold) where onnx.reference would divide by zero or run out of memory."""
    for name, value in (("start", start), ("limit", limit), ("delta", delta)):
        if np.asarray(value).size != 1:
            raise NodeError(f"cannot fold it: its {name} input holds {np.asarray(value).size} values, not one")
    dtype = np.asarray(start).dtype
    start, limit, delta = (np.asarray(v).reshape(-1)[0].item() for v in (start, limit, delta))
    if not all(math.isfinite(v) for v in (start, limit, delta)):
        raise NodeError(f"cannot fold it: start {start}, limit {limit} and delta {delta} must be finite")
    if delta == 0:
        raise NodeError(f"cannot fold it: delta 0 never goes from start {start} to limit {limit}")
    count = max(math.ceil((limit - start) / delta), 0)
    if count * dtype.itemsize > MAX_CONSTANT_BYTES:
        raise NodeError(f"cannot fold it: the range from {start} to {limit} by {delta} has {count} elements; irc "
                        f"folds constants of at most {MAX_CONSTANT_BYTES >> 30} GiB")
    return [(start + np.arange(count) * delta).astype(dtype)]


def _fold_constant_of_shape(node, shape):
    """ConstantOfShape with numpy, saying why a shape cannot be made."""
    dims = ints(shape)
    value = attr(node, "value")
    fill = onnx.numpy_helper.to_array(value).reshape(-1) if value is not None else np.zeros(1, np.float32)
    if fill.size != 1:
        raise NodeError(f"cannot fold it: attribute 'value' holds {fill.size} values, not one")
    if any(d < 0 for d in dims):
        raise NodeError(f"cannot fold it: the shape input {dims} has a negative dimension")
    _check_dimensions(node.output[0], tuple(dims))
    nbytes = math.prod(dims) * fill.dtype.itemsize
    if nbytes > MAX_CONSTANT_BYTES:
        raise NodeError(f"cannot fold it: a constant of shape {_shape_text(dims)} takes {nbytes / 2**30:,.0f} GiB; "
                        f"irc folds constants of at most {MAX_CONSTANT_BYTES >> 30} GiB")
    return [np.full(dims, fill[0], fill.dtype)]


def _dense(sparse: onnx.SparseTensorProto) -> np.ndarray:
    """A sparse constant as the dense array it stands for (onnx.reference keeps it
    sparse, which no converter reads): its values at its indices, linear (one per value)
    or coordinates (one row per value; onnx.checker has checked them), zeros elsewhere."""
    values = onnx.numpy_helper.to_array(sparse.values).reshape(-1)
    indices = onnx.numpy_helper.to_array(sparse.indices).astype(np.int64)
    dims = tuple(int(d) for d in sparse.dims)
    size = math.prod(dims)
    if size * values.dtype.itemsize > MAX_CONSTANT_BYTES:
        raise NodeError(f"its sparse value stands for {size:,} elements; irc folds constants of at most "
                        f"{MAX_CONSTANT_BYTES >> 30} GiB")
    if indices.ndim == 2:
        indices = np.ravel_multi_index(tuple(indices.T), dims)
    dense = np.zeros(size, values.dtype)
    dense[indices] = values
    return dense.reshape(dims)


NUMPY_FOLDERS = {
    "GatherElements": _fold_gather_elements,
    "Range": _fold_range,
    "ConstantOfShape": _fold_constant_of_shape,
    # the same array, not a copy: a deduplicated initializer reached through Identity
    # chains stays one weight
    "Identity": lambda node, value: [value],
}
"""Constant folding in numpy where onnx.reference's kernel has corner cases (or would
copy what must stay the same tensor)."""


def fold(im: Importer, node, inputs) -> list[np.ndarray]:
    """Evaluate a node with constant inputs at import time (onnx.reference, or numpy for
    the ops in ``NUMPY_FOLDERS``)."""
    if node.op_type in NUMPY_FOLDERS:
        return [np.asarray(v) for v in NUMPY_FOLDERS[node.op_type](node, *inputs)]
    if node.op_type == "Constant" and attr(node, "sparse_value") is not None:
        return [_dense(attr(node, "sparse_value"))]

    feeds = {name: value for name, value in zip(node.input, inputs) if name}
    graph = helper.make_graph(
        [node], "fold",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for n, v in feeds.items()],
        [helper.make_tensor_value_info(n, onnx.TensorProto.UNDEFINED, None) for n in node.output if n],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", im.opset)])
    try:
        results = ReferenceEvaluator(model).run(None, feeds)
    except MemoryError:
        raise NodeError("cannot fold it: its value needs more memory than this machine gives irc") from None
    except Exception as error:
        reason = (str(error).strip().splitlines() or ["onnx.reference cannot evaluate it"])[0]
        raise NodeError(f"cannot fold it: {reason}") from None
    outputs = []
    for value in results:
        array = np.asarray(value)
        outputs.append(array)
    return outputs


def out_info(im: Importer, node, index: int = 0):
    info = im.inferred(node.output[index])
    if info is None:
        raise NodeError(f"shape inference gives no static shape for output '{node.output[index]}'")
    return info


class NeedsConstant(NodeError):
    """An input that the op treats as a parameter (a shape, axes, ...) is computed
    at run time. `input_name` names it, so a caller may bind it to a value."""

    def __init__(self, message: str, input_name: str | None):
        super().__init__(message)
        self.input_name = input_name


def constant(node, value, what: str) -> np.ndarray:
    if value is None:
        return None
    if not isinstance(value, np.ndarray):
        raise NeedsConstant(
            f"{what} must be a constant (it is computed at run time); "
            f"fold it or bind it with --constant",
            getattr(value, "onnx_name", None),
        )
    return value


def ints(value) -> list[int]:
    return [int(v) for v in np.asarray(value).reshape(-1)]


def axis_index(axis: int, rank: int, node) -> int:
    if not -rank <= axis < max(rank, 1):
        raise NodeError(f"axis {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def join(items) -> str:
    return ",".join(str(i) for i in items)


# ---------------------------------------------------------------------------
# Elementwise
# ---------------------------------------------------------------------------


def elementwise(im, inputs, make_body, dtype=None) -> Tensor:
    shape = broadcast_shapes(*[shape_of(v) for v in inputs])
    out = axes(len(shape))
    body = Body(im)
    reads = [body.broadcast_read(v, out) for v in inputs]
    text = f"Y[{join(out)}] = {make_body(*reads)}"
    return im.emit(body, text, shape, dtype or dtype_of(inputs[0]))


UNARY = {
    "Relu": "relu({0})", "Tanh": "tanh({0})", "Sigmoid": "sigmoid({0})", "Erf": "erf({0})",
    "Sqrt": "sqrt({0})", "Exp": "exp({0})", "Log": "log({0})", "Abs": "abs({0})",
    "Neg": "neg({0})", "Reciprocal": "1 / {0}", "Floor": "floor({0})", "Ceil": "ceil({0})",
    "Round": "round({0})", "Sign": "sign({0})", "Not": "not({0})",
    "Softsign": "{0} / (1 + abs({0}))", "Softplus": "log(exp({0}) + 1)",
    "HardSwish": "{0} * max(0, min(1, {0} / 6 + 0.5))",
}


@converter(*UNARY)
def _unary(im, node, inputs):
    return [elementwise(im, inputs[:1], UNARY[node.op_type].format)]


@converter("IsNaN")
def _isnan(im, node, inputs):
    return [elementwise(im, inputs[:1], "isnan({0})".format, np.dtype(bool))]


@converter("IsInf")
def _isinf(im, node, inputs):
    positive, negative = attr(node, "detect_positive", 1), attr(node, "detect_negative", 1)
    if positive and negative:
        text = "isinf({0})"
    elif positive:
        text = "and(isinf({0}), {0} > 0)"
    elif negative:
        text = "and(isinf({0}), {0} < 0)"
    else:
        text = "{0} != {0} == ({0} == {0})"  # always false
    return [elementwise(im, inputs[:1], text.format, np.dtype(bool))]


@converter("Identity", "Dropout")
def _identity(im, node, inputs):
    if node.op_type == "Dropout":
        if len(inputs) > 2 and inputs[2] is not None:
            training = constant(node, inputs[2], "training_mode")
            if bool(np.asarray(training).reshape(-1)[0]):
                raise NodeError("training_mode=1 is not supported (inference only)")
        if len(node.output) > 1 and node.output[1]:
            mask = np.ones(shape_of(inputs[0]), dtype=bool)
            return [inputs[0], mask]
    return [inputs[0]]


@converter("Cast", "CastLike")
def _cast(im, node, inputs):
    if node.op_type == "Cast":
        dtype = onnx_dtype(attr(node, "to"))
    else:
        dtype = dtype_of(inputs[1])
    source = dtype_of(inputs[0])
    onnx_dtype(helper.np_dtype_to_tensor_dtype(source))  # rejects unsupported sources
    if source == dtype:
        return [inputs[0]]
    return [elementwise(im, inputs[:1], "cast({0})".format, dtype)]


@converter("Gelu")
def _gelu(im, node, inputs):
    approximate = attr(node, "approximate", b"none")
    approximate = approximate.decode() if isinstance(approximate, bytes) else approximate
    if approximate == "none":  # or "tanh" (onnx_attributes checks the value)
        text = "gelu({0})"
    else:
        text = "0.5 * {0} * (1 + tanh(0.7978845608028654 * ({0} + 0.044715 * {0} * {0} * {0})))"
    return [elementwise(im, inputs[:1], text.format)]


def _float_attr(node, name, default):
    value = float(attr(node, name, default))
    with np.errstate(over="ignore"):
        single = float(np.float32(value))
    if not np.isfinite(single):  # an expression has no literal for inf (beyond f32 is inf)
        raise NodeError(f"attribute '{name}' is {value!r}; irc takes finite attributes within f32's range")
    return repr(single)


@converter("LeakyRelu")
def _leaky_relu(im, node, inputs):
    alpha = _float_attr(node, "alpha", 0.01)
    return [elementwise(im, inputs[:1], lambda x: f"select({x} < 0, {x} * {alpha}, {x})")]


@converter("PRelu")
def _prelu(im, node, inputs):
    return [elementwise(im, inputs[:2], lambda x, s: f"select({x} < 0, {x} * {s}, {x})")]


@converter("Elu")
def _elu(im, node, inputs):
    alpha = _float_attr(node, "alpha", 1.0)
    return [elementwise(im, inputs[:1], lambda x: f"select({x} < 0, {alpha} * (exp({x}) - 1), {x})")]


@converter("Selu")
def _selu(im, node, inputs):
    alpha = _float_attr(node, "alpha", 1.67326319217681884765625)
    gamma = _float_attr(node, "gamma", 1.05070102214813232421875)
    return [elementwise(
        im, inputs[:1], lambda x: f"select({x} <= 0, {gamma} * ({alpha} * exp({x}) - {alpha}), {gamma} * {x})"
    )]


@converter("HardSigmoid")
def _hard_sigmoid(im, node, inputs):
    alpha, beta = _float_attr(node, "alpha", 0.2), _float_attr(node, "beta", 0.5)
    return [elementwise(im, inputs[:1], lambda x: f"max(0, min(1, {alpha} * {x} + {beta}))")]


@converter("Clip")
def _clip(im, node, inputs):
    x, low, high = (inputs + [None, None])[:3]
    operands, text = [x], "{0}"
    if low is not None:
        operands.append(low)
        text = f"max({text}, {{{len(operands) - 1}}})"
    if high is not None:
        operands.append(high)
        text = f"min({text}, {{{len(operands) - 1}}})"
    if len(operands) == 1:
        return [x]
    return [elementwise(im, operands, text.format)]


BINARY = {
    "Add": "{0} + {1}", "Sub": "{0} - {1}", "Mul": "{0} * {1}", "Div": "{0} / {1}",
    "Pow": "pow({0}, {1})", "And": "and({0}, {1})", "Or": "or({0}, {1})", "Xor": "xor({0}, {1})",
}
COMPARE = {
    "Equal": "==", "Less": "<", "LessOrEqual": "<=", "Greater": ">", "GreaterOrEqual": ">=",
}


@converter(*BINARY)
def _binary(im, node, inputs):
    return [elementwise(im, inputs[:2], BINARY[node.op_type].format)]


@converter(*COMPARE)
def _compare(im, node, inputs):
    op = COMPARE[node.op_type]
    return [elementwise(im, inputs[:2], lambda a, b: f"{a} {op} {b}", np.dtype(bool))]


@converter("Mod")
def _mod(im, node, inputs):
    function = "fmod" if attr(node, "fmod", 0) else "mod"
    return [elementwise(im, inputs[:2], lambda a, b: f"{function}({a}, {b})")]


@converter("Max", "Min", "Sum", "Mean")
def _variadic(im, node, inputs):
    if len(inputs) == 1:
        return [inputs[0]]
    count = len(inputs)
    fold = node.op_type.lower() if node.op_type in ("Max", "Min") else None

    def combine(reads):
        if fold is not None:
            text = reads[0]
            for read in reads[1:]:
                text = f"{fold}({text}, {read})"
            return text
        return " + ".join(reads)

    # Many inputs (an exporter's Sum of hundreds): partial results of VARIADIC_CHUNK each,
    # so that no expression nests or grows beyond what te holds.
    values = list(inputs)
    while len(values) > VARIADIC_CHUNK:
        values = [elementwise(im, values[i:i + VARIADIC_CHUNK], lambda *reads: combine(reads))
                  for i in range(0, len(values), VARIADIC_CHUNK)]

    def make(*reads):
        text = combine(reads)
        return f"({text}) / {count}" if node.op_type == "Mean" else text

    return [elementwise(im, values, make)]


VARIADIC_CHUNK = 32
"""Inputs combined by one te op of a variadic Max/Min/Sum/Mean."""


@converter("Where")
def _where(im, node, inputs):
    condition, a, b = inputs
    shape = broadcast_shapes(shape_of(condition), shape_of(a), shape_of(b))
    out = axes(len(shape))
    body = Body(im)
    text = (
        f"Y[{join(out)}] = select({body.broadcast_read(condition, out)}, "
        f"{body.broadcast_read(a, out)}, {body.broadcast_read(b, out)})"
    )
    dtype = dtype_of(a)
    return [im.emit(body, text, shape, dtype)]


# ---------------------------------------------------------------------------
# Contractions
# ---------------------------------------------------------------------------


def _broadcast_index(shape, out_axes):
    offset = len(out_axes) - len(shape)
    return ["0" if size == 1 and out_axes else out_axes[offset + d] for d, size in enumerate(shape)]


def matmul(im, a: Value, b: Value, scale: str = "") -> Tensor:
    sa, sb = shape_of(a), shape_of(b)
    if not sa or not sb:
        raise NodeError("MatMul operands must have rank >= 1")
    batch_a = sa[:-2] if len(sa) >= 2 else ()
    batch_b = sb[:-2] if len(sb) >= 2 else ()
    batch = broadcast_shapes(batch_a, batch_b)
    batch_axes = axes(len(batch), "b")
    k_a, k_b = sa[-1], sb[-2] if len(sb) >= 2 else sb[0]
    if k_a != k_b:
        raise NodeError(f"MatMul contracts {k_a} with {k_b} (shapes {sa} and {sb})")
    a_idx = _bcast(batch_a, batch_axes) + (["m"] if len(sa) >= 2 else []) + ["k"]
    b_idx = _bcast(batch_b, batch_axes) + ["k"] + (["n"] if len(sb) >= 2 else [])
    out_idx = batch_axes + (["m"] if len(sa) >= 2 else []) + (["n"] if len(sb) >= 2 else [])
    shape = batch + ((sa[-2],) if len(sa) >= 2 else ()) + ((sb[-1],) if len(sb) >= 2 else ())
    body = Body(im)
    text = f"Y[{join(out_idx)}] += {body.read(a, a_idx)} * {body.read(b, b_idx)}{scale}"
    return im.emit(body, text, shape, dtype_of(a))


def _bcast(shape, out_axes):
    offset = len(out_axes) - len(shape)
    return ["0" if size == 1 else out_axes[offset + d] for d, size in enumerate(shape)]


@converter("MatMul")
def _matmul(im, node, inputs):
    return [matmul(im, inputs[0], inputs[1])]


@converter("Gemm")
def _gemm(im, node, inputs):
    a, b = inputs[0], inputs[1]
    c = inputs[2] if len(inputs) > 2 else None
    alpha, beta = float(attr(node, "alpha", 1.0)), float(attr(node, "beta", 1.0))
    a_idx = "k,m" if attr(node, "transA", 0) else "m,k"
    b_idx = "n,k" if attr(node, "transB", 0) else "k,n"
    sa, sb = shape_of(a), shape_of(b)
    m = sa[1] if attr(node, "transA", 0) else sa[0]
    n = sb[0] if attr(node, "transB", 0) else sb[1]
    body = Body(im)
    scale = "" if alpha == 1.0 else f" * {repr(float(np.float32(alpha)))}"
    text = f"Y[m,n] += {body.read(a, a_idx.split(','))} * {body.read(b, b_idx.split(','))}{scale}"
    y = im.emit(body, text, (m, n), dtype_of(a))
    if c is None or beta == 0.0:
        return [y]
    beta_text = "" if beta == 1.0 else f" * {repr(float(np.float32(beta)))}"
    return [elementwise(im, [y, c], lambda p, q: f"{p} + {q}{beta_text}")]


@converter("Einsum")
def _einsum(im, node, inputs):
    equation = attr(node, "equation").decode().replace(" ", "")
    if "..." in equation:
        raise NodeError(f"equation '{equation}' is not supported (no '...' broadcasting)")
    if "->" not in equation:  # implicit output: letters used once, alphabetically
        letters = equation.replace(",", "")
        equation += "->" + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    lhs, out = equation.split("->")
    terms = lhs.split(",")
    if len(terms) != len(inputs):
        raise NodeError(f"equation '{equation}' names {len(terms)} operands, node has {len(inputs)}")
    extent = {}
    for term, value in zip(terms, inputs):
        if len(term) != len(shape_of(value)):
            raise NodeError(f"operand '{term}' of '{equation}' has rank {len(shape_of(value))}")
        for letter, size in zip(term, shape_of(value)):
            extent[letter] = size
    body = Body(im)
    reads = [body.read(v, [f"x{c}" for c in t]) for t, v in zip(terms, inputs)]
    combiner = "+=" if set("".join(terms)) - set(out) else "="
    text = f"Y[{join(f'x{c}' for c in out)}] {combiner} {' * '.join(reads)}"
    return [im.emit(body, text, tuple(extent[c] for c in out), dtype_of(inputs[0]))]


# ---------------------------------------------------------------------------
# Convolution and pooling
# ---------------------------------------------------------------------------


def _auto_pads(node, in_spatial, out_spatial, kernel, strides, dilations):
    auto_pad = attr(node, "auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    rank = len(in_spatial)
    if auto_pad == "NOTSET":
        pads = list(attr(node, "pads", [0] * (2 * rank)))
        return pads[:rank], pads[rank:]
    if auto_pad == "VALID":
        return [0] * rank, [0] * rank
    begin, end = [], []  # SAME_UPPER or SAME_LOWER (onnx_attributes checks the value)
    for size, out, k, s, d in zip(in_spatial, out_spatial, kernel, strides, dilations):
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
        small = total // 2
        if auto_pad == "SAME_UPPER":
            begin.append(small)
            end.append(total - small)
        else:
            begin.append(total - small)
            end.append(small)
    return begin, end


def pad_write(im, x: Value, begin, end, value=0.0) -> Value:
    """`x` with `begin`/`end` elements added per dim (all dims), filled with `value`."""
    shape = shape_of(x)
    if not any(begin) and not any(end):
        return x
    if any(b < 0 for b in begin) or any(e < 0 for e in end):
        crop_begin = [max(-b, 0) for b in begin]
        crop_end = [max(-e, 0) for e in end]
        x = slice_read(im, x, crop_begin, [s - e for s, e in zip(shape, crop_end)], [1] * len(shape))
        begin = [max(b, 0) for b in begin]
        end = [max(e, 0) for e in end]
        shape = shape_of(x)
        if not any(begin) and not any(end):
            return x
    out_shape = tuple(s + b + e for s, b, e in zip(shape, begin, end))
    names = axes(len(shape))
    body = Body(im)
    text = f"P[{join(f'{a}+{b}' if b else a for a, b in zip(names, begin))}] = {body.read(x, names)}"
    # An axis written unshifted into a longer dimension is bound by the where clause.
    windows = [f"{a} in {s}" for a, b, e, s in zip(names, begin, end, shape) if not b and e]
    if windows:
        text += " where " + ", ".join(windows)
    padded = im.emit(body, text, out_shape, dtype_of(x))
    if not np.asarray(value).any():
        return padded
    mask = inside_mask(im, shape, begin, end)
    fill = np.asarray(value).astype(dtype_of(x))  # exact: an int64 fill never goes through a float
    return elementwise(im, [mask, padded, fill], lambda m, p, f: f"select({m}, {p}, {f})", dtype_of(x))


def inside_mask(im, shape, begin, end) -> Value:
    """A boolean tensor of the padded shape, true where the unpadded tensor of ``shape``
    lands (``begin``/``end`` elements added per dim, none negative): a constant, or,
    beyond `MAX_CONSTANT_BYTES`, computed at run time (ones padded with zeros)."""
    out_shape = tuple(s + b + e for s, b, e in zip(shape, begin, end))
    if math.prod(out_shape) <= MAX_CONSTANT_BYTES:
        mask = np.zeros(out_shape, dtype=bool)
        mask[tuple(slice(b, b + s) for b, s in zip(begin, shape))] = True
        return mask
    names = axes(len(shape))
    ones = im.emit(Body(im), f"M[{join(names)}] = 1", shape, np.dtype(bool))
    return pad_write(im, ones, begin, end)


def slice_read(im, x, starts, stops, steps) -> Value:
    shape = shape_of(x)
    names = axes(len(shape))
    out_shape, indices, bindings = [], [], []
    for name, size, start, stop, step in zip(names, shape, starts, stops, steps):
        positions = range(*slice(start, stop, step).indices(size))
        out_shape.append(len(positions))
        first = positions[0] if len(positions) else 0
        if len(positions) == size and step == 1:
            indices.append(name)
        elif first == 0 and step == 1:
            indices.append(name)  # a prefix: the where clause gives the extent
            bindings.append(f"{name} in {len(positions)}")
        else:
            term = name if step == 1 else f"{step}*{name}" if step > 0 else f"-{-step}*{name}"
            indices.append(f"{term}+{first}" if first else term)
    if tuple(out_shape) == shape and all(i == n for i, n in zip(indices, names)):
        return x
    if 0 in out_shape:
        raise NodeError(f"the slice is empty (shape {tuple(out_shape)}); empty tensors are not supported")
    if isinstance(x, np.ndarray):
        return x[tuple(slice(a, b, c) for a, b, c in zip(starts, stops, steps))]
    body = Body(im)
    text = f"Y[{join(names)}] = {body.read(x, indices)}"
    if bindings:
        text += " where " + ", ".join(bindings)
    return im.emit(body, text, out_shape, dtype_of(x))


def _affine(parts) -> str:
    text = ""
    for coeff, name in parts:
        if coeff == 0:
            continue
        term = name if coeff == 1 else f"{coeff}*{name}"
        text = term if not text else f"{text}+{term}"
    return text or "0"


@converter("Conv")
def _conv(im, node, inputs):
    x, w = inputs[0], inputs[1]
    bias = inputs[2] if len(inputs) > 2 else None
    sx, sw = shape_of(x), shape_of(w)
    rank = len(sx) - 2
    if len(sw) != len(sx):
        raise NodeError(f"weights of shape {sw} must have the rank of the input {sx}")
    out_shape, dtype = out_info(im, node)
    kernel = list(attr(node, "kernel_shape", sw[2:]))
    if kernel != list(sw[2:]):
        raise NodeError(f"kernel_shape {kernel} is not the weights' spatial shape {list(sw[2:])}")
    strides = list(attr(node, "strides", [1] * rank))
    dilations = list(attr(node, "dilations", [1] * rank))
    group = int(attr(node, "group", 1))
    begin, end = _auto_pads(node, sx[2:], out_shape[2:], kernel, strides, dilations)
    _check_window(sx, out_shape, kernel, strides, dilations, begin, end)
    needed = [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip(out_shape[2:], strides, kernel, dilations)]
    end = [max(0, n - (size + b)) if n > size + b + e else e for n, size, b, e in zip(needed, sx[2:], begin, end)]
    padded = pad_write(im, x, [0, 0, *begin], [0, 0, *end])
    channels, features = sw[1], sw[0]
    if sx[1] != channels * group or features % group:
        raise NodeError(f"group={group} does not divide the channels ({sx[1]} in, {features} out)")
    per_group = features // group
    space, window = axes(rank, "h"), axes(rank, "r")
    reads = [_affine([(s, h), (d, r)]) for h, r, s, d in zip(space, window, strides, dilations)]
    if group == 1:
        f_out, f_w, c_x = "f", "f", "c"
    else:
        f_out = f"{per_group}*g+f" if per_group > 1 else "g"
        f_w = f_out
        c_x = f"{channels}*g+c" if channels > 1 else "g"
    body = Body(im)
    text = (
        f"Y[n,{f_out},{join(space)}] += {body.read(padded, ['n', c_x, *reads])} * "
        f"{body.read(w, [f_w, 'c', *window])}"
    )
    if group > 1:
        bindings = [f"g in {group}"] + ([f"f in {per_group}"] if per_group > 1 else [])
        text += " where " + ", ".join(bindings)
    y = im.emit(body, text, out_shape, dtype)
    if bias is None:
        return [y]
    column = reshape(im, bias, (shape_of(bias)[0], *[1] * rank))
    return [elementwise(im, [y, column], lambda a, b: f"{a} + {b}")]


def _check_window(sx, out_shape, kernel, strides, dilations, begin, end) -> None:
    """A convolution's or pooling's window geometry: an input of rank 3 or more, one
    kernel extent, stride and dilation per spatial dimension, two pads per spatial
    dimension, and an output with elements (the values' signs: `onnx_attributes`)."""
    rank = len(sx) - 2
    if rank < 1:
        raise NodeError(f"needs an input of rank 3 or more (N, C, spatial dims), got rank {len(sx)}")
    for name, values in (("kernel_shape", kernel), ("strides", strides), ("dilations", dilations)):
        if len(values) != rank:
            raise NodeError(f"attribute {name} {list(values)} must hold {rank} values (one per spatial "
                            f"dimension of the input {sx})")
    if len(begin) != rank or len(end) != rank:
        raise NodeError(f"pads {[*begin, *end]} must hold {2 * rank} values")
    if len(out_shape) != len(sx) or any(d < 1 for d in out_shape):
        raise NodeError(f"the output would have shape {_shape_text(out_shape)}: the window does not fit the input "
                        f"{_shape_text(sx)}")


def _pool_geometry(im, node, x):
    sx = shape_of(x)
    rank = len(sx) - 2
    out_shape, dtype = out_info(im, node)
    kernel = list(attr(node, "kernel_shape"))
    strides = list(attr(node, "strides", [1] * rank))
    dilations = list(attr(node, "dilations", [1] * rank))
    begin, end = _auto_pads(node, sx[2:], out_shape[2:], kernel, strides, dilations)
    _check_window(sx, out_shape, kernel, strides, dilations, begin, end)
    needed = [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip(out_shape[2:], strides, kernel, dilations)]
    extra = [max(0, n - (size + b + e)) for n, size, b, e in zip(needed, sx[2:], begin, end)]
    return out_shape, dtype, kernel, strides, dilations, begin, end, extra


@converter("MaxPool")
def _max_pool(im, node, inputs):
    x = inputs[0]
    if len(node.output) > 1 and node.output[1]:
        raise NodeError("the Indices output is not supported")
    if attr(node, "storage_order", 0):
        raise NodeError("attribute storage_order=1 is not supported")
    out_shape, dtype, kernel, strides, dilations, begin, end, extra = _pool_geometry(im, node, x)
    lowest = np.finfo(dtype).min if dtype.kind == "f" else np.iinfo(dtype).min
    padded = pad_write(im, x, [0, 0, *begin], [0, 0, *(e + x_ for e, x_ in zip(end, extra))], lowest)
    rank = len(kernel)
    space, window = axes(rank, "h"), axes(rank, "r")
    reads = [_affine([(s, h), (d, r)]) for h, r, s, d in zip(space, window, strides, dilations)]
    body = Body(im)
    text = (
        f"Y[n,c,{join(space)}] max= {body.read(padded, ['n', 'c', *reads])} where "
        + ", ".join(f"{r} in {k}" for r, k in zip(window, kernel))
    )
    return [im.emit(body, text, out_shape, dtype)]


@converter("AveragePool")
def _average_pool(im, node, inputs):
    x = inputs[0]
    out_shape, dtype, kernel, strides, dilations, begin, end, extra = _pool_geometry(im, node, x)
    include_pad = bool(attr(node, "count_include_pad", 0))
    spatial = shape_of(x)[2:]
    padded = pad_write(im, x, [0, 0, *begin], [0, 0, *(e + x_ for e, x_ in zip(end, extra))])
    rank = len(kernel)
    # How many elements each window averages: real ones (and explicit pads if counted).
    full = tuple(s + b + e + x_ for s, b, e, x_ in zip(spatial, begin, end, extra))
    mask = np.zeros(full)
    if include_pad:
        mask[tuple(slice(0, s + b + e) for s, b, e in zip(spatial, begin, end))] = 1
    else:
        mask[tuple(slice(b, b + s) for s, b in zip(spatial, begin))] = 1
    counts = np.zeros(out_shape[2:])
    for offsets in np.ndindex(*kernel):
        index = tuple(
            slice(o * d, o * d + (n - 1) * s + 1, s)
            for o, d, n, s in zip(offsets, dilations, out_shape[2:], strides)
        )
        counts += mask[index]
    space, window = axes(rank, "h"), axes(rank, "r")
    reads = [_affine([(s, h), (d, r)]) for h, r, s, d in zip(space, window, strides, dilations)]
    body = Body(im)
    where = ", ".join(f"{r} in {k}" for r, k in zip(window, kernel))
    # windows all in the padding (count 0) average to NaN, as 0/0: through the division
    uniform = np.all(counts == counts.reshape(-1)[0]) and counts.reshape(-1)[0] != 0
    scale = f" * {repr(float(1.0 / counts.reshape(-1)[0]))}" if uniform else ""
    text = f"Y[n,c,{join(space)}] += {body.read(padded, ['n', 'c', *reads])}{scale} where {where}"
    total = im.emit(body, text, out_shape, dtype)
    if uniform:
        return [total]
    return [elementwise(im, [total, counts.astype(dtype)], lambda a, b: f"{a} / {b}")]


@converter("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(im, node, inputs):
    x = inputs[0]
    sx = shape_of(x)
    rank = len(sx) - 2
    if rank < 1:
        raise NodeError(f"needs an input of rank 3 or more (N, C, spatial dims), got rank {len(sx)}")
    space = axes(rank, "h")
    count = math.prod(sx[2:])
    body = Body(im)
    read = body.read(x, ["n", "c", *space])
    if node.op_type == "GlobalAveragePool":
        text = f"Y[n,c,{join(['0'] * rank)}] += {read} * {repr(1.0 / count)}"
    else:
        text = f"Y[n,c,{join(['0'] * rank)}] max= {read}"
    return [im.emit(body, text, (*sx[:2], *[1] * rank), dtype_of(x))]


# ---------------------------------------------------------------------------
# Reductions and normalisations
# ---------------------------------------------------------------------------


def _reduce_axes(node, inputs, rank, opset) -> list[int] | None:
    from_input = node.op_type == "ReduceSum" or opset >= 18
    if from_input:
        value = inputs[1] if len(inputs) > 1 else None
        values = None if value is None else ints(constant(node, value, "the axes input"))
    else:
        values = attr(node, "axes")
        values = None if values is None else list(values)
    if not values:
        if attr(node, "noop_with_empty_axes", 0):
            return []
        return list(range(rank))
    return sorted({axis_index(a, rank, node) for a in values})


def reduce(im, x: Value, reduced: list[int], keepdims: bool, combiner: str, make_read, dtype=None) -> Tensor:
    shape = shape_of(x)
    names = axes(len(shape))
    out_idx, out_shape = [], []
    for dim, (name, size) in enumerate(zip(names, shape)):
        if dim in reduced:
            if keepdims:
                out_idx.append("0")
                out_shape.append(1)
        else:
            out_idx.append(name)
            out_shape.append(size)
    body = Body(im)
    read = make_read(body.read(x, names))
    # A reduction over unit dims only has no axis to fold: state it with `=`.
    if all(shape[d] == 1 for d in reduced) and combiner != "=":
        combiner = "="
        read = make_read(body.read(x, ["0" if d in reduced else n for d, n in enumerate(names)]))
    text = f"Y[{join(out_idx)}] {combiner} {read}"
    return im.emit(body, text, out_shape, dtype or dtype_of(x))


REDUCTIONS = {
    "ReduceSum": ("+=", "{0}"), "ReduceMax": ("max=", "{0}"), "ReduceMin": ("min=", "{0}"),
    "ReduceSumSquare": ("+=", "{0} * {0}"), "ReduceL1": ("+=", "abs({0})"),
    "ReduceMean": ("+=", "{0}"), "ReduceL2": ("+=", "{0} * {0}"),
    "ReduceLogSum": ("+=", "{0}"), "ReduceLogSumExp": ("+=", "exp({0})"),
}


@converter(*REDUCTIONS)
def _reduce(im, node, inputs):
    x = inputs[0]
    shape = shape_of(x)
    reduced = _reduce_axes(node, inputs, len(shape), im.opset)
    keepdims = bool(attr(node, "keepdims", 1))
    if 0 in shape:
        raise NodeError(f"reducing an empty tensor (shape {shape}) is not supported")
    if not reduced:
        return [x]
    combiner, read = REDUCTIONS[node.op_type]
    count = math.prod(shape[d] for d in reduced)
    if node.op_type == "ReduceMean":
        read = "{0} * " + repr(1.0 / count)
    y = reduce(im, x, reduced, keepdims, combiner, read.format)
    finish = {"ReduceL2": "sqrt({0})", "ReduceLogSum": "log({0})", "ReduceLogSumExp": "log({0})"}
    if node.op_type in finish:
        y = elementwise(im, [y], finish[node.op_type].format)
    return [y]


@converter("Softmax", "LogSoftmax")
def _softmax(im, node, inputs):
    x = inputs[0]
    shape = shape_of(x)
    axis = axis_index(int(attr(node, "axis", -1)), len(shape), node)
    names = axes(len(shape))
    kept = [n for d, n in enumerate(names) if d != axis]
    kept_shape = [s for d, s in enumerate(shape) if d != axis]
    dtype = dtype_of(x)
    body = Body(im)
    m = im.emit(body, f"M[{join(kept)}] max= {body.read(x, names)}" if shape[axis] > 1 else f"M[{join(kept)}] = {body.read(x, [n if d != axis else '0' for d, n in enumerate(names)])}", kept_shape, dtype)
    body = Body(im)
    if node.op_type == "Softmax":
        e = im.emit(body, f"E[{join(names)}] = exp({body.read(x, names)} - {body.read(m, kept)})", shape, dtype)
        s = reduce(im, e, [axis], False, "+=", "{0}".format)
        body = Body(im)
        text = f"Y[{join(names)}] = {body.read(e, names)} / {body.read(s, kept)}"
        return [im.emit(body, text, shape, dtype)]
    read = body.read(x, names)
    combiner = "+=" if shape[axis] > 1 else "="
    if combiner == "=":
        read = body.read(x, [n if d != axis else "0" for d, n in enumerate(names)])
        text = f"S[{join(kept)}] = exp({read} - {body.read(m, kept)})"
    else:
        text = f"S[{join(kept)}] += exp({read} - {body.read(m, kept)})"
    s = im.emit(body, text, kept_shape, dtype)
    body = Body(im)
    text = f"Y[{join(names)}] = {body.read(x, names)} - {body.read(m, kept)} - log({body.read(s, kept)})"
    return [im.emit(body, text, shape, dtype)]


@converter("LayerNormalization")
def _layer_norm(im, node, inputs):
    x, scale = inputs[0], inputs[1]
    bias = inputs[2] if len(inputs) > 2 else None
    shape = shape_of(x)
    if not shape:
        raise NodeError("needs an input of rank 1 or more, got a scalar")
    axis = axis_index(int(attr(node, "axis", -1)), len(shape), node)
    for what, value in (("Scale", scale), ("B", bias)):
        if value is not None and (len(shape_of(value)) > len(shape) - axis
                                  or broadcast_shapes(shape_of(value), shape[axis:]) != shape[axis:]):
            raise NodeError(f"{what} of shape {shape_of(value)} does not broadcast to the normalized dimensions "
                            f"{shape[axis:]}")
    epsilon = repr(float(np.float32(attr(node, "epsilon", 1e-5))))
    stash = onnx_dtype(attr(node, "stash_type", 1))
    dtype = dtype_of(x)
    names = axes(len(shape))
    outer, inner = names[:axis], names[axis:]
    outer_shape = shape[:axis]
    count = math.prod(shape[axis:])
    convert = (lambda t: f"cast({t})") if stash != dtype else (lambda t: t)
    body = Body(im)
    read = convert(body.read(x, names))
    combiner = "+=" if count > 1 else "="
    if count == 1:
        read = convert(body.read(x, outer + ["0"] * len(inner)))
    mean = im.emit(body, f"M[{join(outer)}] {combiner} {read} * {repr(1.0 / count)}", outer_shape, stash)
    body = Body(im)
    centred = im.emit(body, f"D[{join(names)}] = {convert(body.read(x, names))} - {body.read(mean, outer)}", shape, stash)
    body = Body(im)
    read = body.read(centred, names) if count > 1 else body.read(centred, outer + ["0"] * len(inner))
    variance = im.emit(body, f"V[{join(outer)}] {combiner} {read} * {read} * {repr(1.0 / count)}", outer_shape, stash)
    body = Body(im)
    inv = im.emit(body, f"R[{join(outer)}] = rsqrt({body.read(variance, outer)} + {epsilon})", outer_shape, stash)
    body = Body(im)
    normal = f"{body.read(centred, names)} * {body.read(inv, outer)}"
    if stash != dtype:
        normal = f"cast({normal})"
    text = f"Y[{join(names)}] = {normal} * {body.broadcast_read(scale, names)}"
    if bias is not None:
        text += f" + {body.broadcast_read(bias, names)}"
    y = im.emit(body, text, shape, dtype)
    results = [y]
    keep_shape = (*outer_shape, *[1] * len(inner))
    for value, index in ((mean, 1), (inv, 2)):
        if len(node.output) > index and node.output[index]:
            results.append(reshape(im, value, keep_shape))
    return results


@converter("BatchNormalization")
def _batch_norm(im, node, inputs):
    if attr(node, "training_mode", 0):
        raise NodeError("attribute training_mode=1 is not supported (inference only)")
    x, scale, bias, mean, var = inputs[:5]
    epsilon = repr(float(np.float32(attr(node, "epsilon", 1e-5))))
    shape = shape_of(x)
    if not shape:
        raise NodeError("needs an input of rank 1 or more (N, C, ...), got a scalar")
    names = axes(len(shape))
    channel = [names[1]] if len(shape) > 1 else [names[0]]
    body = Body(im)
    text = (
        f"Y[{join(names)}] = ({body.read(x, names)} - {body.read(mean, channel)}) * "
        f"rsqrt({body.read(var, channel)} + {epsilon}) * {body.read(scale, channel)} + "
        f"{body.read(bias, channel)}"
    )
    return [im.emit(body, text, shape, dtype_of(x))]


# ---------------------------------------------------------------------------
# Data movement
# ---------------------------------------------------------------------------


@converter("Transpose")
def _transpose(im, node, inputs):
    x = inputs[0]
    shape = shape_of(x)
    perm = list(attr(node, "perm", list(range(len(shape)))[::-1]))  # a permutation: onnx_attributes
    names = axes(len(shape))
    out = [names[p] for p in perm]
    body = Body(im)
    text = f"Y[{join(out)}] = {body.read(x, names)}"
    return [im.emit(body, text, [shape[p] for p in perm], dtype_of(x))]


def _groups(in_shape, out_shape):
    """Partition non-unit dims into groups of equal products, or None."""
    ins = [d for d, s in enumerate(in_shape) if s != 1]
    outs = [d for d, s in enumerate(out_shape) if s != 1]
    groups, i, j = [], 0, 0
    while i < len(ins) or j < len(outs):
        if i >= len(ins) or j >= len(outs):
            return None
        gi, gj = [ins[i]], [outs[j]]
        pi, pj = in_shape[ins[i]], out_shape[outs[j]]
        i, j = i + 1, j + 1
        while pi != pj:
            if pi < pj:
                if i >= len(ins):
                    return None
                gi.append(ins[i])
                pi *= in_shape[ins[i]]
                i += 1
            else:
                if j >= len(outs):
                    return None
                gj.append(outs[j])
                pj *= out_shape[outs[j]]
                j += 1
        groups.append((gi, gj))
    return groups


def reshape(im, x: Value, shape) -> Value:
    """`x` viewed with `shape` (row-major): splits read affinely, merges write
    row-major; a regrouping that is neither goes through a flat intermediate."""
    shape = tuple(int(s) for s in shape)
    in_shape = shape_of(x)
    if math.prod(in_shape) != math.prod(shape):
        raise NodeError(f"cannot reshape {in_shape} into {shape}")
    if isinstance(x, np.ndarray):
        return x.reshape(shape)
    if in_shape == shape:
        return x
    groups = _groups(in_shape, shape)
    if groups is None or any(len(gi) > 1 and len(gj) > 1 for gi, gj in groups):
        flat = reshape(im, x, (math.prod(in_shape),))
        return reshape(im, flat, shape)
    x_idx = ["0"] * len(in_shape)
    y_idx = ["0"] * len(shape)
    for gi, gj in groups:
        if len(gi) == 1:  # split (or plain copy): read the input affinely
            stride, parts = 1, []
            for d in reversed(gj):
                parts.append((stride, f"o{d}"))
                stride *= shape[d]
                y_idx[d] = f"o{d}"
            x_idx[gi[0]] = _affine(list(reversed(parts)))
        else:  # merge: write the output row-major
            stride, parts = 1, []
            for d in reversed(gi):
                parts.append((stride, f"i{d}"))
                stride *= in_shape[d]
                x_idx[d] = f"i{d}"
            y_idx[gj[0]] = _affine(list(reversed(parts)))
    body = Body(im)
    text = f"Y[{join(y_idx)}] = {body.read(x, x_idx)}"
    return im.emit(body, text, shape, dtype_of(x))


@converter("Reshape")
def _reshape(im, node, inputs):
    x = inputs[0]
    target = ints(constant(node, inputs[1], "the shape input"))
    allow_zero = attr(node, "allowzero", 0)
    in_shape = shape_of(x)
    shape = []
    for dim, size in enumerate(target):
        if size == 0 and not allow_zero:
            size = in_shape[dim]
        shape.append(size)
    if shape.count(-1) > 1:
        raise NodeError(f"shape {target} has more than one -1")
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        shape[shape.index(-1)] = math.prod(in_shape) // known if known else 0
    return [reshape(im, x, shape)]


@converter("Flatten")
def _flatten(im, node, inputs):
    x = inputs[0]
    shape = shape_of(x)
    axis = int(attr(node, "axis", 1))
    axis = axis + len(shape) if axis < 0 else axis
    return [reshape(im, x, (math.prod(shape[:axis]), math.prod(shape[axis:])))]


@converter("Squeeze")
def _squeeze(im, node, inputs):
    x = inputs[0]
    shape = shape_of(x)
    value = inputs[1] if len(inputs) > 1 else None
    if value is None:
        dims = [d for d, s in enumerate(shape) if s == 1]
    else:
        dims = [axis_index(a, len(shape), node) for a in ints(constant(node, value, "the axes input"))]
    for d in dims:
        if shape[d] != 1:
            raise NodeError(f"cannot squeeze dim {d} of size {shape[d]}")
    return [reshape(im, x, [s for d, s in enumerate(shape) if d not in dims])]


@converter("Unsqueeze")
def _unsqueeze(im, node, inputs):
    x = inputs[0]
    shape = list(shape_of(x))
    dims = ints(constant(node, inputs[1], "the axes input"))
    rank = len(shape) + len(dims)
    dims = sorted(axis_index(a, rank, node) for a in dims)
    for d in dims:
        shape.insert(d, 1)
    return [reshape(im, x, shape)]


@converter("Expand")
def _expand(im, node, inputs):
    x = inputs[0]
    target = ints(constant(node, inputs[1], "the shape input"))
    shape = broadcast_shapes(shape_of(x), tuple(target))
    if shape == shape_of(x):
        return [x]
    out = axes(len(shape))
    body = Body(im)
    text = f"Y[{join(out)}] = {body.broadcast_read(x, out)}"
    return [im.emit(body, text, shape, dtype_of(x))]


@converter("Tile")
def _tile(im, node, inputs):
    x = inputs[0]
    repeats = ints(constant(node, inputs[1], "the repeats input"))
    shape = shape_of(x)
    if len(repeats) != len(shape) or any(r < 1 for r in repeats):
        raise NodeError(f"repeats {repeats} must be one positive count per dimension of the input {shape} (irc has "
                        f"no empty tensors)")
    names = axes(len(shape))
    y_idx, bindings, out_shape = [], [], []
    reads = list(names)
    for position, (name, size, repeat) in enumerate(zip(names, shape, repeats)):
        out_shape.append(size * repeat)
        if repeat == 1:
            y_idx.append(name)
        else:
            y_idx.append(f"{size}*t{name}+{name}" if size > 1 else f"t{name}")
            bindings.append(f"t{name} in {repeat}")
            if size == 1:  # the repeated element itself: no axis of its own
                reads[position] = "0"
    body = Body(im)
    text = f"Y[{join(y_idx)}] = {body.read(x, reads)}"
    if bindings:
        text += " where " + ", ".join(bindings)
    return [im.emit(body, text, out_shape, dtype_of(x))]


@converter("Concat")
def _concat(im, node, inputs):
    parts = [v for v in inputs if 0 not in shape_of(v)]
    if not parts:
        raise NodeError("all inputs are empty; empty tensors are not supported")
    rank = len(shape_of(parts[0]))
    axis = axis_index(int(attr(node, "axis")), rank, node)
    if len(parts) == 1:
        return [parts[0]]
    total = sum(shape_of(v)[axis] for v in parts)
    padded, offset = [], 0
    for value in parts:
        size = shape_of(value)[axis]
        begin = [0] * rank
        end = [0] * rank
        begin[axis], end[axis] = offset, total - offset - size
        padded.append(pad_write(im, value, begin, end))
        offset += size
    # Each part is zero outside its own slab, so the slabs add up to the concatenation.
    dtype = dtype_of(parts[0])
    if dtype == np.bool_:
        make = lambda *reads: reads[0] if len(reads) == 1 else _nested("or", reads)  # noqa: E731
    else:
        make = lambda *reads: " + ".join(reads)  # noqa: E731
    return [elementwise(im, padded, make, dtype)]


def _nested(function, reads):
    text = reads[0]
    for read in reads[1:]:
        text = f"{function}({text}, {read})"
    return text


@converter("Split")
def _split(im, node, inputs):
    x = inputs[0]
    shape = shape_of(x)
    axis = axis_index(int(attr(node, "axis", 0)), len(shape), node)
    outputs = len(node.output)
    given = inputs[1] if len(inputs) > 1 else None
    if given is not None:
        sizes = ints(constant(node, given, "the split input"))
    elif attr(node, "split") is not None:
        sizes = list(attr(node, "split"))
    else:
        count = int(attr(node, "num_outputs", outputs))
        chunk = -(-shape[axis] // count)
        sizes = [min(chunk, shape[axis] - i * chunk) for i in range(count)]
    results, offset = [], 0
    for size in sizes:
        starts = [0] * len(shape)
        stops = list(shape)
        starts[axis], stops[axis] = offset, offset + size
        results.append(slice_read(im, x, starts, stops, [1] * len(shape)))
        offset += size
    return results


@converter("Slice")
def _slice(im, node, inputs):
    x = inputs[0]
    shape = shape_of(x)
    starts = ints(constant(node, inputs[1], "starts"))
    ends = ints(constant(node, inputs[2], "ends"))
    dims = ints(constant(node, inputs[3], "axes")) if len(inputs) > 3 and inputs[3] is not None else list(range(len(starts)))
    steps = ints(constant(node, inputs[4], "steps")) if len(inputs) > 4 and inputs[4] is not None else [1] * len(starts)
    lo, hi, st = [0] * len(shape), list(shape), [1] * len(shape)
    for dim, start, end, step in zip(dims, starts, ends, steps):
        dim = axis_index(dim, len(shape), node)
        if step == 0:
            raise NodeError("a slice step is 0")
        lo[dim], hi[dim], st[dim] = start, end, step
    # Python slicing clamps like ONNX; ends beyond the int64 range mean "to the end".
    hi = [None if (s < 0 and h < -d) else h for h, s, d in zip(hi, st, shape)]
    return [slice_read(im, x, lo, hi, st)]


def _normalised_indices(im, indices: Value, size: int) -> Value:
    if isinstance(indices, np.ndarray):
        indices = indices.astype(np.int64)
        if np.any(indices < -size) or np.any(indices >= size):
            raise NodeError(f"an index is outside [-{size}, {size})")
        return np.where(indices < 0, indices + size, indices)
    return elementwise(im, [indices], lambda i: f"select({i} < 0, {i} + {size}, {i})")


@converter("Gather")
def _gather(im, node, inputs):
    x, indices = inputs
    shape = shape_of(x)
    axis = axis_index(int(attr(node, "axis", 0)), len(shape), node)
    indices = _normalised_indices(im, indices, shape[axis])
    names = axes(len(shape))
    index_shape = shape_of(indices)
    q = axes(len(index_shape), "q")
    out_idx = names[:axis] + q + names[axis + 1:]
    out_shape = shape[:axis] + index_shape + shape[axis + 1:]
    body = Body(im)
    if isinstance(indices, np.ndarray) and indices.size == 1:
        selector = str(int(indices.reshape(-1)[0]))
    elif isinstance(indices, np.ndarray) and indices.ndim == 1 and _progression(indices):
        first, step = int(indices[0]), int(indices[1] - indices[0])
        selector = _affine([(step, q[0])]) if step >= 0 else f"-{-step}*{q[0]}"
        selector = f"{selector}+{first}" if first else selector
    else:
        selector = None
    if selector is None:
        # The data tensor must be read first, so name it before the index tensor.
        data_name = body.read(x, ["0"] * len(shape))
        index_text = body.read(indices, q)
        read = data_name.split("[")[0] + "[" + join(names[:axis] + [index_text] + names[axis + 1:]) + "]"
    else:
        read = body.read(x, names[:axis] + [selector] + names[axis + 1:])
    text = f"Y[{join(out_idx)}] = {read}"
    return [im.emit(body, text, out_shape, dtype_of(x))]


def _progression(values) -> bool:
    if len(values) < 2:
        return False
    steps = np.diff(values)
    return bool(np.all(steps == steps[0])) and steps[0] != 0


@converter("GatherElements")
def _gather_elements(im, node, inputs):
    x, indices = inputs
    shape = shape_of(x)
    axis = axis_index(int(attr(node, "axis", 0)), len(shape), node)
    _check_gather_elements(shape, shape_of(indices), axis)
    indices = _normalised_indices(im, indices, shape[axis])
    index_shape = shape_of(indices)
    names = axes(len(shape))
    body = Body(im)
    data_name = body.read(x, ["0"] * len(shape)).split("[")[0]
    index_text = body.read(indices, names)
    read = f"{data_name}[{join(names[:axis] + [index_text] + names[axis + 1:])}]"
    return [im.emit(body, f"Y[{join(names)}] = {read}", index_shape, dtype_of(x))]


@converter("Pad")
def _pad(im, node, inputs):
    mode = attr(node, "mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode != "constant":
        raise NodeError(f"attribute mode='{mode}' is not supported (only 'constant')")
    x = inputs[0]
    shape = shape_of(x)
    pads = ints(constant(node, inputs[1], "the pads input"))
    value = inputs[2] if len(inputs) > 2 and inputs[2] is not None else np.zeros((), dtype_of(x))
    dims = list(range(len(shape)))
    if len(inputs) > 3 and inputs[3] is not None:
        dims = [axis_index(a, len(shape), node) for a in ints(constant(node, inputs[3], "the axes input"))]
    begin, end = [0] * len(shape), [0] * len(shape)
    for k, d in enumerate(dims):
        begin[d], end[d] = pads[k], pads[k + len(dims)]
    if isinstance(value, Tensor):  # a fill value computed at run time
        padded = pad_write(im, x, begin, end)
        if padded is x:
            return [x]
        kept = [s + min(b, 0) + min(e, 0) for b, e, s in zip(begin, end, shape)]
        mask = inside_mask(im, kept, [max(b, 0) for b in begin], [max(e, 0) for e in end])
        scalar = reshape(im, value, ())
        return [elementwise(im, [mask, padded, scalar], lambda m, p, f: f"select({m}, {p}, {f})", dtype_of(x))]
    fill = np.asarray(value).reshape(-1)[0] if np.asarray(value).size else np.zeros((), dtype_of(x))
    return [pad_write(im, x, begin, end, fill)]


@converter("Shape")
def _shape(im, node, inputs):
    shape = np.asarray(shape_of(inputs[0]), dtype=np.int64)
    start, end = attr(node, "start", 0), attr(node, "end", None)
    return [shape[start:end]]


@converter("Size")
def _size(im, node, inputs):
    return [np.asarray(math.prod(shape_of(inputs[0])), dtype=np.int64)]


@converter("ConstantOfShape", "Range", "Constant")
def _must_fold(im, node, inputs):
    """These ops make constants: they are folded (`fold`) or are an error naming the
    input computed at run time."""
    for value in inputs:
        constant(node, value, "every input")
    raise NodeError("cannot fold it")  # unreachable: a failed fold raises its own reason


# ---------------------------------------------------------------------------
# Vendor kernels (te.opaque)
# ---------------------------------------------------------------------------


def _opaque(im, node, inputs, attributes, outputs=None):
    infos = [out_info(im, node, i) for i in range(len(node.output))] if outputs is None else outputs
    attrs = {k: IntegerAttr(int(v), i64) for k, v in attributes.items()}
    return im.emit_opaque(node.op_type, inputs, infos, attrs)


CUMSUM_AS_CONTRACTION = 4096
"""Longest axis a CumSum is computed on chip for (its triangle takes n*n elements)."""


@converter("CumSum")
def _cumsum(im, node, inputs):
    """A running sum along ``axis`` is a reduction masked by a constant triangle,
    ``Y[..., j, ...] += select(T[r, j], X[..., r, ...], 0)`` with ``T[r, j] = r <= j``
    (``<`` when exclusive, reversed when reverse; a select, not a product, so that a NaN
    further along does not reach earlier sums): planned and run on chip like any reduction
    (the TorchScript exporter's position ids ``cumsum(mask) * mask - 1``)."""
    x = inputs[0]
    shape, dtype = shape_of(x), dtype_of(x)
    if not shape:
        raise NodeError("needs an input of rank 1 or more, got a scalar")
    axis = axis_index(ints(constant(node, inputs[1], "the axis input"))[0], len(shape), node)
    exclusive, reverse = attr(node, "exclusive", 0), attr(node, "reverse", 0)
    n = shape[axis]
    if n > CUMSUM_AS_CONTRACTION or dtype.kind not in "fiu":
        return _opaque(im, node, [x], {"axis": axis, "exclusive": exclusive, "reverse": reverse},
                       [(shape, dtype)])
    k, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    below = (k > j) if reverse else (k < j)
    triangle = below if exclusive else below | (k == j)
    out = axes(len(shape))
    read = list(out)
    read[axis] = "r"
    body = Body(im)
    text = f"Y[{','.join(out)}] += select({body.read(triangle, ['r', out[axis]])}, {body.read(x, read)}, 0)"
    return [im.emit(body, text, shape, dtype)]


@converter("ArgMax", "ArgMin")
def _arg(im, node, inputs):
    x = inputs[0]
    if not shape_of(x):
        raise NodeError("needs an input of rank 1 or more, got a scalar")
    axis = axis_index(int(attr(node, "axis", 0)), len(shape_of(x)), node)
    return _opaque(im, node, [x], {
        "axis": axis, "keepdims": attr(node, "keepdims", 1),
        "select_last_index": attr(node, "select_last_index", 0),
    })


@converter("Trilu")
def _trilu(im, node, inputs):
    x = inputs[0]
    if len(shape_of(x)) < 2:
        raise NodeError(f"needs an input of rank 2 or more, got rank {len(shape_of(x))}")
    k = ints(constant(node, inputs[1], "k"))[0] if len(inputs) > 1 and inputs[1] is not None else 0
    return _opaque(im, node, [x], {"k": k, "upper": attr(node, "upper", 1)}, [(shape_of(x), dtype_of(x))])


@converter("TopK")
def _topk(im, node, inputs):
    x = inputs[0]
    k = ints(constant(node, inputs[1], "k"))[0]
    axis = axis_index(int(attr(node, "axis", -1)), len(shape_of(x)), node)
    if not attr(node, "sorted", 1):
        raise NodeError("attribute sorted=0 is not supported")
    return _opaque(im, node, [x], {"k": k, "axis": axis, "largest": attr(node, "largest", 1)})


# ---------------------------------------------------------------------------
# INT8 quantization and DLRM's embedding tables (MTIA, seeds/001 section 6)
# ---------------------------------------------------------------------------

CUSTOM_DOMAINS = ("irc.dlrm",)
"""Domains of irc's own ONNX operators: ONNX has no embedding bag, so a DLRM exported for
irc states its tables as ``irc.dlrm.EmbeddingBag`` / ``irc.dlrm.TableBatchedEmbedding``."""

INT_RANGES = {np.dtype(np.int8): (-128, 127), np.dtype(np.uint8): (0, 255),
              np.dtype(np.int16): (-32768, 32767), np.dtype(np.uint16): (0, 65535)}


def _scale_of(node, inputs, position: int, op: str, scale_name: str):
    """The scale input of a QuantizeLinear / DequantizeLinear, or an error naming the
    tensor that would be (de)quantized without one."""
    scale = inputs[position] if len(inputs) > position else None
    if scale is None:
        raise NodeError(f"tensor '{node.input[0]}' is {op} without a scale (input {scale_name} is missing)")
    if isinstance(scale, np.ndarray) and not np.all(np.isfinite(scale)):
        raise NodeError(f"tensor '{node.input[0]}' has a scale that is not finite")
    return scale


def _per_axis(value, x, node):
    """A scale or zero point, as a value broadcasting against ``x``: a scalar as it is, a
    1-D one along the node's ``axis``."""
    if value is None or len(shape_of(value)) == 0 or (isinstance(value, np.ndarray) and value.size == 1):
        return value.reshape(()) if isinstance(value, np.ndarray) else value
    rank = len(shape_of(x))
    if rank == 0:
        raise NodeError(f"a per-axis scale or zero point of shape {shape_of(value)} needs an input of rank 1 or "
                        f"more, got a scalar")
    axis = axis_index(int(attr(node, "axis", 1)), rank, node)
    if not isinstance(value, np.ndarray):
        raise NodeError("a per-axis scale or zero point must be a constant")
    if value.ndim != 1 or value.shape[0] != shape_of(x)[axis]:
        raise NodeError(f"a per-axis scale has shape {value.shape}, but axis {axis} of the input has "
                        f"{shape_of(x)[axis]} elements")
    return value.reshape([-1] + [1] * (rank - 1 - axis))


def _as_type(im, value, dtype):
    """A scale or zero point in the arithmetic's element type: a constant converted, a
    run-time tensor through a te op of its own (``cast`` yields an op's result type)."""
    if isinstance(value, np.ndarray):
        return value.astype(dtype)
    if dtype_of(value) == np.dtype(dtype):
        return value
    return elementwise(im, [value], lambda v: f"cast({v})", np.dtype(dtype))


@converter("QuantizeLinear")
def _quantize_linear(im, node, inputs):
    x = inputs[0]
    scale = _per_axis(_scale_of(node, inputs, 1, "quantized", "y_scale"), x, node)
    zero = _per_axis(inputs[2], x, node) if len(inputs) > 2 and inputs[2] is not None else None
    out_dtype = dtype_of(zero) if zero is not None else np.dtype(np.uint8)
    if out_dtype not in INT_RANGES:
        raise NodeError(f"quantizing to {out_dtype} is not supported (INT8/UINT8/INT16/UINT16)")
    low, high = INT_RANGES[out_dtype]
    values = [x, _as_type(im, scale, dtype_of(x))]
    if zero is not None:
        values.append(_as_type(im, zero, dtype_of(x)))
        body = lambda v, s, z: f"cast(min(max(round({v} / {s}) + {z}, {low}), {high}))"  # noqa: E731
    else:
        body = lambda v, s: f"cast(min(max(round({v} / {s}), {low}), {high}))"  # noqa: E731
    return [elementwise(im, values, body, out_dtype)]


@converter("DequantizeLinear")
def _dequantize_linear(im, node, inputs):
    x = inputs[0]
    scale = _scale_of(node, inputs, 1, "dequantized", "x_scale")
    out_dtype = dtype_of(scale)
    scale = _per_axis(scale, x, node)
    zero = _per_axis(inputs[2], x, node) if len(inputs) > 2 and inputs[2] is not None else None
    values = [x, _as_type(im, scale, out_dtype)]
    if zero is not None:
        values.append(_as_type(im, zero, out_dtype))
        body = lambda v, s, z: f"(cast({v}) - {z}) * {s}"  # noqa: E731
    else:
        body = lambda v, s: f"cast({v}) * {s}"  # noqa: E731
    # the cast reads the integer and yields the scale's type: the elementwise op's type
    return [elementwise(im, values, body, out_dtype)]


@converter("MatMulInteger")
def _matmul_integer(im, node, inputs):
    """INT8 x INT8 accumulating in INT32 (MTIA's DPE, section 3.1.2): a matmul of the
    widened operands, less their zero points."""
    a, b = inputs[0], inputs[1]
    sa, sb = shape_of(a), shape_of(b)
    if len(sa) != 2 or len(sb) != 2:
        raise NodeError(f"MatMulInteger of shapes {sa} and {sb} is not supported (2-D operands only)")
    if sa[1] != sb[0]:
        raise NodeError(f"MatMulInteger contracts {sa[1]} with {sb[0]}")
    zeros = []
    for position in (2, 3):
        value = inputs[position] if len(inputs) > position else None
        if value is not None and not isinstance(value, np.ndarray):
            raise NodeError(f"the zero point '{node.input[position]}' must be a constant")
        if value is not None and value.size != 1:
            raise NodeError(f"the zero point '{node.input[position]}' must be a scalar (per-row/column zero "
                            f"points are not supported)")
        zeros.append(0 if value is None else int(value.reshape(-1)[0]))
    body = Body(im)
    left = f"cast({body.read(a, ['m', 'k'])})"
    right = f"cast({body.read(b, ['k', 'n'])})"
    if zeros[0]:
        left = f"({left} - {zeros[0]})"
    if zeros[1]:
        right = f"({right} - {zeros[1]})"
    return [im.emit(body, f"Y[m,n] += {left} * {right}", (sa[0], sb[1]), np.dtype(np.int32))]


def _mode(node) -> str:
    """An embedding bag's pooling: sum or mean (onnx_attributes checks the value)."""
    return attr(node, "mode", b"sum").decode()


@converter("EmbeddingBag")
def _embedding_bag(im, node, inputs):
    """``irc.dlrm.EmbeddingBag(weight, indices, offsets)``: PyTorch's embedding_bag."""
    weight, indices, offsets = inputs
    if len(shape_of(weight)) != 2 or len(shape_of(indices)) != 1 or len(shape_of(offsets)) != 1:
        raise NodeError("EmbeddingBag takes a 2-D table, 1-D indices and 1-D offsets")
    for name, value in (("indices", indices), ("offsets", offsets)):
        if dtype_of(value).kind not in "iu":
            raise NodeError(f"EmbeddingBag {name} must be integers, got {dtype_of(value)}")
    out = ((shape_of(offsets)[0], shape_of(weight)[1]), dtype_of(weight))
    return im.emit_opaque("EmbeddingBag", [weight, indices, offsets], [out], {"mode": StringAttr(_mode(node))})


@converter("TableBatchedEmbedding")
def _table_batched_embedding(im, node, inputs):
    """``irc.dlrm.TableBatchedEmbedding(weights, indices, offsets)`` with ``rows`` (ints,
    each table's rows): several EmbeddingBags in one op (section 6)."""
    weights, indices, offsets = inputs
    rows = [int(r) for r in (attr(node, "rows") or [])]
    if not rows or sum(rows) != shape_of(weights)[0]:
        raise NodeError(f"attribute rows {rows} must list each table's rows, adding up to the "
                        f"{shape_of(weights)[0]} rows of the weights")
    bags = shape_of(offsets)[0] - 1
    if bags % len(rows):
        raise NodeError(f"{bags + 1} offsets are not tables x batch + 1 for {len(rows)} tables")
    batch = bags // len(rows)
    out = ((batch, len(rows) * shape_of(weights)[1]), dtype_of(weights))
    return im.emit_opaque("TableBatchedEmbedding", [weights, indices, offsets], [out],
                          {"mode": StringAttr(_mode(node)), "rows": DenseArrayBase.from_list(i64, rows)})
