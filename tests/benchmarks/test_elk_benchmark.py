"""benchmarks/elk.py end to end on one scaled-down model of two layers: its table and its
JSON, and the designs' order (ELK s6.2): ELK-Full <= ELK-Dyn <= Basic, ELK-Full <= Static,
Ideal below all."""

import importlib.util
import json
from pathlib import Path

import pytest

_PATH = Path(__file__).parents[2] / "benchmarks" / "elk.py"
_SPEC = importlib.util.spec_from_file_location("benchmark_elk", _PATH)
elk = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(elk)


def test_smoke_table_and_json(tmp_path, capsys):
    out = tmp_path / "elk.json"
    assert elk.main(["--models", "llama2-13b", "--device", "tiny16-hbm", "--batch", "4", "--seq", "64",
                     "--chips", "1", "--scale", "32", "--layers", "2", "--max-orders", "16", "--json", str(out)]) == 0
    table = capsys.readouterr().out
    for label in ("Basic", "Static", "ELK-Dyn", "ELK-Full", "Ideal", "ELK-Full over Basic", "mean: ELK-Full",
                  "overlap bound", "x bound", "core lk", "HBM lk"):
        assert label in table
    (row,) = json.loads(out.read_text())
    assert row["model"] == "llama2-13b" and row["ops"] == 2 * 22 + 3   # two layers, the final norm and LM head
    designs = row["designs"]
    assert set(designs) == {"basic", "static", "dyn", "full", "ideal"}
    latency = {name: d["latency_ms"] for name, d in designs.items()}
    assert latency["ideal"] <= latency["full"] * (1 + 1e-9) <= latency["dyn"] * (1 + 2e-9) <= latency["basic"] * (1 + 3e-9)
    assert latency["full"] <= latency["static"] * (1 + 1e-9)
    assert designs["ideal"]["of_ideal"] == 1.0
    for d in designs.values():
        assert d["of_bound"] >= 1 - 1e-9 and d["latency_ms"] == pytest.approx(d["of_bound"] * row["bound_ms"])
        for resource in ("hbm", "core_links", "hbm_links"):   # busy times over the latency: never above 100%
            assert 0 < d["utilisation"][resource] <= 1 + 1e-9, (resource, d["utilisation"])
    full = designs["full"]
    assert (full["reorder_gain_ms"] > 0) == ("saves" in table) and (full["reorder_gain_ms"] == 0) == ("none of" in table)
    assert row["speedup_over_basic"] == pytest.approx(latency["basic"] / latency["full"])
    assert row["compile_seconds"] > 0 and row["peak_rss_mib"] > 0
    assert designs["full"]["orders_tried"] > 1          # the paper's tree: every valid order


@pytest.mark.parametrize("args, message", [
    (["--device", "nodev"], "error: --device: unknown device 'nodev'"),
    (["--device", "ipu-pod4-hbm", "--chips", "2"], "error: --chips: device 'ipu-pod4-hbm' is already a pool of 4 chips"),
    (["--model", "missing.onnx"], "error: --model: missing.onnx: cannot read missing.onnx"),
])
def test_bad_input_is_one_error_naming_the_option(args, message, capsys):
    assert elk.main(["--models", "llama2-13b", "--layers", "1"] + args) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(message) and "\n" not in err, err


def test_each_device_is_a_row_of_the_table(capsys):
    """Per model and topology (``--device`` lists several), a model split over two chips."""
    common = ["--models", "llama2-13b", "--batch", "4", "--seq", "64", "--scale", "32", "--layers", "1",
              "--max-orders", "2"]
    assert elk.main(common + ["--device", "tiny16-hbm,tiny16-hbm-mesh", "--chips", "2"]) == 0
    table = capsys.readouterr().out
    assert "on tiny16-hbm (all-to-all)" in table and "on tiny16-hbm-mesh (mesh-2d)" in table
    assert table.count("ELK-Full over Basic") == 2


@pytest.mark.slow
@pytest.mark.parametrize("model", ["gemma2-27b", "opt-30b", "llama2-70b", "dit-xl"])
def test_elk_full_is_never_behind_static_dyn_or_basic_on_scaled_workloads(model):
    from irc.dse import builtin_model
    from irc.planner.elk import elk_plan, preload_ops
    from irc.planner.op_table import FrontierCache

    batch = 1 if model == "dit-xl" else 4   # DiT's 256 patches per image
    factor = 64 if model == "gemma2-27b" else 32   # Gemma2's LM head (256,000 words) fits tiny16 at /64
    built, layer_of, _ = builtin_model(model, batch=batch, seq=64, chips=1, layers=3, factor=factor)
    cache = FrontierCache("tiny16-hbm", "t10")
    ops = preload_ops(built, cache, layer_of)
    latency = {d: elk_plan(built, cache, d, ops=ops, max_orders=24).latency_cycles
               for d in ("basic", "static", "dyn", "full", "ideal")}
    assert latency["ideal"] <= latency["full"] * (1 + 1e-9) <= latency["dyn"] * (1 + 2e-9) <= latency["basic"] * (1 + 3e-9)
    assert latency["full"] <= latency["static"] * (1 + 1e-9)
