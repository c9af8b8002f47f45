"""MLIR-style diagnostics: ``file:line:col: error: message`` plus the source line.

xDSL's parser does not attach source locations to the ops it parses unless the text
spells them out (``loc(...)``); `LocatingParser` records where each op starts, so that
a verifier failure can point at its op in the user's file, as `mlir-opt` does.
"""

from __future__ import annotations

import argparse
import bisect
import math
import os
import re
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NoReturn

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, FloatAttr, IntAttr, ModuleOp, NameLoc, StringAttr
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.irdl.dominance import DominanceInfo
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Input, Span
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

from irc.output import release_unwritten_fifos, remove_temporaries

# xDSL 0.74's string-literal regex nests `+` inside `*`, which backtracks
# exponentially on an unterminated literal (`"aaaa...` with no closing quote takes
# seconds at 28 characters, forever at 60). This one accepts the same language with
# disjoint alternatives, so a failed match is linear.
MLIRLexer._unescaped_characters_regex = re.compile(
    r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"'
)


MAX_OP_NESTING = 64
"""Deepest nesting of operations (an op inside a region of an op ...) a program may have.
xDSL parses, verifies, prints and rewrites IR recursively; real programs nest a few
levels (module, function, kernel, loops), so this bound keeps every stage far from
Python's recursion limit and makes a deeper input one located error."""
MAX_DENSE_ELEMENTS = 1 << 24
"""Most elements a ``dense<...>`` literal may have: xDSL expands a splat into one Python
value per element, so ``dense<1> : tensor<1000000000000xi32>`` would exhaust memory."""
MAX_ATTRIBUTE_NESTING = 100
"""Deepest nesting of attributes and types (``[[1]]``, ``{a = {b = 1}}``,
``tensor<...>`` inside an array, ...): xDSL parses and prints them recursively."""
MAX_BRACKET_NESTING = 256
"""Deepest nesting of brackets (``( [ { <``) outside string literals, checked on the text
before it is parsed: room for attributes `MAX_ATTRIBUTE_NESTING` deep inside ops
`MAX_OP_NESTING` deep in generic form (two brackets per region, ``({``), and a bound on
what else nests in brackets (locations, affine expressions)."""
RECURSION_LIMIT = 8000
"""Python's recursion limit while a tool runs (`recursion_headroom`): parsing and printing
take about ten frames per level of the nestings above, more than the default 1,000
allow. Python 3.11 runs Python-to-Python calls without growing the C stack."""

_BRACKETS = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|->|[\[({<]|[\])}>]')


def check_nesting(text: str, name: str) -> None:
    """A located `MlirParseError` at the first bracket nested deeper than
    `MAX_BRACKET_NESTING` (string literals and comments skipped)."""
    depth = 0
    for match in _BRACKETS.finditer(text):
        token = match.group()
        if len(token) != 1:
            continue  # a string literal, a comment or an arrow
        if token in "[({<":
            depth += 1
            if depth > MAX_BRACKET_NESTING:
                at = match.start()
                raise MlirParseError(
                    Span(at, at + 1, Input(text, name)),
                    f"brackets nested more than {MAX_BRACKET_NESTING} deep; irc handles at most {MAX_BRACKET_NESTING}",
                )
        else:
            depth = max(0, depth - 1)


@contextmanager
def recursion_headroom():
    """Python's recursion limit at least `RECURSION_LIMIT` while the block runs."""
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous, RECURSION_LIMIT))
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


MAX_JSON_NESTING = 100
"""Deepest nesting of arrays and objects in a JSON document a tool reads (``irc-plan
--explain``): Python's JSON parser recurses once per level."""

_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[{]|[\]}]')


def json_nesting_error(text: str, what: str) -> str | None:
    """``what: JSON nested more than MAX_JSON_NESTING deep (at character N)`` when the
    document ``text`` nests deeper (strings skipped), else None."""
    depth = 0
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_JSON_NESTING:
                return (f"{what}: JSON nested more than {MAX_JSON_NESTING} deep (at character {match.start() + 1}); "
                        f"irc reads at most {MAX_JSON_NESTING} levels")
        elif token in "]}":
            depth = max(0, depth - 1)
    return None


