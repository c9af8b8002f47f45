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
