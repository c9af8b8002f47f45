"""Convolution and pooling as te ops (T10 s3.2: a convolution is a contraction over a window)."""

from __future__ import annotations

import math

import numpy as np

from irc.frontend.onnx_graph import Body, NodeError, axes, dtype_of, shape_of
from irc.frontend.onnx_ops.elementwise import elementwise
from irc.frontend.onnx_ops.geometry import affine_index, pad_write, reshape
from irc.frontend.onnx_ops.registry import attr, converter, join, out_info, shape_text


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
    reads = [affine_index([(s, h), (d, r)]) for h, r, s, d in zip(space, window, strides, dilations)]
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
        raise NodeError(f"the output would have shape {shape_text(out_shape)}: the window does not fit the input "
                        f"{shape_text(sx)}")


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
    reads = [affine_index([(s, h), (d, r)]) for h, r, s, d in zip(space, window, strides, dilations)]
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
    reads = [affine_index([(s, h), (d, r)]) for h, r, s, d in zip(space, window, strides, dilations)]
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
