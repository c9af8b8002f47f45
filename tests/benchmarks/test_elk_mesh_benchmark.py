"""benchmarks/elk_mesh.py (ELK s6.4, Figures 19-22) on a scaled-down sweep: every figure's
statements printed beside irc's numbers, a measured reason under each that differs, link
classes' utilisation never above 100%, the JSON replayed to the same text, bad options
named (issue 24 item 5)."""

import importlib.util
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from irc.devices import load_device
from irc.devices.topology import hbm_cut_link_bytes_per_s

_PATH = Path(__file__).parents[2] / "benchmarks" / "elk_mesh.py"
_SPEC = importlib.util.spec_from_file_location("benchmark_elk_mesh", _PATH)
sweep = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = sweep   # its dataclasses look their module up
_SPEC.loader.exec_module(sweep)

SMALL = ["--device", "tiny16-hbm", "--models", "llama2-70b", "--layers", "1", "--batch", "4", "--seq", "64",
         "--scale", "32", "--max-orders", "2", "--hbm", "0.128", "--noc", "0.352,1.408", "--noc-hbm", "0.128"]


def test_every_figure_beside_the_paper_with_reasons(tmp_path, capsys):
    out = tmp_path / "sweep.json"
    assert sweep.main(SMALL + ["--json", str(out)]) == 0
    text = capsys.readouterr().out
    for figure in ("Figure 19", "Figure 20", "Figure 21", "Figure 22"):
        assert figure in text
    lines = text.splitlines()
    verdicts = [i for i, line in enumerate(lines) if line.strip().startswith("irc:")]
    assert verdicts and all(lines[i - 1].strip().startswith("paper:") for i in verdicts)
    for i in verdicts:   # a statement irc does not meet is followed by its measured reason
        assert lines[i].endswith(("agrees", "differs"))
        if lines[i].endswith("differs"):
            assert lines[i + 1].strip().startswith("reason: ") and "busiest link utilisation" in lines[i + 1]
    data = json.loads(out.read_text())
    rows = data["rows"]
    # Figures 19-21 at the default NoC (16 cores x 4 chips x 5.5 GB/s), shared with Figure
    # 22's first NoC bandwidth, and its second, on both topologies: each point once
    assert sorted((r["topology"], r["noc_tbps"]) for r in rows) == [
        ("all-to-all", 0.352), ("all-to-all", 1.408), ("mesh-2d", 0.352), ("mesh-2d", 1.408)]
    for row in rows:
        designs = row["designs"]
        assert designs["full"]["latency_ms"] <= designs["basic"]["latency_ms"] * (1 + 1e-9)
        for data_ in designs.values():
            assert data_["of_bound"] >= 1 - 1e-9 and 0 <= data_["contention"] < 1
            for name, share in data_["utilisation"].items():   # busy times over the latency
                assert 0 <= share <= 1 + 1e-9, (row["topology"], name, share)
        mesh = row["topology"] == "mesh-2d"
        assert (designs["full"]["utilisation"]["edge"] > 0) == mesh   # only a mesh has edge ports
        # the paper's interconnect utilisation (both flows on one link) and Ideal paying
        # the relayouts, never above 100%; a token's HBM reads and one layer's knee
        assert designs["ideal"]["interconnect"] is None
        assert all(0 < designs[d]["interconnect"] <= 1 for d in ("basic", "static", "dyn", "full"))
        assert all(designs[d]["of_ideal"] - 1e-12 <= designs[d]["of_ideal_relayouts"] <= 1 for d in designs)
        assert row["token_hbm_gb"] > 0 and row["layer_knee_tbps"] is None   # one layer: no layers found
    assert sweep.main(["--replay", str(out)]) == 0
    assert capsys.readouterr().out == text
    # a sweep that stopped early (its last point missing) reports the figures it finished
    data["rows"] = [r for r in rows if (r["topology"], r["noc_tbps"]) != ("mesh-2d", 1.408)]
    out.write_text(json.dumps(data))
    assert sweep.main(["--replay", str(out)]) == 0
    partial = capsys.readouterr().out
    assert "Figure 21" in partial and "Figure 22" not in partial


