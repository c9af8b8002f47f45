"""Where each core's loop digits start, and the check that every ring's partitions meet.

Placement (T10 s4.4). Each level ``l`` has a per-core start digit ``o_l(c)``. Cores that
share a sub-tensor of ``v`` differ only along the axes that do not index ``v`` (its
*free* axes); numbering them row-major gives ``phi_v(c)``, rings are consecutive groups of
``R_v = prod f_t[v]`` and ``q_v = phi_v mod R_v`` is the position in the ring, written in
the mixed radix of ``v``'s levels. ``o_l = sum over tensors u of level l of digit_l(q_u)
mod trips_l``. Within a ring of ``v`` the other tensors' terms are constant whenever their
free axes are disjoint from ``v``'s (true for any two-input operator), so the ring's
cores hold distinct partitions, and at every step core ``c`` holds exactly the partitions
its sub-task reads: they meet. ``build_shift_kernel`` verifies this bijection for every
ring and raises ``AlignError`` naming the axis and the factors when it fails.
"""

from __future__ import annotations

import numpy as np

from irc.schedule.geometry import AlignError, ShiftKernel


def initial_placement(kernel: ShiftKernel) -> np.ndarray:
    """(levels, cores) start digit of every level on every core (module docstring)."""
    if not kernel.levels:
        return np.zeros((0, kernel.cores), dtype=np.int64)
    return np.stack([np.broadcast_to(np.asarray(v, dtype=np.int64), (kernel.cores,))
                     for v in kernel.start_digits()]).astype(np.int64)


def check_alignment(kernel: ShiftKernel) -> None:
    """Every ring's cores hold distinct partitions (so each step's partitions meet)."""
    for tensor in kernel.tensors.values():
        if not tensor.levels:
            continue
        keys = kernel._ring_keys(tensor, kernel.start)
        if len(np.unique(keys)) == kernel.cores:
            continue
        free = {a for a in kernel.axes if not kernel.spec.tensor(tensor.name).indexed_by(a)}
        for l in tensor.levels:
            level = kernel.levels[l]
            d = kernel.axis_index(level.axis)
            for other in level.tensors:
                if other == tensor.name:
                    continue
                shared = free & {a for a in kernel.axes if not kernel.spec.tensor(other).indexed_by(a)}
                if shared:
                    raise AlignError(
                        f"cannot align the rotations on axis {level.axis}: {tensor.name} (f_t="
                        f"{tensor.temporal[d]}) and {other} (f_t={kernel.tensors[other].temporal[d]}) "
                        f"are both shared across axis {', '.join(sorted(shared))}, so no initial "
                        f"placement makes their partitions meet on every core"
                    )
        raise AlignError(
            f"cannot align the rotations of {tensor.name} (f_t={list(tensor.temporal)} on "
            f"{list(kernel.axes)}): two cores of one ring would hold the same partition"
        )



__all__ = ["check_alignment", "initial_placement"]
