"""External references of an ONNX model (issue 27, item 2): read from the model's folder
and nowhere else, through one loader (`irc.frontend.onnx_external`) for every place a
`TensorProto` can be. Each refusal is checked through the function and through
``irc-translate --import-onnx`` as a user runs it: exit 1, one error naming the node and
the tensor, no file written and the secret's bytes nowhere in what the tool printed."""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from irc.frontend import OnnxImportError, import_model, import_onnx
from tests.fuzzing import run_tool

SECRET = b"TOPSECRET-abcdef"
"""16 bytes: 16 UINT8 values, or 2 INT64 indices."""


def external(name: str, location: str, dims=(16,), data_type=TensorProto.UINT8, **entries) -> TensorProto:
    """A tensor whose data is `location` (offset/length entries as given)."""
    tensor = TensorProto(name=name, data_type=data_type, dims=list(dims))
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in {"location": location, **entries}.items():
        entry = tensor.external_data.add()
        entry.key, entry.value = key, str(value)
    return tensor


def _model(nodes, initializers=(), sparse=(), functions=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              list(initializers), sparse_initializer=list(sparse))
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid("local", 1)] if functions else [])
    return helper.make_model(graph, opset_imports=opsets, functions=list(functions))


def _cast(source="c"):
    return helper.make_node("Cast", [source], ["y"], to=TensorProto.FLOAT, name="cast")


def _indices():
    return numpy_helper.from_array(np.arange(16, dtype=np.int64), "i")


def _in_branch(tensor):
    def branch(value, name):
        return helper.make_graph([helper.make_node("Constant", [], ["b"], value=value, name=name)], name, [],
                                 [helper.make_tensor_value_info("b", TensorProto.UINT8, None)])

    cond = numpy_helper.from_array(np.array(True), "cond")
    inline = numpy_helper.from_array(np.zeros(16, np.uint8), "z")
    return _model([helper.make_node("If", ["cond"], ["c"], then_branch=branch(tensor, "k"),
                                    else_branch=branch(inline, "z"), name="if"), _cast()], [cond])


def _in_function(tensor):
    constant = helper.make_node("Constant", [], ["b"], value=tensor, name="k")
    body = helper.make_function("local", "F", [], ["b"], [constant], [helper.make_opsetid("", 17)])
    return _model([helper.make_node("F", [], ["c"], domain="local", name="call"), _cast()], functions=[body])


PLACES = {
    "initializer": (lambda t: _model([_cast()], [t]), "initializer 'c'"),
    "constant value": (lambda t: _model([helper.make_node("Constant", [], ["c"], value=t, name="k"), _cast()]),
                       "node 'k' (Constant), attribute 'value', tensor 'c'"),
    "constant sparse_value": (
        lambda t: _model([helper.make_node("Constant", [], ["c"], name="k",
                                           sparse_value=helper.make_sparse_tensor(t, _indices(), [16])), _cast()]),
        "node 'k' (Constant), attribute 'sparse_value', its values"),
    "sparse indices": (
        lambda t: _model([helper.make_node("Constant", [], ["c"], name="k", sparse_value=helper.make_sparse_tensor(
            numpy_helper.from_array(np.ones(2, np.uint8), "v"), external("i", t.external_data[0].value, (2,),
                                                                          TensorProto.INT64), [16])), _cast()]),
        "node 'k' (Constant), attribute 'sparse_value', its indices"),
    "constant of shape": (
        lambda t: _model([helper.make_node("ConstantOfShape", ["s"], ["c"], name="fill", value=t), _cast()],
                         [numpy_helper.from_array(np.array([4], np.int64), "s")]),
        "node 'fill' (ConstantOfShape), attribute 'value', tensor 'c'"),
    "nested graph": (_in_branch, "node 'if' (If), attribute 'then_branch', node 'k' (Constant), attribute 'value'"),
    "sparse initializer": (
        lambda t: _model([_cast()], sparse=[helper.make_sparse_tensor(t, _indices(), [16])]),
        "sparse initializer 'c', its values"),
    "function": (_in_function, "function 'F', node 'k' (Constant), attribute 'value', tensor 'c'"),
}

ESCAPES = {
    "working directory": ("secret.txt", "not in the model's folder"),
    "dot-dot": ("../secret.txt", "goes through '..'"),
    "absolute": (None, "is an absolute path"),
    "symlink": ("link.bin", "outside the model's folder"),
}


@pytest.fixture
def folders(tmp_path):
    """``tmp/secret.txt`` beside ``tmp/model/`` (the model's folder), which holds a
    link to the secret and a legitimate ``data.bin``."""
    (tmp_path / "secret.txt").write_bytes(SECRET)
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "link.bin").symlink_to("../secret.txt")
    (model_dir / "data.bin").write_bytes(bytes(range(16)))
    return tmp_path, model_dir


