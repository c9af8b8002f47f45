"""Nothing the importer accepts crashes later (issue 13): malformed nodes are errors
naming the node and what is wrong, never an internal error or a later traceback."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from irc.frontend import OnnxImportError, import_model

F, I = TensorProto.FLOAT, TensorProto.INT64


def _model(node, in_type=F, in_shape=(2, 3), out_type=F):
    initializers = [helper.make_tensor("s", F, [3], [1.0, 1.0, 1.0]), helper.make_tensor("r3", I, [2], [1, 0]),
                    helper.make_tensor("i1", I, [2], [0, 1])]
    used = [t for t in initializers if t.name in node.input]
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", in_type, list(in_shape))],
                              [helper.make_tensor_value_info("y", out_type, None)], used)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("model, message", [
    (_model(helper.make_node("Transpose", ["x"], ["y"], perm=[0, 5])), "perm"),
    (_model(helper.make_node("GlobalAveragePool", ["x"], ["y"])), "needs an input of rank 3 or more"),
    (_model(helper.make_node("LeakyRelu", ["x"], ["y"], alpha=float("nan"))), "attribute 'alpha' is NaN"),
    (_model(helper.make_node("Exp", ["x"], ["y"]), I, out_type=I), "'exp' takes a float but its operand is i64"),
    (_model(helper.make_node("Trilu", ["x"], ["y"]), in_shape=(3,)), "rank"),
    (_model(helper.make_node("ArgMax", ["x"], ["y"], keepdims=2), out_type=I), "attribute 'keepdims' is 2; it must be 0 or 1"),
    # found by the schema-driven fuzzer (tests/fuzzing.py, onnx_schema_model)
    (_model(helper.make_node("ArgMax", ["x"], ["y"]), in_shape=(), out_type=I), "needs an input of rank 1 or more"),
    (_model(helper.make_node("LayerNormalization", ["x", "s"], ["y"], epsilon=float("inf")), in_shape=(2, 3)),
     "attribute 'epsilon' is inf; irc takes finite attributes"),
    (_model(helper.make_node("LayerNormalization", ["x", "x"], ["y"], axis=1), in_shape=(2, 3)),
     "Scale of shape (2, 3) does not broadcast to the normalized dimensions (3,)"),
    (_model(helper.make_node("Tile", ["x", "r3"], ["y"])), "output 'y' would have no elements (shape 2x0); irc has no empty tensors"),
    (_model(helper.make_node("GatherElements", ["x", "i1"], ["y"])), "indices of shape (2,) must have the rank of the data (2, 3)"),
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


def test_an_axis_onnx_itself_would_crash_on_is_refused_first():
    """LayerNormalization with `axis = 2**31` and its Mean output crashed the process in
    onnx's shape inference (a segmentation fault)."""
    node = helper.make_node("LayerNormalization", ["x", "s"], ["y", "mean", "inv"], name="ln", axis=2**31)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", F, [5, 3])],
                              [helper.make_tensor_value_info("y", F, None)], [helper.make_tensor("s", F, [3], [1, 1, 1])])
    with pytest.raises(OnnxImportError, match=r"node 'ln' \(LayerNormalization, opset 17\): attribute 'axis' holds "
                                              r"2147483648, which is no dimension of any tensor"):
        import_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))


def test_batch_normalization_of_a_scalar_is_named():
    nodes = [helper.make_node("BatchNormalization", ["x", "c", "c", "c", "c"], ["y"], name="bn")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [])],
                              [helper.make_tensor_value_info("y", F, None)], [helper.make_tensor("c", F, [], [1.0])])
    with pytest.raises(OnnxImportError) as caught:
        import_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)]))
    assert str(caught.value).startswith("node 'bn' (BatchNormalization") and "internal" not in str(caught.value)


