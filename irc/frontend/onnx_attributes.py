"""ONNX attributes checked against their operators' schemas, once, for every converter.

`check_attributes` runs on the whole model before onnx.checker, shape inference and any
converter: each node's attributes against ``onnx.defs.get_schema(op_type, opset,
domain)`` (names it does not know, types other than the schema's, required ones
missing; irc's own ``irc.dlrm`` operators against `CUSTOM_SCHEMAS`), then the values
ONNX's text states but its schemas do not (`VALUE_RULES`: flags that are 0 or 1,
enumerated strings, counts and sizes, element types; floats finite, as an expression
needs). `check_axes` runs before each node is converted or folded, when its inputs'
ranks are known: axis attributes against the rank (`AXIS_RULES`). Either raises an
`OnnxImportError` naming the node, its op type and the attribute.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import onnx
from onnx import AttributeProto, helper

from irc.frontend.onnx_graph import NodeError, OnnxImportError

Kind = int
"""An `onnx.AttributeProto.AttributeType` (the schema's `OpSchema.AttrType` has the same numbers)."""

CUSTOM_SCHEMAS: dict[tuple[str, str], dict[str, tuple[Kind, bool]]] = {
    ("irc.dlrm", "EmbeddingBag"): {"mode": (AttributeProto.STRING, False)},
    ("irc.dlrm", "TableBatchedEmbedding"): {"mode": (AttributeProto.STRING, False),
                                            "rows": (AttributeProto.INTS, True)},
}
"""Attributes (kind, required) of the operators irc defines itself, which onnx.defs has not."""


def _one_of(*allowed) -> Callable[[list], str | None]:
    def check(values):
        bad = next((v for v in values if v not in allowed), None)
        if bad is None:
            return None
        return f"is {bad!r}; it must be {', '.join(map(repr, allowed[:-1]))} or {allowed[-1]!r}"
    return check


def _at_least(low: int) -> Callable[[list], str | None]:
    def check(values):
        bad = next((v for v in values if v < low), None)
        if bad is None:
            return None
        return f"holds {bad}; {'each value' if len(values) > 1 else 'it'} must be {low} or more"
    return check


def _element_type(values) -> str | None:
    bad = next((v for v in values if v not in onnx.TensorProto.DataType.values()), None)
    return None if bad is None else f"is {bad}, which is no ONNX element type"


_FLAG = _one_of(0, 1)

VALUE_RULES: dict[str, Callable[[list], str | None] | None] = {
    **dict.fromkeys(
        ("keepdims", "fmod", "transA", "transB", "select_last_index", "noop_with_empty_axes", "allowzero",
         "exclusive", "reverse", "upper", "largest", "sorted", "ceil_mode", "count_include_pad", "training_mode",
         "detect_positive", "detect_negative", "saturate", "storage_order"), _FLAG),
    "auto_pad": _one_of("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"),
    "Pad.mode": _one_of("constant", "reflect", "edge", "wrap"),
    "Gelu.approximate": _one_of("none", "tanh"),
    "EmbeddingBag.mode": _one_of("sum", "mean"),
    "TableBatchedEmbedding.mode": _one_of("sum", "mean"),
    **dict.fromkeys(("group", "kernel_shape", "strides", "dilations", "num_outputs", "rows"), _at_least(1)),
    **dict.fromkeys(("pads", "block_size"), _at_least(0)),
    **dict.fromkeys(("to", "stash_type", "output_dtype"), _element_type),
}
"""Allowed values that ONNX's operator text states and its schemas do not, by attribute
name or ``Op.name`` (which wins; None: no rule)."""

AXIS_ATTRIBUTES = ("axis", "axes", "perm")
"""Attributes that name dimensions. onnx's checker and shape inference read them as 32-bit
integers and crash the process on a value beyond (LayerNormalization's ``axis = 2**31``
with its Mean output is a segmentation fault), so their range is checked first."""

REDUCTIONS = ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
              "ReduceProd", "ReduceSum", "ReduceSumSquare")

AXIS_RULES: dict[str, str] = {
    **dict.fromkeys((f"{op}.axis" for op in ("ArgMax", "ArgMin", "Concat", "Gather", "GatherElements",
                                              "LayerNormalization", "Softmax", "LogSoftmax", "Split", "TopK")),
                    "below rank"),
    **dict.fromkeys((f"{op}.axes" for op in REDUCTIONS), "below rank"),
    "Flatten.axis": "up to rank",
    "Transpose.perm": "permutation",
}
"""Axis attributes against the rank ``r`` of the node's first input, by ``Op.name``:
``below rank`` is ``[-r, r-1]``, ``up to rank`` is ``[-r, r]`` (ONNX's stated ranges; a
scalar takes axis 0), ``permutation`` a permutation of the r axes."""


def _rule(table: dict, op_type: str, name: str):
    """The rule of ``Op.name``, else of ``name``."""
    key = f"{op_type}.{name}"
    return table[key] if key in table else table.get(name)


def _values(attribute: AttributeProto) -> list:
    value = helper.get_attribute_value(attribute)
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    elif isinstance(value, list | tuple):
        value = [v.decode(errors="replace") if isinstance(v, bytes) else v for v in value]
    return list(value) if isinstance(value, list) else [value]


def node_label(node: onnx.NodeProto, opset: int | None = None) -> str:
    name = node.name or (node.output[0] if node.output else "?")
    return f"node '{name}' ({node.op_type}{'' if opset is None else f', opset {opset}'})"


