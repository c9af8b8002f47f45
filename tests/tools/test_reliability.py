"""Regression tests of issue 13, each written from the issue's description: what
irc-opt accepts never crashes later, bad input is one located diagnostic, device names
and targets are checked where they enter the IR, limits are errors, the messages are
text (never an exception's class name or an empty message), and outputs are never
lost. Tools run in a forked child (`tests.fuzzing.run_tool`), as their console scripts
would, without a new interpreter's start-up; a few cases need a real process."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.fuzzing import classify, run_tool

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

LOOP = """\
func.func @main(%a: tensor<8x12xf32>, %b: tensor<12x16xf32>) -> tensor<8x16xf32> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %c = shift.kernel "C[m,n] += A[m,k] * B[k,n]"(%a, %b) {grid = array<i64: 2, 4, 1>} : (tensor<8x12xf32>, tensor<12x16xf32>) -> tensor<8x16xf32> {
    shift.ring "C" {temporal = array<i64: 1, 1, 1>}
    shift.ring "A" {temporal = array<i64: 1, 1, 2>}
    shift.ring "B" {temporal = array<i64: 1, 1, 1>}
    shift.loop "k" attributes {trips = 2 : i64, stride = 1 : i64, rotating = ["A"], start = array<i64: 0, 1, 0, 1, 0, 1, 0, 1>} {
      shift.compute
    }
  }
  func.return %c : tensor<8x16xf32>
}
"""


def _one_diagnostic(outcome, contains: str = "") -> str:
    """The outcome is exactly one clean diagnostic (exit 1) holding ``contains``; its
    first line is returned."""
    assert outcome.kind == "diagnostic", (outcome.kind, outcome.stderr)
    first = outcome.stderr.splitlines()[0]
    assert contains in first, outcome.stderr
    assert outcome.stderr.count("error:") == 1, outcome.stderr
    return first


def _write(tmp_path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


# ---------------------------------------------------------------------------
# Verify fully, children first, before anything runs (item 2)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dropped", ['rotating = ["A"], ', "stride = 1 : i64, "])
@pytest.mark.parametrize("tool", ["irc-opt", "irc-run"])
def test_a_loop_missing_a_property_is_located_at_the_loop(tmp_path, tool, dropped):
    """The kernel's verifier read the loop's `rotating` before the loop was verified:
    `KeyError: 'rotating'` in irc-opt, an internal error in irc-run."""
    program = _write(tmp_path, "loop.mlir", LOOP.replace(dropped, ""))
    name = dropped.split(" ")[0]
    _one_diagnostic(run_tool(tool, program),
                    f"loop.mlir:6:5: error: 'shift.loop' op property '{name}' expected")


@pytest.mark.parametrize("element", ["bf16", "tf32", "index", "i3"])
def test_element_types_the_chip_cannot_store_are_a_verifier_error(tmp_path, element):
    program = _write(tmp_path, "kernel.mlir", LOOP.replace("xf32>", f"x{element}>"))
    first = _one_diagnostic(run_tool("irc-opt", program), "kernel.mlir:2:3: error: 'shift.kernel' op element type")
    assert element in first


def test_irc_run_locates_an_element_type_it_cannot_hold(tmp_path):
    program = _write(tmp_path, "mlp.mlir", (ROOT / "examples/mlp.mlir").read_text().replace("f32", "bf16"))
    _one_diagnostic(run_tool("irc-run", program), "'te.op' op element type bf16 has no storage in the interpreter")


# ---------------------------------------------------------------------------
# Device names and targets are validated where they enter the IR (item 2)
# ---------------------------------------------------------------------------

TARGET = '#irc.target<"tiny16", "t10", {}>'


@pytest.mark.parametrize("target, message", [
    ('#irc.target<"x", "t10", {}>', "unknown device 'x'"),
    ('#irc.target<"tiny16", "bogus", {}>', "unknown cost model 'bogus'"),
    (f'#irc.target<"{"a" * 5000}", "t10", {{}}>', "device name of 5000 characters"),
    ('#irc.target<"../../etc/passwd", "t10", {}>', "device name '../../etc/passwd' may hold only letters, digits"),
])
@pytest.mark.parametrize("tool", ["irc-opt", "irc-run"])
def test_a_bad_target_is_an_error_where_it_enters_the_ir(tmp_path, tool, target, message):
    program = _write(tmp_path, "t.mlir", LOOP.replace(TARGET, target))
    _one_diagnostic(run_tool(tool, program), "t.mlir:1:1: error: 'func.func' op " + message)


def _inline_target(tmp_path, **changes) -> Path:
    """A shift-level mlp whose inline target description has ``changes``."""
    out = run_tool("irc-opt", ROOT / "examples/mlp.mlir", "-p",
                   "rtensor-partition{device=tiny16},rtensor-to-shift,rotation-align")
    text = out.stdout
    for key, value in changes.items():
        text, count = re.subn(rf"{key} = [^,}}]+", f"{key} = {value}", text, count=1)
        assert count == 1
    return _write(tmp_path, "inline.mlir", text)


@pytest.mark.parametrize("value", ["-1.0 : f64", "0x7FF8000000000000 : f64", "0x7FF0000000000000 : f64",
                                   "1.0e-300 : f64", '"fast"'])
def test_an_inline_description_gets_the_device_files_range_checks(tmp_path, value):
    """`clock_hz = -1.0` verified and `--report` printed negative milliseconds; NaN
    printed nan."""
    program = _inline_target(tmp_path, clock_hz=value)
    for tool in ("irc-opt", "irc-run"):
        _one_diagnostic(run_tool(tool, program, "--report") if tool == "irc-run" else run_tool(tool, program),
                        "'builtin.module' op #irc.target of 'tiny16': field 'clock_hz' must be a positive, finite number")


def test_a_long_device_name_is_one_error_in_every_tool(tmp_path):
    """ENAMETOOLONG escaped as an internal OSError."""
    name = "a" * 5000
    _one_diagnostic(run_tool("irc-opt", ROOT / "examples/mlp.mlir", "-p", f"inference{{device={name}}}"),
                    "device name of 5000 characters")
    _one_diagnostic(run_tool("irc-plan", "--expr", "C[m] = A[m]", "--shape", "m=4", "--device", name),
                    "device name of 5000 characters")
    _one_diagnostic(run_tool("irc-plan", "--expr", "C[m] = A[m]", "--shape", "m=4", "--device", f"{name}.toml"),
                    "cannot read device file")


@pytest.mark.parametrize("field, value", [("shift_cycles_per_byte", "nan"), ("clock_hz", "nan"), ("clock_hz", "inf"),
                                          ("clock_hz", "-inf"), ("clock_hz", "1e-300"), ("sram_bytes", "-1")])
def test_device_file_values_are_finite_and_in_range(tmp_path, field, value):
    """A NaN shift constant gave "needs 1024 B, but has 65536 B"; `clock_hz = nan` (or
    inf, or 1e-300) in a device file was accepted and printed "predicted time: nan us".
    The error points at the field's line in the file, in every tool that reads one."""
    text = (ROOT / "irc/devices/tiny16.toml").read_text()
    lines = [f"{field} = {value}" if line.startswith(f"{field} =") else line for line in text.splitlines()]
    line = next(number for number, text in enumerate(lines, 1) if text.startswith(f"{field} ="))
    device = _write(tmp_path, "dev.toml", "\n".join(lines) + "\n")
    table = {"shift_cycles_per_byte": "interconnect", "clock_hz": "compute", "sram_bytes": "cores"}[field]
    where = f"{device}:{line}:1: error: "
    first = _one_diagnostic(run_tool("irc-plan", "--expr", "C[m,n] += A[m,k] * B[k,n]", "--shape", "m=8,k=8,n=8",
                                     "--device", device), f"{where}field '{table}.{field}' must be")
    assert first.startswith(where)
    first = _one_diagnostic(run_tool("irc-opt", ROOT / "examples/mlp.mlir", "-p", f'inference{{device="{device}"}}'),
                            f"{where}rtensor-partition: field '{table}.{field}' must be")
    assert first.startswith(where)


