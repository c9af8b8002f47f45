"""The chip families irc knows, by name: one registry (`FAMILIES`) of `ChipFamily`s, each
stated by its own module (``CHIP_FAMILY``). Every part that needs a device's family asks
here (`family_of`, `family_named`), never the device itself."""

from __future__ import annotations

from irc.devices import device, mtia, npu
from irc.devices.family import ChipFamily

FAMILIES: dict[str, ChipFamily] = {family.name: family for family in (
    device.CHIP_FAMILY,
    mtia.CHIP_FAMILY,
    npu.CHIP_FAMILY,
)}
"""Chip families by the name a device file's top-level ``family`` gives (absent: ``ipu``)."""


def family_of(described) -> ChipFamily:
    """The family of a device (an instance of a registered family's dataclass); a
    ``TypeError`` for anything else."""
    for family in FAMILIES.values():
        if family.describes(described):
            return family
    raise TypeError(f"{described!r} is no device of a known chip family ({', '.join(FAMILIES)})")


def family_named(name: str) -> ChipFamily:
    """The family called ``name``; a ``KeyError`` naming the known ones otherwise."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise KeyError(f"unknown device family {name!r}; known: {', '.join(FAMILIES)}") from None


__all__ = ["FAMILIES", "family_named", "family_of"]
