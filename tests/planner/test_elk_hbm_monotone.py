"""More HBM bandwidth never makes a design slower (ELK s6.4 finding 1; issue 24): a plan
chosen on a slower HBM is a legal plan on a faster one (the same bytes), and each load
paced down to the link share it took then (``DesignSearch.paced_as``) lasts as long as it
did, so that plan runs as it did. A sweep seeding each point's search with the slower
point's choices (``seeds``, as benchmarks/elk_mesh.py does) is therefore monotone in the
HBM bandwidth for every design. A search alone is not: its inductive scheduler picks
frontiers by its own load-time estimate, and a faster load that takes more of the link
meanwhile can stretch the ops it overlaps (the last test's case)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from irc.devices import load_device
from irc.dse import Point, builtin_model, point_device
from irc.planner.elk import DesignSearch, offchip_study
from irc.planner.op_table import FrontierCache
from irc.planner.preload import PreloadOp
from irc.planner.preload_designs import loop_period

DESIGNS = ("basic", "static", "dyn", "full")
ORDERED = ("full", "dyn", "static", "basic")
TOLERANCE = 1e-9


def _input_parts(rng, inputs: int, states: int, cycles_per_byte: float) -> tuple:
    """``inputs`` loads of an op's non-weight inputs (a KV cache) into each of its
    ``states`` execute layouts, each ([J] cycles, [J] link share), as ``_contended_ops``
    times the weights' (a smaller execute state fans out more), at link costs per byte of
    their own."""
    parts = []
    for _ in range(inputs):
        nbytes, link_per_byte = float(rng.integers(1, 300)), float(rng.choice([0.02, 0.1, 0.3]))
        link = np.array([nbytes * link_per_byte * (1 + 0.5 * j) for j in range(states)])
        cycles = np.maximum(nbytes * cycles_per_byte, link)
        parts.append((cycles, link / cycles))
    return tuple(parts)


def _contended_ops(seed: int, per_layer: int, layers: int, cycles_per_byte: float, inputs: int = 0) -> list[PreloadOp]:
    """``layers`` identical layers of ``per_layer`` random ops whose loads take the longer
    of their HBM time (``cycles_per_byte``) and their link time, taking the link time over
    the load's length of the busiest link (the link time does not depend on the HBM), and
    whose execute states shift for part of their cycles (contending with the loads); each
    op also loads ``inputs`` non-weight inputs apart (``PreloadOp.input_parts``)."""
    rng = np.random.default_rng(seed)
    layer = []
    for i in range(per_layer):
        sizes = [float(s) for s in np.sort(rng.integers(5, 40, size=3))[::-1]]
        exec_cycles = [float(400 / s + rng.integers(0, 5)) for s in sizes]
        transfers = [float(rng.integers(0, int(c) + 1)) for c in exec_cycles]
        hbm = float(rng.integers(0, 400))
        link_per_byte = float(rng.choice([0.02, 0.1, 0.3]))
        states = [(hbm / 8, 0.0), (hbm / 32, float(rng.integers(1, 10)))]
        link = [hbm * link_per_byte, hbm * link_per_byte * 1.5]   # a smaller state fans out more
        loads = [max(hbm * cycles_per_byte, t) for t in link]
        pressure = [t / c if c > 0 else 0.0 for t, c in zip(link, loads)]
        parts = _input_parts(rng, inputs, len(sizes), cycles_per_byte)
        layer.append((f"op{i}", sizes, exec_cycles, transfers, states, loads, pressure, hbm, parts))
    return [PreloadOp(f"l{k}.{name}", hbm, sizes, ex, [b for b, _ in states], [[d] * len(sizes) for _, d in states],
                      loads, transfer_cycles=tr, load_pressure=pressure, signature=name, layer=k,
                      input_parts=parts, input_loads=sum((c for c, _ in parts), np.zeros(len(sizes))),
                      input_pressure=_average_share(parts, len(sizes)))
            for k in range(layers) for name, sizes, ex, tr, states, loads, pressure, hbm, parts in layer]


def _average_share(parts: tuple, states: int) -> np.ndarray:
    """[J]: the link share of an op's input loads back to back (``PreloadOp.input_pressure``)."""
    cycles = sum((c for c, _ in parts), np.zeros(states))
    link = sum((c * p for c, p in parts), np.zeros(states))
    return np.divide(link, cycles, out=np.zeros(states), where=cycles > 0)


