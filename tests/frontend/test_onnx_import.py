"""The ONNX importer and `irc-translate`: CLI, weights side file, diagnostics, folding,
and properties of the converters against numpy / onnx.reference."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from irc.dialects.te import OpaqueOp, TensorOp
from irc.frontend import OnnxImportError, import_model
from irc.runner import run_function, parse_module
from irc.tools import irc_run, irc_translate

BIN = os.path.dirname(sys.executable)


def _model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _mlp(batch="batch"):
    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.standard_normal((64, 32)).astype(np.float32), "fc.weight")
    bias = numpy_helper.from_array(rng.standard_normal(32).astype(np.float32), "fc.bias")
    return _model(
        [helper.make_node("MatMul", ["x", "fc.weight"], ["h"]),
         helper.make_node("Add", ["h", "fc.bias"], ["a"]),
         helper.make_node("Tanh", ["a"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [weight, bias],
    )


def _run_onnx(model, feeds, **kwargs):
    result = import_model(model, **kwargs)
    got = run_function(result.module, {**feeds, **result.weights})
    return result, got


# ---------------------------------------------------------------------------
# irc-translate -> irc-run, by name, with the side weights file
# ---------------------------------------------------------------------------


def test_translate_then_run_by_names(tmp_path, capsys):
    model_path = tmp_path / "mlp.onnx"
    onnx.save(_mlp(), model_path)
    before = model_path.read_bytes()
    out = tmp_path / "mlp.mlir"
    status = irc_translate.run(["--import-onnx", str(model_path), "--shape", "x=3x64", "-o", str(out)])
    assert status == 0, capsys.readouterr().err
    text = out.read_text()
    # The 64x32 weight lives in mlp.weights.npz, not in the text.
    assert (tmp_path / "mlp.weights.npz").is_file()
    assert 'irc.weights = "mlp.weights.npz"' in text
    assert '{irc.name = "fc.weight", irc.weight}' in text
    assert '{irc.name = "x"}' in text and '{irc.name = "y"}' in text
    assert len(text) < 2000
    assert model_path.read_bytes() == before  # the input is never written

    x = np.random.default_rng(1).standard_normal((3, 64)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    # Run from another directory: the weights path resolves against the IR file.
    cwd = os.getcwd()
    os.chdir("/")
    try:
        status = irc_run.run([str(out), "--inputs", str(tmp_path / "in.npz"), "--output", str(tmp_path / "out.npz")])
    finally:
        os.chdir(cwd)
    assert status == 0, capsys.readouterr().err
    with np.load(tmp_path / "out.npz") as results:
        got = results["y"]
    (want,) = ReferenceEvaluator(_mlp()).run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_symbol_shape_and_stdout(tmp_path, capsys):
    model_path = tmp_path / "m.onnx"
    onnx.save(_mlp(), model_path)
    status = irc_translate.run(["--import-onnx", str(model_path), "--shape", "batch=5"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "tensor<5x64xf32>" in captured.out
    # Printed to stdout, the IR names its weights file by absolute path.
    assert f'irc.weights = "{tmp_path / "m.weights.npz"}"' in captured.out
    module = parse_module(captured.out, "stdin")
    x = np.ones((5, 64), np.float32)
    got = run_function(module, {"x": x})["y"]
    (want,) = ReferenceEvaluator(_mlp()).run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_console_script_exit_status(tmp_path):
    bad = tmp_path / "notes.onnx"
    bad.write_text("this is not a model")
    done = subprocess.run(
        [os.path.join(BIN, "irc-translate"), "--import-onnx", str(bad)],
        capture_output=True, text=True,
    )
    assert done.returncode == 1
    assert done.stderr.strip().count("\n") == 0
    assert "is not an ONNX model" in done.stderr and "Traceback" not in done.stderr


# ---------------------------------------------------------------------------
# Diagnostics: one error line, exit 1
# ---------------------------------------------------------------------------


def _translate_error(tmp_path, capsys, model_or_bytes, *extra):
    path = tmp_path / "model.onnx"
    if isinstance(model_or_bytes, bytes):
        path.write_bytes(model_or_bytes)
    else:
        onnx.save(model_or_bytes, path)
    status = irc_translate.run(["--import-onnx", str(path), *extra])
    err = capsys.readouterr().err
    assert status == 1
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


def test_unsupported_node_names_node_op_and_opset(tmp_path, capsys):
    model = _model(
        [helper.make_node("Relu", ["x"], ["r"]),
         helper.make_node("Det", ["r"], ["y"], name="the_det")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], opset=18,
    )
    err = _translate_error(tmp_path, capsys, model)
    assert "node 'the_det' (Det, opset 18): unsupported operator" in err


def test_unsupported_attribute_value(tmp_path, capsys):
    model = _model(
        [helper.make_node("Pad", ["x", "pads"], ["y"], mode="reflect", name="pad0")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([1, 1], np.int64), "pads")],
    )
    err = _translate_error(tmp_path, capsys, model)
    assert "node 'pad0' (Pad, opset 17): attribute mode='reflect' is not supported" in err


def test_truncated_and_foreign_files(tmp_path, capsys):
    data = _mlp().SerializeToString()
    err = _translate_error(tmp_path, capsys, data[: len(data) // 2])
    assert "is not an ONNX model" in err
    err = _translate_error(tmp_path, capsys, b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    assert "is not an ONNX model" in err


def test_old_opset_and_dynamic_dims(tmp_path, capsys):
    err = _translate_error(tmp_path, capsys, _mlp().__class__.FromString(
        _model([helper.make_node("Relu", ["x"], ["y"])],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], opset=11).SerializeToString()))
    assert "opset 11" in err and "13" in err
    err = _translate_error(tmp_path, capsys, _mlp())
    assert "input 'x' has a dynamic dimension 'batch'; fix it with --shape x=Nx64" in err
    err = _translate_error(tmp_path, capsys, _mlp(), "--shape", "y=2")
    assert "'y', which is not a graph input" in err
    err = _translate_error(tmp_path, capsys, _mlp(), "--shape", "x=2x3x4")
    assert "rank 3" in err


def test_shape_restates_a_model_exported_at_fixed_shapes():
    """A model exported at fixed shapes states its intermediates' and outputs' shapes
    (value_info); --shape giving its input another batch used to fail in shape inference
    ('Inferred shape and existing shape differ'). A zero-size input dimension is named
    as such, with a fix that can be typed (not '--shape x=0x3', which is refused)."""
    model = _model([helper.make_node("Relu", ["x"], ["h"]), helper.make_node("Neg", ["h"], ["y"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])])
    model.graph.value_info.append(helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, 8]))
    x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    _, got = _run_onnx(model, {"x": x}, shapes={"x": (3, 8)})
    np.testing.assert_array_equal(got["y"], -np.maximum(x, 0))
    empty = _model([helper.make_node("Relu", ["x"], ["y"])], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [0, 3])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [0, 3])])
    with pytest.raises(OnnxImportError, match=r"input 'x' has a dimension of size 0 .*--shape x=Nx3"):
        import_model(empty)
    _, got = _run_onnx(empty, {"x": x[:1, :3]}, shapes={"x": (1, 3)})
    np.testing.assert_array_equal(got["y"], np.maximum(x[:1, :3], 0))


def test_never_overwrites_the_input(tmp_path, capsys):
    path = tmp_path / "model.onnx"
    onnx.save(_mlp(), path)
    before = path.read_bytes()
    assert irc_translate.run(["--import-onnx", str(path), "--shape", "x=1x64", "-o", str(path)]) == 1
    assert irc_translate.run(["--import-onnx", str(path), "--shape", "x=1x64", "--weights", str(path)]) == 1
    assert "overwrite" in capsys.readouterr().err
    assert path.read_bytes() == before


# ---------------------------------------------------------------------------
# Folding
# ---------------------------------------------------------------------------


def test_shape_arithmetic_and_constant_subgraphs_fold():
    c = lambda name, value: helper.make_node(  # noqa: E731
        "Constant", [], [name], value=numpy_helper.from_array(np.asarray(value), name + "_v"))
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        c("i0", np.int64(0)), c("last", np.array([-1], np.int64)), c("ax", np.array([0], np.int64)),
        helper.make_node("Gather", ["s", "i0"], ["b"]),
        helper.make_node("Unsqueeze", ["b", "ax"], ["b1"]),
        helper.make_node("Concat", ["b1", "last"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["flat"]),
        # A subgraph of constants only: (2 * 3 + 1) folds to a literal 7.
        c("two", np.float32(2)), c("three", np.float32(3)), c("one", np.float32(1)),
        helper.make_node("Mul", ["two", "three"], ["six"]),
        helper.make_node("Add", ["six", "one"], ["seven"]),
        helper.make_node("Mul", ["flat", "seven"], ["y"]),
    ]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    result, got = _run_onnx(model, {"x": x})
    ops = [op for op in result.module.walk() if isinstance(op, TensorOp)]
    assert [op.expression.text for op in ops] == [
        "Y[o0,4*i1+i2] = A[o0,i1,i2]",  # the folded Reshape: a row-major merge
        "Y[d0,d1] = A[d0,d1] * 7",
    ]
    assert result.weights == {}
    np.testing.assert_array_equal(got["y"], x.reshape(2, 12) * 7)


@pytest.mark.parametrize("opset", [13, 15])
def test_batch_norm_of_constants_folds_in_inference_mode(opset):
    """onnx.reference's BatchNormalization of opsets 9-13 normalises by the batch's own
    statistics (it fills in the default momentum); a folded BatchNormalization must use
    the running mean and variance, as the converter does for a computed input."""
    rng = np.random.default_rng(0)
    x, scale, bias, mean = (rng.standard_normal(s).astype(np.float32) for s in [(2, 3, 4), 3, 3, 3])
    var = (rng.random(3) + 0.5).astype(np.float32)
    values = {"x": x, "scale": scale, "bias": bias, "mean": mean, "var": var}
    nodes = [helper.make_node("BatchNormalization", list(values), ["bn"]),
             helper.make_node("Add", ["bn", "other"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("other", TensorProto.FLOAT, [2, 3, 4])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                   [numpy_helper.from_array(v, k) for k, v in values.items()], opset=opset)
    other = rng.standard_normal((2, 3, 4)).astype(np.float32)
    result, got = _run_onnx(model, {"other": other})
    assert len([op for op in result.module.walk() if isinstance(op, TensorOp)]) == 1  # only the Add is left
    per_channel = lambda v: v[:, None]  # noqa: E731
    want = (x - per_channel(mean)) / np.sqrt(per_channel(var) + 1e-5) * per_channel(scale) + per_channel(bias) + other
    np.testing.assert_allclose(got["y"], want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("folded", [True, False])
def test_a_cast_of_floats_to_integers_saturates_folded_or_at_run_time(folded):
    """A Cast of floats to int8 computes the same values whether its input is a constant
    (folded at import) or computed at run time: truncated toward zero, NaN as 0, beyond
    the type its extremes (before: folded through onnx.reference, 300.0 wrapped to 44)."""
    values = np.array([300.0, -300.0, np.nan, 2.7, -2.7, np.inf, 127.5, -128.5], np.float32)
    nodes = [helper.make_node("Cast", ["c"], ["i"], to=TensorProto.INT8),
             helper.make_node("Cast", ["i"], ["f"], to=TensorProto.FLOAT),
             helper.make_node("Add", ["f", "zero"], ["y"])]
    inputs = [helper.make_tensor_value_info("zero", TensorProto.FLOAT, [8])]
    if not folded:
        inputs.append(helper.make_tensor_value_info("c", TensorProto.FLOAT, [8]))
    model = _model(nodes, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                   [numpy_helper.from_array(values, "c")] if folded else [])
    feeds = {"zero": np.zeros(8, np.float32), **({} if folded else {"c": values})}
    _, got = _run_onnx(model, feeds)
    np.testing.assert_array_equal(got["y"], [127, -128, 0, 2, -2, 127, 127, -128])


@pytest.mark.parametrize("exclusive, reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumsum_is_a_contraction_with_a_triangle(exclusive, reverse):
    model = _model(
        [helper.make_node("CumSum", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array(1, np.int64), "axis")],
    )
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    result, got = _run_onnx(model, {"x": x})
    assert not any(isinstance(op, OpaqueOp) for op in result.module.walk())
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    np.testing.assert_allclose(got["y"], want, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------------------
# Properties of the converters against onnx.reference
# ---------------------------------------------------------------------------


@st.composite
def reshapes(draw):
    dims = draw(st.lists(st.sampled_from([1, 2, 3, 4, 6]), min_size=1, max_size=4))
    total = int(np.prod(dims))
    factors = []
    rest = total
    while rest > 1 and len(factors) < 4:
        choices = [d for d in range(2, rest + 1) if rest % d == 0]
        factor = draw(st.sampled_from(choices))
        factors.append(factor)
        rest //= factor
    if rest > 1:  # at most four factors: fold what is left into the last one
        factors[-1] *= rest
    target = factors or [1]
    target = draw(st.permutations(target))
    ones = draw(st.integers(0, 2))
    target = list(target)
    for _ in range(ones):
        target.insert(draw(st.integers(0, len(target))), 1)
    return tuple(dims), tuple(target)


@settings(max_examples=30)
@given(reshapes())
def test_reshape_matches_numpy(shapes):
    source, target = shapes
    model = _model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(source))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array(target, np.int64), "shape")],
    )
    x = np.arange(np.prod(source), dtype=np.float32).reshape(source)
    result, got = _run_onnx(model, {"x": x})
    np.testing.assert_array_equal(got["y"], x.reshape(target))
    # Every reshape is a te expression (no opaque kernel), at most two ops.
    ops = [op for op in result.module.walk() if isinstance(op, (TensorOp, OpaqueOp))]
    assert all(isinstance(op, TensorOp) for op in ops) and len(ops) <= 2


@st.composite
def broadcast_triples(draw):
    rank = draw(st.integers(0, 3))
    full = [draw(st.integers(1, 4)) for _ in range(rank)]

    def operand():
        keep = draw(st.integers(0, rank))
        return tuple(d if draw(st.booleans()) else 1 for d in full[rank - keep:])

    return operand(), operand(), operand()


@settings(max_examples=30)
@given(broadcast_triples(), st.sampled_from(["Add", "Sub", "Mul", "Div", "Less", "Equal", "Max"]),
       st.integers(0, 2**16))
def test_broadcast_elementwise_and_where(shapes, op_type, seed):
    rng = np.random.default_rng(seed)
    a_shape, b_shape, c_shape = shapes
    out_type = TensorProto.BOOL if op_type in ("Less", "Equal") else TensorProto.FLOAT
    model = _model(
        [helper.make_node(op_type, ["a", "b"], ["r"]),
         helper.make_node("Where", ["c", "r", "r"] if out_type == TensorProto.BOOL else ["c", "r", "a"], ["y"])],
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, list(a_shape)),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, list(b_shape)),
         helper.make_tensor_value_info("c", TensorProto.BOOL, list(c_shape))],
        [helper.make_tensor_value_info("y", out_type, None)],
    )
    feeds = {
        "a": rng.integers(-3, 4, a_shape).astype(np.float32),
        "b": (rng.integers(1, 4, b_shape) * rng.choice([-1, 1], b_shape)).astype(np.float32),
        "c": rng.integers(0, 2, c_shape).astype(bool),
    }
    _, got = _run_onnx(model, feeds)
    (want,) = ReferenceEvaluator(model).run(None, feeds)
    np.testing.assert_allclose(got["y"], want, rtol=1e-6)


@settings(max_examples=20)
@given(st.integers(0, 2**16), st.integers(0, 1))
def test_gather_runtime_negative_indices(seed, axis):
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((5, 6)).astype(np.float32)
    indices = rng.integers(-data.shape[axis], data.shape[axis], (2, 3)).astype(np.int64)
    model = _model(
        [helper.make_node("Gather", ["data", "idx"], ["y"], axis=axis)],
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, [5, 6]),
         helper.make_tensor_value_info("idx", TensorProto.INT64, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    _, got = _run_onnx(model, {"data": data, "idx": indices})
    np.testing.assert_array_equal(got["y"], np.take(data, indices, axis=axis))


@settings(max_examples=20)
@given(st.integers(1, 2), st.integers(1, 3), st.integers(1, 2), st.integers(0, 1),
       st.integers(1, 2), st.integers(1, 2), st.integers(0, 2**16))
def test_grouped_strided_padded_conv(group, per_group, stride, pad, dilation, batch, seed):
    rng = np.random.default_rng(seed)
    channels, features = 2 * group, per_group * group
    x = rng.standard_normal((batch, channels, 7, 6)).astype(np.float32)
    w = rng.standard_normal((features, 2, 3, 2)).astype(np.float32)
    b = rng.standard_normal(features).astype(np.float32)
    model = _model(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], group=group, strides=[stride, stride],
                          pads=[pad, 0, pad, 1], dilations=[dilation, 1])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    _, got = _run_onnx(model, {"x": x})
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    np.testing.assert_allclose(got["y"], want, rtol=1e-4, atol=1e-5)


def test_constants_bind_runtime_parameters():
    model = _model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6]),
         helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    with pytest.raises(OnnxImportError, match=r"node 'y' \(Reshape, opset 17\): the shape input must be a constant") as error:
        import_model(model)
    assert error.value.input_name == "shape"
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    result, got = _run_onnx(model, {"x": x}, constants={"shape": np.array([3, 4])})
    assert result.input_names == ["x"]
    np.testing.assert_array_equal(got["y"], x.reshape(3, 4))
