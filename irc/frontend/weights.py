"""Side weights: how an imported model's constants travel next to its IR.

Convention (what `irc-translate` writes and `irc-run` reads):

* every constant a `te` op reads is a function argument with the attributes
  ``{irc.name = "<onnx name>", irc.weight}``; weights come after the inputs;
* the module carries ``irc.weights = "<file>.weights.npz"``, a path relative to the
  IR file (or absolute), of an ``.npz`` holding one array per weight, by name;
* `irc-translate -o model.mlir` writes ``model.weights.npz`` beside it, so the
  printed IR stays readable whatever the model's size.

`irc.runner.run_function` fills weight arguments the caller did not pass from that
file (`irc.runner.read_arrays`: only the weights the function reads, each checked
from its header before it is loaded).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np
from xdsl.dialects.builtin import ModuleOp, StringAttr

from irc.output import write_atomically

WEIGHTS_ATTR = "irc.weights"
"""Module attribute: the path of the side ``.npz`` of weights."""
WEIGHT_ATTR = "irc.weight"
"""Unit argument attribute marking an argument as a weight."""


def weights_path_for(ir_path: str) -> str:
    """``out.mlir`` -> ``out.weights.npz`` (beside the IR file)."""
    root, ext = os.path.splitext(ir_path)
    return (root if ext == ".mlir" else ir_path) + ".weights.npz"


def save_weights(path: str, weights: Mapping[str, np.ndarray]) -> None:
    """Write ``weights`` to ``path`` (exactly: numpy appends no suffix to a stream), all at
    once (`irc.output.write_atomically`), streamed: no copy of the archive in memory."""
    write_atomically(path, lambda stream: np.savez(stream, **dict(weights)))


def attach_weights(module: ModuleOp, reference: str) -> None:
    module.attributes[WEIGHTS_ATTR] = StringAttr(reference)


def module_weights_file(module: ModuleOp, base_dir: str | None) -> str | None:
    """The absolute path of the module's weights file, or None if it names none."""
    attr = module.attributes.get(WEIGHTS_ATTR)
    if not isinstance(attr, StringAttr):
        return None
    path = attr.data
    if not os.path.isabs(path):
        path = os.path.join(base_dir or os.getcwd(), path)
    return path
