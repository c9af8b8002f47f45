"""The vectorised search is exact: it finds the same optimum and the same Pareto frontier
as brute-force enumeration of every plan (small shapes, tiny devices)."""

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from irc.devices import load_device
from irc.planner import OpSpec, PlanError, TensorSpec, conv2d_spec, matmul_spec, search
from irc.cost import get_cost_model
from irc.planner.bounds import cost_bound
from irc.planner.brute_force import brute_force_plans
from irc.planner.enumerate import candidate_set
from irc.planner.vector_score import candidate_memory


def batched_matmul(b, m, k, n):
    return OpSpec(
        axes=(("b", b), ("m", m), ("k", k), ("n", n)),
        tensors=(
            TensorSpec("C", (("b",), ("m",), ("n",))),
            TensorSpec("A", (("b",), ("m",), ("k",))),
            TensorSpec("B", (("b",), ("k",), ("n",))),
        ),
        reduction_axes=("k",),
        kind="matmul",
    )


def row_sum(m, n):
    return OpSpec(
        axes=(("m", m), ("n", n)),
        tensors=(TensorSpec("Y", (("m",),)), TensorSpec("X", (("m",), ("n",)))),
        reduction_axes=("n",),
        kind="reduce",
    )


def add(m, n):
    return OpSpec(
        axes=(("m", m), ("n", n)),
        tensors=(TensorSpec("Z", (("m",), ("n",))), TensorSpec("X", (("m",), ("n",))), TensorSpec("Y", (("n",),))),
        reduction_axes=(),
        kind="elementwise",
    )


def frontier(points):
    """O(n^2) reference: (memory, time) pairs no other pair dominates."""
    points = set(points)
    return sorted(
        p for p in points
        if not any(q != p and q[0] <= p[0] and q[1] <= p[1] for q in points)
    )


def assert_same_optimum(spec, device, cost, min_utilization, max_padding):
    reference = brute_force_plans(spec, device, cost, min_utilization=min_utilization, max_padding=max_padding)
    try:
        result = search(spec, device, cost, min_utilization=min_utilization, max_padding=max_padding)
    except PlanError:
        assert reference == []
        assert brute_force_plans(spec, device, cost, min_utilization=0.0, max_padding=max_padding) == []
        return
    if result.relaxed_utilization:
        # nothing met the utilisation floor: the search retried with any core count
        assert reference == []
        reference = brute_force_plans(spec, device, cost, min_utilization=0.0, max_padding=max_padding)
    assert reference, "search found a plan brute force did not"
    best = min(p.cycles for p in reference)
    assert math.isclose(result.best.cycles, best, rel_tol=1e-9)
    expected = frontier((p.memory_per_core, round(p.cycles, 6)) for p in reference)
    found = [(p.memory_per_core, round(p.cycles, 6)) for p in result.pareto]
    assert found == expected
    # the enumeration holds exactly the plans brute force finds legal (those that fit)
    used_utilization = 0.0 if result.relaxed_utilization else min_utilization
    device = load_device(device)
    space = candidate_set(spec, device, used_utilization, max_padding)
    fitting = candidate_memory(spec, space) <= device.sram_bytes
    enumerated = {
        (tuple(space.op_factors[i].tolist()), tuple(map(tuple, space.temporal_factors[i].tolist())))
        for i in np.flatnonzero(fitting)
    }
    legal = {(p.op_factors, tuple(p.temporal_factors[t.name] for t in spec.tensors)) for p in reference}
    assert enumerated == legal
    assert result.plans_scored <= len(space)


