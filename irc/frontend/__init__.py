"""Frontends: models from other formats into `te` IR (seed 004 §5: models come in
through ONNX). `import_onnx`/`import_model` translate an ONNX graph; weights travel
in a side ``.npz`` (`irc.frontend.weights`)."""

from irc.frontend.onnx_import import (
    ImportResult,
    OnnxImportError,
    import_model,
    import_onnx,
    load_model,
    parse_shape_overrides,
)

__all__ = [
    "ImportResult",
    "OnnxImportError",
    "import_model",
    "import_onnx",
    "load_model",
    "parse_shape_overrides",
]
