"""`irc-opt`: parse, verify, transform and print irc IR, like `mlir-opt`/`xdsl-opt`.

It is xDSL's `xDSLOptMain` with irc's dialects and passes (and those of any plug-in,
see `irc.universe`) registered, ops located by file:line:col, and every failure
reported as one MLIR-style diagnostic with a non-zero exit instead of a traceback.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from collections.abc import Sequence
from typing import IO, get_type_hints

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.arg_spec import _convert_arg_to_type, parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError, VerifyException
from xdsl.xdsl_opt_main import xDSLOptMain

from irc import universe
from irc.diagnostics import (
    ArgumentParser,
    as_diagnostic,
    LocatingParser,
    clean_message,
    format_parse_error,
    guarded_main,
    location_of,
    verify_located,
)
from irc.frontend.weights import WEIGHTS_ATTR, attach_weights, module_weights_file
from irc.target import TargetError, check_targets
from irc.output import Collected, OutputError, check_output, write_atomically


class IrcOptMain(xDSLOptMain):
    version_format = "irc-opt (xdsl {xdsl_version})"

    def register_all_dialects(self):
        for name, factory in universe.all_dialects().items():
            self.ctx.register_dialect(name, factory)

    def register_all_passes(self):
        for name, factory in universe.all_passes().items():
            self.register_pass(name, factory)

    def register_all_arguments(self, arg_parser):
        # xDSL builds a plain argparse parser; irc's prints one line and exits 1.
        arg_parser.__class__ = ArgumentParser
        arg_parser.prog = "irc-opt"
        super().register_all_arguments(arg_parser)

    def register_all_frontends(self):
        super().register_all_frontends()
        self._chunk_line_offset = 0

        def parse_mlir(io: IO[bytes]) -> ModuleOp:
            parser = LocatingParser(
                self.ctx, io.read(), self.get_input_name(), self._chunk_line_offset
            )
            return parser.parse_module(not self.args.no_implicit_module)

        self.available_frontends["mlir"] = parse_mlir

    def setup_pipeline(self):
        try:
            super().setup_pipeline()
        except ArgSpecParseError as error:
            raise _Diagnostic(_pipeline_syntax_error(str(error.args[0]), self.args.passes)) from None
        except (ValueError, TypeError):
            raise _Diagnostic(self._pipeline_error()) from None
        checked = self.pipeline.callback
        if checked is not None:
            self.pipeline = dataclasses.replace(self.pipeline, callback=_naming_the_pass(checked))

    def _pipeline_error(self) -> str:
        """What is wrong with ``-p`` (a pass or option xDSL would report by its own
        exception text)."""
        specs = list(parse_pipeline(self.args.passes))
        for spec in specs:
            if spec.name not in self.available_passes:
                own = sorted(set(universe.IRC_UNIVERSE.all_passes) & set(self.available_passes))
                others = len(self.available_passes) - len(own)
                return (f"error: -p: unknown pass '{spec.name}'; irc's passes are {', '.join(own)} "
                        f"(and {others} of xDSL's and the plug-ins')")
        for spec in specs:
            pass_class = self.available_passes[spec.name]()
            fields = {f.name: f for f in dataclasses.fields(pass_class) if f.init and f.name != "name"}
            hints = get_type_hints(pass_class)
            given = spec.normalize_parameter_names().parameters
            for option, value in given.items():
                if option not in fields:
                    options = ", ".join(fields) or "none"
                    return f"error: -p: pass '{spec.name}' has no option '{option}' (its options: {options})"
                try:
                    _convert_arg_to_type(value, hints[option])
                except ValueError:
                    shown = ",".join(map(str, value)) if value else "nothing"
                    kind = _KINDS.get(hints[option], str(hints[option]))
                    return (f"error: -p: option '{option}' of pass '{spec.name}' must be {kind}, "
                            f"got {shown}")
            try:
                pass_class.from_pass_spec(spec)
            except (ValueError, TypeError) as error:
                return f"error: -p: pass '{spec.name}': {clean_message(str(error))}"
        return f"error: -p: cannot build the pipeline '{self.args.passes}'"

    def parse_chunk(self, chunk, file_extension, start_offset=0):
        self._chunk_line_offset = start_offset
        return super().parse_chunk(chunk, file_extension, start_offset)

    def apply_passes(self, prog: ModuleOp):
        path = self.args.input_file
        weights = module_weights_file(prog, os.path.dirname(os.path.abspath(path)) if path else None)
        if weights is not None and hasattr(self, "_weights_files"):
            self._weights_files.append((weights, "the module's weights file (irc.weights)"))
        output = self.args.output_file
        if weights is not None and output is not None and not os.path.isabs(prog.attributes[WEIGHTS_ATTR].data):
            # a relative irc.weights is read beside the IR file: beside the output, it names
            # the same file (irc-run of the output finds the weights in another folder too)
            attach_weights(prog, os.path.relpath(weights, os.path.dirname(os.path.abspath(output))))
        # Verify once with locations before the pipeline, so that errors in the
        # input point at the user's text; the pipeline re-verifies after each pass.
        if not self.args.disable_verify:
            verify_located(prog)
            try:
                check_targets(prog)
            except TargetError as error:
                raise _LocatedTargetError(error) from None
        super().apply_passes(prog)

    def get_input_stream(self):
        path = self.args.input_file
        if path is not None:
            if os.path.isdir(path):
                raise _Diagnostic(f"error: {path} is a directory, not a program")
            if not os.path.isfile(path):
                raise _InputMissing(path)
            try:
                stream = open(path, "rb")
            except OSError as error:
                raise _Diagnostic(f"error: cannot read {path}: {error.strerror or error}") from None
            # the frontend is MLIR whatever the file's suffix (as mlir-opt)
            return stream, "mlir"
        return super().get_input_stream()

    def _option_files(self) -> list[tuple[str, str]]:
        """The files the pipeline's pass options name (a device file, a plug-in's data):
        inputs of the run as much as the program is, so ``-o`` may not name them."""
        if not self.args.passes:
            return []
        files = []
        for spec in parse_pipeline(self.args.passes):
            for option, values in spec.parameters.items():
                for value in values:
                    if isinstance(value, str) and value and os.path.isfile(value):
                        files.append((value, f"the file pass '{spec.name}' reads (option {option}={value})"))
        return files

    def prepare_output(self):
        if self.args.output_file is None:
            return sys.stdout
        # Collected in memory; the file is written once the whole run succeeded.
        self._collected = Collected()
        return self._collected

    def run(self):
        output = self.args.output_file
        inputs = [(self.args.input_file, "the input"), *self._option_files()]
        self._weights_files: list[tuple[str, str]] = []
        if output is not None:
            try:
                check_output(output, "-o", inputs)
            except OutputError as error:
                raise _Diagnostic(f"error: {error}") from None
        try:
            super().run()
        except ParseError as error:
            raise _Diagnostic(format_parse_error(error)) from None
        if output is not None:
            try:  # the weights file the module names is known once it is parsed
                check_output(output, "-o", inputs + self._weights_files)
            except OutputError as error:
                raise _Diagnostic(f"error: {error}") from None
            collected = self._collected
            text = getattr(collected, "text", None)
            try:
                write_atomically(output, collected.getvalue() if text is None else text)
            except OSError as error:
                raise _Diagnostic(f"error: cannot write {output}: {error.strerror or error}") from None


class _InputMissing(Exception):
    pass


class _Diagnostic(Exception):
    pass


class _LocatedTargetError(DiagnosticException):
    def __init__(self, error: TargetError):
        op = error.op
        super().__init__(f"{location_of(op)}: error: '{op.name}' op {error}")


_KINDS = {str: "a string", bool: "a boolean (true or false)", int: "an integer", float: "a number"}


def _naming_the_pass(callback):
    """xDSL's between-passes ``callback`` (it verifies the module), a failure there
    naming the pass whose output does not verify, as `mlir-opt` does: the user's input
    was verified before the pipeline, so the pass made the bad IR."""
    def named(previous, module, following):
        try:
            callback(previous, module, following)
        except VerifyException as error:
            if previous is None:
                raise
            raise VerifyException(f"the IR pass '{previous.name}' produced does not verify (a bug in the pass; "
                                  f"please report it): {str(error).strip()}") from None
    return named


def _pipeline_syntax_error(text: str, spec: str) -> str:
    """xDSL's multi-line pipeline syntax error as one diagnostic with a caret."""
    lines = text.splitlines()
    column = re.search(r"pass-pipeline:\d+:(\d+)", text)
    message = clean_message(lines[-1]) if lines else "malformed pipeline"
    message = message[0].lower() + message[1:] if message[:1].isupper() and message[1:2].islower() else message
    if column is None:
        return f"error: -p: {message}"
    at = int(column.group(1))
    return f"error: -p: {message} (column {at})\n  {spec}\n  {' ' * (at - 1)}^"


def run_tool(tool: type[xDSLOptMain], args: Sequence[str] | None = None, exiting: bool = False) -> int:
    """Run an xDSLOptMain-style tool, turning every failure into a diagnostic
    (`guarded_main`; ``exiting``: the process ends right after)."""
    return guarded_main(lambda: _run(tool, args), exiting)


def _run(tool: type[xDSLOptMain], args: Sequence[str] | None) -> int:
    try:
        tool(args=args).run()
    except _InputMissing as error:
        print(f"error: no such file: {error.args[0]}", file=sys.stderr)
        return 1
    except _Diagnostic as error:
        print(as_diagnostic(error.args[0]), file=sys.stderr)
        return 1
    except ParseError as error:
        print(format_parse_error(error), file=sys.stderr)
        return 1
    except DiagnosticException as error:
        print(_as_error(str(error)), file=sys.stderr)
        return 1
    except universe.PluginError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def _as_error(text: str) -> str:
    lines = text.strip().splitlines()
    if not lines:
        return "error: the pass failed without saying why"
    return as_diagnostic("\n".join([clean_message(lines[0]), *lines[1:]]))


def main() -> None:
    sys.exit(run_tool(IrcOptMain, exiting=True))


if __name__ == "__main__":
    main()
