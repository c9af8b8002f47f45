"""te-autodiff against finite differences: small ONNX graphs of random shapes, imported
into te (so the expressions are the importer's), given an mse or xent loss, differentiated,
and run in f64 on the te interpreter. Each gradient entry checked is compared with the
central difference of the forward loss."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from irc.frontend.loss import append_loss, append_output_gradients
from irc.frontend.onnx_import import import_model
from irc.passes.te_autodiff import TeAutodiff
from irc.runner import make_context, parse_module, run_function
from xdsl.utils.exceptions import DiagnosticException

DOUBLE = TensorProto.DOUBLE


def model_of(nodes, inputs: dict, output: tuple, initializers=(), opset=18):
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()],
        [helper.make_tensor_value_info(output[0], DOUBLE, output[1])],
        initializer=list(initializers),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def differentiated(module, wrt="all"):
    clone = module.clone()
    TeAutodiff(wrt=wrt).apply(make_context(), clone)
    return clone


def check_gradients(model, inputs: dict[str, np.ndarray], loss="mse", samples=4, seed=0, int_inputs=()):
    """Import, add the loss, differentiate and compare with central differences."""
    imported = import_model(model)
    module = imported.module
    append_loss(module, loss)
    rng = np.random.default_rng(seed)
    forward_inputs = {**imported.weights, **inputs}
    y = run_function(import_model(model).module, forward_inputs)
    (y_value,) = y.values()
    if loss == "xent":
        t = rng.random(y_value.shape)
        t /= t.sum(axis=-1, keepdims=True)
    else:
        t = rng.standard_normal(y_value.shape)
    name = next(iter(y))
    forward_inputs[f"{name}_target"] = t
    grads = run_function(differentiated(module), forward_inputs)

    def loss_at(values):
        return float(run_function(module, values)["loss"])

    checked = 0
    for arg, value in inputs.items():
        if arg in int_inputs:
            continue
        grad = grads[f"d{arg}"]
        assert grad.shape == value.shape
        flat = rng.choice(value.size, size=min(samples, value.size), replace=False)
        for position in flat:
            index = np.unravel_index(position, value.shape)
            eps = 1e-6
            plus, minus = value.copy(), value.copy()
            plus[index] += eps
            minus[index] -= eps
            numeric = (loss_at({**forward_inputs, arg: plus}) - loss_at({**forward_inputs, arg: minus})) / (2 * eps)
            assert grad[index] == pytest.approx(numeric, rel=1e-4, abs=1e-6), (arg, index)
            checked += 1
    assert checked


def normal(rng, shape):
    return rng.standard_normal(shape)


@settings(max_examples=10)
@given(
    n=st.integers(1, 2), c=st.integers(1, 2), f=st.integers(1, 3), h=st.integers(3, 6), w=st.integers(3, 5),
    k=st.sampled_from([1, 2, 3]), stride=st.sampled_from([1, 2]), pad=st.sampled_from([0, 1]),
    dilation=st.sampled_from([1, 1, 2]), seed=st.integers(0, 99),
)
def test_conv_strided_padded(n, c, f, h, w, k, stride, pad, dilation, seed):
    span = dilation * (k - 1) + 1
    if span > min(h, w) + 2 * pad:
        return
    rng = np.random.default_rng(seed)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], strides=[stride, stride], pads=[pad] * 4,
                            dilations=[dilation, dilation])
    ho, wo = (h + 2 * pad - span) // stride + 1, (w + 2 * pad - span) // stride + 1
    model = model_of([node], {"x": (DOUBLE, [n, c, h, w]), "w": (DOUBLE, [f, c, k, k]), "b": (DOUBLE, [f])},
                     ("y", [n, f, ho, wo]))
    check_gradients(model, {"x": normal(rng, (n, c, h, w)), "w": normal(rng, (f, c, k, k)), "b": normal(rng, (f,))},
                    seed=seed)


@settings(max_examples=8)
@given(kind=st.sampled_from(["MaxPool", "AveragePool"]), h=st.integers(3, 6), k=st.sampled_from([2, 3]),
       stride=st.sampled_from([1, 2]), pad=st.sampled_from([0, 1]), seed=st.integers(0, 99))
def test_pooling(kind, h, k, stride, pad, seed):
    if pad >= k:
        return
    rng = np.random.default_rng(seed)
    node = helper.make_node(kind, ["x"], ["y"], kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4)
    ho = (h + 2 * pad - k) // stride + 1
    model = model_of([node], {"x": (DOUBLE, [1, 2, h, h])}, ("y", [1, 2, ho, ho]))
    check_gradients(model, {"x": normal(rng, (1, 2, h, h))}, seed=seed)


@settings(max_examples=8)
@given(m=st.integers(1, 4), k=st.integers(1, 5), n=st.integers(1, 4), trans=st.booleans(), seed=st.integers(0, 99))
def test_gemm_pair_and_bias(m, k, n, trans, seed):
    rng = np.random.default_rng(seed)
    shape_b = (n, k) if trans else (k, n)
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], transB=int(trans))
    model = model_of([node], {"a": (DOUBLE, [m, k]), "b": (DOUBLE, list(shape_b)), "c": (DOUBLE, [n])}, ("y", [m, n]))
    check_gradients(model, {"a": normal(rng, (m, k)), "b": normal(rng, shape_b), "c": normal(rng, (n,))},
                    loss="xent", seed=seed)


UNARY = ["Relu", "Tanh", "Sigmoid", "Exp", "Erf", "Gelu", "Abs", "Neg", "Softplus", "Elu", "LeakyRelu"]


@settings(max_examples=12)
@given(op=st.sampled_from(UNARY), shape=st.sampled_from([(3,), (2, 3), (2, 1, 4)]), seed=st.integers(0, 99))
def test_elementwise_unary(op, shape, seed):
    rng = np.random.default_rng(seed)
    node = helper.make_node(op, ["x"], ["y"])
    model = model_of([node], {"x": (DOUBLE, list(shape))}, ("y", list(shape)), opset=20)
    check_gradients(model, {"x": normal(rng, shape)}, seed=seed)


@settings(max_examples=10)
@given(op=st.sampled_from(["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"]), broadcast=st.booleans(),
       seed=st.integers(0, 99))
def test_elementwise_binary(op, broadcast, seed):
    rng = np.random.default_rng(seed)
    sb = (3,) if broadcast else (2, 3)
    a, b = normal(rng, (2, 3)), normal(rng, sb)
    if op in ("Div", "Pow"):
        a, b = np.abs(a) + 0.5, np.abs(b) + 0.5
    node = helper.make_node(op, ["a", "b"], ["y"])
    model = model_of([node], {"a": (DOUBLE, [2, 3]), "b": (DOUBLE, list(sb))}, ("y", [2, 3]))
    check_gradients(model, {"a": a, "b": b}, seed=seed)


@settings(max_examples=6)
@given(rows=st.integers(1, 3), cols=st.integers(2, 5), log=st.booleans(), seed=st.integers(0, 99))
def test_softmax(rows, cols, log, seed):
    rng = np.random.default_rng(seed)
    node = helper.make_node("LogSoftmax" if log else "Softmax", ["x"], ["y"], axis=-1)
    model = model_of([node], {"x": (DOUBLE, [rows, cols])}, ("y", [rows, cols]))
    check_gradients(model, {"x": normal(rng, (rows, cols))}, seed=seed)


@settings(max_examples=6)
@given(rows=st.integers(1, 3), cols=st.integers(2, 6), seed=st.integers(0, 99))
def test_layer_norm(rows, cols, seed):
    rng = np.random.default_rng(seed)
    node = helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1, epsilon=1e-5, stash_type=DOUBLE)
    model = model_of([node], {"x": (DOUBLE, [rows, cols]), "g": (DOUBLE, [cols]), "b": (DOUBLE, [cols])},
                     ("y", [rows, cols]))
    check_gradients(model, {"x": normal(rng, (rows, cols)), "g": normal(rng, (cols,)), "b": normal(rng, (cols,))},
                    seed=seed)


@settings(max_examples=8)
@given(op=st.sampled_from(["ReduceSum", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceSumSquare"]),
       axis=st.sampled_from([0, 1, 2]), keep=st.booleans(), seed=st.integers(0, 99))
def test_reductions(op, axis, keep, seed):
    rng = np.random.default_rng(seed)
    shape = (2, 3, 4)
    out = [d for i, d in enumerate(shape) if i != axis] if not keep else [1 if i == axis else d for i, d in enumerate(shape)]
    axes = numpy_helper.from_array(np.array([axis], np.int64), "axes")
    node = helper.make_node(op, ["x", "axes"], ["y"], keepdims=int(keep))
    model = model_of([node], {"x": (DOUBLE, list(shape))}, ("y", out), initializers=[axes])
    check_gradients(model, {"x": normal(rng, shape)}, seed=seed)


@settings(max_examples=8)
@given(start=st.integers(0, 2), step=st.sampled_from([1, 2, 3, -1, -2]), seed=st.integers(0, 99))
def test_reshape_transpose_slice(start, step, seed):
    rng = np.random.default_rng(seed)
    begin, end = (start, 8) if step > 0 else (7 - start, -9)
    count = len(range(8)[begin:end:step])
    inits = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in
             [("shape", [3, 8]), ("starts", [begin]), ("ends", [end]), ("axes", [1]), ("steps", [step])]]
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0, 2]),
        helper.make_node("Reshape", ["t", "shape"], ["r"]),
        helper.make_node("Slice", ["r", "starts", "ends", "axes", "steps"], ["y"]),
    ]
    model = model_of(nodes, {"x": (DOUBLE, [2, 3, 4])}, ("y", [3, count]), initializers=inits)
    check_gradients(model, {"x": normal(rng, (2, 3, 4))}, samples=6, seed=seed)


@settings(max_examples=6)
@given(axis=st.sampled_from([0, 1]), ids=st.lists(st.integers(0, 3), min_size=1, max_size=5), seed=st.integers(0, 99))
def test_gather_scatters_into_the_table(axis, ids, seed):
    """Repeated ids sum their rows' gradients (ScatterElements with reduction add)."""
    rng = np.random.default_rng(seed)
    table = normal(rng, (4, 4))
    node = helper.make_node("Gather", ["e", "i"], ["y"], axis=axis)
    out = [len(ids), 4] if axis == 0 else [4, len(ids)]
    model = model_of([node], {"e": (DOUBLE, [4, 4]), "i": (TensorProto.INT64, [len(ids)])}, ("y", out))
    check_gradients(model, {"e": table, "i": np.array(ids, np.int64)}, samples=8, seed=seed, int_inputs=("i",))


