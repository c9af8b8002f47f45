"""No input or output is ever lost (issue 13): a tool refuses to write over its own
inputs, writes every file all at once, and leaves an existing output as it was when
the run fails."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from irc.output import OutputError, check_output, write_atomically
from tests.fuzzing import run_tool

ROOT = Path(__file__).resolve().parents[2]


def _tool(name, *args, cwd=None):
    """The tool run as its console script would be, in a forked child (no start-up)."""
    outcome = run_tool(name, *args, cwd=cwd)
    return subprocess.CompletedProcess([name, *args], outcome.status, outcome.stdout, outcome.stderr)


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "in.mlir"
    shutil.copy(ROOT / "examples/mlp.mlir", path)
    return path


def test_irc_opt_never_truncates_its_input(tmp_path, program):
    before = program.read_text()
    link = tmp_path / "link.mlir"
    link.symlink_to(program)
    for target in (program, link):
        done = _tool("irc-opt", program, "-o", target)
        assert done.returncode == 1 and "would overwrite the input" in done.stderr
        assert program.read_text() == before


def test_a_failing_run_leaves_the_existing_output(tmp_path, program):
    existing = tmp_path / "existing.mlir"
    existing.write_text("keep me\n")
    bad = tmp_path / "bad.mlir"
    bad.write_text("garbage\n")
    assert _tool("irc-opt", bad, "-o", existing).returncode == 1
    assert _tool("irc-opt", program, "-p", "inference{device=no-such-chip}", "-o", existing).returncode == 1
    assert existing.read_text() == "keep me\n"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".irc-")]  # no temporary left


def test_irc_run_outputs_never_replace_inputs(tmp_path, program):
    device = tmp_path / "dev.mlir"
    assert _tool("irc-opt", program, "-p", "inference{device=tiny16}", "-o", device).returncode == 0
    text = device.read_text()
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.zeros((8, 64), np.float32), w1=np.zeros((64, 32), np.float32),
             b1=np.zeros(32, np.float32), w2=np.zeros((32, 16), np.float32))
    (tmp_path / "a_directory").mkdir()
    for flags in (["--trace", device], ["--inputs", inputs, "--output", inputs],
                  ["--output", tmp_path / "a_directory"]):  # /dev/null is a stream (test_stream_outputs.py)
        done = _tool("irc-run", device, *flags)
        assert done.returncode == 1 and done.stderr.startswith("error: "), (flags, done.stderr)
    assert device.read_text() == text
    out = tmp_path / "results"  # exactly this name: no .npz appended
    assert _tool("irc-run", device, "--output", out).returncode == 0
    assert set(np.load(out)) == {"y"}


def test_irc_translate_keeps_ir_and_weights_apart(tmp_path):
    import onnx

    from irc.workloads.graphs import BertConfig, build_bert_layer

    model = tmp_path / "bert.onnx"
    onnx.save(build_bert_layer(BertConfig(batch=1, seq=4, hidden=16, heads=2, intermediate=32)), model)
    done = _tool("irc-translate", "--import-onnx", model, "--weights", tmp_path / "x.mlir", "-o", tmp_path / "x.mlir")
    assert done.returncode == 1 and "same file" in done.stderr
    assert _tool("irc-translate", "--import-onnx", model, "-o", model).returncode == 1
    done = _tool("irc-translate", "--import-onnx", model, "-o", tmp_path / "bert.mlir")
    assert done.returncode == 0 and "wrote" in done.stderr and (tmp_path / "bert.weights.npz").exists()


def test_write_atomically_keeps_the_old_contents_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "out.txt"
    target.write_text("old")

    def full_disk(_):
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr("irc.output.os.fsync", full_disk)
        with pytest.raises(OSError):
            write_atomically(str(target), "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]
    write_atomically(str(target), "new")
    assert target.read_text() == "new"
    with pytest.raises(OutputError, match="would overwrite the input"):
        check_output(str(target), "-o", [(str(target), "the input")])


@pytest.mark.parametrize("case, message", [
    ("npy", "holds one unnamed array"),
    ("strings", "holds <U1 data"),
    ("complex", "holds complex128 data"),
    ("overflow", "beyond the range of float32"),
])
def test_irc_run_bad_inputs_are_one_line(tmp_path, case, message):
    shapes = {"x": (8, 64), "w1": (64, 32), "b1": (32,), "w2": (32, 16)}
    arrays = {name: np.zeros(shape) for name, shape in shapes.items()}
    path = tmp_path / "in.npz"
    if case == "npy":
        path = tmp_path / "in.npy"
        np.save(path, np.zeros(3))
    else:
        arrays["x"] = {"strings": np.full((8, 64), "a"), "complex": np.ones((8, 64)) * 1j,
                       "overflow": np.full((8, 64), 1e300)}[case]
        np.savez(path, **arrays)
    done = _tool("irc-run", ROOT / "examples/mlp.mlir", "--inputs", path)
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and message in done.stderr, done.stderr


def test_irc_run_refuses_a_tensor_it_cannot_hold(tmp_path):
    huge = tmp_path / "huge.mlir"
    huge.write_text('func.func @main(%x: tensor<1000000000000x4xf32>) -> tensor<1000000000000x4xf32> {\n'
                    '  %y = te.op "Y[i,j] = relu(X[i,j])" (%x) : (tensor<1000000000000x4xf32>) -> '
                    'tensor<1000000000000x4xf32>\n  func.return %y : tensor<1000000000000x4xf32>\n}\n')
    done = _tool("irc-run", huge)
    assert done.returncode == 1 and "GiB" in done.stderr and "Traceback" not in done.stderr
    assert _tool("irc-run", ROOT / "examples/mlp.mlir", "--seed", "-1").stderr.startswith("error: the seed")


@pytest.mark.parametrize("tool", ["irc-opt", "irc-run", "irc-translate", "irc-plan"])
def test_usage_errors_exit_1_like_every_other_failure(tool):
    done = _tool(tool, "--no-such-flag")
    assert done.returncode == 1 and "error:" in done.stderr


@pytest.mark.slow
def test_an_npz_bomb_is_refused_before_it_inflates(tmp_path):
    """250 KB compressed, 256 MB inflated, of the wrong shape: the header says so first."""
    path = tmp_path / "bomb.npz"
    np.savez_compressed(path, x=np.zeros((8000, 8000), np.float32))
    assert path.stat().st_size < 1 << 20
    done = _tool("irc-run", ROOT / "examples/mlp.mlir", "--inputs", path)
    assert done.returncode == 1 and "has shape (8000, 8000)" in done.stderr


@pytest.mark.parametrize("args, message", [
    (["--expr", "C[m,n] += A[m,k] * B[k,n]", "--shape", f"m={10**30},k=4,n=4"], "more than the"),
    (["--expr", "Y[i] = X[1000000000000*i]", "--shape", "i=4"], "beyond what irc plans"),
    (["--expr", "Y[i] = X[1000000000*i]", "--shape", "i=4"], "strides up to"),
])
def test_irc_plan_sizes_beyond_reason_are_one_line(args, message):
    done = _tool("irc-plan", *args)
    assert done.returncode == 1 and message in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_irc_opt_never_writes_over_a_file_a_pass_option_names(tmp_path, program):
    """`-p 'inference{device="mydev.toml"}' -o mydev.toml` exited 0 and wrote the IR over
    the device file: every file a pass option names is an input of the run."""
    device = tmp_path / "mydev.toml"
    shutil.copy(ROOT / "irc/devices/tiny16.toml", device)
    before = device.read_text()
    link = tmp_path / "link.toml"
    link.symlink_to(device.name)
    for option, target in ((device.name, device.name), (link.name, device.name), (device.name, link.name)):
        done = _tool("irc-opt", program, "-p", f'inference{{device="{option}"}}', "-o", target, cwd=tmp_path)
        assert done.returncode == 1, done.stderr
        assert done.stderr == (f"error: -o {target} would overwrite the file pass 'inference' reads "
                               f"(option device={option}); choose another path\n")
    assert device.read_text() == before and link.is_symlink()
    done = _tool("irc-opt", program, "-p", f'inference{{device="{device.name}"}}', "-o", "out.mlir", cwd=tmp_path)
    assert done.returncode == 0 and "device.mma" in (tmp_path / "out.mlir").read_text()


def _weighted_model(tmp_path) -> Path:
    """An imported model whose weight lives in a side file (`w.npz`)."""
    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor("w", TensorProto.FLOAT, [3, 4], np.arange(12.0).tolist())])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "m.onnx")
    assert _tool("irc-translate", "--import-onnx", "m.onnx", "-o", "m.mlir", "--weights", "w.npz",
                 cwd=tmp_path).returncode == 0
    return tmp_path / "w.npz"


def test_irc_run_never_writes_over_the_modules_weights_file(tmp_path):
    weights = _weighted_model(tmp_path)
    before = weights.read_bytes()
    for flags in (["--output", "w.npz"], ["--trace", "w.npz"], ["--output", str(weights)]):
        done = _tool("irc-run", "m.mlir", *flags, cwd=tmp_path)
        assert done.returncode == 1 and "would overwrite the module's weights file (irc.weights)" in done.stderr, (
            flags, done.stderr)
    assert weights.read_bytes() == before
    done = _tool("irc-run", "m.mlir", "--output", "out.npz", cwd=tmp_path)
    assert done.returncode == 0 and set(np.load(tmp_path / "out.npz")) == {"y"}


def test_irc_opt_never_writes_over_the_modules_weights_file(tmp_path):
    """irc-opt reads no weights, but the module it is given names them (irc.weights):
    `-o m.weights.npz` used to replace the only copy of an imported model's weights."""
    weights = _weighted_model(tmp_path)
    before = weights.read_bytes()
    for args in (["m.mlir", "-o", "w.npz"], ["m.mlir", "-p", "inference{device=tiny16}", "-o", str(weights)]):
        done = _tool("irc-opt", *args, cwd=tmp_path)
        assert done.returncode == 1 and "-o" in done.stderr and \
            "would overwrite the module's weights file (irc.weights)" in done.stderr, (args, done.stderr)
    assert weights.read_bytes() == before
    assert _tool("irc-opt", "m.mlir", "-o", "copy.mlir", cwd=tmp_path).returncode == 0


