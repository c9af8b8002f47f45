"""Every bundled device answers every tool (issue 27, item 5): for each
``irc/devices/*.toml``, ``irc-plan`` of one operator and of a model, ``irc-opt`` with
the family's pipeline and ``irc-run`` of what it compiled each end in a result or in
one clean diagnostic (exit 1, an ``error:`` line, no internal error) that names what the
family does not support and suggests only what exists. Tools run in forked children of
this process (`tests.fuzzing.run_tool`), on a model small enough for every chip."""

from __future__ import annotations

import re
import tomllib

import pytest

from irc.devices import DEVICE_DIR, family_of, load_device
from irc.universe import all_passes
from tests.fuzzing import run_tool

MODEL = """
func.func @main(%x: tensor<16x8xf32> {irc.name = "x"}, %w1: tensor<8x8xf32> {irc.name = "w1", irc.weight},
                %w2: tensor<8x4xf32> {irc.name = "w2", irc.weight}) -> (tensor<f32> {irc.name = "loss"}) {
  %h = te.op "Y[m,n] += X[m,k] * W[k,n]" (%x, %w1) : (tensor<16x8xf32>, tensor<8x8xf32>) -> tensor<16x8xf32>
  %g = te.op "Y[m,n] = relu(X[m,n])" (%h) : (tensor<16x8xf32>) -> tensor<16x8xf32>
  %y = te.op "Y[m,n] += X[m,k] * W[k,n]" (%g, %w2) : (tensor<16x8xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
  %l = te.op "L[] += Y[m,n] * Y[m,n] * 0.5" (%y) : (tensor<16x4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}
"""

BUNDLED = sorted(tomllib.loads(path.read_text())["name"] for path in DEVICE_DIR.glob("*.toml"))

PIPELINES = {
    "ipu": "inference{{device={name}}}",
    "mtia": "inference{{device={name}}}",
    "npu": "training{{device={name}}}",
}
"""Each family's pipeline from te to its device level."""

COSTS = {"ipu": [], "mtia": [], "npu": []}

PLANNED = {"ipu", "mtia", "npu"}
"""The families irc-plan plans; the others get a diagnostic saying how to compile for them."""


def _family(name: str) -> str:
    return family_of(load_device(name)).name


def _result_or_clean_diagnostic(outcome, what: str) -> None:
    assert outcome.kind in ("ok", "diagnostic"), (what, outcome.kind, outcome.stderr)
    assert "internal error" not in outcome.stderr and "Traceback" not in outcome.stderr, (what, outcome.stderr)
    if outcome.kind == "diagnostic":
        assert outcome.stderr.lstrip().startswith(("error:", "<")) or re.match(r"\S+:\d+:\d+: error: ", outcome.stderr)


def _suggests_only_what_exists(text: str) -> None:
    """Every cost model, pass and pipeline an error suggests is one irc has."""
    from irc.cost import get_cost_model

    for cost in re.findall(r"--cost (\w[\w-]*)", text):
        if cost != "igo":  # irc-plan's NPU model (irc.tools.npu_plan), not a T10 cost model
            get_cost_model(cost)
    for spec in re.findall(r"-p '([^']+)'", text):
        for name in re.findall(r"(?:^|,)([a-z][a-z0-9-]*)", spec):
            assert name in all_passes(), (name, text)


@pytest.mark.slow
@pytest.mark.parametrize("name", BUNDLED)
def test_every_bundled_device_answers_every_tool(tmp_path, name):
    family = _family(name)
    (tmp_path / "model.mlir").write_text(MODEL)
    one_op = run_tool("irc-plan", "--expr", "C[m,n] += A[m,k] * B[k,n]", "--shape", "m=8,k=8,n=8", "--device", name,
                      *COSTS[family], cwd=tmp_path)
    model = run_tool("irc-plan", "--model", "model.mlir", "--device", name, *COSTS[family], cwd=tmp_path)
    for outcome, what in ((one_op, "irc-plan --expr"), (model, "irc-plan --model")):
        _result_or_clean_diagnostic(outcome, what)
        if family in PLANNED:
            assert outcome.kind == "ok", (what, outcome.stderr)
        else:   # names the family and what compiles for it
            assert f"is of the {family} family, which irc-plan does not plan" in outcome.stderr
            _suggests_only_what_exists(outcome.stderr)
    pipeline = PIPELINES[family].format(name=name)
    compiled = run_tool("irc-opt", "model.mlir", "-p", pipeline, "-o", "out.mlir", cwd=tmp_path)
    _result_or_clean_diagnostic(compiled, "irc-opt")
    assert compiled.kind == "ok", compiled.stderr
    ran = run_tool("irc-run", "out.mlir", "--report", cwd=tmp_path)
    _result_or_clean_diagnostic(ran, "irc-run")
    assert ran.kind == "ok", ran.stderr


@pytest.mark.parametrize("name", ["tiny16", "mtia-v1", "npu-edge"])
def test_every_familys_inference_pipeline_computes_te_numbers(tmp_path, name):
    """``inference{device=...}`` is the device family's own pipeline (its `ChipFamily`'s
    ``inference`` entry): te -> device on the IPU kind, mtia-partition + te-to-mtia on
    MTIA, te-to-npu on an NPU; each program computes te's loss."""
    (tmp_path / "model.mlir").write_text(MODEL)
    compiled = run_tool("irc-opt", "model.mlir", "-p", f"inference{{device={name}}}", "-o", "out.mlir", cwd=tmp_path)
    assert compiled.kind == "ok", compiled.stderr
    ran, reference = (run_tool("irc-run", path, "--seed", "1", cwd=tmp_path) for path in ("out.mlir", "model.mlir"))
    assert ran.kind == reference.kind == "ok", (ran.stderr, reference.stderr)
    loss, expected = (float(outcome.stdout.split()[-1]) for outcome in (ran, reference))
    assert loss == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("option", ["preload=dyn", "cost=t10", "cores=2"])
def test_the_inter_core_pipelines_options_on_mtia_are_one_diagnostic(tmp_path, option):
    (tmp_path / "model.mlir").write_text(MODEL)
    outcome = run_tool("irc-opt", "model.mlir", "-p", f"inference{{device=mtia-v1 {option}}}", cwd=tmp_path)
    assert outcome.kind == "diagnostic" and option.split("=")[0] in outcome.stderr, outcome.stderr
    _suggests_only_what_exists(outcome.stderr)


@pytest.mark.parametrize("name", [n for n in BUNDLED if getattr(load_device(n), "offchip", None) is None])
def test_irc_dse_says_which_devices_it_sweeps(tmp_path, capsys, name):
    """A device without off-chip memory, or of another family (an internal error about
    'offchip' for mtia-v1 and the NPUs), is one diagnostic; the chips with HBM sweep
    (``tests/tools/test_irc_dse.py``)."""
    from irc.diagnostics import guarded_main
    from irc.tools.irc_dse import run

    status = guarded_main(lambda: run(["--model", "llama2-13b", "--device", name, "--csv", str(tmp_path / "o.csv")]))
    stderr = capsys.readouterr().err
    assert status == 1 and stderr.startswith("error: ") and "internal error" not in stderr
    assert "off-chip memory ([offchip])" in stderr
