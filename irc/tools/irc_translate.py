"""`irc-translate`: translate models from other formats into irc IR.

    irc-translate --import-onnx model.onnx [-o out.mlir] [--shape NAME=1x128 ...]
                  [--constant NAME=value.npy ...] [--weights out.weights.npz]
                  [--loss mse|xent | --output-gradient]

The ONNX graph becomes one `func.func @main` of `te` ops (`irc.frontend`). Its
constants are weight arguments stored in a side ``.npz`` (by default
``out.weights.npz`` beside ``-o out.mlir``, or ``model.weights.npz`` beside the
model when the IR goes to stdout), which `irc-run` loads by itself. With the IR on
stdout the weights file is one the user did not name, so an existing one is never
replaced: give ``--weights`` (which may name an existing file) or ``-o``. ``--loss``
appends a training loss against a new ``<output>_target`` argument and
``--output-gradient`` an explicit ``d<output>`` argument per output; either way
`te-autodiff` then appends the backward pass (gradients of the weights). Every problem
is one ``error:`` line and exit status 1; the input file is never written.
"""

from __future__ import annotations

import io
import os
import sys
import zipfile

import numpy as np
from xdsl.context import Context
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException

from irc.diagnostics import ArgumentParser, exit_tool
from irc.frontend.loss import LossError, append_loss, append_output_gradients
from irc.frontend.onnx_import import OnnxImportError, import_onnx, parse_shape_overrides
from irc.frontend.weights import attach_weights, save_weights, weights_path_for
from irc.output import OutputError, check_output, is_stream, npz_name_problem, same_output, write_atomically
from irc.passes.te_autodiff import TeAutodiff


class TranslateError(Exception):
    pass


def _arguments(argv):
    parser = ArgumentParser(prog="irc-translate", description=__doc__.splitlines()[0])
    parser.add_argument("--import-onnx", metavar="MODEL", required=True, help="the .onnx model to import")
    parser.add_argument("-o", "--output", help="write the IR here instead of stdout")
    parser.add_argument(
        "--shape", action="append", default=[], metavar="NAME=DIMS",
        help="fix the shape of a graph input, e.g. input_ids=1x128 (repeatable)",
    )
    parser.add_argument(
        "--constant", action="append", default=[], metavar="NAME=FILE.npy",
        help="bind a graph input to a constant value, which folds (repeatable)",
    )
    parser.add_argument("--weights", help="where to write the weights .npz (default: beside the IR)")
    training = parser.add_mutually_exclusive_group()
    training.add_argument("--loss", choices=["mse", "xent"], help="train: append this loss and the backward pass")
    training.add_argument(
        "--output-gradient", action="store_true",
        help="train: take each output's gradient as an argument and append the backward pass",
    )
    return parser.parse_args(argv)


def _train(module, loss: str | None, output_gradient: bool) -> None:
    try:
        if loss:
            append_loss(module, loss)
        else:
            append_output_gradients(module)
        TeAutodiff().apply(Context(), module)   # the pass parses nothing: no dialects needed
    except (LossError, DiagnosticException) as error:
        raise TranslateError(str(error).removeprefix("loc(unknown): error: ")) from None


def _same_file(a: str, b: str) -> bool:
    return os.path.abspath(a) == os.path.abspath(b) or (
        os.path.exists(a) and os.path.exists(b) and os.path.samefile(a, b)
    )


def _constants(items) -> dict[str, np.ndarray]:
    constants = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise TranslateError(f"--constant '{item}' must look like NAME=value.npy")
        try:
            value = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
            raise TranslateError(f"--constant {name}: cannot read {path} ({error})") from None
        if not isinstance(value, np.ndarray):
            value.close()
            raise TranslateError(f"--constant {name}: {path} is an .npz archive; give one array as an .npy file")
        if value.dtype.kind not in "biuf":
            raise TranslateError(f"--constant {name}: {path} holds {value.dtype} data; a constant is numbers or booleans")
        constants[name] = value
    return constants


def run(argv=None) -> int:
    args = _arguments(argv)
    model_path = args.import_onnx
    try:
        if not os.path.isfile(model_path):
            raise TranslateError(f"no such file: {model_path}")
        read = [(model_path, "the input model"),
                *((path, f"the --constant {name} file") for name, _, path in (c.partition("=") for c in args.constant))]
        try:
            if args.output:
                check_output(args.output, "-o", read)
            if args.weights:
                check_output(args.weights, "--weights", [*read, (args.output, "the -o file")])
                if same_output(args.weights, args.output):
                    raise OutputError("--weights and -o name the same file; choose two paths")
        except OutputError as error:
            raise TranslateError(str(error)) from None
        ir_file = args.output if args.output and not is_stream(args.output) else None
        shapes = parse_shape_overrides(args.shape)
        result = import_onnx(model_path, shapes, _constants(args.constant))
        if args.loss or args.output_gradient:
            _train(result.module, args.loss, args.output_gradient)
        if result.weights:
            for name in result.weights:
                problem = npz_name_problem(name)
                if problem is not None:
                    shown = name if len(name) <= 40 else name[:40] + "..."
                    raise TranslateError(f"weight {shown!r} has {problem}")
            if args.weights:
                weights_file = args.weights
            elif ir_file:
                weights_file = weights_path_for(ir_file)
            else:  # the IR goes to a stream (stdout, -o /dev/null, a FIFO): the weights beside the model
                weights_file = weights_path_for(os.path.splitext(model_path)[0] + ".mlir")
                if os.path.lexists(weights_file):
                    where = f"-o {args.output}" if args.output else "stdout"
                    raise TranslateError(
                        f"the weights would go to {weights_file}, which exists; the IR goes to {where}, so "
                        f"name the weights file with --weights (it may replace an existing file) or use -o FILE"
                    )
            if _same_file(weights_file, model_path):
                raise TranslateError("the weights file would overwrite the input model; use --weights")
            try:
                check_output(weights_file, "the weights file", read)
                save_weights(weights_file, result.weights)
            except OutputError as error:
                raise TranslateError(str(error)) from None
            except OSError as error:
                raise TranslateError(f"cannot write {weights_file}: {error.strerror or error}") from None
            print(f"note: wrote {len(result.weights)} weight tensor(s) to {weights_file}", file=sys.stderr)
            ir_dir = os.path.dirname(os.path.abspath(ir_file)) if ir_file else None
            reference = (
                os.path.relpath(os.path.abspath(weights_file), ir_dir) if ir_dir
                else os.path.abspath(weights_file)
            )
            attach_weights(result.module, reference)
    except (OnnxImportError, TranslateError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if args.output:
        text = io.StringIO()
        Printer(stream=text).print_op(result.module)
        text.write("\n")
        try:
            write_atomically(args.output, text.getvalue())
        except OSError as error:
            print(f"error: cannot write {args.output}: {error.strerror or error}", file=sys.stderr)
            return 1
    else:
        Printer(stream=sys.stdout).print_op(result.module)
        print()
    return 0


def main() -> None:
    exit_tool(run)

if __name__ == "__main__":
    main()
