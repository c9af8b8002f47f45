"""The scratchpad model of IGO's backward pass (irc.cost.igo): SCALE-Sim's compute
cycles to the cycle, DRAM traffic per tensor derived by hand for two small layers,
Algorithm 1, and the order and partition choices against exhaustive evaluation."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irc.cost.igo import (
    BASELINES,
    FUSED_ORDERS,
    ORDERS,
    SCHEMES,
    Layer,
    ScratchpadError,
    Tiling,
    operator_starts,
    plan_transfers,
    schedule,
)
from irc.planner.igo import best_order, best_partition, evaluate, paper_order
from irc.cost import get_cost_model, known_cost_models
from irc.cost.igo import IgoCostModel
from irc.cost.model import CostModelError
from irc.devices import load_device
from irc.devices.npu import NpuDevice, gemm_cycles


def test_scale_sim_compute_cycles():
    # output-stationary: ceil(M/R) ceil(N/C) (K+R+C-2); weight-stationary: ceil(K/R) ceil(N/C) (2R+C+M-2)
    assert gemm_cycles(100, 64, 50, 32, 32, "os") == 4 * 2 * (64 + 32 + 32 - 2)
    assert gemm_cycles(100, 64, 50, 32, 32, "ws") == 2 * 2 * (2 * 32 + 32 + 100 - 2)
    assert gemm_cycles(128, 128, 128, 128, 128, "os") == 382
    assert gemm_cycles(45, 45, 45, 45, 45, "ws") == 45 * 4 - 2
    assert load_device("npu-edge").gemm_cycles(90, 10, 46) == 2 * 2 * (10 + 88)


def test_npu_devices_are_table_3():
    edge, server = load_device("npu-edge"), load_device("npu-server")
    assert (edge.pe_rows, edge.pe_cols, edge.spm_bytes, edge.dram_bytes_per_s, edge.clock_hz) == (45, 45, 1 << 20, 22e9, 1e9)
    quad = server.with_cores(4)
    assert (quad.pe_rows, quad.spm_bytes, quad.dram_bytes_per_s, quad.clock_hz) == (128, 4 * 8 << 20, 600e9, 1.05e9)
    assert server.core_counts == (1, 2, 4, 8) and edge.dataflow == server.dataflow == "os"
    with pytest.raises(ValueError, match="comes with 1, 2, 4, 8 cores, not 3"):
        server.with_cores(3)


def _device(spm_bytes: int) -> NpuDevice:
    return NpuDevice("hand", "", 1, (1,), 2, 2, spm_bytes, 1e9, 1e9)


LAYER_A = Layer(M=4, K=2, N=2, element_bytes=1)
"""2 x 1 x 1 tiles of 2x2 bytes: dY0, dY1, W, X0, X1, dX0, dX1, dW, 4 bytes each."""


def _traffic(order: str, capacity: int, baseline: str = "shared"):
    rounds = schedule(LAYER_A, Tiling(2, 2, 2), order, baseline=baseline)
    read, written = {}, {}
    flush = operator_starts(rounds, order, baseline)
    for tr in plan_transfers(rounds, LAYER_A, Tiling(2, 2, 2), capacity, flush_before=flush):
        table = read if tr.kind == "load" else written
        table[tr.tile[0]] = table.get(tr.tile[0], 0) + tr.nbytes
    return read, written


def test_hand_traffic_baseline_reads_dy_twice():
    # 12 bytes resident (3 tiles), LRU. dx0: load dY0, W, write dX0. dx1: W hits, load dY1,
    # evict dY0, write dX1. dw0: load X0, reload dY0, evict dY1. dw1: load X1, reload dY1,
    # write dW: dY is read twice.
    read, written = _traffic("baseline", 12)
    assert read == {"dY": 16, "W": 4, "X": 8}
    assert written == {"dX": 8, "dW": 4}


def test_pinned_dy_reads_each_dy_tile_once_where_it_fits():
    """``dy_once="pinned"``: the same steps, each dY tile kept from its first use to its
    last, every byte paid. The separate baseline with 16 bytes resident keeps dY0 and dY1
    across its two operators (W goes instead): dY read once; with 12 (3 tiles) the two
    dY tiles, W and dX1's output do not fit, and pinned dY leaves no room."""
    tiling = Tiling(2, 2, 2)
    pinned = evaluate(LAYER_A, _device(32), "baseline", tiling=tiling, baseline="separate", dy_once="pinned")
    assert pinned.read == {"dY": 8, "W": 4, "X": 8} and pinned.written == {"dX": 8, "dW": 4}
    rounds = schedule(LAYER_A, tiling, "baseline")
    loads = [tr.tile for tr in plan_transfers(rounds, LAYER_A, tiling, 16, flush_before={2}, pin_dy=True)
             if tr.kind == "load"]
    assert sorted(t for t in loads if t[0] == "dY") == [("dY", 0, 0), ("dY", 1, 0)]
    with pytest.raises(ScratchpadError, match="needs 16 bytes of scratchpad but 12"):
        evaluate(LAYER_A, _device(24), "baseline", tiling=tiling, baseline="separate", dy_once="pinned")
    # a fused order reads dY once anyway: pinning changes nothing
    for order in FUSED_ORDERS:
        assert evaluate(LAYER_A, _device(24), order, tiling=tiling, dy_once="pinned").as_dict() == \
            evaluate(LAYER_A, _device(24), order, tiling=tiling).as_dict(), order