def _search(seed, per_layer, layers, capacity, cycles_per_byte, loop, seeds=None, inputs=0) -> DesignSearch:
    ops = _contended_ops(seed, per_layer, layers, cycles_per_byte, inputs)
    if loop:   # a decode loop: one token's ops, then the next token's first layer
        ops = ops + [dataclasses.replace(op, name=f"next.{op.name}", layer=layers) for op in ops[:per_layer]]
        return DesignSearch(ops, capacity, max_orders=4, seeds=seeds, metric=lambda p: loop_period(p, per_layer))
    return DesignSearch(ops, capacity, max_orders=4, seeds=seeds)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), per_layer=st.integers(2, 4), layers=st.integers(1, 2),
       capacity=st.sampled_from([48.0, 64.0, 96.0, 160.0]), cycles_per_byte=st.sampled_from([0.1, 0.25, 1.0]),
       loop=st.booleans(), inputs=st.sampled_from([0, 0, 1, 2]))
def test_a_seeded_sweep_is_never_slower_with_more_hbm_bandwidth(seed, per_layer, layers, capacity,
                                                                cycles_per_byte, loop, inputs):
    """Three HBM bandwidths (x1, x2, x4), each search seeded with the previous one's
    choices (with ``inputs``, ops loading non-weight inputs too, seeded with the ops each
    plan ran on): every design's latency never grows, and the designs still dominate."""
    if max(op.min_exec() for op in _contended_ops(seed, per_layer, layers, 1.0, inputs)) > capacity:
        return
    previous, seeds = None, None
    for factor in (1, 2, 4):
        search = _search(seed, per_layer, layers, capacity, cycles_per_byte / factor, loop, seeds, inputs)
        latency = {design: search.result(design)[1] for design in DESIGNS}
        for stronger, weaker in zip(ORDERED, ORDERED[1:]):
            assert latency[stronger] <= latency[weaker] * (1 + TOLERANCE), (factor, stronger, latency)
        if previous is not None:
            for design in DESIGNS:
                assert latency[design] <= previous[design] * (1 + TOLERANCE), (factor, design, previous, latency)
        previous = latency
        seeds = {design: (search.result(design)[0], search.result(design)[7], search.result(design)[8])
                 for design in DESIGNS}


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), per_layer=st.integers(2, 4), capacity=st.sampled_from([64.0, 160.0]),
       cycles_per_byte=st.sampled_from([0.1, 0.25, 1.0]))
def test_a_slower_hbm_plan_paced_as_it_ran_runs_as_it_did(seed, per_layer, capacity, cycles_per_byte):
    """Each load of the slower HBM's plan, paced to the link share it took, takes exactly
    the cycles and the link share it took; the plan's timeline is the same."""
    if max(op.min_exec() for op in _contended_ops(seed, per_layer, 2, 1.0)) > capacity:
        return
    slow = _search(seed, per_layer, 2, capacity, cycles_per_byte, False)
    fast = _search(seed, per_layer, 2, capacity, cycles_per_byte / 2, False)
    for design in ("static", "full"):
        plan = slow.result(design)[0]
        ops = fast.paced_as(plan)
        for k, (op, r, j) in enumerate(zip(ops, plan.preload_plan, plan.exec_plan)):
            assert op.load_time(r, j) == pytest.approx(plan.load_cycles[k])
            assert op.load_share(r, j) == pytest.approx(plan.load_pressure[k])
        retimed, value, _ = fast.retimed(design, plan, slow.result(design)[7])
        assert value <= slow.result(design)[1] * (1 + TOLERANCE)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), per_layer=st.integers(2, 4), capacity=st.sampled_from([64.0, 160.0]),
       cycles_per_byte=st.sampled_from([0.1, 0.25, 1.0]), inputs=st.integers(1, 2))
