"""benchmarks/interpreter.py on tiny sizes: the matmul rows (one-step and rotating plans
of both cost models) carry their ratios and agree with the plan and with te; the model
run builds, imports, compiles and runs a tiny Llama layer at te and device level, each
in its own process, and reports times, peak RSS and the graph's granularity."""

import json

import pytest

from benchmarks import interpreter as bench


def test_matmul_rows_carry_ratios_and_match_the_plan(tmp_path, capsys):
    out = tmp_path / "mm.json"
    bench.main(["--m", "8", "--k", "64", "--n", "32", "--device", "tiny16", "--repeat", "1", "--json", str(out)])
    figures = json.loads(out.read_text())
    assert figures["matmul"] == [8, 64, 32]
    plans = {row["plan"]: row for row in figures["plans"]}
    assert set(plans) == {"t10", "t10/min", "seed003", "seed003/min"}
    assert plans["t10/min"]["steps"] > 1                     # the least-memory plan rotates
    for row in plans.values():
        assert row["ratio_to_numpy_f32"] > 0 and row["ratio_to_numpy_f16"] > 0
        assert row["interpreted_over_planned"] == pytest.approx(1.0)
        assert row["max_error_over_one_rounding_bound"] <= 1.0
    assert "x numpy" in capsys.readouterr().out


@pytest.mark.slow
def test_a_tiny_llama_layer_runs_at_te_and_device_level(tmp_path, capsys):
    out = tmp_path / "llama.json"
    bench.main(["--model", "llama2-13b-layer", "--workdir", str(tmp_path / "work"), "--batch", "2", "--past", "7",
                "--hidden", "128", "--heads", "2", "--intermediate", "256", "--device", "tiny16",
                "--json", str(out)])
    figures = json.loads(out.read_text())
    assert figures["te_ops"] == 66 and figures["hidden"] == 128
    nodes = figures["onnx_nodes"]
    assert sum(nodes.values()) == 128 and nodes["Constant"] == 42 and nodes["Shape"] == 8
    assert figures["device_peak_rss_bytes"] > 0 and figures["te_seconds"] > 0
    assert figures["instructions"]["mma"] > 0 and figures["instructions"]["relayout"] > 0
    assert max(figures["max_abs_difference_from_te"].values()) < 1e-3
    text = capsys.readouterr().out
    assert "granularity: 128 ONNX nodes, of which 73 fold at import" in text
    assert "device level run" in text and "interpreter peak memory" in text
