"""Reference semantics of a bound tensor expression, computed with numpy.

Two paths compute the same thing:

* **einsum** when the body is a product of reads (times constants) indexed by plain
  axes and the combiner sums (or is ``=``): one `np.einsum` call;
* **general** otherwise: the iteration space is materialised with broadcast index
  grids (affine indices become integer arithmetic on them), the body is evaluated
  elementwise, then combined into the output with the combiner. The space is cut into
  chunks along the output's first axis so memory stays bounded.

Numerics: f16 inputs are computed and accumulated in f32 and rounded to f16 once at
the end (as the IPU's AMP units accumulate f16 products in f32); f32 in f32, f64 in
f64, integers in int64 (each body value wrapped into the output's type), booleans as
integers. Comparisons yield booleans, integer division truncates toward zero (C, ONNX;
``x / 0`` is 0), ``cast(x)`` rounds x through the result's storage type; reductions,
identities and float-to-integer conversions are `irc.interpreter.numerics`'. An
indirect index outside its dimension is an `InterpretationError`.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from xdsl.interpreter import InterpretationError

from irc.interpreter import numerics
from irc.dialects.te_expr import (
    Access,
    Binary,
    BoundExpr,
    Call,
    Const,
    Expr,
    IndirectIndex,
    fold,
    walk_accesses,
    walk_nodes,
)

# Elements of the iteration space materialised at once by the general path.
_CHUNK_POINTS = 1 << 22

_SQRT_HALF = 1.0 / math.sqrt(2.0)


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype arithmetic happens in for a tensor stored as `dtype`."""
    dtype = np.dtype(dtype)
    if dtype == np.float16 or dtype == np.float32:
        return np.dtype(np.float32)
    if dtype.kind == "f":
        return np.dtype(np.float64)
    return np.dtype(np.int64)


def erf(x: np.ndarray) -> np.ndarray:
    """Error function, |error| < 1.2e-7 (Numerical Recipes' erfc Chebyshev fit).

    numpy has no erf and scipy is not a dependency; this fit is accurate to f32
    rounding, which is what every consumer of it computes in.
    """
    x = np.asarray(x, dtype=np.float64)
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -z * z - 1.26551223 + t * (
        1.00002368
        + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807
        + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))
    )
    erfc = t * np.exp(poly)
    return np.where(x >= 0, 1.0 - erfc, erfc - 1.0)


def _float_result(x: np.ndarray, value: np.ndarray) -> np.ndarray:
    return value.astype(np.result_type(x, np.float32))


# Every function of the expression language, as numpy on already-evaluated arguments.
_FUNCTIONS = {
    "relu": lambda x: np.maximum(x, 0),
    "exp": np.exp,
    "log": np.log,
    "tanh": np.tanh,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "erf": lambda x: _float_result(x, erf(x)),
    "gelu": lambda x: _float_result(x, 0.5 * x * (1.0 + erf(x * _SQRT_HALF))),
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "neg": np.negative,
    "abs": np.abs,
    "max": np.maximum,
    "min": np.minimum,
    "pow": lambda base, exponent: _power(base, exponent),
    "mod": np.mod,
    "fmod": np.fmod,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.round,
    "sign": np.sign,
    "isnan": np.isnan,
    "isinf": np.isinf,
    "not": np.logical_not,
    "and": np.logical_and,
    "or": np.logical_or,
    "xor": np.logical_xor,
    "select": lambda condition, a, b: np.where(np.asarray(condition) != 0, a, b),
}


def _power(base, exponent) -> np.ndarray:
    """``base ** exponent``; an integer to a negative integer power truncates as C's
    and ONNX's do (1 for a base of 1, +-1 for -1, else 0) where numpy refuses it."""
    base, exponent = np.asarray(base), np.asarray(exponent)
    if base.dtype.kind in "iub" and exponent.dtype.kind in "iub":
        negative = exponent < 0
        if negative.any():
            powers = np.power(base, np.where(negative, 0, exponent))
            inverse = np.where(base == 1, 1, np.where(base == -1, np.where(exponent % 2 == 0, 1, -1), 0))
            return np.where(negative, inverse, powers)
    return np.power(base, exponent)


def _apply(function: str, args: list[np.ndarray]) -> np.ndarray:
    if function not in _FUNCTIONS:
        raise ValueError(f"unknown function '{function}'")  # the verifier rejects it first
    return _FUNCTIONS[function](*args)


def _einsum_factors(body: Expr) -> list[Expr] | None:
    """The factors of a pure product body, or None if it is anything else."""
    if isinstance(body, Binary) and body.op == "*":
        left, right = _einsum_factors(body.lhs), _einsum_factors(body.rhs)
        return None if left is None or right is None else left + right
    if isinstance(body, Access) and all(i.simple_axis for i in body.indices):
        return [body]
    if isinstance(body, Const):
        return [body]
    return None


