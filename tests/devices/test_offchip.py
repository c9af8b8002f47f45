"""Devices with off-chip memory and mesh exchanges (ELK s2.1, s5): files, fields, routes."""

import pytest

from irc.devices import DEVICE_DIR, DeviceError, device_from_fields, load_device
from irc.devices.topology import (
    controller_segments,
    preload_link_shares,
    preload_seconds,
    route,
)


def test_pod4_hbm_is_elks_platform():
    device = load_device("ipu-pod4-hbm")
    assert device.cores == 4 * 1472 and device.chips == 4
    assert device.sram_bytes == 624 * 1024
    assert device.offchip.bytes_per_s == 16e12
    assert device.hbm_controllers == 16
    assert device.offchip.inter_chip_bytes_per_s == 640e9
    assert device.topology == "all-to-all" and device.mesh is None


def test_single_chip_hbm_and_mesh_variants():
    single = load_device("ipu-mk2-hbm")
    assert single.chips == 1 and single.offchip.bytes_per_s == 4e12
    mesh = load_device("ipu-mk2-hbm-mesh")
    assert mesh.topology == "mesh-2d" and mesh.mesh == (32, 46)
    assert mesh.link_latency_cycles == 1
    assert load_device("ipu-mk2").offchip is None


@pytest.mark.parametrize("name", ["ipu-pod4-hbm", "ipu-mk2-hbm-mesh", "tiny16-hbm-mesh", "ipu-mk2"])
def test_fields_round_trip(name):
    device = load_device(name)
    assert device_from_fields(device.fields(), "inline") == device


def test_target_attribute_carries_the_offchip_section():
    from irc.target import device_of, target_attr

    device = load_device("tiny16-hbm-mesh")
    attr = target_attr(device, "t10")
    assert "offchip.bytes_per_s" in attr.fields()
    device_of.cache_clear()
    assert device_of(attr) == device


def test_unknown_flat_field_is_named():
    fields = load_device("tiny16-hbm").fields()
    fields["offchip.bandwith"] = 1.0
    with pytest.raises(ValueError, match="offchip.bandwith"):
        device_from_fields(fields, "inline")


def _variant(tmp_path, base, old, new):
    text = (DEVICE_DIR / base).read_text()
    assert old in text
    path = tmp_path / "chip.toml"
    path.write_text(text.replace(old, new))
    return path


@pytest.mark.parametrize(
    "old, new, field",
    [
        ("bytes_per_s = 32e9", "bytes_per_s = -1.0", "offchip.bytes_per_s"),
        ("bytes_per_s = 32e9", "bytes_per_s = \"fast\"", "offchip.bytes_per_s"),
        ("bytes_per_s = 32e9", "bandwidth = 32e9", "offchip.bandwidth"),
        ("controllers_per_chip = 2", "controllers_per_chip = 0", "offchip.controllers_per_chip"),
        ("capacity_bytes = 1073741824\n", "", "offchip.capacity_bytes"),
        ("mesh = [4, 4]", "mesh = [4, 5]", "interconnect.mesh"),
        ("mesh = [4, 4]", "mesh = [4]", "interconnect.mesh"),
        ("mesh = [4, 4]\n", "", "interconnect.mesh"),
        ("topology = \"mesh-2d\"", "topology = \"torus\"", "interconnect.topology"),
        ("link_latency_cycles = 1", "link_latency_cycles = -3", "interconnect.link_latency_cycles"),
        ("link_latency_cycles = 1", "link_latecny_cycles = 1", "interconnect.link_latecny_cycles"),
        ("controllers_per_chip = 2", "controllers_per_chip = 13", "offchip.controllers_per_chip"),  # 12 edge cores
        ("count = 16", "count = 24", "cores.count"),                                                # 1.5 chips
    ],
)
def test_bad_offchip_or_topology_field_is_named(tmp_path, old, new, field):
    with pytest.raises(DeviceError) as error:
        load_device(_variant(tmp_path, "tiny16_hbm_mesh.toml", old, new))
    assert field in str(error.value)