class MlirParseError(ParseError):
    """A `ParseError` that prints as an MLIR diagnostic."""

    def __str__(self) -> str:
        return format_parse_error(self)


def decode_source(data: str | bytes, name: str) -> str:
    """``data`` as text; bytes that are not UTF-8 are a located error at the first bad
    byte (irc reads programs as UTF-8, as MLIR does)."""
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        text = data.decode("utf-8", "replace")
        at = len(data[: error.start].decode("utf-8"))
        span = Span(at, at + 1, Input(text, name))
        raise MlirParseError(
            span, f"byte 0x{data[error.start]:02x} is not UTF-8 text; irc reads programs as UTF-8"
        ) from None


_OPENING = (MLIRTokenKind.L_SQUARE, MLIRTokenKind.L_BRACE, MLIRTokenKind.L_PAREN)


class LocatingParser(Parser):
    """A `Parser` that gives every op without an explicit ``loc`` its file:line:col,
    reads bytes as UTF-8 (a bad byte is a located error) and refuses ops nested more than
    `MAX_OP_NESTING` deep."""

    def __init__(self, ctx: Context, text: str | bytes, name: str, line_offset: int = 0):
        text = decode_source(text, name)
        check_nesting(text, name)
        super().__init__(ctx, text, name)
        self._line_offset = line_offset
        self._depth = 0
        self._attribute_depth = 0
        # where each line starts, for the op locations: xDSL's `Span.get_location` counts
        # the newlines from the top of the file for every op (quadratic: 30% of parsing
        # a 1 MB device module), a bisection over these is logarithmic
        self._line_starts = [0] + [match.end() for match in re.finditer("\n", text)]

    def raise_error(self, msg, at_position=None, end_position=None):
        try:
            super().raise_error(msg, at_position, end_position)
        except ParseError as error:
            raise MlirParseError(error.span, error.msg) from None

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        try:
            with recursion_headroom():
                return super().parse_module(allow_implicit_module)
        except MlirParseError:
            raise
        except ParseError as error:
            raise MlirParseError(error.span, error.msg) from None
        except RecursionError:  # a nesting the limits above did not foresee
            span = self._current_token.span
            raise MlirParseError(span, "the input nests too deeply here for irc's parser") from None

    def parse_operation(self) -> Operation:
        span = self._current_token.span
        if self._depth >= MAX_OP_NESTING:
            self.raise_error(
                f"operations nested more than {MAX_OP_NESTING} deep; irc handles at most "
                f"{MAX_OP_NESTING} levels of regions", span.start, span.end,
            )
        self._depth += 1
        try:
            op = super().parse_operation()
        except ParseError as error:
            raise self._at_op_name(error, span.start) from None
        finally:
            self._depth -= 1
        if not isinstance(op.location, FileLineColLoc):
            line = bisect.bisect_right(self._line_starts, span.start)
            op.location = FileLineColLoc(
                StringAttr(span.input.name),
                IntAttr(line + span.line_offset + self._line_offset),
                IntAttr(span.start - self._line_starts[line - 1] + 1),
            )
        return op

    def parse_optional_attribute(self):
        return self._nested(super().parse_optional_attribute)

    def parse_optional_type(self):
        return self._nested(super().parse_optional_type)

    def _nested(self, parse):
        """``parse()`` an attribute or type; one that opens a bracket (``[`` ``{`` ``(``,
        ``tensor<``, ``#dialect.attr<``) is a level deeper, refused beyond
        `MAX_ATTRIBUTE_NESTING` at its bracket."""
        token = self._current_token
        span = token.span
        opens = token.kind in _OPENING or span.input.content[span.end : span.end + 1] == "<"
        if not opens:
            return parse()
        if self._attribute_depth >= MAX_ATTRIBUTE_NESTING:
            self.raise_error(
                f"attributes and types nested more than {MAX_ATTRIBUTE_NESTING} deep; irc handles at most "
                f"{MAX_ATTRIBUTE_NESTING}", span.start, span.end,
            )
        self._attribute_depth += 1
        try:
            return parse()
        finally:
            self._attribute_depth -= 1

    def _parse_optional_builtin_attr(self):
        start = self._current_token.span.start
        try:
            attribute = super()._parse_optional_builtin_attr()
            if isinstance(attribute, FloatAttr):  # printed through the type's packing
                attribute.type.pack([attribute.value.data])
            return attribute
        except (NotImplementedError, OverflowError):  # xDSL packs only 1-64-bit integers, f16-f64
            self.raise_error(
                "an attribute cannot hold values of this element type; irc's dense arrays, dense "
                "literals and numbers hold i1, i8, i16, i32, i64, f16, f32 and f64", start, self._current_token.span.start,
            )

    def _parse_dense_literal_type(self):
        start = self._current_token.span.start
        type_ = super()._parse_dense_literal_type()
        count = math.prod(type_.get_shape())
        if count > MAX_DENSE_ELEMENTS:  # a splat is expanded element by element
            self.raise_error(
                f"a dense literal of {count} elements; irc takes at most {MAX_DENSE_ELEMENTS} (keep large "
                f"constants in a weights file)", start, self._current_token.span.start,
            )
        return type_

    def _parse_dialect_type_or_attribute_body(self, attr_name, is_type, is_opaque, starting_opaque_pos):
        start = self._current_token.span.start
        try:
            return super()._parse_dialect_type_or_attribute_body(attr_name, is_type, is_opaque, starting_opaque_pos)
        except VerifyException as error:  # the attribute's own verifier, run as it is built
            message = clean_message(str(error))
        except (ValueError, TypeError) as error:
            if "zip()" not in str(error):
                raise
            # xDSL builds a generic `#dialect.attr<...>` with zip(strict=True)
            message = f"wrong number of parameters for {'!' if is_type else '#'}{attr_name}"
        text = self.lexer.input.content
        name = attr_name.encode() if isinstance(text, bytes) else attr_name
        at = text.rfind(name, 0, start + 1)
        if at > 0 and text[at - 1 : at] in ("#", "!", b"#", b"!"):
            at -= 1
        at = at if at >= 0 else start
        self.raise_error(message, at, at + len(attr_name) + 1)

    def _at_op_name(self, error: ParseError, start: int) -> ParseError:
        # xDSL reports an unknown op after consuming its name; point at the name.
        match = re.fullmatch(r"Operation (\S+) is not registered", error.msg)
        if match is None:
            return error
        text = self.lexer.input.content
        name = match.group(1).encode() if isinstance(text, bytes) else match.group(1)
        at = text.find(name, start)
        if at < 0:
            return error
        span = Span(at, at + len(name), self.lexer.input, error.span.line_offset)
        return MlirParseError(span, f"unknown operation '{match.group(1)}'")


