"""The search's bounds are bounds: no plan goes below the memory or time bound of any of
its step prefixes (``irc.planner.bounds``), and every cost model's refined bound is no
more than its group bound after any further split of a tile (``BoundedCostModel``)."""


import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import pytest

from irc.cost import OpWork, SubTask, get_cost_model
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
            np.where(space.axis_rank[None, :] < depth, steps, 1),
            np.full(len(candidates), depth),
            np.ones(len(candidates)),
        )
        memory, cycles = bounds(prefixes)
        assert (memory <= scores.memory).all(), f"memory bound above a plan at depth {depth}"
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


def least_work(task, steps, out_step=1, shifted=0.0, events=None, out_resident=None, copies=1, cores=4):
    return OpWork(
        subtask=task, steps=steps, shifted_bytes=shifted,
        shift_events=steps - 1 if events is None else events, partial_copies=copies,
        out_step_elems=out_step, out_resident_elems=out_step if out_resident is None else out_resident, cores=cores,
    )


def test_t10_refined_matmul_bound_allows_an_orientation_flip():
    # t10's matmul puts the larger of m, n first: splitting n of 372 x 135 x 382 into 3
    # steps of 128 flips it and computes faster than one step, so one step's compute is
    # no bound for the split plans; the refined bound (the lesser orientation) is
    model = get_cost_model("t10")
    device = load_device("ipu-mk2")

    def task(m, k, n):
        return SubTask("matmul", 2, m * k * n, {"batch": 1, "m": m, "k": k, "n": n})

    whole = model.compute_cycles(device, task(372, 135, 382))
    split = 3 * model.compute_cycles(device, task(372, 135, 128))
    assert split < whole
    # the prefix's least output tiles are those of its most split refinement
    refined = model.refined_time_lower_bound(device, least_work(task(372, 135, 382), 1, out_step=372 * 128))
    assert refined <= model.time_lower_bound(device, least_work(task(372, 135, 128), 3, out_step=372 * 128))


def _split(value, parts):
    return -(-value // parts)


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


def _task(kind, values, dtype_bytes):
    names = ROLES[kind]
    roles = dict(zip(names, values))
    volume = int(np.prod(values[:len(names)]))
    if kind == "reduce":
        roles = {"out": values[0]}
        volume = values[0] * values[1]
    return SubTask(kind, dtype_bytes, volume, roles)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    cost=st.sampled_from(["t10", "seed003", "engdesign"]),
    kind=st.sampled_from(sorted(ROLES)),
    tiles=st.lists(st.integers(1, 600), min_size=5, max_size=5),
    role=st.integers(0, 4),
    parts=st.integers(2, 24),
    slack=st.integers(0, 3),
    steps=st.integers(1, 8),
    dtype_bytes=st.sampled_from([2, 4]),
    out_step=st.integers(1, 5000),
    shifted=st.integers(0, 100_000),
    cores=st.sampled_from([4, 1472, 2944]),
)
def test_refined_bound_is_below_every_split(cost, kind, tiles, role, parts, slack, steps, dtype_bytes,
                                            out_step, shifted, cores):
    """Splitting one role's tile t into ``parts`` steps of any t' >= ceil(t/parts) (the
    output's step tiles too) never goes below the refined bound."""
    model = get_cost_model(cost)
    if kind not in PRICED_KINDS[cost]:
        return
    role = role % len(ROLES[kind])
    split = list(tiles)
    split[role] = _split(tiles[role], parts) + slack
    device = load_device("ipu-mk2")
    least = least_work(_task(kind, tiles, dtype_bytes), steps, out_step, shifted, cores=cores)
    refined = model.refined_time_lower_bound(device, least)
    assert refined <= model.time_lower_bound(device, least) * (1 + 1e-12)
    after = least_work(_task(kind, split, dtype_bytes), steps * parts, _split(out_step, parts), shifted,
                       out_resident=out_step, cores=cores)
    assert refined <= model.time_lower_bound(device, after) * (1 + 1e-12)


@settings(max_examples=300, deadline=None)
@given(
    cost=st.sampled_from(["t10", "seed003"]),
    kind=st.sampled_from(sorted(ROLES)),
    tiles=st.lists(st.integers(1, 600), min_size=5, max_size=5),
    steps=st.integers(1, 8),
    more=st.tuples(st.integers(0, 50_000), st.integers(0, 40), st.integers(0, 7), st.integers(0, 5000)),
    out_step=st.integers(1, 5000),
    cores=st.sampled_from([4, 1472, 2944]),
)
def test_group_bound_is_below_every_plan_of_the_group(cost, kind, tiles, steps, more, out_step, cores):
    """``time_lower_bound`` of a least work is at most ``op_time`` of any work with the
    same sub-task, steps and cores and every other field at least as large."""
    model = get_cost_model(cost)
    if kind not in PRICED_KINDS[cost]:
        return
    task = _task(kind, tiles, 2)
    least = least_work(task, steps, out_step, cores=cores)
    extra_bytes, extra_events, extra_copies, extra_resident = more
    work = least_work(task, steps, out_step, shifted=extra_bytes, events=steps - 1 + extra_events,
                      out_resident=out_step + extra_resident, copies=1 + extra_copies, cores=cores)
    device = load_device("ipu-mk2")
    assert model.time_lower_bound(device, least) <= model.op_time(device, work).total * (1 + 1e-12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pick=st.sampled_from(sorted(SPECS)),
    shape=st.tuples(st.integers(1, 4), st.integers(1, 6), st.integers(1, 6), st.integers(1, 5)),
    device=st.sampled_from(["tiny4", "tiny8", "tiny16"]),
)
def test_carried_groups_are_exactly_those_with_plans(pick, shape, device):
    """A step group holds a plan exactly when owners can carry its steps (``carried``):
    the bounds discard the others unexpanded, losing nothing (those whose last axis in
    the search's order takes more than one step: the search only reaches a group
    through carried prefixes, so the others are caught on the way)."""
    spec, device = SPECS[pick](*shape), load_device(device)
    space = PlanSpace(spec, device, 0.0, 2.0)
    bounds = PrefixBounds(space, device, get_cost_model("t10"))
    candidates = candidate_set(spec, device, 0.0, 2.0)
    with_plans = set(zip(candidates.order[:, 0].tolist(), map(tuple, candidates.temporal_factors.max(axis=1).tolist())))
    for groups in space.groups():
        prefixes = StepPrefixes(groups.plan, groups.steps, np.full(len(groups), len(spec.axes)), np.ones(len(groups)))
        carried = bounds.carried(prefixes)
        memory, cycles = bounds(prefixes)
        last = groups.steps[:, space.axis_order[-1]] > 1
        for g, ok in enumerate(carried.tolist()):
            assert ok == ((int(groups.plan[g]), tuple(groups.steps[g].tolist())) in with_plans)
            assert ok or not last[g] or (memory[g] == np.inf and cycles[g] == np.inf)
