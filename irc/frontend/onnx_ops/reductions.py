"""Reductions and normalisations (ReduceSum/Mean/Max/..., Softmax, LayerNormalization, BatchNormalization) as te ops."""

from __future__ import annotations

import math

import numpy as np

from irc.frontend.onnx_graph import (
    Body,
    NodeError,
    Tensor,
    Value,
    axes,
    broadcast_shapes,
    dtype_of,
    onnx_dtype,
    shape_of,
)
from irc.frontend.onnx_ops.elementwise import elementwise
from irc.frontend.onnx_ops.geometry import reshape
from irc.frontend.onnx_ops.registry import attr, axis_index, constant, converter, ints, join


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
