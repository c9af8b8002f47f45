"""Issue 27's generators for the reliability fuzzer (`tests/fuzzing.py`, which draws an
eighth of each tool's cases here): what the project's fuzzer did not make.

* SSA order: a verified program (te or device level) with an op that uses a value moved
  before the op defining it, or the two swapped; run through irc-opt (with a pipeline),
  irc-run and irc-plan --model. Exit 0 is a ``wrong success``.
* Signals during writes: SIGTERM, SIGHUP or SIGINT sent to irc-run while it writes a
  16 MiB ``--output`` (or irc-translate its weights), as soon as the temporary file
  appears or at a random moment; a temporary file left, or an output that does not load,
  is ``files left behind``.
* Names: arguments, results and weights named at and beyond what an npz member can hold
  (65,531 bytes), with NUL characters, or twice.
* Nesting: ``irc-plan --explain`` documents nested up to 100,000 deep, attributes around
  the 100-level limit and brackets around the 256-level one.
"""

from __future__ import annotations

import io
import os
import random
import re
import signal
import zipfile
from collections.abc import Callable, Iterator

import numpy as np

from irc.diagnostics import MAX_ATTRIBUTE_NESTING, MAX_BRACKET_NESTING, MAX_JSON_NESTING
from irc.output import MAX_MEMBER_NAME_BYTES
from tests.fuzzing import PIPELINES, Case, verified_programs

SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)

_DEFINITION = re.compile(r"^(\s*)((?:%[\w$.-]+(?::\d+)?\s*,\s*)*%[\w$.-]+(?::\d+)?)\s*=\s*\S")


# ---------------------------------------------------------------------------
# SSA order
# ---------------------------------------------------------------------------


def _single_line_op(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith(("^", "}", "//")) and not stripped.endswith(("{", "(", ","))


def reorder_uses(rng: random.Random, text: str) -> str | None:
    """``text`` with one op that uses a value moved before the op defining it (in the same
    block), or the two swapped; None when the program has no such pair of one-line ops."""
    lines = text.splitlines()
    pairs = []
    for i, line in enumerate(lines):
        found = _DEFINITION.match(line)
        if found is None or not _single_line_op(line):
            continue
        names = [re.sub(r":\d+$", "", name) for name in re.findall(r"%[\w$.-]+(?::\d+)?", found.group(2))]
        indent = len(found.group(1))
        for j in range(i + 1, len(lines)):
            later = lines[j]
            if not later.strip():
                continue
            depth = len(later) - len(later.lstrip())
            if depth < indent:
                break  # the block ended
            if depth == indent and _single_line_op(later) and any(
                    re.search(re.escape(name) + r"(?![\w$.-])", later) for name in names):
                pairs.append((i, j))
    if not pairs:
        return None
    i, j = rng.choice(pairs)
    if rng.random() < 0.5:
        lines.insert(i, lines.pop(j))
    else:
        lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines) + "\n"


def ssa_order_cases(rng: random.Random, tool: str, count: int) -> Iterator[Case]:
    """Verified te- and device-level programs with a use moved before its definition."""
    programs = [p for p in verified_programs() if "func.func" in p]
    te = [p for p in programs if "te.op" in p and "device." not in p]
    device = [p for p in programs if "device." in p]
    made = 0
    for _ in range(50 * count):
        if made == count:
            return
        level = rng.choice(["te", "device"]) if tool != "irc-plan" else "te"
        seeds = te if level == "te" or not device else device
        mutated = reorder_uses(rng, rng.choice(seeds))
        if mutated is None:
            continue
        made += 1
        if tool == "irc-opt":
            argv = ["prog.mlir", *rng.choice(PIPELINES)]
        elif tool == "irc-run":
            argv = ["prog.mlir"] + rng.choice([[], ["--report"], ["--output", "out.npz"]])
        else:
            argv = ["--model", "prog.mlir", "--device", rng.choice(["tiny4", "tiny16"])]
        yield Case(tool, argv, {"prog.mlir": mutated.encode()}, f"ssa-order-{level}", must_fail=True)


# ---------------------------------------------------------------------------
# Signals during writes
# ---------------------------------------------------------------------------

BIG = """\
func.func @main(%x: tensor<{n}x{n}xf32> {{irc.name = "x"}}) -> (tensor<{n}x{n}xf32> {{irc.name = "y"}}) {{
  %y = te.op "Y[i,j] = X[i,j] + 1.0" (%x) : (tensor<{n}x{n}xf32>) -> tensor<{n}x{n}xf32>
  func.return %y : tensor<{n}x{n}xf32>
}}
"""


