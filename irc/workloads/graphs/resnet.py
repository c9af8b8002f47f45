"""A ResNet-50 bottleneck stage: `blocks` bottlenecks (1x1 -> 3x3 -> 1x1 convs with
inference BatchNorm and ReLU), the first with a strided projection shortcut; and
``build_resnet50``, the whole network on 224x224 images (7x7 stride-2 stem, 3x3
stride-2 max pool, stages of 3, 4, 6, 3 blocks, global average pool, 1000-class FC)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx

from .graph import GraphBuilder


@dataclass(frozen=True)
class ResNetStageConfig:
    """Defaults: conv3_x of ResNet-50 (56x56x256 in, 28x28x512 out, 4 blocks)."""

    batch: int = 1
    in_channels: int = 256
    width: int = 128  # the bottleneck's inner channels; outputs are 4x this
    size: int = 56
    blocks: int = 4
    stride: int = 2
    dtype: str = "float32"
    seed: int = 0


@dataclass(frozen=True)
class ResNet50Config:
    batch: int = 1
    image: int = 224
    classes: int = 1000
    width: int = 64  # the stem's and first stage's channels; stages double it (64..512)
    dtype: str = "float32"
    seed: int = 0


def _conv_bn(g: GraphBuilder, x: str, c_in: int, c_out: int, kernel: int, stride: int, prefix: str, relu: bool) -> str:
    w = g.initializer(
        f"{prefix}.conv.weight",
        g.rng.standard_normal((c_out, c_in, kernel, kernel)) * np.sqrt(2.0 / (c_in * kernel * kernel)),
    )
    pad = kernel // 2
    y = g.op("Conv", [x, w], kernel_shape=[kernel, kernel], strides=[stride, stride], pads=[pad] * 4)
    params = [
        g.initializer(f"{prefix}.bn.weight", (1 + 0.1 * g.rng.standard_normal(c_out))),
        g.initializer(f"{prefix}.bn.bias", (0.1 * g.rng.standard_normal(c_out))),
        g.initializer(f"{prefix}.bn.running_mean", (0.1 * g.rng.standard_normal(c_out))),
        g.initializer(f"{prefix}.bn.running_var", (1 + 0.1 * g.rng.random(c_out))),
    ]
    y = g.op("BatchNormalization", [y, *params], epsilon=1e-5)
    return g.op("Relu", [y]) if relu else y


def build_resnet_stage(config: ResNetStageConfig = ResNetStageConfig()) -> onnx.ModelProto:
    c = config
    g = GraphBuilder("resnet50_stage", c.seed, dtype=c.dtype)
    x = g.input("input", g.elem, [c.batch, c.in_channels, c.size, c.size])
    x = resnet_stage(g, x, c.in_channels, c.width, c.blocks, c.stride, "layer")
    out = (c.size - 1) // c.stride + 1
    g.output("output", x, [c.batch, 4 * c.width, out, out])
    return g.model()


def resnet_stage(g: GraphBuilder, x: str, channels: int, width: int, blocks: int, stride: int, name: str) -> str:
    """``blocks`` bottlenecks of ``width`` inner channels (outputs 4x), the first strided."""
    for block in range(blocks):
        step = stride if block == 0 else 1
        prefix = f"{name}.{block}"
        y = _conv_bn(g, x, channels, width, 1, 1, f"{prefix}.1", True)
        y = _conv_bn(g, y, width, width, 3, step, f"{prefix}.2", True)
        y = _conv_bn(g, y, width, 4 * width, 1, 1, f"{prefix}.3", False)
        if block == 0:
            shortcut = _conv_bn(g, x, channels, 4 * width, 1, step, f"{prefix}.downsample", False)
        else:
            shortcut = x
        x = g.op("Relu", [g.op("Add", [y, shortcut])])
        channels = 4 * width
    return x


def build_resnet50(config: ResNet50Config = ResNet50Config()) -> onnx.ModelProto:
    c = config
    g = GraphBuilder("resnet50", c.seed, dtype=c.dtype)
    x = g.input("pixel_values", g.elem, [c.batch, 3, c.image, c.image])
    x = _conv_bn(g, x, 3, c.width, 7, 2, "conv1", True)
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    channels = c.width
    widths = tuple(c.width * scale for scale in (1, 2, 4, 8))
    for stage, (width, blocks) in enumerate(zip(widths, (3, 4, 6, 3))):
        x = resnet_stage(g, x, channels, width, blocks, 1 if stage == 0 else 2, f"layer{stage + 1}")
        channels = 4 * width
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1)
    logits = g.linear(x, channels, c.classes, "fc")
    g.output("logits", logits, [c.batch, c.classes])
    return g.model()
