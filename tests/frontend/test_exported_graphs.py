"""Graphs as exporters write them (issue 11): constant chains that onnx.reference's own
kernels cannot fold, checked against onnx.reference on the same inputs."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from irc.frontend import import_model
from irc.runner import find_function, run_function


def test_gather_elements_over_more_than_64_folds():
    """data [1,128], indices [1,32], axis=1: onnx.reference's GatherElements (np.choose)
    cannot take more than 64 choices; the importer folds it with numpy."""
    data = numpy_helper.from_array(np.arange(128, dtype=np.int64).reshape(1, 128) * 2, "data")
    indices = numpy_helper.from_array((np.arange(32, dtype=np.int64) * 5 % 128).reshape(1, 32), "indices")
    nodes = [
        helper.make_node("GatherElements", ["data", "indices"], ["picked"], axis=1, name="/m/embeddings/GatherElements"),
        helper.make_node("Cast", ["picked"], ["as_float"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["x", "as_float"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "positions", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32])], [data, indices])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    imported = import_model(model)
    x = np.random.default_rng(0).standard_normal((1, 32)).astype(np.float32)
    got = run_function(imported.module, {"x": x, **imported.weights})["y"]
    want = x + (np.arange(32) * 5 % 128 * 2).astype(np.float32)[None]
    np.testing.assert_allclose(got, want)
    assert "GatherElements" not in str(imported.module)  # folded at import time


def test_torchscript_shaped_attention_runs_wholly_on_chip():
    """The constructs PyTorch's TorchScript exporter writes around attention: CumSum
    position ids from the mask, an Identity on a shared initializer, a Range/Unsqueeze/
    LessOrEqual causal mask with Where, Softmax guarded by IsNaN/Where: imported, planned
    with every op on chip, and equal to onnx.reference at te and device level."""
    from onnx.reference import ReferenceEvaluator

    from irc.compile import compile_module
    from irc.runner import run

    S, H = 8, 16
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((H, H)).astype(np.float32), "w")
    nodes = [
        # position ids as TorchScript writes them: cumsum(mask) * mask - 1
        helper.make_node("CumSum", ["mask", "axis1"], ["cs"]),
        helper.make_node("Mul", ["cs", "mask"], ["csm"]),
        helper.make_node("Sub", ["csm", "one_i"], ["pos"]),
        helper.make_node("Cast", ["pos"], ["posf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["posf", "axes2"], ["posu"]),
        helper.make_node("Add", ["x", "posu"], ["xp"]),
        # scores with a causal mask: LessOrEqual(cols, rows) -> Where
        helper.make_node("Identity", ["w"], ["w_alias"]),
        helper.make_node("MatMul", ["xp", "w_alias"], ["q"]),
        helper.make_node("Transpose", ["q"], ["qt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "qt"], ["scores"]),
        helper.make_node("Range", ["zero_i", "seq", "one_i"], ["r"]),
        helper.make_node("Unsqueeze", ["r", "axes1"], ["rows"]),
        helper.make_node("Unsqueeze", ["r", "axes0"], ["cols"]),
        helper.make_node("LessOrEqual", ["cols", "rows"], ["causal"]),
        helper.make_node("Where", ["causal", "scores", "neg"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["p"], axis=-1),
        helper.make_node("IsNaN", ["p"], ["nan"]),
        helper.make_node("Where", ["nan", "zero_f", "p"], ["p2"]),
        helper.make_node("MatMul", ["p2", "xp"], ["y"]),
    ]
    inits = [w, numpy_helper.from_array(np.array(1, np.int64), "axis1"), numpy_helper.from_array(np.array(1, np.int64), "one_i"),
             numpy_helper.from_array(np.array(0, np.int64), "zero_i"), numpy_helper.from_array(np.array(S, np.int64), "seq"),
             numpy_helper.from_array(np.array([2], np.int64), "axes2"), numpy_helper.from_array(np.array([1], np.int64), "axes1"),
             numpy_helper.from_array(np.array([0], np.int64), "axes0"), numpy_helper.from_array(np.array(-1e9, np.float32), "neg"),
             numpy_helper.from_array(np.array(0.0, np.float32), "zero_f")]
    g = helper.make_graph(nodes, "ts", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, S, H]),
                                        helper.make_tensor_value_info("mask", TensorProto.INT64, [1, S])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, S, H])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    feeds = {"x": rng.standard_normal((1, S, H)).astype(np.float32), "mask": np.array([[1]*6+[0]*2], np.int64)}

    want = ReferenceEvaluator(m).run(None, feeds)[0]
    assert np.isfinite(want).all()  # NaN == NaN must not pass
    imported = import_model(m)
    np.testing.assert_allclose(run_function(imported.module, {**feeds, **imported.weights})["y"], want, rtol=1e-5)
    compiled, _ = compile_module(imported.module.clone(), "tiny16")
    assert "te.op" not in str(compiled)
    results, _ = run(compiled, {**feeds, **imported.weights})
    np.testing.assert_allclose(results["y"], want, rtol=1e-5, atol=1e-5)


# -- the five families' exporter patterns, built in code, at te and device level ---------

def _const(name, value, dtype=np.int64):
    return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)


def _model(nodes, inputs, outputs, initializers):
    graph = helper.make_graph(nodes, "exported", [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _reference(model):
    """onnx's reference evaluator, with GatherElements by numpy (its own kernel takes at
    most 64 choices, np.choose's limit)."""
    from onnx.reference import ReferenceEvaluator
    from onnx.reference.op_run import OpRun

    class GatherElements(OpRun):
        def _run(self, data, indices, axis=None):
            return (np.take_along_axis(data, np.where(indices < 0, indices + data.shape[axis], indices), axis=axis),)

    return ReferenceEvaluator(model, new_ops=[GatherElements])


