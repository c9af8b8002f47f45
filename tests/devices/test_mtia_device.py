"""The `mtia-v1` device file (seeds/001 section 3, Table I) and its family's loader."""

import pytest

from irc.devices import DEVICE_DIR, DeviceError, known_devices, load_device
from irc.devices.mtia import MtiaDevice


def test_mtia_v1_is_a_known_device_of_its_own_family():
    assert "mtia-v1" in known_devices()
    device = load_device("mtia-v1")
    assert isinstance(device, MtiaDevice)
    assert device.family == "mtia"


def test_mtia_v1_matches_table_one():
    device = load_device("mtia-v1")
    assert (device.grid_rows, device.grid_cols, device.pes) == (8, 8, 64)
    assert device.clock_hz == 800e6
    assert device.local_bytes == 128 * 1024 and device.local_bytes_per_s == 400e9
    assert device.onchip_bytes == 128 * 1024 * 1024 and device.onchip_bytes_per_s == 800e9
    assert device.dram_bytes == 64 * 1024**3 and device.dram_bytes_per_s == 176e9
    assert device.accumulator_banks == 4
    assert device.multicast == "row-column"
    assert device.reduction_directions == ("north-south", "west-east")


def test_dpe_rates_follow_section_3_1_2():
    device = load_device("mtia-v1")
    # a 32x32x32 INT8 block in 32 cycles; FP16 at 512 MACs per cycle (32x16)
    assert device.dpe_block == (32, 32, 32) and device.dpe_block_cycles == 32
    assert device.int8_macs_per_cycle == 1024
    assert device.macs_per_cycle_for(1) == 1024 and device.macs_per_cycle_for(2) == 512
    # Table I: 102.4 INT8 / 51.2 FP16 TOPS, counting a MAC as two operations (to ~2%)
    assert device.peak_macs_per_s_for(1) * 2 / 1e12 == pytest.approx(102.4, rel=0.025)
    assert device.peak_macs_per_s_for(2) * 2 / 1e12 == pytest.approx(51.2, rel=0.025)


def test_level_bandwidths_in_bytes_per_cycle():
    device = load_device("mtia-v1")
    assert device.level_bytes_per_cycle("local") == 500.0     # 400 GB/s / 800 MHz
    assert device.level_bytes_per_cycle("sram") == 1000.0     # 800 GB/s
    assert device.level_bytes_per_cycle("dram") == 220.0      # 176 GB/s


def test_the_t10_planners_view_is_the_pes_and_their_local_memory():
    device = load_device("mtia-v1")
    assert device.cores == device.cores_per_chip == 64
    assert device.sram_bytes == device.local_bytes       # per-core scratchpad, not the shared SRAM


def test_every_assumed_field_is_commented_as_such():
    text = (DEVICE_DIR / "mtia_v1.toml").read_text()
    for field in ("dma_issue_cycles", "latency_cycles", "pe_link_bytes_per_cycle", "hop_cycles", "barrier_cycles",
                  "link_bytes_per_cycle"):
        lines = [line for line in text.splitlines() if line.strip().startswith(field)]
        assert lines and all("ASSUMED" in line for line in lines), field


def _variant(tmp_path, old, new):
    text = (DEVICE_DIR / "mtia_v1.toml").read_text()
    assert old in text
    path = tmp_path / "mtia.toml"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize(
    "old, new, field",
    [
        ("rows = 8", "rows = 0", "grid.rows"),
        ("clock_hz = 8.0e8", "clock_hz = -1.0", "grid.clock_hz"),
        ("local_bytes = 131072", "local_bytes = \"128K\"", "pe.local_bytes"),
        ("dpe_block = [32, 32, 32]", "dpe_block = [32, 32]", "pe.dpe_block"),
        ("dpe_block_cycles = 32", "dpe_block_cycles = 33", "pe.dpe_block_cycles"),
        ("accumulator_banks = 4", "accumulator_banks = 2", "pe.accumulator_banks"),
        ("multicast = \"row-column\"", "multicast = \"any\"", "noc.multicast"),
        ("directions = [\"north-south\", \"west-east\"]", "directions = [\"south-north\"]", "reduction.directions"),
        ("latency_cycles = 400", "latency_cycles = -3", "dram.latency_cycles"),
        ("bytes_per_s = 1.76e11", "", "dram.bytes_per_s"),
        ("\nfamily = \"mtia\"", "\nfamily = \"gpu\"", "family"),
    ],
)
def test_a_bad_field_is_an_error_naming_it(tmp_path, old, new, field):
    with pytest.raises(DeviceError) as error:
        load_device(_variant(tmp_path, old, new))
    assert f"'{field}'" in str(error.value)


def test_a_variant_without_multicast_loads(tmp_path):
    device = load_device(_variant(tmp_path, "multicast = \"row-column\"", "multicast = \"none\""))
    assert not device.has_multicast
