"""Cost models by name: ``get_cost_model("t10")``."""

from __future__ import annotations

from irc.cost.model import CostModel, CostModelError
from irc.cost.seed003 import Seed003CostModel
from irc.cost.t10 import T10CostModel

_MODELS: dict[str, type] = {
    T10CostModel.name: T10CostModel,
    Seed003CostModel.name: Seed003CostModel,
}


def known_cost_models() -> list[str]:
    return sorted(_MODELS)


def get_cost_model(name: str | CostModel) -> CostModel:
    """A cost model by name; a ``CostModel`` instance is returned unchanged."""
    if not isinstance(name, str):
        return name
    try:
        return _MODELS[name]()
    except KeyError:
        raise CostModelError(
            f"unknown cost model {name!r}; known cost models: {', '.join(known_cost_models())}"
        ) from None