def location_of(op: Operation | None) -> str:
    """The nearest ``file:line:col`` of an op or its ancestors, ``loc("name")`` for an op
    imported from a graph node of that name (ONNX), or ``loc(unknown)``."""
    while op is not None:
        loc = op.location
        if isinstance(loc, FileLineColLoc):
            return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
        if isinstance(loc, NameLoc):
            return f'loc("{loc.desc.data}")'
        op = op.parent_op()
    return "loc(unknown)"


@dataclass
class LocatedVerifyError(VerifyException):
    """A verifier failure with the op it belongs to, and an optional ``note`` line
    (already located: ``file:line:col: note: ...``)."""

    op: Operation
    message: str
    note: str = ""

    def __str__(self) -> str:
        text = f"{location_of(self.op)}: error: '{self.op.name}' op {self.message}"
        return f"{text}\n{self.note}" if self.note else text


def ops_children_first(root: Operation) -> Iterator[Operation]:
    """Every op under ``root`` (and ``root``), each after all the ops nested in it, in
    textual order otherwise; iterative, so no input depth can exhaust the stack."""
    stack: list[tuple[Operation, bool]] = [(root, False)]
    while stack:
        op, expanded = stack.pop()
        if expanded:
            yield op
            continue
        stack.append((op, True))
        children = [child for region in op.regions for block in region.blocks for child in block.ops]
        stack.extend((child, False) for child in reversed(children))


