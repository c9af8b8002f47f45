"""Run a function of an irc module on the reference interpreter, by name: the one path
from IR and inputs to results (and the chip's report) for every tool.

The interpreter executes what it is given and never lowers: a module holding
``shift.kernel``s runs as the device program the passes make of it (`device_program`:
``shift-to-device``, ``preload-schedule`` on a chip with off-chip memory and
``device-alloc``, as the ``inference`` pipeline ends), looked up by name in the universe.

Arguments and results are keyed by name: the ``irc.name`` argument/result attribute
of the function (an imported model carries its ONNX input and output names there),
else ``arg0``, ``arg1``, ... and ``result0``, ``result1``, ...

Weights (arguments marked ``irc.weight``) that the caller does not pass are read
from the module's side file (``irc.weights``, see `irc.frontend.weights`), resolved
relative to the file the module was parsed from. A run with no inputs at all makes up
random (seeded) inputs, and random weights too when the module names no weights file.
"""

from __future__ import annotations

import math
import os
import weakref
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import BytesAttr, ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.interpreter import Interpreter
from xdsl.passes import PassPipeline

from irc import universe
from irc.diagnostics import LocatingParser, location_of, ops_children_first, verify_dominance, verify_located
from irc.dialects.dtypes import UnsupportedTypeError, numpy_dtype
from irc.dialects.shift import KernelOp
from irc.frontend.weights import module_weights_file
from irc.interpreter.chip import Report
from irc.interpreter.npu import npu_report
from irc.interpreter.registry import all_interpreter_functions, chips_of
from irc.interpreter.te_eval import compute_dtype, evaluation_limit
from irc.output import npz_name_problem

NAME_ATTR = "irc.name"
WEIGHT_ATTR = "irc.weight"

# The directory each parsed module came from, to resolve its relative weights file.
_SOURCE_DIRS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class RunError(Exception):
    """A problem with what the user asked to run (missing input, wrong shape, ...)."""


def make_context() -> Context:
    ctx = Context()
    for name, factory in universe.all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx


def parse_module(text: str, filename: str, ctx: Context | None = None) -> ModuleOp:
    module = LocatingParser(ctx or make_context(), text, filename).parse_module()
    verify_located(module)
    if os.path.isfile(filename):
        _SOURCE_DIRS[module] = os.path.dirname(os.path.abspath(filename))
    return module


def _names(function: FuncOp, attrs, count: int, prefix: str) -> list[str]:
    """The ``irc.name`` of each argument or result (``prefix`` + index where there is
    none); one that is not text is a located `RunError` (xDSL parses a string literal with
    byte escapes as bytes: UTF-8 bytes are text)."""
    names = []
    for index in range(count):
        name = None
        if attrs is not None:
            entry = attrs.data[index].data.get(NAME_ATTR)
            if isinstance(entry, StringAttr):
                name = entry.data
            elif isinstance(entry, BytesAttr):
                try:
                    name = entry.data.decode("utf-8")
                except UnicodeDecodeError:
                    entry = f"bytes that are not UTF-8 text ({entry.data[:20]!r})"
            if entry is not None and name is None:
                what = "argument" if prefix == "arg" else "result"
                raise RunError(f"{location_of(function)}: error: '{function.name}' op {what} {index}'s {NAME_ATTR} "
                               f"must be a string, got {str(entry)[:80]}")
        names.append(name or f"{prefix}{index}")
    return names


@dataclass
class Signature:
    function: FuncOp
    arg_names: list[str]
    result_names: list[str]
    weight_names: tuple[str, ...] = ()
    """Names of the arguments marked ``irc.weight``."""


