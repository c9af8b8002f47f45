"""matplotlib for the tools' plots, an optional extra (``pip install 'irc[plot]'``):
whether it is installed, checked before any work starts, and its pyplot on the Agg
backend (the tools write image files; no display is needed)."""

from __future__ import annotations


def has_matplotlib() -> bool:
    """Whether matplotlib can be imported."""
    try:
        import matplotlib  # noqa: F401  (an optional extra: only a plot needs it)
    except ImportError:
        return False
    return True


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend."""
    import matplotlib  # an optional extra: only a plot needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # once the Agg backend is chosen

    return plt
