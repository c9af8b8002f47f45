"""irc's command-line tools: argument parsing and printing.

Run as a console script (``irc-opt`` ...), a tool imports xDSL and numpy before its
``main`` installs `irc.diagnostics.guarded_main`'s signal handlers; a SIGINT, SIGTERM or
SIGHUP meanwhile ends it quietly with status 128 + the signal (nothing has been written
yet) instead of a traceback from inside an import (`stop_quietly_on_signals`).
"""

import os
import signal
import sys

TOOL_NAMES = frozenset({"irc-opt", "irc-run", "irc-plan", "irc-translate", "irc-dse"})


def _leave(signum, frame):
    try:
        os.write(2, b"error: interrupted\n")
    except OSError:
        pass
    os._exit(128 + signum)


def stop_quietly_on_signals() -> None:
    """Until a tool's ``main`` takes over, SIGINT, SIGTERM and SIGHUP (those not ignored)
    exit at once with status 128 + the signal."""
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is not None and signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, _leave)


if os.path.basename((getattr(sys, "argv", None) or [""])[0]) in TOOL_NAMES:
    stop_quietly_on_signals()
