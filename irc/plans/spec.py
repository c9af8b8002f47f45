"""Operator specifications: what the planner needs to know about one tensor expression.

T10 section 4.2 represents an operator as a tensor expression such as
``C[m,n] += A[m,k] * B[k,n]``: a set of axes with extents, and per tensor the axes that
index each of its dimensions. A dimension indexed by an affine combination (a conv input
``X[n, c, h+r, w+s]``) lists every axis of the combination; T10 section 5 ("compound
axis") partitions each basic axis individually.

The te dialect's adapter builds ``OpSpec`` values; ``matmul_spec`` and ``conv2d_spec``
build the common ones directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from math import prod

import numpy as np

from irc.cost import KINDS
from irc.plans.errors import SpecError

COMBINERS = ("=", "+=", "max=", "min=")
ACCUMULATOR_BYTES = 4
"""Width of a partial-sum accumulator (f32 / i32): narrower ``+=`` outputs widen to it."""


@dataclass(frozen=True)
class TensorSpec:
    """One operand: its name and, per dimension, the axes in that dimension's index;
    ``dtype_bytes`` when its elements are not the operator's size (a cast, a comparison
    reading floats and writing i1)."""

    name: str
    dims: tuple[tuple[str, ...], ...]
    dtype_bytes: int | None = None
    whole: tuple[int, ...] = ()
    """Extents of the dims indexed by another tensor's values (a gather's table rows,
    ``E[I[i],j]``): no axis partitions them, every partition holds them whole."""

    @property
    def whole_elements(self) -> int:
        """Elements of one slice across the whole dims (1 without)."""
        return prod(self.whole)

    @property
    def axes(self) -> tuple[str, ...]:
        """The distinct axes indexing this tensor, in order of first appearance."""
        seen: list[str] = []
        for dim in self.dims:
            for axis in dim:
                if axis not in seen:
                    seen.append(axis)
        return tuple(seen)

    def indexed_by(self, axis: str) -> bool:
        return axis in self._indexing

    @cached_property
    def _indexing(self) -> frozenset[str]:
        # (``indexed_by`` is asked millions of times by a mesh's op-table searches)
        return frozenset(axis for dim in self.dims for axis in dim)


@dataclass(frozen=True)
class OpSpec:
    """A tensor-expression operator: axes, operands (output first), reduction axes, kind,
    and the combiner folding the reduction axes (``+=`` sums: a plan that splits a
    reduction keeps the output's partial sums in accumulators, ``partial_bytes``)."""

    axes: tuple[tuple[str, int], ...]
    tensors: tuple[TensorSpec, ...]
    reduction_axes: tuple[str, ...]
    kind: str
    dtype_bytes: int = 2
    combiner: str = "+="
    unpadded_axes: tuple[str, ...] = ()
    """Reduction axes whose padded points would change the fold (``+= exp(X[i,k])``
    reads ``exp(0) = 1`` where a load pads ``k`` with zeros;
    `irc.plans.from_te.fold_changing_axes`). No plan pads them, except that a
    ``max=``/``min=`` fold may move its last core's range back inside the extent
    (idempotent folds may repeat points) when one core's span fits in it
    (`padding_admitted`). The planner and the compute-shift lowering read this one field,
    so every plan the planner returns lowers."""

    def __post_init__(self) -> None:
        names = [name for name, _ in self.axes]
        if len(set(names)) != len(names):
            raise SpecError(f"axis names must be distinct, got {names}")
        for name, extent in self.axes:
            if not isinstance(extent, int) or extent < 1:
                raise SpecError(f"axis {name!r} must have a positive integer extent, got {extent!r}")
        if self.kind not in KINDS:
            raise SpecError(f"kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.dtype_bytes < 1:
            raise SpecError(f"dtype_bytes must be positive, got {self.dtype_bytes}")
        if self.combiner not in COMBINERS:
            raise SpecError(f"combiner must be one of {', '.join(COMBINERS)}, got {self.combiner!r}")
        for tensor in self.tensors:
            if tensor.dtype_bytes is not None and tensor.dtype_bytes < 1:
                raise SpecError(f"dtype_bytes of {tensor.name!r} must be positive, got {tensor.dtype_bytes}")
            if any(not isinstance(e, int) or e < 1 for e in tensor.whole):
                raise SpecError(f"whole dims of {tensor.name!r} must have positive extents, got {list(tensor.whole)}")
        if len(self.tensors) < 1:
            raise SpecError("an operator needs at least an output tensor")
        tensor_names = [t.name for t in self.tensors]
        if len(set(tensor_names)) != len(tensor_names):
            raise SpecError(f"tensor names must be distinct, got {tensor_names}")
        for tensor in self.tensors:
            for dim in tensor.dims:
                if not dim:
                    raise SpecError(f"tensor {tensor.name!r} has a dimension indexed by no axis")
                for axis in dim:
                    if axis not in names:
                        raise SpecError(f"tensor {tensor.name!r} uses unknown axis {axis!r}")
        used = {axis for tensor in self.tensors for axis in tensor.axes}
        for axis in names:
            if axis not in used:
                raise SpecError(f"axis {axis!r} indexes no tensor")
        for axis in self.reduction_axes:
            if axis not in names:
                raise SpecError(f"reduction axis {axis!r} is not an axis of the operator")
            if self.output.indexed_by(axis):
                raise SpecError(f"reduction axis {axis!r} indexes the output {self.output.name!r}")
        for axis in self.unpadded_axes:
            if axis not in self.reduction_axes:
                raise SpecError(f"unpadded axis {axis!r} is not a reduction axis of the operator")

    @cached_property
    def axis_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.axes)

    @cached_property
    def extents(self) -> tuple[int, ...]:
        return tuple(extent for _, extent in self.axes)

    @property
    def output(self) -> TensorSpec:
        return self.tensors[0]

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        return self.tensors[1:]

    @property
    def iteration_volume(self) -> int:
        """Points of the iteration space (multiply-accumulates for a matmul)."""
        return prod(self.extents)

    def axis_index(self, axis: str) -> int:
        return self.axis_names.index(axis)

    def padding_admitted(self, axis: str, op_factor: int, span: int) -> bool:
        """Whether a plan may give each of ``op_factor`` cores ``span`` points of ``axis``
        (padded extent ``op_factor * span``): always, unless ``axis`` is unpadded; then
        only without padding, or, for ``max=``/``min=``, with one core's span within
        the extent (the last range is clamped, `irc.schedule.kernel`)."""
        if axis not in self.unpadded_axes:
            return True
        extent = self.extents[self.axis_index(axis)]
        if op_factor * span == extent:
            return True
        return self.combiner in ("max=", "min=") and span <= extent

    def tensor(self, name: str) -> TensorSpec:
        for tensor in self.tensors:
            if tensor.name == name:
                return tensor
        raise SpecError(f"no tensor named {name!r}; tensors are {[t.name for t in self.tensors]}")

    def tensor_index(self, name: str) -> int:
        return [t.name for t in self.tensors].index(self.tensor(name).name)

    def bytes_of(self, name: str) -> int:
        """Bytes per element of tensor ``name`` (its own size, else the operator's)."""
        return self.tensor(name).dtype_bytes or self.dtype_bytes

    @property
    def tensor_bytes(self) -> tuple[int, ...]:
        """Bytes per element of every tensor, in ``tensors`` order."""
        return tuple(t.dtype_bytes or self.dtype_bytes for t in self.tensors)

    @property
    def partial_bytes(self) -> int:
        """Bytes per element of the output while it holds partial sums: a ``+=`` output
        narrower than 4 bytes is accumulated in 4-byte accumulators (f32 for floats, as
        the IPU's AMP units accumulate f16 products; i32 for integers) and rounded to its
        own type once, after the cross-core reduction. ``max=``/``min=`` commute with
        rounding, so their partial results keep the output's type."""
        own = self.bytes_of(self.output.name)
        return max(ACCUMULATOR_BYTES, own) if self.combiner == "+=" else own

    def holds_partial_sums(self, op_factors, steps_per_axis):
        """Whether a plan leaves partial sums in the output: its combiner adds and some
        reduction axis is split over cores (``F_op > 1``: replicas reduced at the end, or
        an output rotating through the cores that share it) or over steps (``T_d > 1``).
        Broadcasts over arrays of candidates (the last axis indexes the op axes)."""
        if self.combiner != "+=" or not self.reduction_axes:
            return np.zeros(np.shape(op_factors)[:-1], dtype=bool) if np.ndim(op_factors) > 1 else False
        columns = [self.axis_index(a) for a in self.reduction_axes]
        split = (np.take(np.asarray(op_factors), columns, axis=-1) > 1) | \
            (np.take(np.asarray(steps_per_axis), columns, axis=-1) > 1)
        found = split.any(axis=-1)
        return bool(found) if np.ndim(found) == 0 else found

    def output_bytes(self, op_factors, steps_per_axis):
        """Bytes per element of the output's buffers under a plan: ``partial_bytes`` when
        the plan leaves partial sums (``holds_partial_sums``), else the output's own."""
        partial = self.holds_partial_sums(op_factors, steps_per_axis)
        own = self.bytes_of(self.output.name)
        if np.ndim(partial):
            return np.where(partial, self.partial_bytes, own)
        return self.partial_bytes if partial else own


def matmul_spec(m: int, k: int, n: int, dtype_bytes: int = 2) -> OpSpec:
    """``C[m,n] += A[m,k] * B[k,n]`` with axes in the seeds/003 order (m, k, n)."""
    return OpSpec(
        axes=(("m", m), ("k", k), ("n", n)),
        tensors=(
            TensorSpec("C", (("m",), ("n",))),
            TensorSpec("A", (("m",), ("k",))),
            TensorSpec("B", (("k",), ("n",))),
        ),
        reduction_axes=("k",),
        kind="matmul",
        dtype_bytes=dtype_bytes,
    )


def conv2d_spec(
    batch: int, out_channels: int, in_channels: int, height: int, width: int,
    kernel_h: int, kernel_w: int, dtype_bytes: int = 2,
) -> OpSpec:
    """``O[b,f,h,w] += I[b,c,h+kh,w+kw] * W[f,c,kh,kw]`` (T10 equation 2), stride 1."""
    return OpSpec(
        axes=(("b", batch), ("f", out_channels), ("c", in_channels), ("h", height),
              ("w", width), ("kh", kernel_h), ("kw", kernel_w)),
        tensors=(
            TensorSpec("O", (("b",), ("f",), ("h",), ("w",))),
            TensorSpec("I", (("b",), ("c",), ("h", "kh"), ("w", "kw"))),
            TensorSpec("W", (("f",), ("c",), ("kh",), ("kw",))),
        ),
        reduction_axes=("c", "kh", "kw"),
        kind="conv",
        dtype_bytes=dtype_bytes,
    )
