"""Plans on an MTIA device: section 4's mapping space, rotation plans where cheaper, homes."""

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irc.devices import load_device
from irc.planner import PlanError, matmul_spec
from irc.planner.model import ModelOp, ModelSpec
from irc.planner.mtia import mapping_space, place_model, place_operator, plan_model, plan_operator
from irc.plans.spec import OpSpec, TensorSpec

MTIA = load_device("mtia-v1")
SRAM = {"C": "sram", "A": "sram", "B": "sram"}


def _section_4_example():
    spec = matmul_spec(512, 1024, 256, dtype_bytes=1)
    [mapping] = [p for p in mapping_space(spec, MTIA, SRAM, grid=(4, 4))
                 if p.splits == (1, 4, 2, 2) and p.rows_axis == "m" and p.k_along == "cols"
                 and p.a_passes == p.b_passes == 1]
    return mapping


def test_the_section_4_example_is_in_the_mapping_space():
    mapping = _section_4_example()
    # m over the four rows, k over two PEs of a row, n over the two column pairs
    assert mapping.grid == (4, 4)
    assert mapping.per_pe == (1, 128, 128, 512)
    groups = mapping.multicast_groups()
    # "PEs in columns 0 and 2, and PEs in columns 1 and 3 participate in row multicast-read
    # of matrix A. Similarly, all PEs in each column participate in column multicast-read of Bᵀ"
    a_columns = {tuple(sorted({c for _, c in g})) for g in groups["A"]}
    assert a_columns == {(0, 2), (1, 3)}
    assert all(len({r for r, _ in g}) == 1 for g in groups["A"])
    assert sorted(tuple(sorted(g)) for g in groups["B"]) == [
        tuple((r, c) for r in range(4)) for c in range(4)]
    # k chains: the partners of one output block are adjacent in a row (west to east)
    assert mapping.position(2, 1, 0) == (2, 2) and mapping.position(2, 1, 1) == (2, 3)


def test_the_best_plan_is_no_slower_than_either_alternative():
    spec = matmul_spec(512, 1024, 256, dtype_bytes=1)
    plan = plan_operator(spec, MTIA)
    assert plan.mapping is not None and plan.rotation is not None
    assert plan.cycles == min(plan.mapping.cycles, plan.rotation.cycles)
    mapping_only = plan_operator(spec, MTIA, rotation=False)
    assert mapping_only.rotation is None and mapping_only.chosen == "mapping"
    assert plan.cycles <= mapping_only.cycles


def test_rotation_plans_win_where_the_mapping_pads():
    # 128x128x128 FP16: the mapping's 64x64 output tiles fill at most 2x2 x k chains of PEs;
    # T10 spreads the op over all 64 PEs
    plan = plan_operator(matmul_spec(128, 128, 128), MTIA)
    assert plan.chosen == "rotation"
    assert plan.rotation.cycles < plan.mapping.cycles


def test_the_grid_is_the_limit():
    spec = matmul_spec(4096, 4096, 4096)
    for mapping in mapping_space(spec, MTIA, SRAM, grid=(4, 4)):
        assert mapping.pes <= 16


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 700), k=st.integers(1, 3000), n=st.integers(1, 700), b=st.sampled_from([1, 2]))
def test_every_mapping_covers_the_op_in_tiles_of_64_64_32(m, k, n, b):
    spec = matmul_spec(m, k, n, dtype_bytes=b)
    space = mapping_space(spec, MTIA, SRAM)
    assert space, "a single PE streaming everything always fits"
    for mapping in space:
        _, fm, fn, fk = mapping.splits
        _, pm, pn, pk = mapping.per_pe
        assert pm % 64 == 0 and pn % 64 == 0 and pk % 32 == 0
        assert fm * pm >= m and fn * pn >= n and fk * pk >= k
        assert mapping.grid[0] <= 8 and mapping.grid[1] <= 8 and mapping.pes <= 64
        assert mapping.local_bytes <= MTIA.local_bytes
        # the multicast groups of each tensor partition the sub-grid's PEs
        for tensor, groups in mapping.multicast_groups().items():
            pes = [pe for g in groups for pe in g]
            assert len(pes) == len(set(pes)) == fm * fn * fk, tensor
            lines = [{r for r, _ in g} if len({r for r, _ in g}) == 1 else {c for _, c in g} for g in groups]
            assert all(len(line) == 1 for line in lines), "a multicast group is one row or one column"


def test_a_tensor_larger_than_the_sram_lives_in_lpddr():
    # a 16384 x 16384 FP16 weight is 512 MB: more than the 128 MB of SRAM
    spec = matmul_spec(64, 16384, 16384)
    homes = place_operator(spec, MTIA, weights=("B",))
    assert homes == {"C": "sram", "A": "sram", "B": "dram"}
    in_dram = plan_operator(spec, MTIA, homes=homes, rotation=False)
    # priced as if the SRAM held it (a chip of mtia-v1's bandwidths with 1 GiB of SRAM)
    roomy = dataclasses.replace(MTIA, onchip_bytes=1 << 30)
    in_sram = plan_operator(spec, roomy, homes=SRAM, rotation=False)
    with pytest.raises(PlanError, match=r"need 541065216 B of on-chip SRAM \(sram\), more than mtia-v1's 134217728 B"):
        plan_operator(spec, MTIA, homes=SRAM, rotation=False)
    # memory-bound: B's 512 MB at LPDDR's 176 GB/s rather than SRAM's 800 GB/s
    assert in_dram.mapping.cost.bound == "memory"
    assert in_dram.cycles / in_sram.cycles > 3


def test_stream_operators_are_priced_by_bytes():
    spec = OpSpec(axes=(("i", 1 << 20),), tensors=(TensorSpec("Y", (("i",),)), TensorSpec("X", (("i",),))),
                  reduction_axes=(), kind="unary", dtype_bytes=2)
    plan = plan_operator(spec, MTIA, rotation=False)
    # 2 MB read + 2 MB written at 1000 B/cycle
    assert plan.mapping.cost.memory == (1 << 22) / 1000
    assert plan.cycles == plan.mapping.cost.total


def _fc(name, batch, d_in, d_out, producer=None):
    spec = OpSpec(axes=(("b", batch), ("i", d_in), ("o", d_out)),
                  tensors=(TensorSpec("Y", (("b",), ("o",))), TensorSpec("X", (("b",), ("i",))),
                           TensorSpec("W", (("i",), ("o",)))),
                  reduction_axes=("i",), kind="matmul", dtype_bytes=2)
    return ModelOp(name, spec, weights=("W",), producers={} if producer is None else {"X": producer})


def test_a_model_keeps_its_weights_in_sram_until_it_is_full():
    small = ModelSpec("mlp", (_fc("fc0", 64, 512, 512), _fc("fc1", 64, 512, 512, 0)))
    assert set(place_model(small, MTIA).values()) == {"sram"}
    # two 96 MB weights: only one fits in 128 MB
    big = ModelSpec("big", (_fc("fc0", 64, 8192, 6144), _fc("fc1", 64, 6144, 8192, 0)))
    assert sorted(place_model(big, MTIA).values()) == ["dram", "sram"]
    plan = plan_model(small, MTIA)
    assert [name for name, _ in plan.ops] == ["fc0", "fc1"]
    assert math.isclose(plan.seconds, sum(op.seconds for _, op in plan.ops))
