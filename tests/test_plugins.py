"""A plug-in extends irc through one route (`irc.plugins`): the example package installed
by `make test` adds a pass, a cost model and a device, and every tool picks them up."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from irc.cost import get_cost_model, known_cost_models
from irc.devices import known_devices, load_device

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[1]


def _tool(name, *args, cwd=None):
    return subprocess.run([str(BIN / name), *map(str, args)], capture_output=True, text=True, cwd=cwd)


def test_registries_list_the_plugins_cost_model_and_device():
    assert "example-fast-exchange" in known_cost_models()
    assert "example-chip" in known_devices()
    fast, t10 = get_cost_model("example-fast-exchange"), get_cost_model("t10")
    chip = load_device("example-chip")
    assert chip.cores == 32 and chip.sram_bytes == 32768
    assert fast.shift_cycles(chip, 1000) == pytest.approx(t10.shift_cycles(chip, 1000) / 2)


@pytest.mark.slow
def test_irc_plan_with_the_plugins_device_and_cost_model():
    done = _tool("irc-plan", "--expr", "C[m,n] += A[m,k] * B[k,n]", "--shape", "m=64,k=64,n=64",
                 "--device", "example-chip", "--cost", "example-fast-exchange")
    assert done.returncode == 0, done.stderr
    assert "32768 B" in done.stdout


@pytest.mark.slow
def test_the_whole_pipeline_on_the_plugins_device(tmp_path):
    lowered = _tool("irc-opt", ROOT / "examples/mlp.mlir", "-p",
                    "inference{device=example-chip cost=example-fast-exchange}", "-o", tmp_path / "mlp.device.mlir")
    assert lowered.returncode == 0, lowered.stderr
    ran = _tool("irc-run", tmp_path / "mlp.device.mlir", "--report")
    assert ran.returncode == 0, ran.stderr
    assert "chip time on example-chip (example-fast-exchange cost model)" in ran.stdout
