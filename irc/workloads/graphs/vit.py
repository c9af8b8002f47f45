"""A ViT-base encoder block (pre-LN, the Gelu op, no mask); ``build_vit`` the whole
ViT-B/16: a 16x16 stride-16 patch Conv, the class token and position embeddings, the
blocks (each its own weights, their random data drawn once: ``GraphBuilder.weight``), the final LayerNorm and
the classification head on the class token."""

from __future__ import annotations

from dataclasses import dataclass

import onnx

from .graph import GraphBuilder


@dataclass(frozen=True)
class ViTConfig:
    batch: int = 1
    tokens: int = 197  # 14x14 patches + the class token
    hidden: int = 768
    heads: int = 12
    mlp: int = 3072
    layers: int = 12
    image: int = 224
    patch: int = 16
    classes: int = 1000
    dtype: str = "float32"
    seed: int = 0
    weights_as_inputs: bool = False   # weights as graph inputs without data (``GraphBuilder``)


def build_vit_block(config: ViTConfig = ViTConfig()) -> onnx.ModelProto:
    c = config
    g = GraphBuilder("vit_block", c.seed, opset=20, dtype=c.dtype, weights_as_inputs=c.weights_as_inputs)  # the Gelu op is opset 20
    x = g.input("tokens", g.elem, [c.batch, c.tokens, c.hidden])
    g.output("output", vit_block(g, x, c), [c.batch, c.tokens, c.hidden])
    return g.model()


def vit_block(g: GraphBuilder, x: str, c: ViTConfig, prefix: str = "") -> str:
    h = g.layer_norm(x, c.hidden, f"{prefix}norm1", 1e-6)
    # One fused qkv projection split three ways, as timm's Attention does.
    qkv = g.linear(h, c.hidden, 3 * c.hidden, f"{prefix}attn.qkv")
    q, k, v = g.ops("Split", [qkv, g.const([c.hidden] * 3)], 3, axis=-1)
    attn = g.linear(g.attention(q, k, v, c.heads, c.hidden, None), c.hidden, c.hidden, f"{prefix}attn.proj")
    x = g.op("Add", [x, attn])
    h = g.layer_norm(x, c.hidden, f"{prefix}norm2", 1e-6)
    h = g.op("Gelu", [g.linear(h, c.hidden, c.mlp, f"{prefix}mlp.fc1")])
    return g.op("Add", [x, g.linear(h, c.mlp, c.hidden, f"{prefix}mlp.fc2")])


def build_vit(config: ViTConfig = ViTConfig()) -> onnx.ModelProto:
    c = config
    g = GraphBuilder("vit", c.seed, opset=20, dtype=c.dtype, weights_as_inputs=c.weights_as_inputs)
    side = c.image // c.patch
    patches = side * side
    image = g.input("pixel_values", g.elem, [c.batch, 3, c.image, c.image])
    w = g.weight("patch_embed.proj.weight", (c.hidden, 3, c.patch, c.patch))
    x = g.op("Conv", [image, w, g.weight("patch_embed.proj.bias", (c.hidden,))],
             kernel_shape=[c.patch, c.patch], strides=[c.patch, c.patch])
    x = g.op("Transpose", [g.op("Reshape", [x, g.const([c.batch, c.hidden, patches])])], perm=[0, 2, 1])
    cls = g.op("Expand", [g.weight("cls_token", (1, 1, c.hidden)), g.const([c.batch, 1, c.hidden])])
    x = g.op("Concat", [cls, x], axis=1)
    x = g.op("Add", [x, g.weight("pos_embed", (1, patches + 1, c.hidden))])
    for layer in range(c.layers):   # each block its own weights, as timm's blocks.<i>
        x = vit_block(g, x, c, f"blocks.{layer}.")
    x = g.layer_norm(x, c.hidden, "norm", 1e-6)
    token = g.op("Gather", [x, g.const(0)], axis=1)
    logits = g.linear(token, c.hidden, c.classes, "head")
    g.output("logits", logits, [c.batch, c.classes])
    return g.model()
