"""Index geometry the converters share: padding writes, masks, strided slice reads, reshapes as affine index maps."""

from __future__ import annotations

import math

import numpy as np

from irc.frontend.onnx_graph import MAX_CONSTANT_BYTES, Body, NodeError, Value, axes, dtype_of, shape_of
from irc.frontend.onnx_ops.elementwise import elementwise
from irc.frontend.onnx_ops.registry import join


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


def affine_index(parts) -> str:
    text = ""
    for coeff, name in parts:
        if coeff == 0:
            continue
        term = name if coeff == 1 else f"{coeff}*{name}"
        text = term if not text else f"{text}+{term}"
    return text or "0"


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
            x_idx[gi[0]] = affine_index(list(reversed(parts)))
        else:  # merge: write the output row-major
            stride, parts = 1, []
            for d in reversed(gi):
                parts.append((stride, f"i{d}"))
                stride *= in_shape[d]
                x_idx[d] = f"i{d}"
            y_idx[gj[0]] = affine_index(list(reversed(parts)))
    body = Body(im)
    text = f"Y[{join(y_idx)}] = {body.read(x, x_idx)}"
    return im.emit(body, text, shape, dtype_of(x))