def test_hand_traffic_interleave_reads_dy_once_but_spills_dw():
    # dx0: load dY0, W, write dX0. dw0: dY0 hits, load X0, evict W (LRU) for dW.
    # dx1: load dY1, reload W, spill the dW partial (write 4) for dX1, write dX1.
    # dw1: load X1, dY1 hits, read dW back (4), write dW.
    read, written = _traffic("interleave", 12)
    assert read == {"dY": 8, "W": 8, "X": 8, "dW": 4}
    assert written == {"dX": 8, "dW": 8}


def test_hand_traffic_with_room_for_everything():
    # 16 bytes: the shared baseline keeps both dY tiles until dW: every tensor moves once.
    for order in ORDERS:
        read, written = _traffic(order, 16)
        assert read == {"dY": 8, "W": 4, "X": 8} and written == {"dX": 8, "dW": 4}, order


def test_hand_traffic_separate_baseline_reads_dy_twice_with_room():
    # The paper's baseline: dX and dW are two operators (§3.2). 16 bytes hold all four
    # tiles, yet: dx0 loads dY0, W; dx1 loads dY1 (W hits, then is done); the dX
    # operator ends and its tiles (dY0, dY1) are dropped; dw0 loads X0 and dY0 again,
    # dw1 X1 and dY1. dY is read twice; the fused orders read it once (above).
    rounds = schedule(LAYER_A, Tiling(2, 2, 2), "baseline")
    assert operator_starts(rounds, "baseline") == {2}
    assert operator_starts(rounds, "baseline", "shared") == operator_starts(rounds, "dx-major") == set()
    for capacity in (12, 16):
        read, written = _traffic("baseline", capacity, "separate")
        assert read == {"dY": 16, "W": 4, "X": 8} and written == {"dX": 8, "dW": 4}, capacity
    device = _device(32)  # 16 resident
    separate, shared, paper = (evaluate(LAYER_A, device, "baseline", tiling=Tiling(2, 2, 2), baseline=b)
                               for b in BASELINES)
    assert separate.read["dY"] == 16 and shared.read["dY"] == 8
    # the paper's baseline (§4.2): dY0 is reused across the operators, 4 bytes (dY1) having
    # been loaded since its last use, under the 16 bytes the resident half holds
    assert paper.read["dY"] == 8 and paper.read["W"] == 4 and paper.read["X"] == 8
    assert evaluate(LAYER_A, device, "baseline", tiling=Tiling(2, 2, 2)).read == separate.read  # the default
    assert separate.compute_cycles == shared.compute_cycles and separate.cycles > shared.cycles