def verify_located(module: ModuleOp) -> None:
    """Verify SSA dominance first (`verify_dominance`: no op verifier, pass or
    interpreter ever sees a use before its definition), then every op, children before
    parents (as xDSL's own verifier does, so that a parent's verifier may rely on its
    children being well formed), raising `LocatedVerifyError` at the first op that
    fails."""
    verify_dominance(module)
    for op in ops_children_first(module):
        try:
            op.verify(verify_nested_ops=False)
        except LocatedVerifyError:
            raise
        except VerifyException as error:
            raise LocatedVerifyError(op, clean_message(str(error))) from None


GRAPH_REGION_OPS = frozenset({"builtin.module"})
"""Ops whose regions are graph regions (MLIR's ``RegionKind::Graph``), where an op may use
a value defined anywhere in the region; every other region is an SSACFG region."""


@dataclass
class _BlockWalk:
    """One block being walked by `verify_dominance`: its remaining ops, the values it
    makes visible on entry (``entry``) and those it has added so far (``added``, removed
    when the walk leaves the block)."""

    ops: Iterator[Operation]
    entry: list[SSAValue]
    sequential: bool
    added: list[SSAValue] | None = None
    pending: tuple[SSAValue, ...] = ()


def verify_dominance(root: Operation) -> None:
    """Every operand under ``root`` dominates its use, as MLIR's verifier requires: in an
    SSACFG region a value is defined before its use in the same block, or in a block that
    properly dominates the use's (xDSL's `DominanceInfo`; a use in an unreachable block is
    dominated by everything, as in MLIR), or in an enclosing region before the op holding
    the use; an op's results are not visible inside its own regions. Graph regions
    (`GRAPH_REGION_OPS`) are exempt. A `LocatedVerifyError` names the operand and notes
    where it is defined. Iterative: no depth exhausts the stack."""
    visible: set[SSAValue] = set()
    walks: list[_BlockWalk] = []
    _enter_regions(root, walks)
    while walks:
        walk = walks[-1]
        if walk.added is None:  # entering the block
            walk.added = [value for value in walk.entry if value not in visible]
            visible.update(walk.added)
        if walk.pending:  # the results of the op whose regions were just walked
            visible.update(walk.pending)
            walk.added.extend(walk.pending)
            walk.pending = ()
        op = next(walk.ops, None)
        if op is None:
            visible.difference_update(walk.added)
            walks.pop()
            continue
        for index, operand in enumerate(op.operands):
            if operand not in visible:
                raise _not_dominating(op, index, operand)
        if walk.sequential:
            walk.pending = tuple(op.results)
        _enter_regions(op, walks)


def _enter_regions(op: Operation, walks: list[_BlockWalk]) -> None:
    """Push the blocks of ``op``'s regions so that the first block of its first region is
    walked next."""
    graph = op.name in GRAPH_REGION_OPS
    for region in reversed(op.regions):
        blocks = list(region.blocks)
        entries = _block_entries(region, blocks, graph)
        for block, entry in reversed(list(zip(blocks, entries))):
            walks.append(_BlockWalk(iter(block.ops), entry, not graph))


def _defined_in(block: Block) -> list[SSAValue]:
    return [*block.args, *(result for op in block.ops for result in op.results)]


def _block_entries(region: Region, blocks: list[Block], graph: bool) -> list[list[SSAValue]]:
    """Per block, the values of ``region`` visible where the block starts: in a graph
    region all of the region's; in an SSACFG region the block's arguments and what the
    blocks properly dominating it define (everything, for an unreachable block)."""
    if graph:
        everything = [value for block in blocks for value in _defined_in(block)]
        return [everything for _ in blocks]
    if len(blocks) <= 1:
        return [list(block.args) for block in blocks]
    reachable = {blocks[0]}
    frontier = [blocks[0]]
    while frontier:
        block = frontier.pop()
        for successor in block.last_op.successors if block.last_op is not None else ():
            if successor not in reachable:
                reachable.add(successor)
                frontier.append(successor)
    dominance = DominanceInfo(region)
    defined = {block: _defined_in(block) for block in blocks}
    entries = []
    for block in blocks:
        dominators = [other for other in blocks if other is not block and (
            block not in reachable or other in reachable and dominance.dominates(other, block))]
        entries.append([*block.args, *(value for other in dominators for value in defined[other])])
    return entries


