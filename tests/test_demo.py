"""`make demo` is one of the README's two commands: it runs in the suite, so a change that
breaks one of its sections (an interpreter bound refusing BERT's exported projections
did) fails `make test`, not a new user's first command."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_demo_runs_every_section_and_its_checks_pass():
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "demo.py")], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "Traceback" not in done.stderr
    assert done.stdout.rstrip().endswith("all checks passed")
    for section in range(1, 7):
        assert f"== {section}. " in done.stdout
