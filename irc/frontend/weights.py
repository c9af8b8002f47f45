"""Side weights: how an imported model's constants travel next to its IR.

Convention (what `irc-translate` writes and `irc-run` reads):

* every constant a `te` op reads is a function argument with the attributes
  ``{irc.name = "<onnx name>", irc.weight}``; weights come after the inputs;
* the module carries ``irc.weights = "<file>.weights.npz"``, a path relative to the
  IR file (or absolute), of an ``.npz`` holding one array per weight, by name;
* `irc-translate -o model.mlir` writes ``model.weights.npz`` beside it, so the
  printed IR stays readable whatever the model's size.

`irc.runner.run_function` fills weight arguments the caller did not pass from that
file (`load_weights`).
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Mapping

import numpy as np
from xdsl.dialects.builtin import ModuleOp, StringAttr

from irc.output import write_atomically

WEIGHTS_ATTR = "irc.weights"
"""Module attribute: the path of the side ``.npz`` of weights."""
WEIGHT_ATTR = "irc.weight"
"""Unit argument attribute marking an argument as a weight."""


class WeightsError(Exception):
    pass


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


def load_weights(path: str) -> dict[str, np.ndarray]:
    if not os.path.isfile(path):
        raise WeightsError(f"the module's weights file {path} does not exist")
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except (ValueError, OSError, zipfile.BadZipFile) as error:
        raise WeightsError(f"{path} is not a readable .npz file of weights ({error})") from None
