"""INT8 quantization and DLRM's embedding tables (MTIA, seeds/001 section 6)."""

from __future__ import annotations


import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, StringAttr, i64

from irc.frontend.onnx_graph import Body, NodeError, dtype_of, shape_of
from irc.frontend.onnx_ops.elementwise import elementwise
from irc.frontend.onnx_ops.registry import attr, axis_index, converter


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