sizes = st.integers(min_value=1, max_value=16)
# tiny chips, some with SRAM so small that only rotating plans fit
devices = st.builds(
    lambda name, sram: replace(load_device(name), sram_bytes=sram) if sram else load_device(name),
    st.sampled_from(["tiny4", "tiny8"]),
    st.sampled_from([None, 96, 200, 512]),
)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    m=sizes, k=sizes, n=sizes,
    device=devices,
    cost=st.sampled_from(["t10", "seed003"]),
    min_utilization=st.sampled_from([0.0, 0.5, 1.0]),
    max_padding=st.sampled_from([1.0, 1.25, 2.0]),
)
def test_matmul_search_matches_brute_force(m, k, n, device, cost, min_utilization, max_padding):
    assert_same_optimum(matmul_spec(m, k, n), device, cost, min_utilization, max_padding)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    shape=st.tuples(st.integers(1, 4), st.integers(1, 6), st.integers(1, 6), st.integers(1, 6)),
    kind=st.sampled_from(["batched", "reduce", "add"]),
    device=devices,
    max_padding=st.sampled_from([1.0, 1.5]),
)
def test_other_ops_match_brute_force(shape, kind, device, max_padding):
    b, m, k, n = shape
    spec = {"batched": lambda: batched_matmul(b, m, k, n), "reduce": lambda: row_sum(m * b, n),
            "add": lambda: add(m, n * k)}[kind]()
    assert_same_optimum(spec, device, "t10", 0.0, max_padding)


def conv(batch, out_channels, in_channels, height, width, kernel_h, kernel_w, stride=1):
    """``O[b,f,h,w] += I[b,c,s*h+r,s*w+q] * W[f,c,r,q]``; a stride-s window lists its
    output axis s times (``irc.plans.from_te``: the contiguous range it covers)."""
    return OpSpec(
        axes=(("b", batch), ("f", out_channels), ("c", in_channels), ("h", height),
              ("w", width), ("r", kernel_h), ("q", kernel_w)),
        tensors=(
            TensorSpec("O", (("b",), ("f",), ("h",), ("w",))),
            TensorSpec("I", (("b",), ("c",), ("h",) * stride + ("r",), ("w",) * stride + ("q",))),
            TensorSpec("W", (("f",), ("c",), ("r",), ("q",))),
        ),
        reduction_axes=("c", "r", "q"),
        kind="conv",
    )


@pytest.mark.parametrize("shape", [(1, 2, 2, 3, 3, 2, 2), (2, 4, 1, 4, 2, 3, 1)])
def test_conv_with_compound_dims_matches_brute_force(shape):
    assert_same_optimum(conv2d_spec(*shape), "tiny4", "t10", 0.0, 1.5)


# 7-axis convolutions (the many-axis searches the bounds exist for): strided and not,
# SRAM so small that only rotating plans fit, both cost models that price convs
@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    shape=st.tuples(st.integers(1, 2), st.integers(1, 4), st.integers(1, 3), st.integers(1, 4),
                    st.integers(1, 3), st.integers(1, 3), st.integers(1, 2)),
    stride=st.sampled_from([1, 2]),
    sram=st.sampled_from([None, 160, 320, 1024]),
    cost=st.sampled_from(["t10", "seed003"]),
    min_utilization=st.sampled_from([0.0, 0.75]),
    max_padding=st.sampled_from([1.0, 1.5]),
)
def test_conv_search_matches_brute_force(shape, stride, sram, cost, min_utilization, max_padding):
    device = replace(load_device("tiny4"), sram_bytes=sram) if sram else load_device("tiny4")
    assert_same_optimum(conv(*shape, stride=stride), device, cost, min_utilization, max_padding)


class UnboundedT10:
    """t10's prices under a class of its own that states no bound: the search must stay
    exact bounded by memory alone."""

    name = "t10-unbounded"

    def __init__(self):
        self._t10 = get_cost_model("t10")

    def compute_cycles(self, device, task):
        return self._t10.compute_cycles(device, task)

    def shift_cycles(self, device, nbytes):
        return self._t10.shift_cycles(device, nbytes)

    def sync_cycles(self, device):
        return self._t10.sync_cycles(device)

    def op_time(self, device, work):
        return self._t10.op_time(device, work)


class OpTimeOverridden(type(get_cost_model("t10"))):
    """A subclass that changes ``op_time`` but inherits t10's bounds, which no longer
    bound it: the search must not use them."""

    name = "t10-cheaper-compute"

    def op_time(self, device, work):
        breakdown = super().op_time(device, work)
        return type(breakdown)(breakdown.compute / 3, breakdown.shift, breakdown.sync, breakdown.reduction)


