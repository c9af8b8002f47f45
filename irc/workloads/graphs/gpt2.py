"""A GPT-2-style decoder block with its embeddings, as Hugging Face exports it:
token and position Gathers (positions from a folded Range), a causal mask sliced
from a constant lower-triangular buffer and applied with Where, the padding mask
turned additive with Cast/Sub/Mul, a fused c_attn projection Split three ways, and
the tanh GELU written out with Pow and Tanh. With ``layers`` > 1 each layer has its own
weights (``h.<layer>.``; their random data drawn once, ``GraphBuilder.weight``); ``lm_head``
adds the final LayerNorm and the logits."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto

from .graph import GraphBuilder


@dataclass(frozen=True)
class GPT2Config:
    batch: int = 1
    seq: int = 128
    hidden: int = 768
    heads: int = 12
    vocab: int = 50257
    positions: int = 1024
    layers: int = 1
    lm_head: bool = False  # logits against the (tied) token embedding, as GPT2LMHeadModel
    dtype: str = "float32"
    seed: int = 0
    weights_as_inputs: bool = False   # weights as graph inputs without data (``GraphBuilder``)


def build_gpt2_block(config: GPT2Config = GPT2Config()) -> onnx.ModelProto:
    c = config
    g = GraphBuilder("gpt2_block", c.seed, dtype=c.dtype, weights_as_inputs=c.weights_as_inputs)
    ids = g.input("input_ids", TensorProto.INT64, [c.batch, c.seq])
    mask = g.input("attention_mask", TensorProto.INT64, [c.batch, c.seq])
    wte = g.weight("wte", (c.vocab, c.hidden))
    wpe = g.weight("wpe", (c.positions, c.hidden), 0.01)
    seq = g.op("Gather", [g.op("Shape", [ids]), g.const(1)], axis=0)
    positions = g.op("Range", [g.const(0), seq, g.const(1)])
    x = g.op("Add", [g.op("Gather", [wte, ids], axis=0), g.op("Gather", [wpe, positions], axis=0)])

    for layer in range(c.layers):
        prefix = f"h.{layer}." if c.layers > 1 else ""
        h = g.layer_norm(x, c.hidden, f"{prefix}ln_1")
        qkv = g.linear(h, c.hidden, 3 * c.hidden, f"{prefix}attn.c_attn")
        q, k, v = g.ops("Split", [qkv, g.const([c.hidden] * 3)], 3, axis=2)
        head_dim = c.hidden // c.heads
        qh, kh, vh = (g.split_heads(t, c.heads, head_dim) for t in (q, k, v))
        scores = g.op("MatMul", [qh, g.op("Transpose", [kh], perm=[0, 1, 3, 2])])
        scores = g.op("Div", [scores, g.fconst(np.sqrt(head_dim))])
        # Causal mask: bias[:, :, :S, :S] of a (1, 1, P, P) lower-triangular buffer.
        buffer = g.initializer(f"{prefix}attn.bias", np.tril(np.ones((c.positions, c.positions), dtype=bool))[None, None])
        end = g.op("Unsqueeze", [seq, g.const([0])])
        causal = g.op("Slice", [buffer, g.const([0, 0]), g.op("Concat", [end, end], axis=0), g.const([2, 3])])
        lowest = g.fconst(np.finfo(g.float).min)
        scores = g.op("Where", [causal, scores, lowest])
        # Padding mask: (1 - mask) * lowest, broadcast over heads and queries.
        extended = g.op("Cast", [g.op("Unsqueeze", [mask, g.const([1, 2])])], to=g.elem)
        scores = g.op("Add", [scores, g.op("Mul", [g.op("Sub", [g.fconst(1.0), extended]), lowest])])
        probs = g.op("Softmax", [scores], axis=-1)
        context = g.merge_heads(g.op("MatMul", [probs, vh]), c.hidden)
        x = g.op("Add", [x, g.linear(context, c.hidden, c.hidden, f"{prefix}attn.c_proj")])

        h = g.layer_norm(x, c.hidden, f"{prefix}ln_2")
        h = g.linear(h, c.hidden, 4 * c.hidden, f"{prefix}mlp.c_fc")
        cube = g.op("Pow", [h, g.fconst(3.0)])
        inner = g.op("Mul", [g.op("Add", [h, g.op("Mul", [cube, g.fconst(0.044715)])]),
                             g.fconst(np.sqrt(2 / np.pi))])
        h = g.op("Mul", [g.op("Mul", [h, g.fconst(0.5)]),
                         g.op("Add", [g.op("Tanh", [inner]), g.fconst(1.0)])])
        x = g.op("Add", [x, g.linear(h, 4 * c.hidden, c.hidden, f"{prefix}mlp.c_proj")])
    if c.lm_head:
        h = g.layer_norm(x, c.hidden, "ln_f")
        logits = g.op("MatMul", [h, g.op("Transpose", [wte], perm=[1, 0])])
        g.output("logits", logits, [c.batch, c.seq, c.vocab])
    else:
        g.output("hidden_states", x, [c.batch, c.seq, c.hidden])
    return g.model()
