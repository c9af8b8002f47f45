"""Regenerate the .onnx inputs of the te FileCheck tests: ``python make_onnx_inputs.py``.

`masked_embedding.onnx`: the attention-mask logic transformer exports carry — an
embedding Gather, a mask turned additive (Cast, Sub, Mul), a dynamic Reshape whose
target comes from Shape/Gather/Concat (folded at import), Softmax and a weight
large enough to go to the side file.
"""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def masked_embedding() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    table = numpy_helper.from_array(rng.standard_normal((50, 8)).astype(np.float32), "embeddings.weight")
    c = lambda name, value, dtype=np.int64: helper.make_node(  # noqa: E731
        "Constant", [], [name], value=numpy_helper.from_array(np.asarray(value, dtype=dtype), name + ".value")
    )
    nodes = [
        helper.make_node("Gather", ["embeddings.weight", "input_ids"], ["embedded"], axis=0),
        helper.make_node("Shape", ["embedded"], ["shape"]),
        c("zero", 0), c("one", 1), c("heads", [2]), c("head_dim", [4]), c("axes0", [0]),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
        helper.make_node("Gather", ["shape", "one"], ["seq"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes0"], ["batch1"]),
        helper.make_node("Unsqueeze", ["seq", "axes0"], ["seq1"]),
        helper.make_node("Concat", ["batch1", "seq1", "heads", "head_dim"], ["split_shape"], axis=0),
        helper.make_node("Reshape", ["embedded", "split_shape"], ["split"]),
        c("fone", 1.0, np.float32), c("big", -10000.0, np.float32), c("mask_axes", [1, 2]),
        helper.make_node("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT),
        helper.make_node("Sub", ["fone", "maskf"], ["inverted"]),
        helper.make_node("Mul", ["inverted", "big"], ["additive"]),
        helper.make_node("Unsqueeze", ["additive", "mask_axes"], ["additive4"]),
        helper.make_node("Transpose", ["split"], ["heads_first"], perm=[0, 2, 3, 1]),
        helper.make_node("Add", ["heads_first", "additive4"], ["scores"]),
        helper.make_node("Softmax", ["scores"], ["probs"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "masked_embedding",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, None)],
        [table],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


if __name__ == "__main__":
    onnx.save(masked_embedding(), "masked_embedding.onnx")
