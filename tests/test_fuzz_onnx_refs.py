"""The issue-27 generators of `tests/fuzz_onnx_refs.py` and the fuzzer's ``wrong
success`` class: a case the tool must refuse that exits 0 is a bad outcome, so the
generators would catch a loader or attribute check that let one through (here: each
switched off in the forked tool)."""

from __future__ import annotations

import random

import pytest
from onnx import helper

from irc.frontend import onnx_import
from tests.fuzz_onnx_refs import DATA, MODEL, SECRET, _model_with, _tensor, bad_attribute_case, external_ref_case
from tests.fuzzing import BAD_OUTCOMES, Case, run_cases


def _escape_case() -> Case:
    """The issue's reproducer: a Constant reading ``secret.txt`` from the working directory."""
    model = _model_with("constant-value", _tensor("c", "secret.txt", len(SECRET), random.Random(0)))
    files = {MODEL: model.SerializeToString(), "secret.txt": SECRET, "model/data.bin": DATA}
    return Case("irc-translate", ["--import-onnx", MODEL, "-o", "out.mlir"], files, "escape", must_fail=True)


def _flag_case() -> Case:
    node = helper.make_node("ReduceMax", ["x"], ["y"], name="r", keepdims=2)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", 1, [2, 3])],
                              [helper.make_tensor_value_info("y", 1, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return Case("irc-translate", ["--import-onnx", "m.onnx"], {"m.onnx": model.SerializeToString()}, "flag",
                must_fail=True)


@pytest.mark.parametrize("check", ["load_external_data", "check_attributes"])
def test_a_refusal_that_is_missed_is_a_wrong_success(monkeypatch, check):
    case = _escape_case() if check == "load_external_data" else _flag_case()
    ((_, refused),) = run_cases([case])
    assert refused.kind == "diagnostic", refused.stderr
    monkeypatch.setattr(onnx_import, check, lambda *args: None)  # the forked tool runs without it
    ((_, missed),) = run_cases([case])
    assert missed.kind == "wrong success" and missed.kind in BAD_OUTCOMES, missed.stderr


def test_every_generated_case_that_must_fail_is_refused():
    """A sample of both generators: what must be refused is, naming what it refuses."""
    rng = random.Random(27)
    cases = [external_ref_case(rng) for _ in range(12)] + [bad_attribute_case(rng) for _ in range(12)]
    assert any(case.must_fail for case in cases)
    for case, outcome in run_cases(cases):
        assert outcome.kind in (("diagnostic",) if case.must_fail else ("ok", "diagnostic")), case.describe()
        if case.must_fail and case.label.startswith("onnx-attr"):
            assert "attribute '" in outcome.stderr, (case.describe(), outcome.stderr)
        assert SECRET.decode() not in outcome.stdout + outcome.stderr
