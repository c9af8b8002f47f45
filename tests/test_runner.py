"""One runner (issue 10): every tool goes from IR and inputs to results through
`irc.runner.run`, so an imported model's side weights load the same way with or without
``--report``, at every level."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import onnx
from onnx import TensorProto, helper, numpy_helper
import numpy as np
import pytest

BIN = Path(sys.executable).parent


def _tool(name, *args, cwd=None):
    return subprocess.run([str(BIN / name), *map(str, args)], capture_output=True, text=True, cwd=cwd)


def _model() -> onnx.ModelProto:
    """y = relu(x @ w + b): two initializers, which the importer writes to a weights file."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((16, 8)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["a"]),
             helper.make_node("Relu", ["a"], ["y"])]
    graph = helper.make_graph(nodes, "dense", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])], [w, b])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.slow
def test_report_on_an_imported_model_with_side_weights(tmp_path):
    onnx.save(_model(), tmp_path / "dense.onnx")
    imported = _tool("irc-translate", "--import-onnx", "dense.onnx", "-o", "dense.mlir", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert (tmp_path / "dense.weights.npz").exists()
    lowered = _tool("irc-opt", "dense.mlir", "-p", "inference{device=tiny16}", "-o", "dense.device.mlir", cwd=tmp_path)
    assert lowered.returncode == 0, lowered.stderr
    for program in ("dense.mlir", "dense.device.mlir"):
        plain = _tool("irc-run", program, "--seed", "3", cwd=tmp_path)
        reported = _tool("irc-run", program, "--seed", "3", "--report", cwd=tmp_path)
        assert plain.returncode == 0, plain.stderr
        assert reported.returncode == 0, reported.stderr
        assert plain.stdout.strip().splitlines()[-4:] == reported.stdout.strip().splitlines()[-4:]
    assert "chip time on tiny16" in reported.stdout
