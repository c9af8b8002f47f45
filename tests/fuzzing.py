"""The reliability fuzzer of issue 13: mutated inputs against the four tools, each run
in a forked child (so it starts in milliseconds, with the parent's imports warm) under
a time limit and an address-space cap, and each outcome classified.

A *case* is one tool invocation: its command line and the files it reads, made by a
mutator from a seeded `random.Random`:

* programs: the examples and the lit inputs (``tests/filecheck``, split at ``// -----``)
  with 1-3 mutations each: token deletion, duplication and swap, numbers set to 0, -1
  or huge, tensor dimensions and element types, edits inside tensor expressions,
  attribute deletion, inserted tokens, truncation;
* ONNX models of every op type the importer converts (`onnx_schema_model`: built from
  each op's ONNX schema with random attributes, shapes and f32/f16/f64/int/bool element
  types) and from the frontend fuzzer's graph generator
  (``tests/frontend/test_import_fuzz.py``), sometimes with corrupted bytes or shapes;
  what imports is then run, or compiled for a chip and run (a chained case);
* ``.npz`` inputs (wrong shapes, dtypes, values, damaged archives) and device TOML files
  (values out of range, NaN, wrong types, missing or repeated keys);
* command lines (pipelines, pass options, output paths);
* issue 27's surface (`tests/fuzz_surface.py`): uses moved before their definitions at
  te and device level, SIGTERM/SIGHUP/SIGINT while an output is written, names an npz
  cannot hold, deeply nested JSON and attributes.

Every outcome must be ``ok`` (exit 0) or ``diagnostic`` (exit 1 with an ``error:``
line whose message is text, not an exception's class name). The bad ones are
``masked`` (a class name, an empty message or a format placeholder in the message),
``internal error``, ``traceback``, ``timeout``, ``OOM`` (the memory cap was hit or the
child was killed), ``unclean`` (another exit status, or no ``error:`` line), ``wrong
success`` (exit 0 on a case that must be refused: ``tests/fuzz_onnx_refs.py``'s external
references outside the model's folder and attributes ONNX does not allow, malformed
device files, ``tests/fuzz_surface.py``'s invalid programs), ``te/device mismatch`` (a
case's ``check`` found te and chip results that differ beyond the numerics contract) and
``files left behind`` (a temporary ``.irc-*.tmp`` file, or an output a case's ``sound``
finds half-written). A case that sends the tool a signal may also end ``interrupted``
(status 128 + the signal). `EXTRA_GENERATORS` names the generator groups of other
modules (``tests/fuzz_devices.py``); `tests/fuzz_surface.py` makes an eighth of each
tool's cases.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import io
import itertools
import math
import os
import random
import re
import resource
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from irc.tools import stop_quietly_on_signals

ROOT = Path(__file__).resolve().parents[1]

TOOLS = ("irc-opt", "irc-run", "irc-translate", "irc-plan")
OUTCOMES = ("ok", "diagnostic", "interrupted", "masked", "internal error", "traceback", "timeout", "OOM", "unclean",
            "te/device mismatch", "wrong success", "files left behind")
BAD_OUTCOMES = OUTCOMES[3:]
CHECK_FAILED = "fuzz check failed: "
"""How a child reports that a case's ``check`` found a bad outcome (``<outcome>: why``)."""

EXTRA_GENERATORS = {
    "te-vs-device": "tests.fuzz_devices:nonfinite_cases",
    "device-files": "tests.fuzz_devices:device_file_cases",
}
"""Generators of their own modules, run as groups beside the tools' (name ->
``"module:function"``, called as ``function(rng, count, seed)``)."""

CASE_SECONDS = 20.0
"""Per-case CPU time limit (the child's RLIMIT_CPU); no legitimate small case comes near it."""
WALL_FACTOR = 8
"""The wall-clock limit is this many times the CPU limit: on a loaded machine a case waits
for a CPU (a 1.6 s case took over 20 s of wall time under a load of 12 on 2 CPUs), and a
case that hangs without spending CPU is still caught."""
MEMORY_BYTES = 3 << 30
"""Address space a case may add to the parent's (the child's RLIMIT_AS is the sum)."""


# ---------------------------------------------------------------------------
# Cases and outcomes
# ---------------------------------------------------------------------------


@dataclass
class Case:
    """One invocation: ``tool argv...`` in a fresh directory holding ``files``, then each
    of ``then`` (``(tool, argv)``) as long as the ones before succeeded (an imported
    model run, or compiled and run): the outcome is the first failure's, or the last
    run's."""

    tool: str
    argv: list[str]
    files: dict[str, bytes] = field(default_factory=dict)
    label: str = ""
    then: list[tuple[str, list[str]]] = field(default_factory=list)
    must_fail: bool = False
    """The tool must refuse this input: exit 0 is a ``wrong success``."""
    links: dict[str, str] = field(default_factory=dict)
    """Symbolic links to make beside ``files`` (name -> target)."""
    check: Callable[[], tuple[str, str] | None] | None = None
    """Run in the case's directory once every step succeeded: None, or (outcome, why)."""
    group: str = ""
    """The generator group the case is counted under (its tool when empty)."""
    during: Callable[[int, str, float], int] | None = None
    """Called every millisecond while the case runs (pid, directory, seconds so far);
    returns the signal it sent the tool, else 0 (`tests/fuzz_surface.py`)."""
    sound: Callable[[str], bool] | None = None
    """Whether the files the case leaves in its directory are whole (no half-written output)."""

    def describe(self) -> str:
        steps = [(self.tool, self.argv), *self.then]
        return " && ".join(f"{tool} {' '.join(argv)}" for tool, argv in steps) + f"  [{self.label}]"


@dataclass
class Outcome:
    kind: str
    status: int | None
    stdout: str
    stderr: str
    seconds: float


_CLASS_NAME = re.compile(r"\b[A-Z][A-Za-z0-9]*(?:Error|Exception|Exit|Interrupt|Warning)\b")
_PLACEHOLDER = re.compile(r"\{[a-z_][a-z0-9_]*\}")
_ERROR_LINE = re.compile(r"^(?:\S.*?:\d+:\d+: )?error: (.*)$")


