"""An out-of-tree irc plug-in: a pass, a cost model, a device and a gradient rule, exported as an
`irc.plugins.IrcUniverse` (a plain xDSL `Universe` works too, for dialects and passes)."""

from pathlib import Path

from irc.plugins import IrcUniverse


def _annotate_points():
    from irc_plugin_example.annotate_points import AnnotateIterationPoints

    return AnnotateIterationPoints


def _fast_exchange():
    from irc_plugin_example.fast_exchange import FastExchangeCostModel

    return FastExchangeCostModel


def _softsign():
    from irc_plugin_example.softsign_gradient import SOFTSIGN

    return SOFTSIGN


def _example_chip() -> Path:
    return Path(__file__).parent / "example_chip.toml"


UNIVERSE = IrcUniverse(
    all_passes={"example-annotate-points": _annotate_points},
    cost_models={"example-fast-exchange": _fast_exchange},
    devices={"example-chip": _example_chip},
    gradient_rules={"example-softsign": _softsign},
)
