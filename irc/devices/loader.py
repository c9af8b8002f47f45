"""Load ``Device`` descriptions from TOML files (DESIGN.md section 4: devices are data).

``load_device("ipu-mk2")`` finds ``ipu_mk2.toml`` next to this module; a path to any
``.toml`` file works too. Every field is checked, and a bad one is reported by its dotted
name (``cores.sram_bytes``) together with the offending value.
"""

from __future__ import annotations

import re
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any

from irc.devices.device import Device
from irc.plugins import plugin_devices

DEVICE_DIR = Path(__file__).resolve().parent


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


MAX_CORES = 1 << 20
"""The most cores a device may have (as many as a device op may run on)."""

MAX_NAME_LENGTH = 128
"""The longest device name irc accepts (names are looked up as file names)."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")


def check_device_name(name: str) -> str:
    """``name`` when it can name a device (letters, digits, ``_ . + -``, at most
    `MAX_NAME_LENGTH` characters); a `DeviceError` otherwise."""
    if not isinstance(name, str) or not name:
        raise DeviceError("a device needs a name")
    if len(name) > MAX_NAME_LENGTH:
        raise DeviceError(f"device name of {len(name)} characters; a device name has at most {MAX_NAME_LENGTH}")
    if not _NAME.fullmatch(name):
        shown = name if name.isprintable() else name.encode("unicode_escape").decode()
        raise DeviceError(f"device name {shown!r} may hold only letters, digits and _ . + -")
    return name


def load_device(name_or_path: str | Path) -> Device:
    """A bundled device by name (``ipu-mk2``, ``tiny8``, ...) or a TOML file by path."""
    if isinstance(name_or_path, Device):
        return name_or_path
    text = str(name_or_path)
    path = Path(text)
    try:
        if text.endswith(".toml") or path.parent != Path("."):
            if not path.is_file():
                raise DeviceError(f"device file {_shown(text)} does not exist")
            return _read(path)
        check_device_name(text)
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
    except OSError as error:
        raise DeviceError(f"cannot read device file {_shown(text)}: {error.strerror or error}") from None


def _shown(text: str) -> str:
    return repr(text if len(text) <= 200 else text[:200] + "...")


def _read(path: Path) -> Device:
    """The device a file describes, read once per file version (path, size, mtime)."""
    stat = path.stat()
    return _read_version(path.resolve(), stat.st_size, stat.st_mtime_ns)


FIELDS: dict[str, tuple[str, str]] = {
    "name": ("name", "name"),
    "description": ("description", "text"),
    "cores": ("cores.count", "core_count"),
    "cores_per_chip": ("cores.per_chip", "core_count"),
    "sram_bytes": ("cores.sram_bytes", "positive_int"),
    "clock_hz": ("compute.clock_hz", "positive_number"),
    "systolic": ("compute.systolic", "pair_of_positive_ints"),
    "macs_per_cycle": ("compute.macs_per_cycle", "positive_int"),
    "topology": ("interconnect.topology", "topology"),
    "link_bytes_per_s": ("interconnect.link_bytes_per_s", "positive_number"),
    "shift_cycles_per_byte": ("interconnect.shift_cycles_per_byte", "positive_number"),
    "sync_cycles": ("interconnect.sync_cycles", "non_negative_int"),
    "syncs_per_shift": ("interconnect.syncs_per_shift", "non_negative_int"),
    "inter_chip_overhead": ("interconnect.inter_chip_overhead", "positive_number"),
}
"""Each `Device` field: its dotted key in a device file and the check its value passes
(the same for a file and for a description written inline in IR, ``#irc.target``)."""


def device_from_fields(values: dict[str, Any], where: str) -> Device:
    """A `Device` from its fields by name (as an inline ``#irc.target`` description
    states them), each checked as a device file's would be; ``where`` names the
    description in errors."""
    missing = sorted(set(FIELDS) - set(values))
    if missing:
        raise DeviceError(f"{where} lacks device field(s) {', '.join(missing)}")
    unknown = sorted(set(values) - set(FIELDS))
    if unknown:
        raise DeviceError(f"{where} has unknown device field(s) {', '.join(unknown)}")
    fields = _Fields(where, {})
    checked = {}
    for name, (_, kind) in FIELDS.items():
        value = values[name]
        if kind == "pair_of_positive_ints" and isinstance(value, tuple):
            value = list(value)
        checked[name] = getattr(fields, f"check_{kind}")(name, value)
    return Device(**checked)


@lru_cache(maxsize=64)
def _read_version(path: Path, size: int, mtime_ns: int) -> Device:
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except tomllib.TOMLDecodeError as error:
        raise DeviceError(f"{path.name}: not valid TOML: {error}") from error
    except UnicodeDecodeError:
        raise DeviceError(f"{path.name}: not valid TOML: the file is not UTF-8 text") from None
    except RecursionError:  # tomllib nests arrays recursively
        raise DeviceError(f"{path.name}: arrays or tables nested too deeply for a device file") from None
    fields = _Fields(path.name, data)
    values = {}
    for name, (dotted, kind) in FIELDS.items():
        default = "" if name == "description" else _Fields._MISSING
        values[name] = getattr(fields, f"check_{kind}")(dotted, fields._get(dotted, default))
    return Device(**values)


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
        shown = repr(value)
        shown = shown if len(shown) <= 80 else shown[:80] + "..."
        return DeviceError(f"{self.file_name}: field {dotted!r} must be {expected}, got {shown}")

    def check_name(self, dotted: str, value: Any) -> str:
        if not isinstance(value, str):
            raise self._bad(dotted, "a device name (a string)", value)
        try:
            return check_device_name(value)
        except DeviceError as error:
            raise DeviceError(f"{self.file_name}: field {dotted!r}: {error}") from None

    def check_text(self, dotted: str, value: Any) -> str:
        if not isinstance(value, str) or len(value) > 4096:
            raise self._bad(dotted, "a string (at most 4096 characters)", value)
        return value

    def check_topology(self, dotted: str, value: Any) -> str:
        options = ("all-to-all",)
        if value not in options:
            raise self._bad(dotted, f"one of {', '.join(options)}", value)
        return value

    def check_positive_int(self, dotted: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 1 << 40:
            raise self._bad(dotted, "a positive integer (at most 2**40)", value)
        return value

    def check_core_count(self, dotted: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_CORES:
            raise self._bad(dotted, f"a positive number of cores (at most {MAX_CORES})", value)
        return value

    def check_non_negative_int(self, dotted: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 1 << 40:
            raise self._bad(dotted, "a non-negative integer (at most 2**40)", value)
        return value

    def check_positive_number(self, dotted: str, value: Any) -> float:
        # `not value > 0` would let NaN through; a value past 1e15 or under 1e-9 is no chip's
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1e-9 <= value <= 1e15:
            raise self._bad(dotted, "a positive, finite number (between 1e-9 and 1e15)", value)
        return float(value)

    def check_pair_of_positive_ints(self, dotted: str, value: Any) -> tuple[int, int]:
        if (
            not isinstance(value, list)
            or len(value) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 1 << 20 for v in value)
        ):
            raise self._bad(dotted, "a list of two positive integers [rows, cols] (at most 2**20 each)", value)
        return (value[0], value[1])
