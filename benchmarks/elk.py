"""ELK's evaluation (seeds/004 s6.1-s6.3) in irc's planner: LLM decoding on chips with HBM.

For Llama2-13B, Gemma2-27B (GQA), OPT-30B, Llama2-70B (GQA) decoding at batch 32 and
sequence 2048, and DiT-XL, one chip's share of the model under 4-way model parallelism
(ELK s5) on ``ipu-mk2-hbm`` (a quarter of ``ipu-pod4-hbm``: 1,472 cores, 4 TB/s HBM),
each design of s6.1 in the same model (``irc.planner.preload``, ``irc.planner.elk``):

    Basic    fastest plans, preload only the next op in the space left
    Static   T10 with a fixed execution/preload split, swept (best kept)
    ELK-Dyn  inductive scheduling (s4.2) + cost-aware SRAM split (s4.3)
    ELK-Full ELK-Dyn + preload reordering (s4.4)
    Ideal    no memory or interconnect contention (a bound)

Columns: per-token latency (ms), % of Ideal, speedup of ELK-Full over Basic and Static,
HBM utilisation (bytes read / (HBM bandwidth x latency)), exchange utilisation (cycles
the exchange is busy with shifts, distribution and preload delivery / latency), compile
time (plan search + scheduling) and peak RSS. The paper reports 94.84% of Ideal and
1.87x / 1.37x over Basic / Static on average (on an emulated IPU-POD4).

    PYTHONPATH=. python benchmarks/elk.py [--models llama2-13b,dit-xl] [--layers N]
        [--device ipu-mk2-hbm] [--batch 32] [--seq 2048] [--chips 4] [--scale 1]
        [--max-displacement N] [--max-orders N] [--json out.json]

Modelling notes: the relayouts of activations between ops are not charged (activations
stay on chip, ELK schedules weights and KV caches); identical layers share one plan
search; ELK-Full tries every preload order of s4.4's pruned tree (the paper; it ranks
them on the first three layers and plans the best three whole), ``--max-displacement N``
moves a preload at most N places instead (the artifact's bounded reordering,
IPU_COST_FACTS s6) and ``--max-orders N`` keeps the N orders nearest execution order.
Ideal's exchange utilisation counts its fastest plans' shifts and its smallest preload
states' delivery (ELK models Ideal with separate interconnects, s6.2).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time

from irc.devices.topology import preload_seconds_per_byte
from irc.planner.elk import DESIGNS, elk_plan, preload_ops
from irc.planner.llm import MODELS, workload
from irc.planner.op_table import FrontierCache

LABELS = {"basic": "Basic", "static": "Static", "dyn": "ELK-Dyn", "full": "ELK-Full", "ideal": "Ideal"}


def utilisation(ops, decision, device) -> tuple[float, float]:
    """(HBM, exchange) utilisation of a design's plan over its latency."""
    latency = decision.latency_cycles
    hbm_cycles = sum(op.hbm_bytes for op in ops) / device.offchip.bytes_per_s * device.clock_hz
    per_byte = preload_seconds_per_byte(device) * device.clock_hz
    if decision.plan is None:  # Ideal: the fastest plans' shifts and the smallest states' delivery
        exchange = sum(float(op.exchange_cycles[int(op.exec_cycles.argmin())]) + op.min_preload() * per_byte
                       for op in ops)
        return hbm_cycles / latency, min(1.0, exchange / latency)
    plan = decision.plan
    exchange = 0.0
    for op, j, r in zip(ops, plan.exec_plan, plan.preload_plan):
        exchange += float(op.exchange_cycles[j]) + float(op.distribute[r, j]) + float(op.preload_bytes[r]) * per_byte
    return hbm_cycles / latency, min(1.0, exchange / latency)