@pytest.mark.parametrize("text, message", [
    ('name = "x"\nbogus = 1\n', "dev.toml:2:1: error: unknown field 'bogus'; known fields: family, name,"),
    ('name = "x"\n[cores]\n  count = 4\n  bogus.x = 2\n', "dev.toml:4:3: error: unknown field 'cores.bogus'"),
    ('name = "x"\n[compute]\nclock_hz = 1e9\n', "dev.toml:2:1: error: missing field 'compute.systolic'"),
    ('name = "x"\n[cores]\ncount = [\n', "dev.toml:4:1: error: not valid TOML: Invalid value"),
    ('name = "x\n', "dev.toml:1:10: error: not valid TOML: Illegal character"),
    (b'name = "\xff"\n', "dev.toml:1:9: error: not valid TOML: the file is not UTF-8 text"),
])
def test_device_file_errors_point_into_the_file(tmp_path, text, message):
    """Device-file errors named the field but not where it is."""
    _write(tmp_path, "dev.toml", text)
    _one_diagnostic(run_tool("irc-plan", "--expr", "C[m] = A[m]", "--shape", "m=4", "--device", "dev.toml", cwd=tmp_path),
                    message)


# ---------------------------------------------------------------------------
# No recursion on input depth (item 4)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("text, message", [
    ("builtin.module {" * 1000 + "}" * 1000, "nested.mlir:1:4112: error: brackets nested more than 256 deep"),
    ("builtin.module {" * 70 + "}" * 70, "nested.mlir:1:1025: error: operations nested more than 64 deep"),
    ("func.func @f() attributes {a = " + "[" * 1000 + "]" * 1000 + "} {\n}\n",
     "nested.mlir:1:287: error: brackets nested more than 256 deep"),
    ("func.func @f(%x: " + "tensor<" * 500 + "f32" + ">" * 500 + ") {\n}\n",
     "nested.mlir:1:1809: error: brackets nested more than 256 deep"),
])
def test_deep_nesting_is_one_located_error(tmp_path, text, message):
    """1,000 nested modules were a RecursionError in irc-opt and irc-run."""
    program = _write(tmp_path, "nested.mlir", text)
    for tool in ("irc-opt", "irc-run"):
        first = _one_diagnostic(run_tool(tool, program), message)
        assert len(first) < 200


def test_modules_nested_within_the_limit_round_trip(tmp_path):
    program = _write(tmp_path, "nested.mlir", "builtin.module {" * 60 + "}" * 60)
    outcome = run_tool("irc-opt", program)
    assert outcome.kind == "ok" and outcome.stdout.count("builtin.module") == 60


# ---------------------------------------------------------------------------
# One diagnostic format (item 6)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["irc-opt", "irc-run"])
def test_a_program_that_is_not_utf8_is_a_located_error(tmp_path, tool):
    program = _write(tmp_path, "bytes.mlir", b"func.func @main() {\n  func.return\n}\n// \xff\xfe\n")
    _one_diagnostic(run_tool(tool, program), "bytes.mlir:4:4: error: byte 0xff is not UTF-8 text")


@pytest.mark.parametrize("argv", [["irc-opt", ROOT / "examples/mlp.mlir"], ["irc-run", ROOT / "examples/mlp.mlir"],
                                  ["irc-plan", "--expr", "C[m] = A[m]", "--shape", "m=4"]])
def test_a_full_standard_output_is_one_error(argv):
    outcome = run_tool(*argv, stdout="/dev/full")
    assert outcome.status == 1
    assert outcome.stderr == "error: cannot write to standard output: No space left on device\n"


@pytest.mark.parametrize("spec, message", [
    ("nosuchpass", "error: -p: unknown pass 'nosuchpass'; irc's passes are device-alloc, "),
    ("inference{x=1}", "error: -p: pass 'inference' has no option 'x' (its options: device, cost, preload, split, min_utilization, cores)"),
    ("inference{device}", "error: -p: option 'device' of pass 'inference' must be a string, got nothing"),
    ("rtensor-partition{strict=maybe}", "error: -p: option 'strict' of pass 'rtensor-partition' must be a boolean"),
    ("inference{", "error: -p: expected argument name here (column 11)"),
])
def test_pipeline_errors_are_a_diagnostic(spec, message):
    _one_diagnostic(run_tool("irc-opt", ROOT / "examples/mlp.mlir", "-p", spec), message)


@pytest.mark.parametrize("text, message", [
    ("func.func @f() {\n  cf.br ^bb1\n  1\n}\n", "b.mlir:3:3: error: expected a block label such as '^bb0'"),
    ("func.func @f() {\n  % = te.op\n}\n", "b.mlir:2:3: error: expected a name after '%'"),
])
def test_xdsl_messages_that_came_out_broken_are_text(tmp_path, text, message):
    """`error:  in block definition` (an empty message) and `Expected suffix identifier
    after {first_char}` (a placeholder never filled in)."""
    _one_diagnostic(run_tool("irc-opt", _write(tmp_path, "b.mlir", text)), message)


@pytest.mark.parametrize("tool", ["irc-opt", "irc-run", "irc-translate", "irc-plan"])
def test_usage_errors_are_one_line(tool):
    outcome = run_tool(tool, "--no-such-flag")
    assert outcome.status == 1 and outcome.stderr.count("\n") == 1 and outcome.stderr.startswith("error: ")


