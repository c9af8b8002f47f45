"""benchmarks/elk_mesh.py (ELK s6.4, Figures 19-22) on a scaled-down sweep: every figure's
statements printed beside irc's numbers, a measured reason under each that differs, link
classes' utilisation never above 100%, the JSON replayed to the same text, bad options
named (issue 24 item 5)."""

import importlib.util
import json
import sys
from pathlib import Path

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
    planner = sweep.Planner(sweep.Sweep())
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


@pytest.mark.parametrize("args, message", [
    (["--figures", "18"], "error: --figures: a comma-separated choice of 19, 20, 21, 22, got '18'"),
    (["--models", "gpt-5"], "error: --models: unknown model 'gpt-5'"),
    (["--hbm", "0,4"], "error: --hbm: give one or more bandwidths in TB/s, each positive"),
    (["--noc", "fast"], "error: --noc: a comma-separated list of TB/s, got 'fast'"),
    (["--device", "nodev"], "error: --device: unknown device 'nodev'"),
    (["--mesh-links", "fast"], "error: --mesh-links: one of hbm-cut, core, got 'fast'"),
    (["--replay", "missing.json"], "error: --replay: missing.json: not a sweep this script wrote"),
])
def test_bad_options_are_one_error_naming_the_option(args, message, capsys):
    assert sweep.main(args) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(message) and "\n" not in err, err