def test_two_layer_mlp_against_numpy():
    """Eq. 1-2 by hand: dX = dY W^T, dW = X^T dY for each layer of a relu MLP."""
    rng = np.random.default_rng(1)
    text = """
    func.func @main(%x: tensor<4x6xf64> {irc.name = "x"}, %w1: tensor<6x5xf64> {irc.name = "w1", irc.weight},
                    %w2: tensor<5x3xf64> {irc.name = "w2", irc.weight}, %dy: tensor<4x3xf64> {irc.name = "dy", irc.grad_of = 0 : i64})
        -> (tensor<4x3xf64> {irc.name = "y"}) {
      %h = te.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w1) : (tensor<4x6xf64>, tensor<6x5xf64>) -> tensor<4x5xf64>
      %a = te.op "A[m,n] = relu(H[m,n])" (%h) : (tensor<4x5xf64>) -> tensor<4x5xf64>
      %y = te.op "Y[m,n] += A[m,k] * W[k,n]" (%a, %w2) : (tensor<4x5xf64>, tensor<5x3xf64>) -> tensor<4x3xf64>
      func.return %y : tensor<4x3xf64>
    }
    """
    module = differentiated(parse_module(text, "mlp.mlir"), wrt="auto")
    x, w1, w2, dy = (rng.standard_normal(s) for s in [(4, 6), (6, 5), (5, 3), (4, 3)])
    got = run_function(module, {"x": x, "w1": w1, "w2": w2, "dy": dy})
    h = x @ w1
    a = np.maximum(h, 0)
    da = dy @ w2.T
    dh = da * (h > 0)
    np.testing.assert_allclose(got["dw2"], a.T @ dy, rtol=1e-12)
    np.testing.assert_allclose(got["dw1"], x.T @ dh, rtol=1e-12)
    assert set(got) == {"y", "dw1", "dw2"}