def test_an_internal_error_says_so_and_asks_for_a_report(monkeypatch, capsys):
    from irc.diagnostics import guarded_main
    from irc.tools import irc_run

    def broken(*args, **kwargs):
        raise KeyError("rotating")

    monkeypatch.delenv("IRC_TRACEBACK", raising=False)
    monkeypatch.setattr(irc_run.runner, "run", broken)
    assert guarded_main(lambda: irc_run.run([str(ROOT / "examples/mlp.mlir")])) == 1
    assert capsys.readouterr().err == ("error: internal error: 'rotating' (please report it; IRC_TRACEBACK=1 shows "
                                       "the traceback)\n")
    monkeypatch.setenv("IRC_TRACEBACK", "1")
    with pytest.raises(KeyError):
        guarded_main(lambda: irc_run.run([str(ROOT / "examples/mlp.mlir")]))


def test_the_fuzzer_classifies_what_the_issue_calls_bad():
    assert classify(1, "", "error: KeyError: 'rotating'\n") == "masked"
    assert classify(1, "", "error:  in block definition\n") == "masked"
    assert classify(1, "", "x.mlir:1:1: error: Expected suffix identifier after {first_char}\n") == "masked"
    assert classify(1, "", "error: internal error: boom (please report it)\n") == "internal error"
    assert classify(1, "", "Traceback (most recent call last):\n") == "traceback"
    assert classify(2, "", "error: usage\n") == "unclean"
    assert classify(1, "", "x.mlir:3:4: error: 'te.op' op element type bf16 is not stored\n") == "diagnostic"


# ---------------------------------------------------------------------------
# irc-run inputs (item 3)
# ---------------------------------------------------------------------------

MLP_SHAPES = {"x": (8, 64), "w1": (64, 32), "b1": (32,), "w2": (32, 16)}


def _mlp_inputs(tmp_path, **replace) -> Path:
    arrays = {name: np.ones(shape, np.float32) for name, shape in MLP_SHAPES.items()}
    arrays.update(replace)
    path = tmp_path / "in.npz"
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize("value, kind", [
    (np.zeros((8, 64), [("a", "f4"), ("b", "i4")]), "[('a', '<f4'), ('b', '<i4')] data"),
    (np.zeros((8, 64), "datetime64[s]"), "datetime64[s] data"),
    (np.zeros((8, 64), "timedelta64[s]"), "timedelta64[s] data"),
])
def test_structured_and_date_inputs_are_refused(tmp_path, value, kind):
    inputs = _mlp_inputs(tmp_path, x=value)
    _one_diagnostic(run_tool("irc-run", ROOT / "examples/mlp.mlir", "--inputs", inputs), f"input 'x' holds {kind}")


@pytest.mark.parametrize("value, shown, result", [(1e300, "1e+300", "inf"), (-1e39, "-1e+39", "0.")])
def test_lossy_float_inputs_need_allow_lossy(tmp_path, value, shown, result):
    """f64 1e300 became inf in f32 without a word."""
    inputs = _mlp_inputs(tmp_path, x=np.full((8, 64), value, np.float64))
    program = ROOT / "examples/mlp.mlir"
    _one_diagnostic(run_tool("irc-run", program, "--inputs", inputs),
                    f"input 'x' has values beyond the range of float32 ({shown}); --allow-lossy casts them anyway")
    outcome = run_tool("irc-run", program, "--inputs", inputs, "--allow-lossy")
    assert outcome.kind == "ok" and result in outcome.stdout


INTEGER_PROGRAM = """\
func.func @main(%x: tensor<4xi32> {irc.name = "x"}, %u: tensor<4xui8> {irc.name = "u"}) -> (tensor<4xi32> {irc.name = "y"}) {
  %y = te.op "Y[i] = X[i] + X[i]" (%x) : (tensor<4xi32>) -> tensor<4xi32>
  func.return %y : tensor<4xi32>
}
"""


@pytest.mark.parametrize("x, u, message", [
    (np.array([1, 2, 3, 2**40]), np.zeros(4, np.uint8), "input 'x' has values beyond the range of int32 (1099511627776)"),
    (np.array([1.0, np.nan, 0, 0]), np.zeros(4, np.uint8), "input 'x' has values beyond the range of int32 (nan)"),
    (np.zeros(4, np.int32), np.array([0, -1, 0, 0]), "input 'u' has values beyond the range of uint8 (-1)"),
    (np.zeros(4, np.int32), np.array([0, 256.0, 0, 0]), "input 'u' has values beyond the range of uint8 (256.0)"),
])
def test_integer_inputs_that_do_not_fit_need_allow_lossy(tmp_path, x, u, message):
    program = _write(tmp_path, "int.mlir", INTEGER_PROGRAM)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=x, u=u)
    _one_diagnostic(run_tool("irc-run", program, "--inputs", inputs), message)
    assert run_tool("irc-run", program, "--inputs", inputs, "--allow-lossy").kind == "ok"
    np.savez(inputs, x=np.array([1, 2, 3, 2**31 - 1]), u=np.array([0, 255, 1, 2]))  # int64 values that fit
    assert run_tool("irc-run", program, "--inputs", inputs).kind == "ok"


# ---------------------------------------------------------------------------
# Outputs are never lost (item 1)
# ---------------------------------------------------------------------------


def test_output_without_a_suffix_is_written_exactly_there(tmp_path):
    """`--inputs in.npz --output in` overwrote in.npz (numpy appended .npz)."""
    inputs = _mlp_inputs(tmp_path)
    before = inputs.read_bytes()
    outcome = run_tool("irc-run", ROOT / "examples/mlp.mlir", "--inputs", "in.npz", "--output", "in", cwd=tmp_path)
    assert outcome.kind == "ok"
    assert inputs.read_bytes() == before
    assert set(np.load(tmp_path / "in")) == {"y"}


@pytest.mark.parametrize("flag", ["--output", "--trace"])
def test_an_output_in_a_missing_directory_is_one_error(tmp_path, flag):
    _one_diagnostic(run_tool("irc-run", ROOT / "examples/mlp.mlir", flag, tmp_path / "missing/out"),
                    f"error: {flag} {tmp_path / 'missing/out'}: directory {tmp_path / 'missing'} does not exist")


def test_an_output_link_is_written_through(tmp_path):
    """`-o link` replaced the link with a file instead of writing the file it names."""
    target = _write(tmp_path, "real.mlir", "old\n")
    link = tmp_path / "link.mlir"
    link.symlink_to(target.name)
    assert run_tool("irc-opt", ROOT / "examples/mlp.mlir", "-o", link).kind == "ok"
    assert link.is_symlink() and "te.op" in target.read_text()
    results = tmp_path / "results.npz"
    results.write_bytes(b"old")
    (tmp_path / "results-link").symlink_to(results)
    assert run_tool("irc-run", ROOT / "examples/mlp.mlir", "--output", tmp_path / "results-link").kind == "ok"
    assert (tmp_path / "results-link").is_symlink() and set(np.load(results)) == {"y"}


