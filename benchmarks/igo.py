"""IGO (MICRO'23) on irc: the backward pass of each workload's layers on the NPUs of
Table 3, baseline (dX then dW) vs interleaving (§4.2) vs + rearrangement (§4.3) vs
+ partitioning (§5), measured in one run on irc's scratchpad model (irc.cost.igo).

    .venv/bin/python benchmarks/igo.py [--models res,bert] [--policy lru|belady] [--json out.json]

Each workload (benchmarks/igo_workloads.py, batch 4 on the edge NPU, 8 per core on the
server NPU, §6.1 and §6.3) goes through te-autodiff and igo-fuse; every fused layer's
forward GEMM X(M,K)·W(K,N) (im2col view) is priced in each configuration and the layers'
cycles and DRAM bytes are summed per model. Ratios are against the baseline of the same
device, batch and bandwidth; the average is the mean of the per-model ratios, printed
beside the paper's. Rearrangement uses irc's cost choice; Algorithm 1's choice is
priced too and the table says how often the two differ.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from functools import lru_cache

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.igo_workloads import workloads  # noqa: E402
from irc.cost.igo import FUSED_ORDERS, SCHEMES, Layer, evaluate, paper_order  # noqa: E402
from irc.devices import load_device  # noqa: E402
from irc.dialects.igo import GradPairOp  # noqa: E402
from irc.passes.igo_fuse import IgoFuse  # noqa: E402
from irc.passes.te_autodiff import TeAutodiff  # noqa: E402
from irc.progress import Progress  # noqa: E402
from irc.runner import make_context, parse_module  # noqa: E402

PAPER = {"npu-edge": -29.3, "npu-server": -14.5, "npu-server x4": -23.7}
"""The paper's average execution-time changes (§6.2, §6.3)."""
PAPER_BANDWIDTH = {150: -14.5, 75: -19.3, 37.5: -22.7}
PAPER_CORES = {1: -14.5, 4: -23.7, 8: -27.7}


def layers_of(text: str) -> list[Layer]:
    """The forward GEMMs of the layers whose dX/dW pair igo-fuse fuses."""
    module = parse_module(text, "workload.mlir")
    TeAutodiff().apply(make_context(), module)
    IgoFuse(order="interleave").apply(make_context(), module)
    found = []
    for op in module.walk():
        if isinstance(op, GradPairOp):
            dims = dict(part.split("=") for part in op.attributes["irc.gemm"].data.split())
            width = 2 if "f16" in str(op.dy.type) else 4
            found.append(Layer(int(dims["M"]), int(dims["K"]), int(dims["N"]), width))
    return found


@lru_cache(maxsize=None)
def _cost(layer: Layer, device, order: str, scheme, parts, policy: str):
    return evaluate(layer, device, order, scheme, parts, policy=policy)


def price(layers: list[Layer], device, policy: str) -> dict:
    """Summed cycles and DRAM bytes of every configuration, and how often Algorithm 1
    and the cost model choose differently."""
    totals = {k: [0.0, 0] for k in ("baseline", "interleave", "rearrange", "rearrange-paper", "partition")}
    differ = 0
    single = device.cores == 1
    for layer in layers:
        costs = {o: _cost(layer, device, o, None, None, policy) for o in ("baseline", *FUSED_ORDERS)}
        chosen = min(("interleave", "dx-major", "dw-major"), key=lambda o: costs[o].cycles)
        paper = paper_order(layer)
        differ += chosen != paper
        options = [(s, p) for p in ((1, 2, 4) if single else (device.cores,)) for s in SCHEMES
                   if not (p == 1 and s != SCHEMES[0])]
        partitioned = min(
            (_cost(layer, device, chosen, s if (p > 1 or not single) else None, p, policy) for s, p in options),
            key=lambda c: c.cycles,
        )
        for key, cost in (("baseline", costs["baseline"]), ("interleave", costs["interleave"]),
                          ("rearrange", costs[chosen]), ("rearrange-paper", costs[paper]),
                          ("partition", partitioned)):
            totals[key][0] += cost.cycles
            totals[key][1] += cost.dram_bytes
    return {"totals": totals, "layers": len(layers), "paper_differs": differ}


def ratios(result: dict) -> dict:
    base_cycles, base_bytes = result["totals"]["baseline"]
    return {k: (c / base_cycles, b / base_bytes) for k, (c, b) in result["totals"].items()}


