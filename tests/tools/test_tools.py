"""The command-line tools: results, names, and bad input as one diagnostic."""

import contextlib
import io
import subprocess

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from irc.tools.irc_opt import IrcOptMain, run_tool
from irc.tools.irc_run import run as irc_run
from tests.fuzzing import run_tool as fork_tool


PROGRAM = """\
func.func @main(%x: tensor<2x3xf32> {irc.name = "x"}, %w: tensor<3x4xf32>) -> (tensor<2x4xf32> {irc.name = "y"}) {
  %h = te.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %y = te.op "Y[m,n] = relu(H[m,n])" (%h) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
"""


def _tool(name, *args, stdin=None):
    """The tool run as its console script would be, in a forked child (no start-up)."""
    outcome = fork_tool(name, *args, stdin=stdin)
    return subprocess.CompletedProcess([name, *args], outcome.status, outcome.stdout, outcome.stderr)


def _assert_one_diagnostic(done):
    assert done.returncode == 1, done
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout
    assert done.stderr.count("error:") == 1, done.stderr


def test_garbage_is_one_diagnostic():
    done = _tool("irc-opt", stdin="garbage\n")
    _assert_one_diagnostic(done)
    assert done.stderr.startswith("stdin:1:1: error: unknown operation 'garbage'")


