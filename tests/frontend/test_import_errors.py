"""Nothing the importer accepts crashes later (issue 13): malformed nodes are errors
naming the node and what is wrong, never an internal error or a later traceback."""

from __future__ import annotations

import pytest
from onnx import TensorProto, helper

from irc.frontend import OnnxImportError, import_model

F, I = TensorProto.FLOAT, TensorProto.INT64


def _model(node, in_type=F, in_shape=(2, 3), out_type=F):
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", in_type, list(in_shape))],
                              [helper.make_tensor_value_info("y", out_type, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("model, message", [
    (_model(helper.make_node("Transpose", ["x"], ["y"], perm=[0, 5])), "perm"),
    (_model(helper.make_node("GlobalAveragePool", ["x"], ["y"])), "needs an input of rank 3 or more"),
    (_model(helper.make_node("LeakyRelu", ["x"], ["y"], alpha=float("nan"))), "attribute 'alpha' is NaN"),
    (_model(helper.make_node("Exp", ["x"], ["y"]), I, out_type=I), "'exp' takes a float but its operand is i64"),
    (_model(helper.make_node("Trilu", ["x"], ["y"]), in_shape=(3,)), "rank"),
    (_model(helper.make_node("ArgMax", ["x"], ["y"], keepdims=2), out_type=I), "keepdims must be 0 or 1"),
])
def test_a_malformed_node_is_named(model, message):
    """Caught by onnx's strict shape inference or by the converter: either way the error
    names the node."""
    with pytest.raises(OnnxImportError) as caught:
        import_model(model)
    text = str(caught.value)
    assert text.startswith("node 'y' (") and message in text and "internal error" not in text


def test_a_value_defined_twice_is_refused():
    nodes = [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Neg", ["x"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [2])],
                              [helper.make_tensor_value_info("y", F, [2])])
    with pytest.raises(OnnxImportError, match="value 'y' is defined twice"):
        import_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
