"""Load ``Device`` descriptions from TOML files (DESIGN.md section 4: devices are data).

``load_device("ipu-mk2")`` finds ``ipu_mk2.toml`` next to this module; a path to any
``.toml`` file works too. Every field is checked, and a bad one is reported by its dotted
name (``cores.sram_bytes``) together with the offending value, at its place in the file
(``dev.toml:12:1: error: field 'compute.clock_hz' must be ...``).
"""

from __future__ import annotations

import re
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any

from irc.devices.device import Device, OffChipMemory
from irc.plugins import plugin_devices

DEVICE_DIR = Path(__file__).resolve().parent

# Device families other than the IPU kind (a file's top-level ``family``; absent means
# the IPU kind): family -> "module:function" building the family's dataclass from the
# file's fields (``_Fields``).
FAMILIES = {
    "npu": "irc.devices.npu:device_from_fields",
    "mtia": "irc.devices.mtia:device_from_fields",
}


class DeviceError(ValueError):
    """An unknown device name or a malformed device file. ``location``
    (``file:line:col``), when the error has one, leads its text as a diagnostic's does:
    ``dev.toml:12:1: error: field ...``."""

    def __init__(self, message: str, location: str | None = None):
        super().__init__(f"{location}: error: {message}" if location else message)
        self.message = message
        self.location = location


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
    if not isinstance(name_or_path, (str, Path)):
        return name_or_path  # already a device description (of any family)
    text = str(name_or_path)
    path = Path(text)
    try:
        if text.endswith(".toml") or path.parent != Path("."):
            if not path.is_file():
                raise DeviceError(f"device file {_shown(text)} does not exist")
            return _read(path, text)
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


def _read(path: Path, label: str | None = None) -> Device:
    """The device a file describes, read once per file version (path, size, mtime);
    errors name the file as ``label`` (the path the user gave; the file's name for a
    bundled device)."""
    stat = path.stat()
    return _read_version(path.resolve(), stat.st_size, stat.st_mtime_ns, label or path.name)


_TOML_PLACE = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


