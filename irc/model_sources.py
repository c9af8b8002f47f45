"""Models to plan, from what a user hands `irc-plan --model`: a built-in encoder stack
(batch-parametric), a .mlir file of te ops, or an ONNX file (imported with the
frontend; batch-parametric when a dimension is symbolic). Each becomes the planner's
`ModelSpec` through `irc.lowering.model_from_ir`, with the ops left to the fallback
(te ops the planner cannot describe, every ``te.opaque``); for an MTIA device
(``build(batch, family="mtia")``) the MTIA planner's model, embedding lookups included.
"""

from __future__ import annotations

import os
import re

from xdsl.utils.exceptions import ParseError

from irc.diagnostics import format_parse_error, location_of
from irc.lowering.model_from_ir import (
    ModelIRError,
    argument_loads,
    fallback_line,
    function_model,
    mtia_function_model,
    opaque_fallbacks,
)
from irc.runner import RunError, find_function, parse_module
from irc.workloads.bert import bert_model

BUILTIN_MODELS = {
    # name: (layers, hidden, heads, ffn, default sequence length)
    "bert-tiny": (2, 128, 2, 512, 128),
    "bert-mini": (4, 256, 4, 1024, 128),
    "bert-base": (12, 768, 12, 3072, 128),
    "bert-large": (24, 1024, 16, 4096, 384),
}
"""Built-in batch-parametric models (`irc.workloads.bert.bert_model` encoder stacks)."""


class ModelSourceError(Exception):
    """A model that cannot be read, imported or planned (the message is a diagnostic)."""


class ModelSource:
    """A model to plan: ``build(batch)`` gives its `ModelSpec`, the ops left to the
    fallback (as lines to print) and what its ops load from the function's arguments that
    are not weights on a chip with off-chip memory (`irc.lowering.model_from_ir.ArgumentLoads`,
    as `rtensor-partition` prices them; None for a built-in model, whose only such argument
    is its input), ``build(batch, family="mtia")`` the MTIA planner's model; ``batched`` says
    whether the batch is a parameter."""

    def __init__(self, name: str, build, batched: bool, why_not_batched: str = ""):
        self.name = name
        self.build = build
        self.batched = batched
        self.why_not_batched = why_not_batched


def _builtin_source(model: str, layers: int | None, seq: int | None) -> ModelSource:
    default_layers, hidden, heads, ffn, default_seq = BUILTIN_MODELS[model]
    layers = layers or default_layers
    seq = seq or default_seq

    def build(batch: int, family: str = "ipu"):
        return bert_model(layers, batch, seq, hidden, heads, ffn), [], None

    return ModelSource(model, build, True)


def _function_of(module, entry: str | None, where: str):
    try:
        return find_function(module, entry).function
    except RunError as error:
        raise ModelSourceError(f"error: {where}: {error}") from None


def _spec_of_function(function, where: str, name: str | None = None, family: str = "ipu"):
    try:
        input_bytes = None
        if family == "mtia":
            model, left = mtia_function_model(function, name=name)
            label = name or function.sym_name.data
        else:
            found = function_model(function, name=name)
            model, label = found.model, found.name
            left = {**found.fallbacks, **opaque_fallbacks(function)}
            if model is not None:
                input_bytes = argument_loads(found)
    except ModelIRError as error:
        raise ModelSourceError(f"{location_of(error.op)}: error: '{error.op.name}' op {error.message}") from None
    if model is None:
        raise ModelSourceError(f"error: {where}: @{label} has no op the planner can describe")
    order = {op: i for i, op in enumerate(function.walk())}
    fallbacks = [fallback_line(op, reason) for op, reason in sorted(left.items(), key=lambda x: order[x[0]])]
    return model, fallbacks, input_bytes


def _mlir_source(path: str, entry: str | None) -> ModelSource:
    try:
        with open(path) as handle:
            text = handle.read()
    except OSError as error:
        raise ModelSourceError(f"error: --model: cannot read {path}: {error.strerror}") from None
    try:
        module = parse_module(text, path)
    except ParseError as error:
        raise ModelSourceError(format_parse_error(error)) from None
    function = _function_of(module, entry, path)
    built: dict = {}

    def build(batch: int, family: str = "ipu"):
        if family not in built:
            built[family] = _spec_of_function(function, path, family=family)
        return built[family]

    return ModelSource(
        function.sym_name.data, build, False,
        f"{path} has fixed shapes, so its batch cannot be varied; --max-batch needs a "
        f"batch-parametric source: an ONNX file with a symbolic batch dimension, or a built-in "
        f"model ({', '.join(BUILTIN_MODELS)}; --seq and --layers set its size)",
    )


