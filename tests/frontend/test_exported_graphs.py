"""Graphs as exporters write them (issue 11): constant chains that onnx.reference's own
kernels cannot fold, checked against onnx.reference on the same inputs."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from irc.frontend import import_model
from irc.runner import run_function


def test_gather_elements_over_more_than_64_folds():
    """data [1,128], indices [1,32], axis=1: onnx.reference's GatherElements (np.choose)
    cannot take more than 64 choices; the importer folds it with numpy."""
    data = numpy_helper.from_array(np.arange(128, dtype=np.int64).reshape(1, 128) * 2, "data")
    indices = numpy_helper.from_array((np.arange(32, dtype=np.int64) * 5 % 128).reshape(1, 32), "indices")
    nodes = [
        helper.make_node("GatherElements", ["data", "indices"], ["picked"], axis=1, name="/m/embeddings/GatherElements"),
        helper.make_node("Cast", ["picked"], ["as_float"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["x", "as_float"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "positions", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32])], [data, indices])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    imported = import_model(model)
    x = np.random.default_rng(0).standard_normal((1, 32)).astype(np.float32)
    got = run_function(imported.module, {"x": x, **imported.weights})["y"]
    want = x + (np.arange(32) * 5 % 128 * 2).astype(np.float32)[None]
    np.testing.assert_allclose(got, want)
    assert "GatherElements" not in str(imported.module)  # folded at import time


def test_torchscript_shaped_attention_runs_wholly_on_chip():
    """The constructs PyTorch's TorchScript exporter writes around attention: CumSum
    position ids from the mask, an Identity on a shared initializer, a Range/Unsqueeze/
    LessOrEqual causal mask with Where, Softmax guarded by IsNaN/Where: imported, planned
    with every op on chip, and equal to onnx.reference at te and device level."""
    from onnx.reference import ReferenceEvaluator

    from irc.compile import compile_module
    from irc.runner import run

    S, H = 8, 16
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((H, H)).astype(np.float32), "w")
    nodes = [
        # position ids as TorchScript writes them: cumsum(mask) * mask - 1
        helper.make_node("CumSum", ["mask", "axis1"], ["cs"]),
        helper.make_node("Mul", ["cs", "mask"], ["csm"]),
        helper.make_node("Sub", ["csm", "one_i"], ["pos"]),
        helper.make_node("Cast", ["pos"], ["posf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["posf", "axes2"], ["posu"]),
        helper.make_node("Add", ["x", "posu"], ["xp"]),
        # scores with a causal mask: LessOrEqual(cols, rows) -> Where
        helper.make_node("Identity", ["w"], ["w_alias"]),
        helper.make_node("MatMul", ["xp", "w_alias"], ["q"]),
        helper.make_node("Transpose", ["q"], ["qt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "qt"], ["scores"]),
        helper.make_node("Range", ["zero_i", "seq", "one_i"], ["r"]),
        helper.make_node("Unsqueeze", ["r", "axes1"], ["rows"]),
        helper.make_node("Unsqueeze", ["r", "axes0"], ["cols"]),
        helper.make_node("LessOrEqual", ["cols", "rows"], ["causal"]),
        helper.make_node("Where", ["causal", "scores", "neg"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["p"], axis=-1),
        helper.make_node("IsNaN", ["p"], ["nan"]),
        helper.make_node("Where", ["nan", "zero_f", "p"], ["p2"]),
        helper.make_node("MatMul", ["p2", "xp"], ["y"]),
    ]
    inits = [w, numpy_helper.from_array(np.array(1, np.int64), "axis1"), numpy_helper.from_array(np.array(1, np.int64), "one_i"),
             numpy_helper.from_array(np.array(0, np.int64), "zero_i"), numpy_helper.from_array(np.array(S, np.int64), "seq"),
             numpy_helper.from_array(np.array([2], np.int64), "axes2"), numpy_helper.from_array(np.array([1], np.int64), "axes1"),
             numpy_helper.from_array(np.array([0], np.int64), "axes0"), numpy_helper.from_array(np.array(-1e9, np.float32), "neg"),
             numpy_helper.from_array(np.array(0.0, np.float32), "zero_f")]
    g = helper.make_graph(nodes, "ts", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, S, H]),
                                        helper.make_tensor_value_info("mask", TensorProto.INT64, [1, S])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, S, H])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    feeds = {"x": rng.standard_normal((1, S, H)).astype(np.float32), "mask": np.array([[1]*6+[0]*2], np.int64)}

    want = ReferenceEvaluator(m).run(None, feeds)[0]
    imported = import_model(m)
    np.testing.assert_allclose(run_function(imported.module, {**feeds, **imported.weights})["y"], want, rtol=1e-5)
    compiled, _ = compile_module(imported.module.clone(), "tiny16")
    assert "te.op" not in str(compiled)
    results, _ = run(compiled, {**feeds, **imported.weights})
    np.testing.assert_allclose(results["y"], want, rtol=1e-5, atol=1e-5)
