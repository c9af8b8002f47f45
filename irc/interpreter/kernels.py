"""Kernels for `te.opaque` ops: operators no tensor expression states.

Each kernel is registered under the op's `kind` (the source operator's name, e.g. an
ONNX op type) and receives the op (for its attributes) and numpy inputs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import IntegerAttr

from irc.interpreter.dtypes import numpy_dtype

Kernel = Callable[..., list[np.ndarray]]
KERNELS: dict[str, Kernel] = {}


class KernelError(RuntimeError):
    pass


def kernel(kind: str):
    def register(function: Kernel) -> Kernel:
        KERNELS[kind] = function
        return function

    return register


def run_kernel(op, inputs: list[np.ndarray]) -> list[np.ndarray]:
    kind = op.kind.data
    if kind not in KERNELS:
        known = ", ".join(sorted(KERNELS)) or "none"
        raise KernelError(f"no kernel for te.opaque \"{kind}\" (known: {known})")
    results = KERNELS[kind](op, *inputs)
    return [
        np.asarray(r).astype(numpy_dtype(t.get_element_type()))
        for r, t in zip(results, op.result_types, strict=True)
    ]


def _int_attr(op, name: str, default: int) -> int:
    attr = op.attributes.get(name)
    if attr is None:
        return default
    if not isinstance(attr, IntegerAttr):
        raise KernelError(f"attribute '{name}' of te.opaque \"{op.kind.data}\" must be an integer")
    return attr.value.data


@kernel("Sort")
def _sort(op, x):
    axis = _int_attr(op, "axis", -1)
    descending = bool(_int_attr(op, "descending", 0))
    result = np.sort(x, axis=axis, kind="stable")
    return [np.flip(result, axis=axis) if descending else result]


@kernel("TopK")
def _top_k(op, x, k=None):
    # ONNX TopK: k from the second input or the attribute; largest first by default.
    count = int(np.asarray(k).reshape(-1)[0]) if k is not None else _int_attr(op, "k", 1)
    axis = _int_attr(op, "axis", -1)
    largest = bool(_int_attr(op, "largest", 1))
    keys = -x if largest else x
    order = np.argsort(keys, axis=axis, kind="stable")
    indices = np.take(order, np.arange(count), axis=axis)
    return [np.take_along_axis(x, indices, axis=axis), indices.astype(np.int64)]