def run_model(name: str, device: str, batch: int, seq: int, layers: int | None, cost: str = "t10",
              displacement: int | None = None, max_orders: int | None = None, chips: int = 4,
              scale: int = 1) -> dict:
    started = time.perf_counter()
    model, layer_of = workload(name, batch=batch, seq=seq, chips=chips, layers=layers, factor=scale)
    cache = FrontierCache(device, cost)
    ops = preload_ops(model, cache, layer_of)
    search_seconds = time.perf_counter() - started
    row = {"model": name, "ops": len(model.ops), "searches": cache.searches, "search_seconds": search_seconds,
           "designs": {}}
    clock = cache.device.clock_hz
    for design in DESIGNS:
        t = time.perf_counter()
        decision = elk_plan(model, cache, design, ops=ops, max_displacement=displacement, max_orders=max_orders)
        hbm, exchange = utilisation(ops, decision, cache.device)
        row["designs"][design] = {
            "latency_ms": decision.latency_cycles / clock * 1e3,
            "hbm_utilisation": hbm, "exchange_utilisation": exchange,
            "schedule_seconds": time.perf_counter() - t, "orders_tried": decision.orders_tried,
        }
    designs = row["designs"]
    ideal = designs["ideal"]["latency_ms"]
    for design in designs.values():
        design["of_ideal"] = ideal / design["latency_ms"]
    full = designs["full"]["latency_ms"]
    row["speedup_over_basic"] = designs["basic"]["latency_ms"] / full
    row["speedup_over_static"] = designs["static"]["latency_ms"] / full
    row["compile_seconds"] = time.perf_counter() - started
    row["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return row


def print_table(rows: list[dict], out=None) -> None:
    out = sys.stdout if out is None else out
    header = f"{'model':<12} {'design':<9} {'ms/token':>9} {'% Ideal':>8} {'HBM util':>9} {'xchg util':>9}"
    print(header, file=out)
    print("-" * len(header), file=out)
    for row in rows:
        for design, data in row["designs"].items():
            print(f"{row['model']:<12} {LABELS[design]:<9} {data['latency_ms']:>9.3f} {100 * data['of_ideal']:>7.2f}% "
                  f"{100 * data['hbm_utilisation']:>8.1f}% {100 * data['exchange_utilisation']:>8.1f}%", file=out)
        print(f"{'':<12} ELK-Full over Basic {row['speedup_over_basic']:.2f}x, over Static "
              f"{row['speedup_over_static']:.2f}x; {row['ops']} ops, {row['searches']} plan searches, compile "
              f"{row['compile_seconds']:.1f} s, peak RSS {row['peak_rss_mib']:.0f} MiB", file=out)
    if rows:
        n = len(rows)
        mean = lambda key: sum(r[key] for r in rows) / n  # noqa: E731
        of_ideal = sum(r["designs"]["full"]["of_ideal"] for r in rows) / n
        print(f"mean: ELK-Full {100 * of_ideal:.2f}% of Ideal, {mean('speedup_over_basic'):.2f}x over Basic, "
              f"{mean('speedup_over_static'):.2f}x over Static (ELK paper: 94.84%, 1.87x, 1.37x)", file=out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--device", default="ipu-mk2-hbm")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=None, help="override every model's depth")
    parser.add_argument("--chips", type=int, default=4, help="model-parallel chips sharing each model (ELK s5)")
    parser.add_argument("--scale", type=int, default=1, help="divide every model's widths by this")
    parser.add_argument("--max-displacement", type=int, default=-1,
                        help="how far ELK-Full may move a preload from its place (the artifact's bounded "
                             "reordering; -1, the default: the paper's whole tree)")
    parser.add_argument("--max-orders", type=int, default=-1,
                        help="ELK-Full plans at most this many orders, the nearest to execution order (-1: all)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    rows = []
    for name in args.models.split(","):
        if name not in MODELS:
            print(f"error: unknown model '{name}'; known: {', '.join(MODELS)}", file=sys.stderr)
            return 1
        displacement = None if args.max_displacement < 0 else args.max_displacement
        orders = None if args.max_orders < 0 else args.max_orders
        rows.append(run_model(name, args.device, args.batch, args.seq, args.layers, displacement=displacement,
                              max_orders=orders, chips=args.chips, scale=args.scale))
        print(f"{name}: done in {rows[-1]['compile_seconds']:.1f} s", file=sys.stderr)
    print_table(rows)
    if args.json:
        with open(args.json, "w") as stream:
            json.dump(rows, stream, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
