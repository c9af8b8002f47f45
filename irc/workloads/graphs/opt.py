"""An OPT-style pre-LN decoder (OPT-1.3B's shape: 2048 wide, 32 heads, 8192 FFN) with its
embeddings, as PyTorch's TorchScript exporter writes Hugging Face's OPTModel:

- learned positions from the attention mask, ``cumsum(mask) * mask - 1``, shifted by
  the offset 2 OPT keeps in its position table (``max_positions + 2`` rows);
- the causal mask built at run time (``ConstantOfShape`` of the lowest float, a
  ``Range``/``Less``/``Where`` lower triangle, ``Expand`` to the batch) plus the padding
  mask inverted with ``Sub``/``Cast``/``Where``, their sum clamped from below by ``Max``;
- queries scaled after their projection; heads folded into the batch for the score and
  context ``MatMul``s (``(B*heads, S, d)``), the reshape targets computed from ``Shape``,
  ``Slice`` and ``Concat``;
- a ReLU FFN on the tokens flattened to ``(B*S, hidden)``, and a final LayerNorm.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto

from .graph import GraphBuilder

POSITION_OFFSET = 2
"""OPT's learned positional embedding reads row ``position + 2``."""


@dataclass(frozen=True)
class OPTConfig:
    batch: int = 1
    seq: int = 128
    hidden: int = 2048
    heads: int = 32
    ffn: int = 8192
    vocab: int = 50272
    positions: int = 2048
    layers: int = 1
    seed: int = 0
    weights_as_inputs: bool = False   # weights as graph inputs without data (``GraphBuilder``)


def _shape_tail(g: GraphBuilder, x: str, start: int) -> str:
    """Shape(x)[start:], as the exporter slices a shape for a reshape target."""
    return g.op("Slice", [g.op("Shape", [x]), g.const([start]), g.const([np.iinfo(np.int64).max]), g.const([0])])


def _fold_heads(g: GraphBuilder, x: str, c: OPTConfig) -> str:
    """(B, S, H) -> (B*heads, S, d): OPTAttention's ``_shape`` then ``view(*proj_shape)``."""
    d = c.hidden // c.heads
    split = g.op("Reshape", [x, g.op("Concat", [g.dynamic_dim(x, 0), g.dynamic_dim(x, 1),
                                                g.const([c.heads]), g.const([d])], axis=0)])
    heads = g.op("Transpose", [split], perm=[0, 2, 1, 3])
    return g.op("Reshape", [heads, g.const([c.batch * c.heads, -1, d])])


def _attention_mask(g: GraphBuilder, mask: str, c: OPTConfig) -> str:
    """(B, 1, S, S) additive mask: causal lower triangle + padding, as exported."""
    lowest = float(np.finfo(np.float32).min)
    seq = g.op("Gather", [g.op("Shape", [mask]), g.const(1)], axis=0)
    square = g.op("Concat", [g.op("Unsqueeze", [seq, g.const([0])])] * 2, axis=0)
    full = g.op("ConstantOfShape", [square], value=onnx.numpy_helper.from_array(np.array([lowest], np.float32)))
    cond = g.op("Range", [g.const(0), seq, g.const(1)])
    rows = g.op("Reshape", [g.op("Add", [cond, g.const(1)]), g.const([-1, 1])])
    causal = g.op("Where", [g.op("Less", [cond, rows]), g.const(0.0, np.float32), full])
    causal = g.op("Unsqueeze", [causal, g.const([0, 1])])
    target = g.op("Concat", [g.dynamic_dim(mask, 0), g.const([1]), g.op("Unsqueeze", [seq, g.const([0])]),
                             g.op("Unsqueeze", [seq, g.const([0])])], axis=0)
    causal = g.op("Expand", [causal, target])
    expanded = g.op("Expand", [g.op("Unsqueeze", [mask, g.const([1, 2])]), target])
    inverted = g.op("Sub", [g.const(1.0, np.float32), g.op("Cast", [expanded], to=TensorProto.FLOAT)])
    padding = g.op("Where", [g.op("Cast", [inverted], to=TensorProto.BOOL), g.const(lowest, np.float32), inverted])
    return g.op("Add", [padding, causal])


