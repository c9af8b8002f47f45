"""The planner's memos change how fast it plans, never what it plans (issue 24 item 6):
ELK's re-planning with allocations, plans, loads and contention shared across orders
and designs equals planning each afresh; the timeline's running pointer equals the
scan over every load; the mesh's link tables and ring routes equal their plain sums."""

from __future__ import annotations

import numpy as np
import pytest

from irc.devices import load_device
from irc.devices.topology import _mesh_tables, mesh_busiest, operator_contention
from irc.plans import evaluate
from irc.planner.preload import OutgoingLinks, PreloadOp, timeline
from irc.planner.preload_designs import layer_orders, reorder
from irc.planner.preload_plan import plan_preloads


def _ops(seed: int, per_layer: int = 4, layers: int = 3) -> list[PreloadOp]:
    """Identical layers of random ops whose transfers share the link with the loads
    (contention) and whose relayouts depend on the neighbours' states; built afresh per
    call, so each list's per-op memos start empty."""
    rng = np.random.default_rng(seed)
    kinds = []
    for t in range(per_layer):
        sizes = np.sort(rng.integers(5, 40, size=3))[::-1]
        hbm = float(rng.integers(50, 400))
        kinds.append(dict(exec_plans=[(float(s), float(400 / s + rng.integers(0, 5))) for s in sizes],
                          preloads=[(hbm / 8, 0.0), (hbm / 32, float(rng.integers(1, 10)))], hbm=hbm,
                          transfers=rng.integers(0, 30, size=3).astype(float), pressure=rng.random(2)))
    return [PreloadOp.simple(f"l{layer}.op{t}", k["exec_plans"], k["preloads"], [k["hbm"] / 4, k["hbm"] / 5], k["hbm"],
                             signature=("op", t), layer=layer, transfer_cycles=k["transfers"],
                             load_pressure=k["pressure"])
            for layer in range(layers) for t, k in enumerate(kinds)]


def _links(n: int) -> OutgoingLinks:
    """Each op reads the one before it; a relayout costs more the further apart the states."""
    return OutgoingLinks([[i + 1] if i + 1 < n else [] for i in range(n)], lambda i, j, k, jk: 3.0 * abs(j - jk),
                         [[("next",)] if i + 1 < n else [] for i in range(n)], [3] * n)


def _same(one, other) -> None:
    assert one.exec_plan == other.exec_plan and one.preload_plan == other.preload_plan
    assert list(one.schedule.order) == list(other.schedule.order)
    assert list(one.schedule.frontier) == list(other.schedule.frontier)
    assert one.latency == other.latency and (one.start, one.cap) == (other.start, other.cap)


@pytest.mark.parametrize("seed", range(3))
def test_shared_memos_replan_every_order_as_fresh_planning_does(seed):
    shared_ops, memos = _ops(seed), {}
    links = _links(len(shared_ops))
    orders = layer_orders(shared_ops, 100.0)
    assert len(orders) > 1
    dyn = plan_preloads(shared_ops, 100.0, None, memos=memos, links=links)
    _same(dyn, plan_preloads(_ops(seed), 100.0, None, links=links))
    for order in orders + orders[:2]:   # (the last two asked again: the memo's plans)
        try:
            fresh = plan_preloads(_ops(seed), 100.0, order, links=links)
        except Exception as error:   # the order overflows: the shared memo must say so too
            with pytest.raises(type(error)):
                plan_preloads(shared_ops, 100.0, order, memos=memos, links=links)
            continue
        _same(plan_preloads(shared_ops, 100.0, order, memos=memos, links=links), fresh)
    # Full sharing Dyn's memo (``DesignSearch``) finds what it finds alone
    shared, alone = reorder(shared_ops, 100.0, links=links, memos=memos), reorder(_ops(seed), 100.0, links=links)
    _same(shared[0], alone[0])
    assert shared[1:] == alone[1:]