def signal_during_write(signum: int, latest: float) -> Callable[[int, str, float], int]:
    """A ``during`` hook: send ``signum`` once a temporary file appears in the case's
    directory (an output being written), or at ``latest`` seconds."""

    def during(pid: int, where: str, seconds: float) -> int:
        writing = any(name.startswith(".irc-") for name in os.listdir(where))
        if not writing and seconds < latest:
            return 0
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            return 0
        return signum

    return during


def npz_sound(*names: str) -> Callable[[str], bool]:
    """A ``sound`` check: each of ``names`` in the directory, if there, is a whole .npz."""

    def sound(where: str) -> bool:
        for name in names:
            path = os.path.join(where, name)
            if not os.path.exists(path):
                continue
            try:
                with np.load(path) as archive:
                    for member in archive.files:
                        archive[member]
            except (OSError, ValueError, EOFError, zipfile.BadZipFile):
                return False
        return True

    return sound


def _old_archive() -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, y=np.zeros(3, np.float32))
    return buffer.getvalue()


def signal_cases(rng: random.Random, tool: str, count: int) -> Iterator[Case]:
    """irc-run writing a large --output, irc-translate large weights, interrupted."""
    for _ in range(count):
        signum = rng.choice(SIGNALS)
        latest = rng.choice([0.05, 0.3, 1.0, 3.0])
        size = rng.choice([256, 1024, 2048])
        if tool == "irc-translate":
            files = {"m.onnx": _big_weights_model(size)}
            argv = ["--import-onnx", "m.onnx", "-o", "m.mlir", "--weights", "w.npz"]
            sound = npz_sound("w.npz")
        else:
            files = {"big.mlir": BIG.format(n=size).encode()}
            argv = ["big.mlir", "--output", "out.npz"]
            sound = npz_sound("out.npz")
        if rng.random() < 0.5:
            files["out.npz" if tool == "irc-run" else "w.npz"] = _old_archive()
        label = f"signal-{signal.Signals(signum).name}-{size}"
        yield Case(tool, argv, files, label, during=signal_during_write(signum, latest), sound=sound)


