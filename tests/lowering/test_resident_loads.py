"""A model planned within SRAM on a chip with off-chip memory runs at its planned cycles
(issue 23): its arguments start in HBM, `preload-schedule` issues their loads at the
start, and each op waits for its own; Algorithm 1's decision adds those waits
(`irc.planner.resident_loads`, `irc.lowering.model_from_ir.with_load_waits`). Without
them every such model ran 0.1-6% past its plan (7,028.3 planned, 7,143.9 run: the first
op's weight and input, 115.6 cycles, are waited for with nothing to overlap)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from irc.compile import planned_model_cycles
from irc.runner import run
from tests.lowering.test_preload_packing import models, planned_on_chip


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=models(), sram=st.sampled_from((4096, 8192, 65536)), cores=st.sampled_from((4, 8, 16)))
def test_a_plan_within_sram_runs_at_its_planned_cycles_with_hbm(text, sram, cores):
    """Random small models that Algorithm 1 plans within SRAM on small chips with HBM:
    the run's cycles (the waits for HBM included) are the planned cycles."""
    module, _ = planned_on_chip(text, sram, cores, preloaded=False)
    if module is None:
        return   # refused, or larger than SRAM: ELK's (tests/lowering/test_preload_packing.py)
    _, report = run(module)
    assert report.cycles.get("preload_wait", 0.0) > 0   # the first op's loads, at least
    assert report.model_cycles == pytest.approx(planned_model_cycles(module), rel=1e-9)
