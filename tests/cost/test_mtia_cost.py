"""The `mtia` cost model: single events derived by hand from the device file, the
section-4 mapping's terms, and the CostModel protocol for T10 plans on the PE grid."""

import pytest

from irc.cost import CostModelError, get_cost_model, known_cost_models
from irc.cost.mtia import (
    MappingWork,
    MtiaCostModel,
    dpe_cycles,
    mapping_cycles,
    multicast_read_cycles,
    reduction_chain_cycles,
)
from irc.devices import DEVICE_DIR, load_device
from irc.planner import check_plan, matmul_spec
from irc.plans.plan import Plan

MTIA = load_device("mtia-v1")


@pytest.fixture(scope="module")
def no_multicast(tmp_path_factory):
    path = tmp_path_factory.mktemp("dev") / "mtia_no_multicast.toml"
    path.write_text((DEVICE_DIR / "mtia_v1.toml").read_text()
                    .replace('name = "mtia-v1"', 'name = "mtia-nomc"')
                    .replace('multicast = "row-column"', 'multicast = "none"'))
    return load_device(path)


def test_mtia_is_a_registered_cost_model():
    assert "mtia" in known_cost_models()
    assert get_cost_model("mtia").name == "mtia"


def test_dpe_blocks():
    # section 3.1.2: a 32x32x32 INT8 block in 32 cycles; FP16 at 512 MACs/cycle = 64 cycles
    assert dpe_cycles(MTIA, 32, 32, 32, 1) == 32
    assert dpe_cycles(MTIA, 32, 32, 32, 2) == 64
    # operands are padded to whole blocks: 33 rows are two blocks
    assert dpe_cycles(MTIA, 33, 32, 32, 1) == 64
    # section 4's per-PE share of the worked example: 128 x 512 x 128 INT8 = 4*16*4 blocks
    assert dpe_cycles(MTIA, 128, 512, 128, 1) == 256 * 32


def test_one_multicast_read_by_hand():
    # a 64x32 INT8 block of A (2048 B) from SRAM to a row of 2 PEs, 3 hops from the edge:
    # issue 16 + SRAM latency 200 + 3 hops x 2 + 2048 B at the PE link's 64 B/cycle (the
    # SRAM's 1000 B/cycle is not the limit) = 16 + 200 + 6 + 32
    assert multicast_read_cycles(MTIA, 2048, 2, "sram", hops=3) == 254
    # from LPDDR: latency 400, 2048 B / 220 B/cycle = 9.3 < 32
    assert multicast_read_cycles(MTIA, 2048, 8, "dram", hops=3) == 16 + 400 + 6 + 32


def test_multicast_serves_a_group_once(no_multicast):
    # without multicast the 8 PEs' requests are served one by one: 8 x 2048 B at LPDDR's
    # 220 B/cycle = 74.47 cycles, now slower than the PE link
    assert float(multicast_read_cycles(no_multicast, 2048, 8, "dram", hops=3)) == pytest.approx(
        16 + 400 + 6 + 8 * 2048 / 220)
    assert multicast_read_cycles(no_multicast, 2048, 1, "sram", hops=3) == multicast_read_cycles(
        MTIA, 2048, 1, "sram", hops=3)


def test_one_reduction_network_accumulation_by_hand():
    # a 64x64 INT32 output tile (16384 B) passed from one PE to its east neighbour: the
    # first 4 KB accumulator bank crosses the hop (4 cycles + 4096 / 64 B/cycle = 68), the
    # other three banks follow 64 cycles apart: 68 + 3 x 64 = 260
    assert reduction_chain_cycles(MTIA, 16384, 2) == 260
    # along a chain of 4 PEs the first bank crosses 3 hops: 3 x 68 + 192
    assert reduction_chain_cycles(MTIA, 16384, 4) == 396
    assert reduction_chain_cycles(MTIA, 16384, 1) == 0


