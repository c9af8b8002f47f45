"""Hypothesis strategies: random te operators and random *legal* compute-shift plans."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from irc.dialects.te_expr import parse_expression
from irc.planner import Plan

DEVICES = ("tiny4", "tiny8", "tiny16")
KINDS = ("matmul", "batched", "conv", "pad", "elementwise", "sum", "max")


@st.composite
def operators(draw, kinds=KINDS):
    """(bound expression, input shapes) of a small operator of a random kind."""
    kind = draw(st.sampled_from(kinds))
    e = lambda hi=8: draw(st.integers(1, hi))  # noqa: E731
    if kind == "matmul":
        m, k, n = e(), e(9), e()
        text, shapes, out = "C[m,n] += A[m,k] * B[k,n]", [(m, k), (k, n)], (m, n)
    elif kind == "batched":
        b, m, k, n = e(3), e(5), e(6), e(5)
        text, shapes, out = "C[b,m,n] += A[b,m,k] * B[b,k,n]", [(b, m, k), (b, k, n)], (b, m, n)
    elif kind == "conv":
        stride = draw(st.sampled_from([1, 2]))
        b, f, c, h, w, r = e(2), e(4), e(3), e(4), e(4), draw(st.integers(1, 3))
        hin, win = stride * (h - 1) + r, stride * (w - 1) + r
        text = f"Y[b,f,h,w] += X[b,c,{stride}*h+r,{stride}*w+s] * W[f,c,r,s]" if stride > 1 else \
            "Y[b,f,h,w] += X[b,c,h+r,w+s] * W[f,c,r,s]"
        shapes, out = [(b, c, hin, win), (f, c, r, r)], (b, f, h, w)
    elif kind == "pad":
        c, h, w = e(3), e(6), e(6)
        text, shapes, out = "P[c,h+1,w+1] = X[c,h,w]", [(c, h, w)], (c, h + 2, w + 2)
    elif kind == "elementwise":
        i, j = e(9), e(9)
        body = draw(st.sampled_from(["relu(A[i,j]) + B[i,j]", "A[i,j] * B[i,j] - 2", "max(A[i,j], B[i,j])"]))
        text, shapes, out = f"C[i,j] = {body}", [(i, j), (i, j)], (i, j)
    elif kind == "sum":
        i, j = e(9), e(9)
        text, shapes, out = "Y[i] += X[i,j]", [(i, j)], (i,)
    else:
        i, j = e(9), e(9)
        text, shapes, out = "Y[i] max= X[i,j]", [(i, j)], (i,)
    return parse_expression(text).bind(shapes, out), shapes


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@st.composite
def legal_plans(draw, spec, cores: int):
    """A plan satisfying the T10 constraints (most draws; callers check with check_plan):
    F_op within the core budget and the extents, f_t dividing each tensor's sharing count,
    per-axis factors drawn from a divisibility chain."""
    axes = spec.axis_names
    factors, budget = [], cores
    for extent in spec.extents:
        f = draw(st.integers(1, max(1, min(extent, budget))))
        factors.append(f)
        budget //= f
    per_core = [-(-e // f) for e, f in zip(spec.extents, factors)]
    temporal = {}
    for tensor in spec.tensors:
        sharing = math.prod(f for a, f in zip(axes, factors) if not tensor.indexed_by(a))
        remaining = sharing
        row = [1] * len(axes)
        for d in draw(st.permutations(list(range(len(axes))))):
            if not tensor.indexed_by(axes[d]):
                continue
            options = [x for x in _divisors(remaining) if x <= per_core[d]]
            pick = draw(st.sampled_from(options))
            row[d] = pick
            remaining //= pick
        temporal[tensor.name] = tuple(row)
    return Plan(axes, tuple(factors), temporal)


def random_inputs(bound, shapes, dtype, seed: int):
    rng = np.random.default_rng(seed)
    return {name: rng.standard_normal(shape).astype(dtype) for name, shape in zip(bound.expr.inputs, shapes)}


def run_kernel(kernel, inputs: dict, device, cost):
    """Execute ``kernel`` (a built ``ShiftKernel`` for ``device``) the one way programs run:
    as an aligned ``shift.kernel`` in a module targeting its device, lowered to its device
    program and run on the interpreter. Returns the output and the chip report."""
    from irc.interpreter.registry import chips_of
    from irc.lowering.shift_ir import kernel_module
    from irc.runner import device_program, interpreter_for

    expr = kernel.bound.expr
    module = kernel_module(kernel, {n: np.asarray(inputs[n]).dtype for n in expr.inputs},
                           cost if isinstance(cost, str) else cost.name)
    interpreter = interpreter_for(device_program(module))
    (result,) = interpreter.call_op("main", tuple(np.asarray(inputs[n]) for n in expr.inputs))
    (chip,) = chips_of(interpreter)
    return np.asarray(result), chip.report()


F32_ROUNDOFF = 2.0 ** -24


def one_rounding_bound(bound, inputs, device_result, te_result) -> np.ndarray:
    """Per element, how far a chip result may lie from te's under the numerics contract
    (README, "Numerics of the interpreter"): one ulp of the output type at the larger of
    the two values, plus twice the f32 error bound ``gamma_n * S`` of summing the ``n``
    reduced terms in any order (``S``: the expression evaluated on |inputs|)."""
    from irc.interpreter.te_eval import evaluate

    dtype = np.dtype(te_result.dtype)
    larger = np.maximum(np.abs(device_result.astype(np.float64)), np.abs(te_result.astype(np.float64)))
    ulp = np.spacing(larger.astype(dtype)).astype(np.float64)
    terms = math.prod(bound.extent[a] for a in bound.expr.reduction_axes)
    gamma = terms * F32_ROUNDOFF / (1 - terms * F32_ROUNDOFF)
    magnitude = evaluate(bound, [np.abs(inputs[n]).astype(np.float64) for n in bound.expr.inputs], np.float64)
    return ulp + 2 * gamma * np.abs(magnitude)