def test_paper_baseline_reuses_dy_only_within_half_the_spm():
    """IGO §4.2: "duplicated memory traffic arises when the distance between the dX_i and
    dW_i calculations exceeds the number of tiled computations that can be loaded in half
    of the SPM". M=6, K=2, N=2 in 2x2 tiles of one byte (dY0-2, W, X0-2, dX0-2, dW: 4
    bytes each), 16 bytes resident. The dX operator loads dY0, W, dY1, dY2 (16 bytes;
    dY0 is evicted for dX2), then W is done: dY1 and dY2 are resident when it ends. The
    dW operator loads X0, dY0 (evicting dY1), X1, dY1, and reaches dY2 with 16 bytes
    loaded since its last use: not under 16, so the paper's baseline reads it again,
    where one LRU walk (``shared``) still had it: dY moves 24 bytes, not 20; the two
    separate operators of ``separate`` drop every tile between them: 24 as well."""
    device = _device(32)
    layer = Layer(M=6, K=2, N=2, element_bytes=1)
    reads = {b: dict(evaluate(layer, device, "baseline", tiling=Tiling(2, 2, 2), baseline=b).read)
             for b in BASELINES}
    assert reads == {"separate": {"dY": 24, "W": 4, "X": 12}, "shared": {"dY": 20, "W": 4, "X": 12},
                     "paper": {"dY": 24, "W": 4, "X": 12}}


LAYER_B = Layer(M=4, K=4, N=2, element_bytes=1)
"""The second hand layer: 2 x 1 x 2 tiles of 2x2 bytes (dY0, dY1; W0, W1; X00, X01,
X10, X11; dX00, dX01, dX10, dX11; dW0, dW1; 4 bytes each) on two cores, partitioned
ifmap-sharing (§5: K split, core p takes k = p, both read the shared dY; nothing is
summed across cores). Each round is one step per core, 5 distinct tiles (20 bytes)."""


def _traffic_b(order: str, capacity: int, baseline: str = "shared"):
    rounds = schedule(LAYER_B, Tiling(2, 2, 2), order, "ifmap-sharing", 2, cores=2, baseline=baseline)
    read, written = {}, {}
    flush = operator_starts(rounds, order, baseline)
    for tr in plan_transfers(rounds, LAYER_B, Tiling(2, 2, 2), capacity, flush_before=flush):
        table = read if tr.kind == "load" else written
        table[tr.tile[0]] = table.get(tr.tile[0], 0) + tr.nbytes
    return rounds, read, written


def test_hand_traffic_two_cores_baseline_reads_dy_twice():
    # 20 bytes resident (5 tiles), LRU. r0 dx(i0, k0|k1): load dY0, W0, W1; write dX00, dX01.
    # r1 dx(i1): W0, W1 hit, load dY1, evict dY0 for dX11; write dX10, dX11; W0, W1 done.
    # r2 dw(i0): load X00, X01, reload dY0, evict dY1 for dW1. r3 dw(i1): load X10, X11,
    # reload dY1; write dW0, dW1. dY is read twice.
    rounds, read, written = _traffic_b("baseline", 20)
    assert [[(s.kind, s.i, s.k) for s in r] for r in rounds] == [
        [("dx", 0, 0), ("dx", 0, 1)], [("dx", 1, 0), ("dx", 1, 1)],
        [("dw", 0, 0), ("dw", 0, 1)], [("dw", 1, 0), ("dw", 1, 1)]]
    assert read == {"dY": 16, "W": 8, "X": 16}
    assert written == {"dX": 16, "dW": 8}


def test_hand_traffic_two_cores_interleave_reads_dy_once():
    # r0 dx(i0): load dY0, W0, W1; write dX00, dX01. r1 dw(i0): load X00, dY0 hits, evict
    # W0 for dW0 and W1 for X01... (LRU): dY0 is used up. r2 dx(i1): load dY1, reload W0,
    # W1, spilling the dW0 and dW1 partials for dX10, dX11; write them. r3 dw(i1): load X10,
    # X11, dY1 hits, read dW0, dW1 back; write dW0, dW1. dY moves once, W twice, dW spills.
    _, read, written = _traffic_b("interleave", 20)
    assert read == {"dY": 8, "W": 16, "X": 16, "dW": 8}
    assert written == {"dX": 16, "dW": 16}