def _same_at_te_and_device(model, feeds, tolerance=1e-5):
    """The imported graph at te level and compiled for tiny16 (every op on chip, host I/O
    only at the edges) both equal onnx.reference."""
    from xdsl.dialects.func import ReturnOp
    from xdsl.ir import BlockArgument

    from irc.compile import compile_module
    from irc.dialects.device import LoadOp, StoreOp
    from irc.runner import run

    want = _reference(model).run(None, feeds)
    assert all(np.isfinite(value).all() for value in want)  # NaN == NaN must not pass
    imported = import_model(model)
    at_te = run_function(imported.module, {**feeds, **imported.weights})
    compiled, _ = compile_module(imported.module.clone(), "tiny16")
    assert "te.op" not in str(compiled) and "te.opaque" not in str(compiled)
    assert all(isinstance(op.source, BlockArgument) for op in compiled.walk() if isinstance(op, LoadOp))
    assert all(isinstance(u.operation, ReturnOp) for op in compiled.walk() if isinstance(op, StoreOp)
               for u in op.result.uses)
    on_chip, _ = run(compiled, {**feeds, **imported.weights})
    for name, value in zip((o.name for o in model.graph.output), want):
        np.testing.assert_allclose(at_te[name], value, rtol=tolerance, atol=tolerance)
        np.testing.assert_allclose(on_chip[name], value, rtol=tolerance, atol=tolerance)
    return imported, compiled


def test_bert_embeddings_as_torchscript_writes_them():
    """BERT's embeddings (transformers >= 4.3x): the token type ids are a (1, 512) buffer
    expanded to the batch through the unfolded constant chain the exporter writes for
    ``expand(B, -1)`` (ConstantOfShape -> Mul -> Equal -> Where -> Expand) and picked by
    ``torch.gather`` (GatherElements over 512 > 64 choices) at the position ids, a slice of
    another buffer; three embedding Gathers and a LayerNorm follow."""
    S, H, V = 8, 16, 30
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Slice", ["position_buffer", "zero1", "seq1", "one_axis"], ["position_ids"]),
        helper.make_node("Shape", ["position_ids"], ["pshape"]),
        helper.make_node("Slice", ["pshape", "zero1", "one1"], ["batch"]),
        helper.make_node("Concat", ["batch", "minus1"], ["size"], axis=0),
        helper.make_node("Shape", ["size"], ["size_shape"]),
        helper.make_node("ConstantOfShape", ["size_shape"], ["ones"], value=_const("v", [1])),
        helper.make_node("Mul", ["ones", "minus1_scalar"], ["neg"]),
        helper.make_node("Equal", ["size", "neg"], ["is_neg"]),
        helper.make_node("Where", ["is_neg", "ones", "size"], ["target"]),
        helper.make_node("Expand", ["type_buffer", "target"], ["buffered"]),
        helper.make_node("GatherElements", ["buffered", "position_ids"], ["token_type_ids"], axis=1),
        helper.make_node("Gather", ["word", "input_ids"], ["w"], axis=0),
        helper.make_node("Gather", ["types", "token_type_ids"], ["t"], axis=0),
        helper.make_node("Gather", ["positions", "position_ids"], ["p"], axis=0),
        helper.make_node("Add", ["w", "t"], ["wt"]),
        helper.make_node("Add", ["wt", "p"], ["e"]),
        helper.make_node("LayerNormalization", ["e", "gamma", "beta"], ["y"], axis=-1, epsilon=1e-12),
    ]
    inits = [
        _const("position_buffer", np.arange(512)[None]), _const("type_buffer", np.zeros((1, 512))),
        _const("zero1", [0]), _const("one1", [1]), _const("seq1", [S]), _const("one_axis", [1]),
        _const("minus1", [-1]), _const("minus1_scalar", -1),
        numpy_helper.from_array(rng.standard_normal((V, H)).astype(np.float32), "word"),
        numpy_helper.from_array(rng.standard_normal((2, H)).astype(np.float32), "types"),
        numpy_helper.from_array(rng.standard_normal((512, H)).astype(np.float32), "positions"),
        numpy_helper.from_array(1 + 0.1 * rng.standard_normal(H).astype(np.float32), "gamma"),
        numpy_helper.from_array(0.1 * rng.standard_normal(H).astype(np.float32), "beta"),
    ]
    model = _model(nodes, [("input_ids", TensorProto.INT64, [1, S])], [("y", TensorProto.FLOAT, [1, S, H])], inits)
    imported, compiled = _same_at_te_and_device(model, {"input_ids": (np.arange(S) * 7 % V)[None].astype(np.int64)})
    # the buffers' chain folds at import; the token and position lookups at constant ids
    # fold too, the word lookup runs as a gather on chip
    assert "GatherElements" not in str(imported.module) and "ConstantOfShape" not in str(imported.module)
    assert str(compiled).count("device.gather ") == 1


