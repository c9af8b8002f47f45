"""The te-language extensions the ONNX frontend needs, against numpy: comparisons,
select, cast, i1 logic, NaN guards, integer division, indirect indices, row-major
merged output indices, where-bound windows; and the element-type rule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.interpreter import InterpretationError

from irc.dialects.te_expr import ExprError, IndirectIndex, parse_expression
from irc.interpreter.te_eval import evaluate
from irc.runner import parse_module, run_function


def _eval(text, inputs, out_shape, out_dtype):
    expr = parse_expression(text)
    bound = expr.bind([np.shape(a) for a in inputs], out_shape)
    return evaluate(bound, [np.asarray(a) for a in inputs], np.dtype(out_dtype))


RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal(4).astype(np.float32)


@pytest.mark.parametrize("op, ufunc", [
    ("<", np.less), ("<=", np.less_equal), (">", np.greater),
    (">=", np.greater_equal), ("==", np.equal), ("!=", np.not_equal),
])
def test_comparisons_yield_booleans(op, ufunc):
    got = _eval(f"Y[i,j] = A[i,j] {op} B[j]", [X, B], (3, 4), bool)
    assert got.dtype == bool
    np.testing.assert_array_equal(got, ufunc(X, B))


def test_select_with_nan_guard_and_logic():
    x = X.copy()
    x[0, 1] = np.nan
    mask = X > 0
    got = _eval("Y[i,j] = select(and(M[i,j], not(isnan(A[i,j]))), A[i,j], -1)", [mask, x], (3, 4), np.float32)
    np.testing.assert_array_equal(got, np.where(mask & ~np.isnan(x), x, -1))
    got = _eval("Y[i,j] = xor(M[i,j], or(M[i,j], N[i,j]))", [mask, ~mask], (3, 4), bool)
    np.testing.assert_array_equal(got, mask ^ (mask | ~mask))


def test_cast_rounds_through_the_result_type():
    values = np.array([-2.7, -0.5, 0.0, 1.9, 3.5], np.float32)
    np.testing.assert_array_equal(_eval("Y[i] = cast(A[i])", [values], (5,), np.int64), values.astype(np.int64))
    np.testing.assert_array_equal(_eval("Y[i] = cast(A[i])", [values], (5,), bool), values.astype(bool))
    half = _eval("Y[i] = cast(A[i]) * 3", [values], (5,), np.float16)
    np.testing.assert_array_equal(half, (values.astype(np.float16) * np.float16(3)))


def test_integer_division_truncates_and_mod_follows_numpy():
    a = np.array([7, -7, 7, -7], np.int64)
    b = np.array([2, 2, -2, -2], np.int64)
    np.testing.assert_array_equal(_eval("Y[i] = A[i] / B[i]", [a, b], (4,), np.int64), [3, -3, -3, 3])
    np.testing.assert_array_equal(_eval("Y[i] = mod(A[i], B[i])", [a, b], (4,), np.int64), np.mod(a, b))
    np.testing.assert_array_equal(_eval("Y[i] = fmod(A[i], B[i])", [a, b], (4,), np.int64), np.fmod(a, b))


@settings(max_examples=30)
@given(st.integers(1, 6), st.integers(1, 5), st.integers(1, 4), st.integers(0, 2**16))
def test_indirect_index_is_a_gather(rows, width, count, seed):
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((rows, width)).astype(np.float32)
    index = rng.integers(0, rows, (count, 2)).astype(np.int64)
    expr = parse_expression("Y[q,p,h] = E[I[q,p],h]")
    assert isinstance(expr.output.indices[0], type(expr.output.indices[0]))
    assert isinstance(expr.accesses_of("E")[0].indices[0], IndirectIndex)
    assert expr.inputs == ("E", "I")
    got = _eval("Y[q,p,h] = E[I[q,p],h]", [table, index], (count, 2, width), np.float32)
    np.testing.assert_array_equal(got, table[index])


def test_indirect_index_out_of_range_is_an_interpretation_error():
    with pytest.raises(InterpretationError, match=r"indirect index I\[q\] of E \(dim 0\) is 5, outside \[0, 3\)"):
        _eval("Y[q,h] = E[I[q],h]", [np.zeros((3, 2), np.float32), np.array([0, 5])], (2, 2), np.float32)


@settings(max_examples=30)
@given(st.lists(st.integers(1, 4), min_size=2, max_size=4), st.integers(0, 2**16))
def test_row_major_merge_writes_a_reshape(dims, seed):
    x = np.random.default_rng(seed).standard_normal(dims).astype(np.float32)
    names = [f"a{i}" for i in range(len(dims))]
    strides = np.cumprod([1, *dims[::-1]])[:-1][::-1]
    index = "+".join(f"{s}*{n}" if s != 1 else n for s, n in zip(strides, names))
    text = f"Y[{index}] = X[{','.join(names)}]"
    if all(s == 1 for s in strides[:-1]):  # a leading 1*a0 prints as a plain axis sum
        return
    got = _eval(text, [x], (x.size,), np.float32)
    np.testing.assert_array_equal(got, x.reshape(-1))


def test_where_bound_windows_slice_and_pad():
    x = np.arange(10, dtype=np.float32)
    np.testing.assert_array_equal(_eval("Y[i] = X[i] where i in 4", [x], (4,), np.float32), x[:4])
    # Writing a window of a longer output leaves the rest 0 (a pad at the end).
    np.testing.assert_array_equal(
        _eval("Y[i] = X[i] where i in 10", [x], (13,), np.float32), np.concatenate([x, np.zeros(3)])
    )


@pytest.mark.parametrize("text, types, result, message", [
    ("Y[i] = A[i] < B[i]", ["f32", "f32"], "f32", "'<' yields i1 but the result is f32"),
    ("Y[i] = A[i] + B[i]", ["f32", "i64"], "f32", "B is i64 but the result is f32"),
    ("Y[i] = exp(A[i])", ["i64"], "i64", "'exp' takes a float but its operand is i64"),
    ("Y[i] = and(A[i], B[i])", ["i1", "f32"], "i1", "B is f32 but an operand of 'and' is i1"),
    ("Y[i] = E[I[i]]", ["f32", "f16"], "f32", "index tensor I is f16 but indirect indices must be integers"),
])
def test_element_type_rule_rejections(text, types, result, message):
    args = ", ".join(f"%{n}: tensor<4x{t}>" for n, t in zip("ab", types))
    operands = ", ".join(f"%{n}" for n in "ab"[: len(types)])
    in_types = ", ".join(f"tensor<4x{t}>" for t in types)
    source = (
        f"func.func @f({args}) -> tensor<4x{result}> {{\n"
        f'  %y = te.op "{text}" ({operands}) : ({in_types}) -> tensor<4x{result}>\n'
        f"  func.return %y : tensor<4x{result}>\n}}\n"
    )
    with pytest.raises(Exception, match="element type mismatch: " + message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[").replace("]", r"\]")):
        parse_module(source, "test.mlir")


def test_element_type_rule_acceptances():
    source = """
