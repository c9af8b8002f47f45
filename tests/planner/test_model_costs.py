"""Setup and relayout costs against hand-computed values; idle-plan enumeration; ModelSpec
validation messages (T10 s4.3.2; IPU_COST_FACTS s4-5)."""

import math

import pytest

from irc.devices import load_device
from irc.planner import OpSpec, Plan, TensorSpec, check_plan, matmul_spec
from irc.planner.idle import IdlePlan, active_idle_plan, idle_plans, setup_cycles
from irc.planner.model import ModelOp, ModelSpec, ModelSpecError
from irc.planner.relayout import relayout_cost, relayout_elements, tensor_layout

TINY4 = load_device("tiny4")


def scored(spec, op_factors, temporal, device=TINY4):
    plan = Plan(spec.axis_names, op_factors, temporal)
    return Plan(plan.axes, plan.op_factors, plan.temporal_factors, check_plan(spec, plan, device, "t10"))


def add_spec(m, n, names=("Z", "X", "Y")):
    z, x, y = names
    return OpSpec(
        axes=(("m", m), ("n", n)),
        tensors=(TensorSpec(z, (("m",), ("n",))), TensorSpec(x, (("m",), ("n",))), TensorSpec(y, (("m",), ("n",)))),
        reduction_axes=(),
        kind="elementwise",
    )


MM = matmul_spec(8, 8, 8)       # axes (m, k, n); C[m,n] += A[m,k] * B[k,n]
ONES = (1, 1, 1)


def test_setup_cost_of_gathering_two_slices():
    # F_op m=2, n=2: B[k,n]'s 8x4 partition is shared by the 2 cores along m
    active = scored(MM, (2, 1, 2), {"C": ONES, "A": ONES, "B": ONES})
    assert active.score.sharing_cores["B"] == 2
    idle = IdlePlan((2, 1, 2), {"B": (1, 2, 1)}, {"B": 2 * 4 * 4})   # k split in 2: 16 elements, 32 B
    # w = 2 slices: shift(2 * 32 B) at 0.28 cycles/B + 2 barriers of 118 cycles
    assert setup_cycles(idle, active, TINY4, "t10") == pytest.approx(0.28 * 64 + 118 * 2)
    # seed003 prices bytes at the link rate and no barriers
    assert setup_cycles(idle, active, TINY4, "seed003") == pytest.approx(64 * TINY4.link_cycles_per_byte)


def test_setup_is_free_when_idle_is_active_layout_and_none_when_incompatible():
    active = scored(MM, (2, 1, 2), {"C": ONES, "A": ONES, "B": ONES})
    same = active_idle_plan(MM, ["B"], active)
    assert same.weight_bytes == {"B": 2 * 8 * 4} and setup_cycles(same, active, TINY4) == 0.0
    other_split = IdlePlan((1, 1, 4), {"B": (1, 1, 1)}, {"B": 16})
    assert setup_cycles(other_split, active, TINY4) is None
    rotating = scored(MM, (2, 1, 2), {"C": ONES, "A": ONES, "B": (1, 2, 1)})
    coarser = IdlePlan((2, 1, 2), {"B": (1, 1, 1)}, {"B": 64})      # idle f_t not a multiple of 2
    assert setup_cycles(coarser, rotating, TINY4) is None


def test_idle_plans_refine_the_active_partition():
    active = scored(MM, (2, 1, 2), {"C": ONES, "A": ONES, "B": ONES})
    plans = idle_plans(MM, ["B"], active)
    factors = sorted(p.weight_factors["B"] for p in plans)
    # B shared by 2 cores: split k or n by 2, or not at all
    assert factors == [(1, 1, 1), (1, 1, 2), (1, 2, 1)]
    for plan in plans:
        assert plan.cold_bytes <= active.memory_per_core
        assert setup_cycles(plan, active, TINY4) is not None
    assert min(p.cold_bytes for p in plans) == 32


def test_relayout_of_identical_layout_is_free():
    spec = add_spec(8, 8)
    plan = scored(spec, (4, 1), {"Z": (1, 1), "X": (1, 1), "Y": (1, 1)})
    assert relayout_cost(spec, plan, spec, plan, "X", TINY4) == (0, 0.0)