def _save(model, model_dir) -> str:
    path = os.path.join(model_dir, "m.onnx")
    with open(path, "wb") as stream:
        stream.write(model.SerializeToString())
    return path


def _refused_everywhere(tmp_path, path, *expected: str) -> None:
    """The function and the CLI (run from the secret's folder) refuse the model at
    `path`, naming what `expected` says, writing nothing, printing no secret."""
    with pytest.raises(OnnxImportError) as raised:
        import_onnx(path)
    message = str(raised.value)
    assert all(text in message for text in expected), message
    assert SECRET.decode() not in message
    before = sorted(p for p in tmp_path.rglob("*"))
    outcome = run_tool("irc-translate", "--import-onnx", path, "-o", "out.mlir", cwd=tmp_path)
    assert outcome.status == 1 and outcome.kind == "diagnostic", outcome.stderr
    errors = [line for line in outcome.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and all(text in errors[0] for text in expected), outcome.stderr
    assert SECRET.decode() not in outcome.stdout + outcome.stderr
    assert sorted(p for p in tmp_path.rglob("*")) == before  # no out.mlir, no out.weights.npz


@pytest.mark.parametrize("escape", ESCAPES)
@pytest.mark.parametrize("place", PLACES)
def test_a_reference_outside_the_folder_is_refused(folders, place, escape):
    tmp_path, model_dir = folders
    build, where = PLACES[place]
    location, reason = ESCAPES[escape]
    location = location or str(tmp_path / "secret.txt")
    _refused_everywhere(tmp_path, _save(build(external("c", location)), model_dir), where, reason)


SIZES = {
    "offset beyond the file": ({"offset": 17}, (16,), "is beyond the end of 'data.bin'"),
    "length beyond the file": ({"offset": 8, "length": 16}, (16,), "reaches past the end of 'data.bin'"),
    "length not the tensor's": ({"length": 4}, (16,), "its external data length is 4 bytes"),
    "rest of the file not the tensor's": ({"offset": 4}, (8,), "give its length"),
    "a tensor beyond the limit": ({"length": 2**40}, (2**40,), "irc reads for one tensor"),
    "a huge shape": ({}, (2**62, 2**62), "more bytes than any file holds"),
    "a negative offset": ({"offset": -1}, (16,), "is not a byte count"),
}


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("place", ["initializer", "constant value"])
def test_an_offset_or_length_that_does_not_fit_is_refused_before_reading(folders, place, size):
    tmp_path, model_dir = folders
    entries, dims, reason = SIZES[size]
    build, where = PLACES[place]
    _refused_everywhere(tmp_path, _save(build(external("c", "data.bin", dims, **entries)), model_dir), where, reason)


def test_a_fifo_in_the_folder_is_refused_without_blocking(folders):
    tmp_path, model_dir = folders
    os.mkfifo(model_dir / "pipe")
    build, where = PLACES["constant value"]
    _refused_everywhere(tmp_path, _save(build(external("c", "pipe")), model_dir), where, "is not a regular file")


@pytest.mark.parametrize("place", ["initializer", "constant value", "constant sparse_value", "nested graph"])
def test_data_inside_the_folder_is_read(folders, place):
    """A reference inside the folder (through a link that stays inside, too) is read and
    its values reach the imported model: the If's branch is read before the If itself
    is refused as control flow."""
    tmp_path, model_dir = folders
    (model_dir / "sub").mkdir()
    (model_dir / "sub" / "inner.bin").symlink_to("../data.bin")
    build, where = PLACES[place]
    path = _save(build(external("c", "sub/inner.bin", offset=0, length=16)), model_dir)
    if place == "nested graph":
        with pytest.raises(OnnxImportError, match="control flow is not supported"):
            import_onnx(path)
        return
    weights = import_onnx(path).weights
    assert [w.tolist() for w in weights.values()] == [list(map(float, range(16)))]


def test_a_model_in_memory_has_no_folder_to_read_from(folders):
    model = PLACES["constant value"][0](external("c", "data.bin"))
    with pytest.raises(OnnxImportError, match="a model given in memory has no folder"):
        import_model(model)


def test_irc_plan_reads_a_model_through_the_same_loader(folders):
    """`irc-plan --model m.onnx` loads the model as irc-translate does."""
    tmp_path, model_dir = folders
    build, where = PLACES["constant value"]
    path = _save(build(external("c", "secret.txt")), model_dir)
    outcome = run_tool("irc-plan", "--model", path, "--device", "tiny16", cwd=tmp_path)
    assert outcome.kind == "diagnostic" and where in outcome.stderr and "not in the model's folder" in outcome.stderr
    assert SECRET.decode() not in outcome.stdout + outcome.stderr