def _relation(use: Region | None, definition: Region | None) -> str:
    """Where the region of a definition is from the region of its use, in MLIR's words."""
    if use is definition:
        return "the same region"
    if definition is not None and use is not None and definition.is_ancestor(use):
        return "a parent region"
    if use is not None and definition is not None and use.is_ancestor(definition):
        return "a child region"
    return "neither a parent nor a child region"


def _not_dominating(op: Operation, index: int, operand: SSAValue) -> LocatedVerifyError:
    """MLIR's diagnostic for an operand that does not dominate its use, with the note
    saying where the operand is defined."""
    name = f" (%{operand.name_hint})" if operand.name_hint else ""
    message = f"operand #{index}{name} does not dominate this use"
    use_block = op.parent_block()
    use_region = use_block.parent if use_block is not None else None
    if isinstance(operand, BlockArgument):
        block = operand.block
        region = block.parent
        number = list(region.blocks).index(block) if region is not None else 0
        where = location_of(block.parent_op())
        relation = _relation(use_region, region)
        relation = relation if relation.startswith("neither") else f"in {relation}"
        note = f"{where}: note: operand defined as a block argument (block #{number} {relation})"
    else:
        definition = operand.owner
        block = definition.parent_block()
        if block is not None and block is use_block:
            relation = "in the same block"
        else:
            relation = _relation(use_region, block.parent if block is not None else None)
            relation = "is " + relation if relation.startswith("neither") else "in " + relation
        note = f"{location_of(definition)}: note: operand defined here (op {relation})"
    return LocatedVerifyError(op, message, note)


_BROKEN_MESSAGES: list[tuple[re.Pattern[str], Callable[[re.Match[str], str], str]]] = [
    # xDSL 0.74 texts that come out empty or unformatted
    (re.compile(r"\s*in block definition"), lambda m, at: "expected a block label such as '^bb0'"),
    (re.compile(r"Expected suffix identifier after \{first_char\}"),
     lambda m, at: f"expected a name after '{at}'" if at else "expected a name"),
]


def clean_message(message: str, at: str = "") -> str:
    """A diagnostic's message with xDSL's broken texts repaired (an empty message, a
    format placeholder never filled in); ``at`` is the source text the error points at."""
    message = message.strip()
    for pattern, repair in _BROKEN_MESSAGES:
        match = pattern.fullmatch(message)
        if match:
            return repair(match, at)
    return message or "malformed input here"


def format_parse_error(error: ParseError) -> str:
    """Render a parse error as ``file:line:col: error: msg``, the line and a caret."""
    span = error.span
    where = span.get_location()
    content = span.input.content
    if isinstance(content, bytes):
        content = content.decode("utf-8", "replace")
    line_start = content.rfind("\n", 0, span.start) + 1
    line_end = content.find("\n", span.start)
    line = content[line_start : line_end if line_end >= 0 else len(content)]
    column = span.start - line_start
    width = max(1, min(span.end, line_start + len(line)) - span.start)
    if len(line) > 2 * SOURCE_CONTEXT:  # a window of a long line around the caret
        first = max(0, column - SOURCE_CONTEXT)
        shown = line[first : column + SOURCE_CONTEXT]
        prefix = "..." if first else ""
        suffix = "..." if column + SOURCE_CONTEXT < len(line) else ""
        line, column = prefix + shown + suffix, column - first + len(prefix)
        width = min(width, SOURCE_CONTEXT)
    caret = " " * column + "^" * width
    at = content[span.start : span.start + 1] if span.start < len(content) else ""
    header = f"{where}: error: {clean_message(error.msg, at)}"
    return f"{header}\n{line}\n{caret}" if line.strip() else header


SOURCE_CONTEXT = 80
"""Characters of a long source line shown on either side of a diagnostic's caret."""


_INNER_LOCATION = re.compile(r"(?:^|(?<=: ))([^:\n]+:\d+:\d+): error: ")