def _with_file_limit(command: str, cwd) -> subprocess.CompletedProcess:
    """``command`` under ``ulimit -f 1`` (1 KiB files) in a real shell."""
    return subprocess.run(["bash", "-c", f"ulimit -f 1; {command}"], capture_output=True, text=True, cwd=cwd,
                          env={"PATH": f"{BIN}:/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"})


@pytest.mark.slow
def test_a_file_size_limit_leaves_existing_outputs_whole(tmp_path):
    """With `ulimit -f 1` an output was left as a 1,024-byte partial file; a failed
    --trace did not name the file."""
    existing = _write(tmp_path, "out.mlir", "previous contents\n")
    done = _with_file_limit(f"irc-opt {ROOT / 'examples/mlp.mlir'} -p 'inference{{device=tiny16}}' -o out.mlir", tmp_path)
    assert done.returncode == 1 and done.stderr == "error: cannot write out.mlir: File too large\n"
    assert existing.read_text() == "previous contents\n"
    device = tmp_path / "dev.mlir"
    assert run_tool("irc-opt", ROOT / "examples/mlp.mlir", "-p", "inference{device=tiny16}", "-o", device).kind == "ok"
    trace = _write(tmp_path, "t.json", "{}")
    done = _with_file_limit("irc-run dev.mlir --trace t.json", tmp_path)
    assert done.returncode == 1 and done.stderr == "error: cannot write the --trace file t.json: File too large\n"
    assert trace.read_text() == "{}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dev.mlir", "out.mlir", "t.json"]  # no temporary left


# ---------------------------------------------------------------------------
# irc-translate and irc-plan outputs, the importer's checker (items 1, 5)
# ---------------------------------------------------------------------------


def _relu_model(path: Path, **attributes) -> Path:
    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node("Add", ["x", "w"], ["y"], name="add0", **attributes)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
                              [helper.make_tensor("w", TensorProto.FLOAT, [2], [1.0, 2.0])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_ir_on_stdout_never_replaces_an_existing_weights_file(tmp_path):
    model = _relu_model(tmp_path / "model.onnx")
    first = run_tool("irc-translate", "--import-onnx", model)
    assert first.kind == "ok" and "te.op" in first.stdout and (tmp_path / "model.weights.npz").exists()
    (tmp_path / "model.weights.npz").write_bytes(b"mine")
    _one_diagnostic(run_tool("irc-translate", "--import-onnx", model),
                    f"the weights would go to {tmp_path / 'model.weights.npz'}, which exists")
    assert (tmp_path / "model.weights.npz").read_bytes() == b"mine"
    again = run_tool("irc-translate", "--import-onnx", model, "--weights", tmp_path / "model.weights.npz")
    assert again.kind == "ok" and set(np.load(tmp_path / "model.weights.npz")) == {"w"}


def test_onnx_checker_errors_name_the_node(tmp_path):
    model = _relu_model(tmp_path / "bad.onnx", bogus=3)
    _one_diagnostic(run_tool("irc-translate", "--import-onnx", model),
                    "error: node 'add0' (Add, opset 17): attribute 'bogus' is not one of Add's (it takes: none)")


def test_plot_refuses_an_input_before_planning(tmp_path):
    program = tmp_path / "mlp.mlir"
    shutil.copy(ROOT / "examples/mlp.mlir", program)
    before = program.read_text()
    _one_diagnostic(run_tool("irc-plan", "--model", program, "--device", "tiny16", "--plot", program),
                    "would overwrite the --model file")
    _one_diagnostic(run_tool("irc-plan", "--model", program, "--device", "tiny16", "--plot", tmp_path / "no/p.png"),
                    "does not exist")
    assert program.read_text() == before


def test_plot_is_written_atomically(tmp_path, monkeypatch, capsys):
    """savefig went straight to the path; now the PNG bytes are made in memory and
    written at once through irc.output."""
    import types

    class Axes:
        def __getattr__(self, name):
            return lambda *args, **kwargs: None

    class Figure:
        def tight_layout(self):
            pass

        def savefig(self, stream, format):
            assert format == "png"
            stream.write(b"\x89PNG fake")

    pyplot = types.SimpleNamespace(subplots=lambda *a, **k: (Figure(), (Axes(), Axes())), close=lambda figure: None)
    matplotlib = types.SimpleNamespace(use=lambda backend: None, pyplot=pyplot)
    monkeypatch.setitem(sys.modules, "matplotlib", matplotlib)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", pyplot)
    from irc.tools.irc_plan import run

    plot = _write(tmp_path, "p.png", "old")
    assert run(["--model", str(ROOT / "examples/mlp.mlir"), "--device", "tiny16", "--plot", str(plot)]) == 0
    assert plot.read_bytes() == b"\x89PNG fake"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.png"]


# ---------------------------------------------------------------------------
# Found by the fuzzer (benchmarks/fuzz.py)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("attribute, message", [
    ("#irc.target", "b.mlir:1:41: error: wrong number of parameters for #irc.target"),
    ('#irc.target<"tiny4", "t10">', "b.mlir:1:41: error: wrong number of parameters for #irc.target"),
    ('#irc.target<"", "t10", {}>', "b.mlir:1:41: error: #irc.target needs a device name"),
])
def test_an_attribute_that_cannot_be_built_is_a_parse_error_at_it(tmp_path, attribute, message):
    """xDSL's generic attribute parser failed in zip(strict=True): an internal error."""
    program = _write(tmp_path, "b.mlir", f"builtin.module attributes {{irc.target = {attribute}}} {{\n}}\n")
    _one_diagnostic(run_tool("irc-opt", program), message)


def test_a_per_core_constant_beyond_int64_is_a_verifier_error(tmp_path):
    """numpy raised OverflowError filling a per-core table."""
    program = _write(tmp_path, "d.mlir", DEVICE_RING.replace("(d0 floordiv 2, (d0 mod 2) * 4)",
                                                             "(d0 floordiv 2, (d0 mod 2) * 10000000000000000000000)"))
    _one_diagnostic(run_tool("irc-opt", program), "'device.load' op the constant 10000000000000000000000 of a per-core map")


def test_a_device_op_on_billions_of_cores_is_refused_before_its_tables_are_built(tmp_path):
    """`cores = 2147483648` made the verifier build per-core tables until memory ran out."""
    program = _write(tmp_path, "d.mlir", DEVICE_RING.replace('name = "Y", cores = 4', 'name = "Y", cores = 2147483648'))
    _one_diagnostic(run_tool("irc-opt", program), "'device.alloc' op buffer Y is allocated on 2147483648 cores; irc handles 1 to")


