"""benchmarks/fuzz.py prints, per tool, the cases it tried and how each ended."""

import importlib.util
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).parents[2] / "benchmarks" / "fuzz.py"


@pytest.mark.slow
def test_the_figures_name_every_outcome_class(monkeypatch, capsys):
    spec = importlib.util.spec_from_file_location("benchmark_fuzz", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(sys, "argv", ["fuzz.py", "--cases", "4", "--tools", "irc-run,irc-plan", "--seed", "7"])
    module.main()
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("tool"))
    for column in ("cases", "ok", "diagnostic", "masked", "internal error", "traceback", "timeout", "OOM", "bad share"):
        assert column in header
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith("irc-")}
    assert set(rows) == {"irc-run", "irc-plan"} and all(row[1] == "4" for row in rows.values())
