"""Preloads paced to a share of their busiest link (issue 24 item 2: ELK's artifact's NoC
load threshold θ, ``irc.devices.topology.paced_preload``): a hand-built case where pacing
wins, by hand-derived cycles; ELK-Dyn and ELK-Full search the share and still dominate
Static and Basic with link contention in play."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from irc.devices.topology import paced_preload, preload_yield
from irc.planner.elk import DesignSearch, ElkDecision
from irc.planner.preload import PreloadOp, timeline_latency
from irc.planner.preload_designs import overlap_bound

ORDERED = ("full", "dyn", "static", "basic")


def test_paced_preload_keeps_its_link_time():
    assert paced_preload(100.0, 1.0, 0.5) == (200.0, 0.5)
    assert paced_preload(100.0, 0.4, 0.5) == (100.0, 0.4)    # below the share: as it was
    cycles, pressure = paced_preload(70.0, 0.9, 0.7)
    assert cycles * pressure == pytest.approx(70.0 * 0.9) and pressure == 0.7


def _ops() -> list[PreloadOp]:
    """A (100 cycles, 20 of them shifts), B (100 cycles of compute), C (10 cycles) whose
    weights' preload is all link: 150 cycles at the whole of its busiest link."""
    a = PreloadOp.simple("A", [(10.0, 100.0)], [(0.0, 0.0)], [0.0], transfer_cycles=[20.0])
    b = PreloadOp.simple("B", [(10.0, 100.0)], [(0.0, 0.0)], [0.0])
    c = PreloadOp.simple("C", [(10.0, 10.0)], [(10.0, 0.0)], [150.0], hbm_bytes=100.0, load_pressure=[1.0])
    return [a, b, c]


def test_pacing_a_preload_beats_running_it_unpaced_by_hand():
    """C's preload is longer than B: to hide it, it must run beside A too. Unpaced from the
    start it takes all of the link for 150 cycles: A's 20 cycles of shifts wait it out
    (A ends at 170, B 270, C 280); issued once A is done it ends at 250 and C at 260, the
    best unpaced schedule. Paced to 0.7 of the link it lasts 150 / 0.7 = 214.29 cycles:
    A's window of 100 has the 20 its shifts need and the preload's 70, A keeps its 100, B
    ends at 200 and C, once the load is in at 214.29, at 224.29. (At 0.9, A's window is
    10 cycles of link short and the preload leaves it 0.1 of the link: 70 more again; at
    0.5 the load ends at 300.)"""
    order, execs, transfers = [0, 1, 2], [100.0, 100.0, 10.0], [20.0, 0.0, 0.0]

    def latency(share, frontier):
        cycles, pressure = paced_preload(150.0, 1.0, share)
        return timeline_latency(3, order, frontier, execs, [0.0, 0.0, cycles], transfers, [0.0, 0.0, pressure])

    early, after_a = [3, 3, 3], [2, 3, 3]   # C's load (position 2) waits for nothing, or for A
    assert latency(1.0, early) == pytest.approx(280.0)
    assert latency(1.0, after_a) == pytest.approx(260.0)
    assert latency(0.7, early) == pytest.approx(150.0 / 0.7 + 10.0)
    assert latency(0.9, early) == pytest.approx(280.0)
    assert latency(0.5, early) == pytest.approx(310.0)
    # ELK-Dyn tries the shares and keeps 0.7; unpaced only, its best is 260
    search = DesignSearch(_ops(), capacity=100.0)
    assert search.shares() == [1.0, 0.9, 0.7, 0.5]
    plan, value = search.result("dyn")[:2]
    assert value == pytest.approx(224.2857142857) and search.result("dyn")[7] == 0.7
    assert plan.load_cycles[2] == pytest.approx(150.0 / 0.7) and plan.load_pressure[2] == pytest.approx(0.7)
    assert DesignSearch(_ops(), 100.0, link_shares=()).result("dyn")[1] == pytest.approx(260.0)
    # ELK-Full also lets Dyn's plan at each share yield the link (delay_comp=False): unpaced,
    # C's load yields A its 20 cycles of shifts and ends at 170, B at 200, C at 210
    full = search.result("full")
    assert full[1] == pytest.approx(210.0) and full[7] == 1.0 and full[0].yields


