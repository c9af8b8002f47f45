"""Everything irc registers with xDSL: its dialects and passes, and the plug-ins.

irc's own dialects, passes and cost models are one ``IrcUniverse`` (``IRC_UNIVERSE`` in
`irc.plugins`), lazily (a factory per name, as xDSL's `Universe` expects), so that a
tool imports only what a pipeline uses. Packages outside
this repository extend irc the same way: they export an `xdsl.universe.Universe` under
the entry-point group ``irc.plugins`` (see `tests/plugin_example/`), and every irc tool
picks their dialects and passes up without an edit to irc.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import get_all_dialects
from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.transforms import get_all_passes

from irc.plugins import IRC_UNIVERSE, PLUGIN_GROUP, IrcUniverse, PluginError, plugin_universes  # noqa: F401 (re-exported)


def _merge(
    kind: str,
    sources: list[tuple[str, dict[str, Callable]]],
) -> dict[str, Callable]:
    merged: dict[str, Callable] = {}
    owner: dict[str, str] = {}
    for source, items in sources:
        for name, factory in items.items():
            # Anything may shadow an xDSL name; irc and plug-ins may not clash.
            if name in merged and owner[name] != "xdsl":
                raise PluginError(
                    f"{kind} '{name}' from {source} clashes with the one from {owner[name]}"
                )
            merged[name], owner[name] = factory, source
    return merged


def all_dialects() -> dict[str, Callable[[], Dialect]]:
    """xDSL's dialects, irc's, then the plug-ins' (a clash is an error)."""
    plugins = plugin_universes()
    return _merge(
        "dialect",
        [("xdsl", get_all_dialects()), ("irc", IRC_UNIVERSE.all_dialects)]
        + [(f"plug-in '{n}'", u.all_dialects) for n, u in plugins.items()],
    )


def all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """xDSL's passes, irc's, then the plug-ins' (a clash is an error)."""
    plugins = plugin_universes()
    return _merge(
        "pass",
        [("xdsl", get_all_passes()), ("irc", IRC_UNIVERSE.all_passes)]
        + [(f"plug-in '{n}'", u.all_passes) for n, u in plugins.items()],
    )
