"""ONNX attributes checked against their schemas in one place for every converter (issue
27, item 9; `irc.frontend.onnx_attributes`): names, types and required attributes from
``onnx.defs``, the values ONNX states only in its text (flags, enumerations, counts,
axes against the input's rank), each refused naming the node, its op type and the
attribute."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import AttributeProto, TensorProto, helper, numpy_helper

from irc.frontend import OnnxImportError, import_model
from irc.frontend.onnx_attributes import CUSTOM_SCHEMAS
from irc.frontend.onnx_ops import CUSTOM_DOMAINS, supported_ops
from tests.fuzzing import run_tool

F = TensorProto.FLOAT


def _model(*nodes, shape=(2, 3), opset=17, initializers=(), inputs=("x",)):
    graph = helper.make_graph(list(nodes), "g", [helper.make_tensor_value_info(n, F, list(shape)) for n in inputs],
                              [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.UNDEFINED, None)],
                              list(initializers))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in CUSTOM_DOMAINS]
    return helper.make_model(graph, opset_imports=opsets)


def _refused(model, *expected) -> str:
    with pytest.raises(OnnxImportError) as raised:
        import_model(model)
    message = str(raised.value)
    assert all(text in message for text in expected) and "internal error" not in message, message
    return message


ISSUE_CASES = {
    "ReduceMax keepdims=2": (helper.make_node("ReduceMax", ["x"], ["y"], name="r", keepdims=2), "node 'r' (ReduceMax"),
    "ReduceMin keepdims=2": (helper.make_node("ReduceMin", ["x"], ["y"], name="r", keepdims=2), "node 'r' (ReduceMin"),
    "Mod fmod=-7": (helper.make_node("Mod", ["x", "x"], ["y"], name="m", fmod=-7), "node 'm' (Mod"),
    "ArgMax keepdims=2": (helper.make_node("ArgMax", ["x"], ["y"], name="a", keepdims=2), "node 'a' (ArgMax"),
}


@pytest.mark.parametrize("case", ISSUE_CASES)
def test_a_flag_other_than_0_or_1_is_refused_by_every_converter(case, tmp_path):
    """The issue's cases: a 1x1 ReduceMax where ONNX says a scalar, Mod's fmod=-7 taken
    as fmod, and ArgMax refused by its own check; now one refusal, by the function and
    by irc-translate (exit 1, no output written)."""
    node, where = ISSUE_CASES[case]
    name, value = node.attribute[0].name, node.attribute[0].i
    expected = f"attribute '{name}' is {value}; it must be 0 or 1"
    message = _refused(_model(node), where, expected)
    (tmp_path / "m.onnx").write_bytes(_model(node).SerializeToString())
    outcome = run_tool("irc-translate", "--import-onnx", "m.onnx", "-o", "out.mlir", cwd=tmp_path)
    assert outcome.status == 1 and outcome.stderr.strip() == f"error: {message}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]


def _schema_attributes(op: str, domain: str, opset: int) -> dict[str, int]:
    if (domain, op) in CUSTOM_SCHEMAS:
        return {name: kind for name, (kind, _) in CUSTOM_SCHEMAS[domain, op].items()}
    schema = onnx.defs.get_schema(op, opset, domain)
    return {name: int(a.type.value) for name, a in schema.attributes.items()}


def _domain(op: str) -> str:
    return next((d for d in CUSTOM_DOMAINS if (d, op) in CUSTOM_SCHEMAS), "")


WRONG = {AttributeProto.INT: "two", AttributeProto.STRING: 2, AttributeProto.FLOAT: "half"}
"""A value of another type for an attribute of each kind (anything else gets an int)."""


@pytest.mark.parametrize("op", supported_ops())
def test_every_converter_gets_its_attributes_checked_by_type(op):
    """For every registered op type, its first attribute (by name) given a value of
    another type is refused, naming the node and the attribute; an op without
    attributes is given one it does not know."""
    domain = _domain(op)
    known = _schema_attributes(op, domain, 20)
    if known:
        name = sorted(known)[0]
        value = WRONG.get(known[name], 2)
        expected = f"attribute '{name}' is of type"
    else:
        name, value = "bogus", 1
        expected = "attribute 'bogus' is not one of"
    node = helper.make_node(op, ["x"], ["y"], name="n", domain=domain, **{name: value})
    _refused(_model(node, opset=20), f"node 'n' ({op}", expected)


CASES = {
    "unknown attribute": (helper.make_node("Relu", ["x"], ["y"], name="n", alpha=1.0),
                          "attribute 'alpha' is not one of Relu's (it takes: none)"),
    "required missing": (helper.make_node("Cast", ["x"], ["y"], name="n"), "attribute 'to' is required but missing"),
    "no element type": (helper.make_node("Cast", ["x"], ["y"], name="n", to=99), "attribute 'to' is 99, which is no"),
    "auto_pad": (helper.make_node("AveragePool", ["x"], ["y"], name="n", kernel_shape=[1], auto_pad="SAME"),
                 "attribute 'auto_pad' is 'SAME'; it must be 'NOTSET', 'SAME_UPPER', 'SAME_LOWER' or 'VALID'"),
    "Pad mode": (helper.make_node("Pad", ["x", "p"], ["y"], name="n", mode="mirror"), "attribute 'mode' is 'mirror'"),
    "strides": (helper.make_node("MaxPool", ["x"], ["y"], name="n", kernel_shape=[1], strides=[0]),
                "attribute 'strides' holds 0; it must be 1 or more"),
    "pads": (helper.make_node("MaxPool", ["x"], ["y"], name="n", kernel_shape=[1], pads=[0, -1]),
             "attribute 'pads' holds -1; each value must be 0 or more"),
    "group": (helper.make_node("Conv", ["x", "x"], ["y"], name="n", group=0), "attribute 'group' holds 0"),
    "transB": (helper.make_node("Gemm", ["x", "x"], ["y"], name="n", transB=3), "attribute 'transB' is 3"),
    "TopK sorted": (helper.make_node("TopK", ["x", "k"], ["y", "i"], name="n", sorted=-1), "attribute 'sorted' is -1"),
    "infinite float": (helper.make_node("LeakyRelu", ["x"], ["y"], name="n", alpha=float("inf")), "'alpha' is inf"),
    "axis beyond 32 bits": (helper.make_node("Softmax", ["x"], ["y"], name="n", axis=2**31),
                            "attribute 'axis' holds 2147483648, which is no dimension of any tensor"),
    "axis beyond the rank": (helper.make_node("Softmax", ["x"], ["y"], name="n", axis=2),
                             "attribute 'axis' is 2, out of range for an input of rank 2 ([-2, 1])"),
    "Concat axis": (helper.make_node("Concat", ["x", "x"], ["y"], name="n", axis=-3), "attribute 'axis' is -3"),
    "Flatten axis": (helper.make_node("Flatten", ["x"], ["y"], name="n", axis=3), "([-2, 2])"),
    "perm": (helper.make_node("Transpose", ["x"], ["y"], name="n", perm=[1, 1]), "attribute 'perm' [1, 1] is not a"),
    "Reduce axes": (helper.make_node("ReduceMean", ["x"], ["y"], name="n", axes=[0, 2]), "attribute 'axes' is 2"),
    "EmbeddingBag mode": (helper.make_node("EmbeddingBag", ["x", "x", "x"], ["y"], name="n", domain="irc.dlrm",
                                           mode="max"), "attribute 'mode' is 'max'; it must be 'sum' or 'mean'"),
    "rows missing": (helper.make_node("TableBatchedEmbedding", ["x", "x", "x"], ["y"], name="n", domain="irc.dlrm"),
                     "attribute 'rows' is required but missing"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_bad_attribute_is_refused_naming_node_and_attribute(case):
    node, expected = CASES[case]
    initializers = [numpy_helper.from_array(np.array([0, 0, 1, 1], np.int64), "p"),
                    numpy_helper.from_array(np.array([1], np.int64), "k")]
    _refused(_model(node, shape=(2, 3) if "pool" not in node.op_type.lower() else (1, 1, 4),
                    initializers=initializers), f"node 'n' ({node.op_type}", expected)


def test_an_axis_is_checked_against_a_computed_input_rank():
    """The rank comes from shape inference: an axis out of range for an intermediate
    value is said as for a graph input."""
    nodes = [helper.make_node("Unsqueeze", ["x", "a"], ["u"], name="u"),
             helper.make_node("Softmax", ["u"], ["y"], name="s", axis=3)]
    axes = numpy_helper.from_array(np.array([0], np.int64), "a")
    _refused(_model(*nodes, initializers=[axes]), "node 's' (Softmax, opset 17): attribute 'axis' is 3, out of range "
             "for an input of rank 3 ([-3, 2])")


def test_attributes_inside_a_nested_graph_are_checked_first():
    """A node in an If's branch is checked before onnx.checker reads it and before the
    If is refused as control flow."""
    inner = helper.make_node("ReduceMax", ["x"], ["b"], name="inner", keepdims=5)
    branch = helper.make_graph([inner], "then", [], [helper.make_tensor_value_info("b", F, None)])
    node = helper.make_node("If", ["c"], ["y"], name="if", then_branch=branch, else_branch=branch)
    cond = numpy_helper.from_array(np.array(True), "c")
    _refused(_model(node, initializers=[cond]), "node 'inner' (ReduceMax, opset 17): attribute 'keepdims' is 5")


@pytest.mark.parametrize("keepdims", [0, 1])
def test_valid_flags_still_import(keepdims):
    imported = import_model(_model(helper.make_node("ReduceMax", ["x"], ["y"], name="r", keepdims=keepdims)))
    (result,) = imported.module.body.block.ops.first.function_type.outputs.data
    assert result.get_shape() == ((1, 1) if keepdims else ())


def test_an_opset_beyond_32_bits_is_refused_without_a_schema_lookup_crash():
    """Found by the fuzzer: onnx.defs.get_schema raises TypeError for such a version; the
    attribute check leaves the model to onnx.checker, which refuses it."""
    _refused(_model(helper.make_node("Relu", ["x"], ["y"], name="r"), opset=2**40),
             "Opset import version 1099511627776")