def _big_weights_model(size: int) -> bytes:
    import onnx
    from onnx import TensorProto, helper

    weight = np.ones((size, size), np.float32)
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, size])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, size])],
                              [onnx.numpy_helper.from_array(weight, "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


# ---------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------

NAMED = """\
func.func @main(%x: tensor<4xf32> {{irc.name = "{arg}"}}, %z: tensor<4xf32> {{irc.name = "{other}"}}) -> (tensor<4xf32> {{irc.name = "{result}"}}) {{
  %y = te.op "Y[i] = X[i] + Z[i]" (%x, %z) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}}
"""


def _name(rng: random.Random) -> tuple[str, bool]:
    """A name and whether an npz member can hold it."""
    char = rng.choice(["a", "\u00e9", "\u4e00"])
    size = len(char.encode())
    length = rng.choice([1, 100, MAX_MEMBER_NAME_BYTES // size, MAX_MEMBER_NAME_BYTES // size + 1, 70_000])
    name = char * length
    if rng.random() < 0.15:
        name = name[:5] + "\\00" + name[5:]  # a NUL, as MLIR's escape
        return name, False
    return name, len(name.encode()) <= MAX_MEMBER_NAME_BYTES


def name_cases(rng: random.Random, tool: str, count: int) -> Iterator[Case]:
    for _ in range(count):
        if tool == "irc-translate":
            import onnx
            from onnx import TensorProto, helper

            name, fits = _name(rng)
            name = name.replace("\\00", "\0")
            node = helper.make_node("Add", ["x", name], ["y"], name="add")
            graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
                                      [helper.make_tensor(name, TensorProto.FLOAT, [2], [1.0, 2.0])])
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
            yield Case(tool, ["--import-onnx", "m.onnx", "-o", "m.mlir"], {"m.onnx": model}, "long-weight-name",
                       must_fail=not fits, then=[("irc-run", ["m.mlir", "--output", "o.npz"])], sound=npz_sound("o.npz"))
            continue
        arg, arg_fits = _name(rng)
        result, result_fits = _name(rng)
        other = arg if rng.random() < 0.15 else "z"
        program = NAMED.format(arg=arg, other=other, result=result)
        argv = ["prog.mlir"] + (["--output", "out.npz"] if rng.random() < 0.7 else [])
        invalid = not (arg_fits and result_fits) or other == arg
        yield Case("irc-run", argv, {"prog.mlir": program.encode()}, "long-name", must_fail=invalid,
                   sound=npz_sound("out.npz"))


# ---------------------------------------------------------------------------
# Nesting
# ---------------------------------------------------------------------------

EXPLAIN = ["--expr", "C[m,n] += A[m,k] * B[k,n]", "--shape", "m=32,k=64,n=48", "--device", "tiny16", "--explain"]
PLAN = '{"axes": ["m", "n", "k"], "op_factors": %s, "temporal_factors": {"A": [1, 1, 1], "B": [1, 1, 1], "C": [1, 1, 1]}}'


def _json_document(rng: random.Random) -> tuple[str, bool]:
    """An --explain document and whether it nests too deeply to be read."""
    depth = rng.choice([1, 50, MAX_JSON_NESTING - 2, MAX_JSON_NESTING, MAX_JSON_NESTING + 1, 1000, 100_000])
    kind = rng.choice(["arrays", "objects", "inside", "string", "numbers"])
    if kind == "arrays":
        return "[" * depth + "]" * depth * rng.choice([0, 1]), depth > MAX_JSON_NESTING
    if kind == "objects":
        return '{"a": ' * depth + "1" + "}" * depth, depth > MAX_JSON_NESTING
    if kind == "inside":  # a plan whose factors hide in nested arrays
        return PLAN % ("[" * depth + "2" + "]" * depth), depth + 1 > MAX_JSON_NESTING
    if kind == "string":  # brackets inside a string do not nest
        return PLAN % '[1, 1, 1], "note": "' + "[" * depth + '"', False
    return PLAN % rng.choice(["[Infinity, 1, 1]", "[NaN, 1, 1]", "[1e400, 1, 1]", "[-1, 1, 1]", f"[{10**30}, 1, 1]",
                              "[2, 4, 1]"]), False


def _deep_attribute(rng: random.Random) -> tuple[str, bool]:
    depth = rng.choice([MAX_ATTRIBUTE_NESTING - 1, MAX_ATTRIBUTE_NESTING, MAX_ATTRIBUTE_NESTING + 1,
                        MAX_BRACKET_NESTING - 3, MAX_BRACKET_NESTING + 1, 5000])
    value = rng.choice(["[" * depth + "1" + "]" * depth, "{a = " * depth + "1" + "}" * depth, "loc"])
    if value == "loc":  # call-site locations nest in parentheses, not in attributes
        value = "loc(" + "callsite(" * depth + '"f"' + ' at "g")' * depth + ")"
        text = f'func.func @f() {{\n  func.return {value}\n}}\n'
        return text, depth + 3 > MAX_BRACKET_NESTING
    text = f'func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {{deep = {value}}} {{\n  func.return %x : tensor<4xf32>\n}}\n'
    return text, depth > MAX_ATTRIBUTE_NESTING


def nesting_cases(rng: random.Random, tool: str, count: int) -> Iterator[Case]:
    for _ in range(count):
        if tool == "irc-plan":
            document, too_deep = _json_document(rng)
            yield Case(tool, [*EXPLAIN, document], {}, "deep-json", must_fail=too_deep)
            continue
        text, too_deep = _deep_attribute(rng)
        argv = ["prog.mlir"] + (rng.choice([[], ["--print-op-generic"]]) if tool == "irc-opt" else [])
        yield Case(tool, argv, {"prog.mlir": text.encode()}, "deep-attribute", must_fail=too_deep)


# ---------------------------------------------------------------------------
# The share of each tool's cases
# ---------------------------------------------------------------------------

GENERATORS = {
    "irc-opt": (ssa_order_cases, nesting_cases),
    "irc-run": (ssa_order_cases, signal_cases, name_cases, nesting_cases),
    "irc-plan": (ssa_order_cases, nesting_cases),
    "irc-translate": (signal_cases, name_cases),
}


def surface_cases(tool: str, count: int, rng: random.Random) -> Iterator[Case]:
    """``count`` cases of ``tool`` from this module's generators, in turn."""
    generators = GENERATORS.get(tool, ())
    for position, generator in enumerate(generators):
        share = count // len(generators) + (position < count % len(generators))
        yield from generator(rng, tool, share)
