"""The IR says what it means (issue 10): the target is read once, kernels are built once,
a compiled module runs anywhere, and device IR grows with ops, not with cores."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import irc.devices.loader as loader
import irc.lowering.shift_ir as shift_ir
from irc.compile import compile_and_run
from irc.devices import DEVICE_DIR
from irc.target import cost_of, device_of

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
MATMUL = """
func.func @main(%a: tensor<64x512xf16>, %b: tensor<512x256xf16>) -> tensor<64x256xf16> {
  %c = te.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) : (tensor<64x512xf16>, tensor<512x256xf16>) -> tensor<64x256xf16>
  func.return %c : tensor<64x256xf16>
}
"""

def test_device_file_read_and_kernels_built_once_per_distinct_one(monkeypatch):
    """Through the whole pipeline and run: one device-file read; each kernel's schedule is
    decided once (rotation-align) and read back from the IR once (lowering and chip)."""
    loader._read_version.cache_clear()
    device_of.cache_clear()
    cost_of.cache_clear()
    shift_ir._built.clear()
    reads, decided, read_back = [], [], []
    real_load, real_build, real_assemble = loader.tomllib.loads, shift_ir.build_shift_kernel, shift_ir.assemble_kernel

    def counting_load(text):
        reads.append(text)
        return real_load(text)

    def counting_build(bound, *args, **kwargs):
        decided.append(str(bound.expr))
        return real_build(bound, *args, **kwargs)

    def counting_assemble(bound, *args, **kwargs):
        read_back.append(str(bound.expr))
        return real_assemble(bound, *args, **kwargs)

    monkeypatch.setattr(loader.tomllib, "loads", counting_load)
    monkeypatch.setattr(shift_ir, "build_shift_kernel", counting_build)
    monkeypatch.setattr(shift_ir, "assemble_kernel", counting_assemble)
    _, report = compile_and_run((ROOT / "examples/mlp.mlir").read_text(), device="tiny16")
    assert all(error < 1e-3 for error in report.max_abs_error.values())
    assert len(reads) == len(set(reads)) == 1, reads
    assert len(decided) == len(set(decided)) == 3, decided
    assert len(read_back) == len(set(read_back)) == 3, read_back


@pytest.mark.slow
def test_an_aligned_module_is_read_not_rescheduled(tmp_path):
    """Lowering and running a module rotation-align already wrote never asks the schedule
    to decide anything (no ``build_shift_kernel``): the IR states the kernels."""
    aligned = tmp_path / "aligned.mlir"
    made = _run("irc-opt", str(ROOT / "examples/mlp.mlir"), "-p",
                "rtensor-partition{device=tiny16},rtensor-to-shift,rotation-align", "-o", str(aligned))
    assert made.returncode == 0, made.stderr
    probe = f"""
import numpy as np
import irc.lowering.shift_ir as shift_ir
from irc.runner import find_function, parse_module, random_inputs, run_function
decided = []
real = shift_ir.build_shift_kernel
shift_ir.build_shift_kernel = lambda *a, **k: decided.append(a) or real(*a, **k)
module = parse_module(open({str(aligned)!r}).read(), "aligned.mlir")
inputs = random_inputs(find_function(module, "main"), seed=0)
from irc.lowering.shift_to_device import ShiftToDevice
from irc.passes.device_alloc import DeviceAlloc
from irc.runner import make_context
for stage in (ShiftToDevice(), DeviceAlloc()):
    stage.apply(make_context(), module)
run_function(module, inputs, "main")
print(len(decided))
"""
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split()[-1] == "0", ran.stdout


def _run(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / args[0]), *args[1:]], capture_output=True, text=True, cwd=cwd)

@pytest.mark.slow
def test_compiled_module_moved_elsewhere_runs_without_its_device_file(tmp_path):
    build, elsewhere = tmp_path / "build", tmp_path / "elsewhere"
    build.mkdir()
    elsewhere.mkdir()
    device = build / "my_chip.toml"
    device.write_text((DEVICE_DIR / "tiny8.toml").read_text())
    source = build / "mlp.mlir"
    shutil.copy(ROOT / "examples/mlp.mlir", source)
    compiled = _run("irc-opt", "mlp.mlir", "-p", 'inference{device="my_chip.toml"}', "-o", "mlp.device.mlir", cwd=build)
    assert compiled.returncode == 0, compiled.stderr
    shutil.move(str(build / "mlp.device.mlir"), elsewhere / "moved.mlir")
    shutil.rmtree(build)
    ran = _run("irc-run", "moved.mlir", "--report", cwd=elsewhere)
    assert ran.returncode == 0, ran.stderr
    assert "tiny8" in ran.stdout

def _device_ir(device: str, tmp_path: Path) -> str:
    source = tmp_path / "matmul.mlir"
    source.write_text(MATMUL)
    out = _run("irc-opt", str(source), "-p", f"inference{{device={device}}}")
    assert out.returncode == 0, out.stderr
    return out.stdout

@pytest.mark.slow
def test_device_ir_grows_with_ops_not_cores(tmp_path):
    """64x512x256 on 1,472 cores is at most 3x the IR of the same matmul on 16 cores."""
    ipu, tiny = _device_ir("ipu-mk2", tmp_path), _device_ir("tiny16", tmp_path)
    assert "affine_map<(d0) ->" in ipu
    assert len(ipu) <= 3 * len(tiny), (len(ipu), len(tiny))


CHAIN = """
func.func @main(%a: tensor<512x4096xf16>, %b: tensor<4096x4096xf16>, %c: tensor<4096x512xf16>) -> tensor<512x512xf16> {
  %h = te.op "H[m,n] += A[m,k] * B[k,n]" (%a, %b) : (tensor<512x4096xf16>, tensor<4096x4096xf16>) -> tensor<512x4096xf16>
  %y = te.op "Y[m,n] += H[m,k] * C[k,n]" (%h, %c) : (tensor<512x4096xf16>, tensor<4096x512xf16>) -> tensor<512x512xf16>
  func.return %y : tensor<512x512xf16>
}
"""


@pytest.mark.slow
def test_shifts_and_relayouts_on_1472_cores_state_no_per_core_lists(tmp_path):
    """A two-matmul chain on the IPU Mk2 rotates a tensor (device.shift) and moves the
    intermediate between the two kernels' layouts (device.relayout): every per-core value
    (origins, ring partners, pieces) is an affine map of the core id, so no `array<i64>`
    lists the cores (the longest states a shape or a loop's trips)."""
    import re

    source = tmp_path / "chain.mlir"
    source.write_text(CHAIN)
    out = _run("irc-opt", str(source), "-p", "inference{device=ipu-mk2}")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "device.shift" in text and "device.relayout" in text
    lists = [m.group(1).split(",") for m in re.finditer(r"array<i64:([^>]*)>", text)]
    assert lists and max(len(values) for values in lists) <= 8, max(lists, key=len)
    assert len(text) < 20_000