@pytest.mark.parametrize("spec", [conv(1, 2, 2, 3, 3, 2, 2), conv(2, 3, 1, 2, 3, 2, 1, stride=2),
                                  matmul_spec(16, 64, 16)], ids=["conv", "strided", "matmul"])
@pytest.mark.parametrize("cost", [UnboundedT10(), OpTimeOverridden()], ids=["no-bound", "overridden"])
def test_cost_model_without_valid_bounds_stays_exact(spec, cost):
    assert cost_bound(cost) is None
    device = replace(load_device("tiny4"), sram_bytes=400)
    assert_same_optimum(spec, device, cost, 0.0, 1.5)


@pytest.mark.parametrize("cost", ["t10", "seed003"])
def test_tight_sram_forces_rotation_and_still_matches(cost):
    spec = matmul_spec(16, 64, 16)
    device = replace(load_device("tiny8"), sram_bytes=800)
    assert_same_optimum(spec, device, cost, 0.0, 1.25)
    best = search(spec, device, cost, min_utilization=0.0, max_padding=1.25).best
    assert any(f > 1 for factors in best.temporal_factors.values() for f in factors)
    # without rotation nothing fits
    with pytest.raises(PlanError, match="no plan fits"):
        search(spec, device, cost, min_utilization=0.0, max_padding=1.25, rotation=False)


# the 4 x 4 mesh of tiny16-hbm-mesh, with SRAM small enough that some plans must rotate
mesh_devices = st.builds(
    lambda sram: replace(load_device("tiny16-hbm-mesh"), sram_bytes=sram) if sram else load_device("tiny16-hbm-mesh"),
    st.sampled_from([None, 200, 512]),
)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=sizes, k=sizes, n=sizes, device=mesh_devices, min_utilization=st.sampled_from([0.0, 1.0]))
def test_mesh_search_matches_brute_force(m, k, n, device, min_utilization):
    # on a mesh the search ranks by the all-to-all price, a lower bound of the routed one,
    # and prices on the mesh what that bound leaves: the same frontier as pricing all
    assert_same_optimum(matmul_spec(m, k, n), device, "t10", min_utilization, 2.0)


def test_rings_on_the_mesh_by_hand():
    # C[m,n] += A[m,k] B[k,n], 16 x 64 x 16, A split 4 ways along k and rotating. With
    # F_op = (4, 1, 4) the 16 cores are numbered row-major, row m and column n of the 4 x 4
    # mesh: A's rings (its free axis n) are the mesh's rows. Each of its 3 steps moves a
    # 4 x 16 x 2 B = 128 B partition one hop (every link carries one packet) and the wrap
    # back 3 hops: 0.28 x 128 + 3 cycles per step (all-to-all: 0.28 x 128). With
    # F_op = (2, 1, 8) a ring of 8 takes two rows, its wrap 4 hops: 7 x (0.28 x 128 + 4).
    from irc.plans.evaluate import check_plan
    from irc.plans.plan import Plan

    spec = matmul_spec(16, 64, 16)
    mesh, flat = load_device("tiny16-hbm-mesh"), load_device("tiny16-hbm")
    rows = Plan(("m", "k", "n"), (4, 1, 4), {"C": (1, 1, 1), "A": (1, 4, 1), "B": (1, 1, 1)})
    assert check_plan(spec, rows, mesh, "t10").cost.shift == pytest.approx(3 * (0.28 * 128 + 3))
    assert check_plan(spec, rows, flat, "t10").cost.shift == pytest.approx(3 * 0.28 * 128)
    wide = Plan(("m", "k", "n"), (2, 1, 8), {"C": (1, 1, 1), "A": (1, 8, 1), "B": (1, 1, 1)})
    assert check_plan(spec, wide, mesh, "t10").cost.shift == pytest.approx(7 * (0.28 * 128 + 4))
    # the search's best on the mesh is priced on the mesh, never below the all-to-all best
    best = search(spec, replace(mesh, sram_bytes=400), "t10", min_utilization=0.0).best
    assert best.cycles == check_plan(spec, best, mesh, "t10").cost.total
    assert best.cycles >= search(spec, replace(flat, sram_bytes=400), "t10", min_utilization=0.0).best.cycles