def as_diagnostic(text: str) -> str:
    """``text`` (an error's message, perhaps already ``error: ...``) as one diagnostic:
    ``error: <message>``, or ``file:line:col: error: <message>`` when the message holds
    a location (a device file's field wrapped by a pass or a tool, ``irc-target:
    dev.toml:12:1: error: field ...``): the location leads, what wrapped it follows
    ``error:``."""
    first, newline, rest = text.strip().partition("\n")
    found = _INNER_LOCATION.search(first)
    if found is None:
        return text.strip() if first.startswith("error: ") else f"error: {text.strip()}"
    prefix = first[: found.start()]
    prefix = prefix[len("error: "):] if prefix.startswith("error: ") else prefix
    return f"{found.group(1)}: error: {prefix}{first[found.end():]}{newline}{rest}"


def fail(message: str, status: int = 1) -> NoReturn:
    print(message, file=sys.stderr)
    raise SystemExit(status)


class ArgumentParser(argparse.ArgumentParser):
    """The tools' command lines: a usage error is one ``error:`` line and exit status 1,
    as every other irc failure (argparse alone prints the usage and exits 2)."""

    def error(self, message):
        print(f"error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(1)


# ---------------------------------------------------------------------------
# The tools' last resort
# ---------------------------------------------------------------------------

TRACEBACK_VARIABLE = "IRC_TRACEBACK"


def internal_error(error: BaseException) -> str:
    """The one line an unexpected exception becomes: it says it is irc's fault, asks for
    a report and says how to see the traceback."""
    lines = str(error).strip().splitlines()
    message = lines[0] if lines else f"unexpected {type(error).__name__}"
    return f"error: internal error: {message} (please report it; {TRACEBACK_VARIABLE}=1 shows the traceback)"


class StandardOutputError(OSError):
    """Writing the tool's standard output failed (a full disk, a closed terminal)."""


class _CheckedStdout:
    """``sys.stdout`` for the run of a tool: a failed write (but a closed pipe, which is
    a reader going away) is a `StandardOutputError`, so it reads as such, not as an
    error of whatever was being printed."""

    def __init__(self, stream):
        self._stream = stream

    def _checked(self, call, *args):
        try:
            return call(*args)
        except BrokenPipeError:
            raise
        except OSError as error:
            raise StandardOutputError(error.errno, error.strerror) from None

    def write(self, text):
        return self._checked(self._stream.write, text)

    def writelines(self, lines):
        return self._checked(self._stream.writelines, lines)

    def flush(self):
        return self._checked(self._stream.flush)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _silence_stdout() -> None:
    # Whatever is still buffered must not fail again when Python exits.
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


class Interrupted(KeyboardInterrupt):
    """A tool stopped by SIGINT, SIGTERM or SIGHUP: it unwinds as Ctrl-C does (every
    ``finally`` runs, `write_atomically` removes its temporary file) and the tool exits
    with status 128 + ``signum``."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


STOPPING_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))
"""The signals a tool stops on as on Ctrl-C: cleanly, with status 128 + the signal."""

_RUN = {"phase": "idle", "stopping": 0}
"""Where the tool is: ``running`` its ``run()`` (a first signal unwinds it), or
``exiting`` after it (a signal exits at once: nothing is being written); ``stopping``:
the signal that is unwinding it."""


def _signal_text(signum: int) -> str:
    name = signal.Signals(signum).name
    return "interrupted" if name == "SIGINT" else f"interrupted by {name}"


def _exit_now(signum: int, frame=None) -> NoReturn:
    """Leave at once with status 128 + ``signum``, temporary files removed: a second
    signal while the first unwinds, or one after the tool finished (during interpreter
    shutdown, where an exception would print a traceback from an atexit handler)."""
    remove_temporaries()
    try:
        os.write(2, f"error: {_signal_text(signum)}\n".encode())
    except OSError:
        pass
    os._exit(128 + signum)


def _on_signal(signum: int, frame) -> None:
    if _RUN["phase"] == "exiting" or _RUN["stopping"]:
        _exit_now(signum)
    if _RUN["phase"] == "running":
        _RUN["stopping"] = signum
        # what the unwinding abandons half-written (a zip archive) may complain as it is
        # collected; the tool is stopping, its one line says so
        sys.unraisablehook = _ignore_unraisable
        raise Interrupted(signum)
    raise KeyboardInterrupt  # after an in-process run: the caller's own interrupt


def _ignore_unraisable(unraisable) -> None:
    pass


def _install_signal_handlers() -> dict[int, object]:
    """`_on_signal` for each of `STOPPING_SIGNALS` the process does not ignore (``nohup``
    ignores SIGHUP, a background job SIGINT: they stay ignored); the previous handlers."""
    previous = {}
    for signum in STOPPING_SIGNALS:
        try:
            current = signal.getsignal(signum)
            if current is not signal.SIG_IGN:
                previous[signum] = signal.signal(signum, _on_signal)
        except ValueError:  # not the main thread: signals are the caller's
            break
    return previous


def guarded_main(run: Callable[[], int | None], exiting: bool = False) -> int:
    """Run a tool's ``run()`` so that whatever happens is an exit status and at most one
    diagnostic: usage errors and failures exit 1, a failed write of standard output is
    one ``error:`` line, an unexpected exception one ``error: internal error:`` line
    (``IRC_TRACEBACK=1`` lets it through with its traceback), SIGINT, SIGTERM and SIGHUP
    one ``error: interrupted`` line and status 128 + the signal, no temporary file left.
    ``exiting``: the process ends right after (a tool's ``main``), so a signal arriving
    from now on, during interpreter shutdown, exits at once with 128 + the signal
    instead of printing a traceback; otherwise the previous handlers come back."""
    previous = _install_signal_handlers()
    _RUN.update(phase="running", stopping=0)
    original, unraisable = sys.stdout, sys.unraisablehook
    try:
        try:
            with recursion_headroom():
                status = _run_guarded(run)
            if _RUN["stopping"]:  # the interrupt was caught on its way out and became another failure
                raise Interrupted(_RUN["stopping"])
        except KeyboardInterrupt as interrupt:  # raised anywhere, the handlers above included
            signum = getattr(interrupt, "signum", signal.SIGINT)
            remove_temporaries()
            print(f"error: {_signal_text(signum)}", file=sys.stderr)
            status = 128 + signum
    finally:
        _RUN["phase"] = "exiting" if exiting else "idle"
        sys.stdout = original
        release_unwritten_fifos()
        if not exiting:
            sys.unraisablehook = unraisable
            for signum, handler in previous.items():
                signal.signal(signum, handler)
    return status


def exit_tool(run: Callable[[], int | None]) -> NoReturn:
    """A tool's ``main``: `guarded_main` then exit with its status."""
    sys.exit(guarded_main(run, exiting=True))


def _run_guarded(run: Callable[[], int | None]) -> int:
    """`guarded_main`'s body: ``run()`` with every exception but an interrupt as a status
    and at most one diagnostic."""
    sys.stdout = _CheckedStdout(sys.stdout)
    try:
        status = run()
        sys.stdout.flush()
    except SystemExit as exit:
        code = exit.code
        status = 0 if code is None else (1 if not isinstance(code, int) or code == 2 else code)
        if isinstance(code, str):
            print(code if code.startswith("error:") else f"error: {code}", file=sys.stderr)
        try:
            sys.stdout.flush()
        except StandardOutputError as error:
            status = _report_stdout(error)
        except BrokenPipeError:
            _silence_stdout()
    except BrokenPipeError:  # the reader went away (`irc-run ... | head`)
        _silence_stdout()
        status = 1
    except StandardOutputError as error:
        status = _report_stdout(error)
    except MemoryError:
        print("error: out of memory: the input needs more memory than this machine gives irc", file=sys.stderr)
        status = 1
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # noqa: BLE001 - the last resort: never a traceback
        if _RUN["stopping"]:  # a signal's unwinding that a library turned into its own error
            raise Interrupted(_RUN["stopping"]) from None
        if os.environ.get(TRACEBACK_VARIABLE):
            raise
        print(internal_error(error), file=sys.stderr)
        status = 1
    return 0 if status is None else status


def _report_stdout(error: OSError) -> int:
    print(f"error: cannot write to standard output: {error.strerror or error}", file=sys.stderr)
    _silence_stdout()
    return 1
