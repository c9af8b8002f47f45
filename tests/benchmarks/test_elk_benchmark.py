"""benchmarks/elk.py end to end on one scaled-down model of two layers: its table and its
JSON, and the designs' order (ELK s6.2): ELK-Full <= ELK-Dyn <= Basic, ELK-Full <= Static,
Ideal below all."""

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from irc.devices import load_device
from irc.planner import matmul_spec
from irc.planner.preload import PreloadOp
from irc.plans.plan import Plan

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
        # Ideal paying the design's relayouts: closer than irc's Ideal, and still below it
        assert d["of_ideal"] - 1e-12 <= d["of_ideal_relayouts"] <= 1.0
    # both flows on one port (ELK s6.3), never above 100%; none for Ideal's two interconnects
    assert designs["ideal"]["interconnect"] is None and "ic util" in table
    for name in ("basic", "static", "dyn", "full"):
        assert 0 < designs[name]["interconnect"] <= 1.0, (name, designs[name]["interconnect"])
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


def test_output_shuffle_transfers_by_hand():
    # C[m,n] += A[m,k] B[k,n], 16 x 64 x 16 on 16 cores, f16 with f32 partial sums. The T10
    # output shuffle moves the resident output (IPU_COST_FACTS s5: shift(e_0)) and, with R
    # partial copies, the step's partial sums (shift(O_s)) at 0.28 cycles per byte; its
    # barriers and its partial-sum adds move nothing. F_op = (4, 1, 4): one copy, a 4 x 4
    # output tile: 0.28 x 16 x 2 B. F_op = (1, 4, 4): 4 copies of a 16 x 4 tile: 0.28 x
    # (64 x 2 B + 64 x 4 B). A mesh prices the shuffle alike.
    spec = matmul_spec(16, 64, 16)
    whole = {"C": (1, 1, 1), "A": (1, 1, 1), "B": (1, 1, 1)}
    for name in ("tiny16-hbm", "tiny16-hbm-mesh"):
        device = load_device(name)
        assert elk.shuffle_transfer_cycles(spec, Plan(("m", "k", "n"), (4, 1, 4), whole), device) == pytest.approx(
            0.28 * 16 * 2)
        assert elk.shuffle_transfer_cycles(spec, Plan(("m", "k", "n"), (1, 4, 4), whole), device) == pytest.approx(
            0.28 * (64 * 2 + 64 * 4))


def test_one_link_carrying_both_flows_by_hand():
    # op A runs in [0, 100] with 30 cycles of its own transfers, op B in [100, 200] with 80.
    # Load 1 streams [0, 50] taking the link throughout (50 link cycles): A's window
    # carries 30 + 50 = 80. Load 2 streams [120, 220] at half the link (50 link cycles over
    # 100): B's window would carry 80 + 0.5 x 80 = 120, more than its 100 cycles, so 100;
    # after B, load 2's last 20 cycles carry 10. A load not counted (another token's) adds
    # to a window but not outside it.
    windows, transfers = [(0.0, 100.0), (100.0, 200.0)], [30.0, 80.0]
    loads = [(0.0, 50.0, 50.0, True), (120.0, 220.0, 50.0, True)]
    assert elk.shared_link_busy(windows, transfers, loads) == pytest.approx(80 + 100 + 10)
    assert elk.shared_link_busy(windows, transfers, [(0.0, 50.0, 50.0, True), (120.0, 220.0, 50.0, False)]) == \
        pytest.approx(80 + 100)


def test_ideal_paying_the_designs_relayouts_by_hand():
    # two ops in a decode loop with a one-op prefix (the token is op 1 on): op 1's fastest
    # plan takes 100 cycles, the one the design runs 120, its distribution phase 5; the
    # design's plan gives it 140 cycles, so 15 of relayouts. Its least load is 90. Ideal
    # then takes max(90, 100 + 15) = 115 cycles of the design's 200.
    ops = [PreloadOp.simple(f"op{i}", [(10.0, 120.0), (20.0, 100.0)], [(4.0, 5.0)], 90.0, hbm_bytes=1.0)
           for i in range(2)]
    plan = SimpleNamespace(exec_cycles=[125.0, 140.0], exec_plan=[0, 0], preload_plan=[0, 0])
    study = SimpleNamespace(ops=ops, prefix=1)
    design = SimpleNamespace(plan=plan, preload_ops=None, latency_cycles=200.0)
    assert elk.relayout_cycles(study, design) == pytest.approx(15.0)
    assert elk.ideal_with_relayouts(study, design) == pytest.approx(115 / 200)
    assert elk.ideal_with_relayouts(study, SimpleNamespace(plan=None)) == 1.0
