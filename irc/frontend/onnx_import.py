"""Import an ONNX graph into one `func.func` of `te` ops (seed 004 §5, seed 000 §4.2).

ELK (seed 004 §5) takes models through ONNX and reads "layer information, operator
definitions and tensor shapes" from the graph; T10 (seed 000 §4.2) states operators
as tensor expressions and leaves the few that none can state to vendor kernels. The
importer does both: every node becomes one or more `te.op`s (converters in
`irc.frontend.onnx_ops`), a `te.opaque` where no expression can state it (CumSum,
ArgMax, TopK, ...), or nothing at all when it folds.

* **Shapes** come from onnx's shape inference (with data propagation) after the
  graph inputs' dynamic dimensions are fixed (``--shape input_ids=1x128``).
* **Folding**: a node whose inputs are all constants (initializers, Constant nodes,
  the output of Shape on a statically shaped value, ...) is evaluated at import time
  with ``onnx.reference``; pure shape arithmetic therefore disappears.
* **Weights**: a constant that a `te` op reads becomes a function argument named by
  its ONNX name with the unit attribute ``irc.weight`` (scalars are written into the
  expression as literals instead); `irc.frontend.weights` stores them beside the IR.
* **Names**: graph inputs and outputs keep their ONNX names in ``irc.name``.

Errors are `OnnxImportError`s naming the node, its op type and the opset.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

import numpy as np
import onnx
from onnx import numpy_helper
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Region
from xdsl.utils.exceptions import VerifyException

from irc.dialects.te_expr import ExprError
from irc.frontend import onnx_ops  # the converters register themselves as it loads
from irc.frontend.onnx_attributes import check_attributes, check_axes
from irc.frontend.onnx_external import load_external_data
from irc.frontend.onnx_graph import (  # noqa: F401 (re-exported for the importer's users)
    ImportResult,
    Importer,
    MAX_DIMENSION,
    MIN_OPSET,
    NAME_ATTR,
    NodeError,
    OnnxImportError,
    Tensor,
    UnsupportedDtype,
    WEIGHT_ATTR,
    element_type,
    onnx_dtype,
)


def _opset_of(model: onnx.ModelProto) -> int:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return entry.version
    return 0


def _sanitize(text: str) -> str:
    """onnx's message on one line, without its exception-class tags (``[ShapeInferenceError]``)."""
    text = re.sub(r"\[\w*(?:Error|Exception)\]\s*", "", text)
    text = re.sub(r"Inference error\(s\):\s*", "", text)
    return re.sub(r"\s+", " ", text).strip()


def load_model(path: str) -> onnx.ModelProto:
    """Read and check an ONNX file; `OnnxImportError` for anything that is not one. The
    bytes are decoded as they are (no onnx.load, which would follow external references
    by itself); external data is then read from the model's folder only
    (`irc.frontend.onnx_external`)."""
    try:
        with open(path, "rb") as stream:
            data = stream.read()
    except OSError as error:
        raise OnnxImportError(f"cannot read {path}: {error.strerror}") from None
    try:
        model = onnx.ModelProto()
        model.ParseFromString(data)
    except Exception:  # protobuf's DecodeError and friends
        raise OnnxImportError(
            f"{path} is not an ONNX model (it does not decode as an ONNX protobuf; "
            f"truncated or another format)"
        ) from None
    if not model.HasField("graph") or (not model.graph.node and not model.graph.output):
        raise OnnxImportError(f"{path} is not an ONNX model (it has no graph)")
    if not model.opset_import:
        raise OnnxImportError(f"{path} is not an ONNX model (it declares no opset)")
    load_external_data(model, os.path.dirname(os.path.abspath(path)))
    return model


STRIPPED_BYTES = 1 << 16
"""Initializers larger than this lose their data in the importer's copy of the model once
read into arrays (shape arithmetic reads only small ones)."""