def classify(status: int | None, stdout: str, stderr: str, timed_out: bool = False, signalled: int = 0,
             sent: int = 0) -> str:
    """The outcome class of one run (see the module docstring); ``sent``: the signal the
    case sent the tool."""
    if timed_out:
        return "timeout"
    traced = "Traceback (most recent call last)" in stderr + stdout
    if sent and not traced and (signalled == sent or status == 128 + sent):
        return "interrupted"
    if signalled:
        return "OOM" if signalled == signal.SIGKILL else "traceback"
    for line in stderr.splitlines():
        if line.startswith(CHECK_FAILED) and line[len(CHECK_FAILED):].partition(":")[0] in OUTCOMES:
            return line[len(CHECK_FAILED):].partition(":")[0]
    if "Traceback (most recent call last)" in stderr or "Traceback (most recent call last)" in stdout:
        return "traceback"
    if "internal error" in stderr:
        return "internal error"
    if "out of memory" in stderr or "MemoryError" in stderr:
        return "OOM"
    if status == 0:
        return "ok"
    if status != 1:
        return "unclean"
    for line in stderr.splitlines():
        match = _ERROR_LINE.match(line)
        if match:
            message = match.group(1)
            if not message.strip() or message.startswith(" "):
                return "masked"
            if _CLASS_NAME.search(message) or _PLACEHOLDER.search(message):
                return "masked"
            return "diagnostic"
    return "unclean"


def _tool_main(tool: str) -> Callable[[], None]:
    if tool == "irc-opt":
        from irc.tools.irc_opt import main
    elif tool == "irc-run":
        from irc.tools.irc_run import main
    elif tool == "irc-translate":
        from irc.tools.irc_translate import main
    else:
        from irc.tools.irc_plan import main
    return main