def test_identity_chains_on_a_deduplicated_initializer():
    """The exporter keeps one copy of a tensor two modules share (a tied LM head, a
    shared projection) and reaches it again through a chain of Identity nodes: one
    weight, read by a gather and by a matmul: it rests once, in the gather's idle layout,
    and the matmul receives its partition from there (issue 23)."""
    S, H = 8, 16
    rng = np.random.default_rng(1)
    nodes = [
        helper.make_node("Gather", ["w", "input_ids"], ["x"], axis=0),
        helper.make_node("Relu", ["x"], ["h"]),
        helper.make_node("Identity", ["w"], ["w_1"]),
        helper.make_node("Identity", ["w_1"], ["shared"]),
        helper.make_node("MatMul", ["h", "shared"], ["y"]),
    ]
    inits = [numpy_helper.from_array(rng.standard_normal((H, H)).astype(np.float32), "w")]
    model = _model(nodes, [("input_ids", TensorProto.INT64, [1, S])], [("y", TensorProto.FLOAT, [1, S, H])], inits)
    imported, compiled = _same_at_te_and_device(model, {"input_ids": (np.arange(S) * 5 % H)[None].astype(np.int64)},
                                                1e-4)
    (function,) = [op for op in imported.module.walk() if op.name == "func.func"]
    assert [a.data["irc.name"].data for a in function.arg_attrs.data if "irc.weight" in a.data] == ["w"]
    (weight,) = [a for a in find_function(compiled, None).function.args
                 if "irc.weight" in find_function(compiled, None).function.arg_attrs.data[a.index].data]
    assert sum(1 for u in weight.uses if u.operation.name == "device.load") == 1   # one copy for both readers


def test_shape_slice_concat_reshape_targets():
    """ViT/OPT-style head split and merge whose target shapes the exporter computes at run
    time: Shape -> Slice -> Concat, then Reshape and Transpose (layout changes on chip)."""
    B, S, H, heads = 2, 4, 8, 2
    rng = np.random.default_rng(2)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["q"]),
        helper.make_node("Shape", ["q"], ["shape"]),
        helper.make_node("Slice", ["shape", "zero1", "two1"], ["lead"]),
        helper.make_node("Concat", ["lead", "heads_d"], ["split_to"], axis=0),
        helper.make_node("Reshape", ["q", "split_to"], ["split"]),
        helper.make_node("Transpose", ["split"], ["heads"], perm=[0, 2, 1, 3]),
        helper.make_node("Relu", ["heads"], ["r"]),
        helper.make_node("Transpose", ["r"], ["back"], perm=[0, 2, 1, 3]),
        helper.make_node("Concat", ["lead", "minus1"], ["merge_to"], axis=0),
        helper.make_node("Reshape", ["back", "merge_to"], ["merged"]),
        helper.make_node("MatMul", ["merged", "w"], ["y"]),
    ]
    inits = [numpy_helper.from_array(rng.standard_normal((H, H)).astype(np.float32), "w"), _const("zero1", [0]),
             _const("two1", [2]), _const("heads_d", [heads, H // heads]), _const("minus1", [-1])]
    model = _model(nodes, [("x", TensorProto.FLOAT, [B, S, H])], [("y", TensorProto.FLOAT, [B, S, H])], inits)
    _same_at_te_and_device(model, {"x": rng.standard_normal((B, S, H)).astype(np.float32)}, 1e-4)


def test_conv_with_batchnorm_folded_in():
    """ResNet as exported with constant folding: BatchNormalization folded into the
    convolution's weight and bias (a Conv with three inputs), then ReLU and the residual."""
    rng = np.random.default_rng(3)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Add", ["r", "x"], ["y"]),
    ]
    inits = [numpy_helper.from_array(0.3 * rng.standard_normal((4, 4, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(0.1 * rng.standard_normal(4).astype(np.float32), "b")]
    model = _model(nodes, [("x", TensorProto.FLOAT, [1, 4, 6, 6])], [("y", TensorProto.FLOAT, [1, 4, 6, 6])], inits)
    _same_at_te_and_device(model, {"x": rng.standard_normal((1, 4, 6, 6)).astype(np.float32)}, 1e-4)
