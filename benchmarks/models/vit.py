"""A ViT-base encoder block (pre-LN, the Gelu op, no mask)."""

from __future__ import annotations

from dataclasses import dataclass

import onnx
from onnx import TensorProto

from .graph import GraphBuilder


@dataclass(frozen=True)
class ViTConfig:
    batch: int = 1
    tokens: int = 197  # 14x14 patches + the class token
    hidden: int = 768
    heads: int = 12
    mlp: int = 3072
    seed: int = 0


def build_vit_block(config: ViTConfig = ViTConfig()) -> onnx.ModelProto:
    c = config
    g = GraphBuilder("vit_block", c.seed, opset=20)  # the Gelu op is opset 20
    x = g.input("tokens", TensorProto.FLOAT, [c.batch, c.tokens, c.hidden])
    h = g.layer_norm(x, c.hidden, "norm1", 1e-6)
    # One fused qkv projection split three ways, as timm's Attention does.
    qkv = g.linear(h, c.hidden, 3 * c.hidden, "attn.qkv")
    q, k, v = g.ops("Split", [qkv, g.const([c.hidden] * 3)], 3, axis=-1)
    attn = g.linear(g.attention(q, k, v, c.heads, c.hidden, None), c.hidden, c.hidden, "attn.proj")
    x = g.op("Add", [x, attn])
    h = g.layer_norm(x, c.hidden, "norm2", 1e-6)
    h = g.op("Gelu", [g.linear(h, c.hidden, c.mlp, "mlp.fc1")])
    x = g.op("Add", [x, g.linear(h, c.mlp, c.hidden, "mlp.fc2")])
    g.output("output", x, [c.batch, c.tokens, c.hidden])
    return g.model()