def test_bad_expression_points_into_the_string(tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text(PROGRAM.replace("relu(", "relux("))
    done = _tool("irc-opt", str(path))
    _assert_one_diagnostic(done)
    assert done.stderr.startswith(f"{path}:3:")
    assert "unknown function 'relux'" in done.stderr


def test_verifier_error_has_location(tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text(PROGRAM.replace("tensor<3x4xf32>, tensor", "tensor<3x4xf32>, tensor", 1).replace(
        '"H[m,n] += X[m,k] * W[k,n]"', '"H[m,n] += X[m,k] * W[n,k]"'))
    done = _tool("irc-opt", str(path))
    _assert_one_diagnostic(done)
    assert done.stderr.startswith(f"{path}:2:3: error: 'te.op' op")
    assert "axis 'n'" in done.stderr


def test_missing_file_is_one_line():
    for tool in ("irc-opt", "irc-run"):
        done = _tool(tool, "/no/such/file.mlir")
        _assert_one_diagnostic(done)
        assert done.stderr.strip() == "error: no such file: /no/such/file.mlir"


def test_plugin_pass_runs_through_irc_opt(tmp_path):
    path = tmp_path / "p.mlir"
    path.write_text(PROGRAM)
    done = _tool("irc-opt", str(path), "-p", "example-annotate-points")
    assert done.returncode == 0, done.stderr
    assert "example.points = 24 : i64" in done.stdout  # 2 x 4 x 3 matmul points
    assert "example.points = 8 : i64" in done.stdout


def test_irc_run_reads_and_writes_by_name(tmp_path):
    program = tmp_path / "p.mlir"
    program.write_text(PROGRAM)
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x, arg1=w)
    done = _tool("irc-run", str(program), "--inputs", str(tmp_path / "in.npz"), "--output", str(tmp_path / "out.npz"))
    assert done.returncode == 0, done.stderr
    with np.load(tmp_path / "out.npz") as out:
        assert out.files == ["y"]
        np.testing.assert_allclose(out["y"], np.maximum(x @ w, 0), rtol=1e-6)


def test_irc_run_bad_inputs(tmp_path):
    program = tmp_path / "p.mlir"
    program.write_text(PROGRAM)
    np.savez(tmp_path / "in.npz", x=np.zeros((2, 3), np.float32))
    done = _tool("irc-run", str(program), "--inputs", str(tmp_path / "in.npz"))
    _assert_one_diagnostic(done)
    assert "input 'arg1' is missing" in done.stderr
    np.savez(tmp_path / "in.npz", x=np.zeros((3, 3), np.float32), arg1=np.zeros((3, 4)))
    done = _tool("irc-run", str(program), "--inputs", str(tmp_path / "in.npz"))
    _assert_one_diagnostic(done)
    assert "input 'x' has shape (3, 3) but the function expects (2, 3)" in done.stderr
    done = _tool("irc-run", str(program), "--inputs", str(tmp_path / "in.npz"), "--output", str(tmp_path / "in.npz"))
    _assert_one_diagnostic(done)
    assert "overwrite" in done.stderr


def test_irc_run_random_inputs_are_reproducible(tmp_path, capsys):
    program = tmp_path / "p.mlir"
    program.write_text(PROGRAM)
    assert irc_run([str(program), "--seed", "7"]) == 0
    first = capsys.readouterr().out
    assert irc_run([str(program), "--seed", "7"]) == 0
    assert capsys.readouterr().out == first and first.startswith("y: tensor<2x4, float32>")


def _irc_opt_in_process(text: str, tmp_path, *flags) -> int:
    path = tmp_path / "fuzz.mlir"
    path.write_text(text)
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        status = run_tool(IrcOptMain, [str(path), *flags])
    assert "Traceback" not in err.getvalue()
    if status:
        assert "error" in err.getvalue()
    return status


@given(st.data())
def test_mutated_programs_never_escape(tmp_path_factory, data):
    tmp_path = tmp_path_factory.mktemp("fuzz")
    position = data.draw(st.integers(0, len(PROGRAM)))
    insert = data.draw(st.sampled_from(['"', "%", "(", ")", "{", "}", "x", "[", "]", "<", ">", ":", ",", "9", "-", "te.op", "\n", "="]))
    cut = data.draw(st.integers(0, 5))
    _irc_opt_in_process(PROGRAM[:position] + insert + PROGRAM[position + cut :], tmp_path)


@given(st.text(max_size=80))
def test_random_text_never_escapes(tmp_path_factory, text):
    _irc_opt_in_process(text, tmp_path_factory.mktemp("fuzz"))


def test_unterminated_string_is_a_quick_diagnostic(tmp_path):
    # xDSL 0.74's lexer regex backtracks exponentially here; irc patches it.
    text = PROGRAM.replace('"H[m,n]', '"' + "a" * 200 + " H[m,n]").replace("W[k,n]\"", "W[k,n]")
    assert _irc_opt_in_process(text, tmp_path) == 1


TRAINING = """\
func.func @main(%x: tensor<64x48xf32> {irc.name = "x"}, %w1: tensor<48x40xf32> {irc.name = "w1", irc.weight},
                %w2: tensor<40x24xf32> {irc.name = "w2", irc.weight}) -> (tensor<f32> {irc.name = "loss"}) {
  %h = te.op "Y[m,n] += X[m,k] * W[k,n]" (%x, %w1) : (tensor<64x48xf32>, tensor<48x40xf32>) -> tensor<64x40xf32>
  %g = te.op "Y[m,n] = relu(X[m,n])" (%h) : (tensor<64x40xf32>) -> tensor<64x40xf32>
  %y = te.op "Y[m,n] += X[m,k] * W[k,n]" (%g, %w2) : (tensor<64x40xf32>, tensor<40x24xf32>) -> tensor<64x24xf32>
  %l = te.op "L[] += Y[m,n] * Y[m,n] * 0.5" (%y) : (tensor<64x24xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}
"""


def test_irc_run_report_of_an_npu_program(tmp_path):
    """`training` to the NPU program, then `irc-run --report` with no inputs (random
    inputs and weights: the module names no weights file): the chip time with its stall,
    the DRAM bytes read and written per tensor, one line per kernel, exit status 0."""
    source = tmp_path / "train.mlir"
    source.write_text(TRAINING)
    compiled = _tool("irc-opt", str(source), "-p", "training{device=npu-edge order=dx-major partition=none}")
    assert compiled.returncode == 0, compiled.stderr
    program = tmp_path / "train.npu.mlir"
    program.write_text(compiled.stdout)
    done = _tool("irc-run", str(program), "--report")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # the pair's kernel, and te-to-npu's programs of the two forward GEMMs and the lone dW
    assert lines[0].startswith("NPU npu-edge (1 core, 45x45 PEs, 1,048,576 B SPM, 22 GB/s DRAM), 4 kernel(s)")
    assert lines[1].startswith("chip time: ") and ", stall " in lines[1]
    assert lines[2].split() == ["DRAM", "traffic", "read", "written"]
    rows = {line.split()[0]: [int(v.replace(",", "")) for v in line.split()[1:]] for line in lines[3:10]}
    # the second layer's pair: dY (64x24), W (40x24) and X (64x40) read, dX and dW written, f32
    assert rows["dY"][0] >= 64 * 24 * 4 and rows["W"][0] >= 40 * 24 * 4 and rows["X"][0] >= 64 * 40 * 4
    assert rows["dX"][1] == 64 * 40 * 4 and rows["dW"][1] == 40 * 24 * 4
    assert rows["Y"][1] == (64 * 40 + 64 * 24 + 48 * 40) * 4   # each npu.matmul's output: H, Y and dW1
    assert rows["total"] == [sum(r[0] for k, r in rows.items() if k != "total"),
                             sum(r[1] for k, r in rows.items() if k != "total")]
    assert any(line.startswith("kernel D") and "peak SPM" in line for line in lines)
    assert "loss: tensor<scalar, float32>" in done.stdout and "dw1: tensor<48x40, float32>" in done.stdout


def test_irc_run_report_prints_the_interpreters_peak_memory(tmp_path, capsys):
    """--report's last host figure is the interpreter's own peak resident memory: the
    running process's high-water mark when the report was made (here pytest's)."""
    import re
    import resource

    program, device = tmp_path / "p.mlir", tmp_path / "p.device.mlir"
    program.write_text(PROGRAM)
    done = _tool("irc-opt", str(program), "-p", "inference{device=tiny16}", "-o", str(device))
    assert done.returncode == 0, done.stderr
    assert irc_run([str(device), "--report"]) == 0
    found = re.search(r"^interpreter peak memory: ([\d,]+) MiB \(host\)$", capsys.readouterr().out, re.MULTILINE)
    assert found is not None
    reported = int(found.group(1).replace(",", ""))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert 10 <= reported <= peak + 1
