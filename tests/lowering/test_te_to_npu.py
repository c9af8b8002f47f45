"""A forward pass on an NPU (``inference{device=npu-...}``, te-to-npu; issue 25, item 6):
each forward GEMM becomes an `npu.matmul` whose executed program computes what the te
interpreter computes, for an MLP, a convolution read im2col and a transposed weight, on
one core and on four; what it costs is irc.cost.igo's model of the same schedule; ops
with no GEMM view stay te; bad options and a layer too large for the scratchpad are one
diagnostic naming the option or the layer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.utils.exceptions import DiagnosticException

from irc.cost.igo import Layer
from irc.planner.igo import evaluate
from irc.devices import load_device
from irc.dialects.npu import GemmOp, MatmulOp
from irc.dialects.te import TensorOp
from irc.lowering.te_to_npu import TeToNpu
from irc.passes.pipelines import InferencePipeline, TrainingPipeline
from irc.passes.te_autodiff import TeAutodiff
from irc.runner import make_context, parse_module, run

CRUMB = Path(__file__).resolve().parents[1] / "filecheck/passes/igo-to-npu/Inputs/npu_crumb.toml"

MLP = """func.func @main(%x: tensor<8x64xf32>, %w1: tensor<64x32xf32>, %b1: tensor<32xf32>, %w2: tensor<16x32xf32>)
    -> tensor<8x16xf32> {
  %h = te.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w1) : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  %a = te.op "A[m,n] = relu(H[m,n] + B[n])" (%h, %b1) : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %y = te.op "Y[m,n] += A[m,k] * V[n,k]" (%a, %w2) : (tensor<8x32xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
  func.return %y : tensor<8x16xf32>
}"""

CONV = """func.func @main(%x: tensor<2x3x9x9xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x4x7x7xf32> {
  %y = te.op "Y[b,o,p,q] += X[b,c,p+r,q+s] * W[o,c,r,s]" (%x, %w) : (tensor<2x3x9x9xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x7x7xf32>
  func.return %y : tensor<2x4x7x7xf32>
}"""

BATCHED = """func.func @main(%a: tensor<2x4x8xf32>, %b: tensor<2x8x4xf32>) -> tensor<2x4x4xf32> {
  %y = te.op "Y[h,m,n] += A[h,m,k] * B[h,k,n]" (%a, %b) : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  func.return %y : tensor<2x4x4xf32>
}"""


def lowered(text: str, **options):
    module = parse_module(text, "forward.mlir")
    InferencePipeline(**options).apply(make_context(), module)
    module.verify()
    return module


@pytest.mark.parametrize("text", [MLP, CONV], ids=["mlp", "conv"])
@pytest.mark.parametrize("device", ["npu-edge", "npu-server"])
def test_npu_forward_equals_te_numerics(text, device):
    reference = parse_module(text, "forward.mlir")
    module = lowered(text, device=device)
    assert not [op for op in module.walk() if isinstance(op, TensorOp) and "+=" in op.expression.text]
    values, _ = run(reference, None, seed=3)
    got, report = run(module, None, seed=3)
    for name, value in values.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-4)
    assert report is not None and len(report.kernels) == sum(isinstance(o, MatmulOp) for o in module.walk())


def test_npu_forward_on_four_cores_splits_m_and_keeps_numerics():
    text = MLP.replace("8x", "512x")
    module = parse_module(text, "forward.mlir")
    TeToNpu(device="npu-server", cores=4).apply(make_context(), module)
    module.verify()
    assert {op.core_index() for op in module.walk() if isinstance(op, GemmOp)} == {0, 1, 2, 3}
    (expected,) = run(parse_module(text, "forward.mlir"), None, seed=1)[0].values()
    (got,) = run(module, None, seed=1)[0].values()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-4)


def test_executed_cost_equals_the_model():
    module = lowered(MLP, device="npu-server")
    _, report = run(module, None, seed=0)
    device = load_device("npu-server")
    for kernel, op in zip(report.kernels, [o for o in module.walk() if isinstance(o, MatmulOp)]):
        m, k, n = (int(v) for v in op.gemm.get_values())
        cost = evaluate(Layer(m, k, n, 4), device, "forward")
        assert kernel.cycles == pytest.approx(cost.cycles)
        assert kernel.dram_bytes == cost.dram_bytes
        assert kernel.array_cycles == kernel.closed_form_cycles


def test_ops_without_a_gemm_view_stay_te():
    module = lowered(BATCHED, device="npu-edge")
    assert [op.name for op in module.walk() if op.name in ("te.op", "npu.matmul")] == ["te.op"]


def test_layer_too_large_for_the_scratchpad_names_it():
    with pytest.raises(DiagnosticException, match=r"forward.mlir:3:3: error: 'te.op' op layer %h = \"H\[m,n\] \+= "
                                                   r"X\[m,k\] \* W\[k,n\]\" does not fit npu-crumb's scratchpad"):
        lowered(MLP, device=str(CRUMB))


@pytest.mark.parametrize("options,message", [
    ({"device": "npu-edge", "cost": "t10"}, "npu-edge is an NPU, priced by the igo model"),
    ({"device": "npu-edge", "preload": "dyn"}, "leave them unset"),
    ({"device": "npu-nowhere"}, "rtensor-partition: unknown device 'npu-nowhere'"),
])
def test_bad_npu_options_are_one_diagnostic(options, message):
    with pytest.raises(DiagnosticException, match=message):
        lowered(MLP, **options)


TRAIN = """func.func @main(%x: tensor<8x64xf32> {irc.name = "x"}, %w1: tensor<64x32xf32> {irc.name = "w1", irc.weight},
                %w2: tensor<32x16xf32> {irc.name = "w2", irc.weight}) -> (tensor<f32> {irc.name = "loss"}) {
  %h = te.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w1) : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  %a = te.op "A[m,n] = relu(H[m,n])" (%h) : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %y = te.op "Y[m,n] += A[m,k] * W[k,n]" (%a, %w2) : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  %l = te.op "L[] += Y[m,n] * Y[m,n] * 0.5" (%y) : (tensor<8x16xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}"""


def test_training_on_an_npu_lowers_the_forward_gemms_too():
    """``training{device=npu-...}`` ends with te-to-npu (issue 25): the forward GEMMs and
    the first layer's lone dW run as npu.matmul programs beside the fused pair's kernel,
    and the loss and gradients equal te-autodiff's run by the te interpreter."""
    reference = parse_module(TRAIN, "train.mlir")
    TeAutodiff().apply(make_context(), reference)
    module = parse_module(TRAIN, "train.mlir")
    TrainingPipeline(device="npu-server").apply(make_context(), module)
    module.verify()
    assert sum(isinstance(op, MatmulOp) for op in module.walk()) == 3   # two forward GEMMs, the lone dW
    assert not [op for op in module.walk() if isinstance(op, TensorOp) and "+=" in op.expression.text
                and len(op.inputs) == 2 and "L[]" not in op.expression.text]
    values, _ = run(reference, None, seed=5)
    got, report = run(module, None, seed=5)
    for name, value in values.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=1e-3)
    assert len(report.kernels) == 4