def parse_shape_overrides(items) -> dict[str, tuple[int, ...]]:
    """``["input_ids=1x128", "mask=1x128"]`` -> ``{"input_ids": (1, 128), ...}``."""
    shapes = {}
    for item in items or ():
        name, sep, dims = item.rpartition("=")
        if not sep or not name:
            raise OnnxImportError(f"--shape '{item}' must look like NAME=2x3x4")
        try:
            shape = tuple(int(d) for d in dims.split("x")) if dims else ()
        except ValueError:
            raise OnnxImportError(f"--shape '{item}': dimensions must be integers joined by 'x'") from None
        if any(d <= 0 for d in shape):
            raise OnnxImportError(f"--shape '{item}': dimensions must be positive")
        if any(d > MAX_DIMENSION for d in shape):
            raise OnnxImportError(f"--shape '{item}': a dimension of more than {MAX_DIMENSION} is beyond what irc plans")
        shapes[name] = shape
    return shapes


def _fix_input_shapes(model: onnx.ModelProto, shapes: Mapping[str, tuple[int, ...]]) -> None:
    initializers = {t.name for t in model.graph.initializer}
    inputs = {i.name: i for i in model.graph.input if i.name not in initializers}
    symbols = {
        dim.dim_param
        for info in inputs.values()
        for dim in info.type.tensor_type.shape.dim
        if dim.dim_param
    }
    for name, shape in list(shapes.items()):
        if name in inputs:
            continue
        if name in symbols and len(shape) == 1:  # `--shape batch=2` fixes a symbol
            for info in inputs.values():
                for dim in info.type.tensor_type.shape.dim:
                    if dim.dim_param == name:
                        dim.dim_value = shape[0]
            continue
        known = ", ".join(inputs) or "none"
        more = f"; dimension symbols: {', '.join(sorted(symbols))}" if symbols else ""
        raise OnnxImportError(
            f"--shape names '{name}', which is not a graph input (inputs: {known}{more})"
        )
    shapes = {n: s for n, s in shapes.items() if n in inputs}
    restated = False
    for name, value_info in inputs.items():
        tensor_type = value_info.type.tensor_type
        if name in shapes:
            shape = shapes[name]
            if tensor_type.HasField("shape") and len(tensor_type.shape.dim) != len(shape):
                raise OnnxImportError(
                    f"--shape gives input '{name}' rank {len(shape)} but the model "
                    f"declares rank {len(tensor_type.shape.dim)}"
                )
            restated |= any(d.HasField("dim_value") and d.dim_value != size
                            for d, size in zip(tensor_type.shape.dim, shape))
            tensor_type.shape.Clear()
            for size in shape:
                tensor_type.shape.dim.add().dim_value = size
            continue
        if not tensor_type.HasField("shape"):
            raise OnnxImportError(f"input '{name}' has no shape; give one with --shape {name}=2x3")
        for dim in tensor_type.shape.dim:
            if not dim.HasField("dim_value") or dim.dim_value <= 0:
                dims = "x".join(
                    str(d.dim_value) if d.HasField("dim_value") and d.dim_value > 0 else "N"
                    for d in tensor_type.shape.dim
                )
                what = (f"a dimension of size {dim.dim_value} (irc imports tensors of positive sizes)"
                        if dim.HasField("dim_value") else f"a dynamic dimension '{dim.dim_param or '?'}'")
                raise OnnxImportError(f"input '{name}' has {what}; fix it with --shape {name}={dims}")
            if dim.dim_value > MAX_DIMENSION:
                raise OnnxImportError(
                    f"input '{name}' has a dimension of {dim.dim_value}, more than the {MAX_DIMENSION} irc plans"
                )
    if restated:
        # a model exported at fixed shapes states its intermediates' and outputs' shapes at
        # those: stale under the new input shape, they are left to shape inference
        for info in (*model.graph.value_info, *model.graph.output):
            if info.type.HasField("tensor_type"):
                info.type.tensor_type.ClearField("shape")


def _check_single_assignment(model: onnx.ModelProto) -> None:
    """Every value is defined once (ONNX graphs are single-assignment; onnx.checker
    rejects a graph that is not), so no node reads a value another one overwrote."""
    defined = {i.name for i in model.graph.input} | {t.name for t in model.graph.initializer}
    for node in model.graph.node:
        for name in node.output:
            if not name:
                continue
            if name in defined:
                raise OnnxImportError(
                    f"node '{node.name or node.output[0]}' ({node.op_type}): value '{name}' is defined "
                    f"twice; an ONNX graph assigns each value once"
                )
            defined.add(name)


