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
    for label in ("Basic", "Static", "ELK-Dyn", "ELK-Full", "Ideal", "ELK-Full over Basic", "mean: ELK-Full"):
        assert label in table
    (row,) = json.loads(out.read_text())
    assert row["model"] == "llama2-13b" and row["ops"] == 2 * 18
    designs = row["designs"]
    assert set(designs) == {"basic", "static", "dyn", "full", "ideal"}
    latency = {name: d["latency_ms"] for name, d in designs.items()}
    assert latency["ideal"] <= latency["full"] * (1 + 1e-9) <= latency["dyn"] * (1 + 2e-9) <= latency["basic"] * (1 + 3e-9)
    assert latency["full"] <= latency["static"] * (1 + 1e-9)
    assert designs["ideal"]["of_ideal"] == 1.0
    for d in designs.values():
        assert 0 < d["hbm_utilisation"] <= 1 and 0 < d["exchange_utilisation"] <= 1
    assert row["speedup_over_basic"] == pytest.approx(latency["basic"] / latency["full"])
    assert row["compile_seconds"] > 0 and row["peak_rss_mib"] > 0
    assert designs["full"]["orders_tried"] > 1          # the paper's tree: every valid order


@pytest.mark.slow
@pytest.mark.parametrize("model", ["gemma2-27b", "opt-30b", "llama2-70b", "dit-xl"])
def test_elk_full_is_never_behind_static_dyn_or_basic_on_scaled_workloads(model):
    from irc.planner.elk import elk_plan, preload_ops
    from irc.planner.llm import workload
    from irc.planner.op_table import FrontierCache

    batch = 1 if model == "dit-xl" else 4   # DiT's 256 patches per image
    built, layer_of = workload(model, batch=batch, seq=64, chips=1, layers=3, factor=32)
    cache = FrontierCache("tiny16-hbm", "t10")
    ops = preload_ops(built, cache, layer_of)
    latency = {d: elk_plan(built, cache, d, ops=ops, max_orders=24).latency_cycles
               for d in ("basic", "static", "dyn", "full", "ideal")}
    assert latency["ideal"] <= latency["full"] * (1 + 1e-9) <= latency["dyn"] * (1 + 2e-9) <= latency["basic"] * (1 + 3e-9)
    assert latency["full"] <= latency["static"] * (1 + 1e-9)