def test_relayout_into_coarser_replicated_blocks():
    producer = add_spec(8, 8)
    p_plan = scored(producer, (4, 1), {"Z": (1, 1), "X": (1, 1), "Y": (1, 1)})   # Z: 4 row blocks of 2
    c_plan = scored(MM, (2, 1, 2), {"C": ONES, "A": ONES, "B": ONES})          # A: 2 row blocks of 4, 2 copies
    assert tensor_layout(producer, p_plan, "Z").dims == ((4, 2), (1, 8))
    assert tensor_layout(MM, c_plan, "A").dims == ((2, 4), (1, 8))
    assert tensor_layout(MM, c_plan, "A").replicas == 2
    # each of the 4 consumer cores sits on a producer core holding 2 of its 4 rows:
    # it receives 32 - 16 = 16 elements = 32 bytes
    nbytes, cycles = relayout_cost(producer, p_plan, MM, c_plan, "A", TINY4, producer_tensor="Z")
    assert nbytes == 32
    assert cycles == pytest.approx(0.28 * 32 + 2 * 118)


def test_relayout_broadcast_receives_everything():
    producer = add_spec(8, 8)
    p_plan = scored(producer, (2, 1), {"Z": (1, 1), "X": (1, 1), "Y": (1, 1)})   # 2 cores, one copy each
    c_plan = scored(MM, (2, 1, 2), {"C": ONES, "A": ONES, "B": ONES})          # 2 copies of each A block
    nbytes, _ = relayout_cost(producer, p_plan, MM, c_plan, "A", TINY4, producer_tensor="Z")
    assert nbytes == 2 * 32       # one of the two copies lands on a core that holds nothing


def test_relayout_misaligned_or_reshaped_moves_the_whole_partition():
    from irc.planner.relayout import TensorLayout

    assert relayout_elements(TensorLayout(((4, 3), (1, 8)), 1, 24, 2), TensorLayout(((6, 2), (1, 8)), 1, 16, 2)) == 16
    assert relayout_elements(TensorLayout((None,), 1, 10, 2), TensorLayout(((2, 5),), 1, 5, 2)) == 5
    flat = OpSpec(axes=(("i", 64),), tensors=(TensorSpec("F", (("i",),)), TensorSpec("G", (("i",),))),
                  reduction_axes=(), kind="unary")
    p_plan = scored(flat, (4,), {"F": (1,), "G": (1,)})
    c_plan = scored(MM, (4, 1, 1), {"C": ONES, "A": ONES, "B": ONES})
    nbytes, _ = relayout_cost(flat, p_plan, MM, c_plan, "A", TINY4, producer_tensor="F")
    assert nbytes == 2 * 2 * 8    # [64] -> [8, 8] is a reshape: the whole 2x8 partition moves


def op(name, spec, weights=(), **producers):
    return ModelOp(name, spec, tuple(weights), producers)


def test_model_spec_rejects_bad_links_with_clear_messages():
    with pytest.raises(ModelSpecError, match=r"op 1 \(second\): 'A' must be produced by an earlier op \(index 0..0\), got 1"):
        ModelSpec("m", (op("first", MM, ["B"]), op("second", MM, ["B"], A=1)))
    with pytest.raises(ModelSpecError, match=r"reads 'A' with 256 elements \(16, 16\), but op 0 \(first\) produces 64"):
        ModelSpec("m", (op("first", MM, ["B"]), op("second", matmul_spec(16, 16, 8), ["B"], A=0)))
    with pytest.raises(ModelSpecError, match=r"weight 'W' is not an input"):
        ModelSpec("m", (op("first", MM, ["W"]),))
    with pytest.raises(ModelSpecError, match=r"'A' is both a weight and produced by op 0"):
        ModelSpec("m", (op("first", MM, ["B"]), op("second", MM, ["A"], A=0)))


def test_model_weight_bytes():
    model = ModelSpec("m", (op("first", MM, ["B"]), op("second", MM, ["B"], A=0)))
    assert model.weight_bytes() == 2 * 64 * 2
    assert math.isclose(model.weight_bytes() / TINY4.cores, 64)
