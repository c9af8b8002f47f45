"""The T10 search constraints shared by the exact checker and the vectorised search.

T10 s4.2 (alignment): prod(f_t of a tensor) divides the number of cores sharing its
sub-tensor, and the temporal factors of tensors sharing an axis divide one another.
T10 s4.3.1 (search constraints): a parallelism constraint (minimum cores used) and a
padding constraint (padded / original volume). Plus the device's core count and SRAM.
"""

from __future__ import annotations

import math

from irc.devices import Device
from irc.plans.spec import OpSpec

# T10 s4.3.1's parallelism constraint as its artifact sets it (IPU_COST_FACTS s4): a plan
# keeps >= 90% of the cores an op could use busy. A heuristic that prunes the search, and
# a costly one for small ops (a 32x128 LayerNorm reduction folded over 43 cores takes 6x
# the time of one on 32): irc's own plans search every core count, and the floor is kept
# for the paper-faithful `t10` baseline.
T10_MIN_UTILIZATION = 0.9
DEFAULT_MIN_UTILIZATION = 0.0
# The artifact also lets the padded volume grow by 1/0.9.
DEFAULT_MAX_PADDING = 1 / 0.9

# float slack when comparing products of ratios against max_padding
PADDING_TOLERANCE = 1e-9


def minimum_cores(spec: OpSpec, device: Device, min_utilization: float) -> int:
    """Fewest cores a plan may use: a fraction of the cores the op could possibly occupy
    (an op with fewer iteration points than cores cannot fill the chip)."""
    usable = min(device.cores, spec.iteration_volume)
    return max(1, math.ceil(min_utilization * usable - 1e-9))


def is_chain(values) -> bool:
    """True when every pair of values divides one another (sorted: each divides the next)."""
    ordered = sorted(values)
    return all(b % a == 0 for a, b in zip(ordered, ordered[1:]))
