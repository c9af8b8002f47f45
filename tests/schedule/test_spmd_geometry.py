"""SPMD is SPMD (issue 10): every per-core value of a compute-shift program (tile origins,
window offsets, ring partners, replica groups, start digits) has a closed form in the core
id, which the device IR states as an affine map. For random legal plans, the closed
forms evaluated on every core equal the tables computed core by core."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from irc.devices import load_device
from irc.dialects.device import core_id, core_table, table_attr
from irc.planner import PlanError, check_plan
from irc.schedule.kernel import build_shift_kernel
from irc.schedule.spec import UnsupportedExpression, op_spec_from_bound
from tests.plan_strategies import DEVICES, legal_plans, operators


def _closed(values, cores: int) -> np.ndarray:
    """What the device IR states for ``values``, evaluated as the interpreter does."""
    values = values if isinstance(values, list) else [values]
    return core_table(table_attr(values), len(values), cores, "table")


@settings(max_examples=60, deadline=None)
@given(data=st.data(), op=operators(), device=st.sampled_from(DEVICES))
def test_closed_forms_equal_the_tables(data, op, device):
    bound, _ = op
    spec = op_spec_from_bound(bound, 4)
    plan = data.draw(legal_plans(spec, load_device(device).cores))
    try:
        check_plan(spec, plan, device, "t10")
        kernel = build_shift_kernel(bound, plan, device, "t10", np.float32)
    except (PlanError, UnsupportedExpression):
        assume(False)
    assume(kernel.closed_form())
    cores, core = kernel.cores, core_id()
    start = kernel.start_digits(core)
    np.testing.assert_array_equal(
        _closed(start, cores).T if kernel.levels else np.zeros((0, cores)), kernel.start)
    counters = [0] * len(kernel.levels)
    for event, value in kernel.schedule():
        if event == "shift":
            counters[value] += 1
            continue
        digits = kernel.digits_after(start, counters)
        np.testing.assert_array_equal(_closed(digits, cores).T if kernel.levels else value, value)
        for tensor in kernel.tensors.values():
            np.testing.assert_array_equal(
                _closed(kernel.window_offset(tensor, digits, core), cores), kernel.window_offset(tensor, value))
    for tensor in kernel.tensors.values():
        np.testing.assert_array_equal(
            _closed(kernel.partition_origin(tensor, start, core), cores), kernel.partition_origin(tensor, kernel.start))
    for l, level in enumerate(kernel.levels):
        for name in level.tensors:
            tensor = kernel.tensors[name]
            np.testing.assert_array_equal(_closed(kernel.source_of(tensor, l, core), cores)[:, 0],
                                          kernel.source(tensor, l))
    final = kernel.digits_after(start, kernel.final_counters())
    keys = _closed(kernel.replica_key(final, core), cores)[:, 0]
    order = np.lexsort((np.arange(cores), keys))
    np.testing.assert_array_equal(order.reshape(-1, kernel.output.rings), kernel.replica_groups())