def test_the_loader_says_why_controllers_or_chips_do_not_fit(tmp_path):
    with pytest.raises(DeviceError, match="at most the 12 cores on the edge of the 4x4 mesh, got 13"):
        load_device(_variant(tmp_path, "tiny16_hbm_mesh.toml", "controllers_per_chip = 2", "controllers_per_chip = 13"))
    with pytest.raises(DeviceError, match=r"a multiple of cores.per_chip \(16\): whole chips, got 24"):
        load_device(_variant(tmp_path, "tiny16_hbm_mesh.toml", "count = 16", "count = 24"))
    load_device(_variant(tmp_path, "tiny16_hbm_mesh.toml", "controllers_per_chip = 2", "controllers_per_chip = 12"))


def test_mesh_field_on_an_all_to_all_chip_is_refused(tmp_path):
    path = _variant(tmp_path, "tiny16_hbm.toml", "topology = \"all-to-all\"", "topology = \"all-to-all\"\nmesh = [4, 4]")
    with pytest.raises(DeviceError, match="interconnect.mesh"):
        load_device(path)


def test_unknown_top_level_table_is_named(tmp_path):
    path = _variant(tmp_path, "tiny16.toml", "[compute]", "[hbm]\nbytes_per_s = 1.0\n\n[compute]")
    with pytest.raises(DeviceError, match="unknown field 'hbm'"):
        load_device(path)


def test_controllers_sit_on_the_mesh_edge():
    # two controllers: the first feeds the top and bottom edges, the second the right and
    # left ones (a corner core has a free port on each of its two edges)
    device = load_device("tiny16-hbm-mesh")
    first, second = controller_segments(device)
    assert first == [(0, 0), (0, 1), (0, 2), (0, 3), (3, 0), (3, 1), (3, 2), (3, 3)]
    assert second == [(0, 3), (1, 3), (2, 3), (3, 3), (0, 0), (1, 0), (2, 0), (3, 0)]
    # four controllers on ipu-mk2-hbm-mesh's 32 x 46 mesh: one edge each, and a preload
    # enters each core's row or column straight from its edge: a left or right edge core
    # feeds its row of 46 cores a quarter of their bytes each (11.5 bytes per byte), the
    # most any edge port carries (a top or bottom one feeds 32 cores: 8)
    mk2 = load_device("ipu-mk2-hbm-mesh")
    assert [len(cores) for cores in controller_segments(mk2)] == [46, 32, 46, 32]
    edges = {link: load for link, load in preload_link_shares(mk2).items() if link[0] == "edge"}
    assert max(edges.values()) == pytest.approx(46 / 4) and min(edges.values()) == pytest.approx(32 / 4)


def test_dimension_order_routes():
    device = load_device("tiny16-hbm-mesh")
    # core 0 (0,0) to core 10 (2,2): along the row to (0,2), then down the column
    assert route(device, 0, 10) == [("mesh", 0, 1), ("mesh", 1, 2), ("mesh", 2, 6), ("mesh", 6, 10)]
    # controller 0 (node 16, top and bottom edges) to core 5 (1,1): enters its column at
    # the nearer end, (0,1)
    assert route(device, 16, 5) == [("out", 16), ("edge", 16, 1), ("mesh", 1, 5)]
    # controller 1 (node 17, right and left edges) to core 10 (2,2): enters its row at
    # the nearer end, (2,3) = core 11
    assert route(device, 17, 10) == [("out", 17), ("edge", 17, 11), ("mesh", 11, 10)]
    all_to_all = load_device("tiny16-hbm")
    assert route(all_to_all, 16, 3) == [("out", 16), ("in", 3)]


def test_preload_time_by_hand():
    device = load_device("tiny16-hbm")
    # each controller sends half of every core's bytes: 16 * 0.5 = 8 bytes per byte per core
    assert preload_link_shares(device)[("out", 16)] == pytest.approx(8.0)
    assert preload_link_shares(device)[("in", 3)] == pytest.approx(1.0)
    # 1000 B per core: controller egress 8000 B at 16 GB/s = 0.5 us > core ingress 1000 B at 5.5 GB/s
    assert preload_seconds(device, 1000, 16000) == pytest.approx(0.5e-6)
    # an HBM-bound preload (replicas cost exchange, not HBM): 1000 B per core from 64 kB read
    assert preload_seconds(device, 1000, 64000) == pytest.approx(64000 / 32e9)
    assert preload_seconds(device, 0, 0) == 0.0