@pytest.mark.slow
def test_a_huge_expression_is_refused_before_it_is_parsed(tmp_path):
    """A 2 MB expression (a wide sum made wider) took minutes to parse."""
    body = " + ".join(["exp(X[i])"] * 200_000)
    program = _write(tmp_path, "h.mlir", _te_program(body))
    outcome = run_tool("irc-opt", program, seconds=10)
    _one_diagnostic(outcome, "characters long; irc takes at most 100000")


def test_an_infinite_float_attribute_is_an_importer_error(tmp_path):
    """LeakyRelu alpha=inf wrote `A[0] * inf`, which no expression parses."""
    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node("LeakyRelu", ["x"], ["y"], name="leaky", alpha=float("inf"))
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "m.onnx")
    _one_diagnostic(run_tool("irc-translate", "--import-onnx", tmp_path / "m.onnx"),
                    "error: node 'leaky' (LeakyRelu, opset 17): attribute 'alpha' is inf; irc takes finite attributes")


def _te_program(body: str) -> str:
    return (f'func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {{\n'
            f'  %y = te.op "Y[i] = {body}" (%x) : (tensor<4xf32>) -> tensor<4xf32>\n'
            f'  func.return %y : tensor<4xf32>\n}}\n')


DEVICE_RING = """\
builtin.module attributes {irc.target = #irc.target<"tiny4", "t10", {}>} {
  func.func @ring(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
    %X = device.alloc {name = "X", cores = 4 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
    %Y = device.alloc {name = "Y", cores = 4 : i64, bytes = 16 : i64, offset = 16 : i64} : !device.buffer<1x4xf32>
    device.load %x into %X {origins = affine_map<(d0) -> (d0 floordiv 2, (d0 mod 2) * 4)>} : tensor<2x8xf32>, !device.buffer<1x4xf32>
    device.shift %X through %Y {source = affine_map<(d0) -> ((d0 + 1) mod 4)>} : !device.buffer<1x4xf32>, !device.buffer<1x4xf32>
    %y = device.store %X {origins = affine_map<(d0) -> (d0 floordiv 2, (d0 mod 2) * 4)>, group = affine_map<(d0) -> (d0)>, fill = 0.0 : f64} : !device.buffer<1x4xf32> -> tensor<2x8xf32>
    device.free %X : !device.buffer<1x4xf32>
    device.free %Y : !device.buffer<1x4xf32>
    func.return %y : tensor<2x8xf32>
  }
}
"""


@pytest.mark.parametrize("origin", ["1000000000000", "9223372036854775807", "-5"])
def test_a_tile_far_outside_its_tensor_is_a_verifier_error(tmp_path, origin):
    """irc-run padded the host tensor out to the tile: 29 TiB, or numpy's 'Maximum
    allowed dimension exceeded'."""
    program = _write(tmp_path, "d.mlir", DEVICE_RING.replace(
        "device.load %x into %X {origins = affine_map<(d0) -> (d0 floordiv 2, (d0 mod 2) * 4)>}",
        f"device.load %x into %X {{origins = array<i64: {origin}, 0, 0, 4, 1, 0, 1, 4>}}"))
    for tool in ("irc-opt", "irc-run"):
        _one_diagnostic(run_tool(tool, program), f"'device.load' op core 0: origins [{origin}, 0] puts a tile of [1, 4]")


@pytest.mark.parametrize("old, new, message", [
    ('kind = "matmul"', 'kind = "bogus"', "op unknown kind 'bogus'; kinds are matmul, conv"),
    ("roles = {batch = 1 : i64, m = 8 : i64, n = 4 : i64, k = 8 : i64}", "roles = {batch = 1 : i64}",
     "op a matmul sub-task needs roles batch, m, k, n; m, k, n missing"),
])
def test_a_sub_task_the_cost_model_cannot_price_is_a_verifier_error(tmp_path, old, new, message):
    """`kind = "bogus"` verified, then irc-run ended in an internal CostModelError."""
    compiled = run_tool("irc-opt", ROOT / "examples/mlp.mlir", "-p", "inference{device=tiny16}").stdout
    assert old in compiled
    program = _write(tmp_path, "dev.mlir", compiled.replace(old, new, 1))
    for tool in ("irc-opt", "irc-run"):
        _one_diagnostic(run_tool(tool, program), message)


def test_a_step_the_target_cost_model_cannot_price_is_located(tmp_path):
    """A device program whose target prices with seed003 (matmuls and convolutions
    only) ended in an internal CostModelError at its first elementwise step; irc-plan
    --cost seed003 on an elementwise operator likewise."""
    compiled = run_tool("irc-opt", ROOT / "examples/mlp.mlir", "-p", "inference{device=tiny16}").stdout
    program = _write(tmp_path, "dev.mlir", compiled.replace('"tiny16", "t10"', '"tiny16", "seed003"'))
    first = _one_diagnostic(run_tool("irc-run", program),
                            "error: 'device.vector' op seed003 cost model prices only matmul and conv operators")
    assert first.startswith(str(program))
    _one_diagnostic(run_tool("irc-plan", "--expr", "Y[k] = relu(X[k])", "--shape", "k=64", "--cost", "seed003"),
                    "error: seed003 cost model prices only matmul and conv operators, not 'unary'; choose another --cost")


def test_a_long_1d_input_imports_without_onnx_data_propagation(tmp_path):
    """`--shape x=2147483648` on a graph of Slices: onnx's data propagation walked every
    element (16M took 10 s and 1.3 GB; 2**31 never finished). It runs only when plain
    inference leaves a shape unknown."""
    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node("Slice", ["x", "starts", "ends"], ["y"], name="slice")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [helper.make_tensor("starts", TensorProto.INT64, [1], [0]),
                               helper.make_tensor("ends", TensorProto.INT64, [1], [2])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "m.onnx")
    outcome = run_tool("irc-translate", "--import-onnx", tmp_path / "m.onnx", "--shape", "x=2147483648", seconds=15)
    assert outcome.kind == "ok" and "tensor<2xf32>" in outcome.stdout
    _one_diagnostic(run_tool("irc-translate", "--import-onnx", tmp_path / "m.onnx", "--shape", f"x={2**41}"),
                    "a dimension of more than 1099511627776 is beyond what irc plans")


# ---------------------------------------------------------------------------
# Sizes and constants the verifier used to accept (audit of issue 13: C, D, E, H)
# ---------------------------------------------------------------------------


