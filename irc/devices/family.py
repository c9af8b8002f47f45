"""A chip family as one typed interface: everything irc asks about a family, stated once.

A family is one module under `irc.devices` (``device.py``: the IPU kind; ``mtia.py``;
``npu.py``) whose ``CHIP_FAMILY`` is a `ChipFamily`, and its TOML files
(``family = "<name>"``); the registry (`irc.devices.families`) lists them. What a family
needs from parts above the devices (reading its ``#irc.target``, irc-plan's planner, the
passes that compile it) is named as ``"module:attribute"`` and imported only when asked
(`ChipFamily.entry`), as `irc.plugins` names passes: the devices stay the low part they
are, and no part asks a device which family it is (``getattr(device, "family")``): it
asks the registry (`irc.devices.families.family_of`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from irc.devices.schema import Schema


@dataclass(frozen=True)
class ChipFamily:
    """One chip family: its name (a device file's top-level ``family``), the frozen
    dataclass of its devices, how a file or an inline ``#irc.target`` description becomes
    one (``schema``, ``flat``, ``device_from_fields``), and the entries of the parts above
    the devices, by ``"module:attribute"``: ``target_reader`` reads and checks an
    ``#irc.target`` of the family (`irc.target`), ``planner`` is irc-plan's planner of it
    (an `irc.tools.family_planner.FamilyPlanner`; empty: irc-plan does not plan it),
    ``inference`` and ``training`` build the passes of irc-opt's ``inference{...}`` and
    ``training{...}`` pipelines for it from the pipeline's options (empty: the family has
    no such pipeline), ``compiled_with`` says which passes compile it (``{name}``: the
    device; a diagnostic's advice). ``cost_model`` names the registered cost model that
    prices the family (`irc.cost.get_cost_model`; empty: irc's default, and any cost
    model no other family names)."""

    name: str
    device_type: type
    schema: Schema
    flat: Mapping[str, str]
    device_from_fields: Callable[[Any], Any]
    target_reader: str
    compiled_with: str
    planner: str = ""
    inference: str = ""
    training: str = ""
    cost_model: str = ""

    def describes(self, device) -> bool:
        """Whether ``device`` is one of this family's."""
        return isinstance(device, self.device_type)

    def advice(self, device_name: str) -> str:
        """What compiles a device of the family (``compiled_with`` for ``device_name``)."""
        return self.compiled_with.format(name=device_name)

    def entry(self, which: str):
        """The object an entry (``"target_reader"``, ``"planner"``, ``"inference"``,
        ``"training"``) names, imported now: the parts it lives in sit above the devices."""
        reference = getattr(self, which)
        if not reference:
            raise LookupError(f"the {self.name} family has no {which}")
        module, _, attribute = reference.partition(":")
        found = importlib.import_module(module)
        return getattr(found, attribute) if attribute else found


__all__ = ["ChipFamily"]
