"""Element types of the IR and the numpy dtypes that store them."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
)
from xdsl.ir import Attribute
from xdsl.utils.exceptions import VerifyException


class UnsupportedTypeError(ValueError):
    pass


def numpy_dtype(element_type: Attribute) -> np.dtype:
    """The numpy dtype that stores `element_type` (bf16 has none in numpy)."""
    if isinstance(element_type, Float16Type):
        return np.dtype(np.float16)
    if isinstance(element_type, Float32Type):
        return np.dtype(np.float32)
    if isinstance(element_type, Float64Type):
        return np.dtype(np.float64)
    if isinstance(element_type, IntegerType):
        width = element_type.width.data
        if width == 1:
            return np.dtype(np.bool_)
        if width in (8, 16, 32, 64):
            unsigned = element_type.signedness.data == Signedness.UNSIGNED
            return np.dtype(f"{'u' if unsigned else ''}int{width}")
    raise UnsupportedTypeError(f"element type {element_type} has no numpy storage here")


def element_bytes(element_type: Attribute) -> int:
    """Bytes per element of a builtin element type as the chips store it: sub-byte widths
    round up (booleans take one byte); bf16 takes two although numpy has no storage for it."""
    width = getattr(element_type, "bitwidth", None)
    if width is None:
        width = getattr(element_type, "width", None)
        width = getattr(width, "data", width)
    if not isinstance(width, int) or width < 1:
        raise VerifyException(f"element type {element_type} has no known size in bytes")
    return max(1, (width + 7) // 8)


def byte_width(element_type: Attribute) -> int:
    return numpy_dtype(element_type).itemsize


def element_type(dtype) -> Attribute:
    """The builtin element type stored as numpy ``dtype`` (the inverse of ``numpy_dtype``)."""
    dtype = np.dtype(dtype)
    floats = {2: Float16Type(), 4: Float32Type(), 8: Float64Type()}
    if dtype.kind == "f" and dtype.itemsize in floats:
        return floats[dtype.itemsize]
    if dtype.kind == "b":
        return IntegerType(1)
    if dtype.kind in "iu":
        return IntegerType(dtype.itemsize * 8, Signedness.UNSIGNED if dtype.kind == "u" else Signedness.SIGNLESS)
    raise UnsupportedTypeError(f"numpy dtype {dtype} has no element type here")


def float_to_int(values: np.ndarray, dtype) -> np.ndarray:
    """Floats as integers of ``dtype``: truncated toward zero, NaN as 0, beyond the
    type's range its extremes (numpy leaves those cases undefined): how the IR stores a
    float in an integer type, wherever it is computed (interpreters, import-time folding)."""
    dtype = np.dtype(dtype)
    values = np.asarray(values, dtype=np.float64)
    info = np.iinfo(dtype)
    truncated = np.trunc(np.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0))
    # ``float(info.max)`` of a 64-bit type rounds up to 2**63: compare before converting
    high, low = values >= float(info.max), values <= float(info.min)
    inside = np.where(high | low, 0.0, truncated).astype(dtype)
    return np.where(high, info.max, np.where(low, info.min, inside)).astype(dtype)
