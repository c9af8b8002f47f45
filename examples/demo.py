"""`make demo`: run a small `te` program on the reference interpreter and check it.

The program (examples/mlp.mlir) is parsed and verified, executed by the xDSL
interpreter with irc's `te` semantics, and compared against plain numpy.
"""

from pathlib import Path

import numpy as np

from irc.runner import parse_module, random_inputs, find_function, run_function

EXAMPLE = Path(__file__).with_name("mlp.mlir")


def main() -> int:
    module = parse_module(EXAMPLE.read_text(), str(EXAMPLE))
    inputs = random_inputs(find_function(module, "main"), seed=0)
    results = run_function(module, inputs, "main")
    x, w1, b1, w2 = (inputs[n] for n in ("x", "w1", "b1", "w2"))
    reference = np.maximum(x @ w1 + b1, 0) @ w2
    error = float(np.max(np.abs(results["y"] - reference)))
    print(f"program   : {EXAMPLE.name} (matmul + bias + relu + matmul, te level)")
    print(f"result y  : shape {results['y'].shape}, dtype {results['y'].dtype}")
    print(f"y[0, :4]  : {np.array2string(results['y'][0, :4], precision=4)}")
    print(f"max |interpreter - numpy| = {error:.2e}")
    ok = error <= 1e-4 * max(1.0, float(np.max(np.abs(reference))))
    print("check     : " + ("OK, matches numpy" if ok else "MISMATCH"))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
