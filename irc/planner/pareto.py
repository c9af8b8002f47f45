"""Pareto frontier of (memory per core, time) (T10 s4.3.1).

A plan is kept when no other plan is at least as good on both axes and strictly better on
one. The frontier is returned sorted by memory ascending, hence time strictly descending.
"""

from __future__ import annotations

import numpy as np


def pareto_indices(memory: np.ndarray, time: np.ndarray) -> np.ndarray:
    """Indices of the non-dominated points, by memory ascending (ties: first index)."""
    if len(memory) == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((np.arange(len(memory)), time, memory))
    sorted_time = time[order]
    best_before = np.concatenate([[np.inf], np.minimum.accumulate(sorted_time)[:-1]])
    keep = sorted_time < best_before
    return order[keep]
