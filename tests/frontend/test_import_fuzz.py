"""A fuzzer of the ONNX frontend and the runner (issue 13): random small graphs, with
attributes in and out of their legal ranges, either import and run (the result equal to
onnx.reference where it evaluates the graph) or fail with an `OnnxImportError` naming the
node; never any other exception."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
import pytest

from irc.frontend import OnnxImportError, import_model
from irc.runner import RunError, run_function

UNARY = ["Relu", "Neg", "Abs", "Exp", "Sigmoid", "Tanh", "Sqrt", "Floor", "Identity"]
BINARY = ["Add", "Sub", "Mul", "Max", "Min"]


@st.composite
def graphs(draw):
    rank = draw(st.integers(1, 3))
    shape = draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank))
    nodes, value, count = [], "x", 0
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["unary", "binary", "transpose", "softmax", "reduce", "cumsum", "leaky",
                                     "concat", "flatten", "where", "slice"]))
        out = f"v{count}"
        count += 1
        if kind == "unary":
            nodes.append(helper.make_node(draw(st.sampled_from(UNARY)), [value], [out]))
        elif kind == "binary":
            nodes.append(helper.make_node(draw(st.sampled_from(BINARY)), [value, "x" if draw(st.booleans()) else value],
                                          [out]))
        elif kind == "transpose":  # sometimes not a permutation
            perm = draw(st.lists(st.integers(0, rank), min_size=rank, max_size=rank))
            nodes.append(helper.make_node("Transpose", [value], [out], perm=perm))
        elif kind == "softmax":
            nodes.append(helper.make_node("Softmax", [value], [out], axis=draw(st.integers(-rank - 1, rank))))
        elif kind == "reduce":
            nodes.append(helper.make_node("ReduceSum", [value, "axes"], [out], keepdims=draw(st.integers(0, 2))))
        elif kind == "cumsum":
            nodes.append(helper.make_node("CumSum", [value, "axis"], [out], exclusive=draw(st.integers(0, 1)),
                                          reverse=draw(st.integers(0, 1))))
        elif kind == "leaky":
            alpha = draw(st.sampled_from([0.1, -2.0, float("nan"), float("inf")]))
            nodes.append(helper.make_node("LeakyRelu", [value], [out], alpha=alpha))
        elif kind == "concat":
            nodes.append(helper.make_node("Concat", [value, value], [out], axis=draw(st.integers(-rank - 1, rank))))
        elif kind == "flatten":
            nodes.append(helper.make_node("Flatten", [value], [out], axis=draw(st.integers(-rank - 1, rank + 1))))
        elif kind == "where":
            nodes.append(helper.make_node("Greater", [value, "x"], [f"{out}.c"]))
            nodes.append(helper.make_node("Where", [f"{out}.c", value, "x"], [out]))
        else:
            nodes.append(helper.make_node("Slice", [value, "starts", "ends", "axes"], [out]))
        value = out
    axis = draw(st.integers(-rank, rank - 1))
    start = draw(st.integers(-3, 3))
    inits = [helper.make_tensor("axes", TensorProto.INT64, [1], [axis]),
             helper.make_tensor("axis", TensorProto.INT64, [], [axis]),
             helper.make_tensor("starts", TensorProto.INT64, [1], [start]),
             helper.make_tensor("ends", TensorProto.INT64, [1], [start + draw(st.integers(-1, 4))])]
    graph = helper.make_graph(nodes, "fuzz", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(value, TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), shape


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs(), st.integers(0, 1000))
def test_import_and_run_never_escape(case, seed):
    model, shape = case
    try:
        imported = import_model(model)
    except OnnxImportError as error:
        assert str(error).startswith(("node '", "onnx shape inference", "input '", "the model")), str(error)
        return
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    try:
        got = run_function(imported.module, {"x": x, **imported.weights})
    except RunError:
        return
    try:
        (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    except Exception:  # onnx's own reference cannot evaluate it: nothing to compare
        return
    (value,) = got.values()
    np.testing.assert_allclose(value, want, rtol=1e-4, atol=1e-4, equal_nan=True)


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs(), st.sampled_from(["tiny4", "tiny16"]))
def test_what_imports_compiles_and_runs_on_chip_as_at_te_level(case, device):
    """Whatever imports goes through the whole inference pipeline and runs on the chip
    with the te level's numbers (or a planner diagnostic; never a crash)."""
    from xdsl.utils.exceptions import DiagnosticException

    from irc.compile import compile_module

    model, shape = case
    try:
        imported = import_model(model)
    except OnnxImportError:
        return
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    feeds = {"x": x, **imported.weights}
    (want,) = run_function(imported.module.clone(), feeds).values()
    try:
        compiled, _ = compile_module(imported.module.clone(), device)
    except DiagnosticException:
        return
    (got,) = run_function(compiled, feeds).values()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)
