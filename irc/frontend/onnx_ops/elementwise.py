"""Elementwise ONNX operators (unary, binary, comparisons, variadic, Where) as te ops."""

from __future__ import annotations


import numpy as np
from onnx import helper

from irc.frontend.onnx_graph import (
    Body,
    NodeError,
    Tensor,
    axes,
    broadcast_shapes,
    dtype_of,
    onnx_dtype,
    shape_of,
)
from irc.frontend.onnx_ops.registry import attr, constant, converter, join


def elementwise(im, inputs, make_body, dtype=None) -> Tensor:
    shape = broadcast_shapes(*[shape_of(v) for v in inputs])
    out = axes(len(shape))
    body = Body(im)
    reads = [body.broadcast_read(v, out) for v in inputs]
    text = f"Y[{join(out)}] = {make_body(*reads)}"
    return im.emit(body, text, shape, dtype or dtype_of(inputs[0]))


UNARY = {
    "Relu": "relu({0})", "Tanh": "tanh({0})", "Sigmoid": "sigmoid({0})", "Erf": "erf({0})",
    "Sqrt": "sqrt({0})", "Exp": "exp({0})", "Log": "log({0})", "Abs": "abs({0})",
    "Neg": "neg({0})", "Reciprocal": "1 / {0}", "Floor": "floor({0})", "Ceil": "ceil({0})",
    "Round": "round({0})", "Sign": "sign({0})", "Not": "not({0})",
    "Softsign": "{0} / (1 + abs({0}))", "Softplus": "log(exp({0}) + 1)",
    "HardSwish": "{0} * max(0, min(1, {0} / 6 + 0.5))",
}


@converter(*UNARY)
def _unary(im, node, inputs):
    return [elementwise(im, inputs[:1], UNARY[node.op_type].format)]


@converter("IsNaN")
def _isnan(im, node, inputs):
    return [elementwise(im, inputs[:1], "isnan({0})".format, np.dtype(bool))]


@converter("IsInf")
def _isinf(im, node, inputs):
    positive, negative = attr(node, "detect_positive", 1), attr(node, "detect_negative", 1)
    if positive and negative:
        text = "isinf({0})"
    elif positive:
        text = "and(isinf({0}), {0} > 0)"
    elif negative:
        text = "and(isinf({0}), {0} < 0)"
    else:
        text = "{0} != {0} == ({0} == {0})"  # always false
    return [elementwise(im, inputs[:1], text.format, np.dtype(bool))]


@converter("Identity", "Dropout")
def _identity(im, node, inputs):
    if node.op_type == "Dropout":
        if len(inputs) > 2 and inputs[2] is not None:
            training = constant(node, inputs[2], "training_mode")
            if bool(np.asarray(training).reshape(-1)[0]):
                raise NodeError("training_mode=1 is not supported (inference only)")
        if len(node.output) > 1 and node.output[1]:
            mask = np.ones(shape_of(inputs[0]), dtype=bool)
            return [inputs[0], mask]
    return [inputs[0]]


@converter("Cast", "CastLike")
def _cast(im, node, inputs):
    if node.op_type == "Cast":
        dtype = onnx_dtype(attr(node, "to"))
    else:
        dtype = dtype_of(inputs[1])
    source = dtype_of(inputs[0])
    onnx_dtype(helper.np_dtype_to_tensor_dtype(source))  # rejects unsupported sources
    if source == dtype:
        return [inputs[0]]
    return [elementwise(im, inputs[:1], "cast({0})".format, dtype)]


@converter("Gelu")
def _gelu(im, node, inputs):
    approximate = attr(node, "approximate", b"none")
    approximate = approximate.decode() if isinstance(approximate, bytes) else approximate
    if approximate == "none":  # or "tanh" (onnx_attributes checks the value)
        text = "gelu({0})"
    else:
        text = "0.5 * {0} * (1 + tanh(0.7978845608028654 * ({0} + 0.044715 * {0} * {0} * {0})))"
    return [elementwise(im, inputs[:1], text.format)]


def _float_attr(node, name, default):
    value = float(attr(node, name, default))
    with np.errstate(over="ignore"):
        single = float(np.float32(value))
    if not np.isfinite(single):  # an expression has no literal for inf (beyond f32 is inf)
        raise NodeError(f"attribute '{name}' is {value!r}; irc takes finite attributes within f32's range")
    return repr(single)


