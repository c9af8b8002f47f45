"""IEEE-exact reductions (issue 27, item 3): ``+=``, ``max=`` and ``min=`` over inputs
holding +-inf, NaN, -0.0 and subnormals give the same values at te level and on the chip
under random legal plans (reductions split over steps and over cores, reduced by
``device.reduce``), with the identities and signed zeros of ``irc.interpreter.numerics``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from irc.dialects.te_expr import parse_expression
from irc.devices import load_device
from irc.interpreter import numerics
from irc.interpreter.te_eval import evaluate
from irc.planner import PlanError, check_plan
from irc.cost import CostModelError
from irc.schedule.geometry import AlignError
from irc.schedule.kernel import build_shift_kernel
from irc.schedule.spec import op_spec_from_bound
from tests.plan_strategies import legal_plans, one_rounding_bound, run_kernel

REDUCTIONS = {
    "sum": "Y[i] += X[i,j]",
    "max": "Y[i] max= X[i,j]",
    "min": "Y[i] min= X[i,j]",
    "max2": "Y[i] max= X[i,j,k]",
    "min2": "Y[i] min= X[i,j,k]",
}


def special_values(dtype) -> list[float]:
    """The non-finite and signed-zero values, and the type's smallest subnormals."""
    tiny = float(np.finfo(dtype).smallest_subnormal)
    return [np.inf, -np.inf, np.nan, -0.0, 0.0, tiny, -tiny, 3 * tiny]


@st.composite
def special_inputs(draw, shape, dtype):
    """An array of ``shape`` whose elements are mostly special values (or moderate
    normal numbers, which cannot overflow when summed)."""
    count = int(np.prod(shape))
    pool = special_values(dtype)
    values = draw(st.lists(st.one_of(st.sampled_from(pool), st.floats(-100, 100, width=32)),
                           min_size=count, max_size=count))
    return np.array(values, dtype=np.float64).astype(dtype).reshape(shape)


def assert_same_reduction(kind: str, te: np.ndarray, device: np.ndarray, allowed: np.ndarray) -> None:
    """max/min: bitwise (NaN where NaN, zeros of the same sign); a sum: the same
    non-finite values and signed zeros, finite values within the summation-order bound."""
    assert np.array_equal(np.isnan(te), np.isnan(device))
    assert np.array_equal(np.signbit(te) | np.isnan(te), np.signbit(device) | np.isnan(device))
    if kind != "sum":
        np.testing.assert_array_equal(te, device)
        return
    infinite = np.isinf(te) | np.isinf(device)
    assert np.array_equal(te[infinite], device[infinite])
    finite = np.isfinite(te)
    difference = np.abs(te[finite].astype(np.float64) - device[finite].astype(np.float64))
    assert (difference <= allowed[finite]).all()


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(data=st.data(), kind=st.sampled_from(sorted(REDUCTIONS)), device=st.sampled_from(["tiny4", "tiny16"]),
       dtype=st.sampled_from([np.float32, np.float16]))
def test_special_values_reduce_alike_at_te_and_on_the_chip(data, kind, device, dtype):
    rows, width = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 9))
    shape = (rows, width) if not kind.endswith("2") else (rows, width, data.draw(st.integers(1, 3)))
    bound = parse_expression(REDUCTIONS[kind]).bind([shape], (rows,))
    spec = op_spec_from_bound(bound, np.dtype(dtype).itemsize)
    plan = data.draw(legal_plans(spec, load_device(device).cores))
    try:
        check_plan(spec, plan, device, "t10")
        kernel = build_shift_kernel(bound, plan, device, "t10", dtype)
    except (PlanError, CostModelError, AlignError):
        assume(False)
    x = data.draw(special_inputs(shape, dtype))
    result, _ = run_kernel(kernel, {"X": x}, device, "t10")
    reference = evaluate(bound, [x], np.dtype(dtype))
    assert result.dtype == reference.dtype
    with np.errstate(invalid="ignore"):
        allowed = one_rounding_bound(bound, {"X": x}, result, reference)
    assert_same_reduction(kind.rstrip("2"), reference, result, allowed)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_a_row_of_minus_inf_is_minus_inf_on_the_chip(dtype):
    """The issue's reproducer: max= of a row of -inf, the reduction split over 4 cores."""
    from irc.planner import Plan

    bound = parse_expression("Y[i] max= X[i,j]").bind([(2, 8)], (2,))
    plan = Plan(("i", "j"), (1, 4), {"Y": (1, 1), "X": (1, 1)})
    kernel = build_shift_kernel(bound, plan, "tiny4", "t10", dtype)
    x = np.full((2, 8), -np.inf, dtype)
    x[1, 3] = np.nan
    result, _ = run_kernel(kernel, {"X": x}, "tiny4", "t10")
    assert result[0] == -np.inf and np.isnan(result[1])
    low = parse_expression("Y[i] min= X[i,j]").bind([(2, 8)], (2,))
    result, _ = run_kernel(build_shift_kernel(low, plan, "tiny4", "t10", dtype), {"X": -x}, "tiny4", "t10")
    assert result[0] == np.inf and np.isnan(result[1])


def test_signed_zeros_do_not_depend_on_the_order():
    """-0.0 orders below +0.0 (IEEE 754-2019 maximum/minimum), whichever comes first;
    numpy's own max of [-0.0, 0.0] and [0.0, -0.0] differ."""
    for values in ([-0.0, 0.0], [0.0, -0.0], [-0.0] * 20 + [0.0], [0.0] + [-0.0] * 40):
        row = np.array(values, np.float32)
        assert not np.signbit(numerics.reduce("max=", row, 0))
        assert np.signbit(numerics.reduce("min=", row, 0))
        assert not np.signbit(numerics.combine("max=", row[:1], row[-1:]))[0]
        assert np.signbit(numerics.combine("min=", row[:1], row[-1:]))[0]
    negative = np.full(5, -0.0, np.float32)
    assert np.signbit(numerics.reduce("max=", negative, 0)) and np.signbit(numerics.reduce("min=", negative, 0))


def test_identities_are_infinities_and_type_extremes():
    assert numerics.reduction_identity("max=", np.float32) == -np.inf
    assert numerics.reduction_identity("min=", np.float16) == np.inf
    assert numerics.reduction_identity("max=", np.int32) == np.iinfo(np.int32).min
    assert numerics.reduction_identity("min=", np.int64) == np.iinfo(np.int64).max
    assert numerics.reduction_identity("max=", np.bool_) is False
    # a te op whose output elements are reached by no iteration point gives 0 for them
    bound = parse_expression("Y[i+1] max= X[i,j]").bind([(2, 3)], (4,))
    out = evaluate(bound, [np.full((2, 3), -np.inf, np.float32)], np.float32)
    assert list(out) == [0.0, -np.inf, -np.inf, 0.0]


def test_scattered_max_gives_zeros_their_sign():
    """The general path's ufunc.at route (an output index that is not plain) applies the
    same signed-zero rule as the plain route."""
    bound = parse_expression("Y[2*i+j] max= X[i,j,k]").bind([(2, 2, 3)], (4,))
    x = np.full((2, 2, 3), -0.0, np.float32)
    x[0, 1, 2] = x[1, 0, 0] = 0.0
    assert list(np.signbit(evaluate(bound, [x], np.float32))) == [True, False, False, True]
    low = parse_expression("Y[2*i+j] min= X[i,j,k]").bind([(2, 2, 3)], (4,))
    assert list(np.signbit(evaluate(low, [-x], np.float32))) == [False, True, True, False]