@pytest.mark.parametrize("shape, repeats", [((1, 3), [2, 2]), ((2, 1, 3), [3, 2, 1]), ((1,), [4])])
def test_tile_repeats_dimensions_of_one(shape, repeats):
    """Tile of a dimension of 1 emitted an expression reading that dimension by an axis
    no index bound (`combiner '=' cannot fold reduction axes`, an internal error)."""
    import numpy as np
    from onnx.reference import ReferenceEvaluator

    from irc.runner import run_function

    node = helper.make_node("Tile", ["x", "r"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", F, list(shape))],
                              [helper.make_tensor_value_info("y", F, None)],
                              [helper.make_tensor("r", I, [len(repeats)], repeats)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    imported = import_model(model)
    (got,) = run_function(imported.module, {"x": x, **imported.weights}).values()
    np.testing.assert_array_equal(got, ReferenceEvaluator(model).run(None, {"x": x})[0])


def test_an_integer_to_a_negative_power_truncates():
    """Pow of int64 by a negative int64 ended in numpy's `Integers to negative integer
    powers are not allowed` (an internal error in irc-run)."""
    import numpy as np

    from irc.runner import run_function

    node = helper.make_node("Pow", ["x", "e"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", I, [5]), helper.make_tensor_value_info("e", I, [5])],
                              [helper.make_tensor_value_info("y", I, None)])
    imported = import_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    got = run_function(imported.module, {"x": np.array([2, 1, -1, -1, 3]), "e": np.array([-1, -3, -3, -2, 2])})
    np.testing.assert_array_equal(got["y"], [0, 1, -1, 1, 9])


def _graph_model(nodes, inputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                              [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.UNDEFINED, None)],
                              list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("model, message", [
    (_graph_model([helper.make_node("DequantizeLinear", ["q", "x", "z"], ["y"], name="n0", axis=0)], [("x", F, [])],
                  [helper.make_tensor("q", TensorProto.INT8, [], [3]), helper.make_tensor("z", TensorProto.INT8, [2, 2], [0] * 4)]),
     "a per-axis scale or zero point of shape (2, 2) needs an input of rank 1 or more, got a scalar"),
    (_graph_model([helper.make_node("Conv", ["x", "w", "b"], ["y"], name="n0", auto_pad="SAME_UPPER", group=2,
                                    kernel_shape=[2])], [("x", F, [4, 4, 4]), ("w", F, [4]), ("b", F, [])], opset=13),
     "weights of shape (4,) must have the rank of the input (4, 4, 4)"),
    (_graph_model([helper.make_node("AveragePool", ["x"], ["y"], name="n0", dilations=[3], kernel_shape=[2])],
                  [("x", F, [4, 4, 1])], opset=20),
     "output 'y' would have no elements (shape 4x4x-2); irc has no empty tensors"),
])
def test_found_by_the_schema_fuzzer(model, message):
    """Converters that indexed past a shape (the fuzzer, seed 0): each is an error naming
    the node."""
    with pytest.raises(OnnxImportError) as caught:
        import_model(model)
    assert str(caught.value).startswith("node 'n0' (") and message in str(caught.value), str(caught.value)


def test_a_boolean_min_reduction_compiles_for_the_chip():
    """ReduceMin of bool (opset 20) imported, then shift-to-device asked numpy for the
    extremes of a bool (`Invalid integer data type 'b'`)."""
    import numpy as np

    from irc.compile import compile_module
    from irc.runner import run_function

    model = _graph_model([helper.make_node("ReduceMin", ["x"], ["y"], keepdims=1)], [("x", TensorProto.BOOL, [3, 3])],
                         opset=20)
    imported = import_model(model)
    x = np.array([[True, True, False], [True, True, True], [True, True, True]])
    (want,) = run_function(imported.module.clone(), {"x": x}).values()
    compiled, _ = compile_module(imported.module.clone(), "tiny16")
    (got,) = run_function(compiled, {"x": x}).values()
    assert want.tolist() == got.tolist() == [[False]]


@pytest.mark.parametrize("indices, dense", [
    (np.array([1, 4], np.int64), [[0, 7, 0], [0, 8, 0]]),
    (np.array([[0, 1], [1, 1]], np.int64), [[0, 7, 0], [0, 8, 0]]),
    (np.array([1, 6], np.int64), r"node 'k' \(Constant, opset 17\): not valid ONNX: Sparse tensor \(i\) index value at"),
    (np.array([[0, 1], [2, 1]], np.int64), r"node 'k' \(Constant, opset 17\): not valid ONNX: Sparse tensor \(i\) index"),
])
def test_a_sparse_constant_folds_to_its_dense_value(indices, dense):
    """onnx.reference keeps a sparse Constant sparse (no converter reads that); it folds
    to the dense array, from linear or coordinate indices (onnx.checker refuses an index
    outside the shape, naming the node)."""
    values = numpy_helper.from_array(np.array([7, 8], np.float32), "v")
    sparse = helper.make_sparse_tensor(values, numpy_helper.from_array(indices, "i"), [2, 3])
    nodes = [helper.make_node("Constant", [], ["c"], sparse_value=sparse, name="k"),
             helper.make_node("Identity", ["c"], ["y"], name="y")]
    graph = helper.make_graph(nodes, "g", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    if isinstance(dense, str):
        with pytest.raises(OnnxImportError, match=dense):
            import_model(model)
        return
    assert [w.tolist() for w in import_model(model).weights.values()] == [dense]
