"""Data movement (Transpose, Reshape, Squeeze, Concat, Slice, Gather, Pad, Expand, ...) as te ops."""

from __future__ import annotations

import math

import numpy as np

from irc.frontend.onnx_graph import Body, NodeError, Tensor, Value, axes, broadcast_shapes, dtype_of, shape_of
from irc.frontend.onnx_ops.elementwise import elementwise
from irc.frontend.onnx_ops.geometry import affine_index, inside_mask, pad_write, reshape, slice_read
from irc.frontend.onnx_ops.registry import attr, axis_index, check_gather_elements, constant, converter, ints, join


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
        selector = affine_index([(step, q[0])]) if step >= 0 else f"-{-step}*{q[0]}"
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
    check_gather_elements(shape, shape_of(indices), axis)
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