def te_text_model(text: str, where: str):
    """(model, fallbacks, the loads of its non-weight arguments: ``ArgumentLoads``) of the first
    function of ``text`` (te ops), exactly as a .mlir file holding ``text`` gives them: a
    built-in model written as te (`irc.workloads.llm.decoder_te`) is planned as its file."""
    try:
        module = parse_module(text, where)
    except ParseError as error:
        raise ModelSourceError(format_parse_error(error)) from None
    return _spec_of_function(_function_of(module, None, where), where)


def _input_shape_flag(error) -> str:
    """The importer's message with irc-translate's ``--shape`` named as irc-plan spells it."""
    return re.sub(r"(?<![\w-])--shape\b", "--input-shape", str(error))


def _onnx_source(path: str, entry: str | None, input_shapes) -> ModelSource:
    # startup: only an ONNX model needs the importer (and onnx)
    from irc.frontend import OnnxImportError, import_model, load_model, parse_shape_overrides

    try:
        onnx_model = load_model(path)
        fixed = parse_shape_overrides(input_shapes)
    except OnnxImportError as error:
        raise ModelSourceError(f"error: {path}: {_input_shape_flag(error)}") from None
    initializers = {t.name for t in onnx_model.graph.initializer}
    inputs = {info.name for info in onnx_model.graph.input}
    # `--input-shape seq=128` fixes a dimension symbol wherever it occurs
    named = {name: shape[0] for name, shape in fixed.items() if name not in inputs and len(shape) == 1}
    symbolic = {}
    symbols = set()
    for info in onnx_model.graph.input:
        if info.name in initializers or info.name in fixed or not info.type.HasField("tensor_type"):
            continue
        dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else named.get(d.dim_param)
                for d in info.type.tensor_type.shape.dim]
        if None in dims:
            symbolic[info.name] = dims
            symbols |= {d.dim_param or "?" for d, value in zip(info.type.tensor_type.shape.dim, dims) if value is None}
    symbols = sorted(symbols)

    def build(batch: int, family: str = "ipu"):
        shapes = dict(fixed)
        for name, dims in symbolic.items():
            shapes[name] = tuple(batch if d is None else d for d in dims)
        try:
            result = import_model(onnx_model, shapes)
        except OnnxImportError as error:
            # every symbolic dimension takes the batch: say so, it may be why the graph broke
            at = f" (imported with {', '.join(symbols)} = {batch})" if symbols else ""
            raise ModelSourceError(f"error: {path}: {_input_shape_flag(error)}{at}") from None
        function = _function_of(result.module, entry, path)
        return _spec_of_function(function, path, stem, family)

    stem = os.path.splitext(os.path.basename(path))[0]
    why = "" if symbolic else (
        f"{path} has no symbolic dimension (every input shape is fixed), so its batch cannot be "
        f"varied; --max-batch needs an ONNX file whose batch dimension is symbolic"
    )
    name = os.path.splitext(os.path.basename(path))[0]
    if symbols:
        name += f" ({', '.join(symbols)} = batch)"
    return ModelSource(name, build, bool(symbolic), why)


def model_source(path: str, *, entry: str | None = None, input_shapes=(), layers: int | None = None,
                 seq: int | None = None) -> ModelSource:
    """The model ``path`` names: a built-in model, a .mlir file of te ops or an .onnx file."""
    if path in BUILTIN_MODELS:
        if input_shapes:
            raise ModelSourceError(f"error: --input-shape fixes an ONNX input's shape; {path} is a built-in model "
                                   f"(--batch, --seq and --layers set its size)")
        return _builtin_source(path, layers, seq)
    for flag, value in (("--seq", seq), ("--layers", layers)):
        if value is not None:
            raise ModelSourceError(f"error: {flag} sets the size of a built-in model "
                                   f"({', '.join(BUILTIN_MODELS)}), not of {path}")
    if input_shapes and not path.endswith(".onnx"):
        raise ModelSourceError(f"error: --input-shape fixes an ONNX input's shape; {path} is not an .onnx file")
    if path.endswith(".mlir"):
        return _mlir_source(path, entry)
    if path.endswith(".onnx"):
        return _onnx_source(path, entry, input_shapes)
    raise ModelSourceError(
        f"error: --model: '{path}' is neither a .mlir or .onnx file nor a built-in model "
        f"({', '.join(BUILTIN_MODELS)})"
    )
