"""`preload-schedule` on device programs (ELK s4.2, s4.4, s4.5): the plan's order and
frontiers are what runs, checked against the program's real liveness."""

import re
from pathlib import Path

import numpy as np
from xdsl.context import Context
from xdsl.dialects.func import FuncOp

from irc.passes.device_alloc import DeviceAlloc
from irc.passes.preload_schedule import PreloadSchedule, schedule_block
from irc.runner import find_function, parse_module, random_inputs, run

PLAN_ORDER = Path(__file__).parents[1] / "filecheck" / "passes" / "preload-schedule" / "plan-order.mlir"


def _program(frontiers=None):
    """plan-order.mlir's device program (before preload-schedule), optionally with every
    kernel's frontier replaced."""
    lines = [line for line in PLAN_ORDER.read_text().splitlines() if not line.startswith("//")]
    text = "\n".join(lines)
    if frontiers is not None:
        values = iter(frontiers)
        text = re.sub(r"frontier = \d+ : i64", lambda m: f"frontier = {next(values)} : i64", text)
    return parse_module(text, "plan-order.mlir")


def _function(module):
    return next(op for op in module.walk() if isinstance(op, FuncOp))


def test_the_plans_order_and_frontiers_are_followed():
    module = _program()
    done = schedule_block(_function(module).body.block, 65536)
    assert done.planned and done.narrowed == 0
    assert done.order == [0, 1, 4, 3, 2, 5, 6, 7]          # the slots of plan-order.mlir
    assert done.frontiers == [3, 4, 5, 6, 7, 7, 8, 8]


def test_frontiers_that_overflow_sram_are_narrowed_and_the_program_still_computes():
    # every kernel's frontier at the end: all four 16 KB weights resident beside the first
    # matmul's 20 KB would need 84 KB of the core's 64 KB
    reference = _program()
    inputs = random_inputs(find_function(reference, None), 0)
    DeviceAlloc().apply(Context(), reference)
    expected, _ = run(reference, inputs)       # loads where the operators need them
    module = _program([8] * 8)
    PreloadSchedule().apply(Context(), module)
    function = _function(module)
    assert "narrowed" in function.attributes["irc.remark"].data and "where the buffers live exceed it" in \
        function.attributes["irc.remark"].data
    DeviceAlloc().apply(Context(), module)     # fits: the narrowing used device-alloc's placement
    results, report = run(module, inputs)
    assert report.peak_sram_bytes <= 65536
    for name, value in expected.items():
        np.testing.assert_array_equal(results[name], value)


def test_without_a_plan_the_widest_frontiers_that_really_fit_are_taken():
    text = "\n".join(line for line in PLAN_ORDER.read_text().splitlines() if not line.startswith("//"))
    module = parse_module(re.sub(r"irc\.preload = \{[^}]*\}, ", "", text), "plan-order.mlir")
    done = schedule_block(_function(module).body.block, 65536)
    assert not done.planned and done.order == list(range(8))
    assert done.frontiers[0] >= 3                             # w1 at least loads during the first matmul
    DeviceAlloc().apply(Context(), module)
