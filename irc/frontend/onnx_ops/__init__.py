"""ONNX operators as tensor expressions: one converter per op type.

A converter receives the importer, the node and its input values (a `Tensor` for a
run-time value, a numpy array for a constant, None for an omitted optional input)
and returns the node's output values. Most emit `te.op`s (T10 §3.2: "operators as
tensor expressions"); the few that no expression can state emit `te.opaque` with a
kernel in `irc.interpreter.kernels` (T10 §4.2). Nodes whose inputs are all constant
are folded with ``onnx.reference`` before any converter runs, which removes shape
arithmetic (Shape -> Gather -> Concat -> Reshape chains) from exported graphs.

The converters live by family, each module registering its own with ``@converter``
(``registry``): ``elementwise``, ``contractions``, ``convolution`` (and pooling),
``reductions`` (and normalisations), ``movement``, ``opaque`` (vendor kernels) and
``quantized`` (INT8 and DLRM's embedding tables); ``geometry`` holds the index
arithmetic several of them share. Importing this package registers them all.
"""

from irc.frontend.onnx_ops import (  # noqa: F401 (each module registers its converters)
    contractions,
    convolution,
    elementwise,
    movement,
    opaque,
    reductions,
)
from irc.frontend.onnx_ops.quantized import CUSTOM_DOMAINS
from irc.frontend.onnx_ops.registry import convert_node, converter, CONVERTERS, NeedsConstant, supported_ops

__all__ = ["CONVERTERS", "CUSTOM_DOMAINS", "NeedsConstant", "convert_node", "converter", "supported_ops"]
