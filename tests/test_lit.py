"""Runs the lit/FileCheck suite under tests/filecheck as part of pytest."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FILECHECK_DIR = Path(__file__).parent / "filecheck"


@pytest.mark.slow
def test_filecheck_suite():
    bin_dir = Path(sys.executable).parent
    lit = shutil.which("lit", path=str(bin_dir)) or shutil.which("lit")
    assert lit, "lit is not installed (pip install -e '.[test]')"
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run(
        [lit, "-v", "-j", str(os.cpu_count() or 2), str(FILECHECK_DIR)],
        capture_output=True, text=True, env=env,
    )
    summary = done.stdout[-4000:] + done.stderr[-2000:]
    assert done.returncode == 0, summary
    assert "Passed:" in done.stdout, summary