def test_a_noc_bandwidth_maps_to_mesh_links_that_carry_the_hbm_inward():
    # at the default NoC (1,472 cores x 4 chips x 5.5 GB/s) the sweep's mesh has
    # ipu-mk2-hbm-mesh's links before rounding: the least rate at which its edge cut carries
    # the chip's 4 TB/s (16 TB/s of 4 chips); a NoC bandwidth scales them in proportion;
    # --mesh-links core reads them at the all-to-all's port rate
    planner = sweep.Planner(sweep.Sweep(mesh_shifts="link"))
    default = sweep.default_noc_tbps(planner.base)
    assert default == pytest.approx(1472 * 4 * 5.5e9 / 1e12)
    mesh_file = load_device("ipu-mk2-hbm-mesh")
    mesh = planner.device("mesh-2d", 16.0, default)
    assert mesh.mesh == mesh_file.mesh and mesh.offchip.bytes_per_s == 4e12
    assert mesh.link_bytes_per_s == pytest.approx(hbm_cut_link_bytes_per_s(mesh_file)) == pytest.approx(
        45 / 4 * 4e12 / 1472)
    assert mesh.link_bytes_per_s <= mesh_file.link_bytes_per_s <= 1.002 * mesh.link_bytes_per_s
    assert mesh.shift_cycles_per_byte == pytest.approx(mesh_file.shift_cycles_per_byte, rel=2e-3)
    assert planner.device("mesh-2d", 16.0, 2 * default).link_bytes_per_s == pytest.approx(2 * mesh.link_bytes_per_s)
    assert planner.device("all-to-all", 16.0, default).link_bytes_per_s == pytest.approx(5.5e9)
    core = sweep.Planner(sweep.Sweep(mesh_links="core"))
    assert core.device("mesh-2d", 16.0, default).link_bytes_per_s == pytest.approx(5.5e9)
    # a chip whose mesh at the port rate already carries its HBM keeps the port rate
    assert sweep.mesh_link_scale(load_device("tiny16-hbm")) == 1.0
    # --mesh-shifts port (the default): the mesh's links as fast, its ops shifting at the
    # all-to-all's rate (--mesh-shifts link: at the link rate, as ipu-mk2-hbm-mesh)
    port = sweep.Planner(sweep.Sweep())
    for noc in (default, 2 * default):
        mesh_port = port.device("mesh-2d", 16.0, noc)
        assert mesh_port.link_bytes_per_s == planner.device("mesh-2d", 16.0, noc).link_bytes_per_s
        assert mesh_port.shift_cycles_per_byte == pytest.approx(
            planner.device("all-to-all", 16.0, noc).shift_cycles_per_byte) == pytest.approx(0.28 * default / noc)


def test_a_layers_knee_by_hand():
    # a decode loop of one prefix op (layer 0), then layer 1's two ops and the LM head: per
    # chip, layer 1 reads 0.5e9 + 1.5e9 B, which ELK-Full executes in [0, 0.1] and [0.1, 0.2]
    # ms (clock 1 GHz): the paper's 4 chips read 8e9 B in 0.2 ms, 40 TB/s; the token (the
    # ops after the prefix) reads (2e9 + 1e9) x 4 B
    ops = [SimpleNamespace(layer=layer, hbm_bytes=b) for layer, b in ((0, 9e9), (1, 0.5e9), (1, 1.5e9), (None, 1e9))]
    start, end = np.array([-1e5, 0.0, 1e5, 2e5]), np.array([0.0, 1e5, 2e5, 3e5])
    plan = SimpleNamespace(timeline=lambda: (None, None, start, end))
    study = SimpleNamespace(ops=ops, prefix=1, decisions={"full": SimpleNamespace(plan=plan, preload_ops=None)})
    found = sweep.hbm_reads(study, SimpleNamespace(clock_hz=1e9))
    assert found["token_hbm_gb"] == pytest.approx(12.0) and found["layer_knee_tbps"] == pytest.approx(40.0)


def test_roofline_knee_by_hand():
    # a token reads 4.5 GB from the 4 chips' HBM and ELK-Full takes 0.45 ms at the largest
    # bandwidth swept: the HBM's 4.5 GB take that long at 10 TB/s, the knee
    rows = [{"hbm_tbps": h, "token_hbm_gb": 4.5, "designs": {"full": {"latency_ms": max(4.5 / h, 0.45)}}}
            for h in (4.0, 8.0, 16.0, 32.0)]
    assert sweep.roofline_knee(rows) == pytest.approx(10.0)
    assert sweep.roofline_knee([{"hbm_tbps": 8.0, "designs": {"full": {"latency_ms": 1.0}}}]) is None   # an old sweep


@pytest.mark.parametrize("args, message", [
    (["--figures", "18"], "error: --figures: a comma-separated choice of 19, 20, 21, 22, got '18'"),
    (["--models", "gpt-5"], "error: --models: unknown model 'gpt-5'"),
    (["--hbm", "0,4"], "error: --hbm: give one or more bandwidths in TB/s, each positive"),
    (["--noc", "fast"], "error: --noc: a comma-separated list of TB/s, got 'fast'"),
    (["--device", "nodev"], "error: --device: unknown device 'nodev'"),
    (["--mesh-links", "fast"], "error: --mesh-links: one of hbm-cut, core, got 'fast'"),
    (["--mesh-shifts", "fast"], "error: --mesh-shifts: one of port, link, got 'fast'"),
    (["--replay", "missing.json"], "error: --replay: missing.json: not a sweep this script wrote"),
])
def test_bad_options_are_one_error_naming_the_option(args, message, capsys):
    assert sweep.main(args) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(message) and "\n" not in err, err
