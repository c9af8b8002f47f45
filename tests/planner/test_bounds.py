"""The search's bounds are bounds: no plan goes below the memory or time bound of any of
its step prefixes (``irc.planner.bounds``), and every cost model's refined bound is no
more than its group bound after any further split of a tile (``BoundedCostModel``)."""


import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from irc.cost import SubTask, get_cost_model
from irc.devices import load_device
from irc.planner import OpSpec, TensorSpec, matmul_spec
from irc.planner.bounds import PrefixBounds
from irc.planner.enumerate import PlanSpace, StepPrefixes, candidate_set
from irc.planner.vector_score import score_candidates

from tests.planner.test_search_exact import add, batched_matmul, conv, row_sum


def pool(c, h, w, r):
    return OpSpec(
        axes=(("c", c), ("h", h), ("w", w), ("r", r)),
        tensors=(TensorSpec("Y", (("c",), ("h",), ("w",))), TensorSpec("X", (("c",), ("h", "r"), ("w",)))),
        reduction_axes=("r",),
        kind="pool",
    )


SPECS = {
    "matmul": lambda a, b, c, d: matmul_spec(a * b, c, d),
    "batched": lambda a, b, c, d: batched_matmul(a, b, c, d),
    "conv": lambda a, b, c, d: conv(1, a, b, c, d, 2, 2),
    "strided": lambda a, b, c, d: conv(a % 2 + 1, b, 2, c, d, 3, 1, stride=2),
    "reduce": lambda a, b, c, d: row_sum(a * b, c * d),
    "add": lambda a, b, c, d: add(a * b, c * d),
    "pool": lambda a, b, c, d: pool(a, b, c, d),
}
PRICED = {"t10": list(SPECS), "seed003": ["matmul", "batched", "conv", "strided"], "engdesign": ["matmul", "batched"]}


def assert_bounds_hold(spec, device, cost, min_utilization=0.0):
    space = PlanSpace(spec, device, min_utilization, 2.0)
    candidates = candidate_set(spec, device, min_utilization, 2.0)
    scores = score_candidates(spec, candidates, device, cost)
    bounds = PrefixBounds(space, device, cost)
    steps = candidates.temporal_factors.max(axis=1)
    n_axes = len(spec.axes)
    for depth in range(n_axes + 1):
        prefixes = StepPrefixes(
            candidates.order[:, 0],
            np.where(np.arange(n_axes)[None, :] < depth, steps, 1),
            np.full(len(candidates), depth),
            np.ones(len(candidates)),
        )
        memory = bounds.memory(prefixes)
        assert (memory <= scores.memory).all(), f"memory bound above a plan at depth {depth}"
        cycles = bounds.time(prefixes)
        assert (cycles <= scores.cycles * (1 + 1e-12)).all(), f"time bound above a plan at depth {depth}"
    return bounds


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cost=st.sampled_from(sorted(PRICED)),
    pick=st.integers(0, 6),
    shape=st.tuples(st.integers(1, 4), st.integers(1, 6), st.integers(1, 6), st.integers(1, 5)),
    device=st.sampled_from(["tiny4", "tiny8"]),
)
def test_prefix_bounds_never_exceed_a_plan(cost, pick, shape, device):
    kinds = PRICED[cost]
    spec = SPECS[kinds[pick % len(kinds)]](*shape)
    bounds = assert_bounds_hold(spec, load_device(device), get_cost_model(cost))
    assert bounds.group_bound is not None and bounds.prefix_bound is not None


def test_t10_refined_matmul_bound_allows_an_orientation_flip():
    # t10's matmul puts the larger of m, n first: splitting n of 372 x 135 x 382 into 3
    # steps of 128 flips it and computes faster than one step, so one step's compute is
    # no bound for the split plans; the refined bound (the lesser orientation) is
    model = get_cost_model("t10")
    device = load_device("ipu-mk2")

    def task(m, k, n):
        return SubTask("matmul", 2, m * k * n, {"batch": 1, "m": m, "k": k, "n": n})

    whole = model.time_lower_bound(device, task(372, 135, 382), 1)
    split = model.time_lower_bound(device, task(372, 135, 128), 3)
    assert split < whole
    assert model.refined_time_lower_bound(device, task(372, 135, 382), 1) <= split


def _split(value, parts):
    return -(-value // parts)


@settings(max_examples=300, deadline=None)
@given(
    cost=st.sampled_from(["t10", "seed003", "engdesign"]),
    kind=st.sampled_from(["matmul", "conv", "elementwise", "unary", "reduce", "gather", "pool", "other"]),
    tiles=st.lists(st.integers(1, 600), min_size=5, max_size=5),
    role=st.integers(0, 4),
    parts=st.integers(2, 24),
    slack=st.integers(0, 3),
    steps=st.integers(1, 8),
    dtype_bytes=st.sampled_from([2, 4]),
)
def test_refined_bound_is_below_every_split(cost, kind, tiles, role, parts, slack, steps, dtype_bytes):
    """Splitting one role's tile t into ``parts`` steps of any t' >= ceil(t/parts) never
    goes below the refined bound."""
    model = get_cost_model(cost)
    if kind not in PRICED_KINDS[cost]:
        return
    names = ROLES[kind]
    role = role % len(names)
    split = list(tiles)
    split[role] = _split(tiles[role], parts) + slack
    device = load_device("ipu-mk2")

    def task(values):
        roles = dict(zip(names, values))
        volume = int(np.prod(values[:len(names)]))
        if kind == "reduce":
            roles = {"out": values[0]}
            volume = values[0] * values[1]
        return SubTask(kind, dtype_bytes, volume, roles)

    refined = model.refined_time_lower_bound(device, task(tiles), steps)
    exact = model.time_lower_bound(device, task(tiles), steps)
    assert refined <= exact * (1 + 1e-12)
    after = model.time_lower_bound(device, task(split), steps * parts)
    assert refined <= after * (1 + 1e-12)


ROLES = {
    "matmul": ["batch", "m", "k", "n"],
    "conv": ["batch", "in_channels", "out_channels", "spatial", "window"],
    "pool": ["channels", "spatial", "window"],
    "gather": ["index", "leading"],
    "reduce": ["out", "rows"],
    "elementwise": ["a", "b", "c"],
    "unary": ["a", "b"],
    "other": ["a", "b"],
}
PRICED_KINDS = {"t10": set(ROLES), "seed003": {"matmul", "conv"}, "engdesign": {"matmul"}}
