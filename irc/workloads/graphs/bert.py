"""A BERT encoder (post-LN, erf GELU, additive attention mask), as PyTorch exports it:
the head split's target shape is computed from Shape nodes and the mask goes through
Unsqueeze/Cast/Sub/Mul. ``layers`` encoder layers (default one, BERT-base's); each layer
has its own weights (``layer.<i>.``), as a real model does, whose random data is drawn
once and reused (``GraphBuilder.weight``)."""

from __future__ import annotations

from dataclasses import dataclass

import onnx
from onnx import TensorProto

from .graph import GraphBuilder


@dataclass(frozen=True)
class BertConfig:
    batch: int = 1
    seq: int = 128
    hidden: int = 768
    heads: int = 12
    intermediate: int = 3072
    layers: int = 1
    dtype: str = "float32"
    seed: int = 0
    weights_as_inputs: bool = False   # weights as graph inputs without data (``GraphBuilder``)


def build_bert_layer(config: BertConfig = BertConfig()) -> onnx.ModelProto:
    c = config
    g = GraphBuilder("bert_encoder_layer" if c.layers == 1 else "bert_encoder", c.seed, dtype=c.dtype, weights_as_inputs=c.weights_as_inputs)
    x = g.input("hidden_states", g.elem, [c.batch, c.seq, c.hidden])
    mask = g.input("attention_mask", TensorProto.INT64, [c.batch, c.seq])
    # (B, S) -> (B, 1, 1, S); 0 where attended, -10000 where masked.
    extended = g.op("Unsqueeze", [g.op("Unsqueeze", [mask, g.const([1])]), g.const([2])])
    extended = g.op("Cast", [extended], to=g.elem)
    bias = g.op("Mul", [g.op("Sub", [g.fconst(1.0), extended]), g.fconst(-10000.0)])
    for layer in range(c.layers):
        x = bert_layer(g, x, bias, c, f"layer.{layer}." if c.layers > 1 else "")
    g.output("last_hidden_state", x, [c.batch, c.seq, c.hidden])
    return g.model()


def bert_layer(g: GraphBuilder, x: str, bias: str, c: BertConfig, prefix: str = "") -> str:
    q = g.linear(x, c.hidden, c.hidden, f"{prefix}attention.self.query")
    k = g.linear(x, c.hidden, c.hidden, f"{prefix}attention.self.key")
    v = g.linear(x, c.hidden, c.hidden, f"{prefix}attention.self.value")
    context = g.attention(q, k, v, c.heads, c.hidden, bias)
    attn = g.linear(context, c.hidden, c.hidden, f"{prefix}attention.output.dense")
    attn = g.layer_norm(g.op("Add", [attn, x]), c.hidden, f"{prefix}attention.output.LayerNorm", 1e-12)
    inter = g.gelu_erf(g.linear(attn, c.hidden, c.intermediate, f"{prefix}intermediate.dense"))
    out = g.linear(inter, c.intermediate, c.hidden, f"{prefix}output.dense")
    return g.layer_norm(g.op("Add", [out, attn]), c.hidden, f"{prefix}output.LayerNorm", 1e-12)
