"""The te interpreter against independent formulations: einsum and explicit loops."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from irc.dialects.te_expr import Access, Binary, Call, Const, parse_expression
from irc.interpreter.te_eval import erf, evaluate


def _loop_reference(text, inputs, out_shape):
    """Evaluate an expression with explicit Python loops: the definition itself."""
    expr = parse_expression(text)
    bound = expr.bind([a.shape for a in inputs], out_shape)
    arrays = dict(zip(expr.inputs, (a.astype(np.float64) for a in inputs)))
    names, extents = zip(*bound.extents) if bound.extents else ((), ())
    fold = {"=": None, "+=": lambda a, b: a + b, "max=": max, "min=": min}[expr.combiner]
    out = {}

    def index_of(access, point):
        return tuple(
            sum(c * point[a] for a, c in i.terms) + i.constant for i in access.indices
        )

    def value(node, point):
        if isinstance(node, Const):
            return node.value
        if isinstance(node, Access):
            return float(arrays[node.tensor][index_of(node, point)])
        if isinstance(node, Call):
            args = [value(a, point) for a in node.args]
            return {
                "relu": lambda x: max(x, 0.0), "exp": math.exp, "tanh": math.tanh,
                "neg": lambda x: -x, "sigmoid": lambda x: 1 / (1 + math.exp(-x)),
                "erf": math.erf, "gelu": lambda x: 0.5 * x * (1 + math.erf(x / math.sqrt(2))),
                "abs": abs, "max": max, "min": min,
            }[node.function](*args)
        lhs, rhs = value(node.lhs, point), value(node.rhs, point)
        return {"+": lhs + rhs, "-": lhs - rhs, "*": lhs * rhs, "/": lhs / rhs if rhs else math.inf}[node.op]

    for values in itertools.product(*(range(e) for e in extents)):
        point = dict(zip(names, values))
        key = index_of(expr.output, point)
        v = value(expr.body, point)
        out[key] = v if fold is None or key not in out else fold(out[key], v)
    result = np.zeros(out_shape)
    for key, v in out.items():
        result[key] = v
    return result


CASES = [
    ("C[m,n] += A[m,k] * B[k,n]", [(3, 4), (4, 5)], (3, 5)),
    ("C[b,m,n] += A[b,m,k] * B[b,k,n] * 0.5", [(2, 3, 4), (2, 4, 2)], (2, 3, 2)),
    ("Y[n,f,h,w] += X[n,c,2*h+r,w+s] * W[f,c,r,s]", [(1, 2, 7, 5), (3, 2, 3, 2)], (1, 3, 3, 4)),
    ("P[c,h+1,w+1] = X[c,h,w]", [(2, 3, 3)], (2, 5, 5)),
    ("Y[h] max= X[2*h+r] where r in 3", [(9,)], (4,)),
    ("M[i] min= X[i,j] - B[j]", [(3, 4), (4,)], (3,)),
    ("T[] += X[i,j] * X[i,j]", [(3, 4)], ()),
    ("Y[i,j] = gelu(X[i,j]) + tanh(B[j]) / (1 + exp(-X[i,j]))", [(3, 4), (4,)], (3, 4)),
    ("Y[j,i] = X[i,j]", [(3, 4)], (4, 3)),
    ("Y[i] = X[3-i]", [(4,)], (4,)),
    ("Y[i,j] = relu(X[i] - X[j]) * 2", [(4,)], (4, 4)),
    ("Y[i] += X[i] where j in 3", [(4,)], (4,)),
]


def test_reference_cases():
    rng = np.random.default_rng(1)
    for text, shapes, out_shape in CASES:
        inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        expr = parse_expression(text)
        bound = expr.bind(shapes, out_shape)
        got = evaluate(bound, inputs, np.dtype(np.float32))
        want = _loop_reference(text, inputs, out_shape)
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5, err_msg=text)


@st.composite
def contractions(draw):
    """Random products of up to 3 tensors over up to 4 axes, summed or elementwise."""
    axes = ["i", "j", "k", "l"][: draw(st.integers(1, 4))]
    extent = {a: draw(st.integers(1, 4)) for a in axes}
    tensors = []
    for name in ["A", "B", "C"][: draw(st.integers(1, 3))]:
        used = draw(st.lists(st.sampled_from(axes), min_size=0, max_size=3, unique=True))
        tensors.append((name, used))
    read = {a for _, used in tensors for a in used}
    out = draw(st.permutations(sorted(read)).map(lambda p: list(p)[: draw(st.integers(0, len(p)))]))
    body = " * ".join(f"{n}[{','.join(u)}]" for n, u in tensors)
    combiner = "+=" if read - set(out) else "="
    text = f"Y[{','.join(out)}] {combiner} {body}"
    shapes = [tuple(extent[a] for a in used) for _, used in tensors]
    subscripts = ",".join("".join(used) for _, used in tensors) + "->" + "".join(out)
    return text, shapes, tuple(extent[a] for a in out), subscripts


@given(contractions(), st.integers(0, 2**16))
def test_contractions_match_einsum(case, seed):
    text, shapes, out_shape, subscripts = case
    rng = np.random.default_rng(seed)
    inputs = [rng.standard_normal(s) for s in shapes]
    expr = parse_expression(text)
    # Repeated tensor names in one body collapse to one operand: skip those cases.
    if len(expr.inputs) != len(shapes):
        return
    got = evaluate(expr.bind(shapes, out_shape), inputs, np.dtype(np.float64))
    np.testing.assert_allclose(got, np.einsum(subscripts, *inputs), rtol=1e-10, atol=1e-10)
    loops = _loop_reference(text, inputs, out_shape)
    np.testing.assert_allclose(got, loops, rtol=1e-10, atol=1e-10)


@given(
    st.sampled_from(["+=", "max=", "min="]),
    st.integers(1, 3), st.integers(1, 3), st.integers(1, 4), st.integers(1, 2),
    st.integers(0, 2**16),
)
def test_strided_windows_match_loops(combiner, window, stride, out_len, channels, seed):
    text = f"Y[c,h] {combiner} X[c,{stride}*h+r] * 1.5 where r in {window}"
    in_len = stride * (out_len - 1) + window
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((channels, in_len))
    expr = parse_expression(text)
    got = evaluate(expr.bind([x.shape], (channels, out_len)), [x], np.dtype(np.float64))
    np.testing.assert_allclose(got, _loop_reference(text, [x], (channels, out_len)), rtol=1e-12)


def test_f16_accumulates_in_f32():
    # 4096 ones summed: f16 accumulation would stall at 2048.
    x = np.ones((1, 4096), dtype=np.float16)
    w = np.ones((4096, 1), dtype=np.float16)
    expr = parse_expression("C[m,n] += A[m,k] * B[k,n]")
    got = evaluate(expr.bind([x.shape, w.shape], (1, 1)), [x, w], np.dtype(np.float16))
    assert got.dtype == np.float16 and float(got[0, 0]) == 4096.0


def test_erf_accuracy():
    xs = np.linspace(-5, 5, 2001)
    np.testing.assert_allclose(erf(xs), [math.erf(x) for x in xs], atol=2e-7)


def test_every_function_of_the_language_has_semantics():
    from irc.dialects.te_expr import FUNCTION_ARITY
    from irc.interpreter.te_eval import _FUNCTIONS

    assert set(FUNCTION_ARITY) - {"cast"} == set(_FUNCTIONS)


@pytest.mark.parametrize("row_points, chunk_points", [(1 << 26, 1 << 22), (64, 8), (8, 2), (5, 1)])
@pytest.mark.parametrize("expression, shapes, out_shape", [
    # a batch of one leads (BERT's projections as exported: the first axis is 1), a window write
    ("C[b,m,n] += relu(A[b,m,k]) * B[k,n]", [(1, 6, 5), (5, 7)], (1, 6, 7)),
    ("C[b,m,n] max= A[b,m,k] * B[k,n] + 1.0", [(2, 3, 4), (4, 5)], (2, 3, 5)),
    ("Y[b,i,j] = exp(X[b,i,j]) / 4.0", [(1, 9, 8)], (1, 9, 8)),
    ("Y[b,i+1,j] = X[b,i,j] * 2.0", [(1, 4, 3)], (1, 6, 3)),
])
def test_the_general_path_chunks_inside_a_leading_axis_of_one(monkeypatch, row_points, chunk_points,
                                                               expression, shapes, out_shape):
    """BERT's exported MatMul of a batch of one over 128x768x768 points was refused (`iterates
    over 75497472 points per element of its first axis`) once the general path bounded its
    row: it now chunks along the first axis whose inner points fit, the axes before it one
    value at a time, computing what it computes in one chunk."""
    from irc.dialects.te_expr import parse_expression
    from irc.interpreter import te_eval

    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    bound = parse_expression(expression).bind(shapes, out_shape)
    whole = te_eval.evaluate(bound, inputs, np.dtype(np.float32))
    monkeypatch.setattr(te_eval, "MAX_ROW_POINTS", row_points)
    monkeypatch.setattr(te_eval, "_CHUNK_POINTS", chunk_points)
    assert te_eval.evaluation_limit(bound) is None
    np.testing.assert_allclose(te_eval.evaluate(bound, inputs, np.dtype(np.float32)), whole, rtol=1e-6, atol=1e-6)


def test_a_reduction_beyond_the_row_bound_per_output_element_is_refused(monkeypatch):
    from irc.dialects.te_expr import parse_expression
    from irc.interpreter import te_eval

    bound = parse_expression("C[m] += relu(A[m,k])").bind([(3, 40)], (3,))
    monkeypatch.setattr(te_eval, "MAX_ROW_POINTS", 16)
    assert te_eval.evaluation_limit(bound) == ("iterates over 40 points per element of its output; the interpreter "
                                               "holds at most 16 (2**26) at once")
