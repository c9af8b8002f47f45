"""Constraint checks, Pareto frontiers, serialisation and the seeds/003 problem."""

import time
from dataclasses import replace

import numpy as np
import pytest

from irc.devices import load_device
from irc.planner import (
    OpSpec,
    Plan,
    PlanError,
    SpecError,
    TensorSpec,
    baselines,
    check_plan,
    conv2d_spec,
    format_plan_seed003,
    matmul_spec,
    plan_from_json,
    plan_to_json,
    search,
)

AXES = ("m", "k", "n")


def plan(op, a=(1, 1, 1), b=(1, 1, 1), c=(1, 1, 1)):
    return Plan(AXES, tuple(op), {"C": tuple(c), "A": tuple(a), "B": tuple(b)})


SPEC = matmul_spec(8, 8, 8)


def test_legal_plan_scores():
    # F_op = [2,1,4]: A shared by the 4 n-cores, rotating along k in a ring of 4
    score = check_plan(SPEC, plan((2, 1, 4), a=(1, 4, 1)), "tiny8", "t10")
    assert score.cores == 8
    assert score.sharing_cores == {"C": 1, "A": 4, "B": 2}
    assert score.replicas == {"C": 1, "A": 1, "B": 2}
    assert score.steps == 4 and score.step_tiles == (4, 2, 2)
    assert [(lv.axis, lv.steps, lv.tensors) for lv in score.loop_order] == [("k", 3, ("A",))]
    # A: 4x2 partition + buffer; B: 8x2 (fp16); C: 4x2 accumulating over 4 k-steps in f32
    assert score.memory.partitions == {"C": 32, "A": 16, "B": 32}
    assert score.memory.rotation_buffers == {"C": 0, "A": 16, "B": 0}
    assert score.memory.element_bytes == {"C": 4, "A": 2, "B": 2}
    assert score.cost.shift == pytest.approx(3 * 16 * 0.28)
    assert score.cost.sync == 3 * 236


def test_partial_sums_are_held_in_f32_accumulators():
    """An f16 ``+=`` output holds f32 partial sums exactly when the plan splits a
    reduction axis over cores or steps; a rotating output shifts them at 4 bytes."""
    whole = check_plan(SPEC, plan((2, 1, 4)), "tiny8", "t10")     # k neither split nor stepped
    assert whole.memory.partitions["C"] == 2 * 4 * 2
    split = check_plan(SPEC, plan((2, 2, 2)), "tiny8", "t10")     # k over 2 cores: replicas
    assert split.replicas["C"] == 2 and split.memory.partitions["C"] == 4 * 4 * 4
    # C rotates along m through the 2 cores that share it (k split): 2x8 f32 per shift
    rotating = check_plan(SPEC, plan((1, 2, 1), c=(2, 1, 1)), "tiny8", "t10")
    assert rotating.memory.partitions["C"] == rotating.memory.rotation_buffers["C"] == 4 * 8 * 4
    (level,) = rotating.loop_order
    assert level.tensors == ("C",) and level.bytes_per_step == 4 * 8 * 4
    f32 = check_plan(replace(SPEC, dtype_bytes=4), plan((2, 2, 2)), "tiny8", "t10")
    assert f32.memory.partitions["C"] == 4 * 4 * 4              # f32 outputs are their own accumulators
    maxed = check_plan(replace(SPEC, combiner="max="), plan((2, 2, 2)), "tiny8", "t10")
    assert maxed.memory.partitions["C"] == 4 * 4 * 2            # max commutes with rounding


@pytest.mark.parametrize(
    "bad, message",
    [
        (plan((1, 1, 4), a=(1, 8, 1)), "prod(f_t of A)=8 does not divide the 4 cores sharing A's partition"),
        (plan((2, 1, 3), a=(1, 3, 1), b=(1, 2, 1)), "temporal factors on axis k must divide one another, but A has 3, B has 2"),
        (plan((4, 1, 4)), "plan uses 16 cores, device tiny8 has 8"),
        (plan((1, 1, 2), a=(1, 1, 2)), "f_t of A on axis n is 2, but A is not indexed by n"),
        (plan((9, 1, 1)), "F_op on axis m is 9, more than its extent 8"),
        (plan((1, 1, 1), c=(2, 1, 1)), "prod(f_t of C)=2 does not divide the 1 cores sharing C's partition"),
        (Plan(("m", "n", "k"), (1, 1, 1), {}), "plan axes"),
        (Plan(AXES, (1, 1, 1), {"A": (1, 1, 1), "B": (1, 1, 1)}), "no temporal factors for tensor 'C'"),
        (Plan(AXES, (1, 0, 1), {}), "F_op must be 3 positive integers"),
    ],
)
def test_constraint_failures_name_the_constraint(bad, message):
    with pytest.raises(PlanError) as error:
        check_plan(SPEC, bad, "tiny8", "t10")
    assert message in str(error.value)


