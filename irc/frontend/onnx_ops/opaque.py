"""Operators no tensor expression states, as ``te.opaque`` with a kernel in ``irc.interpreter.kernels`` (T10 s4.2)."""

from __future__ import annotations


import numpy as np
from xdsl.dialects.builtin import IntegerAttr, i64

from irc.frontend.onnx_graph import Body, NodeError, axes, dtype_of, shape_of
from irc.frontend.onnx_ops.registry import attr, axis_index, constant, converter, ints, out_info


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
