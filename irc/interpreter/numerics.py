"""The interpreters' one definition of how values combine and convert, shared by every
level (te, rtensor, shift, device, mtia), so a program computes the same bits wherever
it runs.

* **Reductions.** ``max=`` and ``min=`` start from their identities, -inf and +inf (an
  integer type's extremes; false and true for ``i1``), and follow IEEE 754-2019's
  ``maximum``/``minimum``: a NaN among the values makes the result NaN (as numpy's
  ``max``/``min`` do), and -0.0 orders below +0.0, so the result does not depend on the
  order the values are combined in (numpy's own ``max`` of zeros of both signs does:
  ``np.max([-0.0, 0.0])`` and ``np.max([0.0, -0.0])`` differ). ``+=`` sums from +0.0, as
  numpy's ``sum`` does (a sum of -0.0s is +0.0).
* **Float to integer** (``cast`` to an integer type, a float body stored into an
  integer output): truncation toward zero, NaN gives 0, values beyond the type's range
  saturate to its extremes (numpy leaves those cases undefined).
* **Integer arithmetic** is int64 and wraps (two's complement), as numpy's does;
  division truncates toward zero (``irc.interpreter.te_eval``) and ``x / 0`` is 0,
  ``INT_MIN / -1`` wraps to ``INT_MIN``.
"""

from __future__ import annotations

import numpy as np

from irc.dialects.dtypes import float_to_int

ORDERED = ("max=", "min=")
"""The combiners that select one of their values rather than summing them."""


def reduction_identity(combiner: str, dtype) -> object:
    """The value a ``combiner`` accumulation of element type ``dtype`` starts from."""
    dtype = np.dtype(dtype)
    if combiner not in ORDERED:
        return dtype.type(0)
    if dtype.kind == "b":
        return combiner == "min="
    if dtype.kind == "f":
        return dtype.type(-np.inf if combiner == "max=" else np.inf)
    info = np.iinfo(dtype)
    return dtype.type(info.min if combiner == "max=" else info.max)


def _signed_zeros(result: np.ndarray, negative) -> np.ndarray:
    """``result`` with each zero given the sign ``negative`` (a function of the zero
    mask, evaluated only when the result holds a zero) asks for."""
    result = np.asarray(result)
    if result.dtype.kind != "f":
        return result
    zero = result == 0
    if not zero.any():
        return result
    signed = np.where(negative(), result.dtype.type(-0.0), result.dtype.type(0.0))
    return np.where(zero, signed, result).astype(result.dtype, copy=False)


def combine(combiner: str, current: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``current`` accumulated with ``values`` elementwise by ``combiner`` (``=``
    replaces it)."""
    if combiner == "=":
        return values
    if combiner == "+=":
        return current + values
    if combiner == "max=":
        result = np.maximum(current, values)
        # a zero maximum is -0.0 only when both are -0.0 (or one is negative)
        return _signed_zeros(result, lambda: np.signbit(current) & np.signbit(values))
    if combiner == "min=":
        result = np.minimum(current, values)
        return _signed_zeros(result, lambda: np.signbit(current) | np.signbit(values))
    raise ValueError(f"unknown combiner '{combiner}'")


def reduce(combiner: str, values: np.ndarray, axis) -> np.ndarray:
    """``values`` reduced along ``axis`` (an int or a tuple) by ``combiner``."""
    values = np.asarray(values)
    if combiner in ("=", "+="):
        return np.sum(values, axis=axis)
    if combiner == "max=":
        result = np.max(values, axis=axis)
        return _signed_zeros(result, lambda: ~np.any((values == 0) & ~np.signbit(values), axis=axis))
    if combiner == "min=":
        result = np.min(values, axis=axis)
        return _signed_zeros(result, lambda: np.any((values == 0) & np.signbit(values), axis=axis))
    raise ValueError(f"unknown combiner '{combiner}'")


def scatter(combiner: str, output: np.ndarray, index, values: np.ndarray, zeros: np.ndarray | None) -> None:
    """``values`` combined into ``output[index]`` in place, repeated indices combining
    too (``ufunc.at``). For ``max=``/``min=`` on floats, ``zeros`` (a bool array of
    ``output``'s shape) records where a +0.0 (``max=``) or -0.0 (``min=``) arrived, for
    `fix_scattered_zeros`."""
    if combiner == "=":
        output[index] = values
    elif combiner == "+=":
        np.add.at(output, index, values)
    else:
        (np.maximum if combiner == "max=" else np.minimum).at(output, index, values)
        if zeros is not None:
            wanted = (values == 0) & (np.signbit(values) == (combiner == "min="))
            if wanted.any():
                np.logical_or.at(zeros, index, wanted)


def fix_scattered_zeros(combiner: str, output: np.ndarray, zeros: np.ndarray, reached: np.ndarray) -> None:
    """Give the zeros `scatter` left in ``output`` (where ``reached``) their sign:
    ``max=`` +0.0 where a +0.0 arrived, else -0.0; ``min=`` -0.0 where a -0.0 did."""
    zero = (output == 0) & reached
    if zero.any():
        positive = zeros if combiner == "max=" else ~zeros
        output[zero] = np.where(positive[zero], output.dtype.type(0.0), output.dtype.type(-0.0))


def convert(values: np.ndarray, dtype) -> np.ndarray:
    """``values`` stored as ``dtype``: floats into an integer type by `float_to_int`,
    booleans as nonzero, anything else as numpy converts (integers wrap, floats round)."""
    values, dtype = np.asarray(values), np.dtype(dtype)
    if values.dtype.kind == "f" and dtype.kind in "iu":
        return float_to_int(values, dtype)
    if dtype.kind == "b" and values.dtype.kind != "b":
        return values != 0
    with np.errstate(over="ignore", invalid="ignore"):   # IEEE: a float beyond the type is inf
        return values.astype(dtype)


def fill_value(value: float, dtype):
    """A fill's (or a store's) f64 ``value`` as an element of ``dtype`` (`convert`: an
    integer buffer saturates, e.g. an int64 ``min=`` accumulator's identity, whose f64
    form is 2**63)."""
    return convert(np.float64(value), dtype)[()]