def _infer_shapes(model: onnx.ModelProto) -> onnx.ModelProto:
    """Strict shape inference; with data propagation (shape arithmetic, ``Shape`` ->
    ``Reshape``) only when plain inference leaves a shape unknown, because onnx's data
    propagation walks every element of a 1-D tensor (a 16M-element input takes seconds
    and gigabytes to infer a Slice)."""
    plain = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=False)
    infos = (*plain.graph.value_info, *plain.graph.output)
    known = {info.name for info in infos if _static(info)}
    produced = {name for node in plain.graph.node for name in node.output if name}
    if produced <= known:
        return plain
    return onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)


def _inference_error(model: onnx.ModelProto, opset: int, error: Exception) -> OnnxImportError:
    """Shape inference's failure as an error naming the node; an axis attribute out of
    range for its input's rank is said as `check_axes` says it for every operator
    (the ranks then come from inference without strict mode, which stops at no node)."""
    text = _sanitize(str(error))
    found = re.search(r"op_type:(\w+)(?:, node name: ([^)]*))?\)", text)
    node = next((n for n in model.graph.node if found and n.op_type == found.group(1)
                 and n.name == found.group(2)), None)
    if node is None:  # no node name in the message, or an empty one
        node = next((n for n in model.graph.node if found and n.op_type == found.group(1)), None)
    if node is None:
        return OnnxImportError(f"onnx shape inference failed: {text}")
    label = f"node '{node.name or node.output[0]}' ({node.op_type}, opset {opset})"
    try:
        partial = onnx.shape_inference.infer_shapes(model, strict_mode=False)
        infos = {i.name: i.type for i in (*partial.graph.input, *partial.graph.value_info)}
        ranks = {name: len(t.tensor_type.shape.dim) for name, t in infos.items()
                 if t.HasField("tensor_type") and t.tensor_type.HasField("shape")}
        ranks.update((t.name, len(t.dims)) for t in model.graph.initializer)
        check_axes(node, [ranks.get(name) for name in node.input])
    except NodeError as axis_error:
        return OnnxImportError(f"{label}: {axis_error}")
    except Exception:  # noqa: BLE001 - no better message than onnx's
        pass
    return OnnxImportError(f"{label}: onnx shape inference failed: {text}")


def _static(info) -> bool:
    tensor = info.type.tensor_type
    return (info.type.HasField("tensor_type") and tensor.HasField("shape")
            and all(dim.HasField("dim_value") for dim in tensor.shape.dim))


def _check_model(model: onnx.ModelProto, opset: int) -> None:
    """onnx.checker's verdict on the graph (attributes, inputs, topological order,
    types); its failure is an error naming the node it found at fault. A graph output
    may leave its shape to inference (the checker wants the field; an empty one is
    lent for the check)."""
    lent = [info for info in model.graph.output
            if info.type.HasField("tensor_type") and not info.type.tensor_type.HasField("shape")]
    for info in lent:
        info.type.tensor_type.shape.SetInParent()
    try:
        onnx.checker.check_model(model)
    except (onnx.checker.ValidationError, ValueError) as error:
        text = _sanitize(str(error))
        found = re.search(r"[Nn]ame: (\S*) OpType: (\S+)", text)
        message = text.split(" ==> Context:")[0].strip()
        if found is None:
            raise OnnxImportError(f"the model is not valid ONNX: {message}") from None
        name, op_type = found.groups()
        node = next((n for n in model.graph.node if n.op_type == op_type and n.name == name), None)
        label = name or (node.output[0] if node is not None and node.output else "?")
        empty = re.search(r"input (\d+) is marked single but has an empty string", message)
        if empty is not None and node is not None:
            message = _missing_input(node, int(empty.group(1)), opset) or message
        short = re.search(r"has input size (\d+) not in range \[min=(\d+)", message)
        if short is not None and node is not None and int(short.group(1)) < int(short.group(2)):
            # an input omitted at the end: the first one missing is the one to name
            message = _missing_input(node, int(short.group(1)), opset) or message
        raise OnnxImportError(f"node '{label}' ({op_type}, opset {opset}): not valid ONNX: {message}") from None
    finally:
        for info in lent:
            info.type.tensor_type.ClearField("shape")


