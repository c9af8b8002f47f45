"""A layer's gradient pair under one compute-shift plan (irc.planner.igo_pair): the
exact search against plain enumeration, the vectorised scores against the exact
checker, what the dY ring saves, the constraints over both products."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from irc.cost.model import CostModelError
from irc.devices import load_device
from irc.dialects.te_expr import parse_expression
from irc.planner import Plan, PlanError, check_plan, search
from irc.planner.enumerate import PlanSpace
from irc.plans.from_te import op_spec_from_expr
from irc.planner.igo_pair import (
    brute_force_pair_plans,
    compare_pair,
    pair_frontier,
    score_pair_candidates,
    search_pair,
)
from irc.plans.pair import check_pair_plan, pair_spec


def gemm_pair(m: int, k: int, n: int, element_bytes: int = 2):
    """dX[m,k] += G[m,n] * W[k,n] and dW[k,n] += G[m,n] * X[m,k]."""
    dx = op_spec_from_expr(parse_expression("DX[m,k] += G[m,n] * W[k,n]").bind([(m, n), (k, n)], (m, k)), element_bytes)
    dw = op_spec_from_expr(parse_expression("DW[k,n] += G[m,n] * X[m,k]").bind([(m, n), (m, k)], (k, n)), element_bytes)
    return pair_spec(dx, dw, "G")


def plan(op_factors, **temporal):
    names = ("DX", "DW", "G", "W", "X")
    return Plan(("m", "k", "n"), tuple(op_factors), {n: tuple(temporal.get(n, (1, 1, 1))) for n in names})


@pytest.mark.slow
@pytest.mark.parametrize("device,shape", [("tiny4", (8, 6, 4)), ("tiny4", (4, 12, 6)), ("tiny8", (6, 4, 8))])
def test_search_equals_plain_enumeration(device, shape):
    """The exact search's plan is the fastest legal plan of every plan enumerated by
    plain loops (ties: the least memory)."""
    pair = gemm_pair(*shape)
    every = brute_force_pair_plans(pair, device, "t10")
    best = min(every, key=lambda p: (p.cycles, p.score.memory_per_core))
    found, stats = search_pair(pair, device, "t10", min_utilization=0.0, max_padding=1e9)
    assert found.cycles == pytest.approx(best.cycles, rel=1e-12)
    assert found.score.memory_per_core == best.score.memory_per_core
    assert stats["plans_scored"] <= len(every) * 4  # bounded, not more than the space


@settings(max_examples=15)
@given(st.integers(1, 12), st.integers(1, 12), st.integers(1, 12), st.sampled_from(["tiny4", "tiny8"]),
       st.sampled_from([2, 4]))
def test_vectorised_scores_equal_the_checker(m, k, n, device, element_bytes):
    """`score_pair_candidates` gives every candidate of the space the memory and cycles
    `check_pair_plan` gives it."""
    pair = gemm_pair(m, k, n, element_bytes)
    chip = load_device(device)
    from irc.cost import get_cost_model

    cost = get_cost_model("t10")
    space = PlanSpace(pair.union_spec(), chip, 0.0, 1e9)
    names = [t.name for t in pair.tensors]
    for groups in space.groups():
        for candidates in space.expand(groups):
            memory, cycles = score_pair_candidates(pair, candidates, chip, cost)
            for i in range(0, len(candidates), max(1, len(candidates) // 20)):
                stated = Plan(pair.axis_names, tuple(int(f) for f in candidates.op_factors[i]),
                              {name: tuple(int(f) for f in candidates.temporal_factors[i][v])
                               for v, name in enumerate(names)})
                try:
                    score = check_pair_plan(pair, stated, chip, cost)
                except PlanError as error:
                    assert "memory per core" in str(error) and memory[i] > chip.sram_bytes
                    continue
                assert memory[i] == score.memory_per_core
                assert cycles[i] == pytest.approx(score.cycles, rel=1e-12)


def test_one_ring_for_dy():
    """Only dY rotating (around the k cores sharing it): the fused plan shifts what each
    product alone would, once, so it costs the two products' plans under the same F_op
    minus the dW product's shifts and barriers: dY's second ring."""
    pair = gemm_pair(64, 64, 64)
    fused = plan((2, 4, 2), G=(1, 1, 4))
    score = check_pair_plan(pair, fused, "tiny16", "t10")
    dx = check_plan(pair.dx, pair.component_plan(fused, "dx"), "tiny16", "t10")
    dw = check_plan(pair.dw, pair.component_plan(fused, "dw"), "tiny16", "t10")
    assert dx.cost.shift > 0 and dw.cost.shift == dx.cost.shift and dw.cost.sync == dx.cost.sync
    assert score.cycles == pytest.approx(dx.cycles + dw.cycles - dw.cost.shift - dw.cost.sync, rel=1e-12)
    # dY is held once: its partition and receive buffer are counted once
    assert score.memory.partitions["G"] == dx.memory.partitions["G"]
    assert score.memory_per_core == (dx.memory_per_core + dw.memory_per_core - dw.memory.partitions["G"]
                                     - dw.memory.rotation_buffers["G"])


def test_constraints_span_both_products():
    """W (read by the dX product) and dW (written by the dW product) both index k and n:
    in one loop nest their paces must divide one another."""
    pair = gemm_pair(64, 64, 64)
    with pytest.raises(PlanError, match="temporal factors on axis n must divide one another .both products"):
        check_pair_plan(pair, plan((6, 1, 1), W=(1, 1, 2), DW=(1, 1, 3)), "tiny16", "t10")
    with pytest.raises(PlanError, match="does not divide the 2 cores sharing G"):
        check_pair_plan(pair, plan((2, 2, 2), G=(1, 1, 4)), "tiny16", "t10")
    with pytest.raises(PlanError, match="G is not indexed by k"):
        check_pair_plan(pair, plan((2, 2, 2), G=(1, 2, 1)), "tiny16", "t10")


def test_a_model_pricing_whole_operators_is_refused():
    with pytest.raises(CostModelError, match="cannot price a fused gradient pair"):
        check_pair_plan(gemm_pair(16, 16, 16), plan((1, 1, 1)), "tiny16", "engdesign")


def test_comparison_with_two_independent_searches():
    """The unfused pair is each product's own fastest plan; the fused plan pays its
    inputs' arrival once for dY, the unfused pair twice (module docstring, item 5)."""
    pair = gemm_pair(256, 128, 64)
    found = compare_pair(pair, "tiny16", "t10")
    assert found.dx.cycles == search(pair.dx, "tiny16", "t10").best.cycles
    assert found.dw.cycles == search(pair.dw, "tiny16", "t10").best.cycles
    assert found.unfused_kernel_cycles == found.dx.cycles + found.dw.cycles
    dy_twice = sum(p.score.memory.partitions["G"] for p in (found.dx, found.dw))
    assert dy_twice > found.fused.score.memory.partitions["G"]
    assert found.fused_kernel_cycles >= found.unfused_kernel_cycles - 1e-9  # one F_op for both: never faster alone
    assert found.fuse and found.gain > 1
    # the cut-off search (what rtensor-partition runs) finds the same plan
    quick = compare_pair(pair, "tiny16", "t10", exact=False)
    assert quick.fused.plan == found.fused.plan