def test_hand_traffic_two_cores_with_room():
    # 28 bytes: the fused orders' r1 (dw(i0)) adds X00, X01, dW0, dW1 to dY0, W0, W1 (28);
    # W and the dW partials then stay until r2 and r3. Every tensor moves once.
    for order in ORDERS:
        _, read, written = _traffic_b(order, 28)
        assert read == {"dY": 8, "W": 8, "X": 16} and written == {"dX": 16, "dW": 8}, order


def test_hand_traffic_two_cores_separate_baseline():
    # 28 bytes: r0 dx(i0) and r1 dx(i1) as in the shared baseline (dY0, W0, W1, then dY1;
    # W0, W1 done after r1); the dX operator ends: dY0 and dY1 are dropped; r2 dw(i0)
    # loads X00, X01 and dY0 again, r3 dw(i1) X10, X11 and dY1. dY is read twice.
    rounds, read, written = _traffic_b("baseline", 28, "separate")
    assert [[(s.kind, s.i, s.k) for s in r] for r in rounds] == [
        [("dx", 0, 0), ("dx", 0, 1)], [("dx", 1, 0), ("dx", 1, 1)],
        [("dw", 0, 0), ("dw", 0, 1)], [("dw", 1, 0), ("dw", 1, 1)]]
    assert read == {"dY": 16, "W": 8, "X": 16} and written == {"dX": 16, "dW": 8}


LAYER_C = Layer(M=2, K=2, N=4, element_bytes=1)
"""dY0, dY1 (j = 0, 1); W0, W1; X; dX (summed over j); dW0, dW1: 2x2 tiles of 4 bytes."""


def _traffic_c(order: str, baseline: str):
    rounds = schedule(LAYER_C, Tiling(2, 2, 2), order, "dy-sharing", 2, baseline=baseline)
    read, written = {}, {}
    flush = operator_starts(rounds, order, baseline)
    for tr in plan_transfers(rounds, LAYER_C, Tiling(2, 2, 2), 40, flush_before=flush):
        table = read if tr.kind == "load" else written
        table[tr.tile[0]] = table.get(tr.tile[0], 0) + tr.nbytes
    return rounds, flush, read, written


def test_hand_traffic_separate_baseline_in_parts_over_time():
    # dY-sharing on one core, two parts over time (j = 0, then j = 1), 40 bytes resident
    # (room for all): each part is a dX and a dW operator, so r1, r2 and r3 each start
    # one. r0 dx(j0): load dY0, W0; dX stays open (summed over the parts). r1 dw(j0):
    # dY0 dropped, loaded again with X; dW0 written. r2 dx(j1): X dropped; load dY1, W1;
    # dX done, written. r3 dw(j1): dY1 dropped, loaded again with X. dY and X are read
    # twice; the dX partial survives the boundaries. Shared, every tensor moves once.
    rounds, flush, read, written = _traffic_c("baseline", "separate")
    assert [[(s.kind, s.j) for s in r] for r in rounds] == [[("dx", 0)], [("dw", 0)], [("dx", 1)], [("dw", 1)]]
    assert flush == {1, 2, 3}
    assert read == {"dY": 16, "W": 8, "X": 8} and written == {"dX": 4, "dW": 8}
    _, flush, read, written = _traffic_c("baseline", "shared")
    assert flush == set() and read == {"dY": 8, "W": 8, "X": 4} and written == {"dX": 4, "dW": 8}


def test_separate_baseline_waits_for_every_core_before_dw():
    # 3 M tiles on 2 cores, batch split (weight-sharing): core 0 takes i0, i1, core 1 i2.
    # Shared, core 1 goes on to dw(i2) while core 0 still computes dx(i1); separate, the
    # dW operator starts on both cores once the dX operator is done on both.
    layer = Layer(M=6, K=2, N=2, element_bytes=1)
    kinds = {b: [[(s.kind, s.i) for s in r] for r in schedule(layer, Tiling(2, 2, 2), "baseline", "weight-sharing",
                                                              2, cores=2, baseline=b)] for b in BASELINES}
    assert kinds["shared"] == [[("dx", 0), ("dx", 2)], [("dx", 1), ("dw", 2)], [("dw", 0)], [("dw", 1)]]
    assert kinds["separate"] == [[("dx", 0), ("dx", 2)], [("dx", 1)], [("dw", 0), ("dw", 2)], [("dw", 1)]]
    with pytest.raises(ValueError, match="unknown baseline 'fused'"):
        schedule(layer, Tiling(2, 2, 2), "baseline", baseline="fused")