def find_function(module: ModuleOp, entry: str | None) -> Signature:
    functions = [op for op in module.walk() if isinstance(op, FuncOp) and op.body.blocks]
    by_name = {f.sym_name.data: f for f in functions}
    if entry is None:
        entry = "main" if "main" in by_name or len(functions) != 1 else functions[0].sym_name.data
    if entry not in by_name:
        known = ", ".join(by_name) or "none"
        raise RunError(f"no function '@{entry}' to run (functions: {known}); use --entry")
    function = by_name[entry]
    kind = function.function_type
    arg_names = _names(function, function.arg_attrs, len(kind.inputs), "arg")
    weights = ()
    if function.arg_attrs is not None:
        weights = tuple(
            name for name, attrs in zip(arg_names, function.arg_attrs.data)
            if WEIGHT_ATTR in attrs.data
        )
    result_names = _names(function, function.res_attrs, len(kind.outputs), "result")
    _check_names(function, "argument", arg_names)
    _check_names(function, "result", result_names)
    return Signature(function, arg_names, result_names, weights)


def _check_names(function: FuncOp, what: str, names: list[str]) -> None:
    """Each name a unique npz member name (`npz_name_problem`: at most 65,531 bytes, no
    NUL); a located `RunError` otherwise."""
    where = f"{location_of(function)}: error: '{function.name}' op"
    seen: dict[str, int] = {}
    for index, name in enumerate(names):
        shown = name if len(name) <= 40 else name[:40] + "..."
        problem = npz_name_problem(name)
        if problem is not None:
            raise RunError(f"{where} {what} {index} ({shown!r}) has {problem}")
        if name in seen:
            raise RunError(f"{where} {what}s {seen[name]} and {index} are both named {shown!r}; inputs and results "
                           f"are keyed by name, so each needs its own")
        seen[name] = index


MAX_TENSOR_BYTES = 4 << 30
"""The largest tensor the interpreter makes up as a random input (it holds every tensor
in memory)."""


def random_inputs(signature: Signature, seed: int = 0, weights: bool = False) -> dict[str, np.ndarray]:
    """Reproducible inputs: normal floats, small non-negative integers, booleans; the
    weights' too with `weights` (else they come from the module's weights file)."""
    if seed < 0:
        raise RunError(f"the seed must be a non-negative integer, got {seed}")
    rng = np.random.default_rng(seed)
    inputs = {}
    for name, type_ in zip(signature.arg_names, signature.function.function_type.inputs):
        if name in signature.weight_names and not weights:
            continue  # weights come from the module's weights file
        if not isinstance(type_, TensorType):
            raise RunError(f"argument '{name}' has type {type_}; only tensors can be inputs")
        shape = tuple(type_.get_shape())
        dtype = numpy_dtype(type_.get_element_type())
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes > MAX_TENSOR_BYTES:
            raise RunError(
                f"argument '{name}' ({type_}) would take {nbytes / 2**30:,.0f} GiB; the interpreter holds "
                f"every tensor in memory (at most {MAX_TENSOR_BYTES >> 30} GiB per tensor)"
            )
        if dtype.kind == "f":
            value = rng.standard_normal(shape).astype(dtype)
        elif dtype.kind == "b":
            value = rng.integers(0, 2, shape).astype(bool)
        else:
            value = rng.integers(0, 4, shape).astype(dtype)
        inputs[name] = value
    return inputs


def check_inputs(
    signature: Signature, given: Mapping[str, np.ndarray], allow_lossy: bool = False
) -> list[np.ndarray]:
    """The arguments in order, each checked against its type: present, of the right
    shape, of a kind that converts to the element type without losing what it says
    (no complex, string, date or structured data). A value outside the element type's
    range (a float beyond it, an integer that does not fit, a NaN or infinity for an
    integer type) or that an integer type would truncate (3.7; a boolean takes 0 or 1
    only) is an error unless ``allow_lossy``, which casts as numpy does."""
    args = []
    for name, type_ in zip(signature.arg_names, signature.function.function_type.inputs):
        if name not in given:
            have = ", ".join(given) or "none"
            raise RunError(f"input '{name}' is missing (inputs given: {have})")
        value = np.asarray(given[name])
        shape = tuple(type_.get_shape())
        if value.shape != shape:
            raise RunError(f"input '{name}' has shape {value.shape} but the function expects {shape}")
        target = numpy_dtype(type_.get_element_type())
        if value.dtype.kind not in "biuf":
            raise RunError(
                f"input '{name}' holds {value.dtype} data; the function expects {target} (numbers or booleans)"
            )
        if not allow_lossy:
            lost = _out_of_range(value, target)
            if lost is not None:
                raise RunError(
                    f"input '{name}' has values beyond the range of {target} ({lost}); "
                    f"--allow-lossy casts them anyway"
                )
            inexact = _not_integral(value, target)
            if inexact is not None:
                raise RunError(
                    f"input '{name}' has values that are not {inexact[1]} ({inexact[0]}) but the function expects "
                    f"{target}; --allow-lossy casts them anyway (numpy truncates toward zero)"
                )
        with np.errstate(invalid="ignore", over="ignore"):
            args.append(value.astype(target, copy=False))
    return args


