"""A small `onnx.helper` wrapper for building the benchmark models node by node."""

from __future__ import annotations

import re

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, UnitAttr
from xdsl.dialects.func import FuncOp

OPSET = 17
WEIGHT_DOC = "weight"
"""The doc string of a weight given as a graph input (``GraphBuilder.weights_as_inputs``)."""
LAYER = re.compile(r"^(\w+)\.\d+\.")
"""A layer's initializer name: ``<stem>.<layer index>.<rest>`` (``h.3.attn.c_attn.weight``)."""


class GraphBuilder:
    """Accumulates nodes, initializers and graph inputs/outputs; names are unique."""

    def __init__(self, name: str, seed: int = 0, opset: int = OPSET, dtype=np.float32,
                 weights_as_inputs: bool = False):
        self.name = name
        self.weights_as_inputs = weights_as_inputs
        """Random weights become graph inputs without data (``WEIGHT_DOC``): a full-size
        graph built in a moment, to compile (`mark_weight_inputs` marks them in te)."""
        # the element type of activations and float weights (float16: what T10 runs)
        self.float = np.dtype(dtype).type
        self.elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
        self._initializer_names: set[str] = set()
        self._drawn: dict[tuple, np.ndarray] = {}   # a layer's random data, reused by the next layers
        self.opset = opset
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self.rng = np.random.default_rng(seed)
        self._count = 0

    def fresh(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def input(self, name: str, elem_type: int, shape) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, elem_type, shape))
        return name

    def output(self, name: str, value: str, shape, elem_type: int | None = None) -> None:
        self.op("Identity", [value], outputs=[name])
        self.outputs.append(helper.make_tensor_value_info(name, self.elem if elem_type is None else elem_type, list(shape)))

    def weight(self, name: str, shape, scale: float = 0.02) -> str:
        """A random float weight; a name already given is the same initializer. Layers
        are named ``<stem>.<layer>.<...>`` and each has its own initializers (a real
        model's distinct weights, each resting on chip once), but their random data is
        drawn once per stem and shape and reused: a deep model costs its weights' bytes
        to build, not a draw per layer."""
        if name in self._initializer_names:
            return name
        if self.weights_as_inputs:
            return self.weight_input(name, shape)
        key = (LAYER.sub(r"\1.#.", name), tuple(np.atleast_1d(shape)), scale)
        array = self._drawn.get(key)
        if array is None:
            array = self._drawn[key] = (self.rng.standard_normal(shape) * scale).astype(self.float)
        return self.initializer(name, array)

    def weight_input(self, name: str, shape) -> str:
        """A weight as a graph input marked ``WEIGHT_DOC`` (``weights_as_inputs``)."""
        if name not in self._initializer_names:
            self._initializer_names.add(name)
            self.input(name, self.elem, [int(d) for d in np.atleast_1d(shape)])
            self.inputs[-1].doc_string = WEIGHT_DOC
        return name

    def initializer(self, name: str, array: np.ndarray) -> str:
        if name in self._initializer_names:
            return name
        array = np.asarray(array)
        if array.dtype.kind == "f":
            array = array.astype(self.float)
        self._initializer_names.add(name)
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def fconst(self, value) -> str:
        """A float Constant of the builder's element type."""
        return self.const(value, self.float)

    def const(self, value, dtype=np.int64) -> str:
        """A Constant node (as PyTorch exports emit them)."""
        name = self.fresh("const")
        tensor = numpy_helper.from_array(np.asarray(value, dtype=dtype), name + "_value")
        self.nodes.append(helper.make_node("Constant", [], [name], value=tensor))
        return name

    def op(self, op_type: str, inputs, outputs=None, **attrs) -> str:
        outputs = outputs or [self.fresh(op_type.lower())]
        self.nodes.append(
            helper.make_node(op_type, list(inputs), list(outputs), name=self.fresh(op_type), **attrs)
        )
        return outputs[0]

    def ops(self, op_type: str, inputs, count: int, **attrs) -> list[str]:
        outputs = [self.fresh(op_type.lower()) for _ in range(count)]
        self.op(op_type, inputs, outputs, **attrs)
        return outputs

    def model(self) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        model.producer_name = "irc-benchmarks"
        onnx.checker.check_model(model)
        return model

    # -- layers shared by the models ------------------------------------------

    def linear(self, x: str, d_in: int, d_out: int, prefix: str) -> str:
        w = self.weight(f"{prefix}.weight", (d_in, d_out))
        b = self.weight(f"{prefix}.bias", (d_out,))
        return self.op("Add", [self.op("MatMul", [x, w]), b])

    def layer_norm(self, x: str, hidden: int, prefix: str, eps: float = 1e-5) -> str:
        scale = self.initializer(f"{prefix}.weight", 1 + self.rng.standard_normal(hidden) * 0.1)
        bias = self.weight(f"{prefix}.bias", (hidden,), 0.1)
        return self.op("LayerNormalization", [x, scale, bias], axis=-1, epsilon=eps)

    def dynamic_dim(self, x: str, index: int) -> str:
        """Shape(x)[index] as a 1-element tensor: the shape arithmetic exporters emit."""
        shape = self.op("Shape", [x])
        dim = self.op("Gather", [shape, self.const(index)], axis=0)
        return self.op("Unsqueeze", [dim, self.const([0])])

    def split_heads(self, x: str, heads: int, head_dim: int) -> str:
        """(B, S, H) -> (B, heads, S, head_dim), the target shape computed from Shape."""
        shape = self.op("Concat", [
            self.dynamic_dim(x, 0), self.dynamic_dim(x, 1),
            self.const([heads]), self.const([head_dim]),
        ], axis=0)
        return self.op("Transpose", [self.op("Reshape", [x, shape])], perm=[0, 2, 1, 3])

    def merge_heads(self, x: str, hidden: int) -> str:
        """(B, heads, S, head_dim) -> (B, S, H)."""
        merged = self.op("Transpose", [x], perm=[0, 2, 1, 3])
        shape = self.op("Concat", [
            self.dynamic_dim(merged, 0), self.dynamic_dim(merged, 1), self.const([hidden]),
        ], axis=0)
        return self.op("Reshape", [merged, shape])

    def attention(self, q: str, k: str, v: str, heads: int, hidden: int, bias: str | None) -> str:
        head_dim = hidden // heads
        qh, kh, vh = (self.split_heads(t, heads, head_dim) for t in (q, k, v))
        scores = self.op("MatMul", [qh, self.op("Transpose", [kh], perm=[0, 1, 3, 2])])
        scores = self.op("Div", [scores, self.fconst(np.sqrt(head_dim))])
        if bias is not None:
            scores = self.op("Add", [scores, bias])
        probs = self.op("Softmax", [scores], axis=-1)
        return self.merge_heads(self.op("MatMul", [probs, vh]), hidden)

    def gelu_erf(self, x: str) -> str:
        """PyTorch's exported exact GELU: x * 0.5 * (1 + erf(x / sqrt(2)))."""
        erf = self.op("Erf", [self.op("Div", [x, self.fconst(np.sqrt(2.0))])])
        one_plus = self.op("Add", [erf, self.fconst(1.0)])
        return self.op("Mul", [self.op("Mul", [x, one_plus]), self.fconst(0.5)])


def mark_weight_inputs(module, model: onnx.ModelProto) -> None:
    """Mark the arguments of ``module``'s function imported from ``model``'s weight inputs
    (``WEIGHT_DOC``) as ``irc.weight``, as the importer marks initializers."""
    names = {i.name for i in model.graph.input if i.doc_string == WEIGHT_DOC}
    for function in (op for op in module.walk() if isinstance(op, FuncOp)):
        marked = []
        for attrs in function.arg_attrs.data:
            entries = dict(attrs.data)
            name = entries.get("irc.name")
            if name is not None and name.data in names:
                entries["irc.weight"] = UnitAttr()
            marked.append(DictionaryAttr(entries))
        function.arg_attrs = ArrayAttr(marked)
