"""SSA dominance (issue 27, item 1): a use before its definition, at te or device level,
is one located diagnostic with a note at the definition in every tool a program enters
by (irc-opt before its passes, irc-run, irc-plan --model, the pipelines), never an
internal error of a pass or the interpreter."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.utils.exceptions import DiagnosticException

from irc.diagnostics import LocatedVerifyError, LocatingParser, verify_dominance
from irc.passes.pipelines import InferencePipeline
from irc.runner import make_context, parse_module, run
from tests.fuzzing import run_tool

ROOT = Path(__file__).resolve().parents[2]
MLP = (ROOT / "examples/mlp.mlir").read_text()
H_LINE = '  %h = te.op "H[m,n] += X[m,k] * W[k,n]"'
A_LINE = '  %a = te.op "A[m,n] = relu(H[m,n] + B[n])"'


def _te_swapped() -> str:
    """examples/mlp.mlir with its first two ops swapped: %a reads %h before %h exists."""
    lines = MLP.splitlines()
    h = next(i for i, line in enumerate(lines) if line.startswith(H_LINE))
    assert lines[h + 1].startswith(A_LINE)
    lines[h], lines[h + 1] = lines[h + 1], lines[h]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def device_swapped(tmp_path_factory) -> tuple[Path, int, int]:
    """examples/mlp.mlir compiled for tiny16, then the last kernel's `device.fill` of its
    output moved before the buffer's `device.alloc`; returns the file and the lines
    (1-based) of the use and of the definition."""
    where = tmp_path_factory.mktemp("dominance")
    compiled = where / "mlp.device.mlir"
    outcome = run_tool("irc-opt", ROOT / "examples/mlp.mlir", "-p", "inference{device=tiny16}", "-o", compiled)
    assert outcome.kind == "ok", outcome.stderr
    lines = compiled.read_text().splitlines()
    alloc = max(i for i, line in enumerate(lines) if line.lstrip().startswith("%Y = device.alloc"))
    fill = next(i for i in range(alloc, len(lines)) if lines[i].lstrip().startswith("device.fill %Y "))
    moved = lines[fill]
    del lines[fill]
    lines.insert(alloc, moved)
    swapped = where / "swapped.mlir"
    swapped.write_text("\n".join(lines) + "\n")
    return swapped, alloc + 1, alloc + 2


def _assert_located(outcome, use: str, definition: str, operand: str) -> None:
    assert outcome.kind == "diagnostic", (outcome.kind, outcome.stderr)
    lines = outcome.stderr.strip().splitlines()
    assert lines[0].startswith(f"{use}: error: "), outcome.stderr
    assert f"operand #0 (%{operand}) does not dominate this use" in lines[0]
    assert lines[1] == f"{definition}: note: operand defined here (op in the same block)"
    assert "internal error" not in outcome.stderr


@pytest.mark.parametrize("argv", [["irc-run"], ["irc-opt"], ["irc-opt", "-p", "inference{device=tiny16}"],
                                  ["irc-plan", "--model"]])
def test_a_te_use_before_its_definition_is_located(tmp_path, argv):
    program = tmp_path / "swapped.mlir"
    text = _te_swapped()
    program.write_text(text)
    line = next(i for i, x in enumerate(text.splitlines(), 1) if x.startswith(A_LINE))
    tool, *flags = argv
    args = [*flags, program] if tool == "irc-plan" else [program, *flags]
    if tool == "irc-plan":
        args += ["--device", "tiny16"]
    _assert_located(run_tool(tool, *args, cwd=tmp_path), f"{program}:{line}:3", f"{program}:{line + 1}:3", "h")


@pytest.mark.parametrize("tool", ["irc-run", "irc-opt"])
def test_a_device_use_before_its_definition_is_located(device_swapped, tool):
    program, use, definition = device_swapped
    _assert_located(run_tool(tool, program), f"{program}:{use}:5", f"{program}:{definition}:5", "Y")


def _built_swapped():
    """The swapped te program as a module built in code (no parser, no verifier)."""
    return LocatingParser(make_context(), _te_swapped(), "built.mlir").parse_module()


def test_the_runner_and_the_pipeline_check_a_module_built_in_code():
    """A module that never went through `parse_module` (built by a driver) is checked
    where it is run and where a pipeline starts."""
    with pytest.raises(DiagnosticException, match="does not dominate this use"):
        run(_built_swapped())
    with pytest.raises(LocatedVerifyError, match=r"built.mlir:\d+:3: error: 'te.op' op operand #0 \(%h\)"):
        InferencePipeline(device="tiny16").apply(Context(), _built_swapped())


def test_a_verified_program_is_unchanged_by_the_check():
    module = parse_module(MLP, "mlp.mlir")
    verify_dominance(module)
    results, _ = run(module)
    assert set(results) == {"y"}
