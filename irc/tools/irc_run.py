"""`irc-run`: execute a function of an irc program on the reference interpreter.

    irc-run prog.mlir [--inputs in.npz] [--output out.npz] [--entry main] [--seed 0]
                      [--report] [--trace out.json] [--allow-lossy]

Inputs are read by name from `--inputs` (random, reproducible ones when absent);
results are printed, or saved by name to `--output`. An input value its argument's
element type cannot hold (beyond a float type's range, an integer that does not fit,
NaN for an integer) is an error unless `--allow-lossy`. A program at `shift` or `device`
level runs on the reference chip: `--report` prints its chip time breakdown, peak SRAM
and utilisation, `--trace out.json` writes the timeline as a Chrome/Perfetto trace.
"""

from __future__ import annotations

import io
import json
import os
import sys

import numpy as np
from xdsl.interpreter import InterpretationError
from xdsl.utils.exceptions import DiagnosticException, ParseError

from irc import runner
from irc.diagnostics import ArgumentParser, decode_source, exit_tool, format_parse_error, location_of
from irc.dialects.dtypes import UnsupportedTypeError
from irc.interpreter.kernels import KernelError
from irc.interpreter.offchip import planned_lines
from irc.output import OutputError, check_output, is_stream, same_output, write_atomically
from irc.runner import RunError, parse_module
from irc.target import TargetError, check_targets


def _arguments(argv):
    parser = ArgumentParser(prog="irc-run", description=__doc__.splitlines()[0])
    parser.add_argument("input_file", help="program to run (.mlir), '-' for stdin")
    parser.add_argument("--inputs", help=".npz with one array per function argument, by name")
    parser.add_argument("--output", help="write results by name to this .npz instead of printing")
    parser.add_argument("--entry", help="function to run (default: main, or the only function)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    parser.add_argument("--report", action="store_true",
                        help="print the chip time breakdown, peak SRAM and utilisation (shift/device level)")
    parser.add_argument("--trace", help="write the chip timeline as a Chrome/Perfetto trace (.json)")
    parser.add_argument("--allow-lossy", action="store_true",
                        help="cast input values the argument's element type cannot hold instead of refusing them")
    return parser.parse_args(argv)


def _print_result(name: str, value: np.ndarray) -> None:
    print(f"{name}: tensor<{'x'.join(map(str, value.shape)) or 'scalar'}, {value.dtype}>")
    with np.printoptions(precision=4, suppress=True, threshold=64, edgeitems=3):
        print(value)


def run(argv=None) -> int:
    args = _arguments(argv)
    try:
        if args.input_file == "-":
            text, filename = decode_source(sys.stdin.buffer.read(), "stdin"), "stdin"
        else:
            if os.path.isdir(args.input_file):
                raise RunError(f"{args.input_file} is a directory, not a program")
            if not os.path.isfile(args.input_file):
                raise RunError(f"no such file: {args.input_file}")
            try:
                with open(args.input_file, "rb") as stream:
                    data = stream.read()
            except OSError as error:
                raise RunError(f"cannot read {args.input_file}: {error.strerror or error}") from None
            text, filename = decode_source(data, args.input_file), args.input_file
        module = parse_module(text, filename)
        try:
            check_targets(module)
        except TargetError as error:
            op = error.op
            raise RunError(f"{location_of(op)}: error: '{op.name}' op {error}") from None
        protected = [(args.input_file, "the program"), (args.inputs, "the --inputs file"),
                     *runner.files_read(module)]
        try:
            if args.output:
                check_output(args.output, "--output", protected)
            if args.trace:
                check_output(args.trace, "--trace", protected + [(args.output, "the --output file")])
        except OutputError as error:
            raise RunError(str(error)) from None
        if same_output(args.output, args.trace):
            raise RunError("--output and --trace name the same file; choose two paths")
        inputs = None
        if args.inputs:  # only the members the function reads, each checked before it is loaded
            signature = runner.find_function(module, args.entry)
            inputs = runner.read_arrays(args.inputs, runner.argument_shapes(signature), "input", "--inputs")
        results, report = runner.run(module, inputs, args.entry, args.seed, args.allow_lossy)
    except ParseError as error:
        print(format_parse_error(error), file=sys.stderr)
        return 1
    except DiagnosticException as error:
        print(str(error) if ": error: " in str(error) else f"error: {error}", file=sys.stderr)
        return 1
    except (RunError, KernelError, UnsupportedTypeError, InterpretationError, TargetError) as error:
        text = str(error)
        print(text if ": error: " in text.split("\n", 1)[0] else f"error: {text}", file=sys.stderr)
        return 1
    if (args.report or args.trace) and report is None:
        print("note: the program has no shift or device operations; there is no chip timeline",
              file=sys.stderr)
    if report is not None and args.trace:
        if not _write(args.trace, json.dumps(report.chrome_trace()), "--trace"):
            return 1
        print(f"wrote the chip timeline to {args.trace}", file=sys.stderr)
    if report is not None and args.report:
        print(report)

        for line in planned_lines(runner.find_function(module, args.entry).function, report):
            print(line)
        planned = runner.find_function(module, args.entry).function.attributes.get("irc.planned_cycles")
        if planned is not None:
            cycles = float(planned.value.data)
            print(f"model-wide plan: {cycles:,.0f} cycles predicted, {report.model_cycles:,.0f} interpreted "
                  f"(ratio {report.model_cycles / cycles:.4f})")
    if args.output:
        archive = io.BytesIO()
        np.savez(archive, **results)  # into memory: numpy appends no suffix to a stream
        if not _write(args.output, archive.getvalue(), "--output"):
            return 1
        # a stream (/dev/stdout) holds the archive alone
        print(f"wrote {', '.join(results)} to {args.output}", file=sys.stderr if is_stream(args.output) else sys.stdout)
    else:
        for name, value in results.items():
            _print_result(name, value)
    return 0


def _write(path: str, data: bytes | str, flag: str) -> bool:
    """Write one output file at once; a failure is one diagnostic naming the file."""
    try:
        write_atomically(path, data)
    except OSError as error:
        print(f"error: cannot write the {flag} file {path}: {error.strerror or error}", file=sys.stderr)
        return False
    return True

def main() -> None:
    exit_tool(run)

if __name__ == "__main__":
    main()
