"""Reshapes that only move data run on chip (issue 11): a te op ``Y[...] = X[...]`` the
planner cannot describe (a merge of axes, as the exporters' merge of attention heads)
between two planned operators becomes the relayout from one to the other, priced as the
planner prices it, so the whole model still runs as planned and no host round trip is
left."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.func import FuncOp

from irc.devices import load_device
from irc.interpreter.registry import chips_of
from irc.lowering.model_from_ir import function_model, plan_function
from irc.passes.pipelines import InferencePipeline
from irc.planner.op_table import FrontierCache
from irc.runner import check_inputs, find_function, interpreter_for, parse_module, run_function

PROGRAM = """
func.func @main(%x: tensor<1x4x2x8xf32>, %w: tensor<16x8xf32>) -> tensor<1x4x8xf32> {
  %h = te.op "H[b,s,h,d] = relu(X[b,s,h,d])" (%x) : (tensor<1x4x2x8xf32>) -> tensor<1x4x2x8xf32>
  %m = te.op "Y[0,o1,8*i2+i3] = A[0,o1,i2,i3]" (%h) : (tensor<1x4x2x8xf32>) -> tensor<1x4x16xf32>
  %y = te.op "Y[b,s,n] += A[b,s,k] * W[k,n]" (%m, %w) : (tensor<1x4x16xf32>, tensor<16x8xf32>) -> tensor<1x4x8xf32>
  func.return %y : tensor<1x4x8xf32>
}
"""


@pytest.mark.parametrize("device", ["tiny4", "tiny16"])
def test_a_merge_of_axes_between_kernels_is_the_relayout(device):
    module = parse_module(PROGRAM, "merge.mlir")
    rng = np.random.default_rng(0)
    inputs = {"arg0": rng.standard_normal((1, 4, 2, 8)).astype(np.float32),
              "arg1": rng.standard_normal((16, 8)).astype(np.float32)}
    reference = run_function(module.clone(), inputs)
    (function,) = [op for op in module.walk() if isinstance(op, FuncOp)]
    found = function_model(function)
    assert not found.fallbacks and len(found.model.ops) == 2
    planned = plan_function(found.model, FrontierCache(load_device(device), "t10")).seconds * load_device(device).clock_hz
    InferencePipeline(device=device).apply(Context(), module)
    text = str(module)
    assert "te.op" not in text and text.count("device.store ") == 1 and text.count("device.load ") == 2
    assert 'moves = [#te.expr"Y[0,o1,8*i2+i3] = A[0,o1,i2,i3]"]' in text
    module = parse_module(text, "device.mlir")
    signature = find_function(module, None)
    interpreter = interpreter_for(module)
    (result,) = interpreter.call_op(signature.function, tuple(check_inputs(signature, inputs)))
    np.testing.assert_allclose(result, reference["result0"], rtol=1e-5, atol=1e-5)
    (chip,) = chips_of(interpreter)
    assert chip.report().model_cycles == pytest.approx(planned, rel=1e-9)