def _child(case: Case, directory: str, captured: str, memory_bytes: int, stdout: str | None = None,
           stdin: str | None = None, cpu_seconds: float = CASE_SECONDS) -> None:
    """In the forked child: run the tool as its console script would, then exit."""
    status = 1
    try:
        os.chdir(directory)
        soft = _address_space() + memory_bytes
        resource.setrlimit(resource.RLIMIT_AS, (soft, soft))
        cpu = math.ceil(cpu_seconds)   # SIGXCPU past it: a timeout however loaded the machine is
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        os.dup2(os.open(stdin or os.devnull, os.O_RDONLY), 0)
        for fd, name in ((1, "stdout"), (2, "stderr")):
            os.dup2(os.open(os.path.join(captured, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
        if stdout is not None:  # e.g. /dev/full
            os.dup2(os.open(stdout, os.O_WRONLY), 1)
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=False)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True)
        for tool, argv in [(case.tool, case.argv), *case.then]:
            sys.argv = [tool, *argv]
            main = _tool_main(tool)
            try:
                main()
                status = 0
            except SystemExit as exit:
                code = exit.code
                status = 0 if code is None else (code if isinstance(code, int) else 1)
            except BaseException:  # noqa: BLE001 - what a user would see: a traceback
                traceback.print_exc()
                status = 1
            with contextlib.suppress(Exception):
                sys.stdout.flush()
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            if status != 0:
                break
        if status == 0 and case.check is not None:
            status = _checked(case.check)
    finally:
        os._exit(status)


def _checked(check: Callable[[], tuple[str, str] | None]) -> int:
    """Run a case's check in the child: 0, or 1 after reporting what it found (or its
    traceback)."""
    try:
        found = check()
    except BaseException:  # noqa: BLE001 - a check that failed itself
        traceback.print_exc()
        return 1
    if found is None:
        return 0
    print(f"{CHECK_FAILED}{found[0]}: {found[1]}", file=sys.stderr)
    sys.stderr.flush()
    return 1


def _address_space() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * resource.getpagesize()


class _Running:
    def __init__(self, case: Case, memory_bytes: int, directory: str | None = None, stdout: str | None = None,
                 stdin: bytes | None = None, cpu_seconds: float = CASE_SECONDS):
        self.case = case
        self.temporary = None if directory else tempfile.TemporaryDirectory(prefix="irc-fuzz-")
        self.where = directory or self.temporary.name
        self.captured = tempfile.mkdtemp(prefix="irc-fuzz-out-")
        for name, data in case.files.items():
            path = Path(self.where, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        for name, target in case.links.items():
            os.symlink(target, Path(self.where, name))
        stdin_path = None
        if stdin is not None:
            stdin_path = os.path.join(self.captured, "stdin")
            Path(stdin_path).write_bytes(stdin)
        sys.stdout.flush()
        sys.stderr.flush()
        self.started = time.perf_counter()
        # signals held back across the fork: the child first takes them as a console script
        # does until its main takes over (exit 128 + the signal), never as the parent would
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
        self.pid = os.fork()
        if self.pid == 0:
            stop_quietly_on_signals()
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            _child(case, self.where, self.captured, memory_bytes, stdout, stdin_path, cpu_seconds)
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        self.pidfd = os.pidfd_open(self.pid) if hasattr(os, "pidfd_open") else None
        self.sent = 0

    def watch(self) -> None:
        """Give the case's ``during`` hook its turn (once it has sent a signal, no more)."""
        if self.case.during is not None and not self.sent:
            self.sent = self.case.during(self.pid, self.where, time.perf_counter() - self.started)

    def finish(self, timed_out: bool) -> Outcome:
        if timed_out:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        _, wait_status = os.waitpid(self.pid, 0)
        if self.pidfd is not None:
            os.close(self.pidfd)
        seconds = time.perf_counter() - self.started
        signalled = os.WTERMSIG(wait_status) if os.WIFSIGNALED(wait_status) and not timed_out else 0
        if signalled == signal.SIGXCPU:   # its CPU time ran out (RLIMIT_CPU)
            timed_out, signalled = True, 0
        status = os.WEXITSTATUS(wait_status) if os.WIFEXITED(wait_status) else None
        read = lambda name: (Path(self.captured, name).read_text(errors="replace")  # noqa: E731
                             if Path(self.captured, name).exists() else "")  # a child stopped before it began
        stdout, stderr = read("stdout"), read("stderr")
        shutil.rmtree(self.captured, ignore_errors=True)
        kind = classify(status, stdout, stderr, timed_out, signalled, self.sent)
        if kind in ("ok", "diagnostic", "interrupted"):
            left = [name for name in os.listdir(self.where) if name.startswith(".irc-") and name.endswith(".tmp")]
            if left or (self.case.sound is not None and not self.case.sound(self.where)):
                kind, stderr = "files left behind", stderr + f"\n[fuzzer] left in the directory: {left or 'a damaged output'}"
            elif kind == "ok" and self.case.must_fail:
                kind = "wrong success"
        if self.temporary is not None:
            self.temporary.cleanup()
        return Outcome(kind, status, stdout, stderr, seconds)


def run_cases(cases: Iterable[Case], jobs: int = 2, seconds: float = CASE_SECONDS,
              memory_bytes: int = MEMORY_BYTES) -> Iterator[tuple[Case, Outcome]]:
    """Run every case in a forked child, ``jobs`` at a time; yield (case, outcome) as
    each finishes."""
    _warm_up()
    pending = iter(cases)
    running: list[_Running] = []
    exhausted = False
    while running or not exhausted:
        while not exhausted and len(running) < jobs:
            case = next(pending, None)
            if case is None:
                exhausted = True
            else:
                running.append(_Running(case, memory_bytes, cpu_seconds=seconds))
        if not running:
            break
        now = time.perf_counter()
        wait = max(0.0, min(r.started + seconds * WALL_FACTOR for r in running) - now)
        if any(r.case.during is not None and not r.sent for r in running):
            wait = min(wait, 0.001)  # a hook waits for the moment to send its signal
        fds = [r.pidfd for r in running if r.pidfd is not None]
        if fds:
            select.select(fds, [], [], min(wait, 0.5))
        else:
            time.sleep(min(wait, 0.005))
        for job in list(running):
            finished = _exited(job.pid)
            if not finished:
                job.watch()
            timed_out = not finished and time.perf_counter() - job.started > seconds * WALL_FACTOR
            if finished or timed_out:
                running.remove(job)
                yield job.case, job.finish(timed_out)


def run_tool(tool: str, *argv, cwd: str | os.PathLike | None = None, files: dict[str, bytes] | None = None,
             seconds: float = CASE_SECONDS, stdout: str | None = None, stdin: bytes | str | None = None) -> Outcome:
    """Run one tool invocation in a forked child (in ``cwd``, which keeps the files the
    run writes; standard output to the file ``stdout`` and ``stdin`` as standard input
    when given) and wait for it: the way the tests run a tool without the start-up of a
    new interpreter."""
    _warm_up()
    job = _Running(Case(tool, [str(a) for a in argv], files or {}), MEMORY_BYTES,
                   None if cwd is None else str(cwd), stdout, stdin.encode() if isinstance(stdin, str) else stdin,
                   cpu_seconds=seconds)
    while not _exited(job.pid) and time.perf_counter() - job.started < seconds * WALL_FACTOR:
        if job.pidfd is not None:
            select.select([job.pidfd], [], [], 0.5)
        else:
            time.sleep(0.005)
    return job.finish(not _exited(job.pid))


def _exited(pid: int) -> bool:
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


_WARM = False


def _warm_up() -> None:
    """Import and exercise each tool once in this process, so that forked children
    start with parsers, grammars and dialects loaded."""
    global _WARM
    if _WARM:
        return
    _WARM = True
    from irc.runner import parse_module, run_function  # noqa: F401
    from irc.tools import irc_opt, irc_plan, irc_run, irc_translate  # noqa: F401
    from irc import universe
    from irc.dialects.te_expr import parse_expression

    universe.all_dialects()
    universe.all_passes()
    parse_expression("C[m,n] += A[m,k] * B[k,n]")
    module = parse_module((ROOT / "examples/mlp.mlir").read_text(), "warm.mlir")
    run_function(module)
    import onnx  # noqa: F401
    import onnx.reference  # noqa: F401
    import onnx.shape_inference  # noqa: F401


# ---------------------------------------------------------------------------
# Seeds
# ---------------------------------------------------------------------------


def seed_programs() -> list[str]:
    """The examples and lit inputs, one program per ``// -----`` chunk, comments and
    RUN/CHECK lines dropped."""
    paths = sorted(ROOT.glob("examples/*.mlir")) + sorted(ROOT.glob("tests/filecheck/**/*.mlir"))
    programs = []
    for path in paths:
        for chunk in path.read_text().split("// -----"):
            text = "\n".join(line for line in chunk.splitlines() if not line.lstrip().startswith("//"))
            if text.strip():
                programs.append(text.strip() + "\n")
    return programs


@functools.cache
def verified_programs() -> tuple[str, ...]:
    """The seed programs that parse and verify (the lit inputs hold invalid ones on
    purpose): mutations of these reach the passes and the interpreter."""
    from irc.runner import parse_module

    verified = []
    for text in seed_programs():
        try:
            parse_module(text, "seed.mlir")
        except Exception:  # noqa: BLE001 - an invalid seed is simply not one of these
            continue
        verified.append(text)
    return tuple(verified)


def seed_expressions(programs: list[str]) -> list[str]:
    found = []
    for text in programs:
        found.extend(re.findall(r'(?:te\.op|rtensor\.op|shift\.kernel) "([^"]+)"', text))
    return sorted(set(found)) or ["C[m,n] += A[m,k] * B[k,n]"]


# ---------------------------------------------------------------------------
# Mutators
# ---------------------------------------------------------------------------

HUGE = ["2147483648", "1099511627776", "1000000000000", "9223372036854775807", "1000000000000000000000000000000",
        "340282366920938463463374607431768211456"]
ELEMENT_TYPES = ["f16", "f32", "f64", "bf16", "tf32", "i1", "i3", "i8", "i32", "i64", "index", "f8E4M3FN",
                 "complex<f32>", "ui8", "si16", "none", "f80"]
INSERTS = ["{", "}", "(", ")", "<", ">", "[", "]", '"', ":", ",", "=", "->", "%x", "%0", "^bb0", "!", "#", "@f",
           "builtin.module", "te.op", "shift.loop", "func.return", "loc(unknown)", "-", "x", "0", "\n", "\\",
           "\u00e9", "\ufffd", "dense<1.0>", "array<i64: 1, 2>", "unit", "{}", "#irc.target<\"tiny4\", \"t10\", {}>"]
_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|[%@^#!]?[A-Za-z_][\w.$-]*|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|\s+|.', re.S)
_DIMS = re.compile(r"(tensor|rtensor\.tensor)<([0-9x?]*?)([a-zA-Z][\w<>]*)")
_ATTR = re.compile(r"\b\w+ = (?:array<[^>]*>|\[[^\]]*\]|\"[^\"]*\"|[-\w.+]+(?: : \w+)?)(?:, )?")
EXPR_EDITS = ["axis", "combiner", "bracket", "nest", "wide", "number", "index", "function", "delete", "swap"]
FUNCTIONS = ["relu", "exp", "log", "sqrt", "max", "min", "pow", "select", "cast", "nosuch", "isnan", "and", "not"]


def mutate_expression(rng: random.Random, text: str) -> str:
    """One edit of a tensor expression: a renamed axis, another combiner, an unbalanced
    bracket, deep nesting, a very wide sum, a number, an index, a function, a deletion
    or a swap of two characters."""
    edit = rng.choice(EXPR_EDITS)
    if edit == "axis":
        axes = re.findall(r"\b[a-z]\b", text) or ["i"]
        return re.sub(rf"\b{rng.choice(axes)}\b", rng.choice(["q", "m", "k", "n2", "0", ""]), text, count=rng.randint(1, 3))
    if edit == "combiner":
        return re.sub(r"(\+=|max=|min=|(?<![<>=!])=(?!=))", rng.choice(["=", "+=", "max=", "min=", "*=", "=="]), text, 1)
    if edit == "bracket":
        at = rng.randrange(len(text) + 1)
        return text[:at] + rng.choice("()[],") + text[at:]
    if edit == "nest":
        depth = rng.choice([5, 63, 64, 65, 300, 1000, 3000])
        head, sep, body = text.partition("= ")
        return head + sep + "relu(" * depth + (body or "X[i]") + ")" * depth if sep else text
    if edit == "wide":
        terms = rng.choice([10, 299, 300, 301, 450, 2000])
        head, sep, body = text.partition("= ")
        return head + sep + " + ".join([body or "X[i]"] * terms) if sep else text
    if edit == "number":
        numbers = list(re.finditer(r"\d+(?:\.\d+)?", text))
        if not numbers:
            return text + " * " + rng.choice(HUGE + ["nan", "inf", "1e309", "0"])
        found = rng.choice(numbers)
        return text[: found.start()] + rng.choice(["0", "-1", "nan", "1e309", *HUGE]) + text[found.end():]
    if edit == "index":
        return re.sub(r"\[([a-z])", lambda m: "[" + rng.choice(["2*", "1000000000*", "-", "3+", "I[0],", ""]) + m.group(1), text, 1)
    if edit == "function":
        return re.sub(r"=\s*", lambda m: m.group(0) + rng.choice(FUNCTIONS) + "(", text, 1) + ")"
    if edit == "delete" and text:
        at = rng.randrange(len(text))
        return text[:at] + text[at + rng.randint(1, 4):]
    if len(text) > 2:
        a, b = sorted(rng.sample(range(len(text)), 2))
        return text[:a] + text[b] + text[a + 1:b] + text[a] + text[b + 1:]
    return text


def mutate_program(rng: random.Random, text: str) -> tuple[str, str]:
    """``text`` with 1-3 mutations; returns it and the names of the mutations."""
    names = []
    if rng.random() < 0.15:
        return text, "none"
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        kind = rng.choice(["delete", "duplicate", "swap", "number", "dims", "element", "expression", "attribute",
                           "insert", "truncate", "expression", "number", "dims", "element", "number", "attribute"])
        tokens = _TOKEN.findall(text)
        significant = [i for i, t in enumerate(tokens) if not t.isspace()]
        if kind in ("delete", "duplicate", "swap", "insert") and not significant:
            kind = "truncate"
        if kind == "delete":
            at = rng.choice(significant)
            tokens[at] = ""
        elif kind == "duplicate":
            at = rng.choice(significant)
            tokens[at] = tokens[at] * 2 if rng.random() < 0.5 else tokens[at] + " " + tokens[at]
        elif kind == "swap":
            a, b = rng.choice(significant), rng.choice(significant)
            tokens[a], tokens[b] = tokens[b], tokens[a]
        elif kind == "insert":
            at = rng.choice(significant)
            tokens[at] = rng.choice(INSERTS) + tokens[at]
        elif kind == "number":
            numbers = [i for i, t in enumerate(tokens) if re.fullmatch(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?", t)]
            if numbers:
                tokens[rng.choice(numbers)] = rng.choice(["0", "-1", "1", "2", *HUGE, "1.0e+309", "0.5"])
        elif kind == "truncate":
            text = text[: rng.randrange(len(text) + 1)]
            names.append(kind)
            continue
        text = "".join(tokens)
        if kind == "dims":
            found = list(_DIMS.finditer(text))
            if found:
                match = rng.choice(found)
                dims = match.group(2).rstrip("x").split("x") if match.group(2) else []
                if dims and dims != [""]:
                    dims[rng.randrange(len(dims))] = rng.choice(["0", "1", "3", "?", "-1", *HUGE[:3]])
                choice = rng.random()
                if choice < 0.2:
                    dims.append(rng.choice(["1", "2", "7"]))
                elif choice < 0.3 and dims:
                    dims.pop()
                new = "x".join(dims) + ("x" if dims else "")
                text = text[: match.start(2)] + new + text[match.end(2):]
        elif kind == "element":
            found = list(_DIMS.finditer(text))
            if found:
                match = rng.choice(found)
                text = text[: match.start(3)] + rng.choice(ELEMENT_TYPES) + text[match.end(3):]
        elif kind == "expression":
            found = list(re.finditer(r'((?:te\.op|rtensor\.op|shift\.kernel|device\.\w+) )"([^"]*)"', text))
            if found:
                match = rng.choice(found)
                text = text[: match.start(2)] + mutate_expression(rng, match.group(2)) + text[match.end(2):]
        elif kind == "attribute":
            found = list(_ATTR.finditer(text))
            if found:
                match = rng.choice(found)
                text = text[: match.start()] + text[match.end():]
        names.append(kind)
    return text, "+".join(names)


def mutate_toml(rng: random.Random, text: str) -> tuple[str, str]:
    """A device file with one or two bad edits: a value out of range or of the wrong
    type, a deleted, repeated or renamed key, garbage, truncation."""
    lines = text.splitlines()
    names = []
    for _ in range(rng.choice([1, 1, 2])):
        values = [i for i, line in enumerate(lines) if "=" in line and not line.lstrip().startswith("#")]
        kind = rng.choice(["value", "value", "value", "delete", "repeat", "rename", "garbage", "truncate", "section"])
        if kind == "value" and values:
            at = rng.choice(values)
            key = lines[at].split("=")[0]
            lines[at] = key + "= " + rng.choice(["0", "-1", "nan", "inf", "-inf", "1e-300", "1e300", "0.0", '"x"', "true",
                                                "[1, 2, 3]", "[]", "[0, 16]", "9223372036854775807", "1099511627777",
                                                "{a = 1}", '"' + "a" * 300 + '"', '""', "1.5", "[16.0, 16.0]"])
        elif kind == "delete" and values:
            del lines[rng.choice(values)]
        elif kind == "repeat" and values:
            at = rng.choice(values)
            lines.insert(at, lines[at])
        elif kind == "rename" and values:
            at = rng.choice(values)
            lines[at] = "x" + lines[at]
        elif kind == "garbage":
            lines.insert(rng.randrange(len(lines) + 1), rng.choice(["[[[", "= 1", "a = ", "\x00", "[cores]", "a.b.c = [[[[1]]]]"]))
        elif kind == "section":
            sections = [i for i, line in enumerate(lines) if line.startswith("[")]
            if sections:
                del lines[rng.choice(sections)]
        else:
            text = "\n".join(lines)
            lines = text[: rng.randrange(len(text) + 1)].splitlines()
        names.append(kind)
    return "\n".join(lines) + "\n", "+".join(names)


MLP_SHAPES = {"x": (8, 64), "w1": (64, 32), "b1": (32,), "w2": (32, 16)}


def mutate_npz(rng: random.Random) -> tuple[bytes, str]:
    """An ``--inputs`` archive for examples/mlp.mlir with one problem (or none)."""
    arrays = {name: np.random.default_rng(rng.randrange(1 << 30)).standard_normal(shape).astype(np.float32)
              for name, shape in MLP_SHAPES.items()}
    kind = rng.choice(["fine", "shape", "dtype", "values", "missing", "extra", "scalar", "npy", "bytes", "truncate",
                       "empty", "member", "compressed", "dtype", "values"])
    name = rng.choice(list(arrays))
    shape = MLP_SHAPES[name]
    if kind == "shape":
        arrays[name] = np.zeros(rng.choice([(), (1,), shape + (1,), shape[::-1], (20000, 20000)]), np.float32)
    elif kind == "dtype":
        maker = rng.choice([
            lambda: np.ones(shape, np.complex64), lambda: np.full(shape, "ab"), lambda: np.full(shape, b"ab"),
            lambda: np.zeros(shape, "datetime64[s]"), lambda: np.zeros(shape, "timedelta64[s]"),
            lambda: np.zeros(shape, [("a", "f4"), ("b", "i4")]), lambda: np.ones(shape, np.float64),
            lambda: np.ones(shape, np.int64), lambda: np.ones(shape, bool), lambda: np.ones(shape, np.float16),
            lambda: np.ones(shape, np.uint8), lambda: np.ones(shape, "V4"), lambda: np.ones(shape, np.longdouble),
        ])
        arrays[name] = maker()
    elif kind == "values":
        value = rng.choice([np.nan, np.inf, -np.inf, 1e300, -1e39, 2.0**63, 1e-45])
        dtype = np.float32 if abs(value) < 3e38 or not np.isfinite(value) else np.float64
        arrays[name] = np.full(shape, value, dtype)
        if rng.random() < 0.3:
            arrays[name] = np.full(shape, rng.choice([2**40, -(2**62), 2**63 - 1]), np.int64)
    elif kind == "missing":
        del arrays[name]
    elif kind == "extra":
        arrays["unused"] = np.zeros((1000, 500), np.float32)
    elif kind == "scalar":
        arrays[name] = np.float32(1.0)
    buffer = io.BytesIO()
    if kind == "npy":
        np.save(buffer, arrays["x"])
    elif kind == "compressed":
        np.savez_compressed(buffer, **arrays)
    elif kind == "member":
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr("x", b"not an array")
            archive.writestr("w1.npy", b"\x93NUMPY\x01\x00garbage")
    elif kind != "empty":
        np.savez(buffer, **arrays)
    data = buffer.getvalue()
    if kind == "bytes" and data:
        data = bytearray(data)
        for _ in range(rng.randint(1, 20)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        data = bytes(data)
    elif kind == "truncate":
        data = data[: rng.randrange(len(data) + 1)]
    return data, f"npz-{kind}"


PIPELINES = [
    [], [], ["-p", "inference{device=tiny4}"], ["-p", "rtensor-partition{device=tiny16},rtensor-to-shift,rotation-align"],
    ["-p", "rtensor-check"], ["-p", "rotation-align"], ["-p", "shift-to-device,device-alloc"],
    ["-p", "rtensor-partition{device=tiny4 mode=op}"], ["-p", "irc-target{device=tiny8}"], ["--print-op-generic"],
]
BAD_PASS_SPECS = ["nosuchpass", "inference{device}", "inference{x=1}", "inference{", "rtensor-partition{strict=maybe}",
                  "inference{device=" + "a" * 5000 + "}", "inference{device=/nonexistent/d.toml}", ",,", "inference{cost=bogus}",
                  "inference{device=tiny4 device=tiny8}", "rtensor-partition{mode=x}", "canonicalize{x=1}", "{}", "inference}"]


def program_cases(rng: random.Random, programs: list[str], count: int, tool: str) -> Iterator[Case]:
    for _ in range(count):
        verified = verified_programs()
        seed = rng.choice(verified) if verified and rng.random() < 0.7 else rng.choice(programs)
        text, label = mutate_program(rng, seed)
        data = text.encode()
        if rng.random() < 0.03:
            at = rng.randrange(len(data) + 1)
            data, label = data[:at] + bytes([rng.choice([0xFF, 0xC3, 0x80, 0x00])]) + data[at:], label + "+byte"
        files = {"prog.mlir": data}
        if tool == "irc-opt":
            argv = ["prog.mlir", *rng.choice(PIPELINES)]
            roll = rng.random()
            if roll < 0.05:
                argv = ["prog.mlir", "-p", rng.choice(BAD_PASS_SPECS)]
            elif roll < 0.1:
                argv += ["-o", rng.choice(["prog.mlir", "out.mlir", "missing/out.mlir", ".", "/dev/null"])]
            elif roll < 0.13:
                argv = ["prog.mlir", "--split-input-file", "--verify-diagnostics"]
        else:
            argv = ["prog.mlir"]
            roll = rng.random()
            if roll < 0.15:
                argv.append("--report")
            elif roll < 0.2:
                argv += ["--trace", rng.choice(["t.json", "prog.mlir", "missing/t.json", "."])]
            elif roll < 0.25:
                argv += ["--output", rng.choice(["out.npz", "out", "prog.mlir", "missing/o.npz"])]
            elif roll < 0.3:
                argv += ["--seed", rng.choice(["-1", "0", "7", str(2**70), "x"])]
            elif roll < 0.33:
                argv += ["--entry", rng.choice(["nosuch", "main", ""])]
        yield Case(tool, argv, files, label)


def npz_cases(rng: random.Random, count: int) -> Iterator[Case]:
    mlp = (ROOT / "examples/mlp.mlir").read_bytes()
    for _ in range(count):
        data, label = mutate_npz(rng)
        argv = ["mlp.mlir", "--inputs", "in.npz"]
        if rng.random() < 0.2:
            argv.append("--allow-lossy")
        if rng.random() < 0.1:
            argv += ["--output", rng.choice(["in", "in.npz", "out.npz"])]
        yield Case("irc-run", argv, {"mlp.mlir": mlp, "in.npz": data}, label)


def toml_cases(rng: random.Random, count: int) -> Iterator[Case]:
    base = (ROOT / "irc/devices/tiny16.toml").read_text()
    mlp = (ROOT / "examples/mlp.mlir").read_bytes()
    for _ in range(count):
        text, label = mutate_toml(rng, base)
        files = {"dev.toml": text.encode()}
        if rng.random() < 0.5:
            yield Case("irc-plan", ["--expr", "C[m,n] += A[m,k] * B[k,n]", "--shape", "m=32,k=64,n=48", "--device", "dev.toml"],
                       files, "toml-" + label)
        else:
            files["mlp.mlir"] = mlp
            yield Case("irc-opt", ["mlp.mlir", "-p", 'inference{device="dev.toml"}'], files, "toml-" + label)


def plan_cases(rng: random.Random, programs: list[str], expressions: list[str], count: int) -> Iterator[Case]:
    te_programs = [p for p in programs if "te.op" in p and "rtensor" not in p and "shift." not in p]
    for _ in range(count):
        roll = rng.random()
        if roll < 0.55:
            expr = rng.choice(expressions)
            if rng.random() < 0.6:
                expr = mutate_expression(rng, expr)
            axes = sorted(set(re.findall(r"\b([a-z][a-z0-9]?)\b", expr)) - {"in", "where"} - set(FUNCTIONS)) or ["i"]
            valid = rng.random() < 0.6
            choices = ["1", "2", "3", "8", "16", "64"] if valid else ["1", "8", "0", "-1", "x", "1000000", HUGE[1]]
            extents = ",".join(f"{a}={rng.choice(choices)}" for a in axes[:6] if valid or rng.random() < 0.95)
            argv = ["--expr", expr, "--shape", extents or "i=4", "--device", rng.choice(["tiny4", "tiny16", "ipu-mk2"])]
            extra = rng.random()
            if extra < 0.15:
                argv.append("--pareto")
            elif extra < 0.25:
                argv.append("--json")
            elif extra < 0.35:
                argv += ["--explain", rng.choice(['{"axes": ["m"], "F_op": [1]}', "{", "[]", '{"F_op": "x"}', "null"])]
            elif extra < 0.45:
                argv += ["--dtype", rng.choice(["f32", "bf16", "i3", "", "complex"])]
            elif extra < 0.5:
                argv += ["--cost", rng.choice(["seed003", "bogus", ""])]
            yield Case("irc-plan", argv, {}, "expr")
        elif roll < 0.9 and te_programs:
            text, label = mutate_program(rng, rng.choice(te_programs))
            argv = ["--model", "m.mlir", "--device", rng.choice(["tiny4", "tiny16"])]
            if rng.random() < 0.2:
                argv += ["--baseline", rng.choice(["vgm", "roller", "fastest"])]
            yield Case("irc-plan", argv, {"m.mlir": text.encode()}, "model-" + label)
        else:
            argv = rng.choice([
                ["--model", "bert-tiny", "--layers", rng.choice(["0", "-1", "1"]), "--seq", rng.choice(["0", "4"])],
                ["--expr", "C[m] = A[m]"], ["--shape", "m=4"], ["--expr", "C[m] = A[m]", "--shape", "m=4", "--device", "a" * 5000],
                ["--expr", "C[m] = A[m]", "--shape", "m=4", "--device", "/nonexistent/x.toml"],
                ["--model", "nosuch.onnx"], ["--model", "bert-tiny", "--batch", "0"], ["--nope"],
            ])
            yield Case("irc-plan", argv, {}, "cli")


def onnx_cases(rng: random.Random, count: int, seed: int) -> Iterator[Case]:
    """Models of the importer's operators (`onnx_schema_model`: every op type
    `irc.frontend.onnx_ops` converts, random attributes, shapes and dtypes) and of the
    frontend fuzzer's graph generator (drawn deterministically from ``seed``); some with
    damaged bytes or mutated command lines. What imports is often run (irc-run), or
    compiled for a chip and run."""
    generated = iter(onnx_models(count // 4, seed))
    for _ in range(count):
        model = next(generated, None) if rng.random() < 0.25 else None
        if model is not None:
            model, shape = model
        else:
            model, shape = onnx_schema_model(rng)
        data = model.SerializeToString()
        label = "onnx"
        argv = ["--import-onnx", "m.onnx"]
        then = []
        roll = rng.random()
        if roll < 0.1:
            data = bytearray(data)
            for _ in range(rng.randint(1, 8)):
                data[rng.randrange(len(data))] = rng.randrange(256)
            data, label = bytes(data), "onnx-bytes"
        elif roll < 0.15:
            data, label = data[: rng.randrange(len(data) + 1)], "onnx-truncate"
        elif roll < 0.25:
            argv += ["--shape", rng.choice([f"x={'x'.join(map(str, shape))}", "x=0", "x=1x2x3x4x5", "y=2", "x=", "=3",
                                            f"x={HUGE[0]}"])]
            label = "onnx-shape"
        elif roll < 0.3:
            argv += ["-o", rng.choice(["m.onnx", "out.mlir", "missing/o.mlir"])]
            label = "onnx-output"
        elif roll < 0.35:
            argv += ["--weights", rng.choice(["m.onnx", "w.npz", "missing/w.npz"])]
            label = "onnx-weights"
        elif roll < 0.8:
            argv += ["-o", "m.mlir"]
            then = [("irc-run", ["m.mlir", "--seed", str(rng.randrange(4))])]
            label = "onnx-run"
        else:
            argv += ["-o", "m.mlir"]
            device = rng.choice(["tiny4", "tiny16"])
            then = [("irc-opt", ["m.mlir", "-p", f"inference{{device={device}}}", "-o", "d.mlir"]),
                    ("irc-run", ["d.mlir"])]
            label = "onnx-chip"
        yield Case("irc-translate", argv, {"m.onnx": data}, label, then)


ONNX_TYPES = {"tensor(float)": 1, "tensor(float16)": 10, "tensor(int64)": 7, "tensor(bool)": 9, "tensor(int32)": 6,
              "tensor(double)": 11, "tensor(int8)": 3, "tensor(uint8)": 2}
"""The element types the generator draws (ONNX TensorProto codes), most likely first."""
TYPE_WEIGHTS = [40, 12, 15, 10, 8, 5, 5, 5]
PARAMETER_INPUTS = {"shape", "axes", "pads", "starts", "ends", "steps", "repeats", "K", "k", "split", "axis",
                    "indices", "start", "limit", "delta", "min", "max", "constant_value", "ratio", "training_mode"}
"""Inputs that converters take as constants: made initializers (mostly) with values
drawn around the tensors' rank and shape."""
STRING_ATTRIBUTES = {
    "mode": ["constant", "reflect", "edge", "bogus"], "auto_pad": ["NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", "x"],
    "equation": ["ij,jk->ik", "i,i->", "ij->ji", "bij,bjk->bik", "ii->i", "...i,...i->...", "i", "ij,jk"],
    "approximate": ["none", "tanh", "x"], "reduce": ["sum", "mean"],
}


def _onnx_ops() -> list[str]:
    from irc.frontend.onnx_ops import CUSTOM_DOMAINS, supported_ops

    return [op for op in supported_ops() if op not in ("EmbeddingBag", "TableBatchedEmbedding")
            and not any(op.startswith(domain) for domain in CUSTOM_DOMAINS)]


def _schema(op: str, opset: int):
    import onnx

    for version in (opset, 20, 21):
        try:
            return onnx.defs.get_schema(op, version), max(version, 13)
        except onnx.defs.SchemaError:
            continue
    return None, opset


def _draw_shape(rng: random.Random, like: tuple[int, ...] | None) -> tuple[int, ...]:
    if like is not None and rng.random() < 0.7:
        shape = list(like)
        roll = rng.random()
        if roll < 0.2 and shape:  # broadcastable: fewer leading dims
            shape = shape[rng.randrange(len(shape) + 1):]
        elif roll < 0.35 and shape:
            shape[rng.randrange(len(shape))] = 1
        return tuple(shape)
    rank = rng.choice([0, 1, 1, 2, 2, 3, 4])
    return tuple(rng.choice([1, 2, 3, 4, 5]) for _ in range(rank))


def _draw_values(rng: random.Random, dtype, shape: tuple[int, ...], rank: int, name: str) -> np.ndarray:
    size = int(np.prod(shape)) if shape else 1
    if dtype.kind in "iu":
        pool = list(range(-rank - 1, rank + 4)) if name in PARAMETER_INPUTS else list(range(-3, 8))
        if rng.random() < 0.08:
            pool += [2**31 - 1, -(2**40), 2**62, np.iinfo(dtype).max, np.iinfo(dtype).min]
        values = [rng.choice(pool) for _ in range(size)]
        info = np.iinfo(dtype)
        return np.array([min(max(v, info.min), info.max) for v in values], dtype).reshape(shape)
    if dtype.kind == "b":
        return np.array([rng.random() < 0.5 for _ in range(size)], bool).reshape(shape)
    special = [0.0, 1.0, -1.0, 0.5, 3.0, float("nan"), float("inf"), -float("inf"), 1e30, 65504.0, 1e-8]
    values = [rng.choice(special) if rng.random() < 0.15 else rng.uniform(-4, 4) for _ in range(size)]
    with np.errstate(over="ignore"):
        return np.array(values, np.float64).astype(dtype).reshape(shape)


def _plausible(rng: random.Random, name: str, rank: int):
    """A value of attribute or parameter input ``name`` that is often legal for a tensor
    of ``rank`` (axes in range, spatial lists of the spatial rank, flags 0/1), or None."""
    spatial = max(rank - 2, 1)
    if name == "axis":
        return rng.randrange(-rank, rank) if rank else 0
    if name == "axes":
        return rng.sample(range(rank), rng.randint(1, rank)) if rank else []
    if name in ("keepdims", "transA", "transB", "upper", "largest", "sorted", "exclusive", "reverse", "ceil_mode",
                "count_include_pad", "select_last_index", "noop_with_empty_axes", "allowzero", "fmod"):
        return rng.choice([0, 1])
    if name in ("kernel_shape", "strides", "dilations"):
        return [rng.choice([1, 2, 3]) for _ in range(spatial)]
    if name == "pads":
        return [rng.choice([0, 0, 1, 2]) for _ in range(2 * (spatial if rank > 2 else rank))]
    if name in ("starts", "ends"):
        return [rng.randint(-3, 4) for _ in range(rng.randint(1, max(rank, 1)))]
    if name == "repeats":
        return [rng.choice([1, 1, 2, 3]) for _ in range(rank)]
    if name in ("K", "k"):
        return [rng.choice([1, 2, 3])] if name == "K" else rng.choice([-1, 0, 1])
    if name == "group":
        return rng.choice([1, 1, 2])
    return None


def _draw_attribute(rng: random.Random, name: str, kind, rank: int):
    import onnx
    from onnx import helper

    types = onnx.defs.OpSchema.AttrType
    plausible = _plausible(rng, name, rank) if rng.random() < 0.75 else None
    if plausible is not None and kind in (types.INT, types.INTS):
        if kind == types.INT:
            return plausible[0] if isinstance(plausible, list) and plausible else (
                plausible if isinstance(plausible, int) else 0)
        return plausible if isinstance(plausible, list) else [plausible]
    if name == "to":
        return rng.choice([1, 1, 7, 9, 10, 6, 11, 2, 3, 8, 16])
    if kind == types.INT:
        return rng.choice([-2, -1, 0, 0, 1, 1, 2, 3, rank, rank - 1, 2**31, -(2**40)])
    if kind == types.INTS:
        length = rng.choice([rank, rank, 2 * rank, 1, 2, 0, max(rank - 2, 1)])
        pool = [-1, 0, 1, 1, 2, 2, 3] + ([2**40, -(2**62)] if rng.random() < 0.05 else [])
        if name == "perm":
            perm = list(range(rank))
            rng.shuffle(perm)
            return perm if rng.random() < 0.8 else [rng.choice(pool) for _ in range(length)]
        return [rng.choice(pool) for _ in range(length)]
    if kind == types.FLOAT:
        return rng.choice([0.5, 1.0, -1.0, 0.0, 1e-5, 2.0, 0.01, float("nan"), float("inf"), 1e300])
    if kind == types.FLOATS:
        return [rng.choice([0.5, 1.0, -1.0, 0.0]) for _ in range(rng.randint(0, 3))]
    if kind == types.STRING:
        return rng.choice(STRING_ATTRIBUTES.get(name, ["x", "", "none"]))
    if kind == types.TENSOR:
        code = rng.choice([1, 7, 9, 10, 6])
        dtype = helper.tensor_dtype_to_np_dtype(code)
        values = _draw_values(rng, np.dtype(dtype), (1,), 1, name)
        return onnx.numpy_helper.from_array(values, name)
    return None


def onnx_schema_model(rng: random.Random):
    """A graph of 1-3 nodes drawn from the importer's supported op types, built from
    each op's ONNX schema: inputs of allowed (random) element types and shapes, the
    parameter inputs (shapes, axes, pads, ...) as initializers of values around the
    rank, random attributes in and out of their legal ranges. Returns the model and the
    shape of its input ``x``."""
    import onnx
    from onnx import helper

    opset = rng.choice([13, 17, 17, 17, 18, 20])
    ops = _onnx_ops()
    inputs, initializers, nodes = [], [], []
    values: list[tuple[str, int, tuple[int, ...]]] = []  # (name, ONNX type, shape) computed so far
    main_shape = _draw_shape(rng, None)
    counter = itertools.count()
    first_shape = main_shape
    for _ in range(rng.choice([1, 1, 2, 2, 3])):
        op = rng.choice(ops)
        schema, version = _schema(op, opset)
        if schema is None:
            continue
        opset = max(opset, version) if version != opset else opset
        chosen: dict[str, int] = {}
        for constraint in schema.type_constraints:
            allowed = [ONNX_TYPES[t] for t in constraint.allowed_type_strs if t in ONNX_TYPES]
            if allowed:
                weights = [TYPE_WEIGHTS[list(ONNX_TYPES.values()).index(t)] for t in allowed]
                chosen[constraint.type_param_str] = rng.choices(allowed, weights)[0]
        names = []
        for position, formal in enumerate(schema.inputs):
            option = formal.option
            optional = option == onnx.defs.OpSchema.FormalParameterOption.Optional
            variadic = option == onnx.defs.OpSchema.FormalParameterOption.Variadic
            if optional and rng.random() < 0.5:
                names.append("")
                continue
            kind = ONNX_TYPES.get(formal.type_str) or chosen.get(formal.type_str)
            if kind is None:
                kind = 1
            for _ in range(rng.choice([1, 2, 3]) if variadic else 1):
                dtype = np.dtype(helper.tensor_dtype_to_np_dtype(kind))
                name = f"t{next(counter)}"
                if formal.name in PARAMETER_INPUTS and position > 0 and (dtype.kind in "iu" or rng.random() < 0.5):
                    length = rng.choice([len(main_shape), 2 * len(main_shape), 1, 0]) if formal.name not in (
                        "axis", "K", "k", "start", "limit", "delta", "constant_value", "min", "max", "ratio",
                        "training_mode") else None
                    shape = (length,) if length is not None else ()
                    array = _draw_values(rng, dtype, shape, len(main_shape), formal.name)
                    plausible = _plausible(rng, formal.name, len(main_shape)) if rng.random() < 0.7 else None
                    if plausible is not None and dtype.kind in "iu":
                        array = np.array(plausible, dtype).reshape(() if length is None else (-1,))
                    if formal.name == "shape" and rng.random() < 0.6:  # a reshape that may fit
                        array = np.array(rng.choice([[-1], [int(np.prod(main_shape))], list(main_shape)[::-1],
                                                     [1, -1], [0, -1]]) or [1], np.int64)
                    initializers.append(onnx.numpy_helper.from_array(array, name))
                elif values and rng.random() < 0.6 and any(v[1] == kind for v in values):
                    name = rng.choice([v for v in values if v[1] == kind])[0]
                else:
                    shape = first_shape if not inputs else _draw_shape(rng, main_shape)
                    if rng.random() < 0.2:  # a constant operand
                        initializers.append(onnx.numpy_helper.from_array(
                            _draw_values(rng, dtype, shape, len(main_shape), formal.name), name))
                    else:
                        name = "x" if not inputs else name
                        inputs.append(helper.make_tensor_value_info(name, kind, list(shape)))
                names.append(name)
        while names and names[-1] == "":
            names.pop()
        attributes = {}
        for attribute_name, attribute in schema.attributes.items():
            if attribute.required or rng.random() < 0.5:
                value = _draw_attribute(rng, attribute_name, attribute.type, len(main_shape))
                if value is not None and not (isinstance(value, list) and not value):
                    attributes[attribute_name] = value
        outputs = [f"v{next(counter)}" for formal in schema.outputs
                   if formal.option != onnx.defs.OpSchema.FormalParameterOption.Optional or rng.random() < 0.3]
        nodes.append(helper.make_node(op, names, outputs, name=f"n{len(nodes)}", **attributes))
        out_type = next(iter(chosen.values()), 1) if op not in ("Shape", "Size", "ArgMax", "ArgMin") else 7
        values.extend((name, out_type, main_shape) for name in outputs)
    if not nodes:
        nodes.append(helper.make_node("Relu", ["x"], ["v0"], name="n0"))
        inputs.append(helper.make_tensor_value_info("x", 1, list(main_shape)))
        outputs = ["v0"]
    graph_outputs = [helper.make_tensor_value_info(name, onnx.TensorProto.UNDEFINED, None)
                     for name in nodes[-1].output[:1]]
    graph = helper.make_graph(nodes, "fuzz", inputs, graph_outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return model, first_shape


def onnx_models(count: int, seed: int) -> list:
    """``count`` (model, input shape) pairs from the generator of
    ``tests/frontend/test_import_fuzz.py``, reproducibly for ``seed``."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed

    from tests.frontend.test_import_fuzz import graphs

    found = []

    @hypothesis_seed(seed)
    @settings(max_examples=count, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(graphs())
    def collect(case):
        found.append(case)

    collect()
    return found[:count]


def cases_for(tool: str, count: int, seed: int) -> Iterator[Case]:
    """``count`` cases of ``tool``, reproducibly for ``seed``, made as they are run (an
    eighth of them by `tests/fuzz_surface.py`'s generators)."""
    from tests.fuzz_surface import surface_cases  # deferred: it builds this module's Cases

    rng = random.Random(f"{tool}:{seed}")
    if tool in EXTRA_GENERATORS:
        module, function = EXTRA_GENERATORS[tool].split(":")
        yield from getattr(importlib.import_module(module), function)(rng, count, seed)
        return
    surface, count = count // 8, count - count // 8
    yield from surface_cases(tool, surface, random.Random(f"{tool}:surface:{seed}"))
    programs = seed_programs()
    if tool == "irc-opt":
        toml = count // 10
        yield from program_cases(rng, programs, count - toml, tool)
        yield from itertools.islice((c for c in toml_cases(rng, 4 * toml) if c.tool == "irc-opt"), toml)
    elif tool == "irc-run":
        npz = count // 4
        yield from program_cases(rng, programs, count - npz, tool)
        yield from npz_cases(rng, npz)
    elif tool == "irc-translate":
        # deferred: the generators build this module's Case
        from tests.fuzz_onnx_refs import onnx_ref_cases

        refs = count // 4
        yield from onnx_cases(rng, count - refs, seed)
        yield from onnx_ref_cases(rng, refs)
    else:
        toml = count // 10
        yield from plan_cases(rng, programs, seed_expressions(programs), count - toml)
        yield from itertools.islice((c for c in toml_cases(rng, 4 * toml) if c.tool == "irc-plan"), toml)


def fuzz(tools: Iterable[str], count: int, seed: int = 0, jobs: int = 2,
         report: Callable[[Case, Outcome], None] | None = None) -> dict[str, Counter]:
    """Run ``count`` cases per tool; outcome counts per tool. ``report`` sees every
    (case, outcome)."""
    counts: dict[str, Counter] = {tool: Counter() for tool in tools}
    cases = (case for tool in tools for case in cases_for(tool, count, seed))
    for case, outcome in run_cases(cases, jobs):
        counts[case.group or case.tool][outcome.kind] += 1
        if report is not None:
            report(case, outcome)
    return counts