def _not_integral(value: np.ndarray, target: np.dtype) -> tuple[str, str] | None:
    """An example of a value of ``value`` that casting to the integer or boolean
    ``target`` would change (a float with a fraction, a number other than 0 or 1 for a
    boolean), with what the values should be; None if there is none."""
    if value.size == 0 or value.dtype == target or value.dtype.kind == "b" or target.kind not in "biu":
        return None
    if target.kind == "b":
        bad = value[(value != 0) & (value != 1)]
        return (repr(bad.flat[0].item()), "0 or 1") if bad.size else None
    if value.dtype.kind != "f":
        return None
    with np.errstate(invalid="ignore"):
        bad = value[np.isfinite(value) & (value != np.trunc(value))]
    return (repr(bad.flat[0].item()), "integers") if bad.size else None


def _out_of_range(value: np.ndarray, target: np.dtype) -> str | None:
    """An example of a value of ``value`` that ``target`` cannot hold, or None."""
    if value.size == 0 or target.kind == "b" or value.dtype == target:
        return None
    if target.kind == "f":
        if value.dtype.kind == "f" and value.dtype.itemsize <= target.itemsize or value.dtype.kind == "b":
            return None
        finite = value[np.isfinite(value)] if value.dtype.kind == "f" else value
        bad = finite[np.abs(finite.astype(np.float64)) > np.finfo(target).max]
        return repr(bad.flat[0].item()) if bad.size else None
    limits = np.iinfo(target)
    if value.dtype.kind == "b":
        return None
    if value.dtype.kind == "f":
        if not np.isfinite(value).all():
            return repr(value[~np.isfinite(value)].flat[0].item())
        bad = value[(value < limits.min) | (value > limits.max)]
        return repr(bad.flat[0].item()) if bad.size else None
    low, high = int(value.min()), int(value.max())
    if low < limits.min:
        return str(low)
    if high > limits.max:
        return str(high)
    return None


