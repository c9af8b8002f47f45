"""ELK's evaluation (seeds/004 s6.1-s6.3) in irc's planner: LLM decoding on chips with HBM.

For Llama2-13B, Gemma2-27B (GQA), OPT-30B, Llama2-70B (GQA) decoding at batch 32 and
sequence 2048 (each its published architecture written as te ops, with its LM head:
``irc.workloads.llm.decoder_te``), and DiT-XL, one chip's share of the model under 4-way
model parallelism (ELK s5) on ``ipu-mk2-hbm`` (a quarter of ``ipu-pod4-hbm``: 1,472 cores, 4 TB/s HBM),
each design of s6.1 in the same model (``irc.planner.preload``, ``irc.planner.elk``):

    Basic    fastest plans, preload only the next op in the space left
    Static   T10 with a fixed execution/preload split, swept (best kept)
    ELK-Dyn  inductive scheduling (s4.2) + cost-aware SRAM split (s4.3)
    ELK-Full ELK-Dyn + preload reordering (s4.4)
    Ideal    no memory or interconnect contention (a bound)

Per token of a decode loop (the next token's first layer's loads overlap this token's
last ops; ``irc.planner.elk.offchip_study``, the compiler's own accounting: activations
kept on chip across each op, relayouts between the chosen plans charged; ELK-Dyn and
ELK-Full also plan with the layout-matched candidates of the cheap ops,
``irc.planner.layout_match``, and keep the faster, as the compiler's own ELK plan,
``plan_offchip``, does). Columns:
latency (ms/token), % of Ideal, % of Ideal+R (Ideal paying the relayouts between ops the
design's plans pay: the paper's Ideal is the roofline of the same execution,
``ideal_with_relayouts``), ratio to the overlap bound (max of the HBM's bytes at its
bandwidth and every op's fastest execution: no schedule beats it), and utilisation per
resource (each a busy time over the latency, never above 100%): the HBM, the core links
(the ops' own shifts, syncs and output shuffles, distribution phases and relayouts), the
links from the HBM controllers (preload delivery, replicas broadcast), and "ic util",
ELK's interconnect utilisation (s6.3: 89.52% for ELK-Full): one link carrying both the
ops' transfers and the preloads, a core's port on an all-to-all
(``interconnect_utilisation``; none for Ideal, whose two interconnects the paper does not
compare); then ELK-Full's speedup over
Basic and Static, what its reorder search found, compile time and peak RSS. The paper
reports 94.84% of Ideal and 1.87x / 1.37x over Basic / Static on average (on an
emulated IPU-POD4).

    PYTHONPATH=. python benchmarks/elk.py [--models llama2-13b,dit-xl | --model FILE]
        [--layers N] [--device ipu-mk2-hbm] [--batch 32] [--seq 2048] [--chips 4]
        [--scale 1] [--max-displacement N] [--max-orders N] [--json out.json]

``--model FILE`` plans an .onnx or .mlir model (its arguments marked ``irc.weight`` and
the other arguments it reads are what it loads from HBM; identical layers are found by
their op signatures) instead of built-in ones. Each design also evaluates the weaker
design's schedule and keeps the better (Full <= Dyn <= Static <= Basic). ELK-Full tries
the 32 orders of s4.4's pruned tree nearest execution order (the compiler's budget,
``irc.planner.elk.REORDER_BUDGET``), ranked on the first three layers with the best
three planned whole; ``--max-orders N`` keeps N of them (-1: the whole tree, as the
paper), ``--max-displacement N`` moves a preload at most N places (the artifact's
bounded reordering, IPU_COST_FACTS s6).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import sys
import time
from functools import lru_cache

from irc.devices import DeviceError
from irc.devices.topology import preload_seconds_per_byte, replication
from irc.dse import DseError, Workload, allreduce_exec_cycles, chips_of, offchip_inputs, workload_model
from irc.planner.elk import DESIGNS, REORDER_BUDGET, offchip_study
from irc.planner.op_table import FrontierCache
from irc.plans.evaluate import check_plan
from irc.workloads.llm import MODELS

LABELS = {"basic": "Basic", "static": "Static", "dyn": "ELK-Dyn", "full": "ELK-Full", "ideal": "Ideal"}


def link_utilisation(study, decision, device) -> dict[str, float]:
    """Utilisation of one design's plan per resource over its latency (per token), each a
    busy time over the latency, so never above 1: ``hbm`` the HBM (bytes read at its
    bandwidth), ``core_links`` the exchange links the ops' own transfers use (their shifts,
    syncs and reductions, distribution phases and relayouts), ``hbm_links`` the busiest
    link delivering preloads from the HBM controllers (each op's preload-state bytes per
    core, replicas broadcast: ``irc.devices.topology.preload_seconds_per_byte``)."""
    clock, latency = device.clock_hz, decision.latency_cycles
    token = (study.ops if decision.preload_ops is None else decision.preload_ops)[study.prefix:]   # its plan's ops
    hbm = sum(op.hbm_bytes for op in token) / device.offchip.bytes_per_s * clock
    core = links = 0.0
    plan = decision.plan
    for t, op in enumerate(token):
        if plan is None:   # Ideal: its fastest plans, its smallest loads, no distribution
            j, r, extra = int(op.exec_cycles.argmin()), int(op.load_cycles.argmin()), 0.0
        else:
            i = study.prefix + t
            j, r = plan.exec_plan[i], plan.preload_plan[i]
            extra = float(plan.exec_cycles[i] - op.exec_cycles[j])   # its distribution phase and relayouts
        core += float(op.exchange_cycles[j]) + extra
        if op.hbm_bytes > 0:
            size = float(op.preload_bytes[r])
            links += size * preload_seconds_per_byte(device, replication(device, size, op.hbm_bytes)) * clock
    return {"hbm": hbm / latency, "core_links": core / latency, "hbm_links": links / latency}


@lru_cache(maxsize=64)
def _free_barriers(device) -> tuple:
    """``device`` with free barriers, at its shift rate and at twice it
    (``shuffle_transfer_cycles``)."""
    free = dataclasses.replace(device, sync_cycles=0)
    return free, dataclasses.replace(free, shift_cycles_per_byte=2 * device.shift_cycles_per_byte)


def shuffle_transfer_cycles(spec, plan, device) -> float:
    """Cycles an op's output shuffle moves data over the exchange (IPU_COST_FACTS s5: the
    resident output and the gathered partial sums, at the shift rate): the cost model's
    ``reduction`` term less its barriers and its partial-sum adds. That term is linear in
    the shift rate, so pricing the plan with free barriers at twice the rate adds exactly
    its transfers once more."""
    once, twice = _free_barriers(device)
    return (check_plan(spec, plan, twice, "t10").cost.reduction
            - check_plan(spec, plan, once, "t10").cost.reduction)


def shared_link_busy(windows, transfers, loads) -> float:
    """Cycles one link carrying both the operators' exchange and the preloads is busy: in
    each op's window ((start, end)) its own transfers (``transfers``, cycles) and the
    preload traffic streaming meanwhile, at most the window's length (a link carries no
    more; what does not fit is demand the schedule did not charge), plus the preload
    traffic outside every window. ``loads``: (start, end, link cycles, counted), each
    load's link cycles spread evenly over its interval; only the ``counted`` ones add
    their traffic outside the windows (the windows take every load's)."""
    def overlap(a0, a1, b0, b1):
        return max(0.0, min(a1, b1) - max(a0, b0))

    busy = 0.0
    for (start, end), own in zip(windows, transfers):
        streamed = sum(cycles * overlap(s, e, start, end) / (e - s) for s, e, cycles, _ in loads if e > s)
        busy += min(end - start, own + streamed)
    for s, e, cycles, counted in loads:
        if counted and e > s:
            inside = sum(overlap(s, e, start, end) for start, end in windows)
            busy += cycles * max(0.0, e - s - inside) / (e - s)
    return busy


def interconnect_utilisation(study, decision, device, specs) -> float | None:
    """ELK's interconnect utilisation (s6.3, Figure 18 (c), Figure 21; s3.3's per-core
    demand, inter-core transfer volume plus HBM-to-core volume, over time): the share of
    a design's per-token latency one link is busy with both flows it carries, the ops'
    own transfers (shifts, distribution phases, relayouts, output shuffles) and the
    preloads' delivery; the paper sums them on one interconnect, which is why it does
    not compare Ideal's two. The link: a core's port on an all-to-all exchange, the
    busiest link on a mesh (both flows' busiest, as the scheduler prices contention).
    ``specs``: the model's op specs by name (a decode loop's next-token copies are named
    ``next.<op>``, ``irc.planner.elk.loop_model``). None for Ideal; never above 1."""
    plan = decision.plan
    if plan is None:
        return None
    prefix = study.prefix
    load_start, load_end, exec_start, exec_end = plan.timeline()
    transfers = plan.transfer_cycles or [0.0] * len(plan.exec_plan)
    pressure = plan.load_pressure or [0.0] * len(plan.exec_plan)
    own = []
    for i in range(prefix, len(plan.exec_plan)):
        op = decision.ops[i]
        spec = specs.get(op.name) or specs.get(op.name.removeprefix("next."))
        shuffle = 0.0 if spec is None else shuffle_transfer_cycles(spec, op.active, device)
        own.append(transfers[i] + shuffle)
    windows = list(zip(exec_start[prefix:], exec_end[prefix:]))
    loads = [(load_start[k], load_end[k], pressure[k] * plan.load_cycles[k], k >= prefix)
             for k in range(len(plan.exec_plan))]
    # the token's traffic (its ops' loads, wherever they run) over its period; a first
    # token's loads can run before the period starts, hence the bound
    return min(1.0, shared_link_busy(windows, own, loads) / decision.latency_cycles)


def ideal_with_relayouts(study, decision) -> float:
    """Ideal's latency over the design's, Ideal paying the relayouts of activations
    between ops that the design's plans pay (``irc.planner.elk.with_relayouts``): irc's
    Ideal runs every op at its fastest plan with no relayout (``ideal_loop_latency``),
    while the paper's Ideal is the roofline of the same execution (ELK's artifact pays no
    relayouts, each op an output shuffle instead, which irc's Ideal pays too) without
    contention, memory limits or distribution phases. The larger of the design's ops'
    least loads and fastest executions plus its relayouts; at most 1."""
    if decision.plan is None:
        return 1.0
    ops = (study.ops if decision.preload_ops is None else decision.preload_ops)[study.prefix:]
    executions = sum(float(op.exec_cycles.min()) for op in ops) + relayout_cycles(study, decision)
    return min(1.0, max(sum(op.least_load() for op in ops), executions) / decision.latency_cycles)


def relayout_cycles(study, decision) -> float:
    """Cycles a token's ops spend relayouting activations between the design's plans:
    each op's cycles in the plan less its execute state's own and its distribution phase
    (what ``with_relayouts`` added; 0 for Ideal)."""
    plan = decision.plan
    if plan is None:
        return 0.0
    ops = study.ops if decision.preload_ops is None else decision.preload_ops
    return sum(plan.exec_cycles[i] - float(ops[i].exec_cycles[plan.exec_plan[i]])
               - float(ops[i].distribute[plan.preload_plan[i], plan.exec_plan[i]])
               for i in range(study.prefix, len(ops)))


def op_specs(model) -> dict:
    """A model's op specs by op name (``interconnect_utilisation``)."""
    return {op.name: op.spec for op in model.ops if op.pair is None}


def run_model(name: str, device: str, batch: int, seq: int, layers: int | None, cost: str = "t10",
              displacement: int | None = None, max_orders: int | None = None, chips: int | None = None,
              scale: int = 1) -> dict:
    started = time.perf_counter()
    workload = Workload(name, batch, seq, chips, layers, scale)
    model, layer_of, loads, allreduce = workload_model(workload)
    cache = FrontierCache(device, cost)
    study = offchip_study(model, cache, DESIGNS, **offchip_inputs(loads), layer_of=layer_of,
                          max_orders=max_orders, max_displacement=displacement, loop=True,
                          extra_exec_cycles=allreduce_exec_cycles(cache.device, allreduce, chips_of(workload)))
    # compile time is the planning; the report's link accounting below is the benchmark's own
    planned = time.perf_counter()
    row = {"model": os.path.basename(name), "device": cache.device.name, "topology": cache.device.topology,
           "ops": len(model.ops), "searches": cache.searches, "designs": {}, "compile_seconds": planned - started}
    clock = cache.device.clock_hz
    bound = study.bound_cycles
    row["bound_ms"] = bound / clock * 1e3
    specs = op_specs(model)
    for design, decision in study.decisions.items():
        row["designs"][design] = {
            "latency_ms": decision.latency_cycles / clock * 1e3, "of_bound": decision.latency_cycles / bound,
            "utilisation": link_utilisation(study, decision, cache.device), "orders_tried": decision.orders_tried,
            "interconnect": interconnect_utilisation(study, decision, cache.device, specs),
            "of_ideal_relayouts": ideal_with_relayouts(study, decision),
            "kept": decision.kept, "link_share": decision.link_share, "loads_yield": decision.loads_yield,
            "reorder_gain_ms": (None if decision.reorder_gain is None
                                                       else decision.reorder_gain / clock * 1e3),
            "reordered": decision.order != sorted(decision.order),
        }
    designs = row["designs"]
    ideal = designs["ideal"]["latency_ms"]
    for design in designs.values():
        design["of_ideal"] = ideal / design["latency_ms"]
    full = designs["full"]["latency_ms"]
    row["speedup_over_basic"] = designs["basic"]["latency_ms"] / full
    row["speedup_over_static"] = designs["static"]["latency_ms"] / full
    row["report_seconds"] = time.perf_counter() - planned
    row["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return row


def reorder_note(full: dict) -> str:
    """What ELK-Full's reorder search found (s4.4), or that it found nothing."""
    if full["reorder_gain_ms"] and full.get("reordered", True):
        return f"ELK-Full's best preload order saves {1e3 * full['reorder_gain_ms']:.2f} us over execution order"
    if full["reorder_gain_ms"]:   # the link share and yielding loads it also searches (issue 24 item 2)
        return (f"ELK-Full saves {1e3 * full['reorder_gain_ms']:.2f} us over ELK-Dyn in execution order (no "
                f"preload order of {full['orders_tried']} beat it; its link share and yielding loads did)")
    return (f"ELK-Full: none of {full['orders_tried']} preload orders beat execution order "
            f"(its plan is ELK-Dyn's)")


def pacing_note(designs: dict) -> str:
    """The link share (θ) ELK-Dyn's and ELK-Full's preloads are paced to, and whether
    ELK-Full's yield a contended link to the operators (issue 24 item 2)."""
    policy = "yield to" if designs["full"].get("loads_yield") else "make wait"
    return ("preloads paced to " + ", ".join(f"{LABELS[d]} {designs[d]['link_share']:g}" for d in ("dyn", "full"))
            + f" of a link (1: unpaced); ELK-Full's preloads {policy} the operators they contend with")


def print_table(rows: list[dict], out=None) -> None:
    out = sys.stdout if out is None else out
    header = (f"{'model':<12} {'design':<9} {'ms/token':>9} {'% Ideal':>8} {'%Ideal+R':>8} {'x bound':>8} {'HBM':>6} "
              f"{'core lk':>7} {'HBM lk':>7} {'ic util':>7}")
    print(header, file=out)
    print("-" * len(header), file=out)
    for row in rows:
        for design, data in row["designs"].items():
            use, shared = data["utilisation"], data.get("interconnect")
            print(f"{row['model']:<12} {LABELS[design]:<9} {data['latency_ms']:>9.4f} {100 * data['of_ideal']:>7.2f}% "
                  f"{100 * data.get('of_ideal_relayouts', data['of_ideal']):>7.2f}% "
                  f"{data['of_bound']:>7.3f}x {100 * use['hbm']:>5.1f}% {100 * use['core_links']:>6.1f}% "
                  f"{100 * use['hbm_links']:>6.1f}% " + ("      -" if shared is None else f"{100 * shared:>6.1f}%"), file=out)
        print(f"{'':<12} on {row['device']} ({row['topology']}): overlap bound {row['bound_ms']:.4f} ms/token (max of the HBM's bytes at its bandwidth and "
              f"the ops' fastest executions); {reorder_note(row['designs']['full'])}; "
              f"{pacing_note(row['designs'])}", file=out)
        print(f"{'':<12} ELK-Full over Basic {row['speedup_over_basic']:.2f}x, over Static "
              f"{row['speedup_over_static']:.2f}x; {row['ops']} ops, {row['searches']} plan searches, compile "
              f"{row['compile_seconds']:.1f} s (this report's link accounting "
              f"{row.get('report_seconds', 0.0):.1f} s more), peak RSS {row['peak_rss_mib']:.0f} MiB", file=out)
    if rows:
        n = len(rows)
        mean = lambda key: sum(r[key] for r in rows) / n  # noqa: E731
        of_ideal = sum(r["designs"]["full"]["of_ideal"] for r in rows) / n
        of_bound = sum(r["designs"]["full"]["of_bound"] for r in rows) / n
        print(f"mean: ELK-Full {100 * of_ideal:.2f}% of Ideal, {of_bound:.3f}x the overlap bound, "
              f"{mean('speedup_over_basic'):.2f}x over Basic, "
              f"{mean('speedup_over_static'):.2f}x over Static (ELK paper: 94.84%, 1.87x, 1.37x)", file=out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=",".join(MODELS),
                        help=f"comma-separated built-in models ({', '.join(MODELS)})")
    parser.add_argument("--model", default=None, metavar="FILE",
                        help="a model file (.onnx or .mlir of te ops) instead of --models")
    parser.add_argument("--device", default="ipu-mk2-hbm",
                        help="comma-separated devices (topologies): each model is planned on each, e.g. "
                             "ipu-mk2-hbm,ipu-mk2-hbm-mesh")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=None, help="override every model's depth")
    parser.add_argument("--chips", type=int, default=None,
                        help="tensor-parallel chips sharing each built-in model, all-reduces priced on one "
                             "timeline (ELK s5; default 4; a model file: 1)")
    parser.add_argument("--scale", type=int, default=1, help="divide every model's widths by this")
    parser.add_argument("--max-displacement", type=int, default=-1,
                        help="how far ELK-Full may move a preload from its place (the artifact's bounded "
                             "reordering; -1, the default: the paper's whole tree)")
    parser.add_argument("--max-orders", type=int, default=REORDER_BUDGET,
                        help="ELK-Full plans at most this many orders, the nearest to execution order (default "
                             f"{REORDER_BUDGET}, the compiler's budget; -1: s4.4's whole pruned tree)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    rows = []
    displacement = None if args.max_displacement < 0 else args.max_displacement
    orders = None if args.max_orders < 0 else args.max_orders
    runs = [(name, device) for name in ([args.model] if args.model else args.models.split(","))
            for device in args.device.split(",")]
    for name, device in runs:
        if not args.model and name not in MODELS:
            print(f"error: --models: unknown model '{name}'; known: {', '.join(MODELS)}", file=sys.stderr)
            return 1
        try:
            rows.append(run_model(name, device, args.batch, args.seq, args.layers, displacement=displacement,
                                  max_orders=orders, chips=args.chips, scale=args.scale))
        except DeviceError as error:
            print(f"error: --device: {error}", file=sys.stderr)
            return 1
        except DseError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        print(f"{name} on {device}: done in {rows[-1]['compile_seconds'] + rows[-1]['report_seconds']:.1f} s",
              file=sys.stderr)
    print_table(rows)
    if args.json:
        with open(args.json, "w") as stream:
            json.dump(rows, stream, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