def test_irc_opt_output_in_another_folder_still_names_the_weights(tmp_path):
    """A relative irc.weights is read beside the IR file: `irc-opt m.mlir -o out/x.mlir`
    left it as it was, so `irc-run out/x.mlir` said the weights file does not exist."""
    _weighted_model(tmp_path)
    (tmp_path / "out").mkdir()
    assert _tool("irc-opt", "m.mlir", "-p", "inference{device=tiny16}", "-o", "out/x.mlir", cwd=tmp_path).returncode == 0
    assert 'irc.weights = "../w.npz"' in (tmp_path / "out" / "x.mlir").read_text()
    np.savez(tmp_path / "in.npz", x=np.ones((2, 3), np.float32))
    done = _tool("irc-run", "out/x.mlir", "--inputs", "in.npz", "--output", "y.npz", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    np.testing.assert_allclose(np.load(tmp_path / "y.npz")["y"], np.ones((2, 3)) @ np.arange(12.0).reshape(3, 4))
    assert _tool("irc-opt", "m.mlir", "-o", "same.mlir", cwd=tmp_path).returncode == 0   # beside it: unchanged
    assert 'irc.weights = "w.npz"' in (tmp_path / "same.mlir").read_text()


def test_irc_run_reads_only_the_weights_and_inputs_it_uses(tmp_path, monkeypatch):
    """Unused members of an npz were inflated too: a 2 MB archive became 2.1 GB. Members
    the function does not read are never loaded (counted at numpy's reader)."""
    from irc import runner

    weights = _weighted_model(tmp_path)
    stored = dict(np.load(weights))
    np.savez(weights, **stored, unused=np.zeros((300, 300), np.float32))
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.ones((2, 3), np.float32), extra=np.zeros((500, 500)))
    loaded = []
    real = np.lib.npyio.NpzFile.__getitem__

    def counting(self, key):
        loaded.append(key)
        return real(self, key)

    monkeypatch.setattr(np.lib.npyio.NpzFile, "__getitem__", counting)
    module = runner.parse_module((tmp_path / "m.mlir").read_text(), str(tmp_path / "m.mlir"))
    signature = runner.find_function(module, None)
    given = runner.read_arrays(str(inputs), runner.argument_shapes(signature), "input", "--inputs")
    (result,) = runner.run_function(module, given).values()
    assert sorted(loaded) == ["w", "x"]
    np.testing.assert_allclose(result, np.ones((2, 3)) @ np.arange(12.0).reshape(3, 4))


def test_irc_translate_never_writes_over_a_constant_it_reads(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node("Reshape", ["x", "s"], ["y"], name="r")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                                            helper.make_tensor_value_info("s", TensorProto.INT64, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "r.onnx")
    np.save(tmp_path / "s.npy", np.array([3, 2]))
    before = (tmp_path / "s.npy").read_bytes()
    for flag in ("-o", "--weights"):
        done = _tool("irc-translate", "--import-onnx", "r.onnx", "--constant", "s=s.npy", flag, "s.npy", cwd=tmp_path)
        assert done.returncode == 1 and done.stderr == (
            f"error: {flag} s.npy would overwrite the --constant s file; choose another path\n")
    assert (tmp_path / "s.npy").read_bytes() == before