def _typed_program(body: str, element: str = "i32", result: str | None = None, n: int = 4) -> str:
    result = result or f"tensor<{n}x{element}>"
    return (f'func.func @main(%x: tensor<{n}x{element}>) -> {result} {{\n'
            f'  %y = te.op "{body}" (%x) : (tensor<{n}x{element}>) -> {result}\n'
            f'  func.return %y : {result}\n}}\n')


def test_a_result_beyond_the_interpreters_limit_is_located_not_out_of_memory(tmp_path):
    """`Y[i,j] = X[i]*X[j]` giving 200000x200000 printed `error: out of memory`."""
    program = _write(tmp_path, "big.mlir", _typed_program("Y[i,j] = X[i] * X[j]", "f32", "tensor<200000x200000xf32>",
                                                          200000))
    assert run_tool("irc-opt", program).kind == "ok"
    _one_diagnostic(run_tool("irc-run", program),
                    "big.mlir:2:3: error: 'te.op' op result tensor<200000x200000xf32> would take 149 GiB; the "
                    "interpreter holds every tensor in memory (at most 4 GiB per tensor)")


@pytest.mark.parametrize("body, message", [
    ("X[i] * 340282366920938463463374607431768211456",
     "'te.op' op the constant 3.402823669209385e+38 is beyond the range of i32 ([-2147483648, 2147483647])"),
    ("2147483648 + X[i]", "'te.op' op the constant 2147483648 is beyond the range of i32"),
    ("max(-2147483649, X[i])", "'te.op' op the constant -2147483649 is beyond the range of i32"),
    ("X[i] + cast(1e300)", "'te.op' op the constant 1e+300 is beyond the range of i32"),
    ("X[i] * 1e400", "the number 1e400 is beyond the range of f64"),
    ("X[i] * 9007199254740993", "the integer 9007199254740993 is not exact as a te number"),
])
@pytest.mark.parametrize("tool", ["irc-opt", "irc-run"])
def test_a_constant_its_element_type_cannot_hold_is_a_verifier_error(tmp_path, tool, body, message):
    """The fuzzer (seed 7): `X[i] * 2**128` on i32 was accepted by irc-opt, then irc-run
    ended in `internal error: Python int too large to convert to C long`; `1e400` was
    printed as `inf`, which does not parse again."""
    program = _write(tmp_path, "c.mlir", _typed_program(f"Y[i] = {body}"))
    _one_diagnostic(run_tool(tool, program), "c.mlir:2:")
    assert message in run_tool(tool, program).stderr


@pytest.mark.parametrize("element, body", [
    ("f16", "X[i] * 70000"), ("ui8", "X[i] * -1"), ("ui8", "X[i] + 256"), ("i1", "and(X[i], 2)"),
])
def test_constants_are_checked_against_every_element_type(tmp_path, element, body):
    program = _write(tmp_path, "c.mlir", _typed_program(f"Y[i] = {body}", element))
    _one_diagnostic(run_tool("irc-opt", program), f"is beyond the range of {element}")


def test_constants_whose_type_nothing_fixes_still_run(tmp_path):
    """pow's exponent and select's condition take any number: one beyond int64 computes
    in f64 rather than ending in an OverflowError."""
    program = _write(tmp_path, "c.mlir", _typed_program(
        "Y[i] = select(340282366920938463463374607431768211456, X[i], X[i]) + pow(X[i], 0)"))
    inputs = tmp_path / "in.npz"
    np.savez(inputs, arg0=np.array([1, 2, 3, 4], np.int32))
    outcome = run_tool("irc-run", program, "--inputs", inputs)
    assert outcome.kind == "ok" and "[2 3 4 5]" in outcome.stdout


def test_a_matmul_in_an_element_type_without_storage_is_located_in_the_pipeline(tmp_path):
    """A te matmul in f8E4M3FN verified, then the pipeline crashed."""
    program = _write(tmp_path, "f8.mlir", (ROOT / "examples/mlp.mlir").read_text().replace("f32", "f8E4M3FN"))
    assert run_tool("irc-opt", program).kind == "ok"
    first = _one_diagnostic(run_tool("irc-opt", program, "-p", "inference{device=tiny16}"), "f8.mlir:5:3: error: ")
    assert "element type f8E4M3FN" in first
    _one_diagnostic(run_tool("irc-run", program),
                    "f8.mlir:5:3: error: 'te.op' op element type f8E4M3FN has no storage in the interpreter")


def _onnx_model(tmp_path, node, inputs=(), initializers=(), output_type=None):
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph([node], "g", list(inputs),
                              [helper.make_tensor_value_info("y", output_type or TensorProto.FLOAT, None)],
                              list(initializers))
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_the_importer_bounds_every_nodes_output(tmp_path):
    """ONNX `Pad pads=[2**62, 0]` imported and verified, then irc-run said `internal
    error: array is too big`."""
    from onnx import TensorProto, helper

    model = _onnx_model(tmp_path, helper.make_node("Pad", ["x", "p"], ["y"], name="pad0"),
                        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                        [helper.make_tensor("p", TensorProto.INT64, [4], [2**62, 0, 0, 0])])
    _one_diagnostic(run_tool("irc-translate", "--import-onnx", model),
                    "error: node 'pad0' (Pad, opset 17): output 'y' would have shape 4611686018427387906x3: a "
                    "dimension of more than 1099511627776 (2**40) is beyond what irc plans")


@pytest.mark.parametrize("op, inputs, initializers, output, message", [
    ("Expand", [("x", "FLOAT", [1, 3])], [("s", "INT64", [2], [2**62, 3])], "FLOAT",
     "node 'n0' (Expand, opset 17): output 'y' would have shape 4611686018427387904x3: a dimension of more than"),
    ("ConstantOfShape", [], [("s", "INT64", [2], [2**62, 3])], "FLOAT",
     "node 'n0' (ConstantOfShape, opset 17): output 'y' would have shape 4611686018427387904x3"),
    ("ConstantOfShape", [], [("s", "INT64", [2], [2**20, 2**20])], "FLOAT",
     "node 'n0' (ConstantOfShape, opset 17): its output 'y' (1048576x1048576) is a constant of 4,096 GiB; irc folds "
     "constants of at most 1 GiB"),
    ("Range", [], [("a", "INT64", [], [0]), ("b", "INT64", [], [2**62]), ("c", "INT64", [], [1])], "INT64",
     "node 'n0' (Range, opset 17): output 'y' would have shape 4611686018427387904"),
    ("Range", [], [("a", "INT64", [], [0]), ("b", "INT64", [], [5]), ("c", "INT64", [], [0])], "INT64",
     "node 'n0' (Range, opset 17): cannot fold it: delta 0 never goes from start 0 to limit 5"),
])
def test_importer_errors_name_the_node_and_say_why(tmp_path, op, inputs, initializers, output, message):
    """`Expand` to 2**62 said `shapes ... do not broadcast` without naming the node;
    ConstantOfShape and Range said a bare `cannot fold`."""
    from onnx import TensorProto, helper

    node = helper.make_node(op, [name for name, *_ in inputs] + [name for name, *_ in initializers], ["y"], name="n0")
    model = _onnx_model(
        tmp_path, node,
        [helper.make_tensor_value_info(name, getattr(TensorProto, kind), shape) for name, kind, shape in inputs],
        [helper.make_tensor(name, getattr(TensorProto, kind), shape, values)
         for name, kind, shape, values in initializers],
        getattr(TensorProto, output))
    _one_diagnostic(run_tool("irc-translate", "--import-onnx", model), f"error: {message}")