def table(title: str, rows: dict[str, dict], paper: float | None) -> list[str]:
    lines = [f"\n{title}", f"{'model':<8}{'layers':>7}{'interleave':>12}{'+rearrange':>12}{'(Alg. 1)':>10}"
             f"{'+partition':>12}{'DRAM':>8}{'Alg1!=cost':>11}"]
    averages = {k: 0.0 for k in ("interleave", "rearrange", "rearrange-paper", "partition")}
    dram = 0.0
    for name, result in rows.items():
        r = ratios(result)
        for k in averages:
            averages[k] += r[k][0] / len(rows)
        dram += r["partition"][1] / len(rows)
        lines.append(f"{name:<8}{result['layers']:>7}{r['interleave'][0]:>12.3f}{r['rearrange'][0]:>12.3f}"
                     f"{r['rearrange-paper'][0]:>10.3f}{r['partition'][0]:>12.3f}{r['partition'][1]:>8.3f}"
                     f"{result['paper_differs']:>7}/{result['layers']:<3}")
    change = (averages["partition"] - 1) * 100
    lines.append(f"{'average':<8}{'':>7}{averages['interleave']:>12.3f}{averages['rearrange']:>12.3f}"
                 f"{averages['rearrange-paper']:>10.3f}{averages['partition']:>12.3f}{dram:>8.3f}")
    if paper is not None:
        lines.append(f"time change with all three: ours {change:+.1f}%, paper {paper:+.1f}%")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="res,mob,bert,T5,yolo,ncf", help="comma-separated workload names")
    parser.add_argument("--policy", choices=["lru", "belady"], default="lru", help="scratchpad replacement")
    parser.add_argument("--json", help="also write the numbers to this file")
    args = parser.parse_args(argv)
    names = args.models.split(",")
    edge, server = load_device("npu-edge"), load_device("npu-server")
    configs = [("npu-edge", edge, "edge", 4), ("npu-server", server, "server", 8),
               ("npu-server x4", server.with_cores(4), "server", 32)]
    sweeps = [(f"npu-server {bw} GB/s", server.with_bandwidth(bw * 1e9), "server", 8) for bw in (75, 37.5)]
    cores = [(f"npu-server x{n}", server.with_cores(n), "server", 8 * n) for n in (2, 8)]
    jobs = configs + sweeps + cores
    results: dict[str, dict] = {}
    with Progress(len(jobs) * len(names), "igo") as progress:
        for title, device, npu, batch in jobs:
            built = workloads(npu, batch)
            rows = {}
            for name in names:
                progress.advance(f"{title} {name}")
                rows[name] = price(layers_of(built[name]), device, args.policy)
            results[title] = rows
    out = [f"IGO backward pass on irc's scratchpad model ({args.policy} replacement); "
           "times and DRAM bytes are ratios to the baseline (dX then dW) on the same device"]
    for title, _, _, _ in configs:
        out += table(title, results[title], PAPER.get(title))
    out.append("\nbandwidth sweep (npu-server, 1 core): time change with all three, ours vs paper")
    for bw, title in ((150, "npu-server"), (75, "npu-server 75 GB/s"), (37.5, "npu-server 37.5 GB/s")):
        mean = sum(ratios(r)["partition"][0] for r in results[title].values()) / len(names)
        out.append(f"  {bw:>6} GB/s: ours {(mean - 1) * 100:+6.1f}%  paper {PAPER_BANDWIDTH[bw]:+.1f}%")
    out.append("core counts (npu-server): time change with all three, ours vs paper")
    for n, title in ((1, "npu-server"), (2, "npu-server x2"), (4, "npu-server x4"), (8, "npu-server x8")):
        mean = sum(ratios(r)["partition"][0] for r in results[title].values()) / len(names)
        paper = f"paper {PAPER_CORES[n]:+.1f}%" if n in PAPER_CORES else ""
        out.append(f"  {n} core(s): ours {(mean - 1) * 100:+6.1f}%  {paper}")
    print("\n".join(out))
    if args.json:
        data = {title: {name: {"layers": r["layers"], "paper_differs": r["paper_differs"],
                               "ratios": {k: {"time": t, "dram": b} for k, (t, b) in ratios(r).items()},
                               "totals": {k: {"cycles": c, "dram_bytes": b} for k, (c, b) in r["totals"].items()}}
                        for name, r in rows.items()} for title, rows in results.items()}
        with open(args.json, "w") as handle:
            json.dump(data, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
