"""T10 intra-operator plans for GEMMs on the IPU Mk2 (T10 s4.3.1; seeds/003).

For the T10 benchmark problem (C[m,n] += A[m,k]*B[k,n], m=32, k=5120, n=15360, fp16) and
a table of real GEMM layers, print the chosen plan, its predicted time, and the ratios
against three references measured in the same run:
  x no-rot  best plan with every f_t = 1 (every sub-tensor replicated, VGM-like) / ours
  x 1-D     best plan partitioning a single axis (rotation allowed) / ours
  x roof    ours / compute roofline (iteration points at the chip's peak MAC rate)
plus the search time and the number of plans scored.

    PYTHONPATH=. python benchmarks/t10_matmul.py [--cost t10|seed003] [--device ipu-mk2]
"""

from __future__ import annotations

import argparse
import sys
import time

from irc.devices import load_device
from irc.planner import PlanError, baselines, format_plan_seed003, matmul_spec, search
from irc.progress import track

SEED003 = ("seed003 problem", 32, 5120, 15360)


def gemm_table() -> list[tuple[str, int, int, int]]:
    """(name, m, k, n) of real layers; m = batch * sequence tokens."""
    rows = [SEED003]
    for model, hidden, ffn, seq in (("bert-base", 768, 3072, 128), ("bert-large", 1024, 4096, 384)):
        for batch in (1, 8, 32):
            m = batch * seq
            rows += [
                (f"{model} b{batch} qkv", m, hidden, 3 * hidden),
                (f"{model} b{batch} ffn1", m, hidden, ffn),
                (f"{model} b{batch} ffn2", m, ffn, hidden),
            ]
    for model, hidden, ffn in (("gpt2-xl", 1600, 6400), ("gpt-6.7b", 4096, 16384), ("llama2-13b", 5120, 13824)):
        for label, m in (("decode b16", 16), ("prefill 2k", 2048)):
            rows += [
                (f"{model} {label} qkv", m, hidden, 3 * hidden),
                (f"{model} {label} ffn1", m, hidden, ffn),
                (f"{model} {label} ffn2", m, ffn, hidden),
            ]
    return rows


def compact(plan) -> str:
    t = plan.temporal_factor
    return (
        f"F_op={list(plan.op_factors)} A={t('A','m')},{t('A','k')} "
        f"B={t('B','k')},{t('B','n')} C={t('C','m')},{t('C','n')}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cost", default="t10", choices=["t10", "seed003"])
    parser.add_argument("--device", default="ipu-mk2")
    args = parser.parse_args(argv)
    device = load_device(args.device)

    spec = matmul_spec(*SEED003[1:])
    print(f"# T10 benchmark problem on {device.name}, {args.cost} cost model")
    result = search(spec, device, args.cost)
    best = result.best
    print(format_plan_seed003(spec, best))
    print(
        f"# predicted {best.seconds * 1e6:.1f} us ({best.cycles:.0f} cycles: "
        + ", ".join(f"{k} {v:.0f}" for k, v in best.score.cost.as_dict().items() if k != "total")
        + f"), {best.memory_per_core / 1024:.1f} KiB/core, {best.score.cores} cores; "
        f"search {result.seconds:.2f} s over {result.plans_scored} plans, "
        f"{len(result.pareto)} on the Pareto frontier"
    )
    print()

    header = (
        f"{'layer':<28} {'m':>6} {'k':>6} {'n':>6}  {'plan':<52} {'time us':>9} {'KiB':>6}"
        f" {'x no-rot':>8} {'x 1-D':>7} {'x roof':>7} {'search s':>8} {'plans':>8}"
    )
    print(header)
    print("-" * len(header))
    rows = gemm_table()
    for name, m, k, n in track(rows, len(rows), "gemm shapes", label=lambda row: row[0]):
        spec = matmul_spec(m, k, n)
        try:
            result = search(spec, device, args.cost)
        except PlanError as error:
            print(f"{name:<28} {m:>6} {k:>6} {n:>6}  no plan: {error}")
            continue
        best = result.best
        refs = baselines(spec, device, args.cost)

        def ratio(plan, width: int) -> str:
            return f"{plan.seconds / best.seconds:{width}.2f}" if plan is not None else f"{'none':>{width}}"

        print(
            f"{name:<28} {m:>6} {k:>6} {n:>6}  {compact(best):<52} {best.seconds * 1e6:9.1f}"
            f" {best.memory_per_core / 1024:6.1f} {ratio(refs.no_rotation, 8)} {ratio(refs.one_dimensional, 7)}"
            f" {best.seconds / refs.roofline_seconds:7.2f} {result.seconds:8.2f} {result.plans_scored:8d}"
        )
        sys.stdout.flush()
    print()
    print("x no-rot, x 1-D: baseline time / chosen plan time ('none': no such plan fits);")
    print("x roof: chosen plan time / compute roofline. Baselines search with no parallelism floor.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