def test_an_op_paces_each_of_its_loads():
    """Pacing an op paces its weights' load in every preload state and each input load on
    its own (the device program preloads them separately), then sums them back."""
    op = PreloadOp.simple("X", [(10.0, 5.0), (20.0, 4.0)], [(5.0, 0.0), (8.0, 0.0)], [40.0, 60.0],
                          load_pressure=[0.4, 0.9], input_loads=[10.0, 20.0], input_pressure=[0.8, 0.3])
    paced = op.paced(0.5)
    np.testing.assert_allclose(paced.load_cycles, [40.0, 108.0])
    np.testing.assert_allclose(paced.load_pressure, [0.4, 0.5])
    np.testing.assert_allclose(paced.input_loads, [16.0, 20.0])
    np.testing.assert_allclose(paced.input_pressure, [0.5, 0.3])
    assert paced.link_share == 0.5 and op.most_pressure() == 0.9
    assert op.paced(1.0) is op
    with pytest.raises(ValueError, match="paced already"):
        paced.paced(0.7)


def _contended_ops(seed: int, per_layer: int, layers: int, cycles_per_byte: float) -> list[PreloadOp]:
    """Identical layers of random ops whose shifts share the link with loads of random
    link shares (up to all of it)."""
    rng = np.random.default_rng(seed)
    layer = []
    for i in range(per_layer):
        sizes = np.sort(rng.integers(5, 40, size=3))[::-1]
        exec_plans = [(float(s), float(400 / s + rng.integers(0, 5))) for s in sizes]
        shifts = [float(rng.uniform(0, 1)) * cycles for _, cycles in exec_plans]
        hbm = float(rng.integers(0, 400))
        preloads = [(hbm / 8, 0.0), (hbm / 32, float(rng.integers(1, 10)))]
        loads = [hbm * cycles_per_byte + float(rng.integers(0, 3)), hbm * cycles_per_byte]
        layer.append((f"op{i}", exec_plans, preloads, loads, hbm, shifts, rng.uniform(0, 1, size=2)))
    return [PreloadOp.simple(f"l{k}.{name}", e, p, loads, hbm, signature=name, layer=k, transfer_cycles=shifts,
                             load_pressure=pressure)
            for k in range(layers) for name, e, p, loads, hbm, shifts, pressure in layer]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), per_layer=st.integers(2, 4), layers=st.integers(1, 3),
       capacity=st.sampled_from([48.0, 96.0, 160.0]), cycles_per_byte=st.sampled_from([0.05, 0.25, 1.0]))
def test_designs_dominate_with_paced_preloads(seed, per_layer, layers, capacity, cycles_per_byte):
    ops = _contended_ops(seed, per_layer, layers, cycles_per_byte)
    if max(op.min_exec() for op in ops) > capacity:
        return
    search = DesignSearch(ops, capacity, max_orders=4)
    latency = {design: search.result(design)[1] for design in ORDERED}
    for stronger, weaker in zip(ORDERED, ORDERED[1:]):
        assert latency[stronger] <= latency[weaker] * (1 + 1e-9), (stronger, weaker, latency)
    assert min(latency.values()) >= overlap_bound(ops, cycles_per_byte) * (1 - 1e-9)
    # the searched shares include unpaced: never worse than Dyn without them
    unpaced = DesignSearch(ops, capacity, max_orders=4, link_shares=())
    assert latency["dyn"] <= unpaced.result("dyn")[1] * (1 + 1e-9)


