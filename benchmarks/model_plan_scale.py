"""Model-wide planning at scale: BERT-large (24 layers, batch 8, sequence 384) on the IPU Mk2.

Prints the wall time and peak RSS of T10's Algorithm 1 over the whole model (identical
layers share one frontier search per op signature), then the end-to-end and per-layer
times of: irc (Algorithm 1, T10 s4.3.2), the artifact's reverse walk, a PopART-style VGM
baseline, a Roller-style baseline, and every op at its fastest plan (memory ignored).

    PYTHONPATH=. python benchmarks/model_plan_scale.py [--layers 24] [--batch 8] [--seq 384]
        [--cost t10|seed003] [--device ipu-mk2] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time

from irc.cost import CostModelError
from irc.planner.baselines_model import fastest_bound, roller_plan, vgm_plan
from irc.planner.bert import bert_model
from irc.planner.model import ModelFitError, plan_model
from irc.planner.op_table import FrontierCache


def progress(done: int, total: int, name: str) -> None:
    if sys.stderr.isatty():
        width = 30
        filled = width * done // total
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {name[:30]:<30}")
        if done == total:
            sys.stderr.write("\n")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=24)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=384)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--ffn", type=int, default=4096)
    parser.add_argument("--device", default="ipu-mk2")
    parser.add_argument("--cost", default="t10")
    parser.add_argument("--json", help="write every plan's to_dict() here")
    args = parser.parse_args(argv)

    model = bert_model(args.layers, args.batch, args.seq, args.hidden, args.heads, args.ffn)
    print(f"{model.name}: {len(model.ops)} ops, {model.weight_bytes() / 2**20:.1f} MiB of weights, "
          f"device {args.device}, cost model {args.cost}")
    cache = FrontierCache(args.device, args.cost)
    started = time.perf_counter()
    try:
        irc = plan_model(model, args.device, args.cost, cache=cache, progress=progress)
    except (ModelFitError, CostModelError) as error:
        print(f"irc: {error}")
        return 1
    planned = time.perf_counter() - started
    print(f"irc planning: {planned:.1f} s wall ({irc.searches} frontier searches for "
          f"{irc.unique_signatures} op signatures, {len(irc.trajectory)} Algorithm 1 states), "
          f"peak RSS {peak_rss_mb():.0f} MB")
    print(f"irc memory per core: idle {irc.idle_bytes} B, peak {irc.peak_bytes} B of {irc.sram_bytes} B")

    results = {"irc": irc}
    started = time.perf_counter()
    results["artifact"] = plan_model(model, args.device, args.cost, cache=cache, direction="artifact")
    print(f"artifact walk: {time.perf_counter() - started:.1f} s")
    for name, baseline in (("vgm", vgm_plan), ("roller", roller_plan), ("fastest", fastest_bound)):
        started = time.perf_counter()
        try:
            results[name] = baseline(model, args.device, args.cost, cache=cache)
        except ModelFitError as error:
            results[name] = None
            print(f"{name}: does not fit: {error}")
            continue
        print(f"{name} baseline: {time.perf_counter() - started:.1f} s")

    print()
    print(f"{'plan':<10} {'total ms':>10} {'per layer ms':>13} {'x irc':>7}  breakdown")
    for name, result in results.items():
        if result is None:
            print(f"{name:<10} {'-':>10} {'-':>13} {'-':>7}  does not fit")
            continue
        total = result.seconds * 1e3
        if name in ("irc", "artifact"):
            detail = (f"active {result.active_seconds * 1e3:.2f}, setup {result.setup_seconds * 1e3:.2f}, "
                      f"relayout {result.relayout_seconds * 1e3:.2f} ms")
        elif name == "fastest":
            detail = "every op at its fastest plan; no setup, relayout or memory limit"
        else:
            detail = f"VGM load/store {result.transfer_seconds * 1e3:.2f} ms"
        print(f"{name:<10} {total:>10.3f} {total / args.layers:>13.3f} {result.seconds / irc.seconds:>7.2f}  {detail}")
    print(f"\npeak RSS {peak_rss_mb():.0f} MB")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({name: (r.to_dict() if r is not None else None) for name, r in results.items()}, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
