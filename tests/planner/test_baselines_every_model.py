"""Baselines never fail where irc succeeds (issue 11): the VGM, Roller-style and
every-op-fastest plans of every model builder of `benchmarks/models` (BERT, ViT block and
whole ViT, ResNet stage and whole ResNet-50, GPT-2 with and without its LM head, Llama,
OPT), at small configurations on the 1,472-core IPU Mk2, where most ops cannot use the
90% of cores the utilisation floor asks for."""

from __future__ import annotations

import onnx
import pytest

from tests.programs import every_builder

SMALL = every_builder()


@pytest.mark.parametrize("model", sorted(SMALL))
def test_baseline_plans_every_model_builder(tmp_path, capsys, model):
    from irc.tools.irc_plan import run

    path = tmp_path / f"{model}.onnx"
    onnx.save(SMALL[model](), path)
    for baseline in ("vgm", "roller", "fastest"):
        status = run(["--model", str(path), "--device", "ipu-mk2", "--baseline", baseline])
        out, err = capsys.readouterr()
        assert status == 0, err
        assert "total:" in out and "infeasible" not in out, out


def test_a_baseline_that_cannot_run_is_reported_infeasible(tmp_path, capsys):
    """Weights of 6 KiB per core on a 4 KiB chip: VGM cannot hold them; that is its
    result (with the bytes), not a failure of irc-plan."""
    import json

    from irc.tools.irc_plan import run
    from tests.programs import mlp

    path = tmp_path / "big.mlir"
    path.write_text(mlp([64, 64, 64, 64], tokens=8, relu=False))
    status = run(["--model", str(path), "--device", "tiny4", "--baseline", "vgm"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert "vgm baseline: infeasible:" in out and "bytes per core" in out
    status = run(["--model", str(path), "--device", "tiny4", "--baseline", "vgm", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert data["feasible"] is False and data["needed_bytes"] > data["available_bytes"]


def test_every_builder_of_benchmarks_models_is_covered(monkeypatch):
    """Each ``build_*`` of `benchmarks/models` builds one of the models above."""
    from benchmarks import models

    called = set()
    for name in [n for n in models.__all__ if n.startswith("build_")]:
        builder = getattr(models, name)
        monkeypatch.setattr(models, name, lambda *a, _b=builder, _n=name, **k: called.add(_n) or _b(*a, **k))
    for build in SMALL.values():
        build()
    assert called == {n for n in models.__all__ if n.startswith("build_")}
