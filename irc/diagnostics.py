"""MLIR-style diagnostics: ``file:line:col: error: message`` plus the source line.

xDSL's parser does not attach source locations to the ops it parses unless the text
spells them out (``loc(...)``); `LocatingParser` records where each op starts, so that
a verifier failure can point at its op in the user's file, as `mlir-opt` does.
"""

from __future__ import annotations

import argparse

import re
import sys
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, NameLoc, StringAttr
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Span
from xdsl.utils.mlir_lexer import MLIRLexer

# xDSL 0.74's string-literal regex nests `+` inside `*`, which backtracks
# exponentially on an unterminated literal (`"aaaa...` with no closing quote takes
# seconds at 28 characters, forever at 60). This one accepts the same language with
# disjoint alternatives, so a failed match is linear.
MLIRLexer._unescaped_characters_regex = re.compile(
    r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"'
)


class MlirParseError(ParseError):
    """A `ParseError` that prints as an MLIR diagnostic."""

    def __str__(self) -> str:
        return format_parse_error(self)


class LocatingParser(Parser):
    """A `Parser` that gives every op without an explicit ``loc`` its file:line:col."""

    def __init__(self, ctx: Context, text: str | bytes, name: str, line_offset: int = 0):
        super().__init__(ctx, text, name)
        self._line_offset = line_offset

    def raise_error(self, msg, at_position=None, end_position=None):
        try:
            super().raise_error(msg, at_position, end_position)
        except ParseError as error:
            raise MlirParseError(error.span, error.msg) from None

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        try:
            return super().parse_module(allow_implicit_module)
        except MlirParseError:
            raise
        except ParseError as error:
            raise MlirParseError(error.span, error.msg) from None

    def parse_operation(self) -> Operation:
        span = self._current_token.span
        try:
            op = super().parse_operation()
        except ParseError as error:
            raise self._at_op_name(error, span.start) from None
        if not isinstance(op.location, FileLineColLoc):
            where = span.get_location()
            op.location = FileLineColLoc(
                StringAttr(where.file),
                IntAttr(where.line + self._line_offset),
                IntAttr(where.col),
            )
        return op


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
    """A verifier failure with the op it belongs to."""

    op: Operation
    message: str

    def __str__(self) -> str:
        return f"{location_of(self.op)}: error: '{self.op.name}' op {self.message}"


def verify_located(module: ModuleOp) -> None:
    """Verify every op, parents before children, raising `LocatedVerifyError`."""
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except LocatedVerifyError:
            raise
        except VerifyException as error:
            raise LocatedVerifyError(op, str(error)) from None


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
    caret = " " * (span.start - line_start) + "^" * max(1, min(span.end, line_start + len(line)) - span.start)
    header = f"{where}: error: {error.msg}"
    return f"{header}\n{line}\n{caret}" if line.strip() else header


def fail(message: str, status: int = 1) -> "NoReturn":  # noqa: F821
    print(message, file=sys.stderr)
    raise SystemExit(status)


class ArgumentParser(argparse.ArgumentParser):
    """The tools' command lines: a usage error is one ``error:`` line after the usage and
    exit status 1, as every other irc failure (argparse alone exits 2)."""

    def error(self, message):
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(1)
