"""The planner prices a weight's setup on a 2D mesh on the routes the lowering's pieces
take (``irc.planner.idle.setup_flows`` against ``irc.lowering.relayout_pieces.setup_pieces``)."""

import math

import numpy as np
import pytest

from irc.dialects.te_expr import parse_expression
from irc.planner import Plan, check_plan
from irc.planner.idle import setup_flows
from irc.schedule.kernel import build_shift_kernel
from irc.schedule.spec import op_spec_from_bound


@pytest.mark.parametrize("factors, temporal, idle", [
    ((2, 4, 2), {"C": (2, 1, 1), "A": (1, 1, 2), "B": (1, 1, 1)}, (1, 2, 1)),   # B on 2 cores along m
    ((4, 2, 2), {"C": (1, 1, 1), "A": (1, 1, 1), "B": (1, 1, 1)}, (1, 2, 2)),   # on 4, cut along n and k
])
def test_setup_flows_are_the_lowerings_pieces(factors, temporal, idle):
    from irc.lowering.relayout_pieces import setup_pieces

    bound = parse_expression("C[m,n] += A[m,k] * B[k,n]").bind([(8, 12), (12, 16)], (8, 16))
    spec = op_spec_from_bound(bound, 4)
    plan = Plan(("m", "n", "k"), factors, temporal)
    scored = Plan(plan.axes, plan.op_factors, plan.temporal_factors, check_plan(spec, plan, "tiny16", "t10"))
    kernel = build_shift_kernel(bound, plan, "tiny16", "t10", np.float32)
    layout = kernel.tensors["B"]
    count = math.prod(i // t for i, t in zip(idle, layout.temporal))
    shape, _ = kernel.idle_partition(layout, idle)
    pieces = setup_pieces(kernel, "B", idle, shape)
    lowered = sorted(zip(pieces.table[:, :, 0].reshape(-1).tolist(), np.repeat(np.arange(kernel.cores), count).tolist()))
    senders, receivers = setup_flows(scored, "B", count)
    assert sorted(zip(senders.tolist(), receivers.tolist())) == lowered
    # every core gathers its slices from the cores sharing its partition: a slice per
    # member, one of them its own
    assert (senders == receivers).sum() == kernel.cores
