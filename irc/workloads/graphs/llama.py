"""A Llama-2 decoder layer in the decoding phase, as ELK evaluates it (seed 004 s6.1: the
decoding of one new token per request of a batch against a KV cache), built in f16 from
the published Llama2-13B configuration: hidden 5120, 40 heads of 128, SwiGLU FFN 13824,
RMSNorm (eps 1e-5), rotary position embeddings on q and k. As Hugging Face exports it:
RMSNorm written out (Pow, ReduceMean, Add, Sqrt, Div, Mul), rotate_half with Slice, Neg
and Concat, the new key and value rows concatenated to the cache, SiLU as x * sigmoid(x).
The rotary cos/sin of the decoded position are constants (the position is fixed when
the graph is built), so nothing is gathered at run time.

``kv_heads`` below ``heads`` gives grouped-query attention (Gemma2-27B, Llama2-70B: each
K/V head serves ``heads // kv_heads`` query heads; the decoded token's queries are grouped
by their K/V head, ``(B, kv_heads, heads // kv_heads, head_dim)``, so the cache is read
once per group, as ELK's workloads do) and ``activation="gelu_tanh"`` Gemma2's GeGLU MLP
(GELU's tanh form written out, as opset 17 has no Gelu); ``GEMMA2_27B`` is Gemma2-27B's
shape in this form (its logit soft-capping and extra norms left out)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto

from .graph import GraphBuilder


@dataclass(frozen=True)
class LlamaConfig:
    batch: int = 32
    past: int = 127          # cached positions; the decoded token is position `past`
    hidden: int = 5120
    heads: int = 40
    intermediate: int = 13824
    layers: int = 1
    eps: float = 1e-5
    rope_theta: float = 10000.0
    seed: int = 0
    kv_heads: int | None = None     # grouped-query attention; None: as many as heads
    activation: str = "silu"        # the gated MLP's: "silu" (Llama) or "gelu_tanh" (Gemma2)
    vocab: int = 0                  # > 0: the final RMSNorm and the LM head's logits over this vocabulary
    weights_as_inputs: bool = False  # weights as graph inputs without data (a full-size graph to compile)


LLAMA2_13B = LlamaConfig()
GEMMA2_27B = LlamaConfig(hidden=4608, heads=32, kv_heads=16, intermediate=36864, activation="gelu_tanh")


class _F16Builder(GraphBuilder):
    """Activations, weights and constants in f16; weights drawn in f32, not f64 (a
    13B-sized layer's 317M weights would take 2.5 GB drawn in f64). With
    ``weights_as_inputs`` every weight is a graph input instead (no data: a full-size
    graph built in a moment, for compiling; an importer sees plain inputs)."""

    def __init__(self, name: str, seed: int = 0, weights_as_inputs: bool = False):
        super().__init__(name, seed, dtype=np.float16, weights_as_inputs=weights_as_inputs)

    def weight(self, name: str, shape, scale: float = 0.02) -> str:
        if self.weights_as_inputs:
            return self.weight_input(name, shape)
        array = self.rng.standard_normal(shape, dtype=np.float32)
        array *= scale
        return self.initializer(name, array.astype(np.float16))

    def norm_weight(self, name: str, hidden: int) -> str:
        if self.weights_as_inputs:
            return self.weight_input(name, (hidden,))
        return self.initializer(name, (1 + 0.1 * self.rng.standard_normal(hidden, dtype=np.float32)).astype(np.float16))

    def table(self, name: str, array: np.ndarray) -> str:
        """A constant table (the rotary cos/sin): a weight input too with ``weights_as_inputs``."""
        return self.weight_input(name, array.shape) if self.weights_as_inputs else self.initializer(name, array)

    def half(self, value) -> str:
        return self.fconst(value)


def _rms_norm(g: _F16Builder, x: str, hidden: int, eps: float, name: str) -> str:
    weight = g.norm_weight(name, hidden)
    variance = g.op("ReduceMean", [g.op("Pow", [x, g.half(2.0)])], axes=[-1], keepdims=1)
    scale = g.op("Div", [g.half(1.0), g.op("Sqrt", [g.op("Add", [variance, g.half(eps)])])])
    return g.op("Mul", [weight, g.op("Mul", [x, scale])])


def _rotary(g: _F16Builder, x: str, cos: str, sin: str, half: int) -> str:
    """x * cos + rotate_half(x) * sin over the last axis (head_dim = 2 * half)."""
    first = g.op("Slice", [x, g.const([0]), g.const([half]), g.const([-1])])
    second = g.op("Slice", [x, g.const([half]), g.const([2 * half]), g.const([-1])])
    rotated = g.op("Concat", [g.op("Neg", [second]), first], axis=-1)
    return g.op("Add", [g.op("Mul", [x, cos]), g.op("Mul", [rotated, sin])])


def build_llama_layer(config: LlamaConfig = LLAMA2_13B) -> onnx.ModelProto:
    c = config
    head_dim = c.hidden // c.heads
    kv_heads = c.kv_heads or c.heads
    if c.heads % kv_heads or c.activation not in ("silu", "gelu_tanh"):
        raise ValueError(f"{c.heads} heads over {kv_heads} K/V heads, activation '{c.activation}'")
    group = c.heads // kv_heads
    g = _F16Builder("llama_decoder_layer", c.seed, c.weights_as_inputs)
    x = g.input("hidden_states", TensorProto.FLOAT16, [c.batch, 1, c.hidden])
    inverse = 1.0 / c.rope_theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    angles = np.concatenate([c.past * inverse, c.past * inverse])
    cos = g.table("rotary.cos", np.cos(angles).astype(np.float16).reshape(1, 1, 1, head_dim))
    sin = g.table("rotary.sin", np.sin(angles).astype(np.float16).reshape(1, 1, 1, head_dim))
    presents = []
    for layer in range(c.layers):
        prefix = f"layers.{layer}." if c.layers > 1 else ""
        past_k = g.input(f"{prefix}past_key", TensorProto.FLOAT16, [c.batch, kv_heads, c.past, head_dim])
        past_v = g.input(f"{prefix}past_value", TensorProto.FLOAT16, [c.batch, kv_heads, c.past, head_dim])
        h = _rms_norm(g, x, c.hidden, c.eps, f"{prefix}input_layernorm.weight")
        q, k, v = (g.op("MatMul", [h, g.weight(f"{prefix}self_attn.{p}_proj.weight", (c.hidden, width))])
                   for p, width in (("q", c.hidden), ("k", kv_heads * head_dim), ("v", kv_heads * head_dim)))
        qh = g.split_heads(q, c.heads, head_dim)
        kh, vh = (g.split_heads(t, kv_heads, head_dim) for t in (k, v))
        qh, kh = (_rotary(g, t, cos, sin, head_dim // 2) for t in (qh, kh))
        keys = g.op("Concat", [past_k, kh], axis=2)
        values = g.op("Concat", [past_v, vh], axis=2)
        if group > 1:  # the one decoded token's queries, grouped by their K/V head
            qh = g.op("Reshape", [qh, g.const([c.batch, kv_heads, group, head_dim])])
        scores = g.op("MatMul", [qh, g.op("Transpose", [keys], perm=[0, 1, 3, 2])])
        scores = g.op("Div", [scores, g.half(np.sqrt(head_dim))])
        probs = g.op("Softmax", [scores], axis=-1)
        context = g.op("MatMul", [probs, values])
        if group > 1:
            context = g.op("Reshape", [context, g.const([c.batch, c.heads, 1, head_dim])])
        context = g.merge_heads(context, c.hidden)
        attn = g.op("MatMul", [context, g.weight(f"{prefix}self_attn.o_proj.weight", (c.hidden, c.hidden))])
        x = g.op("Add", [x, attn])
        h = _rms_norm(g, x, c.hidden, c.eps, f"{prefix}post_attention_layernorm.weight")
        gate = g.op("MatMul", [h, g.weight(f"{prefix}mlp.gate_proj.weight", (c.hidden, c.intermediate))])
        up = g.op("MatMul", [h, g.weight(f"{prefix}mlp.up_proj.weight", (c.hidden, c.intermediate))])
        if c.activation == "silu":
            act = g.op("Mul", [g.op("Mul", [gate, g.op("Sigmoid", [gate])]), up])
        else:  # 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
            cube = g.op("Mul", [g.op("Mul", [gate, gate]), gate])
            inner = g.op("Mul", [g.op("Add", [gate, g.op("Mul", [cube, g.half(0.044715)])]), g.half(np.sqrt(2 / np.pi))])
            gelu = g.op("Mul", [g.op("Mul", [gate, g.half(0.5)]), g.op("Add", [g.op("Tanh", [inner]), g.half(1.0)])])
            act = g.op("Mul", [gelu, up])
        down = g.op("MatMul", [act, g.weight(f"{prefix}mlp.down_proj.weight", (c.intermediate, c.hidden))])
        x = g.op("Add", [x, down])
        presents += [(f"{prefix}present_key_row", kh), (f"{prefix}present_value_row", vh)]
    if c.vocab:
        h = _rms_norm(g, x, c.hidden, c.eps, "norm.weight")
        logits = g.op("MatMul", [h, g.weight("lm_head.weight", (c.hidden, c.vocab))])
        g.output("logits", logits, [c.batch, 1, c.vocab], TensorProto.FLOAT16)
    else:
        g.output("last_hidden_state", x, [c.batch, 1, c.hidden], TensorProto.FLOAT16)
    for name, value in presents:
        g.output(name, value, [c.batch, kv_heads, 1, head_dim], TensorProto.FLOAT16)
    return g.model()
