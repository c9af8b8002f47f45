"""A ResNet-50 bottleneck stage: `blocks` bottlenecks (1x1 -> 3x3 -> 1x1 convs with
inference BatchNorm and ReLU), the first with a strided projection shortcut."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto

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
    seed: int = 0


def _conv_bn(g: GraphBuilder, x: str, c_in: int, c_out: int, kernel: int, stride: int, prefix: str, relu: bool) -> str:
    w = g.initializer(
        f"{prefix}.conv.weight",
        (g.rng.standard_normal((c_out, c_in, kernel, kernel)) * np.sqrt(2.0 / (c_in * kernel * kernel))).astype(np.float32),
    )
    pad = kernel // 2
    y = g.op("Conv", [x, w], kernel_shape=[kernel, kernel], strides=[stride, stride], pads=[pad] * 4)
    params = [
        g.initializer(f"{prefix}.bn.weight", (1 + 0.1 * g.rng.standard_normal(c_out)).astype(np.float32)),
        g.initializer(f"{prefix}.bn.bias", (0.1 * g.rng.standard_normal(c_out)).astype(np.float32)),
        g.initializer(f"{prefix}.bn.running_mean", (0.1 * g.rng.standard_normal(c_out)).astype(np.float32)),
        g.initializer(f"{prefix}.bn.running_var", (1 + 0.1 * g.rng.random(c_out)).astype(np.float32)),
    ]
    y = g.op("BatchNormalization", [y, *params], epsilon=1e-5)
    return g.op("Relu", [y]) if relu else y


def build_resnet_stage(config: ResNetStageConfig = ResNetStageConfig()) -> onnx.ModelProto:
    c = config
    g = GraphBuilder("resnet50_stage", c.seed)
    x = g.input("input", TensorProto.FLOAT, [c.batch, c.in_channels, c.size, c.size])
    channels = c.in_channels
    for block in range(c.blocks):
        stride = c.stride if block == 0 else 1
        prefix = f"layer.{block}"
        y = _conv_bn(g, x, channels, c.width, 1, 1, f"{prefix}.1", True)
        y = _conv_bn(g, y, c.width, c.width, 3, stride, f"{prefix}.2", True)
        y = _conv_bn(g, y, c.width, 4 * c.width, 1, 1, f"{prefix}.3", False)
        if block == 0:
            shortcut = _conv_bn(g, x, channels, 4 * c.width, 1, stride, f"{prefix}.downsample", False)
        else:
            shortcut = x
        x = g.op("Relu", [g.op("Add", [y, shortcut])])
        channels = 4 * c.width
    out = (c.size - 1) // c.stride + 1
    g.output("output", x, [c.batch, 4 * c.width, out, out])
    return g.model()
