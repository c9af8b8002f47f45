"""Device loader: bundled devices, unknown names, malformed files."""

import pytest

from irc.devices import DEVICE_DIR, DeviceError, known_devices, load_device


def test_known_devices_include_ipu_and_tiny_chips():
    assert {"ipu-mk2", "tiny4", "tiny8", "tiny16"} <= set(known_devices())


def test_ipu_mk2_matches_the_seed_problem():
    device = load_device("ipu-mk2")
    assert device.cores == 1472
    assert device.sram_bytes == 624 * 1024
    assert device.systolic == (16, 16)
    assert device.link_bytes_per_s == 5.5e9
    assert device.sync_cycles == 118
    assert device.shift_cycles_per_byte == pytest.approx(0.28)
    assert device.clock_hz == 1.325e9


@pytest.mark.parametrize("name, cores", [("tiny4", 4), ("tiny8", 8), ("tiny16", 16)])
def test_tiny_chips(name, cores):
    device = load_device(name)
    assert device.cores == cores
    assert device.sram_bytes <= 64 * 1024
    assert max(device.systolic) <= 16
    assert device.link_bytes_per_s == load_device("ipu-mk2").link_bytes_per_s


def test_load_by_path(tmp_path):
    from irc.devices import DEVICE_DIR

    copy = tmp_path / "mine.toml"
    copy.write_text((DEVICE_DIR / "tiny8.toml").read_text())
    assert load_device(copy).cores == 8
    assert load_device(str(copy)).name == "tiny8"


def test_unknown_device_lists_known_names():
    with pytest.raises(DeviceError) as error:
        load_device("ipu-mk9")
    assert "ipu-mk9" in str(error.value)
    for name in known_devices():
        assert name in str(error.value)


def _write(tmp_path, text):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    return path


GOOD = """
name = "x"
[cores]
count = 4
per_chip = 4
sram_bytes = 4096
[compute]
clock_hz = 1e9
systolic = [4, 4]
macs_per_cycle = 4
[interconnect]
topology = "all-to-all"
link_bytes_per_s = 5.5e9
shift_cycles_per_byte = 0.28
sync_cycles = 118
syncs_per_shift = 2
inter_chip_overhead = 1.25
"""


def test_good_custom_file(tmp_path):
    assert load_device(_write(tmp_path, GOOD)).systolic == (4, 4)


@pytest.mark.parametrize(
    "old, new, field",
    [
        ("count = 4", "count = -4", "cores.count"),
        ("count = 4", "count = \"four\"", "cores.count"),
        ("sram_bytes = 4096\n", "", "cores.sram_bytes"),
        ("systolic = [4, 4]", "systolic = [4]", "compute.systolic"),
        ("topology = \"all-to-all\"", "topology = \"ring\"", "interconnect.topology"),
        ("clock_hz = 1e9", "clock_hz = 0", "compute.clock_hz"),
    ],
)
def test_malformed_file_names_the_field(tmp_path, old, new, field):
    with pytest.raises(DeviceError) as error:
        load_device(_write(tmp_path, GOOD.replace(old, new)))
    assert field in str(error.value)


def test_invalid_toml(tmp_path):
    with pytest.raises(DeviceError, match="not valid TOML"):
        load_device(_write(tmp_path, "name = "))


def test_missing_file():
    with pytest.raises(DeviceError, match="does not exist"):
        load_device("/nonexistent/dev.toml")


@pytest.mark.parametrize("value", ["nan", "inf", "1e-300", "-1.0"])
def test_a_clock_that_is_no_number_is_named(tmp_path, value):
    path = tmp_path / "chip.toml"
    path.write_text((DEVICE_DIR / "tiny8.toml").read_text().replace("clock_hz = 1.325e9", f"clock_hz = {value}"))
    with pytest.raises(DeviceError, match=r"field 'compute.clock_hz' must be a positive, finite number"):
        load_device(path)
