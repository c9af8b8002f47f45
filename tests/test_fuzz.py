"""The reliability fuzzer of issue 13 in CI (`tests/fuzzing.py`): mutated programs (the
examples and the lit inputs), ONNX models, npz inputs, device files and command lines
against irc-opt, irc-run, irc-translate and irc-plan. Every case must end in a result
or a clean diagnostic: no traceback, no internal or masked error, no hang, no running
out of memory. The default run is a fixed seed and ``FUZZ_CASES`` cases per tool (75);
``FUZZ_CASES=2000 pytest tests/test_fuzz.py`` runs more, ``benchmarks/fuzz.py`` prints
the figures."""

from __future__ import annotations

import os

import pytest

from tests.fuzzing import BAD_OUTCOMES, TOOLS, fuzz

CASES = int(os.environ.get("FUZZ_CASES", "75"))
SEED = int(os.environ.get("FUZZ_SEED", "0"))


@pytest.mark.slow
@pytest.mark.parametrize("tool", TOOLS)
def test_every_case_ends_in_a_result_or_a_diagnostic(tool):
    bad = []

    def report(case, outcome):
        if outcome.kind in BAD_OUTCOMES:
            bad.append(f"{outcome.kind}: {case.describe()}\n    " + "\n    ".join(outcome.stderr.splitlines()[-3:]))

    counts = fuzz([tool], CASES, SEED, report=report)
    assert sum(counts[tool].values()) == CASES
    assert not bad, f"{len(bad)} of {CASES} {tool} cases ended badly:\n" + "\n".join(bad[:10])
    assert counts[tool]["diagnostic"] > 0  # the mutations do reach the tool's checks


def test_a_case_that_spends_its_cpu_time_is_a_timeout_and_one_that_waits_for_a_cpu_is_not(monkeypatch):
    """The limit is the child's CPU time (RLIMIT_CPU), so a loaded machine does not turn a
    slow-to-schedule case into a timeout; the wall-clock limit is WALL_FACTOR times it."""
    import time

    from tests import fuzzing

    def spin():
        while True:
            pass

    monkeypatch.setattr(fuzzing, "_tool_main", lambda tool: spin)   # the forked child inherits it
    spun = fuzzing.run_tool("irc-opt", seconds=1)
    assert spun.kind == "timeout"   # by its CPU limit, or on a crowded machine by the wall's

    monkeypatch.setattr(fuzzing, "_tool_main", lambda tool: lambda: time.sleep(1.5))
    waited = fuzzing.run_tool("irc-opt", seconds=1)
    assert waited.kind == "ok" and waited.seconds >= 1.5