def _missing_input(node, index: int, opset: int) -> str | None:
    """What a required input left empty (or omitted) is, by the operator's schema (a
    quantized tensor without its scale names the tensor)."""
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, node.domain)
    except (onnx.defs.SchemaError, TypeError):  # TypeError: a version beyond 32 bits
        return None
    if index >= len(schema.inputs):
        return None
    name = schema.inputs[index].name
    if node.op_type in ("QuantizeLinear", "DequantizeLinear") and name.endswith("scale") and node.input:
        verb = "quantized" if node.op_type == "QuantizeLinear" else "dequantized"
        return f"tensor '{node.input[0]}' is {verb} without a scale (input {name} is missing)"
    return f"required input {name} (input {index}) is empty"


def import_model(
    model: onnx.ModelProto, shapes: Mapping[str, tuple[int, ...]] | None = None,
    function_name: str = "main", constants: Mapping[str, np.ndarray] | None = None,
    owned: bool = False,
) -> ImportResult:
    """Translate `model` into a module holding one function of te ops.

    `shapes` fixes the dimensions of graph inputs; `constants` binds graph inputs
    to values, which turns them into initializers (e.g. the `shape` input of a
    Reshape that a test feeds at run time). The caller's `model` is left as it was
    unless `owned` (the importer may then change it: `import_onnx`'s own copy, which
    saves a copy of every weight).
    """
    load_external_data(model, None)  # a model in memory has no folder: no file is read for it
    opset = _checked_opset(model)
    check_attributes(model)  # before onnx.checker and shape inference read them
    if not owned:
        model = onnx.ModelProto.FromString(model.SerializeToString())  # never touch the caller's
    for name, value in (constants or {}).items():
        if not any(i.name == name for i in model.graph.input):
            raise OnnxImportError(f"--constant names '{name}', which is not a graph input")
        model.graph.initializer.append(numpy_helper.from_array(np.asarray(value), name))
    _fix_input_shapes(model, shapes or {})
    _check_single_assignment(model)
    _check_model(model, opset)
    initializers = _read_initializers(model)
    try:
        inferred = _infer_shapes(model)
    except Exception as error:  # onnx raises InferenceError / ValidationError subclasses
        raise _inference_error(model, opset, error) from None

    importer = Importer(inferred, opset)
    importer._weight_order = []
    graph = inferred.graph
    for info in (*graph.value_info, *graph.output, *graph.input):
        importer.value_info[info.name] = info.type
    input_names = _declare_inputs(importer, graph, initializers)
    _convert_nodes(importer, graph, opset)
    outputs, output_names = _return_outputs(importer, graph)
    function = _function(importer, function_name, input_names, outputs, output_names)
    module = ModuleOp([function])
    try:
        module.verify()
    except VerifyException as error:  # a converter bug: still a diagnostic, not a traceback
        raise OnnxImportError(f"internal error: the imported IR does not verify: {error}") from None
    return ImportResult(module, dict(importer.weights), input_names, output_names)


def _checked_opset(model: onnx.ModelProto) -> int:
    """The model's ONNX opset, when the importer supports it and every domain it uses."""
    opset = _opset_of(model)
    if opset < MIN_OPSET:
        raise OnnxImportError(
            f"the model uses opset {opset}; the importer supports opset {MIN_OPSET} and later "
            f"(convert it with onnx.version_converter)"
        )
    for entry in model.opset_import:
        if entry.domain not in ("", "ai.onnx", *onnx_ops.CUSTOM_DOMAINS):
            used = any(n.domain == entry.domain for n in model.graph.node)
            if used:
                node = next(n for n in model.graph.node if n.domain == entry.domain)
                raise OnnxImportError(
                    f"node '{node.name or node.output[0]}' ({entry.domain}.{node.op_type}, "
                    f"opset {opset}): operators of domain '{entry.domain}' are not supported"
                )
    return opset


