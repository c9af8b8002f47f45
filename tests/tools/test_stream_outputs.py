"""Outputs that are not regular files (issue 27, item 4): ``/dev/null``, ``/dev/stdout`` and
FIFOs are written directly, as mlir-opt and xdsl-opt do, by every tool's output options
(irc-opt -o, irc-run --output/--trace, irc-translate -o/--weights, irc-plan --plot,
irc-dse --csv); writing over an input is still refused."""

from __future__ import annotations

import io
import os
import threading
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from irc.output import OutputError, check_output, is_stream, same_output
from irc.tools import irc_dse
from tests.fuzzing import run_tool

ROOT = Path(__file__).resolve().parents[2]
MLP = ROOT / "examples/mlp.mlir"


@contextmanager
def fifo_read_by_a_thread(path: Path):
    """A FIFO at ``path`` whose contents a thread reads to EOF; ``box["data"]`` holds them
    once the block ends (a writer that never came is stood in for, so the thread ends)."""
    os.mkfifo(path)
    box: dict = {}

    def read() -> None:
        with open(path, "rb") as stream:
            box["data"] = stream.read()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    box["reader"] = reader
    try:
        yield box
    finally:
        reader.join(timeout=20)
        if reader.is_alive():  # the tool failed before opening the FIFO: let the reader see EOF
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
            reader.join(timeout=5)


@pytest.fixture(scope="module")
def device_program(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("streams") / "mlp.device.mlir"
    assert run_tool("irc-opt", MLP, "-p", "inference{device=tiny16}", "-o", path).kind == "ok"
    return path


def test_irc_opt_writes_to_dev_null_and_a_fifo(tmp_path):
    assert run_tool("irc-opt", MLP, "-o", "/dev/null").kind == "ok"
    printed = run_tool("irc-opt", MLP)
    with fifo_read_by_a_thread(tmp_path / "fifo") as box:
        outcome = run_tool("irc-opt", MLP, "-o", tmp_path / "fifo")
    assert outcome.kind == "ok" and outcome.stdout == "", outcome.stderr
    assert box["data"].decode() == printed.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]  # nothing beside the FIFO


def test_a_failed_run_ends_the_reader_of_its_fifo(tmp_path):
    """The output is written only once the run succeeded; a failed run still opens and
    closes a FIFO output, so that its reader sees the end instead of waiting for ever."""
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f( {\n")
    with fifo_read_by_a_thread(tmp_path / "fifo") as box:
        outcome = run_tool("irc-opt", bad, "-o", tmp_path / "fifo")
        box["reader"].join(timeout=10)
        assert not box["reader"].is_alive() and box["data"] == b""
    assert outcome.kind == "diagnostic"


def test_irc_run_writes_results_and_trace_to_streams(tmp_path, device_program):
    with fifo_read_by_a_thread(tmp_path / "results") as box:
        outcome = run_tool("irc-run", device_program, "--output", tmp_path / "results", "--trace", "/dev/null")
    assert outcome.kind == "ok", outcome.stderr
    assert set(np.load(io.BytesIO(box["data"]))) == {"y"}
    assert outcome.stdout == ""  # "wrote ..." goes to stderr beside a stream: the stream holds the archive alone
    both = run_tool("irc-run", device_program, "--output", "/dev/null", "--trace", "/dev/null")
    assert both.kind == "ok", both.stderr


def test_irc_run_archive_on_dev_stdout_is_the_archive_alone(tmp_path):
    out = tmp_path / "captured"
    out.write_bytes(b"")  # the tool's standard output
    outcome = run_tool("irc-run", MLP, "--output", "/dev/stdout", stdout=str(out))
    assert outcome.kind == "ok", outcome.stderr
    assert set(np.load(out)) == {"y"}


def _weighted_onnx(path: Path) -> Path:
    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor("w", TensorProto.FLOAT, [3, 4], np.arange(12.0).tolist())])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_irc_translate_writes_ir_and_weights_to_streams(tmp_path):
    model = _weighted_onnx(tmp_path / "m.onnx")
    # IR to /dev/null: the weights go beside the model, as with the IR on stdout
    outcome = run_tool("irc-translate", "--import-onnx", model, "-o", "/dev/null")
    assert outcome.kind == "ok", outcome.stderr
    assert set(np.load(tmp_path / "m.weights.npz")) == {"w"}
    with fifo_read_by_a_thread(tmp_path / "w.fifo") as box:
        outcome = run_tool("irc-translate", "--import-onnx", model, "-o", tmp_path / "m.mlir",
                           "--weights", tmp_path / "w.fifo")
    assert outcome.kind == "ok", outcome.stderr
    assert np.array_equal(np.load(io.BytesIO(box["data"]))["w"], np.arange(12.0).reshape(3, 4))
    assert '"w.fifo"' in (tmp_path / "m.mlir").read_text()
    both = run_tool("irc-translate", "--import-onnx", model, "-o", "/dev/null", "--weights", "/dev/null")
    assert both.kind == "ok", both.stderr


def test_irc_plan_plot_to_a_fifo(tmp_path):
    pytest.importorskip("matplotlib")
    with fifo_read_by_a_thread(tmp_path / "plot") as box:
        outcome = run_tool("irc-plan", "--model", MLP, "--device", "tiny16", "--plot", tmp_path / "plot", seconds=60)
    assert outcome.kind == "ok", outcome.stderr
    assert box["data"][:4] == b"\x89PNG"
    assert "wrote" not in outcome.stdout


def test_irc_dse_csv_to_a_fifo_is_written_once(tmp_path, capsys):
    sweep = ["--device", "tiny16-hbm", "--model", "llama2-13b", "--scale", "32", "--chips", "1", "--layers", "2",
             "--batch", "4", "--seq", "64", "--hbm", "16,32", "--link", "5.5", "--topology", "all-to-all",
             "--cores", "16", "--designs", "basic", "--workers", "1"]
    with fifo_read_by_a_thread(tmp_path / "csv") as box:
        assert irc_dse.run(sweep + ["--csv", str(tmp_path / "csv")]) == 0
    lines = box["data"].decode().splitlines()
    assert lines[0].startswith("point,") and len(lines) == 3  # the header and both points, once
    assert capsys.readouterr().out == ""


def test_streams_are_told_from_files(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "file").write_text("x")
    assert is_stream("/dev/null") and is_stream(str(tmp_path / "fifo")) and is_stream("/dev/stdout")
    assert not is_stream(str(tmp_path / "file")) and not is_stream(str(tmp_path / "new")) and not is_stream(str(tmp_path))
    assert not same_output("/dev/null", "/dev/null")  # a character device takes two outputs
    assert same_output(str(tmp_path / "fifo"), str(tmp_path / "fifo"))


def test_a_stream_that_is_an_input_is_still_refused(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    os.symlink(tmp_path / "fifo", tmp_path / "link")
    with pytest.raises(OutputError, match="would overwrite the input"):
        check_output(str(tmp_path / "link"), "-o", [(str(tmp_path / "fifo"), "the input")])
    check_output("/dev/null", "-o", [("/dev/null", "the input")])  # writing to /dev/null replaces nothing
    with pytest.raises(OutputError, match="is a directory"):
        check_output(str(tmp_path), "-o")
    program = tmp_path / "prog.mlir"
    program.write_bytes(MLP.read_bytes())
    refused = run_tool("irc-opt", program, "-o", "/dev/stdout", stdout=str(program))
    assert refused.kind == "diagnostic" and "would overwrite the input" in refused.stderr
    assert program.read_bytes() == MLP.read_bytes()
