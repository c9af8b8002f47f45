"""Plug-ins: packages outside this repository that extend irc without editing it.

A plug-in exports, under the entry-point group ``irc.plugins``, an xDSL ``Universe`` (its
dialects and passes) or an ``IrcUniverse``, which may also carry cost models and device
descriptions. This module only finds and loads them; `irc.universe` merges their dialects
and passes with irc's, `irc.cost.registry` their cost models and `irc.devices.loader` their
devices, so each registry asks here and none of them imports the tools' universe.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path

from xdsl.universe import Universe

PLUGIN_GROUP = "irc.plugins"


class PluginError(Exception):
    """A plug-in that cannot be loaded or clashes with a registered name."""


class IrcUniverse(Universe):
    """An xDSL ``Universe`` that also brings cost models (name -> factory returning a
    ``irc.cost.CostModel`` class) and devices (name -> factory returning the path of the
    device's TOML file)."""

    def __init__(
        self,
        *,
        cost_models: Mapping[str, Callable[[], type]] | None = None,
        devices: Mapping[str, Callable[[], str | Path]] | None = None,
        **universe,
    ):
        super().__init__(**universe)
        self.cost_models = dict(cost_models or {})
        self.devices = dict(devices or {})


@cache
def plugin_universes() -> dict[str, Universe]:
    """The universes exported under ``irc.plugins``, by entry-point name."""
    found: dict[str, Universe] = {}
    for entry in sorted(entry_points(group=PLUGIN_GROUP), key=lambda e: e.name):
        try:
            universe = entry.load()
        except Exception as error:  # a broken plug-in must not take irc down silently
            raise PluginError(f"plug-in '{entry.name}' ({entry.value}) failed to load: {error}") from None
        if not isinstance(universe, Universe):
            raise PluginError(f"plug-in '{entry.name}' ({entry.value}) is not an xdsl.universe.Universe")
        found[entry.name] = universe
    return found


def _extensions(kind: str, attribute: str) -> dict[str, tuple[str, Callable]]:
    merged: dict[str, tuple[str, Callable]] = {}
    for plugin, universe in plugin_universes().items():
        for name, factory in getattr(universe, attribute, {}).items():
            if name in merged:
                raise PluginError(f"{kind} '{name}' from plug-in '{plugin}' clashes with plug-in '{merged[name][0]}'")
            merged[name] = (plugin, factory)
    return merged


def plugin_cost_models() -> dict[str, tuple[str, Callable[[], type]]]:
    """Cost models the plug-ins bring: name -> (plug-in, factory of the class)."""
    return _extensions("cost model", "cost_models")


def plugin_devices() -> dict[str, tuple[str, Callable[[], str | Path]]]:
    """Devices the plug-ins bring: name -> (plug-in, factory of the TOML path)."""
    return _extensions("device", "devices")
