"""`irc-opt`: parse, verify, transform and print irc IR, like `mlir-opt`/`xdsl-opt`.

It is xDSL's `xDSLOptMain` with irc's dialects and passes (and those of any plug-in,
see `irc.universe`) registered, ops located by file:line:col, and every failure
reported as one MLIR-style diagnostic with a non-zero exit instead of a traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from irc import universe
from irc.diagnostics import LocatingParser, format_parse_error, verify_located
from irc.output import Collected, OutputError, check_output, write_atomically


class IrcOptMain(xDSLOptMain):
    version_format = "irc-opt (xdsl {xdsl_version})"

    def register_all_dialects(self):
        for name, factory in universe.all_dialects().items():
            self.ctx.register_dialect(name, factory)

    def register_all_passes(self):
        for name, factory in universe.all_passes().items():
            self.register_pass(name, factory)

    def register_all_frontends(self):
        super().register_all_frontends()
        self._chunk_line_offset = 0

        def parse_mlir(io: IO[bytes]) -> ModuleOp:
            parser = LocatingParser(
                self.ctx, io.read(), self.get_input_name(), self._chunk_line_offset
            )
            return parser.parse_module(not self.args.no_implicit_module)

        self.available_frontends["mlir"] = parse_mlir

    def parse_chunk(self, chunk, file_extension, start_offset=0):
        self._chunk_line_offset = start_offset
        return super().parse_chunk(chunk, file_extension, start_offset)

    def apply_passes(self, prog: ModuleOp):
        # Verify once with locations before the pipeline, so that errors in the
        # input point at the user's text; the pipeline re-verifies after each pass.
        if not self.args.disable_verify:
            verify_located(prog)
        super().apply_passes(prog)

    def get_input_stream(self):
        if self.args.input_file is not None and not os.path.isfile(self.args.input_file):
            raise _InputMissing(self.args.input_file)
        return super().get_input_stream()

    def prepare_output(self):
        if self.args.output_file is None:
            return sys.stdout
        # Collected in memory; the file is written once the whole run succeeded.
        self._collected = Collected()
        return self._collected

    def run(self):
        output = self.args.output_file
        if output is not None:
            try:
                check_output(output, "-o", [(self.args.input_file, "the input")])
            except OutputError as error:
                raise _Diagnostic(f"error: {error}") from None
        try:
            super().run()
        except ParseError as error:
            raise _Diagnostic(format_parse_error(error)) from None
        if output is not None:
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


def run_tool(tool: type[xDSLOptMain], args: Sequence[str] | None = None) -> int:
    """Run an xDSLOptMain-style tool, turning every failure into a diagnostic."""
    try:
        tool(args=args).run()
    except SystemExit as error:  # argparse's usage errors exit 2; irc tools exit 1
        return 1 if error.code == 2 else (error.code or 0)
    except _InputMissing as error:
        print(f"error: no such file: {error.args[0]}", file=sys.stderr)
        return 1
    except _Diagnostic as error:
        print(error.args[0], file=sys.stderr)
        return 1
    except ParseError as error:
        print(format_parse_error(error), file=sys.stderr)
        return 1
    except DiagnosticException as error:
        print(_as_error(str(error)), file=sys.stderr)
        return 1
    except ArgSpecParseError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except universe.PluginError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except (BrokenPipeError, KeyboardInterrupt):
        return 1
    except Exception as error:  # last resort: still one line, never a traceback
        if os.environ.get("IRC_TRACEBACK"):
            raise
        kind = type(error).__name__
        print(f"error: {kind}: {error} (set IRC_TRACEBACK=1 for details)", file=sys.stderr)
        return 1
    return 0


def _as_error(text: str) -> str:
    return text if ": error: " in text.splitlines()[0] else f"error: {text}"


def main() -> None:
    sys.exit(run_tool(IrcOptMain))


if __name__ == "__main__":
    main()
