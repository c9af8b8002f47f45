"""Baselines never fail where irc succeeds (issue 11): the VGM and Roller-style plans of
every model builder, at small configurations on the 1,472-core IPU Mk2, where most ops
cannot use the 90% of cores the utilisation floor asks for."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from tests.programs import small_models

SMALL = small_models()


@pytest.mark.parametrize("baseline", ["vgm", "roller"])
@pytest.mark.parametrize("model", sorted(SMALL))
def test_baseline_plans_every_model_builder(tmp_path, model, baseline):
    path = tmp_path / f"{model}.onnx"
    onnx.save(SMALL[model](), path)
    tool = Path(sys.executable).parent / "irc-plan"
    done = subprocess.run([str(tool), "--model", str(path), "--device", "ipu-mk2", "--baseline", baseline],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "total:" in done.stdout


def test_a_baseline_that_cannot_run_is_reported_infeasible(tmp_path):
    """Weights of 6 KiB per core on a 4 KiB chip: VGM cannot hold them; that is its
    result (with the bytes), not a failure of irc-plan."""
    from tests.programs import mlp

    path = tmp_path / "big.mlir"
    path.write_text(mlp([64, 64, 64, 64], tokens=8, relu=False))
    tool = Path(sys.executable).parent / "irc-plan"
    done = subprocess.run([str(tool), "--model", str(path), "--device", "tiny4", "--baseline", "vgm"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "vgm baseline: infeasible:" in done.stdout and "bytes per core" in done.stdout
    done = subprocess.run([str(tool), "--model", str(path), "--device", "tiny4", "--baseline", "vgm", "--json"],
                          capture_output=True, text=True)
    import json

    data = json.loads(done.stdout)
    assert data["feasible"] is False and data["needed_bytes"] > data["available_bytes"]
