"""Limits as errors (issue 27, item 2): names, JSON depth and nested attributes beyond
irc's stated limits are one clean diagnostic naming the limit; within them, what irc-opt
prints (custom or generic form) it reads back."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from irc.diagnostics import MAX_ATTRIBUTE_NESTING, MAX_JSON_NESTING, MAX_OP_NESTING
from irc.output import MAX_MEMBER_NAME_BYTES
from tests.fuzzing import run_tool

PROGRAM = """\
func.func @main(%x: tensor<4xf32> {{irc.name = "{arg}"}}, %z: tensor<4xf32> {{irc.name = "z"}}) -> (tensor<4xf32> {{irc.name = "{result}"}}) {{
  %y = te.op "Y[i] = X[i] + Z[i]" (%x, %z) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}}
"""


def _diagnostic(outcome, contains: str) -> str:
    assert outcome.kind == "diagnostic", (outcome.kind, outcome.stderr[:500])
    first = outcome.stderr.splitlines()[0]
    assert contains in first, first[:500]
    assert len(first) < 400 and "internal error" not in outcome.stderr
    return first


@pytest.mark.parametrize("arg, result, message", [
    ("x", "y" * 70_000, f"result 0 ('yyyy"),
    ("x" * (MAX_MEMBER_NAME_BYTES + 1), "y", "argument 0 ('xxxx"),
    ("x", "\u00e9" * (MAX_MEMBER_NAME_BYTES // 2 + 1), "result 0"),  # two bytes each in UTF-8
    ("x", "a\\00b", "a name holding a NUL character"),
    ("x", "\u00e9\\00b", "a name holding a NUL character"),  # xDSL reads this literal as bytes
    ("z", "y", "arguments 0 and 1 are both named 'z'"),
])
def test_names_npz_cannot_hold_are_located_errors(tmp_path, arg, result, message):
    """A result name over 65,535 characters was `internal error: ushort format requires
    0 <= number <= 65535` from `irc-run --output`; a NUL cut the name short in the
    archive, and two arguments of one name were silently fed the same array."""
    program = tmp_path / "names.mlir"
    program.write_text(PROGRAM.format(arg=arg, result=result))
    first = _diagnostic(run_tool("irc-run", program, "--output", tmp_path / "out.npz"), message)
    assert first.startswith(f"{program}:1:1: error: 'func.func' op")
    assert not (tmp_path / "out.npz").exists()


def test_a_name_that_is_not_text_is_a_located_error(tmp_path):
    program = tmp_path / "names.mlir"
    program.write_text(PROGRAM.format(arg="x", result="y").replace('{irc.name = "y"}', "{irc.name = 5}"))
    _diagnostic(run_tool("irc-run", program), "'func.func' op result 0's irc.name must be a string, got 5 : i64")


def test_the_longest_name_round_trips(tmp_path):
    name = "y" * MAX_MEMBER_NAME_BYTES
    program = tmp_path / "names.mlir"
    program.write_text(PROGRAM.format(arg="x", result=name))
    assert run_tool("irc-run", program, "--output", tmp_path / "out.npz").kind == "ok"
    assert list(np.load(tmp_path / "out.npz")) == [name]


def test_a_weight_name_npz_cannot_hold_is_an_importer_error(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    weight = "w" * 70_000
    node = helper.make_node("Add", ["x", weight], ["y"], name="add")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
                              [helper.make_tensor(weight, TensorProto.FLOAT, [2], [1.0, 2.0])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "m.onnx")
    _diagnostic(run_tool("irc-translate", "--import-onnx", tmp_path / "m.onnx", "-o", tmp_path / "m.mlir"),
                "has a name of 70,000 bytes; irc takes names of at most 65,531 bytes")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]


EXPLAIN = ["--expr", "C[m,n] += A[m,k] * B[k,n]", "--shape", "m=32,k=64,n=48", "--device", "tiny16", "--explain"]


@pytest.mark.parametrize("document, message", [
    ("[" * 100_000, f"--explain: JSON nested more than {MAX_JSON_NESTING} deep (at character {MAX_JSON_NESTING + 1})"),
    ('{"axes": ' + "[" * 200 + "]" * 200 + "}", "JSON nested more than 100 deep (at character 109)"),
    ('{"a": "' + "[" * 500 + '"}', "a plan is a JSON object with axes, op_factors, temporal_factors"),  # in a string
    ("[" * 50 + "]" * 50, "a plan is a JSON object with axes, op_factors, temporal_factors"),
    ('{"axes": ["m", "n", "k"], "op_factors": [Infinity, 1, 1], "temporal_factors": {}}',
     "a factor is not a finite integer"),
    ("{", "--explain: not a plan JSON document: Expecting property name"),
])
def test_explain_documents_beyond_reason_are_one_line(document, message):
    """A deeply nested --explain document was `internal error: maximum recursion depth
    exceeded`."""
    _diagnostic(run_tool("irc-plan", *EXPLAIN, document), message)


def _deep_attribute(kind: str, depth: int) -> str:
    value = "[" * depth + "1" + "]" * depth if kind == "array" else "{a = " * depth + "1" + "}" * depth
    return f'func.func @f() attributes {{deep = {value}}} {{\n  func.return\n}}\n'


@pytest.mark.parametrize("kind", ["array", "dictionary"])
def test_attributes_nest_to_the_limit_and_round_trip(tmp_path, kind):
    """Dictionaries 86 deep were `the input nests too deeply` though the stated limit was
    100, and a program irc-opt printed could be too deep for irc-opt to read back."""
    program = tmp_path / "deep.mlir"
    program.write_text(_deep_attribute(kind, MAX_ATTRIBUTE_NESTING))
    printed = run_tool("irc-opt", program)
    generic = run_tool("irc-opt", program, "--print-op-generic")
    assert printed.kind == generic.kind == "ok", (printed.stderr, generic.stderr)
    for text in (printed.stdout, generic.stdout):
        again = run_tool("irc-opt", stdin=text)
        assert again.kind == "ok" and again.stdout == printed.stdout, again.stderr[:300]
    program.write_text(_deep_attribute(kind, MAX_ATTRIBUTE_NESTING + 1))
    for tool in ("irc-opt", "irc-run"):
        _diagnostic(run_tool(tool, program),
                    f"error: attributes and types nested more than {MAX_ATTRIBUTE_NESTING} deep; irc handles at most")


def test_ops_nested_to_the_limit_round_trip_in_generic_form(tmp_path):
    program = tmp_path / "nested.mlir"
    program.write_text("builtin.module {" * MAX_OP_NESTING + "}" * MAX_OP_NESTING)
    generic = run_tool("irc-opt", program, "--print-op-generic")
    assert generic.kind == "ok"
    again = run_tool("irc-opt", stdin=generic.stdout)
    assert again.kind == "ok" and again.stdout.count("builtin.module") == MAX_OP_NESTING