def _timeline_by_scan(n, order, frontier, exec_cycles, load_cycles, transfers, pressure):
    """``timeline`` as first written: each op scans every load issued for those still running."""
    pos = {k: t for t, k in enumerate(order)}
    waits: dict[int, list[int]] = {}
    for i, q in enumerate(frontier):
        if q < n:
            waits.setdefault(order[q], []).append(i)
    load_start, load_end, exec_start, exec_end = (np.zeros(n) for _ in range(4))
    t_load = i_exec = 0
    while i_exec < n or t_load < n:
        if t_load < n and all(b < i_exec for b in waits.get(order[t_load], [])):
            k = order[t_load]
            load_start[k] = max([load_end[order[t_load - 1]] if t_load else 0.0]
                                + [exec_end[b] for b in waits.get(k, [])])
            load_end[k] = load_start[k] + load_cycles[k]
            t_load += 1
            continue
        assert pos[i_exec] < t_load
        i = i_exec
        exec_start[i] = max(exec_end[i - 1] if i else 0.0, load_end[i])
        exec_end[i] = exec_start[i] + exec_cycles[i]
        if transfers[i] > 0:
            flows = [(load_start[order[t]], load_end[order[t]], pressure[order[t]]) for t in range(t_load)
                     if load_end[order[t]] > exec_start[i]]
            exec_end[i] += operator_contention([(exec_start[i], exec_end[i])], transfers[i], flows)
        i_exec += 1
    return load_start, load_end, exec_start, exec_end


@pytest.mark.parametrize("seed", range(3))
def test_timeline_skips_finished_loads_as_the_scan_does(seed):
    ops = _ops(seed, layers=4)
    for order in layer_orders(ops, 100.0)[:4]:
        plan = plan_preloads(ops, 100.0, order, links=_links(len(ops)))
        s = plan.schedule
        args = (len(ops), s.order, s.frontier, plan.exec_cycles, plan.load_cycles, plan.transfer_cycles,
                plan.load_pressure)
        for got, want in zip(timeline(*args), _timeline_by_scan(*args)):
            assert np.array_equal(got, want)


def test_mesh_link_tables_sum_as_add_at_does():
    rng = np.random.default_rng(0)
    rows, cols, n = 6, 9, 400
    r0, r1 = rng.integers(0, rows, n), rng.integers(0, rows, n)
    c0, c1 = rng.integers(0, cols, n), rng.integers(0, cols, n)
    weights = rng.random(n) * 1e6
    for table, (shape, lines, begin, end, pick) in zip(_mesh_tables(rows, cols, r0, c0, r1, c1, weights), [
            ((rows, cols + 1), r0, c0, c1, c1 > c0), ((rows, cols + 1), r0, c1, c0, c1 < c0),
            ((cols, rows + 1), c1, r0, r1, r1 > r0), ((cols, rows + 1), c1, r1, r0, r1 < r0)]):
        want = np.zeros(shape)
        np.add.at(want, (lines[pick], begin[pick]), weights[pick])
        np.add.at(want, (lines[pick], end[pick]), -weights[pick])
        assert np.array_equal(table, np.cumsum(want, axis=1))


def test_rings_routed_alike_share_their_routes():
    device = load_device("ipu-mk2-hbm-mesh")
    evaluate._MESH_RINGS.clear()
    per_hop = device.link_latency_cycles / device.shift_cycles_per_byte
    # (factors, free axes, ring, weight, trips): the last two move the same ring two ways
    for factors, free, ring, weight, trips in [((4, 46, 8), (2,), 8, 1, None), ((32, 46), (0,), 32, 4, 8),
                                               ((2, 16, 46), (0, 1), 32, 1, None), ((2, 16, 46), (0, 1), 32, 1, 32)]:
        sources = evaluate.ring_sources(factors, free, ring, weight, trips)
        busiest, hops = mesh_busiest(device, sources, 1.0)
        for _ in range(2):   # routed, then from the memo
            assert evaluate._mesh_ring_bytes(device, factors, free, ring, 100.0, weight, trips) == \
                100.0 * busiest + hops * per_hop