def test_temporal_split_finer_than_the_extent():
    spec = matmul_spec(8, 2, 8)
    with pytest.raises(PlanError, match="axis k is split into 4 temporal partitions but has only 2 elements per core"):
        check_plan(spec, plan((1, 1, 4), a=(1, 4, 1)), "tiny8", "t10")


def test_padding_utilisation_and_memory_constraints():
    with pytest.raises(PlanError, match=r"padded volume is 1\.1250x the original, more than .* 1\.1000x"):
        check_plan(SPEC, plan((3, 1, 1)), "tiny8", "t10", max_padding=1.1)
    with pytest.raises(PlanError, match="plan uses 2 cores, fewer than the parallelism constraint's 8"):
        check_plan(SPEC, plan((2, 1, 1)), "tiny8", "t10", min_utilization=1.0)
    small = replace(load_device("tiny8"), sram_bytes=64)
    with pytest.raises(PlanError, match="memory per core is 384 bytes, more than the 64 bytes of SRAM on tiny8"):
        check_plan(SPEC, plan((1, 1, 1)), small, "t10")


def test_divisibility_chain_with_different_paces():
    # T10 Figure 3(b)-style: A rotates 4 times along k while B rotates twice
    spec = matmul_spec(2, 8, 4)
    score = check_plan(spec, plan((2, 1, 4), a=(1, 4, 1), b=(1, 2, 1)), "tiny8", "t10")
    assert score.steps_per_axis == (1, 4, 1)
    levels = [(lv.axis, lv.steps, lv.tensors) for lv in score.loop_order]
    # coarse level moves both tensors (outer), the fine level only A (inner)
    assert levels == [("k", 1, ("A", "B")), ("k", 1, ("A",))]


def test_infeasible_op_reports_least_memory():
    with pytest.raises(PlanError) as error:
        search(matmul_spec(64, 256, 64), "tiny4", "t10", min_utilization=0.0)
    text = str(error.value)
    assert "no plan fits" in text and "4096 bytes of SRAM" in text
    least = int(text.split("needs is ")[1].split(" bytes")[0])
    assert least > 4096


def test_no_admissible_plan_relaxes_the_utilisation_floor():
    # 7 is prime: no padding-free plan uses all 8 cores, so the floor is relaxed
    result = search(matmul_spec(7, 7, 7), "tiny8", "t10", min_utilization=1.0, max_padding=1.0)
    assert result.relaxed_utilization
    assert result.best.cores == 7 and result.best.score.padded_extents == (7, 7, 7)
    strict = search(matmul_spec(8, 8, 8), "tiny8", "t10", min_utilization=1.0, max_padding=1.0)
    assert not strict.relaxed_utilization and strict.best.cores == 8


@pytest.fixture(scope="module")
def seed003_result():
    spec = matmul_spec(32, 5120, 15360)
    started = time.perf_counter()
    result = search(spec, "ipu-mk2", "t10")
    return spec, result, time.perf_counter() - started


def test_pareto_frontier_is_sorted_and_non_dominated(seed003_result):
    _, result, _ = seed003_result
    memory = [p.memory_per_core for p in result.pareto]
    cycles = [p.cycles for p in result.pareto]
    assert memory == sorted(memory) and len(set(memory)) == len(memory)
    assert all(a > b for a, b in zip(cycles, cycles[1:]))
    assert result.pareto[-1] == result.best
    assert all(p.memory_per_core <= 624 * 1024 for p in result.pareto)


def test_seed003_plan_is_legal_fits_and_fast(seed003_result):
    spec, result, seconds = seed003_result
    best = result.best
    score = check_plan(spec, best.unscored(), "ipu-mk2", "t10")
    assert score.cycles == pytest.approx(best.cycles)
    assert score.cores <= 1472
    assert score.memory_per_core <= 624 * 1024
    # a large space, most of it discarded by its bounds before enumeration
    assert result.groups > 10_000
    assert result.groups_expanded < result.groups / 2
    text = format_plan_seed003(spec, best)
    keys = [line.split(" = ")[0] for line in text.splitlines()]
    assert keys == ["F_op", "f_t_A_m", "f_t_A_k", "f_t_B_k", "f_t_B_n", "f_t_C_m", "f_t_C_n"]