def build_opt_decoder(config: OPTConfig = OPTConfig()) -> onnx.ModelProto:
    c = config
    g = GraphBuilder("opt_decoder", c.seed, weights_as_inputs=c.weights_as_inputs)
    ids = g.input("input_ids", TensorProto.INT64, [c.batch, c.seq])
    mask = g.input("attention_mask", TensorProto.INT64, [c.batch, c.seq])
    embed_tokens = g.weight("embed_tokens.weight", (c.vocab, c.hidden))
    embed_positions = g.weight("embed_positions.weight", (c.positions + POSITION_OFFSET, c.hidden), 0.01)
    # positions = (cumsum(mask, 1) * mask).long() - 1, read at row position + 2
    cumsum = g.op("CumSum", [mask, g.const(1)])
    positions = g.op("Sub", [g.op("Mul", [cumsum, mask]), g.const(1)])
    positions = g.op("Add", [positions, g.const(POSITION_OFFSET)])
    x = g.op("Add", [g.op("Gather", [embed_tokens, ids], axis=0), g.op("Gather", [embed_positions, positions], axis=0)])
    bias = _attention_mask(g, mask, c)
    d = c.hidden // c.heads
    lowest = g.const(np.finfo(np.float32).min, np.float32)
    for layer in range(c.layers):
        p = f"layers.{layer}."
        h = g.layer_norm(x, c.hidden, f"{p}self_attn_layer_norm")
        q = g.op("Mul", [g.linear(h, c.hidden, c.hidden, f"{p}self_attn.q_proj"), g.const(d ** -0.5, np.float32)])
        k = g.linear(h, c.hidden, c.hidden, f"{p}self_attn.k_proj")
        v = g.linear(h, c.hidden, c.hidden, f"{p}self_attn.v_proj")
        qh, kh, vh = (_fold_heads(g, t, c) for t in (q, k, v))
        scores = g.op("MatMul", [qh, g.op("Transpose", [kh], perm=[0, 2, 1])])
        scores = g.op("Reshape", [scores, g.const([c.batch, c.heads, c.seq, c.seq])])
        scores = g.op("Max", [g.op("Add", [scores, bias]), lowest])
        scores = g.op("Reshape", [scores, g.const([c.batch * c.heads, c.seq, c.seq])])
        context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), vh])
        context = g.op("Reshape", [context, g.const([c.batch, c.heads, c.seq, d])])
        context = g.op("Transpose", [context], perm=[0, 2, 1, 3])
        context = g.op("Reshape", [context, g.op("Concat", [g.dynamic_dim(x, 0), g.dynamic_dim(x, 1),
                                                            g.const([c.hidden])], axis=0)])
        x = g.op("Add", [x, g.linear(context, c.hidden, c.hidden, f"{p}self_attn.out_proj")])
        # the FFN runs on the tokens flattened: reshape(-1, hidden), then back to x's shape
        flat = g.op("Reshape", [x, g.op("Concat", [g.const([-1]), _shape_tail(g, x, 2)], axis=0)])
        h = g.layer_norm(flat, c.hidden, f"{p}final_layer_norm")
        h = g.op("Relu", [g.linear(h, c.hidden, c.ffn, f"{p}fc1")])
        h = g.op("Add", [flat, g.linear(h, c.ffn, c.hidden, f"{p}fc2")])
        x = g.op("Reshape", [h, g.op("Shape", [x])])
    x = g.layer_norm(x, c.hidden, "final_layer_norm")
    g.output("last_hidden_state", x, [c.batch, c.seq, c.hidden])
    return g.model()