def _read_initializers(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """The initializers' values by name; a large one's bytes leave the proto once read."""
    initializers = {}
    for tensor in model.graph.initializer:
        try:
            array = numpy_helper.to_array(tensor)
        except Exception as error:
            raise OnnxImportError(f"initializer '{tensor.name}' cannot be read: {error}") from None
        initializers[tensor.name] = array
        if array.nbytes > STRIPPED_BYTES:
            # read: the proto's copy goes (shape inference reads a weight's type and
            # dims, never its values), so the model's weights are held once, not thrice
            tensor.ClearField("raw_data")
    return initializers


def _declare_inputs(importer: Importer, graph, initializers: dict) -> list[str]:
    """The graph's tensor inputs as the function's arguments, and its initializers as
    constants; the inputs' names."""
    input_names = []
    for info in graph.input:
        if info.name in initializers:
            continue
        if not info.type.HasField("tensor_type"):
            kind = info.type.WhichOneof("value")
            raise OnnxImportError(f"input '{info.name}' is a {kind}; only tensor inputs are supported")
        tensor_type = info.type.tensor_type
        dtype = onnx_dtype(tensor_type.elem_type)
        shape = tuple(d.dim_value for d in tensor_type.shape.dim)
        arg = importer.block.insert_arg(TensorType(element_type(dtype), shape), len(importer.block.args))
        importer.values[info.name] = Tensor(arg, shape, dtype, info.name)
        input_names.append(info.name)
    for name, array in initializers.items():
        importer.values[name] = array
        importer.name_constant(array, name)
    importer.values[""] = None  # an omitted optional input
    return input_names


def _convert_nodes(importer: Importer, graph, opset: int) -> None:
    """Convert every node in order; a converter's error names the node."""
    for node in graph.node:
        importer.node = node
        label = f"node '{node.name or node.output[0]}' ({node.op_type}, opset {opset})"
        try:
            onnx_ops.convert_node(importer, node)
        except UnsupportedDtype as error:
            raise OnnxImportError(f"{label}: {error}") from None
        except NodeError as error:
            wrapped = OnnxImportError(f"{label}: {error}")
            wrapped.input_name = getattr(error, "input_name", None)
            raise wrapped from None
        except OnnxImportError as error:
            if str(error).startswith("node '"):
                raise
            raise OnnxImportError(f"{label}: {error}") from None
        except ExprError as error:
            raise OnnxImportError(f"{label}: internal error: {error.message}") from None
    importer.node = None


def _return_outputs(importer: Importer, graph) -> tuple[list[Tensor], list[str]]:
    """Return the graph's outputs (as op results, never arguments); them and their names."""
    outputs: list[Tensor] = []
    output_names = []
    for info in graph.output:
        value = importer.values.get(info.name)
        if value is None:
            raise OnnxImportError(f"graph output '{info.name}' is computed by no node")
        if isinstance(value, np.ndarray) or value.ssa in importer.block.args:
            value = importer.copy(value)  # results are op results, never arguments
        outputs.append(value)
        output_names.append(info.name)
    importer.block.add_op(ReturnOp(*[t.ssa for t in outputs]))
    return outputs, output_names


def _function(importer: Importer, function_name: str, input_names: list[str], outputs: list[Tensor],
              output_names: list[str]) -> FuncOp:
    """The function of the imported block, its arguments and results named (weights marked)."""
    arg_attrs = []
    weight_by_arg = {id(t.ssa): name for name, t in zip(importer._weight_order, importer.weight_args.values())}
    input_iter = iter(input_names)
    for arg in importer.block.args:
        name = weight_by_arg.get(id(arg))
        if name is not None:
            arg_attrs.append(DictionaryAttr({NAME_ATTR: StringAttr(name), WEIGHT_ATTR: UnitAttr()}))
        else:
            arg_attrs.append(DictionaryAttr({NAME_ATTR: StringAttr(next(input_iter))}))
    res_attrs = [DictionaryAttr({NAME_ATTR: StringAttr(n)}) for n in output_names]
    return FuncOp(
        function_name,
        ([a.type for a in importer.block.args], [t.ssa.type for t in outputs]),
        Region(importer.block),
        arg_attrs=ArrayAttr(arg_attrs),
        res_attrs=ArrayAttr(res_attrs),
    )


def import_onnx(
    path: str, shapes: Mapping[str, tuple[int, ...]] | None = None,
    constants: Mapping[str, np.ndarray] | None = None,
) -> ImportResult:
    """Load the ONNX file at `path` and import it (see `import_model`)."""
    return import_model(load_model(path), shapes, constants=constants, owned=True)