def test_hand_traffic_single_operators():
    # forward Y = X·W (for i, j, k): y0 loads X0, W, writes Y0; y1 loads X1 (W hits),
    # writes Y1. dw-only (the baseline's dW operator): X0, dY0, then X1, dY1 into dW.
    # 2x2x2 tiles on a 2x2 array: 1 fold of K + R + C - 2 = 4 cycles a step.
    device = _device(24)
    forward = evaluate(LAYER_A, device, "forward", tiling=Tiling(2, 2, 2))
    assert dict(forward.read) == {"X": 8, "W": 4} and dict(forward.written) == {"Y": 8}
    assert forward.compute_cycles == 2 * 4 and forward.steps == 2
    lone = evaluate(LAYER_A, device, "dw-only", tiling=Tiling(2, 2, 2))
    assert dict(lone.read) == {"X": 8, "dY": 8} and dict(lone.written) == {"dW": 4}
    # on two cores, data parallel: each core its M tile, Y not summed, dW summed once
    two = NpuDevice("hand2", "", 2, (1, 2), 2, 2, 24, 1e9, 1e9)
    assert dict(evaluate(LAYER_A, two, "forward", tiling=Tiling(2, 2, 2)).written) == {"Y": 8}
    lone2 = evaluate(LAYER_A, two, "dw-only", tiling=Tiling(2, 2, 2))
    assert dict(lone2.written) == {"dW": 4} and lone2.compute_cycles == 4
    with pytest.raises(ValueError, match="unknown order 'backward'"):
        evaluate(LAYER_A, device, "backward", tiling=Tiling(2, 2, 2))


def test_scratchpad_too_small_names_bytes():
    with pytest.raises(ScratchpadError, match="one step needs 12 bytes of scratchpad but 8 are available"):
        evaluate(LAYER_A, _device(16), "baseline", tiling=Tiling(2, 2, 2))


def test_paper_algorithm_1_as_printed():
    assert paper_order(Layer(M=100, K=300, N=200)) == "interleave"   # 300/100 < 4
    assert paper_order(Layer(M=100, K=800, N=200)) == "dw-major"     # K > N and K > M
    assert paper_order(Layer(M=800, K=100, N=200)) == "dx-major"
    assert paper_order(Layer(M=100, K=400, N=800)) == "dx-major"     # K > M but not K > N


layers = st.builds(
    Layer, M=st.integers(1, 80), K=st.integers(1, 80), N=st.integers(1, 80), element_bytes=st.sampled_from([2, 4]),
)


@settings(max_examples=15)
@given(layer=layers, spm=st.sampled_from([16384, 32768, 131072]))
def test_cost_model_invariants(layer, spm):
    """Every order computes every tile once: never less compute than SCALE-Sim's for the
    GEMMs whole (one core: the rounds' compute is the array's), the same final writes;
    time is never below compute nor below the DRAM time."""
    device = NpuDevice("small", "", 1, (1,), 8, 8, spm, 8e9, 1e9)
    tiling = Tiling(min(layer.M, 16), min(layer.K, 16), min(layer.N, 16))
    costs = {o: evaluate(layer, device, o, tiling=tiling) for o in ORDERS}
    for order, cost in costs.items():
        assert cost.compute_cycles == cost.array_cycles >= cost.closed_form_cycles, order
        assert cost.refills >= 0 and cost.refill_cycles >= 0
        assert cost.cycles >= cost.compute_cycles
        assert cost.cycles >= device.dram_cycles(cost.dram_bytes) - 1e-6
        sizes = {"dY": layer.M * layer.N, "X": layer.M * layer.K, "W": layer.K * layer.N}
        for tensor, elements in sizes.items():  # every input tile is loaded at least once
            assert cost.read[tensor] >= elements * layer.element_bytes, (order, tensor)
        assert cost.written["dX"] >= layer.M * layer.K * layer.element_bytes
        assert cost.written["dW"] >= layer.K * layer.N * layer.element_bytes


