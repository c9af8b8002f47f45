"""Contractions: MatMul, Gemm and Einsum as te ops."""

from __future__ import annotations


import numpy as np

from irc.frontend.onnx_graph import Body, NodeError, Tensor, Value, axes, broadcast_shapes, dtype_of, shape_of
from irc.frontend.onnx_ops.elementwise import elementwise
from irc.frontend.onnx_ops.registry import attr, converter, join


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
