"""Integer semantics (issue 27, item 10; README "Numerics"): division truncates toward
zero, ``x / 0`` is 0 and ``INT_MIN / -1`` wraps to ``INT_MIN`` (numpy's results), sums and
products wrap, a float converted to an integer truncates, NaN gives 0 and values beyond
the type saturate; the same at te level and on the chip."""

from __future__ import annotations

import numpy as np
import pytest

from irc.compile import compile_and_run
from irc.interpreter import numerics
from irc.runner import parse_module, run_function

INT_MIN = np.iinfo(np.int32).min

PROGRAM = """
func.func @main(%a: tensor<8xi32>, %b: tensor<8xi32>, %x: tensor<8xf32>, %m: tensor<8x4xi32>)
    -> (tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi8>) {
  %q = te.op "Q[i] = A[i] / B[i]" (%a, %b) : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
  %p = te.op "P[i] = A[i] * B[i]" (%a, %b) : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
  %c = te.op "C[i] = cast(X[i])" (%x) : (tensor<8xf32>) -> tensor<8xi32>
  %s = te.op "S[i] += M[i,j]" (%m) : (tensor<8x4xi32>) -> tensor<8xi32>
  %t = te.op "T[i] = cast(X[i])" (%x) : (tensor<8xf32>) -> tensor<8xi8>
  func.return %q, %p, %c, %s, %t : tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi8>
}
"""

INPUTS = {
    "arg0": np.array([7, -7, 7, INT_MIN, INT_MIN, 5, 2**30, -1], np.int32),
    "arg1": np.array([0, 2, -2, -1, 0, 0, 4, -1], np.int32),
    "arg2": np.array([3.7, -3.7, np.nan, np.inf, -np.inf, 3e9, -3e9, 200.5], np.float32),
    "arg3": np.array([[2**30, 2**30, 2**30, 2**30]] * 4 + [[1, -2, 3, -4]] * 4, np.int32),
}

EXPECTED = {
    "result0": [0, -3, -3, INT_MIN, 0, 0, 2**28, 1],                      # truncation, x/0 = 0, wrap
    "result1": [0, -14, -14, INT_MIN, 0, 0, 0, 1],                        # products wrap
    "result2": [3, -3, 0, 2**31 - 1, INT_MIN, 2**31 - 1, INT_MIN, 200],  # truncate, NaN 0, saturate
    "result3": [0, 0, 0, 0, -2, -2, -2, -2],                              # 4 * 2**30 wraps to 0
    "result4": [3, -3, 0, 127, -128, 127, -128, 127],                     # saturates in i8
}


@pytest.fixture(scope="module")
def te_and_chip():
    te = run_function(parse_module(PROGRAM, "ints.mlir"), INPUTS)
    chip, _ = compile_and_run(PROGRAM, "tiny16", inputs=INPUTS)
    return te, chip


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_integer_results_are_defined_and_equal_at_te_and_on_the_chip(te_and_chip, name):
    te, chip = te_and_chip
    assert te[name].tolist() == EXPECTED[name]
    assert chip[name].dtype == te[name].dtype
    np.testing.assert_array_equal(chip[name], te[name])


def test_float_to_int_conversion():
    values = np.array([2.9, -2.9, np.nan, np.inf, -np.inf, 2.0**63, -(2.0**63), 1e30, -0.0])
    assert numerics.float_to_int(values, np.int64).tolist() == [
        2, -2, 0, 2**63 - 1, -(2**63), 2**63 - 1, -(2**63), 2**63 - 1, 0]
    assert numerics.float_to_int(values, np.uint8).tolist() == [2, 0, 0, 255, 0, 255, 0, 255, 0]
    assert numerics.fill_value(2.0**63, np.int64) == 2**63 - 1
    assert numerics.fill_value(float("nan"), np.int32) == 0
