"""ONNX import of DLRM's ingredients (MTIA, seeds/001 section 6): QuantizeLinear,
MatMulInteger and DequantizeLinear (an INT8 FC layer accumulating in INT32), and irc's own
``irc.dlrm.EmbeddingBag`` / ``TableBatchedEmbedding``; an INT8 model without scales is an
error naming the tensor."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from xdsl.context import Context

from irc.frontend import OnnxImportError, import_model
from irc.passes.mtia_partition import MtiaPartition
from irc.lowering.te_to_mtia import TeToMtia
from irc.runner import run, run_function


def _model(nodes, inputs, outputs, initializers=(), domains=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    opsets = [helper.make_opsetid("", 19)] + [helper.make_opsetid(d, 1) for d in domains]
    return helper.make_model(graph, opset_imports=opsets)


def _int8_fc(with_scale=True):
    rng = np.random.default_rng(0)
    weight = rng.integers(-127, 128, (96, 64)).astype(np.int8)
    initializers = [numpy_helper.from_array(weight, "w"),
                    numpy_helper.from_array(np.array(0.05, dtype=np.float32), "x_scale"),
                    numpy_helper.from_array(np.array(0, dtype=np.int8), "x_zero"),
                    numpy_helper.from_array(np.array(0.001, dtype=np.float32), "y_scale")]
    quantize = ["x", "x_scale", "x_zero"] if with_scale else ["x", "", "x_zero"]
    nodes = [
        helper.make_node("QuantizeLinear", quantize, ["xq"], name="quantize"),
        helper.make_node("MatMulInteger", ["xq", "w"], ["acc"], name="fc"),
        helper.make_node("DequantizeLinear", ["acc", "y_scale"], ["y"], name="dequantize"),
    ]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 96])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializers)


def test_an_int8_fc_layer_imports_with_onnx_numerics():
    model = _int8_fc()
    x = np.random.default_rng(1).standard_normal((64, 96)).astype(np.float32) * 3
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    result = import_model(model)
    texts = [op.attributes.get("expression") for op in result.module.walk() if op.name == "te.op"]
    got = run_function(result.module, {"x": x, **result.weights})
    np.testing.assert_allclose(got["y"], want, rtol=1e-6)
    # the INT8 matmul runs on MTIA's PE grid with the same numbers
    MtiaPartition().apply(Context(), result.module)
    TeToMtia().apply(Context(), result.module)
    # (MTIA's own mapping or a T10 plan on the PEs, whichever the planner finds cheaper)
    assert any(op.name in ("mtia.mml", "mtia.step") for op in result.module.walk()), texts
    lowered, _ = run(result.module, {"x": x, **result.weights})
    np.testing.assert_allclose(lowered["y"], want, rtol=1e-6)


def test_an_int8_model_without_a_scale_names_the_tensor():
    with pytest.raises(OnnxImportError, match=r"tensor 'x' is quantized without a scale \(input y_scale is missing\)"):
        import_model(_int8_fc(with_scale=False))


@pytest.mark.parametrize("op_type, element, verb, name", [
    ("QuantizeLinear", TensorProto.FLOAT, "quantized", "y_scale"),
    ("DequantizeLinear", TensorProto.INT8, "dequantized", "x_scale"),
])
def test_an_omitted_scale_names_the_tensor_not_the_input_count(op_type, element, verb, name):
    # the scale left out altogether (not an empty name): onnx.checker only counts inputs
    out = TensorProto.INT8 if element == TensorProto.FLOAT else TensorProto.FLOAT
    model = _model([helper.make_node(op_type, ["acts"], ["y"], name="q")],
                   [helper.make_tensor_value_info("acts", element, [4, 8])],
                   [helper.make_tensor_value_info("y", out, [4, 8])], [])
    with pytest.raises(OnnxImportError) as caught:
        import_model(model)
    assert str(caught.value) == (f"node 'q' ({op_type}, opset 19): not valid ONNX: tensor 'acts' is {verb} "
                                 f"without a scale (input {name} is missing)")


def test_per_axis_dequantization():
    scales = np.array([0.5, 0.25, 2.0], dtype=np.float32)
    model = _model([helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=0)],
                   [helper.make_tensor_value_info("q", TensorProto.INT8, [3, 4])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                   [numpy_helper.from_array(scales, "s"), numpy_helper.from_array(np.array([1, -2, 0], np.int8), "z")])
    q = np.arange(-6, 6, dtype=np.int8).reshape(3, 4)
    (want,) = ReferenceEvaluator(model).run(None, {"q": q})
    result = import_model(model)
    np.testing.assert_array_equal(run_function(result.module, {"q": q, **result.weights})["y"], want)


def test_embedding_bag_and_table_batched_embedding_import():
    table = np.arange(24, dtype=np.float32).reshape(6, 4)
    nodes = [helper.make_node("EmbeddingBag", ["table", "idx", "off"], ["y"], domain="irc.dlrm", mode="mean"),
             helper.make_node("TableBatchedEmbedding", ["table", "idx2", "off2"], ["z"], domain="irc.dlrm",
                              rows=[2, 4])]
    model = _model(nodes,
                   [helper.make_tensor_value_info("idx", TensorProto.INT64, [5]),
                    helper.make_tensor_value_info("off", TensorProto.INT64, [2]),
                    helper.make_tensor_value_info("idx2", TensorProto.INT64, [4]),
                    helper.make_tensor_value_info("off2", TensorProto.INT64, [5])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                    helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
                   [numpy_helper.from_array(table, "table")], domains=("irc.dlrm",))
    result = import_model(model)
    feeds = {"idx": np.array([0, 5, 5, 1, 2]), "off": np.array([0, 2]),
             "idx2": np.array([1, 0, 3, 3]), "off2": np.array([0, 1, 2, 3, 4])}
    got = run_function(result.module, {**feeds, **result.weights})
    np.testing.assert_allclose(got["y"], np.stack([table[[0, 5]].mean(0), table[[5, 1, 2]].mean(0)]))
    second = table[2:]
    np.testing.assert_allclose(got["z"], np.stack([np.concatenate([table[1], second[3]]),
                                                   np.concatenate([table[0], second[3]])]))
    with pytest.raises(Exception, match=r"index 6 at position 1 of the indices is outside the table's 6 rows"):
        run_function(result.module, {**feeds, "idx": np.array([0, 6, 5, 1, 2]), **result.weights})
