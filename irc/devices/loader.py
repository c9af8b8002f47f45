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

from irc.devices.device import MAX_CORES, TOPOLOGIES  # noqa: F401 - MAX_CORES: irc.dse's too
from irc.devices.device import Device
from irc.devices.families import FAMILIES
from irc.devices.family import ChipFamily
from irc.devices.schema import MAX_NAME_LENGTH, NAME_PATTERN, FieldError, describe_value, flat_to_nested, shown_value, validate
from irc.devices.schema import value as value_at
from irc.plugins import plugin_devices

DEVICE_DIR = Path(__file__).resolve().parent


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


def check_device_name(name: str) -> str:
    """``name`` when it can name a device (letters, digits, ``_ . + -``, at most
    `MAX_NAME_LENGTH` characters); a `DeviceError` otherwise."""
    if not isinstance(name, str) or not name:
        raise DeviceError("a device needs a name")
    if len(name) > MAX_NAME_LENGTH:
        raise DeviceError(f"device name of {len(name)} characters; a device name has at most {MAX_NAME_LENGTH}")
    if not NAME_PATTERN.fullmatch(name):
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


def _stated_family(data: dict[str, Any], fields: "_Fields") -> ChipFamily:
    """The family a parsed file (or description) states: its top-level ``family``
    (absent: the IPU kind), or an error naming the field."""
    family = data.get("family", "ipu")
    if not isinstance(family, str) or family not in FAMILIES:
        got = shown_value(family) if isinstance(family, str) else describe_value(family)
        raise fields.error("family", f"field {fields.names.get('family', 'family')!r} must be one of "
                                     f"{', '.join(FAMILIES)} (absent: ipu), got {got}")
    return FAMILIES[family]


def _device(fields: "_Fields"):
    """The device a file's fields describe (a file, or an inline ``#irc.target``): its
    family's schema checked first (`irc.devices.schema.validate`), then its dataclass."""
    family = _stated_family(fields.data, fields)
    try:
        validate(fields.data, family.schema, fields.names)
    except FieldError as error:
        raise fields.error(error.key, error.message) from None
    return family.device_from_fields(fields)


def device_from_fields(values: dict[str, Any], where: str):
    """A device of any family from its flat fields, as an inline ``#irc.target``
    description states them (its dataclass's fields by name), each checked against the
    family's schema exactly as a device file's would be; ``where`` names the description
    in errors."""
    fields = _Fields(where, {})
    family = _stated_family(values, fields)
    data, names = flat_to_nested(values, family.flat, family.schema)
    return _device(_Fields(where, data, names))


class _Fields:
    """The fields of one parsed file or description, with errors located at a field."""

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

    def bad(self, dotted: str, expected: str, value: Any) -> DeviceError:
        return self.error(dotted, f"field {self.names.get(dotted, dotted)!r} must be {expected}, "
                                  f"got {shown_value(value)}")

    def value(self, dotted: str, default: Any = None) -> Any:
        return value_at(self.data, dotted, default)

    def has(self, dotted: str) -> bool:
        return self.value(dotted) is not None