def test_seed003_under_its_own_cost_model():
    spec = matmul_spec(32, 5120, 15360)
    result = search(spec, "ipu-mk2", "seed003")
    score = check_plan(spec, result.best.unscored(), "ipu-mk2", "seed003")
    assert score.memory_per_core <= 624 * 1024 and score.cores <= 1472


def test_memory_pressure_makes_the_planner_rotate():
    # the same GEMM on a chip with a quarter of the SRAM must rotate to fit
    spec = matmul_spec(512, 4096, 16384)
    device = replace(load_device("ipu-mk2"), sram_bytes=160 * 1024)
    best = search(spec, device, "t10").best
    assert best.memory_per_core <= 160 * 1024
    assert any(f > 1 for factors in best.temporal_factors.values() for f in factors)


def test_json_round_trip_and_format():
    score_plan = plan((2, 1, 4), a=(1, 4, 1))
    scored = Plan(score_plan.axes, score_plan.op_factors, score_plan.temporal_factors,
                  check_plan(SPEC, score_plan, "tiny8", "t10"))
    text = plan_to_json(scored)
    back = plan_from_json(text)
    assert back == score_plan and back.score is None
    assert '"memory_per_core"' in text
    with pytest.raises(PlanError, match="not a plan JSON"):
        plan_from_json("{}")
    assert format_plan_seed003(SPEC, score_plan) == "\n".join(
        ["F_op = [2, 1, 4]", "f_t_A_m = 1", "f_t_A_k = 4", "f_t_B_k = 1", "f_t_B_n = 1", "f_t_C_m = 1", "f_t_C_n = 1"]
    )


def test_format_other_expressions():
    spec = conv2d_spec(1, 2, 2, 3, 3, 2, 2)
    result = search(spec, "tiny4", "t10", min_utilization=0.0)
    lines = format_plan_seed003(spec, result.best).splitlines()
    assert lines[0].startswith("F_op = [") and lines[1].startswith("f_t_I_b = ")
    assert lines[-1].startswith("f_t_O_w = ")


def test_compound_dim_memory():
    # I[b, c, h+kh, w+kw] with h=4, kh=3 unsplit: the dim spans 4 + 3 - 1 = 6
    spec = conv2d_spec(1, 1, 1, 4, 4, 3, 3)
    axes = spec.axis_names
    ones = tuple(1 for _ in axes)
    score = check_plan(spec, Plan(axes, ones, {"O": ones, "I": ones, "W": ones}), "tiny4", "t10")
    assert score.memory.partitions == {"O": 2 * 16, "I": 2 * 36, "W": 2 * 9}


@pytest.mark.slow
def test_baselines_bracket_the_best_plan():
    spec = matmul_spec(256, 1024, 1024)
    best = search(spec, "ipu-mk2", "t10").best
    base = baselines(spec, "ipu-mk2", "t10")
    assert base.roofline_seconds < best.seconds
    assert base.one_dimensional is not None
    assert sum(f > 1 for f in base.one_dimensional.op_factors) <= 1
    assert all(f == 1 for factors in base.no_rotation.temporal_factors.values() for f in factors)


def test_spec_validation():
    with pytest.raises(SpecError, match="unknown axis"):
        OpSpec((("m", 2),), (TensorSpec("Y", (("q",),)),), (), "unary")
    with pytest.raises(SpecError, match="kind"):
        OpSpec((("m", 2),), (TensorSpec("Y", (("m",),)),), (), "sort")
    with pytest.raises(SpecError, match="indexes the output"):
        OpSpec((("m", 2),), (TensorSpec("Y", (("m",),)),), ("m",), "reduce")


def test_an_operator_without_axes_is_planned_on_one_core():
    """A scalar operator (``Y[] = X[] * 2``: no axes at all) has one plan, on one core; the
    pruned search's tables have zero columns, not zero rows (found by the import fuzzer)."""
    from irc.dialects.te_expr import parse_expression
    from irc.plans.from_te import op_spec_from_expr

    bound = parse_expression("Y[] = X[] * 2").bind([()], ())
    spec = op_spec_from_expr(bound, 4)
    found = search(spec, "tiny4", "t10")
    assert found.best.op_factors == () and found.best.cores == 1
