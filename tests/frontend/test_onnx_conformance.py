"""Conformance with ONNX's own backend node tests (issue 6, part 4).

Every case of `onnx.backend.test.case.node.collect_testcases` whose operators the
importer supports is imported, run at `te` level on the reference interpreter and
compared with the expected outputs at the case's tolerances. A case is *skipped*
only for a stated reason: an opset before 13, an element type we do not support, an
empty (zero-size) tensor, a non-tensor input, or an attribute value the importer
rejects on purpose (its "is not supported" diagnostic). Inputs the op treats as
parameters (Reshape's shape, Slice's starts, ...) that a case feeds at run time are
bound as constants, the way a deployment freezes them (`import_model(constants=)`).

`run_case(model, inputs, level)` is the single entry point per case; a further level
(device, through ``inference{device=...}``) is added by extending `LEVELS` and
`lower` without touching the rest. The table of passed/failed/skipped per op is
printed (run pytest with ``-s`` to see it) and written to the test's report.
"""

from __future__ import annotations

import collections
import re
import warnings

import numpy as np
import onnx
import onnx.version_converter
import pytest
from onnx import numpy_helper

from irc.frontend.onnx_import import OnnxImportError, UnsupportedDtype, import_model
from irc.frontend.onnx_ops import CONVERTERS
from irc.runner import run_function

pytestmark = pytest.mark.slow   # every case at te and device level: minutes

LEVELS = ("te", "device")
"""Levels each case runs at: the importer's `te`, and `device` after the whole
`inference` pipeline on a small test chip."""

DEVICE = "tiny16"

TARGET_PASS_RATE = 0.95

# Supported ops the issue lists (the importer supports more; those count too).
ISSUE_OPS = {
    "MatMul", "Gemm", "Conv", "Add", "Sub", "Mul", "Div", "Pow", "Relu", "LeakyRelu",
    "Gelu", "Tanh", "Sigmoid", "Erf", "Sqrt", "Reciprocal", "Exp", "Neg", "Where",
    "Equal", "Less", "Greater", "Softmax", "LayerNormalization", "BatchNormalization",
    "Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Expand", "Concat",
    "Split", "Slice", "Gather", "Shape", "ConstantOfShape", "Range", "MaxPool",
    "AveragePool", "GlobalAveragePool", "ReduceMean", "ReduceSum", "ReduceMax", "Cast",
    "Constant", "Identity", "Not", "And", "Or", "IsNaN", "CumSum", "GatherElements",
}


class Skip(Exception):
    """A case the importer declines for a stated reason."""


def lower(module, level: str):
    """The module at `level` (te is what the importer produces)."""
    if level == "te":
        return module
    if level == "device":
        from xdsl.context import Context

        from irc.passes.pipelines import InferencePipeline

        InferencePipeline(device=DEVICE).apply(Context(), module)
        return module
    raise ValueError(f"unknown level '{level}'")


def run_case(model, inputs: dict[str, np.ndarray], level: str = "te") -> list[np.ndarray]:
    """Import `model`, lower it to `level`, run it on `inputs`; outputs in graph order.

    Raises `Skip` for a case declined on purpose, anything else for a failure.
    """
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset < 13:
        # The importer starts at opset 13; older cases go through onnx's converter.
        try:
            model = onnx.version_converter.convert_version(model, 13)
        except Exception as error:  # noqa: BLE001 - onnx raises assorted errors
            raise Skip(f"opset {opset} < 13 and onnx cannot convert it ({type(error).__name__})") from None
    inputs = {name: _as_array(value) for name, value in inputs.items()}
    for name, value in inputs.items():
        if not isinstance(value, np.ndarray):
            raise Skip(f"input '{name}' is a {type(value).__name__}, not a tensor")
        if value.dtype.kind not in "biuf" or value.dtype.itemsize > 8 or str(value.dtype) == "bfloat16":
            raise Skip(f"dtype {value.dtype} not supported")
    constants = {}
    for name, value in inputs.items():
        if value.size == 0:
            if value.dtype.kind in "iu":  # e.g. an empty `axes` input: a parameter
                constants[name] = value
            else:
                raise Skip("empty tensors (a zero-size dimension) are not supported")
    shapes = {n: v.shape for n, v in inputs.items() if n not in constants}
    while True:
        try:
            result = import_model(
                model, {n: s for n, s in shapes.items() if n not in constants}, constants=constants
            )
            break
        except UnsupportedDtype as error:
            raise Skip(str(error)) from None
        except OnnxImportError as error:
            name = getattr(error, "input_name", None)
            if name in inputs and name not in constants:
                constants[name] = inputs[name]  # a parameter fed at run time: freeze it
                continue
            integer_inputs = {
                n: v for n, v in inputs.items() if v.dtype.kind in "iu" and n not in constants
            }
            if "must be a constant" in str(error) and integer_inputs:
                constants.update(integer_inputs)  # the parameter is computed from them
                continue
            message = str(error)
            if "is not supported" in message or "not supported" in message:
                raise Skip(re.sub(r"^node '[^']*' ", "", message)) from None
            raise
    module = lower(result.module, level)
    feeds = {name: inputs[name] for name in result.input_names}
    feeds.update(result.weights)
    outputs = run_function(module, feeds)
    return [outputs[name] for name in result.output_names]