def test_pacing_paces_each_preload_and_execute_state_pairs_own_read():
    """An op whose weights' read differs by execute state (``pair_loads``: a padded idle
    slice reads its padding) paces every pair's load, as the chip paces the one it issues."""
    op = PreloadOp.simple("C", [(10.0, 10.0), (20.0, 8.0)], [(10.0, 0.0)], [150.0], hbm_bytes=100.0,
                          load_pressure=[1.0], pair_loads=np.array([[150.0, 160.0]]),
                          pair_pressure=np.array([[1.0, 0.6]]))
    paced = op.paced(0.7)
    assert paced.load_time(0, 0) == pytest.approx(150.0 / 0.7)
    assert paced.load_time(0, 1) == pytest.approx(160.0)          # 0.6 of the link: under the cap
    assert paced.load_share(0, 0) == pytest.approx(0.7)
    assert op.most_pressure() == pytest.approx(1.0)


def _yield_ops() -> list[PreloadOp]:
    """A (100 cycles, 80 of them shifts), B (100 cycles of compute), C (10 cycles) whose
    weights' preload takes 150 cycles at half of its busiest link."""
    a = PreloadOp.simple("A", [(10.0, 100.0)], [(0.0, 0.0)], [0.0], transfer_cycles=[80.0])
    b = PreloadOp.simple("B", [(10.0, 100.0)], [(0.0, 0.0)], [0.0])
    c = PreloadOp.simple("C", [(10.0, 10.0)], [(10.0, 0.0)], [150.0], hbm_bytes=100.0, load_pressure=[0.5])
    return [a, b, c]


def test_preloads_yielding_beat_operators_waiting_by_hand():
    """ELK's artifact's delay_comp=False (``preload_yield``). C's load, issued at 0, puts
    0.5 x 100 = 50 cycles of link time into A's window beside A's 80 of shifts: 30 too
    many. Delaying compute, A waits: 25 of the 30 are made up in the load's last 50
    cycles at the 0.5 of the link it leaves, 5 after it; A ends at 155, B at 255, C at 265
    (issued after A instead: the load ends at
    250 and C at 260, Dyn's best). Delaying the load, A keeps its 100 and the load its
    30 cycles of link time at its pace of 0.5 later: it ends at 150 + 60 = 210, B at 200,
    C at 220."""
    order, execs, transfers, pressure = [0, 1, 2], [100.0, 100.0, 10.0], [80.0, 0.0, 0.0], [0.0, 0.0, 0.5]
    loads, early, after_a = [0.0, 0.0, 150.0], [3, 3, 3], [2, 3, 3]
    assert timeline_latency(3, order, early, execs, loads, transfers, pressure) == pytest.approx(265.0)
    assert timeline_latency(3, order, after_a, execs, loads, transfers, pressure) == pytest.approx(260.0)
    assert timeline_latency(3, order, early, execs, loads, transfers, pressure, yields=True) == pytest.approx(220.0)
    assert timeline_latency(3, order, after_a, execs, loads, transfers, pressure, yields=True) == pytest.approx(260.0)
    assert preload_yield([(0.0, 100.0)], 80.0, [(0.0, 150.0, 0.5)]) == (0, pytest.approx(60.0))
    assert preload_yield([(0.0, 100.0)], 40.0, [(0.0, 150.0, 0.5)]) is None   # it fits
    # Dyn delays compute only; Full tries both at its order and keeps the loads yielding
    search = DesignSearch(_yield_ops(), capacity=100.0)
    assert search.result("dyn")[1] == pytest.approx(260.0) and not search.result("dyn")[0].yields
    plan, value = search.result("full")[:2]
    assert value == pytest.approx(220.0) and plan.yields
    # the decision says so (irc-dse's loads_yield column, irc-plan's and benchmarks/elk.py's notes)
    assert ElkDecision("full", value, [], plan, [0, 1, 2]).loads_yield
    assert not ElkDecision("dyn", 260.0, [], search.result("dyn")[0], [0, 1, 2]).loads_yield
    assert not ElkDecision("ideal", 200.0, [], None, [0, 1, 2]).loads_yield