def _example_work(**changes):
    # section 4's example per PE: m=128, n=128, k=512 INT8 on a 4x4 sub-grid, k split over
    # two PEs per row, A shared by 2 PEs of a row, Bᵀ by the 4 PEs of a column
    fields = dict(batch=1, m=128, n=128, k=512, a_passes=1, b_passes=1, a_group=2, b_group=4, k_chain=2,
                  pes=16, hops=5, a_bytes=1, b_bytes=1, c_bytes=1, homes=("sram", "sram", "sram"))
    fields.update(changes)
    return MappingWork(**fields)


def test_section_4_mapping_terms_by_hand():
    cost = mapping_cycles(MTIA, _example_work())
    assert cost.compute == 8192
    # A read once per PE (128x512 B), multicast to 2 PEs: 8 reads of 64 KB; Bᵀ (128x512 B)
    # to 4 PEs: 4 reads of 64 KB; C: the 8 chain ends write 4 tiles of 64x64 B each
    assert cost.level_bytes["sram"] == 8 * 65536 + 4 * 65536 + 8 * 4 * 4096
    assert cost.memory == pytest.approx(cost.level_bytes["sram"] / 1000)
    # each PE's link: its A and Bᵀ slices and its 4 output tiles at 64 B/cycle
    assert cost.link == (65536 + 65536 + 4 * 4096) / 64
    # between its 4 output tiles the DPE waits while the banks' 64x64 INT32 partial sums
    # leave over the reduction link: 3 x 16384 / 64
    assert cost.reduction == 768
    assert cost.bound == "compute" and cost.body == 8192 + 768
    # the first k step's A and Bᵀ blocks (2 x 2048 B) through the PE's queue at 64 B/cycle,
    # after the command, SRAM's latency and 5 hops
    assert cost.fill == 16 + 200 + 5 * 2 + 4096 / 64
    assert cost.drain == reduction_chain_cycles(MTIA, 16384, 2) + 200 + 4096 / 64
    assert cost.total == cost.fill + cost.body + cost.drain


def test_streaming_a_slice_that_does_not_stay_resident_costs_rereads():
    once = mapping_cycles(MTIA, _example_work())
    twice = mapping_cycles(MTIA, _example_work(b_passes=2))
    assert twice.level_bytes["sram"] - once.level_bytes["sram"] == 4 * 65536


def test_without_multicast_every_pe_reads_for_itself(no_multicast):
    shared = mapping_cycles(MTIA, _example_work())
    alone = mapping_cycles(no_multicast, _example_work())
    assert alone.level_bytes["sram"] == 16 * 65536 * 2 + 8 * 4 * 4096
    assert alone.memory > shared.memory


def test_t10_plans_on_the_pe_grid():
    spec = matmul_spec(512, 1024, 256, dtype_bytes=1)
    plan = Plan(("m", "k", "n"), (8, 2, 4), {"C": (1, 1, 1), "A": (1, 1, 1), "B": (1, 1, 1)})
    score = check_plan(spec, plan, MTIA, "mtia")
    # per PE 64 x 512 x 64: 2 x 16 x 2 blocks of 32 cycles
    assert score.cost.compute == 64 * 32
    # two partial copies of C reduced over the reduction network
    assert score.cost.reduction == pytest.approx(float(reduction_chain_cycles(MTIA, 64 * 64 * 4, 2)))
    in_dram = check_plan(spec, plan, MTIA, MtiaCostModel(("sram", "sram", "dram")))
    assert in_dram.cost.shift > score.cost.shift


def test_the_mtia_model_refuses_other_families():
    with pytest.raises(CostModelError, match="MTIA-family"):
        check_plan(matmul_spec(16, 16, 16), Plan(("m", "k", "n"), (1, 1, 1),
                                                   {"C": (1, 1, 1), "A": (1, 1, 1), "B": (1, 1, 1)}),
                   "tiny4", "mtia")