def _as_array(value):
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, np.generic):
        return np.asarray(value)
    return value


def _compare(got: np.ndarray, want, rtol: float, atol: float) -> None:
    want = np.asarray(_as_array(want))
    assert got.shape == want.shape, f"shape {got.shape} != expected {want.shape}"
    if want.dtype == bool or got.dtype == bool:
        np.testing.assert_array_equal(got, want)
        return
    np.testing.assert_allclose(
        got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True
    )


def _label(case) -> str:
    ops = sorted({node.op_type for node in case.model.graph.node})
    if len(ops) == 1:
        return ops[0]
    snake = {re.sub(r"(?<!^)(?=[A-Z])", "_", op).lower(): op for op in CONVERTERS}
    name = case.name.removeprefix("test_")
    matches = [s for s in snake if name.startswith(s)]
    return (snake[max(matches, key=len)] if matches else "+".join(ops)) + " (expanded)"


def _cases():
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)
    supported = set(CONVERTERS)
    return [
        case for case in cases
        if case.kind == "node" and {n.op_type for n in case.model.graph.node} <= supported
    ]


@pytest.fixture(scope="module", params=LEVELS)
def conformance(request):
    level = request.param
    results = collections.defaultdict(lambda: {"passed": 0, "failed": 0, "skipped": 0, "why": []})
    outcomes = {}
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for case in _cases():
            row = results[_label(case)]
            inputs, expected = case.data_sets[0]
            names = [i.name for i in case.model.graph.input]
            try:
                got = run_case(case.model, dict(zip(names, inputs)), level)
                for value, want in zip(got, expected, strict=True):
                    _compare(value, want, max(case.rtol, 1e-3), max(case.atol, 1e-5))
            except Skip as reason:
                row["skipped"] += 1
                row["why"].append(f"{case.name}: {reason}")
                outcomes[case.name] = ("skipped", str(reason))
            except Exception as error:  # noqa: BLE001 - a failure, recorded and counted
                row["failed"] += 1
                first = (str(error).strip().splitlines() or [""])[0][:160]
                row["why"].append(f"{case.name}: FAILED {type(error).__name__}: {first}")
                outcomes[case.name] = ("failed", f"{type(error).__name__}: {first}")
            else:
                row["passed"] += 1
                outcomes[case.name] = ("passed", "")
    return level, dict(results), outcomes


def _table(level, results) -> str:
    lines = [f"ONNX backend node tests at level '{level}'", f"{'op':34} {'pass':>5} {'fail':>5} {'skip':>5}"]
    totals = collections.Counter()
    for label in sorted(results):
        row = results[label]
        totals.update({k: row[k] for k in ("passed", "failed", "skipped")})
        lines.append(f"{label:34} {row['passed']:5} {row['failed']:5} {row['skipped']:5}")
    lines.append(f"{'total':34} {totals['passed']:5} {totals['failed']:5} {totals['skipped']:5}")
    lines.append("skips and failures:")
    for label in sorted(results):
        lines.extend(f"  {why}" for why in results[label]["why"])
    return "\n".join(lines)


@pytest.mark.slow
def test_pass_rate_of_supported_ops(conformance, record_property):
    level, results, outcomes = conformance
    table = _table(level, results)
    print("\n" + table)
    record_property("conformance_table", table)
    passed = sum(r["passed"] for r in results.values())
    failed = sum(r["failed"] for r in results.values())
    assert passed + failed > 500, "the conformance run found too few cases"
    rate = passed / (passed + failed)
    failures = [f"{n}: {why}" for n, (kind, why) in outcomes.items() if kind == "failed"]
    assert rate >= TARGET_PASS_RATE, f"pass rate {rate:.3f} < {TARGET_PASS_RATE}:\n" + "\n".join(failures)


def test_every_issue_op_passes_cases(conformance):
    level, results, _ = conformance
    missing = [op for op in sorted(ISSUE_OPS) if results.get(op, {}).get("passed", 0) == 0
               and op not in ("Constant", "ConstantOfShape", "Range", "Shape", "Identity")]
    assert not missing, f"ops with no passing single-op case: {missing}"


def test_skips_state_a_reason(conformance):
    _, _, outcomes = conformance
    for name, (kind, why) in outcomes.items():
        if kind == "skipped":
            assert why and len(why) > 10, name


def test_failures_are_not_crashes_of_the_importer(conformance):
    """A failing case fails on numbers or a clean diagnostic, never a Python error
    escaping the importer (AttributeError, KeyError, ...)."""
    _, _, outcomes = conformance
    crashes = [
        f"{n}: {why}" for n, (kind, why) in outcomes.items()
        if kind == "failed" and why.split(":")[0] in ("AttributeError", "KeyError", "TypeError", "IndexError")
    ]
    assert not crashes, "\n".join(crashes)