func.func @f(%c: tensor<4xi1>, %x: tensor<4xf32>, %i: tensor<4xi64>, %e: tensor<9x4xf16>) -> (tensor<4xf32>, tensor<4x4xf16>, tensor<4xi1>) {
  %a = te.op "Y[i] = select(C[i], X[i], 0.5) + cast(I[i])" (%c, %x, %i) : (tensor<4xi1>, tensor<4xf32>, tensor<4xi64>) -> tensor<4xf32>
  %b = te.op "Y[i,h] = E[I[i],h]" (%e, %i) : (tensor<9x4xf16>, tensor<4xi64>) -> tensor<4x4xf16>
  %d = te.op "Y[i] = or(X[i] > 0, isinf(X[i]))" (%x) : (tensor<4xf32>) -> tensor<4xi1>
  func.return %a, %b, %d : tensor<4xf32>, tensor<4x4xf16>, tensor<4xi1>
}
"""
    module = parse_module(source, "ok.mlir")
    outputs = run_function(module, {
        "arg0": np.array([1, 0, 1, 0], bool), "arg1": np.array([1.0, -2.0, 3.0, np.inf], np.float32),
        "arg2": np.array([0, 1, 8, 2]), "arg3": np.arange(36, dtype=np.float16).reshape(9, 4),
    })
    np.testing.assert_array_equal(outputs["result0"], [1.0, 1.5, 11.0, 2.5])
    np.testing.assert_array_equal(outputs["result1"], np.arange(36, dtype=np.float16).reshape(9, 4)[[0, 1, 8, 2]])
    np.testing.assert_array_equal(outputs["result2"], [True, False, True, True])


def test_shape_free_rejections():
    with pytest.raises(ExprError, match="output index 'I\\[i\\]' reads a tensor"):
        parse_expression("Y[I[i]] = X[i]")
    with pytest.raises(ExprError, match="function 'select' takes 3 argument"):
        parse_expression("Y[i] = select(X[i], X[i])")
    with pytest.raises(ExprError, match="output index '2\\*i\\+j' is not a row-major merge"):
        parse_expression("Y[2*i+j] = X[i,j]").bind([(2, 4)], (8,))
