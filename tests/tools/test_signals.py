"""Signals (issue 27, item 3): SIGTERM and SIGHUP stop a tool as SIGINT does: the
temporary file of an output being written is removed, an existing output keeps its
contents, the exit status is 128 + the signal and nothing prints a traceback, also when
the signal arrives after the tool's ``main`` returned (interpreter shutdown, atexit
handlers such as ``logging.shutdown``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from irc.diagnostics import Interrupted, guarded_main
from irc.output import _TEMPORARIES, write_atomically

BIN = Path(sys.executable).parent

BIG = """\
func.func @main(%x: tensor<2048x2048xf32> {irc.name = "x"}) -> (tensor<2048x2048xf32> {irc.name = "y"}) {
  %y = te.op "Y[i,j] = X[i,j] + 1.0" (%x) : (tensor<2048x2048xf32>) -> tensor<2048x2048xf32>
  func.return %y : tensor<2048x2048xf32>
}
"""
"""A program whose result is a 16 MiB archive: its write takes long enough to be hit."""


def _temporaries(directory: Path) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.startswith(".irc-"))


def _signal_during_the_write(directory: Path, signum: int) -> subprocess.CompletedProcess:
    """Run irc-run on `BIG` with ``--output out.npz`` in a real process and send
    ``signum`` as soon as its temporary file appears beside the output."""
    process = subprocess.Popen([BIN / "irc-run", "big.mlir", "--output", "out.npz"], cwd=directory,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while process.poll() is None and time.monotonic() < deadline:
        if _temporaries(directory):
            process.send_signal(signum)
            break
        time.sleep(0.0005)
    stdout, stderr = process.communicate(timeout=60)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_during_a_large_write_leaves_nothing_behind(tmp_path, signum):
    (tmp_path / "big.mlir").write_text(BIG)
    old = tmp_path / "out.npz"
    np.savez(old, y=np.zeros(3))
    for _ in range(3):  # on a loaded machine the signal may come only once the output is written
        done = _signal_during_the_write(tmp_path, signum)
        assert _temporaries(tmp_path) == [] and "Traceback" not in done.stderr
        if done.returncode not in (0, -signum):
            break
        np.savez(old, y=np.zeros(3))
    assert done.returncode == 128 + signum, (done.returncode, done.stderr)
    assert done.stderr.startswith("error: interrupted") and "Traceback" not in done.stderr, done.stderr
    assert _temporaries(tmp_path) == []
    assert np.array_equal(np.load(old)["y"], np.zeros(3))  # the old output as it was


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_after_main_returned_is_no_traceback(tmp_path, signum):
    """A signal while the interpreter shuts down (here from an atexit handler that runs
    before ``logging.shutdown``) exits with 128 + the signal, without the traceback an
    exception raised inside an atexit handler prints."""
    script = tmp_path / "late.py"
    script.write_text(
        "import atexit, logging, os, sys, time\n"
        "from irc.diagnostics import exit_tool\n"
        "logging.getLogger('irc').addHandler(logging.StreamHandler())\n"
        f"atexit.register(lambda: (os.kill(os.getpid(), {int(signum)}), time.sleep(5)))\n"
        "exit_tool(lambda: print('done') or 0)\n"
    )
    done = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=60)
    assert done.stdout == "done\n"
    assert done.returncode == 128 + signum and "Traceback" not in done.stderr, (done.returncode, done.stderr)


def test_an_interrupted_write_removes_its_temporary_file(tmp_path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")

    def interrupted(stream):
        stream.write(b"x" * 1000)
        raise Interrupted(signal.SIGTERM)

    with pytest.raises(Interrupted):
        write_atomically(str(target), interrupted)
    assert target.read_bytes() == b"old" and _temporaries(tmp_path) == [] and not _TEMPORARIES


def test_guarded_main_turns_a_signal_into_its_status(capsys):
    def run():
        os.kill(os.getpid(), signal.SIGHUP)
        time.sleep(5)  # the handler interrupts this

    previous = signal.getsignal(signal.SIGHUP)
    assert guarded_main(run) == 128 + signal.SIGHUP
    assert capsys.readouterr().err == "error: interrupted by SIGHUP\n"
    assert signal.getsignal(signal.SIGHUP) is previous  # an in-process run gives the handlers back


class _HalfWritten:
    """Stands for a zip archive abandoned mid-write: its finalizer fails."""

    def __del__(self):
        raise ValueError("seek of closed file")


def test_a_signal_a_library_turns_into_its_own_error_is_still_an_interrupt(capsys):
    """The fuzzer: SIGTERM inside numpy's savez left zipfile with an open write handle,
    its `close` raised ValueError in place of the interrupt (an internal error), and the
    abandoned ZipFile's finalizer printed a traceback."""
    def run():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        except KeyboardInterrupt:
            _HalfWritten()
            raise ValueError("Can't close the ZIP file while there is an open writing handle on it") from None

    assert guarded_main(run) == 128 + signal.SIGTERM
    err = capsys.readouterr().err
    assert err == "error: interrupted by SIGTERM\n", err


def test_an_ignored_signal_stays_ignored():
    """Under ``nohup`` SIGHUP is ignored, and a tool run in the background ignores
    SIGINT: the tool keeps them ignored."""
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        def run():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGHUP)
            return 0

        assert guarded_main(run) == 0
    finally:
        signal.signal(signal.SIGHUP, previous)
