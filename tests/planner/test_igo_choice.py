"""Fused or unfused per point of the model-wide plan (irc.planner.igo_choice, issue 25
item 4): a gradient pair's table holds its fused frontier and its unfused points, each
unfused point priced as its two products' plans; Algorithm 1 picks between them per
budget, never slower than with the fused plans alone on these budgets, and runs the pair
unfused where no fused plan fits."""

from __future__ import annotations

from dataclasses import replace

import pytest

from irc.cost import get_cost_model
from irc.devices import load_device
from irc.planner.igo_choice import UnfusedPoint, choice_table, fused_within, point_relayout
from irc.planner.model import plan_model
from irc.planner.op_table import FrontierCache
from tests.planner.test_model_plan import pair_model

TINY16 = load_device("tiny16")


def test_a_pairs_table_holds_fused_plans_and_unfused_points():
    pair = pair_model().ops[1].pair
    cache = FrontierCache(TINY16, "t10")
    fused = cache.pair_table(pair)
    table = choice_table(pair, fused, cache)
    assert choice_table(pair, fused, cache) is table   # built once per canonical pair
    points = [p for p in table.active if isinstance(p, UnfusedPoint)]
    assert points and len(table.active) == len(fused.active) + len(points)
    assert list(table.hot) == sorted(table.hot)
    for point in points:
        assert point.cycles == point.dx.cycles + point.dw.cycles
        dx_out = point.dx.score.memory.elements("t0") * 4
        assert point.memory_per_core == max(point.dx.memory_per_core, point.dw.memory_per_core + dx_out)
        assert not any(f.memory_per_core <= point.memory_per_core and f.cycles <= point.cycles for f in fused.active)
        # dY arrives into both products' layouts; dX leaves from dX's
        into_both = point_relayout(fused.spec, fused.active[0], table.spec, point, "t2", TINY16,
                                   get_cost_model("t10"), producer_tensor="t2")
        alone = point_relayout(fused.spec, fused.active[0], point.dx_spec, point.dx, "t2", TINY16,
                               get_cost_model("t10"), producer_tensor="t2")
        assert into_both[1] >= alone[1]
    assert fused_within(table, float("inf")) == min(p.cycles for p in fused.active)
    assert fused_within(table, 0) == float("inf")


@pytest.mark.parametrize("sram", [65536, 50000, 40000])
def test_the_per_point_choice_is_never_slower_than_fused_plans_alone(sram):
    device = replace(TINY16, sram_bytes=sram)
    fused = plan_model(pair_model(), device, "t10")
    chosen = plan_model(pair_model(), device, "t10", fusion_points=True)
    assert chosen.seconds <= fused.seconds * (1 + 1e-12)
    assert chosen.peak_bytes <= sram


def test_a_pair_no_fused_plan_fits_runs_at_an_unfused_point():
    """At 30,000 bytes no fused plan fits beside dY (`test_a_fused_pair_that_cannot_fit_names_itself`);
    the pair's unfused points do."""
    planned = plan_model(pair_model(), replace(TINY16, sram_bytes=30000), "t10", fusion_points=True)
    point = planned.ops[1].active
    assert isinstance(point, UnfusedPoint)
    assert {t.name for t in point.dx_spec.tensors} == {"DX", "G", "W"}   # the pair's own names
    assert planned.peak_bytes <= 30000
