"""ELK's preload scheduling rules (seeds/004 s4.2-s4.4, s6.1) on numbers, without IR."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irc.devices.topology import operator_contention, preloaded_contention, window_stretch
from irc.planner.preload import (
    CostAwareAllocation,
    ExecOnlyAllocation,
    OrderError,
    PreloadFitError,
    PreloadOp,
    cost_aware_split,
    exhaustive_schedule,
    inductive_schedule,
    pareto_curve,
    timeline,
    timeline_latency,
)
from irc.planner.preload_plan import plan_preloads
from irc.planner.preload_designs import (
    basic_schedule,
    heavy_ops,
    ideal_latency,
    layer_orders,
    reorder,
    static_sweep,
    valid_preload_orders,
)


# --- s4.3: the cost-aware split ----------------------------------------------------------


def test_pareto_curve_is_bytes_descending_and_drops_dominated_points():
    curve = pareto_curve([(10, 5), (6, 9), (8, 5), (4, 20), (6, 12)])
    assert [(b, t) for b, t, _ in curve] == [(8, 5), (6, 9), (4, 20)]
    assert [k for _, _, k in curve] == [2, 1, 3]


def test_split_starts_fastest_and_shrinks_the_most_cost_effective_op():
    a = [(100, 10, 0), (60, 30, 1), (20, 100, 2)]   # next step saves 40 B for 20 cycles: 2 B/cycle
    b = [(50, 5, 0), (10, 15, 1)]                    # next step saves 40 B for 10 cycles: 4 B/cycle
    assert cost_aware_split([a, b], 150) == [0, 0]   # everything fits at its fastest
    assert cost_aware_split([a, b], 149) == [0, 1]   # b is more cost-effective
    assert cost_aware_split([a, b], 109) == [1, 1]   # then a
    assert cost_aware_split([a, b], 30) == [2, 1]
    assert cost_aware_split([a, b], 29) is None      # even the smallest plans overflow


def test_a_free_shrink_goes_first():
    a = [(100, 10, 0), (50, 10, 1)]                  # saves 50 B at no cost
    b = [(100, 10, 0), (40, 11, 1)]                  # 60 B for 1 cycle
    assert cost_aware_split([a, b], 150) == [1, 0]


def test_paper_split_shrinks_a_preloaded_op_artifact_split_cannot():
    # op 0 executes; op 1 is resident. Op 0 needs 60 B to run fast (10 cycles) or 20 B (100
    # cycles); op 1's preload state is 60 B (distribution 0) or 10 B (distribution 5 cycles).
    ops = [
        PreloadOp.simple("x", [(20, 100), (60, 10)], [(0, 0)], 0),
        PreloadOp.simple("y", [(10, 1)], [(60, 0), (10, 5)], 0),
    ]
    paper = CostAwareAllocation(ops, 100)
    paper.exec_plan[1], paper.preload_plan[1] = 0, 0
    got = paper(0, (1,))
    assert got.exec_plan == 1 and got.shrunk == {1: 1}
    assert got.cycles == pytest.approx(10 + 5)          # op 0's time + op 1's extra distribution
    artifact = ExecOnlyAllocation(ops, 100)
    artifact.exec_plan[1], artifact.preload_plan[1] = 0, 0
    kept = artifact(0, (1,))
    assert kept.exec_plan == 0 and kept.cycles == 100 and not kept.shrunk


# --- s4.2: inductive scheduling against exhaustive search --------------------------------


@st.composite
def small_models(draw):
    n = draw(st.integers(1, 5))
    sizes = [draw(st.integers(0, 4)) for _ in range(n)]
    capacity = draw(st.integers(max(sizes + [1]), 10))
    base = [draw(st.integers(1, 20)) for _ in range(n)]
    slow = [draw(st.integers(0, 10)) for _ in range(n)]
    loads = [draw(st.integers(0, 30)) for _ in range(n)]
    permuted = draw(st.booleans())
    order = draw(st.permutations(list(range(n)))) if permuted else list(range(n))
    transfers = [draw(st.integers(0, b)) for b in base]
    pressure = [draw(st.sampled_from([0.0, 0.25, 0.5, 1.0])) for _ in range(n)]
    return n, sizes, capacity, base, slow, loads, order, transfers, pressure


def _oracle(sizes, capacity, base, slow, transfers=None, loads=None, pressure=None):
    """An allocation depending only on (op, resident set): the op slows by ``slow`` per
    byte of SRAM its resident ops take (less execution space), None when they overflow;
    with ``transfers``, it also waits for the link its transfers share with the resident
    ops' loads as ELK's scheduler estimates it (``preloaded_contention``)."""
    def exec_cycles(i, held):
        used = sum(sizes[k] for k in held)
        if used + sizes[i] > capacity:
            return None
        cycles = float(base[i] + slow[i] * used)
        if transfers is not None:
            cycles += preloaded_contention(cycles, transfers[i], [(loads[k], pressure[k]) for k in reversed(held)])
        return cycles
    return exec_cycles


@settings(max_examples=150, deadline=None)
@given(small_models(), st.booleans())
def test_inductive_schedule_equals_exhaustive_search(model, contended):
    n, sizes, capacity, base, slow, loads, order, transfers, pressure = model
    exec_cycles = (_oracle(sizes, capacity, base, slow, transfers, loads, pressure) if contended
                   else _oracle(sizes, capacity, base, slow))
    best, _ = exhaustive_schedule(n, exec_cycles, lambda k: float(loads[k]), order)
    try:
        schedule = inductive_schedule(n, exec_cycles, lambda k: float(loads[k]), order)
    except OrderError:  # the order forces ops on chip together that do not fit
        assert best == np.inf
        return
    assert schedule.latency == pytest.approx(best)
    # the scheduler's backward (latest) times and the decisions run forward agree
    times = [exec_cycles(i, schedule.resident[i]) for i in range(n)]
    assert timeline_latency(n, order, schedule.frontier, times, loads) == pytest.approx(best)
    # Lemma 4.1: the last op preloads nothing during its execution
    assert schedule.resident[n - 1] == ()


def test_preloading_hides_loads_by_hand():
    # two ops, each 10 cycles to load and 10 to execute, both fit together: op 1 loads
    # while op 0 executes, so 10 + 10 + 10 = 30 cycles instead of 40
    schedule = inductive_schedule(2, lambda i, held: 10.0, lambda k: 10.0)
    assert schedule.latency == 30 and schedule.resident[0] == (1,)
    assert list(schedule.load_start) == [0, 10] and list(schedule.exec_start) == [10, 20]
    # if they do not fit together, op 1's load waits for op 0 to finish: 40
    alone = inductive_schedule(2, lambda i, held: None if held else 10.0, lambda k: 10.0)
    assert alone.latency == 40 and alone.resident[0] == ()


def test_a_longer_preload_number_wins_when_it_starts_later():
    # op 0 fast, op 1 and op 2 heavy to load: preloading both during op 0 overlaps more
    loads = [1.0, 50.0, 50.0]
    schedule = inductive_schedule(3, lambda i, held: 60.0 if i == 0 else 5.0, lambda k: loads[k])
    assert schedule.resident[0] == (1, 2)
    best, _ = exhaustive_schedule(3, lambda i, held: 60.0 if i == 0 else 5.0, lambda k: loads[k])
    assert schedule.latency == best


# --- s4.4: preload orders -----------------------------------------------------------------


# --- s3.3, s4.3: interconnect contention between execution and preloads ------------------


def test_a_window_grows_until_the_link_has_room_by_hand():
    # 10 cycles of excess; the first 5 cycles grown into carry a preload at half the link
    # (the deficit shrinks by 2.5), the rest none (7.5 more)
    assert window_stretch(10.0, [(5.0, 0.5), (10.0, 0.0)]) == pytest.approx(12.5)
    # a saturating preload must be waited out
    assert window_stretch(3.0, [(20.0, 1.0)]) == pytest.approx(23.0)
    assert window_stretch(-1.0, [(20.0, 1.0)]) == 0.0
    # an operator of 10 cycles, 8 of them transfers, beside a preload taking half the link
    # from 0 to 20: the link needs 8 + 5 > 10 cycles; each further cycle adds half a cycle
    # of preload traffic, so it ends at W = 8 + W / 2, W = 16: 6 cycles of contention
    assert operator_contention([(0.0, 10.0)], 8.0, [(0.0, 20.0, 0.5)]) == pytest.approx(6.0)
    # the same preload wholly inside a 40-cycle window: 8 + 10 fits
    assert operator_contention([(0.0, 40.0)], 8.0, [(0.0, 20.0, 0.5)]) == 0.0
    # the scheduler's view (s4.2): the preloaded op's load ends with the operator
    assert preloaded_contention(10.0, 8.0, [(20.0, 0.5)]) == pytest.approx(6.0)
    assert preloaded_contention(10.0, 8.0, []) == 0.0


def test_the_plan_as_it_runs_waits_for_the_link_by_hand():
    # op 0 (10 cycles, 8 of them transfers) runs while op 1's 12-cycle load takes half the
    # link: the link needs 8 + 5 in the first 10 cycles, 1 more in the load's last 2, and
    # 2 after it: op 0 ends at 14 (W = 8 + 6), op 1 then runs 5 cycles
    times = timeline(2, [0, 1], [2, 2], [10.0, 5.0], [0.0, 12.0], [8.0, 0.0], [0.0, 0.5])
    load_start, load_end, exec_start, exec_end = times
    assert list(load_end) == [0.0, 12.0] and list(exec_start) == [0.0, 14.0] and list(exec_end) == [14.0, 19.0]
    assert timeline_latency(2, [0, 1], [2, 2], [10.0, 5.0], [0.0, 12.0], [8.0, 0.0], [0.0, 0.5]) == 19.0
    # without the link's share the plan is the longest path (op 1 waits for its load)
    assert timeline_latency(2, [0, 1], [2, 2], [10.0, 5.0], [0.0, 12.0]) == 17.0


def test_reordering_moves_a_link_heavy_preload_off_a_transfer_heavy_op():
    # s4.4/s6.3: "preloads with low interconnect traffic can be reordered to match
    # operator execution periods with high traffic". Op t (100 cycles, 60 of transfers)
    # and op c (100 cycles of compute) load nothing; u's load saturates the link (a
    # broadcasting preload state), v's takes 0.3 of it; 100 cycles each. In execution
    # order u's load runs during t, whose transfers then wait 60 cycles for the link (v's
    # load waits for t: the best frontier, 280 cycles; loading v too during t: 305.7;
    # neither: 310). Loading v first, during t (60 + 30 of t's 100 cycles), then u during
    # c: nothing waits, 220 cycles.
    ops = [
        PreloadOp.simple("t", [(10, 100.0)], [(0, 0.0)], 0.0, 0.0, layer=0, transfer_cycles=[60.0]),
        PreloadOp.simple("c", [(10, 100.0)], [(0, 0.0)], 0.0, 0.0, layer=0),
        PreloadOp.simple("u", [(10, 10.0)], [(10, 0.0)], 100.0, 1000.0, layer=0, load_pressure=1.0),
        PreloadOp.simple("v", [(10, 10.0)], [(10, 0.0)], 100.0, 1000.0, layer=0, load_pressure=0.3),
    ]
    dyn = plan_preloads(ops, 100.0)
    assert dyn.latency == pytest.approx(280.0) and dyn.contention_cycles() == pytest.approx([60.0, 0, 0, 0])
    full, order, tried = reorder(ops, 100.0)
    assert tried == 2 and order == [0, 1, 3, 2]
    assert full.latency == pytest.approx(220.0) and sum(full.contention_cycles()) == 0.0


def test_figure_14_first_two_steps():
    # 9 ops of one unit each, two fit on chip (Figure 14; ops numbered from 0 here)
    orders = valid_preload_orders(list(range(9)), lambda i: 1.0, 2.0)
    assert {o[-1] for o in orders} == {7, 8}                        # Op8 or Op9 is loaded last
    assert {o[-2] for o in orders if o[-1] == 7} == {6, 8}          # upper branch: Op7 or Op9
    assert {o[-2] for o in orders if o[-1] == 8} == {6, 7}          # lower branch: Op7 or Op8
    assert list(range(9)) in orders


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=6), st.integers(1, 12))
def test_valid_orders_are_exactly_the_permutations_that_fit(sizes, capacity):
    n = len(sizes)
    got = sorted(map(tuple, valid_preload_orders(list(range(n)), lambda i: sizes[i], capacity)))

    def fits(order):
        for t, x in enumerate(order):
            together = [x] + [y for y in order[:t] if y > x]
            if sum(sizes[y] for y in together) > capacity:
                return False
        return True

    assert got == sorted(o for o in itertools.permutations(range(n)) if fits(o))


def _layered(layers, per_layer_bytes, capacity=100.0):
    ops = []
    for layer in range(layers):
        for t, hbm in enumerate(per_layer_bytes):
            ops.append(PreloadOp.simple(f"l{layer}.op{t}", [(20, 10.0)], [(hbm / 10, 0.0)], hbm / 5, hbm,
                                        signature=("op", t), layer=layer))
    return ops


def test_only_heavy_ops_reorder_and_identical_layers_share_the_order():
    ops = _layered(3, [150, 1, 200, 1, 300])   # mean 130.4
    assert heavy_ops(ops) == [i for i in range(15) if i % 5 in (0, 2, 4)]
    orders = layer_orders(ops, 100.0)
    assert orders[0] == list(range(15))
    assert len(orders) == 6                                  # 3 heavy ops per layer: 3! orders fit
    for order in orders:
        for layer in range(3):
            base = 5 * layer
            assert order[base + 1] == base + 1 and order[base + 3] == base + 3   # light ops stay
            assert [x - base for x in order[base:base + 5]] == [x for x in order[0:5]]


def test_reordering_frees_execution_space_figure_13():
    # Figure 13's case: op 1 needs far more preload space than op 2. In execution order op 1
    # is preloaded during op 0, which then runs slowly (40 B) or alone; loading op 2 first
    # lets op 0 run at its fastest (90 B) beside op 2's 10 B.
    ops = [
        PreloadOp.simple("a", [(40, 300.0), (90, 100.0)], [(0, 0.0)], 1.0, 0.0, layer=0),
        PreloadOp.simple("b", [(50, 10.0)], [(60, 0.0)], 50.0, 600.0, layer=0),
        PreloadOp.simple("c", [(50, 10.0)], [(10, 0.0)], 50.0, 200.0, layer=0),
        PreloadOp.simple("d", [(10, 1.0)], [(0, 0.0)], 0.0, 0.0, layer=0),
        PreloadOp.simple("e", [(10, 1.0)], [(0, 0.0)], 0.0, 0.0, layer=0),
    ]
    dyn = plan_preloads(ops, 100.0)
    full, order, tried = reorder(ops, 100.0)
    assert tried == 2 and order[:3] == [0, 2, 1]
    assert dyn.latency == pytest.approx(1 + 100 + 50 + 50 + 10 + 2)   # op 1, then op 2 load after op 0
    assert full.latency == pytest.approx(1 + 100 + 50 + 10 + 10 + 2)   # op 2 loaded during op 0


# --- whole plans and baselines -------------------------------------------------------------


def _random_ops(seed, n=12):
    rng = np.random.default_rng(seed)
    ops = []
    for i in range(n):
        sizes = np.sort(rng.integers(5, 40, size=3))[::-1]
        exec_plans = [(float(s), float(400 / s + rng.integers(0, 5))) for s in sizes]
        hbm = float(rng.integers(0, 400))
        pre = [(hbm / 8, 0.0), (hbm / 32, float(rng.integers(1, 10)))]
        ops.append(PreloadOp.simple(f"op{i}", exec_plans, pre, [hbm / 4, hbm / 4], hbm))
    return ops


@pytest.mark.parametrize("seed", range(5))
def test_ideal_bounds_every_design(seed):
    ops = _random_ops(seed)
    ideal = ideal_latency(ops)
    for split in ("paper", "artifact"):
        assert plan_preloads(ops, 64.0, split=split).latency >= ideal - 1e-9
    assert basic_schedule(ops, 64.0).latency >= ideal - 1e-9
    assert static_sweep(ops, 64.0)[0].latency >= ideal - 1e-9


def test_plans_fit_the_sram_they_were_given():
    ops = _random_ops(7)
    plan = plan_preloads(ops, 64.0)
    for i, held in enumerate(plan.schedule.resident):
        used = ops[i].exec_bytes[plan.exec_plan[i]] + sum(ops[k].preload_bytes[plan.preload_plan[k]] for k in held)
        assert used <= 64.0


def test_an_op_too_large_for_the_chip_is_named_with_its_bytes():
    ops = [PreloadOp.simple("small", [(10, 1.0)], [(1, 0.0)], 1.0),
           PreloadOp.simple("huge.matmul", [(700, 1.0), (900, 0.5)], [(1, 0.0)], 1.0)]
    with pytest.raises(PreloadFitError, match=r"op 'huge.matmul' cannot run even with preloading: .* 700 bytes .* 640"):
        plan_preloads(ops, 640.0)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 6), st.integers(0, 5), st.integers(1, 20), st.integers(0, 30)),
                min_size=1, max_size=5), st.integers(6, 14))
def test_widest_frontiers_are_optimal_for_fixed_plans(ops, capacity):
    from irc.planner.preload_designs import widest_frontiers

    exec_bytes = [e for e, _, _, _ in ops]
    pre = [p for _, p, _, _ in ops]
    times = [float(t) for _, _, t, _ in ops]
    loads = [float(l) for _, _, _, l in ops]
    n = len(ops)

    def fits(i, held):
        return times[i] if exec_bytes[i] + sum(pre[k] for k in held) <= capacity else None

    frontiers = widest_frontiers(exec_bytes, pre, capacity)
    for i, q in enumerate(frontiers):
        assert fits(i, tuple(range(i + 1, q))) is not None
    best, _ = exhaustive_schedule(n, fits, lambda k: loads[k])
    assert timeline_latency(n, list(range(n)), frontiers, times, loads) == pytest.approx(best)


def test_displacement_bound_prunes_far_moves():
    orders = valid_preload_orders(list(range(5)), lambda i: 1.0, 10.0, max_displacement=1)
    assert list(range(5)) in orders
    for order in orders:
        assert all(abs(order.index(x) - x) <= 1 for x in range(5))
    assert len(orders) < len(valid_preload_orders(list(range(5)), lambda i: 1.0, 10.0))