@converter("LeakyRelu")
def _leaky_relu(im, node, inputs):
    alpha = _float_attr(node, "alpha", 0.01)
    return [elementwise(im, inputs[:1], lambda x: f"select({x} < 0, {x} * {alpha}, {x})")]


@converter("PRelu")
def _prelu(im, node, inputs):
    return [elementwise(im, inputs[:2], lambda x, s: f"select({x} < 0, {x} * {s}, {x})")]


@converter("Elu")
def _elu(im, node, inputs):
    alpha = _float_attr(node, "alpha", 1.0)
    return [elementwise(im, inputs[:1], lambda x: f"select({x} < 0, {alpha} * (exp({x}) - 1), {x})")]


@converter("Selu")
def _selu(im, node, inputs):
    alpha = _float_attr(node, "alpha", 1.67326319217681884765625)
    gamma = _float_attr(node, "gamma", 1.05070102214813232421875)
    return [elementwise(
        im, inputs[:1], lambda x: f"select({x} <= 0, {gamma} * ({alpha} * exp({x}) - {alpha}), {gamma} * {x})"
    )]


@converter("HardSigmoid")
def _hard_sigmoid(im, node, inputs):
    alpha, beta = _float_attr(node, "alpha", 0.2), _float_attr(node, "beta", 0.5)
    return [elementwise(im, inputs[:1], lambda x: f"max(0, min(1, {alpha} * {x} + {beta}))")]


@converter("Clip")
def _clip(im, node, inputs):
    x, low, high = (inputs + [None, None])[:3]
    operands, text = [x], "{0}"
    if low is not None:
        operands.append(low)
        text = f"max({text}, {{{len(operands) - 1}}})"
    if high is not None:
        operands.append(high)
        text = f"min({text}, {{{len(operands) - 1}}})"
    if len(operands) == 1:
        return [x]
    return [elementwise(im, operands, text.format)]


BINARY = {
    "Add": "{0} + {1}", "Sub": "{0} - {1}", "Mul": "{0} * {1}", "Div": "{0} / {1}",
    "Pow": "pow({0}, {1})", "And": "and({0}, {1})", "Or": "or({0}, {1})", "Xor": "xor({0}, {1})",
}


COMPARE = {
    "Equal": "==", "Less": "<", "LessOrEqual": "<=", "Greater": ">", "GreaterOrEqual": ">=",
}


@converter(*BINARY)
def _binary(im, node, inputs):
    return [elementwise(im, inputs[:2], BINARY[node.op_type].format)]


@converter(*COMPARE)
def _compare(im, node, inputs):
    op = COMPARE[node.op_type]
    return [elementwise(im, inputs[:2], lambda a, b: f"{a} {op} {b}", np.dtype(bool))]


@converter("Mod")
def _mod(im, node, inputs):
    function = "fmod" if attr(node, "fmod", 0) else "mod"
    return [elementwise(im, inputs[:2], lambda a, b: f"{function}({a}, {b})")]


@converter("Max", "Min", "Sum", "Mean")
def _variadic(im, node, inputs):
    if len(inputs) == 1:
        return [inputs[0]]
    count = len(inputs)
    fold = node.op_type.lower() if node.op_type in ("Max", "Min") else None

    def combine(reads):
        if fold is not None:
            text = reads[0]
            for read in reads[1:]:
                text = f"{fold}({text}, {read})"
            return text
        return " + ".join(reads)

    # Many inputs (an exporter's Sum of hundreds): partial results of VARIADIC_CHUNK each,
    # so that no expression nests or grows beyond what te holds.
    values = list(inputs)
    while len(values) > VARIADIC_CHUNK:
        values = [elementwise(im, values[i:i + VARIADIC_CHUNK], lambda *reads: combine(reads))
                  for i in range(0, len(values), VARIADIC_CHUNK)]

    def make(*reads):
        text = combine(reads)
        return f"({text}) / {count}" if node.op_type == "Mean" else text

    return [elementwise(im, values, make)]


VARIADIC_CHUNK = 32


"""Inputs combined by one te op of a variadic Max/Min/Sum/Mean."""


@converter("Where")
def _where(im, node, inputs):
    condition, a, b = inputs
    shape = broadcast_shapes(shape_of(condition), shape_of(a), shape_of(b))
    out = axes(len(shape))
    body = Body(im)
    text = (
        f"Y[{join(out)}] = select({body.broadcast_read(condition, out)}, "
        f"{body.broadcast_read(a, out)}, {body.broadcast_read(b, out)})"
    )
    dtype = dtype_of(a)
    return [im.emit(body, text, shape, dtype)]
