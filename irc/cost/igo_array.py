"""An NPU core's systolic array as SCALE-Sim times it, with in-array accumulation
(IGO §2.2, §6.1; SCALE-Sim's compute model). Pure functions; no IR.

A tile GEMM ``A(m x r) · B(r x c) -> O(m x c)`` runs as *folds*, each one R x C block
held in the array. Output-stationary (``os``): a fold is a block of the output tile whose
partial sums stay in the PEs while the r-long reduction streams through, r cycles, plus
``R + C - 2`` to fill and drain the pipeline. Weight-stationary (``ws``): a fold is a
block of the stationary right-hand tile B; the m rows of A stream through, m cycles, plus
``2R + C - 2`` to load the weights, fill and drain. A whole GEMM run this way takes
SCALE-Sim's closed form, ``ceil(M/R) ceil(N/C) (K + R + C - 2)`` (os) or
``ceil(K/R) ceil(N/C) (2R + C + M - 2)`` (ws).

A core's array keeps the fold it ran last: a step whose folds include it runs that fold
first and pays no fill or drain for it (the output block, os, or the weights, ws, are
still in place), then its other folds. So consecutive steps into one single-fold output
tile (os) or over one single-fold weight tile (ws) cost exactly what the whole GEMM
costs; what a tiling adds beyond the closed form are *refills*: a fold reloaded because
another fold or GEMM ran in between (a multi-fold tile split along the reduction, an
order that alternates dX and dW), and partial folds at tile edges that are not the
array's."""

from __future__ import annotations

import math
from dataclasses import dataclass

from irc.devices.npu import gemm_cycles


def fold_overhead(rows: int, cols: int, dataflow: str) -> int:
    """Cycles a fold pays when it is not already in the array (fill and drain; ws also
    the weight load)."""
    return rows + cols - 2 if dataflow == "os" else 2 * rows + cols - 2


@dataclass(frozen=True)
class ArrayRun:
    """What one step cost on its core's array: `cycles`, the folds it ran (`folds`) and
    how many of them had to be loaded (`fresh`: not the fold already in the array)."""

    cycles: int
    folds: int
    fresh: int


def run_step(resident, key, m: int, r: int, c: int, rows: int, cols: int, dataflow: str):
    """Run a step's tile GEMM (m x r) · (r x c) on an array of `rows` x `cols` whose
    resident fold is `resident` ((key, index) or None); `key` names the step's stationary
    tile (its output tile, os; its right-hand tile, ws). Returns the `ArrayRun` and the
    fold left resident."""
    if dataflow == "os":
        folds, stream = math.ceil(m / rows) * math.ceil(c / cols), r
    else:
        folds, stream = math.ceil(r / rows) * math.ceil(c / cols), m
    continuing = resident is not None and resident[0] == key and resident[1] < folds
    fresh = folds - int(continuing)
    cycles = folds * stream + fresh * fold_overhead(rows, cols, dataflow)
    # the resident fold runs first, the others in index order: the last is left in place
    last = folds - 1 if not continuing or resident[1] != folds - 1 or folds == 1 else folds - 2
    return ArrayRun(cycles, folds, fresh), (key, last)


def closed_form(m: int, r: int, c: int, rows: int, cols: int, dataflow: str) -> tuple[int, int]:
    """SCALE-Sim's cycles and folds for a whole GEMM (m x r) · (r x c)."""
    if min(m, r, c) <= 0:
        return 0, 0
    if dataflow == "os":
        folds = math.ceil(m / rows) * math.ceil(c / cols)
    else:
        folds = math.ceil(r / rows) * math.ceil(c / cols)
    return gemm_cycles(m, r, c, rows, cols, dataflow), folds
