"""rtensor-partition: a partitioned program computes exactly what its te form does,
every te.op gets the planner's fastest plan, and the pass options are checked."""

import numpy as np
import pytest
from xdsl.utils.exceptions import DiagnosticException

from irc.dialects.target import target_of
from irc.lowering.rtensor_plan import idle_plan, op_spec, scored_plan, stated_plan
from irc.dialects.rtensor import RelayoutOp, RTensorOp, RTensorType
from irc.dialects.te import TensorOp
from irc.planner import search
from irc.runner import make_context, parse_module, run_function
from irc.lowering.te_to_rtensor import RTensorPartition

PROGRAM = """\
func.func @main(%x: tensor<2x4x10x10xf32> {irc.name = "x"}, %w: tensor<8x4x3x3xf32> {irc.name = "w"},
                %a: tensor<16x24xf32> {irc.name = "a"}, %b: tensor<24x8xf32> {irc.name = "b"},
                %q: tensor<4x8x16xf16> {irc.name = "q"}, %k: tensor<4x16x8xf16> {irc.name = "k"})
    -> (tensor<2x8x4x4xf32> {irc.name = "pooled"}, tensor<16xf32> {irc.name = "rowsum"}, tensor<4x8x8xf16> {irc.name = "scores"}) {
  %y = te.op "Y[n,f,h,w] += X[n,c,h+r,w+s] * W[f,c,r,s]" (%x, %w) : (tensor<2x4x10x10xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x8x8xf32>
  %r = te.op "R[n,f,h,w] = relu(Y[n,f,h,w])" (%y) : (tensor<2x8x8x8xf32>) -> tensor<2x8x8x8xf32>
  %p = te.op "P[n,c,h,w] max= R[n,c,2*h+i,2*w+j] where i in 2, j in 2" (%r) : (tensor<2x8x8x8xf32>) -> tensor<2x8x4x4xf32>
  %c = te.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) : (tensor<16x24xf32>, tensor<24x8xf32>) -> tensor<16x8xf32>
  %e = te.op "E[m,n] = C[m,n] * C[m,n] + 1" (%c) : (tensor<16x8xf32>) -> tensor<16x8xf32>
  %s = te.op "S[m] += E[m,n]" (%e) : (tensor<16x8xf32>) -> tensor<16xf32>
  %t = te.op "T[b,i,j] += Q[b,i,d] * K[b,d,j] * 0.25" (%q, %k) : (tensor<4x8x16xf16>, tensor<4x16x8xf16>) -> tensor<4x8x8xf16>
  func.return %p, %s, %t : tensor<2x8x4x4xf32>, tensor<16xf32>, tensor<4x8x8xf16>
}
"""


def partitioned(device, cost="t10", mode="model"):
    module = parse_module(PROGRAM, "program.mlir")
    RTensorPartition(device=device, cost=cost, mode=mode).apply(make_context(), module)
    module.verify()
    return module


@pytest.mark.parametrize("device, mode", [("tiny8", "model"), ("tiny16", "model"), ("tiny16", "op")])
def test_partitioned_program_computes_what_te_computes(device, mode):
    reference = run_function(parse_module(PROGRAM, "program.mlir"), seed=3)
    module = partitioned(device, mode=mode)
    # the printed rtensor program parses back and runs too (what irc-run does)
    results = run_function(parse_module(str(module), "partitioned.mlir"), seed=3)
    assert results.keys() == reference.keys()
    for name, value in reference.items():
        assert results[name].dtype == value.dtype
        np.testing.assert_array_equal(results[name], value, err_msg=name)


def test_every_te_op_gets_the_fastest_plan():
    """mode=op: each op on its own gets the planner's fastest plan."""
    module = partitioned("tiny16", mode="op")
    ops = list(module.walk())
    assert not any(isinstance(op, TensorOp) for op in ops)
    planned = [op for op in ops if isinstance(op, RTensorOp)]
    assert len(planned) == 7
    for op in planned:
        best = search(op_spec(op), "tiny16", "t10").best
        assert stated_plan(op) == best.unscored(), op.expression.text
        assert scored_plan(op).seconds == pytest.approx(best.seconds)
    # values flow on the chip between ops: relayouts leave the chip only at the return
    to_host = [op for op in ops if isinstance(op, RelayoutOp) and not isinstance(op.result.type, RTensorType)]
    assert len(to_host) == 3
    assert all(next(iter(op.result.uses)).operation.name == "func.return" for op in to_host)


def test_seed003_cost_model_plans_matmul_and_conv():
    text = PROGRAM.split("  %r =")[0] + "  func.return %y : tensor<2x8x8x8xf32>\n}\n"
    text = text.replace(
        "-> (tensor<2x8x4x4xf32> {irc.name = \"pooled\"}, tensor<16xf32> {irc.name = \"rowsum\"}, tensor<4x8x8xf16> {irc.name = \"scores\"})",
        "-> tensor<2x8x8x8xf32>",
    )
    module = parse_module(text, "conv.mlir")
    RTensorPartition(device="tiny16", cost="seed003", mode="op").apply(make_context(), module)
    (op,) = [op for op in module.walk() if isinstance(op, RTensorOp)]
    assert target_of(op).cost_name == "seed003"
    module.verify()


@pytest.mark.parametrize(
    "options, message",
    [
        ({"mode": "fast"}, "unknown mode=fast; known modes: model, op"),
        ({"device": "tpu"}, "unknown device 'tpu'; known devices: ipu-mk2, .*tiny4, tiny8"),
        ({"cost": "vgm"}, "unknown cost model 'vgm'; known cost models: engdesign, igo, mtia, seed003, t10"),
        ({"split": "even"}, r"unknown preload=full or split=even; known: preload=full\|dyn"),
    ],
)
def test_bad_options_are_diagnostics(options, message):
    module = parse_module(PROGRAM, "program.mlir")
    with pytest.raises(DiagnosticException, match=message):
        RTensorPartition(**options).apply(make_context(), module)


TOO_BIG = """\
func.func @main(%a: tensor<16x24xf32>, %b: tensor<24x8xf32>, %c: tensor<64x512xf32>, %d: tensor<512x64xf32>) -> tensor<64x64xf32> {
  %small = te.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) : (tensor<16x24xf32>, tensor<24x8xf32>) -> tensor<16x8xf32>
  %big = te.op "C[m,n] += A[m,k] * B[k,n]" (%c, %d) : (tensor<64x512xf32>, tensor<512x64xf32>) -> tensor<64x64xf32>
  func.return %big : tensor<64x64xf32>
}
"""


@pytest.mark.parametrize("mode", ["op", "model"])
def test_no_fitting_plan_names_the_op_and_least_memory(mode):
    module = parse_module(TOO_BIG, "program.mlir")
    before = str(module)
    with pytest.raises(DiagnosticException) as caught:
        RTensorPartition(device="tiny4", mode=mode).apply(make_context(), module)
    message = str(caught.value)
    assert message.startswith("program.mlir:3:3: error: 'te.op' op \"C[m,n] += A[m,k] * B[k,n]\" on tiny4")
    assert "no plan fits: the least memory per core any plan needs is" in message
    assert "but tiny4 has 4096 bytes of SRAM per core" in message
    assert str(module) == before  # planning happens before any rewrite