@lru_cache(maxsize=64)
def _read_version(path: Path, size: int, mtime_ns: int, label: str) -> Device:
    with open(path, "rb") as handle:
        raw = handle.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        column = error.start - (raw.rfind(b"\n", 0, error.start) + 1) + 1
        raise DeviceError("not valid TOML: the file is not UTF-8 text", f"{label}:{line}:{column}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        message = str(error)
        place = _TOML_PLACE.search(message)
        if place is None:  # "(at end of document)"
            end = message.rfind(" (at end of document)")
            message = message[:end] if end >= 0 else message
            raise DeviceError(f"not valid TOML: {message}", f"{label}:{text.count(chr(10)) + 1}:1") from None
        raise DeviceError(f"not valid TOML: {message[: place.start()]}",
                          f"{label}:{place.group(1)}:{place.group(2)}") from None
    except RecursionError:  # tomllib nests arrays recursively
        raise DeviceError(f"{label}: arrays or tables nested too deeply for a device file") from None
    return _device(_Fields(label, data, locations=field_locations(text)))


_TABLE = re.compile(r"\s*\[\s*([^\[\]#=]+?)\s*\]\s*(?:#.*)?$")
_KEY = re.compile(r"(\s*)((?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*'))*)\s*=")


def _dotted(key: str) -> str:
    parts = re.findall(r"[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*'", key)
    return ".".join(part.strip("\"'") for part in parts)


def field_locations(text: str) -> dict[str, tuple[int, int]]:
    """Where each table (``[cores]``) and key (``cores.count``, dotted) of a TOML text is:
    ``(line, column)``, 1-based, of the first time it appears (a line scan: device files
    are flat tables of ``key = value`` lines)."""
    locations: dict[str, tuple[int, int]] = {}
    table = ""
    for number, line in enumerate(text.splitlines(), 1):
        header = _TABLE.match(line)
        if header is not None:
            table = _dotted(header.group(1))
            locations.setdefault(table, (number, line.index("[") + 1))
            continue
        key = _KEY.match(line)
        if key is not None:
            parts = [*([table] if table else []), *_dotted(key.group(2)).split(".")]
            for end in range(1, len(parts) + 1):  # `a.b.c = 1` also places a.b
                locations.setdefault(".".join(parts[:end]), (number, len(key.group(1)) + 1))
    return locations


def _device(fields: "_Fields") -> Device:
    """The device a file's fields describe (a file, or an inline ``#irc.target``)."""
    family = fields.data.get("family")
    if family is not None and family != "ipu":
        return _family_device(fields, family)
    fields.refuse_unknown(KNOWN_FIELDS)
    rows, cols = fields.pair_of_positive_ints("compute.systolic")
    topology = fields.choice("interconnect.topology", TOPOLOGIES)
    per_chip = fields.positive_int("cores.per_chip", limit=MAX_CORES)
    mesh = None
    if topology == "mesh-2d":
        mesh = fields.pair_of_positive_ints("interconnect.mesh")
        if mesh[0] * mesh[1] != per_chip:
            raise fields.bad("interconnect.mesh", f"[rows, cols] with rows * cols = cores.per_chip ({per_chip})", list(mesh))
    elif fields.has("interconnect.mesh"):
        raise fields.bad("interconnect.mesh", 'absent unless interconnect.topology is "mesh-2d"', fields.get("interconnect.mesh"))
    offchip = None
    if fields.has("offchip"):
        offchip = OffChipMemory(
            capacity_bytes=fields.positive_int("offchip.capacity_bytes", limit=1 << 50),
            bytes_per_s=fields.positive_number("offchip.bytes_per_s"),
            controllers_per_chip=fields.positive_int("offchip.controllers_per_chip", limit=1 << 16),
            inter_chip_bytes_per_s=fields.positive_number("offchip.inter_chip_bytes_per_s"),
        )
        if mesh is not None:   # each controller sits on its own segment of the mesh's edge
            edge = mesh[0] * mesh[1] if min(mesh) <= 2 else 2 * (mesh[0] + mesh[1]) - 4
            if offchip.controllers_per_chip > edge:
                raise fields.bad("offchip.controllers_per_chip",
                                 f"at most the {edge} cores on the edge of the {mesh[0]}x{mesh[1]} mesh",
                                 offchip.controllers_per_chip)
    count = fields.positive_int("cores.count", limit=MAX_CORES)
    if count % per_chip:
        raise fields.bad("cores.count", f"a multiple of cores.per_chip ({per_chip}): whole chips", count)
    device = Device(
        name=fields.device_name("name"),
        description=fields.string("description", default=""),
        cores=count,
        cores_per_chip=per_chip,
        sram_bytes=fields.positive_int("cores.sram_bytes"),
        clock_hz=fields.positive_number("compute.clock_hz"),
        systolic=(rows, cols),
        macs_per_cycle=fields.positive_int("compute.macs_per_cycle"),
        topology=topology,
        link_bytes_per_s=fields.positive_number("interconnect.link_bytes_per_s"),
        shift_cycles_per_byte=fields.positive_number("interconnect.shift_cycles_per_byte"),
        sync_cycles=fields.non_negative_int("interconnect.sync_cycles"),
        syncs_per_shift=fields.non_negative_int("interconnect.syncs_per_shift"),
        inter_chip_overhead=fields.positive_number("interconnect.inter_chip_overhead"),
        mesh=mesh,
        link_latency_cycles=fields.non_negative_number("interconnect.link_latency_cycles", default=0.0),
        offchip=offchip,
    )
    return device


def _family_device(fields: "_Fields", family: Any):
    """The device of a file of another family (``FAMILIES``), or an error naming 'family'."""
    if family not in FAMILIES:
        raise fields._bad("family", f"one of {', '.join(sorted(FAMILIES))} (or absent: the IPU kind)", family)
    module_name, function = FAMILIES[family].split(":")
    from importlib import import_module

    return getattr(import_module(module_name), function)(fields)


TOPOLOGIES = ("all-to-all", "mesh-2d")

KNOWN_FIELDS = {
    "family": None,   # dispatched on by loader families; absent or "ipu" here
    "name": None,
    "description": None,
    "cores": {"count", "per_chip", "sram_bytes"},
    "compute": {"clock_hz", "systolic", "macs_per_cycle"},
    "interconnect": {
        "topology", "link_bytes_per_s", "shift_cycles_per_byte", "sync_cycles", "syncs_per_shift",
        "inter_chip_overhead", "mesh", "link_latency_cycles",
    },
    "offchip": {"capacity_bytes", "bytes_per_s", "controllers_per_chip", "inter_chip_bytes_per_s"},
}
"""Every field an IPU-kind device file may have: top-level keys, and each table's keys."""

_DOTTED = {
    "cores": "cores.count", "cores_per_chip": "cores.per_chip", "sram_bytes": "cores.sram_bytes",
    "clock_hz": "compute.clock_hz", "systolic": "compute.systolic", "macs_per_cycle": "compute.macs_per_cycle",
    **{name: f"interconnect.{name}" for name in KNOWN_FIELDS["interconnect"]},
}
"""A `Device` field's dotted key in a device file, where the two differ."""


def device_from_fields(values: dict[str, Any], where: str) -> Device:
    """A `Device` from its flat fields (as an inline ``#irc.target`` description states
    them: `Device.fields`), each checked exactly as a device file's would be; ``where``
    names the description in errors."""
    import dataclasses

    required = [f.name for f in dataclasses.fields(Device)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    missing = [name for name in required if name not in values]
    if missing and values.get("family") in (None, "ipu"):
        raise DeviceError(f"{where} lacks device field(s) {', '.join(missing)}")
    data: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, tuple):
            value = list(value)
        dotted = _DOTTED.get(key, key)
        head, _, tail = dotted.partition(".")
        if tail:
            data.setdefault(head, {})[tail] = value
        else:
            data[head] = value
    return _device(_Fields(where, data, {dotted: key for key, dotted in _DOTTED.items()}))


class _Fields:
    """Typed access to dotted fields of one parsed TOML file, with named errors."""

    _MISSING = object()

    def __init__(self, file_name: str, data: dict[str, Any], names: dict[str, str] | None = None,
                 locations: dict[str, tuple[int, int]] | None = None):
        self.file_name = file_name
        self.data = data
        self.names = names or {}   # dotted key -> the name the user wrote (inline descriptions)
        self.locations = locations  # dotted key -> (line, column) in the file (`field_locations`)

    def error(self, dotted: str, message: str) -> DeviceError:
        """An error about field ``dotted``: at its place in the file (or the place of its
        table, for a missing field), else naming the file (or the description)."""
        if self.locations is not None:
            key = dotted
            while key and key not in self.locations:
                key = key.rpartition(".")[0]
            if key:
                line, column = self.locations[key]
                return DeviceError(message, f"{self.file_name}:{line}:{column}")
        return DeviceError(f"{self.file_name}: {message}")

    def _get(self, dotted: str, default: Any = _MISSING) -> Any:
        node: Any = self.data
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                if default is not self._MISSING:
                    return default
                raise self.error(dotted, f"missing field {self.names.get(dotted, dotted)!r}")
            node = node[part]
        return node

    def has(self, dotted: str) -> bool:
        return self._get(dotted, None) is not None

    def get(self, dotted: str) -> Any:
        return self._get(dotted, None)

    def refuse_unknown(self, known: dict[str, set[str] | None]) -> None:
        """An error naming the first field (dotted) that ``known`` does not list."""
        for key, value in self.data.items():
            if key not in known:
                raise self.error(key, f"unknown field {key!r}; known fields: {', '.join(known)}")
            inner = known[key]
            if inner is None:
                if isinstance(value, dict):
                    raise self.bad(key, "a value, not a table", value)
                continue
            if not isinstance(value, dict):
                raise self.bad(key, "a table", value)
            for sub in value:
                if sub not in inner:
                    raise self.error(
                        f"{key}.{sub}", f"unknown field '{key}.{sub}'; known fields of [{key}]: {', '.join(sorted(inner))}"
                    )

    def bad(self, dotted: str, expected: str, value: Any) -> DeviceError:
        shown = repr(value)
        shown = shown if len(shown) <= 80 else shown[:80] + "..."
        return self.error(dotted, f"field {self.names.get(dotted, dotted)!r} must be {expected}, got {shown}")

    _bad = bad

    def string(self, dotted: str, default: Any = _MISSING) -> str:
        value = self._get(dotted, default)
        if not isinstance(value, str) or (default is self._MISSING and not value) or len(value) > 4096:
            raise self._bad(dotted, "a non-empty string (at most 4096 characters)", value)
        return value

    def device_name(self, dotted: str) -> str:
        value = self._get(dotted)
        if not isinstance(value, str):
            raise self._bad(dotted, "a device name (a string)", value)
        try:
            return check_device_name(value)
        except DeviceError as error:
            raise self.error(dotted, f"field {self.names.get(dotted, dotted)!r}: {error}") from None

    def choice(self, dotted: str, options: tuple[str, ...]) -> str:
        value = self._get(dotted)
        if value not in options:
            raise self._bad(dotted, f"one of {', '.join(options)}", value)
        return value

    def positive_int(self, dotted: str, limit: int = 1 << 40) -> int:
        value = self._get(dotted)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= limit:
            raise self._bad(dotted, f"a positive integer (at most 2**{limit.bit_length() - 1})", value)
        return value

    def non_negative_number(self, dotted: str, default: Any = _MISSING) -> float:
        value = self._get(dotted, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1e15:
            raise self._bad(dotted, "a non-negative, finite number (at most 1e15)", value)
        return float(value)

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
