"""Fuzz generators of issue 27 (item 11) for `irc-translate`, registered by
`tests.fuzzing.cases_for`: ONNX models whose tensors refer to external files, from every
place a `TensorProto` can be (initializers, sparse initializers' values and indices,
Constant ``value``/``sparse_value``, ConstantOfShape, a tensors attribute, If/Loop/Scan
bodies, model-local functions, training info), and nodes whose attributes ONNX does not
allow (a wrong type, an unknown name, a required one missing, a flag other than 0/1, an
enumerated string or count out of its set, an axis beyond any rank). A reference that
leaves the model's folder (the working directory's file, ``..``, an absolute path, a
symbolic link out) or whose offset, length or size does not fit, and every bad
attribute, must be refused: such a case is ``must_fail``, so an exit 0 is a wrong
success. A reference inside the folder may import.

The expectations here are ONNX's own words (its operators' text, ExternalData.md), not
the importer's tables, so the fuzzer checks the importer against the spec.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, helper, numpy_helper

from tests.fuzzing import Case, onnx_schema_model

SECRET = b"IRC-FUZZ-SECRET-0123456789abcdef"
"""32 bytes beside the model's folder, in the working directory."""
DATA = bytes(range(64))
"""A legitimate data file in the model's folder."""
MODEL = "model/m.onnx"

ESCAPES = {
    "cwd": ("secret.txt", {}),
    "dotdot": ("../secret.txt", {}),
    "dotdot-inner": ("sub/../../secret.txt", {}),
    "dot-dotdot": ("./../secret.txt", {}),
    "absolute": ("/proc/self/cwd/secret.txt", {}),
    "absolute-etc": ("/etc/hostname", {}),
    "double-slash": ("//proc/self/cwd/secret.txt", {}),
    "symlink": ("link.bin", {"model/link.bin": "../secret.txt"}),
    "dir-symlink": ("up/secret.txt", {"model/up": ".."}),
    "absolute-symlink": ("abs.bin", {"model/abs.bin": "/proc/self/cwd/secret.txt"}),
    "chained-symlink": ("a.bin", {"model/a.bin": "b.bin", "model/b.bin": "../secret.txt"}),
}
"""Locations outside the model's folder that resolve to the secret (or another file)."""

SIZES = ["offset-beyond", "length-beyond", "length-mismatch", "rest-mismatch", "huge-dims", "bad-number",
         "unknown-key", "duplicate-key", "empty-location", "not-external", "missing-file", "string-type"]
"""References inside the folder whose entries, offset, length or size must be refused."""


def _tensor(name: str, location: str, count: int, rng: random.Random, **entries) -> TensorProto:
    """An external tensor of `count` bytes (uint8, or float32/int64 when it divides)."""
    choices = [(TensorProto.UINT8, 1)] + [(t, w) for t, w in ((TensorProto.FLOAT, 4), (TensorProto.INT64, 8))
                                          if count % w == 0]
    data_type, width = rng.choice(choices)
    tensor = TensorProto(name=name, data_type=data_type, dims=[count // width])
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in {"location": location, **entries}.items():
        entry = tensor.external_data.add()
        entry.key, entry.value = key, str(value)
    return tensor


def _graph(nodes, initializers=(), sparse=(), name="g", output="y"):
    return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(output, TensorProto.UNDEFINED, None)],
                             list(initializers), sparse_initializer=list(sparse))


def _sparse(values: TensorProto, indices: TensorProto | None = None):
    count = min(int(np.prod(values.dims)), 16)  # a huge tensor's indices stay small
    if indices is None:
        indices = numpy_helper.from_array(np.arange(count, dtype=np.int64), "i")
    return helper.make_sparse_tensor(values, indices, [max(count, int(np.prod(indices.dims)))])


def _constant(tensor, output="y", name="k"):
    return helper.make_node("Constant", [], [output], value=tensor, name=name)