def _schema(node: onnx.NodeProto, opsets: dict[str, int]) -> tuple[dict[str, tuple[Kind, bool]] | None, int]:
    """The node's attributes by name, (kind, required), from its schema; None when it has none."""
    domain = "" if node.domain == "ai.onnx" else node.domain
    version = opsets.get(domain, 0)
    if (domain, node.op_type) in CUSTOM_SCHEMAS:
        return CUSTOM_SCHEMAS[domain, node.op_type], version
    try:
        schema = onnx.defs.get_schema(node.op_type, version, domain)
    except (onnx.defs.SchemaError, TypeError):  # TypeError: a version beyond 32 bits
        return None, version  # an operator (or opset) onnx does not know: onnx.checker or a converter says so
    return {name: (int(a.type.value), a.required) for name, a in schema.attributes.items()}, version


def _kind_name(kind: int) -> str:
    return AttributeProto.AttributeType.Name(kind) if kind in AttributeProto.AttributeType.values() else str(kind)


def _check_node(node: onnx.NodeProto, opsets: dict[str, int], in_function: bool) -> None:
    attributes, version = _schema(node, opsets)
    where = node_label(node, version if node.domain in ("", "ai.onnx") else None)
    for attribute in node.attribute:
        if attribute.ref_attr_name:
            if not in_function:
                raise OnnxImportError(f"{where}: attribute '{attribute.name}' refers to a function's attribute "
                                      f"('{attribute.ref_attr_name}') outside any function")
            continue
        if attributes is not None and attribute.name not in attributes:
            known = ", ".join(sorted(attributes)) or "none"
            raise OnnxImportError(f"{where}: attribute '{attribute.name}' is not one of {node.op_type}'s "
                                  f"(it takes: {known})")
        if attributes is not None and attribute.type != attributes[attribute.name][0]:
            raise OnnxImportError(
                f"{where}: attribute '{attribute.name}' is of type {_kind_name(attribute.type)}, but "
                f"{node.op_type} takes type {_kind_name(attributes[attribute.name][0])} for it"
            )
        problem = _value_problem(node, attribute)
        if problem:
            raise OnnxImportError(f"{where}: attribute '{attribute.name}' {problem}")
    given = {a.name for a in node.attribute}
    for name, (_, required) in sorted((attributes or {}).items()):
        if required and name not in given:
            raise OnnxImportError(f"{where}: attribute '{name}' is required but missing")


def _value_problem(node: onnx.NodeProto, attribute: AttributeProto) -> str | None:
    """What is wrong with the attribute's value, or None."""
    if attribute.type in (AttributeProto.FLOAT, AttributeProto.FLOATS):
        values = [attribute.f] if attribute.type == AttributeProto.FLOAT else list(attribute.floats)
        if any(math.isnan(v) for v in values):
            return "is NaN"
        if any(math.isinf(v) for v in values):  # no expression can state an inf literal
            return "is inf; irc takes finite attributes"
        return None
    if attribute.type not in (AttributeProto.INT, AttributeProto.INTS, AttributeProto.STRING,
                              AttributeProto.STRINGS):
        return None
    values = _values(attribute)
    if attribute.name in AXIS_ATTRIBUTES and attribute.type in (AttributeProto.INT, AttributeProto.INTS):
        bad = next((v for v in values if not -(2**31) < v < 2**31), None)
        if bad is not None:
            return f"holds {bad}, which is no dimension of any tensor"
    rule = _rule(VALUE_RULES, node.op_type, attribute.name)
    return rule(values) if rule is not None else None


def _graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """`graph` and every graph nested in its nodes' attributes (If/Loop/Scan bodies)."""
    yield graph
    for node in graph.node:
        for attribute in node.attribute:
            for nested in [attribute.g] if attribute.type == AttributeProto.GRAPH else attribute.graphs:
                yield from _graphs(nested)


def check_attributes(model: onnx.ModelProto) -> None:
    """Every node's attributes (the graph's, its nested graphs', the model's functions')
    against the schema of its operator and `VALUE_RULES` (see the module docstring)."""
    opsets = {("" if e.domain == "ai.onnx" else e.domain): e.version for e in model.opset_import}
    for graph in _graphs(model.graph):
        for node in graph.node:
            _check_node(node, opsets, in_function=False)
    for function in model.functions:
        local = {("" if e.domain == "ai.onnx" else e.domain): e.version for e in function.opset_import}
        for node in function.node:
            _check_node(node, {**opsets, **local}, in_function=True)


def check_axes(node: onnx.NodeProto, ranks: list[int | None]) -> None:
    """The node's axis attributes against the rank of its first input (`AXIS_RULES`); a
    `NodeError` (the importer names the node)."""
    rank = ranks[0] if ranks else None
    if rank is None:
        return
    for attribute in node.attribute:
        rule = AXIS_RULES.get(f"{node.op_type}.{attribute.name}")
        if rule is None or attribute.type not in (AttributeProto.INT, AttributeProto.INTS):
            continue
        values = _values(attribute)
        if rule == "permutation":
            if sorted(values) != list(range(rank)):
                raise NodeError(f"attribute '{attribute.name}' {values} is not a permutation of the {rank} axes "
                                f"of the input")
            continue
        low, high = -rank, (rank if rule == "up to rank" else max(rank - 1, 0))
        bad = next((v for v in values if not low <= v <= high), None)
        if bad is not None:
            raise NodeError(f"attribute '{attribute.name}' is {bad}, out of range for an input of rank {rank} "
                            f"([{low}, {high}])")
