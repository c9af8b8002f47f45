"""Fusion chosen per point of the model-wide plan against the whole alternatives (issue
25, item 4), measured on the lit examples that train on an inter-core chip.

For each function with fused gradient pairs (after te-autodiff and igo-fuse, or as the
lit file states it), the planned cycles of what `rtensor-partition` lowers (each pair
fused or unfused as Algorithm 1's point for it says: `irc.planner.igo_choice`) beside
the function planned with every pair fused (fused plans only), every pair unfused, and
each pair alone unfused: the alternatives `decide_fusion` guards the per-point choice
against (never slower than any). One faster than the per-point result is flagged.

    PYTHONPATH=. .venv/bin/python benchmarks/igo_fusion_choice.py [files...]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from xdsl.dialects.func import FuncOp  # noqa: E402

from irc.cost import get_cost_model  # noqa: E402
from irc.devices import load_device  # noqa: E402
from irc.dialects import igo  # noqa: E402
from irc.lowering.igo_pair_partition import plan_pairs, unfuse  # noqa: E402
from irc.lowering.model_from_ir import function_model, plan_function  # noqa: E402
from irc.lowering.te_to_rtensor import RTensorPartition  # noqa: E402
from irc.lowering.igo_fuse import IgoFuse  # noqa: E402
from irc.passes.te_autodiff import TeAutodiff  # noqa: E402
from irc.planner.op_table import FrontierCache  # noqa: E402
from irc.plans.errors import PlanError  # noqa: E402
from irc.runner import make_context, parse_module  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = {  # lit file -> whether it is a training source (te-autodiff, igo-fuse first)
    "tests/filecheck/passes/training/ipu.mlir": True,
    "tests/filecheck/passes/training/ipu-plain-arguments.mlir": True,
    "tests/filecheck/passes/rtensor-partition/grad-pair.mlir": False,
}
DEVICE = "tiny16"


def prepared(text: str, training: bool):
    module = parse_module(text, "example.mlir")
    if training:
        for p in (TeAutodiff(), IgoFuse(device=DEVICE)):
            p.apply(make_context(), module)
    return module


def alternatives(text: str, training: bool) -> dict[str, float] | None:
    """Cycles of the function of `text` planned per point and as each whole alternative
    (None: no pair is fused by the per-pair comparison)."""
    chip, cost = load_device(DEVICE), get_cost_model("t10")
    cache = FrontierCache(chip, cost)

    def planned(unfused: set[int]) -> float:
        module = prepared(text, training)
        pairs = plan_pairs(module, chip, cost)
        ordered = [op for op in module.walk() if isinstance(op, igo.GradPairOp) and op in pairs]
        for k in unfused:
            del pairs[ordered[k]]
            unfuse(ordered[k], "measured")
        function = next(op for op in module.walk() if isinstance(op, FuncOp))
        try:
            return plan_function(function_model(function, pairs=pairs).model, cache).seconds * chip.clock_hz
        except PlanError:   # an alternative that does not plan (ModelFitError is one)
            return float("inf")

    module = prepared(text, training)
    count = len(plan_pairs(module, chip, cost))
    if not count:
        return None
    module = prepared(text, training)
    RTensorPartition(device=DEVICE).apply(make_context(), module)
    function = next(op for op in module.walk() if isinstance(op, FuncOp))
    found = {"per point": function.attributes["irc.planned_cycles"].value.data,
             "all fused": planned(set()), "all unfused": planned(set(range(count)))}
    if count > 1:
        found.update({f"pair {k} alone unfused": planned({k}) for k in range(count)})
    return found


def main(argv=None) -> int:
    files = (argv if argv is not None else sys.argv[1:]) or list(EXAMPLES)
    worse = 0
    for name in files:
        with open(os.path.join(ROOT, name)) as handle:
            chunks = handle.read().split("// -----")
        for k, chunk in enumerate(chunks):
            found = alternatives(chunk, EXAMPLES.get(name, False))
            if found is None:
                continue
            best = min(found.values())
            flag = "" if found["per point"] <= best * (1 + 1e-9) else "  <- a whole alternative is faster"
            worse += bool(flag)
            print(f"{name}#{k}: " + ", ".join(f"{key} {value:,.0f}" for key, value in found.items()) + flag)
    print(f"whole alternatives faster than the per-point choice: {worse}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
