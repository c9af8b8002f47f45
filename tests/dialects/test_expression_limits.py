"""Nothing the verifier accepts crashes later (issue 13): expressions too deep or too long
for te's recursive walks are a located error, and the ONNX importer splits a variadic op
of hundreds of inputs into ops te can hold."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from irc.dialects.te_expr import MAX_NESTING, MAX_OPERATORS, ExprError, parse_expression
from irc.frontend import import_model
from irc.runner import run_function


def test_deep_nesting_is_an_error_at_its_column():
    text = "Y[i] = " + "relu(" * (MAX_NESTING + 10) + "X[i]" + ")" * (MAX_NESTING + 10)
    with pytest.raises(ExprError, match="nests more than") as caught:
        parse_expression(text)
    assert caught.value.column == len("Y[i] = ") + len("relu(") * MAX_NESTING + len("relu")  # the first "(" too many


def test_a_long_sum_is_an_error_not_a_recursion():
    with pytest.raises(ExprError, match="arithmetic operators"):
        parse_expression("Y[i] = " + " + ".join(["X[i]"] * (MAX_OPERATORS + 2)))
    parse_expression("Y[i] = " + " + ".join(["X[i]"] * MAX_OPERATORS))  # the limit itself parses


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
