"""Run a function on the interpreter and keep the chip's report (``irc-run --report``).

Same as ``irc.runner.run_function``, but the interpreter's device and shift functions
are kept so that the chip timeline of the run can be reported: a combined ``Report`` over
every chip the run used (one per device/cost pair), or None for a program with no
`shift`/`device` ops.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter

from irc.interpreter.chip import Chip, Report
from irc.interpreter.registry import all_interpreter_functions, chips_of
from irc.runner import check_inputs, find_function, random_inputs


def merge_reports(chips: list[Chip]) -> Report | None:
    if not chips:
        return None
    if len(chips) == 1:
        return chips[0].report()
    reports = [c.report() for c in chips]
    first = reports[0]
    cycles = {k: sum(r.cycles.get(k, 0.0) for r in reports) for k in first.cycles}
    events = []
    for r in reports:
        events.extend(r.events)
    return Report(
        device="+".join(dict.fromkeys(r.device for r in reports)),
        cost_model="+".join(dict.fromkeys(r.cost_model for r in reports)),
        clock_hz=first.clock_hz, cycles=cycles,
        peak_sram_bytes=max(r.peak_sram_bytes for r in reports),
        sram_bytes=max(r.sram_bytes for r in reports),
        cores_used=max(r.cores_used for r in reports),
        device_cores=max(r.device_cores for r in reports),
        steps=sum(r.steps for r in reports), events=events,
    )


def run_with_report(
    module: ModuleOp, inputs: Mapping[str, np.ndarray] | None = None, entry: str | None = None,
    seed: int = 0,
) -> tuple[dict[str, np.ndarray], Report | None]:
    signature = find_function(module, entry)
    given = random_inputs(signature, seed) if inputs is None else inputs
    args = check_inputs(signature, given)
    interpreter = Interpreter(module)
    chips: list[Chip] = []
    functions = all_interpreter_functions()
    for functions_ in functions:
        interpreter.register_implementations(functions_)
    results = interpreter.call_op(signature.function, tuple(args))
    chips.extend(chips_of(interpreter))
    named = {name: np.asarray(v) for name, v in zip(signature.result_names, results)}
    return named, merge_reports(chips)
