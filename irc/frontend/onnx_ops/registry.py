"""The converters' registry (one per op type), dispatch, constant folding with ``onnx.reference`` and the helpers every converter uses."""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import helper
from onnx.reference import ReferenceEvaluator

from irc.dialects.dtypes import float_to_int
from irc.frontend.onnx_attributes import check_axes
from irc.frontend.onnx_graph import MAX_CONSTANT_BYTES, MAX_DIMENSION, Importer, NodeError, Tensor, shape_of


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
        raise NodeError(f"output '{name}' would have shape {shape_text(shape)}: a dimension of more than "
                        f"{MAX_DIMENSION} (2**40) is beyond what irc plans")


def _check_not_empty(name: str, shape: tuple[int, ...] | None) -> None:
    """A value computed at run time has elements (a folded constant may be empty)."""
    if name and shape is not None and any(d < 1 for d in shape):
        raise NodeError(f"output '{name}' would have no elements (shape {shape_text(shape)}); irc has no empty tensors")


def shape_text(shape) -> str:
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
            raise NodeError(f"its output '{name}' ({shape_text(shape)}) is a constant of {nbytes / 2**30:,.0f} GiB; "
                            f"irc folds constants of at most {MAX_CONSTANT_BYTES >> 30} GiB")


def _fold_gather_elements(node, data, indices):
    """GatherElements with numpy (onnx.reference's kernel uses np.choose, which takes at
    most 64 choices, so it fails on a gathered axis longer than 64)."""
    axis = int(attr(node, "axis", 0))
    check_gather_elements(data.shape, indices.shape, axis)
    axis = axis_index(axis, data.ndim, node)
    if ((indices < -data.shape[axis]) | (indices >= data.shape[axis])).any():
        raise NodeError(f"GatherElements index out of range for axis {axis} of size {data.shape[axis]}")
    return [np.take_along_axis(data, np.where(indices < 0, indices + data.shape[axis], indices), axis=axis)]


def check_gather_elements(shape, index_shape, axis: int) -> None:
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
        raise NodeError(f"cannot fold it: a constant of shape {shape_text(dims)} takes {nbytes / 2**30:,.0f} GiB; "
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


def _fold_batch_norm(node, x, scale, bias, mean, var, *_):
    """BatchNormalization in inference mode, as its converter computes it (onnx.reference's
    opset 9-13 kernel fills in the schema's default momentum and so normalises by the
    batch's own statistics, a training step: wrong for an exported model's constant)."""
    if attr(node, "training_mode", 0):
        raise NodeError("attribute training_mode=1 is not supported (inference only)")
    if x.ndim == 0:
        raise NodeError("needs an input of rank 1 or more (N, C, ...), got a scalar")
    epsilon = np.float32(attr(node, "epsilon", 1e-5))
    compute = np.float64 if x.dtype == np.float64 else np.float32
    channel = (-1,) + (1,) * (x.ndim - 2) if x.ndim > 1 else (-1,)
    scale, bias, mean, var = (np.asarray(v, compute).reshape(channel) for v in (scale, bias, mean, var))
    y = (x.astype(compute) - mean) / np.sqrt(var + epsilon) * scale + bias
    return [y.astype(x.dtype)]


NUMPY_FOLDERS = {
    "BatchNormalization": _fold_batch_norm,
    "GatherElements": _fold_gather_elements,
    "Range": _fold_range,
    "ConstantOfShape": _fold_constant_of_shape,
    # the same array, not a copy: a deduplicated initializer reached through Identity
    # chains stays one weight
    "Identity": lambda node, value: [value],
}


"""Constant folding in numpy where onnx.reference's kernel has corner cases (or would
copy what must stay the same tensor)."""


def _saturating_cast(node, value) -> np.ndarray | None:
    """A Cast of floats to an integer type as irc computes it at run time
    (`irc.dialects.dtypes.float_to_int`), where numpy and onnx.reference wrap (300.0 to
    int8: 44, not 127); None for other casts."""
    value = np.asarray(value)
    target = np.dtype(helper.tensor_dtype_to_np_dtype(attr(node, "to"))) if attr(node, "to") else None
    if value.dtype.kind != "f" or target is None or target.kind not in "iu":
        return None
    return float_to_int(value, target)


def fold(im: Importer, node, inputs) -> list[np.ndarray]:
    """Evaluate a node with constant inputs at import time (onnx.reference, or numpy for
    the ops in ``NUMPY_FOLDERS`` and a Cast of floats to integers)."""
    if node.op_type in NUMPY_FOLDERS:
        return [np.asarray(v) for v in NUMPY_FOLDERS[node.op_type](node, *inputs)]
    if node.op_type == "Cast" and inputs and (cast := _saturating_cast(node, inputs[0])) is not None:
        return [cast]
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


@converter("ConstantOfShape", "Range", "Constant")
def _must_fold(im, node, inputs):
    """These ops make constants: they are folded (`fold`) or are an error naming the
    input computed at run time."""
    for value in inputs:
        constant(node, value, "every input")
    raise NodeError("cannot fold it")  # unreachable: a failed fold raises its own reason