def check_storable(function: FuncOp) -> None:
    """Every value ``function`` computes has an element type the interpreter holds in
    numpy (not bf16, tf32, index, i3, ...) and takes at most `MAX_TENSOR_BYTES` as it is
    computed (i8 in int64, f16 in f32), the function's own results included, and every
    op evaluated over whole tensors stays within the interpreter's iteration bounds
    (`te_eval.evaluation_limit`): a located `RunError` at the first op that breaks one,
    before anything runs."""
    for op in ops_children_first(function):
        values = [*op.results, *(arg for region in op.regions for block in region.blocks for arg in block.args)]
        if op is function:  # the signature: its arguments (above) and its results
            values += list(function.function_type.outputs)
        for value in values:
            type_ = getattr(value, "type", value)
            get_element_type = getattr(type_, "get_element_type", None)
            if get_element_type is None:
                continue
            element = get_element_type()
            try:
                dtype = numpy_dtype(element)
            except UnsupportedTypeError:
                raise RunError(
                    f"{location_of(op)}: error: '{op.name}' op element type {element} has no storage in the "
                    f"interpreter (it runs f16, f32, f64, i1 and 8-, 16-, 32- and 64-bit integers)"
                ) from None
            if isinstance(type_, TensorType):
                count = math.prod(type_.get_shape())
                nbytes = count * max(dtype.itemsize, compute_dtype(dtype).itemsize)
                if nbytes > MAX_TENSOR_BYTES:
                    what = "argument or result" if op is function else "result"
                    computed = (f" computed in {compute_dtype(dtype)}" if compute_dtype(dtype).itemsize > dtype.itemsize
                                else "")
                    raise RunError(
                        f"{location_of(op)}: error: '{op.name}' op {what} {type_} would take {_gib(nbytes)} GiB"
                        f"{computed}; the interpreter holds every tensor in memory (at most "
                        f"{MAX_TENSOR_BYTES >> 30} GiB per tensor)"
                    )
        if op.name == "device.relayout":  # the interpreter assembles the moved tensor whole
            shape = [int(d) for d in op.shape.get_values()]
            try:
                itemsize = numpy_dtype(op.source.type.get_element_type()).itemsize
            except (UnsupportedTypeError, AttributeError):
                itemsize = 8
            nbytes = math.prod(shape) * itemsize
            if nbytes > MAX_TENSOR_BYTES:
                raise RunError(
                    f"{location_of(op)}: error: '{op.name}' op moves a tensor of shape {shape} ({_gib(nbytes)} GiB); "
                    f"the interpreter holds every tensor in memory (at most {MAX_TENSOR_BYTES >> 30} GiB per tensor)"
                )
        for method in _WHOLE_TENSOR_EXPRESSIONS.get(op.name, ()):
            try:
                limit = evaluation_limit(getattr(op, method)())
            except ValueError:  # an expression the verifier already refused
                continue
            if limit is not None:
                raise RunError(f"{location_of(op)}: error: '{op.name}' op {limit}")


_WHOLE_TENSOR_EXPRESSIONS = {"te.op": ("bound",), "rtensor.op": ("bound",), "igo.grad_pair": ("bound_dx", "bound_dw")}
"""Ops the interpreter evaluates over whole tensors (`te_eval.evaluate`), by the methods
giving their bound expressions."""


def _gib(nbytes: int) -> str:
    return f"{nbytes / 2**30:,.0f}" if nbytes < 2**30 * 1e15 else f"{nbytes / 2**30:.3g}"


DEVICE_PIPELINE = "shift-to-device,preload-schedule{if_offchip=true},device-alloc"
"""The passes that make a shift-level module the device program the interpreter runs (the
end of the ``inference`` pipeline)."""


def device_program(module: ModuleOp) -> ModuleOp:
    """``module`` as the interpreter runs it: itself when it holds no ``shift.kernel``, else
    a copy whose kernels `DEVICE_PIPELINE` lowered (the caller's module stays as it was)."""
    if not any(isinstance(op, KernelOp) for op in module.walk()):
        return module
    lowered = module.clone()
    PassPipeline.parse_spec(universe.all_passes(), DEVICE_PIPELINE).apply(make_context(), lowered)
    return lowered


def interpreter_for(module: ModuleOp) -> Interpreter:
    interpreter = Interpreter(module)
    for functions in all_interpreter_functions():
        interpreter.register_implementations(functions)
    return interpreter


def run(
    module: ModuleOp, inputs: Mapping[str, np.ndarray] | None = None, entry: str | None = None,
    seed: int = 0, allow_lossy: bool = False,
) -> tuple[dict[str, np.ndarray], Report | None]:
    """Run `entry` with named `inputs` (random when None, weights included when the
    module names no weights file; weights the caller leaves out come from the module's
    weights file); results by name, and the report of the chip
    time the run took (None for a program with no `shift`/`device` ops)."""
    signature = find_function(module, entry)
    verify_dominance(signature.function)  # a module built in code is not verified by parse_module
    check_storable(signature.function)
    if inputs is None:
        # no inputs at all: random ones, weights included unless the module names a file
        unnamed = module_weights_file(module, _SOURCE_DIRS.get(module)) is None
        given = dict(random_inputs(signature, seed, weights=unnamed))
    else:
        given = dict(inputs)
    missing = [name for name in signature.weight_names if name not in given]
    if missing:
        given.update(_module_weights(module, missing, signature))
    args = check_inputs(signature, given, allow_lossy)
    program = device_program(module)
    function = signature.function
    if program is not module:   # the lowered copy's function of the same name, its relayouts checked too
        function = find_function(program, function.sym_name.data).function
        check_storable(function)
    interpreter = interpreter_for(program)
    results = interpreter.call_op(function, tuple(args))
    named = {name: np.asarray(v) for name, v in zip(signature.result_names, results)}
    reports = [chip.report() for chip in chips_of(interpreter)]
    if not reports:  # an NPU program (IGO): its DRAM traffic and stalls
        return named, npu_report(interpreter)
    return named, Report.combine(reports)


