"""The HBM controllers' links to a mesh's edge cores (``offchip.edge_port_bytes_per_s``):
its default, a delivery time derived by hand from it, the plan and the run agreeing on
it, and bad values named (issue 24 item 5)."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.func import FuncOp

from irc.compile import compile_and_run
from irc.devices import DEVICE_DIR, DeviceError, load_device
from irc.devices.topology import (edge_port_bytes_per_s, hbm_cut_link_bytes_per_s, link_bytes_per_s,
                                  preload_link_shares, preload_seconds, preload_seconds_per_byte)
from irc.interpreter.offchip import offchip_summary
from tests.programs import mlp

TINY = DEVICE_DIR / "tiny16_hbm_mesh.toml"
_SWEEP = Path(__file__).parents[2] / "benchmarks" / "elk_mesh.py"


def _variant(tmp_path, text, name="chip.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _with_ports(tmp_path, value, base=TINY):
    text = base.read_text().replace("inter_chip_bytes_per_s = 16e9",
                                    f"inter_chip_bytes_per_s = 16e9\nedge_port_bytes_per_s = {value}")
    assert "edge_port_bytes_per_s = " in text
    return _variant(tmp_path, text.replace('name = "tiny16-hbm-mesh"', 'name = "tiny16-ports"'))


def test_the_default_lets_each_controller_send_its_share_of_the_hbm(tmp_path):
    # ipu-mk2-hbm-mesh states 4e12 / 4 controllers / 32 ports of the shorter edge; without
    # the line the same rate is derived
    mk2 = load_device("ipu-mk2-hbm-mesh")
    assert mk2.offchip.edge_port_bytes_per_s == 31.25e9 == edge_port_bytes_per_s(mk2)
    text = (DEVICE_DIR / "ipu_mk2_hbm_mesh.toml").read_text().replace("edge_port_bytes_per_s = 31.25e9\n", "")
    derived = load_device(_variant(tmp_path, text))
    assert derived.offchip.edge_port_bytes_per_s is None and edge_port_bytes_per_s(derived) == 31.25e9
    # then the edges deliver exactly the chip's 4 TB/s (a left or right edge port feeds its
    # row of 46 cores a quarter of their bytes each: 11.5 B per byte to every core) and the
    # mesh's links (hbm_cut_link_bytes_per_s) no less
    assert preload_seconds_per_byte(mk2) == pytest.approx((46 / 4) / 31.25e9)
    assert 1472 / preload_seconds_per_byte(mk2) == pytest.approx(4e12)
    # on the 5.5 GB/s reading the edges no longer cap delivery: the 32 links from the left
    # (and right) column inward do, each carrying a quarter of 45 of its row's 46 cores'
    # bytes at 5.5 GB/s: the chip gets 0.72 of its 4 TB/s
    slow = load_device("ipu-mk2-hbm-mesh-5g5")
    assert slow.offchip.edge_port_bytes_per_s == 31.25e9 and slow.link_bytes_per_s == 5.5e9
    assert preload_seconds_per_byte(slow) == pytest.approx((45 / 4) / 5.5e9)
    assert 1472 / preload_seconds_per_byte(slow) == pytest.approx(1472 * 5.5e9 / 11.25) == pytest.approx(0.7196e12, 1e-4)
    # tiny16-hbm-mesh: each controller's 16 GB/s over its 8 ports is 2 GB/s, below a mesh
    # link, so its ports run at the link rate
    assert edge_port_bytes_per_s(load_device("tiny16-hbm-mesh")) == 5.5e9


def test_the_default_mesh_links_carry_the_hbm_share_through_the_edge_cut():
    # ipu-mk2-hbm-mesh's link rate is the least at which the most loaded links of the
    # preload routes (every core receiving its own bytes, a quarter from each controller)
    # carry the chip's 4 TB/s: the 32 + 32 row links out of the left and right edge
    # columns, each a quarter of 45 of its row's 46 cores' bytes (the column links out of
    # the top and bottom rows carry 31 / 4)
    mk2 = load_device("ipu-mk2-hbm-mesh")
    mesh = {link: load for link, load in preload_link_shares(mk2).items() if link[0] == "mesh"}
    busiest = max(mesh.values())
    assert busiest == pytest.approx(45 / 4)
    assert sorted(link[1:] for link, load in mesh.items() if load == busiest) == sorted(
        [(46 * r, 46 * r + 1) for r in range(32)] + [(46 * r + 45, 46 * r + 44) for r in range(32)])
    assert max(load for (_, a, b), load in mesh.items() if b - a in (46, -46)) == pytest.approx(31 / 4)
    needed = hbm_cut_link_bytes_per_s(mk2)
    assert needed == pytest.approx(45 / 4 * 4e12 / 1472)   # 30.57 GB/s
    # the file's rate is that, rounded up by less than 0.2%, and its shifts are priced at it
    assert needed <= mk2.link_bytes_per_s <= 1.002 * needed
    assert mk2.shift_cycles_per_byte == pytest.approx(0.28 * 5.5e9 / mk2.link_bytes_per_s, rel=1e-5)
    # so the cut from the edge ring inward delivers the HBM share: every mesh link's
    # seconds per byte to every core within the HBM's
    assert max(load / link_bytes_per_s(mk2, link) for link, load in mesh.items()) <= 1472 / mk2.offchip.bytes_per_s
    # the 5.5 GB/s reading needs the same links, 5.6 times faster than it has them
    slow = load_device("ipu-mk2-hbm-mesh-5g5")
    assert hbm_cut_link_bytes_per_s(slow) == pytest.approx(needed) and needed / slow.link_bytes_per_s > 5.55
    # tiny16-hbm-mesh: each controller enters a line from its nearer end, so a link next to
    # the edge carries half of one core's bytes: 0.5 x 32e9 / 16 = 1 GB/s, under its 5.5
    assert hbm_cut_link_bytes_per_s(load_device("tiny16-hbm-mesh")) == pytest.approx(0.5 * 32e9 / 16)
    with pytest.raises(ValueError, match="has no mesh"):
        hbm_cut_link_bytes_per_s(load_device("ipu-mk2-hbm"))


def test_delivery_time_follows_from_the_port_rate_by_hand(tmp_path):
    # tiny16-hbm-mesh's controller 0 (node 16) feeds each column from its nearer end: edge
    # core (0, c) passes half the bytes of rows 0 and 1 of its column (1 B per B to every
    # core); its egress carries half of all 16 cores' bytes (8 B per B) at 16 GB/s
    slow = load_device(_with_ports(tmp_path, "1e9"))
    assert preload_link_shares(slow)[("edge", 16, 1)] == pytest.approx(1.0)
    assert preload_link_shares(slow)[("out", 16)] == pytest.approx(8.0)
    hops = 1 + (4 + 4) // 2      # one route's latency, 1 cycle per hop
    latency = hops * 1 / 1.325e9
    # 1000 B to every core, 16,000 B read: the HBM needs 16000 / 32e9 = 0.5 us, the egress
    # 8000 / 16e9 = 0.5 us, a 1 GB/s edge port 1000 B / 1e9 = 1 us: the port sets it
    assert preload_seconds(slow, 1000, 16000) == pytest.approx(1e-6 + latency)
    # at 3 GB/s the port takes 0.33 us: the HBM and the egress (0.5 us) set it again
    fast = load_device(_with_ports(tmp_path, "3e9"))
    assert preload_seconds(fast, 1000, 16000) == pytest.approx(0.5e-6 + latency)


def test_the_plan_and_the_run_price_weight_preloads_at_the_port_rate(tmp_path):
    # four 256 KB weights over tiny16's 1 MB of SRAM: each preload sends every core its
    # own 16 KB. The HBM reads 262,144 B at 32 GB/s (8.19 us); a 1 GB/s edge port passes
    # 16 KB (1 B per B to every core) in 16.38 us; plus one route's 5 cycles
    widths = [256] * 5
    rng = np.random.default_rng(0)
    inputs = {"x": rng.standard_normal((16, 256)).astype(np.float32),
              **{f"w{i}": (rng.standard_normal((256, 256)) / 16).astype(np.float32) for i in range(4)}}
    text = mlp(widths, tokens=16, dtype="f32")
    clock = 1.325e9
    for device, seconds in (("tiny16-hbm-mesh", 262144 / 32e9), (str(_with_ports(tmp_path, "1e9")), 16384 / 1e9)):
        _, report = compile_and_run(text, device=device, inputs=inputs)
        weights = [e.cycles for e in report.chip.hbm_events if e.name.endswith(".W.idle")]
        assert weights == pytest.approx([seconds * clock + 5] * 4, rel=1e-12)
        # the plan priced the same loads (its total also holds the input's, which the
        # run may deliver otherwise: between the weights' sum and the run's)
        function = next(op for op in report.module.walk() if isinstance(op, FuncOp))
        planned = function.attributes["irc.preloaded"].data["hbm_cycles"].value.data
        assert sum(weights) * (1 - 1e-12) <= planned <= offchip_summary(report.chip)["hbm_busy_cycles"]


@pytest.mark.parametrize("value, expected", [
    ("-1.0", "must be a positive, finite number"),
    ("0", "must be a positive, finite number"),
    ('"fast"', "must be a positive, finite number"),
])
def test_a_bad_port_rate_is_named(tmp_path, value, expected):
    with pytest.raises(DeviceError) as error:
        load_device(_with_ports(tmp_path, value))
    message = str(error.value)
    assert "offchip.edge_port_bytes_per_s" in message and expected in message
    assert message.startswith(str(tmp_path / "chip.toml") + ":")   # at its line in the file


def test_a_port_rate_on_an_all_to_all_chip_is_refused(tmp_path):
    text = (DEVICE_DIR / "tiny16_hbm.toml").read_text().replace(
        "inter_chip_bytes_per_s = 16e9", "inter_chip_bytes_per_s = 16e9\nedge_port_bytes_per_s = 1e9")
    with pytest.raises(DeviceError, match=r"'offchip.edge_port_bytes_per_s' must be absent unless "
                                          r"interconnect.topology is \"mesh-2d\""):
        load_device(_variant(tmp_path, text))


def test_a_tool_given_a_bad_port_rate_exits_1_naming_the_field(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("benchmark_elk_mesh", _SWEEP)
    sweep = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = sweep   # its dataclasses look their module up
    spec.loader.exec_module(sweep)
    bad = _with_ports(tmp_path, "-5e9")
    assert sweep.main(["--device", str(bad), "--figures", "19", "--models", "llama2-13b"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --device: ") and "offchip.edge_port_bytes_per_s" in err and "\n" not in err
