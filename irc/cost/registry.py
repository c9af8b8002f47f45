"""Cost models by name: ``get_cost_model("t10")``. irc's own (``irc.plugins.IRC_UNIVERSE``)
and the plug-ins' (an ``IrcUniverse``'s ``cost_models``) are registered the same way."""

from __future__ import annotations

from irc.cost.model import CostModel, CostModelError
from irc.plugins import cost_models

DEFAULT_COST_MODEL = "t10"
"""The cost model a plan is priced with when none is named (the T10 artifact's IPU costs)."""


def known_cost_models() -> list[str]:
    """Every registered cost model by name: irc's, then the plug-ins'."""
    models = cost_models()
    return sorted(n for n, (owner, _) in models.items() if owner == "irc") + sorted(
        n for n, (owner, _) in models.items() if owner != "irc")


def get_cost_model(name: str | CostModel) -> CostModel:
    """A cost model by name (irc's, or a plug-in's); a ``CostModel`` instance is returned
    unchanged."""
    if not isinstance(name, str):
        return name
    found = cost_models().get(name)
    if found is None:
        raise CostModelError(
            f"unknown cost model {name!r}; known cost models: {', '.join(known_cost_models())}"
        ) from None
    owner, factory = found
    try:
        return factory()()
    except Exception as error:  # a plug-in's fault, reported as such
        if owner == "irc":
            raise
        raise CostModelError(f"cost model {name!r} of plug-in '{owner}' failed to load: {error}") from None
