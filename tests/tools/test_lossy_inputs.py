"""Lossy float -> int (issue 27, item 5): a float 3.7 given for an integer argument was
silently truncated to 3 (``--inputs``, a module's weights file), and so was a constant
3.7 in an integer te op's body. Inputs an integer (or boolean) type would change are
refused unless ``--allow-lossy``; a non-integral constant taking an integer type is a
verifier error. Random inputs of integer arguments are integers."""

from __future__ import annotations

import numpy as np
import pytest

from irc.runner import find_function, parse_module, random_inputs
from tests.fuzzing import run_tool

PROGRAM = """\
func.func @main(%x: tensor<4xi32> {irc.name = "x"}, %b: tensor<4xi1> {irc.name = "b"}) -> (tensor<4xi32> {irc.name = "y"}) {
  %y = te.op "Y[i] = select(B[i], X[i] + 1, X[i])" (%b, %x) : (tensor<4xi1>, tensor<4xi32>) -> tensor<4xi32>
  func.return %y : tensor<4xi32>
}
"""


def _run(tmp_path, *flags, **arrays):
    program = tmp_path / "int.mlir"
    program.write_text(PROGRAM)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, **{"x": np.zeros(4, np.int32), "b": np.zeros(4, bool), **arrays})
    return run_tool("irc-run", program, "--inputs", inputs, *flags)


@pytest.mark.parametrize("arrays, message", [
    ({"x": np.array([3.7, 1.0, 2.0, 0.0])}, "input 'x' has values that are not integers (3.7) but the function expects int32"),
    ({"x": np.array([-0.5, 1.0, 2.0, 0.0], np.float32)}, "input 'x' has values that are not integers (-0.5)"),
    ({"b": np.array([0, 2, 1, 0])}, "input 'b' has values that are not 0 or 1 (2) but the function expects bool"),
    ({"b": np.array([0.0, 0.5, 1.0, 0.0])}, "input 'b' has values that are not 0 or 1 (0.5)"),
])
def test_inputs_an_integer_type_would_change_need_allow_lossy(tmp_path, arrays, message):
    refused = _run(tmp_path, **arrays)
    assert refused.kind == "diagnostic" and message in refused.stderr, refused.stderr
    assert "--allow-lossy casts them anyway" in refused.stderr
    cast = _run(tmp_path, "--allow-lossy", **arrays)
    assert cast.kind == "ok", cast.stderr


def test_integral_floats_and_booleans_pass(tmp_path):
    outcome = _run(tmp_path, x=np.array([3.0, -1.0, 2.0, 0.0]), b=np.array([1.0, 0.0, 1.0, 0.0]))
    assert outcome.kind == "ok" and "[ 4 -1  3  0]" in outcome.stdout, outcome.stdout


@pytest.mark.parametrize("body", ["X[i] + 3.7", "X[i] * 0.5", "select(X[i] > 1, 2.5, X[i])", "max(X[i], -0.1)"])
@pytest.mark.parametrize("tool", ["irc-opt", "irc-run"])
def test_a_fractional_constant_in_an_integer_op_is_a_verifier_error(tmp_path, tool, body):
    program = tmp_path / "c.mlir"
    program.write_text(
        'func.func @main(%x: tensor<4xi32>) -> tensor<4xi32> {\n'
        f'  %y = te.op "Y[i] = {body}" (%x) : (tensor<4xi32>) -> tensor<4xi32>\n'
        '  func.return %y : tensor<4xi32>\n}\n')
    outcome = run_tool(tool, program)
    assert outcome.kind == "diagnostic", outcome.stderr
    assert f"{program}:2:3: error: 'te.op' op the constant" in outcome.stderr
    assert "is not an integer but takes the integer type i32 here" in outcome.stderr


@pytest.mark.parametrize("body", ["cast(X[i]) * 0.5", "select(X[i] > 1, cast(X[i]), 2.5)"])
def test_fractional_constants_in_a_float_context_still_run(tmp_path, body):
    program = tmp_path / "c.mlir"
    program.write_text(
        'func.func @main(%x: tensor<4xi32>) -> tensor<4xf32> {\n'
        f'  %y = te.op "Y[i] = {body}" (%x) : (tensor<4xi32>) -> tensor<4xf32>\n'
        '  func.return %y : tensor<4xf32>\n}\n')
    outcome = run_tool("irc-run", program)
    assert outcome.kind == "ok", outcome.stderr


def test_random_integer_inputs_are_integers():
    signature = find_function(parse_module(PROGRAM, "int.mlir"), None)
    inputs = random_inputs(signature, seed=3)
    assert inputs["x"].dtype == np.int32 and inputs["b"].dtype == bool