def _body(tensor, loop: bool):
    """A Loop body (iteration, condition -> condition, value) or a Scan body holding a
    Constant of `tensor`."""
    if loop:
        inputs = [helper.make_tensor_value_info("it", TensorProto.INT64, []),
                  helper.make_tensor_value_info("cin", TensorProto.BOOL, [])]
        nodes = [helper.make_node("Identity", ["cin"], ["cout"], name="pass"), _constant(tensor, "v")]
        outputs = ["cout", "v"]
    else:
        inputs = [helper.make_tensor_value_info("s", TensorProto.FLOAT, [1])]
        nodes = [helper.make_node("Identity", ["s"], ["s2"], name="pass"), _constant(tensor, "v")]
        outputs = ["s2", "v"]
    return helper.make_graph(nodes, "body", inputs, [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None)
                                                     for o in outputs])


def _model_with(place: str, tensor: TensorProto) -> onnx.ModelProto:
    """A model holding `tensor` at `place` (its other parts inline and plausible)."""
    functions, training = [], []
    opset = 17
    if place == "initializer":
        graph = _graph([helper.make_node("Identity", [tensor.name], ["y"], name="id")], [tensor])
    elif place == "sparse-initializer-values":
        graph = _graph([helper.make_node("Identity", [tensor.name], ["y"], name="id")], sparse=[_sparse(tensor)])
    elif place == "sparse-initializer-indices":
        values = numpy_helper.from_array(np.ones(2, np.float32), "v")
        indices = TensorProto()
        indices.CopyFrom(tensor)
        indices.data_type, indices.name = TensorProto.INT64, "i"
        del indices.dims[:]
        indices.dims.append(2)
        graph = _graph([helper.make_node("Identity", ["v"], ["y"], name="id")], sparse=[_sparse(values, indices)])
    elif place == "constant-value":
        graph = _graph([_constant(tensor)])
    elif place == "constant-sparse-value":
        graph = _graph([helper.make_node("Constant", [], ["y"], sparse_value=_sparse(tensor), name="k")])
    elif place == "constant-of-shape":
        shape = numpy_helper.from_array(np.array([3], np.int64), "shape")
        graph = _graph([helper.make_node("ConstantOfShape", ["shape"], ["y"], value=tensor, name="fill")], [shape])
    elif place == "tensors-attribute":
        node = helper.make_node("Identity", ["c"], ["y"], name="id")
        node.attribute.append(helper.make_attribute("extra", [tensor]))
        graph = _graph([node], [numpy_helper.from_array(np.ones(2, np.float32), "c")])
    elif place == "if-branch":
        branch = _graph([_constant(tensor, "b")], name="then", output="b")
        cond = numpy_helper.from_array(np.array(True), "cond")
        graph = _graph([helper.make_node("If", ["cond"], ["y"], then_branch=branch, else_branch=branch, name="if")],
                       [cond])
    elif place == "loop-body":
        trip = numpy_helper.from_array(np.array(2, np.int64), "trip")
        cond = numpy_helper.from_array(np.array(True), "cond")
        node = helper.make_node("Loop", ["trip", "cond", "cond"], ["last", "y"], body=_body(tensor, True), name="loop")
        graph = _graph([node], [trip, cond])
    elif place == "scan-body":
        init = numpy_helper.from_array(np.ones(1, np.float32), "init")
        node = helper.make_node("Scan", ["init"], ["last", "y"], body=_body(tensor, False), num_scan_inputs=0,
                                name="scan")
        graph = _graph([node], [init])
    elif place == "function":
        functions = [helper.make_function("local", "F", [], ["b"], [_constant(tensor, "b")],
                                          [helper.make_opsetid("", opset)])]
        graph = _graph([helper.make_node("F", [], ["y"], domain="local", name="call")])
    else:  # training info: an initialization graph's initializer
        graph = _graph([helper.make_node("Identity", ["c"], ["y"], name="id")],
                       [numpy_helper.from_array(np.ones(2, np.float32), "c")])
        info = onnx.TrainingInfoProto()
        info.initialization.CopyFrom(_graph([helper.make_node("Identity", [tensor.name], ["z"], name="init")],
                                            [tensor], name="init", output="z"))
        training = [info]
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid("local", 1)] if functions else [])
    model = helper.make_model(graph, opset_imports=opsets, functions=functions)
    model.training_info.extend(training)
    return model