def evaluate(
    bound: BoundExpr, inputs: list[np.ndarray], out_dtype: np.dtype, storage: np.dtype | None = None
) -> np.ndarray:
    """The output tensor of `bound` applied to `inputs` (in operand order), as
    ``out_dtype``. ``storage`` is the op's own element type when ``out_dtype`` is a
    wider accumulator (a chip's partial sums): ``cast`` and a float stored into an
    integer output convert through it (`irc.interpreter.numerics`).

    Arithmetic follows IEEE 754 (x/0 is inf, 0/0 is NaN, as on the chip and in ONNX),
    so numpy's warnings about it are silenced rather than printed.
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return _evaluate(bound, inputs, np.dtype(out_dtype), np.dtype(storage or out_dtype))


def _evaluate(bound: BoundExpr, inputs: list[np.ndarray], out_dtype: np.dtype, storage: np.dtype) -> np.ndarray:
    expr = bound.expr
    work = compute_dtype(out_dtype)
    arrays = {
        name: np.asarray(a).astype(compute_dtype(np.asarray(a).dtype), copy=False)
        for name, a in zip(expr.inputs, inputs)
    }
    out_shape = bound.shapes[expr.output.tensor]
    factors = _einsum_plan(bound)
    if factors is not None:
        result = _evaluate_einsum(bound, factors, arrays, work, storage)
    else:
        result = _evaluate_general(bound, arrays, work, out_shape, storage)
    return numerics.convert(result, out_dtype)


def _einsum_plan(bound: BoundExpr) -> list[Expr] | None:
    """The factors `bound` is computed from by one einsum, or None when it takes the
    general path."""
    expr = bound.expr
    factors = _einsum_factors(expr.body)
    extent = bound.extent
    if (
        factors is not None
        # einsum needs every dimension to be its axis's whole extent (no windows)
        and all(
            bound.shapes[access.tensor][d] == extent[index.simple_axis]
            for access in (expr.output, *(f for f in factors if isinstance(f, Access)))
            for d, index in enumerate(access.indices)
            if index.simple_axis
        )
        and expr.combiner in ("=", "+=")
        and all(i.simple_axis for i in expr.output.indices)
        and any(isinstance(f, Access) for f in factors)
    ):
        return factors
    return None


MAX_GENERAL_POINTS = 1 << 30
"""Most iteration points the general path evaluates for one op (about a minute of
numpy); a product of plain reads (the einsum path) has no such bound."""
MAX_GENERAL_WORK = 1 << 31
"""Most node evaluations (iteration points times the nodes of the body: each is one
numpy pass) the general path does for one op."""
MAX_ROW_POINTS = 1 << 26
"""Most iteration points inside one element of the axis the general path chunks along
(its smallest chunk: the memory of its intermediates). It chunks along the first axis
whose inner axes hold at most this many points (`_chunk_axis`), iterating the axes
before it one value at a time; writing output rows in place, it chunks only along
output axes, so a reduction of more points than this per output element is refused."""


def _chunk_axis(extents) -> int:
    """The axis the general path chunks along: the first whose inner axes hold at most
    `MAX_ROW_POINTS` points (the last axis at worst)."""
    return next(c for c in range(len(extents)) if math.prod(extents[c + 1:]) <= MAX_ROW_POINTS)


def _leading_output_axes(bound: BoundExpr) -> int | None:
    """How many axes the output's plain indices name, when they lead the iteration space
    in order (the general path then reduces the rest in place); None otherwise."""
    output_axes = [i.simple_axis for i in bound.expr.output.indices]
    axes = [a for a, _ in bound.extents]
    return len(output_axes) if all(output_axes) and output_axes == axes[: len(output_axes)] else None


def evaluation_limit(bound: BoundExpr) -> str | None:
    """Why the interpreter will not evaluate `bound` (the general path's time and memory
    are bounded: `MAX_GENERAL_POINTS`, `MAX_ROW_POINTS`), or None when it will."""
    if _einsum_plan(bound) is not None:
        return None
    extents = [e for _, e in bound.extents]
    points = math.prod(extents)
    if points > MAX_GENERAL_POINTS:
        return (f"iterates over {points} points; the interpreter evaluates at most {MAX_GENERAL_POINTS} (2**30) "
                f"for an op that is not a product of plain reads")
    nodes = sum(1 for _ in walk_nodes(bound.expr.body))
    if points * nodes > MAX_GENERAL_WORK:
        return (f"evaluates its body of {nodes} nodes at {points} points ({points * nodes} evaluations); the "
                f"interpreter does at most {MAX_GENERAL_WORK} (2**31) for an op that is not a product of plain reads")
    rank = _leading_output_axes(bound)
    if rank and math.prod(extents[rank:]) > MAX_ROW_POINTS:
        return (f"iterates over {math.prod(extents[rank:])} points per element of its output; the interpreter "
                f"holds at most {MAX_ROW_POINTS} (2**26) at once")
    return None


def _evaluate_einsum(bound, factors, arrays, work, out_dtype) -> np.ndarray:
    letters = {axis: chr(ord("a") + i) for i, (axis, _) in enumerate(bound.extents)}
    if len(letters) > 52:
        raise ValueError("too many axes for einsum")
    scale = 1.0
    operands, subscripts = [], []
    for factor in factors:
        if isinstance(factor, Const):
            scale *= factor.value
            continue
        operands.append(arrays[factor.tensor])
        subscripts.append("".join(letters[i.simple_axis] for i in factor.indices))
    out_axes = [i.simple_axis for i in bound.expr.output.indices]
    read = "".join(subscripts)
    # Output axes no input reads broadcast the result along them (``O[n0,n1] = A[n1]``).
    computed = "".join(letters[a] for a in out_axes if letters[a] in read)
    # Axes read by no tensor still count iterations (e.g. `Y[i] += X[i] where j in 3`).
    unread = [a for a, _ in bound.extents if letters[a] not in read and a not in out_axes]
    result = np.einsum(f"{','.join(subscripts)}->{computed}", *operands, optimize=len(operands) > 2)
    if len(computed) != len(out_axes):
        shape = [bound.extent[a] if letters[a] in read else 1 for a in out_axes]
        result = np.broadcast_to(np.reshape(result, shape), [bound.extent[a] for a in out_axes])
    multiplicity = math.prod(bound.extent[a] for a in unread)
    result = _as_work(result, work, out_dtype).astype(work, copy=False)
    if scale != 1.0 or multiplicity != 1:
        factor = scale * multiplicity
        # integer arithmetic wraps as the chip's does; a factor beyond int64 scales in f64
        exact = work.kind == "f" or (float(factor).is_integer() and -(2**63) <= factor < 2**63)
        result = result * (work.type(factor) if exact else np.float64(factor))
    return result


def _evaluate_general(bound, arrays, work, out_shape, out_dtype) -> np.ndarray:
    limit = evaluation_limit(bound)
    if limit is not None:  # `irc.runner` refuses such an op, located, before anything runs
        raise InterpretationError(f"'{bound.expr}' {limit}")
    expr = bound.expr
    axes = [a for a, _ in bound.extents]
    extents = [e for _, e in bound.extents]
    combiner = expr.combiner
    output = np.full(out_shape, numerics.reduction_identity(combiner, work), dtype=work)
    touched = np.zeros(out_shape, dtype=bool) if combiner in numerics.ORDERED else None

    output_axes = [i.simple_axis for i in expr.output.indices]
    plain_output = (
        all(output_axes)
        and output_axes == axes[: len(output_axes)]
        and tuple(out_shape) == tuple(extents[: len(output_axes)])  # no window writes
    )
    # Chunk along one axis (`_chunk_axis`, an output axis on the in-place path) so that
    # one chunk holds about _CHUNK_POINTS points; the axes before it take one value at a time.
    chunk = _chunk_axis(extents) if axes else 0
    if plain_output and len(out_shape) and chunk >= len(out_shape):
        plain_output = False   # (refused by `evaluation_limit` when the output axes lead)
    # where a zero of the sign max=/min= prefers arrived (`numerics.scatter`)
    zeros = None if plain_output or touched is None or work.kind != "f" else np.zeros(out_shape, dtype=bool)
    rest = math.prod(extents[chunk + 1:]) if axes else 1
    step = max(1, _CHUNK_POINTS // max(rest, 1)) if axes else 1
    chunk_extent = extents[chunk] if axes else 1
    chunks = ((outer, start) for outer in itertools.product(*(range(e) for e in extents[:chunk]))
              for start in range(0, chunk_extent, step))
    for outer, start in chunks:
        stop = min(chunk_extent, start + step)
        grids, space = {}, []
        for position, (axis, extent) in enumerate(zip(axes, extents)):
            shape = [1] * len(axes)
            if position < chunk:
                values = np.arange(outer[position], outer[position] + 1)
            elif position == chunk:
                values = np.arange(start, stop)
            else:
                values = np.arange(extent)
            shape[position] = len(values)
            space.append(len(values))
            grids[axis] = values.reshape(shape)
        space = tuple(space)
        # the output rows of this chunk, as a view keeping every dimension
        rows = tuple(slice(o, o + 1) for o in outer) + (slice(start, stop),)
        body = _eval_body(expr.body, grids, arrays, work, out_dtype, bound.shapes)
        values = np.broadcast_to(_as_work(body, work, out_dtype), space)
        if plain_output:
            # Output axes lead the iteration space in output order: reduce the rest.
            rank = len(out_shape)
            reduced = values
            if rank < len(axes):
                reduced = numerics.reduce(combiner, values, tuple(range(rank, len(axes))))
            window = output[rows] if rank else output
            window[...] = numerics.combine(combiner, window, reduced)
            if touched is not None:
                (touched[rows] if rank else touched)[...] = True
            continue
        out_index = tuple(
            np.broadcast_to(_index_values(index, grids, arrays, bound.shapes, None, 0), space)
            for index in expr.output.indices
        )
        numerics.scatter(combiner, output, out_index, values, zeros)
        if touched is not None:
            touched[out_index] = True
    if zeros is not None:
        numerics.fix_scattered_zeros(combiner, output, zeros, touched)
    if touched is not None:
        # Elements no iteration point reached hold 0, like the other combiners.
        output[~touched] = 0
    return output


def _as_work(values: np.ndarray, work: np.dtype, out_dtype: np.dtype) -> np.ndarray:
    """A body's values in the output's compute type, each first an element of the
    output's own type: a float into an integer output converts as
    ``numerics.float_to_int`` (saturating there), an integer wraps into a narrower
    integer output (so ``max=`` compares what a sum would wrap to), then widens."""
    values = np.asarray(values)
    if work.kind not in "iu":
        return values
    if values.dtype.kind == "f":
        return numerics.convert(values, out_dtype if out_dtype.kind in "iu" else work).astype(work)
    if out_dtype.kind in "iu" and out_dtype.itemsize < work.itemsize:
        return values.astype(out_dtype).astype(work)
    return values


def _index_values(index, grids, arrays, shapes, tensor, dim) -> np.ndarray:
    if isinstance(index, IndirectIndex):
        inner = index.access
        positions = tuple(
            _index_values(i, grids, arrays, shapes, inner.tensor, d)
            for d, i in enumerate(inner.indices)
        )
        value = np.asarray(arrays[inner.tensor][positions] if positions else arrays[inner.tensor][()])
        size = shapes[tensor][dim]
        if value.size and (value.min() < 0 or value.max() >= size):
            bad = value[(value < 0) | (value >= size)].flat[0]
            raise InterpretationError(
                f"indirect index {inner} of {tensor} (dim {dim}) is {bad}, outside [0, {size})"
            )
        return value
    value = np.asarray(index.constant)
    for axis, coeff in index.terms:
        value = value + coeff * grids[axis]
    return value


def _divide(lhs, rhs, work):
    if lhs.dtype.kind in "iub" and rhs.dtype.kind in "iub":
        # C/ONNX integer division truncates toward zero.
        quotient = np.floor_divide(lhs, rhs)
        inexact = (np.mod(lhs, rhs) != 0) & ((lhs < 0) != (rhs < 0))
        return quotient + inexact
    return lhs / rhs


def _eval_body(expr: Expr, grids, arrays, work, out_dtype, shapes) -> np.ndarray:
    # Children first with an explicit stack (`fold`): bodies of any depth evaluate.
    def visit(node, operands):
        return np.asarray(_eval_node(node, operands, grids, arrays, work, out_dtype, shapes))

    return fold(expr, visit)


def _eval_node(expr: Expr, operands, grids, arrays, work, out_dtype, shapes) -> np.ndarray:
    if isinstance(expr, Const):
        # an integer constant in integer arithmetic (one beyond int64, such as pow's
        # exponent or select's condition, whose type nothing fixes, computes in f64)
        if work.kind != "f" and float(expr.value).is_integer() and -(2**63) <= expr.value < 2**63:
            return np.asarray(int(expr.value), dtype=np.int64)
        return np.asarray(expr.value, dtype=work if work.kind == "f" else np.float64)
    if isinstance(expr, Access):
        index = tuple(
            _index_values(i, grids, arrays, shapes, expr.tensor, d)
            for d, i in enumerate(expr.indices)
        )
        return arrays[expr.tensor][index] if index else arrays[expr.tensor][()]
    if isinstance(expr, Call):
        args = operands
        if expr.function == "cast":
            return numerics.convert(args[0], out_dtype).astype(compute_dtype(out_dtype))
        return _apply(expr.function, args)
    lhs, rhs = operands
    match expr.op:
        case "+":
            return lhs + rhs
        case "-":
            return lhs - rhs
        case "*":
            return lhs * rhs
        case "/":
            return _divide(lhs, rhs, work)
        case "<":
            return lhs < rhs
        case "<=":
            return lhs <= rhs
        case ">":
            return lhs > rhs
        case ">=":
            return lhs >= rhs
        case "==":
            return lhs == rhs
        case "!=":
            return lhs != rhs
    raise ValueError(f"unknown operator '{expr.op}'")  # the parser admits no other

__all__ = ["evaluate", "compute_dtype", "erf", "walk_accesses"]
