"""Load ``Device`` descriptions from TOML files (DESIGN.md section 4: devices are data).

``load_device("ipu-mk2")`` finds ``ipu_mk2.toml`` next to this module; a path to any
``.toml`` file works too. Every field is checked, and a bad one is reported by its dotted
name (``cores.sram_bytes``) together with the offending value.
"""

from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any

from irc.devices.device import Device
from irc.plugins import plugin_devices

DEVICE_DIR = Path(__file__).resolve().parent

# Device families other than the IPU kind (a file's top-level ``family``; absent means
# the IPU kind): family -> "module:function" building the family's dataclass from the
# file's fields (``_Fields``).
FAMILIES = {
    "mtia": "irc.devices.mtia:device_from_fields",
}


class DeviceError(ValueError):
    """An unknown device name or a malformed device file."""


def _file_for(name: str) -> Path:
    return DEVICE_DIR / (name.replace("-", "_") + ".toml")


def known_devices() -> list[str]:
    """Names of the bundled devices (the ``name`` field of each TOML file), then those the
    plug-ins bring (``irc.plugins``)."""
    names = []
    for path in sorted(DEVICE_DIR.glob("*.toml")):
        try:
            names.append(_read(path).name)
        except DeviceError:
            continue  # a broken file is reported when it is asked for by name
    return names + sorted(set(plugin_devices()) - set(names))


def load_device(name_or_path: str | Path) -> Device:
    """A bundled device by name (``ipu-mk2``, ``tiny8``, ...) or a TOML file by path."""
    if not isinstance(name_or_path, (str, Path)):
        return name_or_path  # already a device description (of any family)
    text = str(name_or_path)
    path = Path(text)
    if text.endswith(".toml") or path.parent != Path("."):
        if not path.is_file():
            raise DeviceError(f"device file {text!r} does not exist")
        return _read(path)
    candidate = _file_for(text)
    if not candidate.is_file():
        found = plugin_devices().get(text)
        if found is None:
            raise DeviceError(f"unknown device {text!r}; known devices: {', '.join(known_devices())}")
        plugin, factory = found
        candidate = Path(factory())
        if not candidate.is_file():
            raise DeviceError(f"device {text!r} of plug-in '{plugin}': file {str(candidate)!r} does not exist")
    return _read(candidate)


def _read(path: Path) -> Device:
    """The device a file describes, read once per file version (path, size, mtime)."""
    stat = path.stat()
    return _read_version(path.resolve(), stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=64)
def _read_version(path: Path, size: int, mtime_ns: int) -> Device:
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except tomllib.TOMLDecodeError as error:
        raise DeviceError(f"{path.name}: not valid TOML: {error}") from error
    fields = _Fields(path.name, data)
    family = data.get("family")
    if family is not None:
        return _family_device(fields, family)
    rows, cols = fields.pair_of_positive_ints("compute.systolic")
    device = Device(
        name=fields.string("name"),
        description=fields.string("description", default=""),
        cores=fields.positive_int("cores.count"),
        cores_per_chip=fields.positive_int("cores.per_chip"),
        sram_bytes=fields.positive_int("cores.sram_bytes"),
        clock_hz=fields.positive_number("compute.clock_hz"),
        systolic=(rows, cols),
        macs_per_cycle=fields.positive_int("compute.macs_per_cycle"),
        topology=fields.choice("interconnect.topology", ("all-to-all",)),
        link_bytes_per_s=fields.positive_number("interconnect.link_bytes_per_s"),
        shift_cycles_per_byte=fields.positive_number("interconnect.shift_cycles_per_byte"),
        sync_cycles=fields.non_negative_int("interconnect.sync_cycles"),
        syncs_per_shift=fields.non_negative_int("interconnect.syncs_per_shift"),
        inter_chip_overhead=fields.positive_number("interconnect.inter_chip_overhead"),
    )
    return device


def _family_device(fields: "_Fields", family: Any):
    """The device of a file of another family (``FAMILIES``), or an error naming 'family'."""
    if family not in FAMILIES:
        raise fields._bad("family", f"one of {', '.join(sorted(FAMILIES))} (or absent: the IPU kind)", family)
    module_name, function = FAMILIES[family].split(":")
    from importlib import import_module

    return getattr(import_module(module_name), function)(fields)


class _Fields:
    """Typed access to dotted fields of one parsed TOML file, with named errors."""

    _MISSING = object()

    def __init__(self, file_name: str, data: dict[str, Any]):
        self.file_name = file_name
        self.data = data

    def _get(self, dotted: str, default: Any = _MISSING) -> Any:
        node: Any = self.data
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                if default is not self._MISSING:
                    return default
                raise DeviceError(f"{self.file_name}: missing field {dotted!r}")
            node = node[part]
        return node

    def _bad(self, dotted: str, expected: str, value: Any) -> DeviceError:
        return DeviceError(
            f"{self.file_name}: field {dotted!r} must be {expected}, got {value!r}"
        )

    def string(self, dotted: str, default: Any = _MISSING) -> str:
        value = self._get(dotted, default)
        if not isinstance(value, str) or (default is self._MISSING and not value):
            raise self._bad(dotted, "a non-empty string", value)
        return value

    def choice(self, dotted: str, options: tuple[str, ...]) -> str:
        value = self._get(dotted)
        if value not in options:
            raise self._bad(dotted, f"one of {', '.join(options)}", value)
        return value

    def positive_int(self, dotted: str) -> int:
        value = self._get(dotted)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 1 << 40:
            raise self._bad(dotted, "a positive integer (at most 2**40)", value)
        return value

    def non_negative_int(self, dotted: str) -> int:
        value = self._get(dotted)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self._bad(dotted, "a non-negative integer", value)
        return value

    def positive_number(self, dotted: str) -> float:
        value = self._get(dotted)
        # `not value > 0` also refuses NaN; a value past 1e15 or under 1e-9 is no chip's
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1e-9 <= value <= 1e15:
            raise self._bad(dotted, "a positive, finite number (between 1e-9 and 1e15)", value)
        return float(value)

    def pair_of_positive_ints(self, dotted: str) -> tuple[int, int]:
        value = self._get(dotted)
        if (
            not isinstance(value, list)
            or len(value) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)
        ):
            raise self._bad(dotted, "a list of two positive integers [rows, cols]", value)
        return (value[0], value[1])