PLACES = ["initializer", "sparse-initializer-values", "sparse-initializer-indices", "constant-value",
          "constant-sparse-value", "constant-of-shape", "tensors-attribute", "if-branch", "loop-body", "scan-body",
          "function", "training-info"]


def _reference(rng: random.Random, kind: str, place: str) -> tuple[TensorProto, dict[str, str], bool]:
    """An external tensor of the given kind of reference, the links it needs, and
    whether it must be refused."""
    if kind in ESCAPES:
        location, links = ESCAPES[kind]
        entries = rng.choice([{}, {"offset": 0}, {"length": len(SECRET)}, {"offset": 0, "length": len(SECRET)}])
        return _tensor("c", location, len(SECRET), rng, **entries), links, True
    if kind == "inside":
        offset = rng.choice([0, 8, 16])
        location, links = rng.choice([("data.bin", {}), ("./data.bin", {}), ("inner/data.bin", {"model/inner": "."}),
                                      ("in.bin", {"model/in.bin": "data.bin"})])
        count = 1 if place == "constant-of-shape" else 16  # its value is one element
        return _tensor("c", location, count, rng, offset=offset, length=count), links, False
    entries = {"offset-beyond": {"offset": len(DATA) + rng.choice([1, 1000, 2**40])},
               "length-beyond": {"offset": 56, "length": 16},
               "length-mismatch": {"length": rng.choice([15, 17, 0, 2**62])},
               "rest-mismatch": {"offset": rng.choice([0, 1, 40])},
               "bad-number": {rng.choice(["offset", "length"]): rng.choice(["-1", "0x10", "1e3", "", " 8", "8.0"])},
               "unknown-key": {"basedir": "/"},
               }.get(kind, {})
    tensor = _tensor("c", "" if kind == "empty-location" else "data.bin", 16, rng, **entries)
    if kind == "huge-dims":
        del tensor.dims[:]
        tensor.dims.extend(rng.choice([[2**40], [2**62, 2**62], [1 << 31, 1 << 31, 4]]))
    elif kind == "duplicate-key":
        extra = tensor.external_data.add()
        extra.key, extra.value = "location", "../secret.txt"
    elif kind == "not-external":
        tensor.data_location = TensorProto.DEFAULT
    elif kind == "missing-file":
        tensor.external_data[0].value = "nosuch.bin"
    elif kind == "string-type":
        tensor.data_type = TensorProto.STRING
    return tensor, {}, True


def external_ref_case(rng: random.Random) -> Case:
    """One model with an external reference at a random place (see the module docstring)."""
    place = rng.choice(PLACES)
    kind = rng.choice([*ESCAPES, *ESCAPES, *SIZES, "inside", "inside"])
    tensor, links, must_fail = _reference(rng, kind, place)
    model = _model_with(place, tensor)
    files = {MODEL: model.SerializeToString(), "secret.txt": SECRET, "model/data.bin": DATA}
    argv = ["--import-onnx", MODEL] + rng.choice([["-o", "out.mlir"], [], ["--weights", "w.npz"]])
    return Case("irc-translate", argv, files, f"onnx-ref-{place}-{kind}", must_fail=must_fail, links=links)


FLAGS = {"keepdims", "fmod", "transA", "transB", "select_last_index", "noop_with_empty_axes", "allowzero",
         "exclusive", "reverse", "upper", "largest", "sorted", "ceil_mode", "count_include_pad", "training_mode",
         "detect_positive", "detect_negative", "saturate", "storage_order"}
