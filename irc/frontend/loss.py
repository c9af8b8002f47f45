"""Training losses for an imported model: what `te-autodiff` differentiates.

`append_loss(module, "mse" | "xent")` gives the function a target argument per the
loss and makes a scalar loss its last result; `append_output_gradients(module)` instead
gives it one explicit output-gradient argument per result (``irc.grad_of = i``).

* ``mse``: ``L = sum((Y - T)^2) / numel(Y)``, T shaped like Y;
* ``xent``: softmax cross-entropy over Y's last axis against target probabilities T
  (one-hot rows for labels), averaged over the other axes:
  ``L = sum(T * (max + log(sum(exp(Y - max))) - Y)) / rows``.
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.rewriter import InsertPoint, Rewriter

from irc.dialects.te import TensorOp

LOSSES = ("mse", "xent")
NAME_ATTR = "irc.name"
GRAD_OF_ATTR = "irc.grad_of"
TARGET_ATTR = "irc.loss_target"


class LossError(ValueError):
    pass


def _function(module: ModuleOp, entry: str) -> FuncOp:
    for op in module.walk():
        if isinstance(op, FuncOp) and op.sym_name.data == entry and op.body.blocks:
            return op
    raise LossError(f"no function '@{entry}' to train")


def _add_argument(function: FuncOp, type_, attrs: dict) -> object:
    block = function.body.block
    value = block.insert_arg(type_, len(block.args))
    arg_attrs = list(function.arg_attrs.data) if function.arg_attrs is not None else [
        DictionaryAttr({}) for _ in function.function_type.inputs
    ]
    function.arg_attrs = ArrayAttr([*arg_attrs, DictionaryAttr(attrs)])
    function.function_type = FunctionType.from_lists(
        [*function.function_type.inputs, type_], list(function.function_type.outputs)
    )
    return value


def _result_name(function: FuncOp, index: int) -> str:
    if function.res_attrs is not None:
        name = function.res_attrs.data[index].data.get(NAME_ATTR)
        if isinstance(name, StringAttr):
            return name.data
    return f"result{index}"


def append_loss(module: ModuleOp, kind: str, entry: str = "main", result: int = 0) -> None:
    """Append the loss of result `result` against a new argument ``<name>_target`` as
    the function's last result (named ``loss``; the other results stay before it)."""
    if kind not in LOSSES:
        raise LossError(f"unknown loss '{kind}'; known: {', '.join(LOSSES)}")
    function = _function(module, entry)
    ret = function.body.block.last_op
    assert isinstance(ret, ReturnOp)
    outputs = list(ret.arguments)
    if not 0 <= result < len(outputs):
        raise LossError(f"the function has {len(outputs)} result(s); no result {result} to train")
    y = outputs[result]
    if not isinstance(y.type, TensorType) or not isinstance(y.type.get_element_type(), AnyFloat):
        raise LossError(f"result {result} ({y.type}) is not a float tensor; it cannot be trained")
    shape = tuple(y.type.get_shape())
    if kind == "xent" and not shape:
        raise LossError("xent needs a result with a class axis (rank >= 1)")
    name = _result_name(function, result)
    target = _add_argument(function, y.type, {
        NAME_ATTR: StringAttr(f"{name}_target"), TARGET_ATTR: UnitAttr(),
    })
    element = y.type.get_element_type()
    scalar = TensorType(element, [])
    axes = [f"d{k}" for k in range(len(shape))]
    idx = ",".join(axes)
    ops = []
    if kind == "mse":
        scale = 1.0 / max(1, math.prod(shape))
        body = f"(Y[{idx}] - T[{idx}]) * (Y[{idx}] - T[{idx}]) * {scale!r}"
        ops.append(TensorOp(f"L[] += {body}", [y, target], scalar))
    else:
        row = ",".join(axes[:-1])
        row_type = TensorType(element, shape[:-1])
        peak = TensorOp(f"M[{row}] max= Y[{idx}]", [y], row_type)
        total = TensorOp(f"S[{row}] += exp(Y[{idx}] - M[{row}])", [y, peak.output], row_type)
        scale = 1.0 / max(1, math.prod(shape[:-1]))
        body = f"T[{idx}] * (M[{row}] + log(S[{row}]) - Y[{idx}]) * {scale!r}"
        loss = TensorOp(f"L[] += {body}", [target, peak.output, total.output, y], scalar)
        ops += [peak, total, loss]
    Rewriter().insert_op(ops, InsertPoint.before(ret))
    new_ret = ReturnOp(*outputs, ops[-1].output)
    new_ret.location = ret.location
    Rewriter().replace_op(ret, new_ret)
    res_attrs = list(function.res_attrs.data) if function.res_attrs is not None else [
        DictionaryAttr({}) for _ in outputs
    ]
    function.res_attrs = ArrayAttr([*res_attrs, DictionaryAttr({NAME_ATTR: StringAttr("loss")})])
    function.function_type = FunctionType.from_lists(
        list(function.function_type.inputs), [*function.function_type.outputs, scalar]
    )


def append_output_gradients(module: ModuleOp, entry: str = "main") -> None:
    """One argument ``d<result name>`` per result, marked ``irc.grad_of = i``."""
    function = _function(module, entry)
    for index, type_ in enumerate(list(function.function_type.outputs)):
        _add_argument(function, type_, {
            NAME_ATTR: StringAttr("d" + _result_name(function, index)),
            GRAD_OF_ATTR: IntegerAttr(index, i64),
        })
