"""Write the full-size benchmark models: ``python -m irc.workloads.graphs OUT_DIR``."""

import os
import sys

import onnx

from . import MODELS


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m irc.workloads.graphs OUT_DIR", file=sys.stderr)
        return 1
    os.makedirs(argv[0], exist_ok=True)
    for name, (build, config) in MODELS.items():
        path = os.path.join(argv[0], f"{name}.onnx")
        onnx.save(build(config()), path)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
