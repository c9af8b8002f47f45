"""An out-of-tree irc plug-in: one pass, exported as an xDSL `Universe`."""

from xdsl.universe import Universe


def _annotate_points():
    from irc_plugin_example.annotate_points import AnnotateIterationPoints

    return AnnotateIterationPoints


UNIVERSE = Universe(all_passes={"example-annotate-points": _annotate_points})