@settings(max_examples=10)
@given(layer=layers)
def test_best_order_and_partition_are_exhaustive_minima(layer):
    device = NpuDevice("small", "", 1, (1, 2, 4), 8, 8, 16384, 8e9, 1e9)
    tiling = Tiling(min(layer.M, 16), min(layer.K, 16), min(layer.N, 16))
    order, costs = best_order(layer, device, tiling)
    assert costs[order].cycles == min(evaluate(layer, device, o, tiling=tiling).cycles for o in FUSED_ORDERS)
    for cores in (1, 4):
        dev = device.with_cores(cores)
        (scheme, parts), table = best_partition(layer, dev, order, tiling)
        every = [evaluate(layer, dev, order, s, p, tiling).cycles
                 for s in SCHEMES for p in ((1, 2, 4) if cores == 1 else (cores,))]
        assert table[(scheme, parts)].cycles == min(every)


def test_cost_keeps_a_pair_unfused_where_every_fused_order_is_slower():
    """A 1024x128x1024 layer on npu-server: the fused orders alternate dX and dW GEMMs on
    the 128x128 array and pay refills (33,208 cycles at best) that its dY traffic does not
    repay; the unfused pair takes 29,488, and igo-fuse's cost choice keeps it (issue 25)."""
    from irc.lowering.igo_fuse import choose_order

    layer, device = Layer(1024, 128, 1024), load_device("npu-server")
    order, costs = best_order(layer, device, baseline="paper")
    assert order == "baseline"
    assert costs["baseline"].cycles < min(costs[o].cycles for o in FUSED_ORDERS)
    assert choose_order(layer, "cost", device, baseline="paper") == "sequential"
    assert best_order(layer, device)[0] in FUSED_ORDERS   # without a baseline: the fused orders only


def test_dw_first_orders_overlap_the_next_dy_tile_with_the_dx_steps():
    """The batch-8 NCF layer on npu-server (issue 25, the bandwidth settings' loss): every
    fused order moves the same bytes, reading dY once, but the dX-first walks load each dY
    tile in the round before a short dW step and stall on it (3,014 cycles, more than the
    unfused 2,642); running each dY tile's dW steps first loads dY with X and lets the
    next tile's DMA overlap the longer dX steps (2,154)."""
    layer, device = Layer(8, 256, 256), load_device("npu-server")
    costs = {o: evaluate(layer, device, o) for o in ("baseline", "dx-major", "dx-major-dw-first", "dw-major-dw-first")}
    assert costs["dx-major"].dram_bytes == costs["dx-major-dw-first"].dram_bytes
    assert costs["dx-major-dw-first"].read["dY"] == layer.M * layer.N * layer.element_bytes
    assert round(costs["dx-major"].cycles) == 3014 and round(costs["baseline"].cycles) == 2642
    assert round(costs["dx-major-dw-first"].cycles) == round(costs["dw-major-dw-first"].cycles) == 2154


def test_igo_is_a_registered_cost_model_that_prices_a_given_schedule():
    """Issue 26 item 4: ``igo`` is looked up like every cost model; it prices a given
    tiling (the planner, irc.planner.igo, searches them) and refuses T10 plans by name."""
    model = get_cost_model("igo")
    assert isinstance(model, IgoCostModel) and "igo" in known_cost_models()
    layer, device = Layer(64, 32, 48), load_device("npu-edge")
    searched = evaluate(layer, device, "dx-major")
    given = model.price(layer, device, "dx-major", searched.tiling)
    assert (given.cycles, given.dram_bytes) == (searched.cycles, searched.dram_bytes)
    with pytest.raises(ValueError, match="searches one"):
        model.price(layer, device, "dx-major", None)
    with pytest.raises(CostModelError, match="cost model 'igo' prices NPU tile schedules"):
        model.op_time(load_device("ipu-mk2"), None)