def test_no_fused_plan_fits():
    """Five tensors resident at once need more memory than either product alone: a
    pair whose products fit apart may have no fused plan."""
    found = compare_pair(gemm_pair(256, 256, 256, 4), "tiny16", "t10")
    assert found.fused is None and "no fused plan fits" in found.fused_error
    assert not found.fuse and math.isfinite(found.unfused_cycles)
    assert np.isinf(found.fused_cycles)


def test_the_fused_plan_runs_one_dy_ring_at_its_price():
    """What the planner prices is what runs: the fused plan's kernel (one loop nest, both
    products per step) takes on the interpreter exactly the fused price, and shifts dY as
    often as the dX product alone would; the same plan run as its two products' kernels
    shifts it twice as often and costs the dW product's shifts and barriers more."""
    from irc.lowering.shift_ir import kernel_module
    from irc.runner import run
    from irc.schedule.kernel import build_shift_kernel
    from irc.schedule.pair_kernel import build_fused_kernel

    m = k = n = 64
    bound_dx = parse_expression("DX[m,k] += G[m,n] * W[k,n]").bind([(m, n), (k, n)], (m, k))
    bound_dw = parse_expression("DW[k,n] += G[m,n] * X[m,k]").bind([(m, n), (m, k)], (k, n))
    pair = gemm_pair(m, k, n)
    fused = plan((2, 4, 2), G=(1, 1, 4))
    score = check_pair_plan(pair, fused, "tiny16", "t10")
    rng = np.random.default_rng(0)
    data = {name: rng.standard_normal((64, 64)).astype(np.float16) for name in ("G", "W", "X")}

    def execute(kernel):
        module = kernel_module(kernel, {name: np.float16 for name in kernel.operand_names})
        return run(module, {f"arg{i}": data[name] for i, name in enumerate(kernel.operand_names)})[1]

    one = execute(build_fused_kernel([bound_dx, bound_dw], fused, "tiny16", "t10"))
    assert one.kernel_cycles == pytest.approx(score.cycles, rel=1e-12)
    apart = [execute(build_shift_kernel(bound, component.in_axis_order(tuple(a for a, _ in bound.extents)),
                                        "tiny16", "t10", np.float16))
             for bound, component in ((bound_dx, pair.component_plan(fused, "dx")),
                                      (bound_dw, pair.component_plan(fused, "dw")))]
    shifts = lambda report: sum(1 for e in report.events if e.category == "shift")  # noqa: E731
    assert shifts(apart[0]) == shifts(apart[1]) == shifts(one) == 3
    assert sum(r.kernel_cycles for r in apart) - one.kernel_cycles == pytest.approx(
        apart[1].cycles["shift"] + apart[1].cycles["sync"], rel=1e-12)