def test_output_gradient_arguments():
    node = helper.make_node("MatMul", ["a", "b"], ["y"])
    model = model_of([node], {"a": (DOUBLE, [2, 3]), "b": (DOUBLE, [3, 4])}, ("y", [2, 4]))
    module = import_model(model).module
    append_output_gradients(module)
    rng = np.random.default_rng(0)
    a, b, dy = rng.standard_normal((2, 3)), rng.standard_normal((3, 4)), rng.standard_normal((2, 4))
    got = run_function(differentiated(module), {"a": a, "b": b, "dy": dy})
    np.testing.assert_allclose(got["da"], dy @ b.T, rtol=1e-12)
    np.testing.assert_allclose(got["db"], a.T @ dy, rtol=1e-12)


def _error(text: str) -> str:
    module = parse_module(text, "bad.mlir")
    with pytest.raises(DiagnosticException) as caught:
        TeAutodiff().apply(make_context(), module)
    return str(caught.value)


def test_non_scalar_loss_without_gradient_is_an_error():
    message = _error("""
    func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
      %y = te.op "Y[i,j] = relu(X[i,j])" (%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
      func.return %y : tensor<2x3xf32>
    }""")
    assert "bad.mlir:4:7: error: 'func.return' op the last result (tensor<2x3xf32>) is not a scalar loss" in message