def test_a_multi_part_load_paced_as_it_ran_runs_as_it_did(seed, per_layer, capacity, cycles_per_byte, inputs):
    """Ops loading their weights and ``inputs`` non-weight inputs (a KV cache), each at a
    link cost per byte of its own: the slower HBM's plan retimed on the faster HBM's ops
    with each part of each load paced to the share that part took (``paced_as`` given the
    ops it ran on) takes exactly each load's cycles and link share, each part's too, and
    is never slower. (Pacing an op's parts at their average share stretches the parts
    that took more of the link and not those that took less.)"""
    if max(op.min_exec() for op in _contended_ops(seed, per_layer, 2, 1.0, inputs)) > capacity:
        return
    slow = _search(seed, per_layer, 2, capacity, cycles_per_byte, False, inputs=inputs)
    fast = _search(seed, per_layer, 2, capacity, cycles_per_byte / 2, False, inputs=inputs)
    for design in DESIGNS:
        plan, value, *_, share, slow_ops = slow.result(design)
        ops = fast.paced_as(plan, slow_ops)
        for k, (op, then, r, j) in enumerate(zip(ops, slow_ops, plan.preload_plan, plan.exec_plan)):
            assert op.load_time(r, j) == pytest.approx(plan.load_cycles[k])
            assert op.load_share(r, j) == pytest.approx(plan.load_pressure[k])
            for (cycles, _), (cycles_then, _) in zip(op.input_parts or (), then.input_parts or ()):
                assert cycles[j] == pytest.approx(cycles_then[j])
        assert fast.retimed(design, plan, share, slow_ops)[1] <= value * (1 + TOLERANCE), design


def test_a_search_alone_can_be_slower_with_more_hbm_bandwidth_which_the_seed_undoes():
    """Static on 3 layers of 2 ops (seed 8357), a decode loop: at twice the HBM bandwidth
    its own search (inductive frontiers at each swept execution space) takes longer per
    token, its faster loads pressing the link while the ops shift; seeded with the slower
    point's plan it keeps that plan's time."""
    case = dict(seed=8357, per_layer=2, layers=3, capacity=160.0, loop=True)
    slow = _search(cycles_per_byte=0.1, **case)
    alone = _search(cycles_per_byte=0.05, **case)
    assert alone.result("static")[1] > slow.result("static")[1] * 1.05
    seeded = _search(cycles_per_byte=0.05, seeds={"static": (slow.result("static")[0], 1.0)}, **case)
    assert seeded.result("static")[1] <= slow.result("static")[1] * (1 + TOLERANCE)


def test_a_small_llm_sweep_through_offchip_study_is_monotone_in_hbm():
    """offchip_study seeded with the slower point's decisions (on equal op tables, the
    plain ones shared by the cache, the layout-matched ones made again): a scaled-down
    Llama2-13B layer per token on tiny16-hbm."""
    base = load_device("tiny16-hbm")
    model, layer_of, _ = builtin_model("llama2-13b", batch=4, seq=64, chips=1, layers=1, factor=32)
    cache = FrontierCache(point_device(base, Point(0, 20e9, 8e9, "all-to-all", 16)), "t10")
    previous, latencies = None, []
    for hbm in (20e9, 40e9, 80e9):
        cache.device = point_device(base, Point(0, hbm, 8e9, "all-to-all", 16))   # op tables do not price HBM
        study = offchip_study(model, cache, ORDERED, layer_of=layer_of, max_orders=2, loop=True,
                              seeds=None if previous is None else previous.decisions)
        if previous is not None:
            for design in ORDERED:
                assert (study.decisions[design].latency_cycles
                        <= previous.decisions[design].latency_cycles * (1 + TOLERANCE)), (hbm, design)
        previous = study
        latencies.append(study.decisions["full"].latency_cycles)
    assert latencies[1] < latencies[0]   # the HBM bounds these points: more of it is faster