"""INT attributes ONNX's text says are 0 or 1."""
ENUMS = {"auto_pad", "mode", "approximate"}
"""STRING attributes of a fixed set (auto_pad's four, Pad's modes, Gelu's none/tanh)."""
AT_LEAST_ONE = {"group", "kernel_shape", "strides", "dilations", "num_outputs"}
AXIS_OPS = {"ArgMax", "ArgMin", "Concat", "Gather", "GatherElements", "LayerNormalization", "Softmax",
            "LogSoftmax", "Split", "TopK", "Flatten"}
WRONG_TYPE = {AttributeProto.INT: "x", AttributeProto.INTS: 1.5, AttributeProto.FLOAT: "x",
              AttributeProto.FLOATS: "x", AttributeProto.STRING: 3, AttributeProto.STRINGS: 3,
              AttributeProto.TENSOR: 3, AttributeProto.GRAPH: 3, AttributeProto.SPARSE_TENSOR: 3}


def _bad_attribute(rng: random.Random, node: onnx.NodeProto, opset: int) -> str:
    """Give `node` one attribute ONNX does not allow; returns what was done."""
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, node.domain)
        known = {name: int(a.type.value) for name, a in schema.attributes.items()}
        required = [name for name, a in schema.attributes.items() if a.required]
    except onnx.defs.SchemaError:
        known, required = {}, []
    options = [("unknown", None)] + [("type", n) for n in known]
    options += [("flag", n) for n in known if n in FLAGS] + [("enum", n) for n in known if n in ENUMS]
    options += [("count", n) for n in known if n in AT_LEAST_ONE] + [("required", n) for n in required]
    options += [("axis", "axis") for _ in range(2) if node.op_type in AXIS_OPS and "axis" in known]
    options += [("float", n) for n in known if known[n] == AttributeProto.FLOAT]
    kind, name = rng.choice(options)
    if kind == "unknown":
        name, value = rng.choice(["irc_fuzz", "axis_", "Keepdims"]), rng.choice([1, "x", 0.5])
    elif kind == "type":
        value = WRONG_TYPE.get(known[name], 3)
    elif kind == "flag":
        value = rng.choice([2, -1, 7, -7, 255, 2**31])
    elif kind == "enum":
        value = rng.choice(["bogus", "", "same_upper", "SAME", "NONE", "Constant"])
    elif kind == "count":
        value = rng.choice([0, -1, -5]) if known[name] == AttributeProto.INT else [rng.choice([0, -1])]
    elif kind == "axis":
        value = rng.choice([2**20, -(2**20), 2**31, -(2**40), 64])
    elif kind == "float":
        value = rng.choice([float("nan"), float("inf"), -float("inf")])
    else:  # required: removed below
        value = None
    kept = [a for a in node.attribute if a.name != name]
    del node.attribute[:]
    node.attribute.extend(kept)
    if value is not None:
        node.attribute.append(helper.make_attribute(name, value))
    return f"{kind}-{name}"


def bad_attribute_case(rng: random.Random) -> Case:
    """A model of the importer's operators (`onnx_schema_model`) with one of its nodes
    given an attribute ONNX does not allow: it must be refused."""
    model, _ = onnx_schema_model(rng)
    opset = next(e.version for e in model.opset_import if e.domain in ("", "ai.onnx"))
    node = rng.choice(list(model.graph.node))
    label = _bad_attribute(rng, node, opset)
    argv = ["--import-onnx", "m.onnx", "-o", "out.mlir"]
    return Case("irc-translate", argv, {"m.onnx": model.SerializeToString()}, f"onnx-attr-{node.op_type}-{label}",
                must_fail=True)


def onnx_ref_cases(rng: random.Random, count: int) -> Iterator[Case]:
    """`count` cases, half external references and half bad attributes, as drawn."""
    for index in range(count):
        yield external_ref_case(rng) if index % 2 == 0 else bad_attribute_case(rng)
