"""Cost models by name: ``get_cost_model("t10")``; plug-ins add theirs through
``irc.plugins`` (an ``IrcUniverse``'s ``cost_models``)."""

from __future__ import annotations

from irc.cost.engdesign import EngDesignCostModel
from irc.cost.model import CostModel, CostModelError
from irc.cost.seed003 import Seed003CostModel
from irc.cost.t10 import T10CostModel
from irc.plugins import plugin_cost_models

_MODELS: dict[str, type] = {
    T10CostModel.name: T10CostModel,
    Seed003CostModel.name: Seed003CostModel,
    EngDesignCostModel.name: EngDesignCostModel,
}


def known_cost_models() -> list[str]:
    """irc's cost models, then those the plug-ins bring (``irc.plugins``)."""
    return sorted(_MODELS) + sorted(set(plugin_cost_models()) - set(_MODELS))


def get_cost_model(name: str | CostModel) -> CostModel:
    """A cost model by name (irc's, or a plug-in's); a ``CostModel`` instance is returned
    unchanged."""
    if not isinstance(name, str):
        return name
    if name in _MODELS:
        return _MODELS[name]()
    found = plugin_cost_models().get(name)
    if found is None:
        raise CostModelError(
            f"unknown cost model {name!r}; known cost models: {', '.join(known_cost_models())}"
        ) from None
    plugin, factory = found
    try:
        return factory()()
    except Exception as error:  # a plug-in's fault, reported as such
        raise CostModelError(f"cost model {name!r} of plug-in '{plugin}' failed to load: {error}") from None
