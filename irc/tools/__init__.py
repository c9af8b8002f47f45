"""irc's command-line tools: argument parsing and printing.

Run as a console script (``irc-opt`` ...), a tool imports xDSL and numpy before its
``main`` installs `irc.diagnostics.guarded_main`'s signal handlers; a SIGINT, SIGTERM or
SIGHUP meanwhile ends it quietly with status 128 + the signal (nothing has been written
yet) instead of a traceback from inside an import.
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


if os.path.basename((getattr(sys, "argv", None) or [""])[0]) in TOOL_NAMES:
    for _name in ("SIGINT", "SIGTERM", "SIGHUP"):
        _signum = getattr(signal, _name, None)
        if _signum is not None and signal.getsignal(_signum) is not signal.SIG_IGN:
            signal.signal(_signum, _leave)
