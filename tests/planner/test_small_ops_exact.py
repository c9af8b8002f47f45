"""Small operators, searched without T10's utilisation floor, are searched exactly.

The floor (T10 s4.3.1) keeps 90% of the cores busy; for ops with few iteration points a
plan on fewer cores is faster (a reduction folded over fewer cores pays fewer reduction
rounds). irc searches every core count, so its bounds must hold for every one: on
devices with more cores than the ops have points in some dims (tiny16, tiny8), the
search's optimum and Pareto frontier equal brute-force enumeration's for the kinds of
op an exported transformer spends most of its time in: reductions (LayerNorm's mean and
variance, RMSNorm's sum of squares, softmax's max and sum), elementwise ops and gathers.
The ops come from te expressions, through the importer's own spec builder."""

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from irc.devices import load_device
from irc.dialects.te_expr import parse_expression
from irc.planner import T10_MIN_UTILIZATION, search
from irc.plans.from_te import op_spec_from_expr, reading_order

from tests.planner.test_search_exact import assert_same_optimum

# name -> (expression, the axes it binds, in the order their extents are drawn)
SMALL_OPS = {
    "layernorm-mean": ("M[a,b] += X[a,b,c] * 0.125", "abc"),
    "layernorm-variance": ("V[a,b] += (X[a,b,c] - M[a,b]) * (X[a,b,c] - M[a,b]) * 0.125", "abc"),
    "rmsnorm-squares": ("N[a] += X[a,h] * X[a,h]", "ah"),
    "softmax-max": ("M[a,b] max= X[a,b,c]", "abc"),
    "softmax-exp": ("E[a,b,c] = exp(X[a,b,c] - M[a,b])", "abc"),
    "softmax-sum": ("S[a,b] += E[a,b,c]", "abc"),
    "scale-shift": ("Y[a,h] = X[a,h] * G[h] + B[h]", "ah"),
    "gelu": ("Y[a,h] = X[a,h] * 0.5 * (1 + tanh(X[a,h] * 0.79788456))", "ah"),
    "gather": ("Y[i,j] = E[I[i],j]", "ij"),
}


def small_spec(name: str, extents: tuple[int, ...], dtype_bytes: int):
    text, axes = SMALL_OPS[name]
    given = dict(zip(axes, extents))
    if name == "gather":   # the table's rows are not an iteration axis: 3 more than the indices
        bound = parse_expression(text).bind([(given["i"] + 3, given["j"]), (given["i"],)], (given["i"], given["j"]))
    else:
        bound = parse_expression(text).bind_extents(given)
    return op_spec_from_expr(bound, dtype_bytes, reading_order(bound))


# tiny chips with more cores than some dims have points; SRAM small enough, in some
# draws, that only plans spreading a tensor over many cores fit
small_devices = st.builds(
    lambda name, sram: replace(load_device(name), sram_bytes=sram) if sram else load_device(name),
    st.sampled_from(["tiny8", "tiny16"]),
    st.sampled_from([None, 64, 160]),
)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(SMALL_OPS)),
    extents=st.tuples(st.integers(1, 5), st.integers(1, 6), st.integers(1, 12)),
    dtype_bytes=st.sampled_from([2, 4]),
    device=small_devices,
    max_padding=st.sampled_from([1.0, 1.5]),
)
def test_small_ops_without_the_floor_match_brute_force(name, extents, dtype_bytes, device, max_padding):
    spec = small_spec(name, extents[: len(SMALL_OPS[name][1])], dtype_bytes)
    assert_same_optimum(spec, device, "t10", 0.0, max_padding)


def test_a_layernorm_reduction_on_fewer_cores_beats_the_floor():
    """The issue's case: LayerNorm's mean over 128 columns of 32 rows on the IPU Mk2. At
    the floor the row is folded over 43 cores (6,203 cycles, 6,024 of them reduction);
    without it, one core per row (1,004 cycles: the fold stays within each core)."""
    spec = small_spec("layernorm-mean", (1, 32, 128), 4)
    floor = search(spec, "ipu-mk2", "t10", min_utilization=T10_MIN_UTILIZATION).best
    free = search(spec, "ipu-mk2", "t10").best
    assert floor.op_factors == (1, 32, 43) and floor.cycles == pytest.approx(6203, abs=1)
    assert free.op_factors == (1, 32, 1) and free.cycles == pytest.approx(1004, abs=1)
    assert free.score.cost.reduction < floor.score.cost.reduction / 8