def test_shapes_that_do_not_broadcast_name_the_node():
    from irc.frontend.onnx_graph import NodeError, broadcast_shapes

    with pytest.raises(NodeError, match=r"shapes \(2,\), \(3,\) do not broadcast"):
        broadcast_shapes((2,), (3,))


def test_integer_constants_import_exactly(tmp_path):
    """An int64 Pad fill went through a float (2**63 - 1 became 2**63, which no int64
    holds) and an int32 bound at the type's edge became a literal: both import, verify
    and run to onnx.reference's result."""
    import onnx
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    nodes = [helper.make_node("Pad", ["x", "p", "v"], ["padded"], name="pad0"),
             helper.make_node("Clip", ["i", "low", "high"], ["clipped"], name="clip0")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.INT64, [2]),
                     helper.make_tensor_value_info("i", TensorProto.INT32, [3])],
        [helper.make_tensor_value_info("padded", TensorProto.INT64, None),
         helper.make_tensor_value_info("clipped", TensorProto.INT32, None)],
        [helper.make_tensor("p", TensorProto.INT64, [2], [1, 1]), helper.make_tensor("v", TensorProto.INT64, [], [2**63 - 1]),
         helper.make_tensor("low", TensorProto.INT32, [], [-(2**31)]),
         helper.make_tensor("high", TensorProto.INT32, [], [2**31 - 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, tmp_path / "m.onnx")
    assert run_tool("irc-translate", "--import-onnx", "m.onnx", "-o", "m.mlir", cwd=tmp_path).kind == "ok"
    feeds = {"x": np.array([3, -4], np.int64), "i": np.array([-7, 0, 2**31 - 1], np.int32)}
    np.savez(tmp_path / "in.npz", **feeds)
    assert run_tool("irc-run", "m.mlir", "--inputs", "in.npz", "--output", "out.npz", cwd=tmp_path).kind == "ok"
    got = np.load(tmp_path / "out.npz")
    want = ReferenceEvaluator(model).run(None, feeds)
    np.testing.assert_array_equal(got["padded"], want[0])
    np.testing.assert_array_equal(got["clipped"], want[1])
    assert got["padded"][0] == 2**63 - 1


@pytest.mark.parametrize("attribute, message", [
    ("array<i640: 1, 1, 4>", "a.mlir:1:32: error: an attribute cannot hold values of this element type"),
    ("array<f80: 1.0>", "a.mlir:1:32: error: an attribute cannot hold values of this element type"),
    ("dense<1> : tensor<2xi640>", "a.mlir:1:32: error: an attribute cannot hold values of this element type"),
    ("1.0 : f80", "a.mlir:1:32: error: an attribute cannot hold values of this element type"),
    ("dense<1> : tensor<1000000000000xi32>", "a.mlir:1:43: error: a dense literal of 1000000000000 elements; irc "
                                             "takes at most 16777216"),
])
def test_an_attribute_xdsl_cannot_hold_is_a_parse_error(tmp_path, attribute, message):
    """`array<i640: 1, 1, 4>` (the fuzzer, seed 0) ended in `internal error: Format not
    implemented for i640`, `1.0 : f80` in one when printed, and a splat of 10**12
    elements in `out of memory`."""
    program = _write(tmp_path, "a.mlir", f"builtin.module attributes {{a = {attribute}}} {{\n}}\n")
    _one_diagnostic(run_tool("irc-opt", program), message)


@pytest.mark.parametrize("program, message", [
    (_typed_program("Y[i] max= X[i] where j in 1000000000000", "f32"),
     "'te.op' op iterates over 4000000000000 points; the interpreter evaluates at most 1073741824 (2**30)"),
    (_typed_program("Y[i] max= X[i] where j in 100000000", "f32"),
     "'te.op' op iterates over 100000000 points per element of its output; the interpreter holds at most"),
    (_typed_program("Y[i] = X[i]", "i8", n=2147483648),
     "'te.op' op result tensor<2147483648xi8> would take 16 GiB computed in int64"),
])
def test_work_beyond_the_interpreters_bounds_is_located_before_it_runs(tmp_path, program, message):
    """`Y[i] max= X[i] where j in 10**12` (small tensors, a huge iteration space) ended in
    `error: out of memory` or ran for ever; an i8 tensor of 2 GiB is computed in int64."""
    path = _write(tmp_path, "w.mlir", program)
    _one_diagnostic(run_tool("irc-run", path, seconds=10), f"w.mlir:2:3: error: {message}")


def test_a_large_product_of_plain_reads_has_no_iteration_bound(tmp_path):
    """The einsum path (a contraction) is not bounded by the general path's points."""
    from irc.dialects.te_expr import parse_expression
    from irc.interpreter.te_eval import MAX_GENERAL_POINTS, evaluation_limit

    bound = parse_expression("C[m,n] += A[m,k] * B[k,n]").bind([(2048, 1024), (1024, 2048)], (2048, 2048))
    assert bound.iteration_points > MAX_GENERAL_POINTS and evaluation_limit(bound) is None
    relu = parse_expression("C[m,n] max= relu(A[m,k] * B[k,n])").bind([(2048, 1024), (1024, 2048)], (2048, 2048))
    assert "points" in evaluation_limit(relu)


@pytest.mark.parametrize("old, new, message", [
    ("grid = array<i64: 2, 4, 1>", "grid = array<i64: 9223372036854775807, 4, 1>",
     "'shift.kernel' op grid [9223372036854775807, 4, 1] spans 36893488147419103228 cores; irc handles at most"),
    ('"A" {temporal = array<i64: 1, 1, 2>}', '"A" {temporal = array<i64: 1, 1, 9223372036854775807>}',
     "'shift.kernel' op temporal factors of A must be positive, at most 1048576 in product"),
])
def test_a_kernel_grid_beyond_the_core_limit_is_a_verifier_error(tmp_path, old, new, message):
    """`grid = array<i64: 9223372036854775807, 4, 1>` (the fuzzer, seed 0) verified, then
    rotation-align's per-core tables ended in numpy's `all elements of broadcast shape
    must be non-negative` (the core count wrapped)."""
    assert old in LOOP
    program = _write(tmp_path, "k.mlir", LOOP.replace(old, new))
    for args in ([], ["-p", "rotation-align"]):
        _one_diagnostic(run_tool("irc-opt", program, *args), f"k.mlir:2:3: error: {message}")


def test_a_deep_body_over_many_points_is_bounded_by_its_work(tmp_path):
    """`C[m,n] += relu(...63 levels...(A[m,k] * B[k,n]))` over 512x1024x256 points (the
    fuzzer, seed 0) ran for a minute: each level is a numpy pass over every point."""
    body = "relu(" * 63 + "A[m,k] * B[k,n]" + ")" * 63
    program = _write(tmp_path, "w.mlir", (
        "func.func @main(%A: tensor<512x1024xi8>, %B: tensor<1024x256xi8>) -> tensor<512x256xi8> {\n"
        f'  %c = te.op "C[m,n] += {body}" (%A, %B) : (tensor<512x1024xi8>, tensor<1024x256xi8>) -> tensor<512x256xi8>\n'
        "  func.return %c : tensor<512x256xi8>\n}\n"))
    _one_diagnostic(run_tool("irc-run", program, seconds=10),
                    "w.mlir:2:3: error: 'te.op' op evaluates its body of 66 nodes at 134217728 points")


def test_a_relayout_beyond_the_tensor_bounds_is_refused(tmp_path):
    """`device.relayout ... {shape = array<i64: 9223372036854775807, 4>}` (the fuzzer,
    seed 0) verified, then irc-run ended in numpy's `array is too big`: a verifier error
    beyond 2**40 elements, a located irc-run error beyond the interpreter's 4 GiB."""
    compiled = run_tool("irc-opt", ROOT / "examples/mlp.mlir", "-p", "inference{device=tiny16}").stdout
    found = re.search(r"device\.relayout .*?shape = array<i64: (\d+), ", compiled)
    assert found is not None
    program = _write(tmp_path, "d.mlir", compiled[: found.start(1)] + "9223372036854775807" + compiled[found.end(1):])
    for tool in ("irc-opt", "irc-run"):
        _one_diagnostic(run_tool(tool, program), "'device.relayout' op shape [9223372036854775807, ")
    program = _write(tmp_path, "d.mlir", compiled[: found.start(1)] + "4000000000" + compiled[found.end(1):])
    assert run_tool("irc-opt", program).kind == "ok"
    _one_diagnostic(run_tool("irc-run", program), "'device.relayout' op moves a tensor of shape [4000000000, ")


def test_an_opaque_axis_out_of_range_is_a_verifier_error(tmp_path):
    """`te.opaque "Sort"(%x) {axis = 9223372036854775807}` (the fuzzer, seed 0) verified,
    then irc-run ended in `Python int too large to convert to C int`."""
    program = _write(tmp_path, "s.mlir", (
        "func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {\n"
        '  %s = te.opaque "Sort"(%x) {axis = 9223372036854775807 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>\n'
        "  func.return %s : tensor<2x4xf32>\n}\n"))
    for tool in ("irc-opt", "irc-run"):
        _one_diagnostic(run_tool(tool, program), "s.mlir:2:3: error: 'te.opaque' op te.opaque \"Sort\": axis "
                                                 "9223372036854775807 is out of range for its input of rank 2")


def test_an_integer_min_reduction_runs_on_the_chip(tmp_path):
    """ReduceMin of int64 on the chip: the accumulator's identity (int64's maximum) is
    2**63 as the f64 of device.fill, which ended in `Python int too large to convert to
    C long` (the fuzzer, seed 0); it saturates to the buffer's type."""
    program = _write(tmp_path, "m.mlir", (
        "func.func @main(%x: tensor<4x1xi64>) -> tensor<i64> {\n"
        '  %y = te.op "Y[] min= X[d0,d1]" (%x) : (tensor<4x1xi64>) -> tensor<i64>\n'
        "  func.return %y : tensor<i64>\n}\n"))
    compiled = run_tool("irc-opt", program, "-p", "inference{device=tiny16}", "-o", tmp_path / "d.mlir")
    assert compiled.kind == "ok"
    inputs = tmp_path / "in.npz"
    np.savez(inputs, arg0=np.array([[9], [-3], [2**62], [5]], np.int64))
    for path in (program, tmp_path / "d.mlir"):
        outcome = run_tool("irc-run", path, "--inputs", inputs)
        assert outcome.kind == "ok" and outcome.stdout.splitlines()[1] == "-3" and outcome.stderr == "", outcome


def test_an_empty_output_is_named_at_its_node(tmp_path):
    """AveragePool whose padding leaves no window (output 3x2x0x4) ended in numpy's
    `index 0 is out of bounds` (the fuzzer, seed 0)."""
    from onnx import TensorProto, helper

    node = helper.make_node("AveragePool", ["x"], ["y"], name="pool", auto_pad="SAME_UPPER", kernel_shape=[3, 1],
                            pads=[1, 2, 0, 1], count_include_pad=1)
    model = _onnx_model(tmp_path, node, [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [3, 2, 1, 1])],
                        output_type=TensorProto.DOUBLE)
    _one_diagnostic(run_tool("irc-translate", "--import-onnx", model),
                    "error: node 'pool' (AveragePool, opset 17): output 'y' would have no elements")


def test_a_pass_whose_output_does_not_verify_is_named(tmp_path, capsys):
    """The input is verified before the pipeline, so IR that fails to verify after a
    pass is that pass's bug: irc-opt names it (before: the verifier's message alone, with
    no location and no pass, as a preload-schedule bug surfaced)."""
    from dataclasses import dataclass

    from xdsl.dialects import arith, builtin
    from xdsl.passes import ModulePass

    from irc.tools.irc_opt import IrcOptMain, run_tool

    @dataclass(frozen=True)
    class BreakIR(ModulePass):
        name = "break-ir"

        def apply(self, ctx, op: builtin.ModuleOp) -> None:
            # an addition of an i32 and an i64 constant: arith.addi's verifier refuses it
            left, right = arith.ConstantOp.from_int_and_width(1, 32), arith.ConstantOp.from_int_and_width(1, 64)
            add = arith.AddiOp(left, right, result_type=builtin.i32)
            op.body.block.add_ops([left, right, add])

    class WithBreakIR(IrcOptMain):
        def register_all_passes(self):
            super().register_all_passes()
            self.register_pass("break-ir", lambda: BreakIR)

    program = tmp_path / "empty.mlir"
    program.write_text("builtin.module {}\n")
    assert run_tool(WithBreakIR, [str(program), "-p", "break-ir"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: the IR pass 'break-ir' produced does not verify (a bug in the pass"), err
    assert "Traceback" not in err