def test_loss_without_differentiable_path_is_an_error():
    message = _error("""
    func.func @main(%x: tensor<3xf32>) -> tensor<f32> {
      %r = te.op "R[i] = floor(X[i])" (%x) : (tensor<3xf32>) -> tensor<3xf32>
      %l = te.op "L[] += R[i]" (%r) : (tensor<3xf32>) -> tensor<f32>
      func.return %l : tensor<f32>
    }""")
    assert "bad.mlir:4:7: error: 'te.op' op the loss has no differentiable path to any of arg0" in message


def test_op_without_rule_is_an_error():
    message = _error("""
    func.func @main(%x: tensor<2x4xf32>) -> tensor<f32> {
      %s = te.opaque "Sort"(%x) {axis = 1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
      %l = te.op "L[] += S[i,j]" (%s) : (tensor<2x4xf32>) -> tensor<f32>
      func.return %l : tensor<f32>
    }""")
    assert "bad.mlir:3:7: error: 'te.opaque' op 'te.opaque' \"Sort\" has no gradient rule" in message


def test_irc_translate_trains_an_imported_model(tmp_path, capsys):
    """--loss mse: the weights (initializers) get gradients, the input does not."""
    from irc.tools.irc_translate import run as translate

    rng = np.random.default_rng(3)
    w, b = rng.standard_normal((5, 3)), rng.standard_normal(3)
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["y"])]
    model = model_of(nodes, {"x": (DOUBLE, [4, 5])}, ("y", [4, 3]),
                     initializers=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    out = tmp_path / "m.mlir"
    assert translate(["--import-onnx", str(path), "--loss", "mse", "-o", str(out)]) == 0
    module = parse_module(out.read_text(), str(out))
    x, t = rng.standard_normal((4, 5)), rng.standard_normal((4, 3))
    got = run_function(module, {"x": x, "y_target": t})
    y = x @ w + b
    dy = 2 * (y - t) / y.size
    np.testing.assert_allclose(got["loss"], ((y - t) ** 2).mean(), rtol=1e-12)
    np.testing.assert_allclose(got["dw"], x.T @ dy, rtol=1e-10)
    np.testing.assert_allclose(got["db"], dy.sum(axis=0), rtol=1e-10)
    assert "dx" not in got
    with pytest.raises(SystemExit):  # one way to train at a time
        translate(["--import-onnx", str(path), "--output-gradient", "--loss", "xent"])
    assert translate(["--import-onnx", str(path), "--output-gradient", "-o", str(out)]) == 0
    dy = rng.standard_normal((4, 3))
    got = run_function(parse_module(out.read_text(), str(out)), {"x": x, "dy": dy})
    np.testing.assert_allclose(got["dw"], x.T @ dy, rtol=1e-10)


def test_irc_translate_explicit_gradient_and_errors(tmp_path, capsys):
    from irc.tools.irc_translate import run as translate

    nodes = [helper.make_node("ArgMax", ["x"], ["i"], axis=1), helper.make_node("Cast", ["i"], ["y"], to=DOUBLE)]
    model = model_of(nodes, {"x": (DOUBLE, [2, 3])}, ("y", [2, 1]))
    path = tmp_path / "argmax.onnx"
    onnx.save(model, path)
    capsys.readouterr()
    assert translate(["--import-onnx", str(path), "--loss", "mse"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error:" in err and "Traceback" not in err
    assert "the loss has no differentiable path to any of x" in err
    nodes = [helper.make_node("TopK", ["x", "k"], ["y", "i"], axis=1)]
    model = model_of(nodes, {"x": (DOUBLE, [2, 3])}, ("y", [2, 2]),
                     initializers=[numpy_helper.from_array(np.array([2], np.int64), "k")])
    onnx.save(model, path)
    assert translate(["--import-onnx", str(path), "--loss", "mse"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'te.opaque' \"TopK\" has no gradient rule" in err


def test_plugin_gradient_rule_comes_first():
    """tests/plugin_example registers a closed-form softsign rule; it wins over the
    expression rule and still agrees with numpy."""
    text = """
    func.func @main(%x: tensor<5xf64> {irc.name = "x"}, %dy: tensor<5xf64> {irc.name = "dy", irc.grad_of = 0 : i64}) -> tensor<5xf64> {
      %y = te.op "Y[i] = X[i] / (1 + abs(X[i]))" (%x) : (tensor<5xf64>) -> tensor<5xf64>
      func.return %y : tensor<5xf64>
    }
    """
    module = differentiated(parse_module(text, "softsign.mlir"))
    exprs = [op.expression.text for op in module.walk() if hasattr(op, "expression")]
    assert "DS[i] = G[i] / ((1 + abs(X[i])) * (1 + abs(X[i])))" in exprs
    x, dy = np.linspace(-2, 2, 5), np.arange(5.0)
    np.testing.assert_allclose(run_function(module, {"x": x, "dy": dy})["dx"], dy / (1 + abs(x)) ** 2)


@pytest.mark.parametrize("name", ["res", "mob", "bert", "T5", "yolo", "ncf"])
def test_workload_gradients_against_finite_differences(name):
    """Each IGO workload, scaled down and in f64: te-autodiff's weight gradients against
    central differences of the loss (two entries of every weight)."""
    from irc.workloads.igo import scaled_down
    from irc.runner import find_function

    text = scaled_down("f64")[name]
    forward = parse_module(text, f"{name}.mlir")
    backward = parse_module(text, f"{name}.mlir")
    TeAutodiff().apply(make_context(), backward)
    signature = find_function(forward, None)
    rng = np.random.default_rng(0)
    inputs = {}
    for arg, type_ in zip(signature.arg_names, signature.function.function_type.inputs):
        shape = tuple(type_.get_shape())
        integer = "i64" in str(type_.get_element_type())
        inputs[arg] = rng.integers(0, 6, shape).astype(np.int64) if integer else rng.standard_normal(shape) * 0.5
    gradients = run_function(backward, inputs)
    loss = lambda values: float(run_function(forward, values)["loss"])  # noqa: E731
    eps = 1e-6
    assert signature.weight_names
    for weight in signature.weight_names:
        value = inputs[weight]
        for position in rng.choice(value.size, size=min(2, value.size), replace=False):
            index = np.unravel_index(position, value.shape)
            plus, minus = value.copy(), value.copy()
            plus[index] += eps
            minus[index] -= eps
            numeric = (loss({**inputs, weight: plus}) - loss({**inputs, weight: minus})) / (2 * eps)
            assert gradients[f"d{weight}"][index] == pytest.approx(numeric, rel=1e-5, abs=1e-6), (weight, index)