def run_function(
    module: ModuleOp, inputs: Mapping[str, np.ndarray] | None = None, entry: str | None = None,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """``run`` without the report: results by name."""
    return run(module, inputs, entry, seed)[0]


def files_read(module: ModuleOp) -> list[tuple[str, str]]:
    """The files a run of ``module`` reads besides the program (its weights file), as
    ``(path, description)`` pairs: what no output of the run may overwrite."""
    path = module_weights_file(module, _SOURCE_DIRS.get(module))
    return [] if path is None else [(path, "the module's weights file (irc.weights)")]


_UNREADABLE = (ValueError, OSError, KeyError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError,
               RuntimeError)
"""What numpy and zipfile raise for a damaged, encrypted or oddly compressed archive."""


def read_arrays(path: str, expected: Mapping[str, tuple[int, ...]], kind: str, flag: str) -> dict[str, np.ndarray]:
    """The members of the ``.npz`` at ``path`` that ``expected`` names (by name: their
    shapes), each checked from its header (shape, numbers or booleans) before numpy
    inflates it; members not named are never read. ``kind`` ("input", "weight") and
    ``flag`` (what the file is to the user) word the errors."""
    if not os.path.isfile(path):
        raise RunError(f"no such file: {path}" if kind == "input" else f"the module's weights file {path} does not exist")
    try:
        archive = np.load(path, allow_pickle=False)
    except _UNREADABLE as error:
        raise RunError(f"{path} is not a readable .npz file ({error})") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise RunError(f"{path} holds one unnamed array; {flag} takes an .npz of arrays by name")
    arrays = {}
    with archive:
        try:
            for name in archive.files:
                if name in expected:
                    _check_member(archive, name, expected[name], kind, path)
                    arrays[name] = archive[name]
        except _UNREADABLE as error:
            raise RunError(f"{path} is not a readable .npz file ({error})") from None
    return arrays


def _check_member(archive, name: str, shape: tuple[int, ...], kind: str, path: str) -> None:
    """The member's shape and dtype, read from its header: a wrong or huge array, or
    data that are not numbers, is refused before numpy inflates it."""
    member_name = name if name in archive.zip.namelist() else f"{name}.npy"
    with archive.zip.open(member_name) as member:
        version = np.lib.format.read_magic(member)
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        stored, _, dtype = read_header(member)
    if tuple(stored) != shape:
        raise RunError(f"{kind} '{name}' has shape {tuple(stored)} but the function expects {shape} ({path})")
    if dtype.kind not in "biuf":
        raise RunError(f"{kind} '{name}' holds {dtype} data; the function expects numbers or booleans ({path})")


def argument_shapes(signature: Signature) -> dict[str, tuple[int, ...]]:
    """Each argument's shape by name."""
    return {name: tuple(type_.get_shape())
            for name, type_ in zip(signature.arg_names, signature.function.function_type.inputs)
            if isinstance(type_, TensorType)}


def _module_weights(module: ModuleOp, names: list[str], signature: Signature) -> dict[str, np.ndarray]:
    path = module_weights_file(module, _SOURCE_DIRS.get(module))
    if path is None:
        raise RunError(
            f"weight '{names[0]}' is not given and the module names no weights file "
            f"(irc.weights)"
        )
    shapes = argument_shapes(signature)
    weights = read_arrays(path, {name: shapes[name] for name in names if name in shapes}, "weight",
                          "the module's weights file")
    absent = [name for name in names if name not in weights]
    if absent:
        raise RunError(f"weight '{absent[0]}' is not in {path}")
    return weights