def pareto_points(plans):
    """The (memory, cycles) Pareto frontier of scored plans, memory ascending: a plan is
    on it when it is faster than every plan needing no more memory (equal times, within
    float rounding, are one point: the least memory's)."""
    found, fastest = [], math.inf
    for memory, cycles in sorted((p.score.memory_per_core, p.cycles) for p in plans):
        if cycles < fastest * (1 - 1e-9):
            found.append((memory, cycles))
            fastest = cycles
    return found


@pytest.mark.slow
@settings(max_examples=8, deadline=None)
@example(6, 4, 8, "tiny8", 2)   # a frontier of six plans
@given(st.integers(1, 10), st.integers(1, 10), st.integers(1, 10), st.sampled_from(["tiny4", "tiny8"]),
       st.sampled_from([2, 4]))
def test_pair_frontier_equals_plain_enumeration(m, k, n, device, element_bytes):
    """`pair_frontier` is exact: its (memory, cycles) points are the Pareto frontier of
    every legal fused plan plain loops enumerate, its last plan is `search_pair`'s, and
    each plan is scored as `check_pair_plan` scores it."""
    pair = gemm_pair(m, k, n, element_bytes)
    every = brute_force_pair_plans(pair, device, "t10")
    frontier, _ = pair_frontier(pair, device, "t10", min_utilization=0.0, max_padding=1e9)
    expected = pareto_points(every)
    assert [p.score.memory_per_core for p in frontier] == [memory for memory, _ in expected]
    assert [p.cycles for p in frontier] == pytest.approx([cycles for _, cycles in expected], rel=1e-12)
    best, _ = search_pair(pair, device, "t10", min_utilization=0.0, max_padding=1e9)
    assert frontier[-1].cycles == pytest.approx(best.cycles, rel=1e-12)
    assert frontier[-1].score.memory_per_core == best.score.memory_per_core
    for plan in frontier:
        assert check_pair_plan(pair, plan, device, "t10").cycles == plan.cycles


def test_pair_frontier_under_a_binding_sram():
    """On a chip whose SRAM leaves out the fastest plans, the frontier is still every
    Pareto point that fits (plain enumeration drops what does not fit), and a pair
    with no fitting plan is an error with the least memory a plan needs."""
    from dataclasses import replace

    pair = gemm_pair(8, 12, 8, 4)
    unbounded = pareto_points(brute_force_pair_plans(pair, "tiny4", "t10"))
    small = replace(load_device("tiny4"), sram_bytes=unbounded[-1][0] - 1)   # the fastest plan does not fit
    every = brute_force_pair_plans(pair, small, "t10")
    frontier, _ = pair_frontier(pair, small, "t10", min_utilization=0.0, max_padding=1e9)
    assert 0 < len(pareto_points(every)) < len(unbounded)
    assert [(p.score.memory_per_core, pytest.approx(p.cycles, rel=1e-12)) for p in frontier] == pareto_points(every)
    tiny = replace(small, sram_bytes=min(memory for memory, _ in unbounded) - 1)
    with pytest.raises(PlanError, match="no fused plan fits: the least memory per core a scored plan needs is"):
        pair_frontier(pair, tiny, "t10", min_utilization=0.0, max_padding=1e9)
