"""Nothing the verifier accepts crashes later (issue 13 item 4): tensor expressions are
parsed, printed, walked and evaluated iteratively, so deep or wide bodies up to
`MAX_DEPTH` levels work end to end and deeper ones are a located error, and the ONNX
importer splits a variadic op of hundreds of inputs into ops te can hold."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from irc.dialects.te_expr import MAX_DEPTH, ExprError, expression_depth, parse_expression
from irc.frontend import import_model
from irc.runner import parse_module, run_function


def _program(body: str) -> str:
    return (f'func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {{\n'
            f'  %y = te.op "Y[i] = {body}" (%x) : (tensor<4xf32>) -> tensor<4xf32>\n'
            f'  func.return %y : tensor<4xf32>\n}}\n')


def test_a_sum_of_450_terms_parses_prints_and_runs():
    """The issue's case: ~450 terms was a RecursionError."""
    body = " + ".join(["X[i]"] * 450)
    expr = parse_expression(f"Y[i] = {body}")
    assert expression_depth(expr.body) == 450
    assert str(parse_expression(str(expr))) == str(expr) == f"Y[i] = {body}"
    x = np.arange(4, dtype=np.float32)
    (y,) = run_function(parse_module(_program(body), "sum.mlir"), {"arg0": x}).values()
    np.testing.assert_allclose(y, 450 * x)


def test_nested_calls_up_to_the_limit_run():
    depth = MAX_DEPTH - 1
    body = "neg(" * depth + "X[i]" + ")" * depth
    x = np.arange(4, dtype=np.float32)
    (y,) = run_function(parse_module(_program(body), "deep.mlir"), {"arg0": x}).values()
    np.testing.assert_allclose(y, -x if depth % 2 else x)


@pytest.mark.parametrize("body", ["relu(" * 1000 + "X[i]" + ")" * 1000, " + ".join(["X[i]"] * 2000)])
def test_deeper_bodies_are_one_error_not_a_recursion(body):
    with pytest.raises(ExprError, match=f"at most {MAX_DEPTH}|more than {MAX_DEPTH}"):
        parse_expression(f"Y[i] = {body}")


def test_the_bracket_that_is_too_deep_is_pointed_at():
    text = "Y[i] = " + "(" * (MAX_DEPTH + 10) + "X[i]" + ")" * (MAX_DEPTH + 10)
    with pytest.raises(ExprError, match="nests brackets more than") as caught:
        parse_expression(text)
    assert caught.value.column == len("Y[i] = ") + MAX_DEPTH  # the first "(" too many


@pytest.mark.parametrize("op_type", ["Sum", "Mean", "Max"])
def test_onnx_variadic_of_600_inputs(op_type):
    count = 600
    inputs = [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, [3]) for i in range(count)]
    graph = helper.make_graph([helper.make_node(op_type, [f"x{i}" for i in range(count)], ["y"])], "wide", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    rng = np.random.default_rng(0)
    feeds = {f"x{i}": rng.standard_normal(3).astype(np.float32) for i in range(count)}
    got = run_function(import_model(model).module, feeds)["y"]
    np.testing.assert_allclose(got, ReferenceEvaluator(model).run(None, feeds)[0], rtol=1e-5, atol=1e-5)
