"""te as ELK and T10 write it (issue 11): an output axis is bounded by the output's shape,
so ``O[n] = A[n+0]`` slices a larger A; output axes no input reads broadcast; a read past
an operand's end is an error naming the access. Checked at te and device level."""

from __future__ import annotations

import numpy as np
import pytest

from irc.compile import compile_and_run
from irc.dialects.te_expr import ExprError, parse_expression
from irc.runner import parse_module, run_function

PROGRAM = """
func.func @main(%a: tensor<1x4x96xf32>, %b: tensor<4x8xf32>, %c: tensor<4xf32>)
    -> (tensor<1x4x32xf32>, tensor<1x4x32xf32>, tensor<3x4xf32>, tensor<3x4xf32>) {
  %s0 = te.op "O[n0,n1,n2] = A[n0,n1,n2+0]" (%a) : (tensor<1x4x96xf32>) -> tensor<1x4x32xf32>
  %s4 = te.op "O[n0,n1,n2] = A[n0,n1,n2+4]" (%a) : (tensor<1x4x96xf32>) -> tensor<1x4x32xf32>
  %sum = te.op "P[n0,n1] += B[n1,r2]" (%b) : (tensor<4x8xf32>) -> tensor<3x4xf32>
  %bc = te.op "O[n0,n1] = C[n1]" (%c) : (tensor<4xf32>) -> tensor<3x4xf32>
  func.return %s0, %s4, %sum, %bc : tensor<1x4x32xf32>, tensor<1x4x32xf32>, tensor<3x4xf32>, tensor<3x4xf32>
}
"""


def _inputs():
    rng = np.random.default_rng(0)
    return {
        "arg0": rng.standard_normal((1, 4, 96)).astype(np.float32),
        "arg1": rng.standard_normal((4, 8)).astype(np.float32),
        "arg2": rng.standard_normal(4).astype(np.float32),
    }


def _expected(inputs):
    a, b, c = inputs["arg0"], inputs["arg1"], inputs["arg2"]
    return [a[:, :, :32], a[:, :, 4:36], np.broadcast_to(b.sum(1), (3, 4)), np.broadcast_to(c, (3, 4))]


def test_slices_and_broadcasts_at_te_level():
    inputs = _inputs()
    results = run_function(parse_module(PROGRAM, "slices.mlir"), inputs)
    for got, want in zip(results.values(), _expected(inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("device", ["tiny4", "tiny16"])
def test_slices_and_broadcasts_at_device_level(device):
    inputs = _inputs()
    results, report = compile_and_run(PROGRAM, device=device, inputs=inputs)
    assert "te.op" not in report.device_ir
    for got, want in zip(results.values(), _expected(inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_read_past_the_operand_names_the_access():
    with pytest.raises(ExprError, match=r"A\[\.\.\.\] reads axis 'n' over \[0, 7\] \(O \(dim 0\)\) past the end "
                                        r"of A \(dim 0\), which has size 4"):
        parse_expression("O[n] = A[n]").bind([(4,)], (8,))
    with pytest.raises(ExprError, match=r"index 'n\+6' of A \(dim 0\) ranges over \[6, 9\]"):
        parse_expression("O[n] = A[n+6]").bind([(8,)], (4,))
