"""ELK's design-space exploration (seeds/004 s6.4, Figures 19-22) in irc's planner.

The paper simulates 4 chips (IPU-POD4) with HBM on an all-to-all or a 2D-mesh exchange
and varies the HBM bandwidth (Figures 19-21: latency, its breakdown, interconnect
utilisation) and, for Llama2-70B, the interconnect (NoC) bandwidth at several HBM
bandwidths (Figure 22). irc plans one chip's share of each model split over the 4 chips
(tensor parallel, all-reduces priced; ``benchmarks/elk.py``'s setting) on ``ipu-mk2-hbm``
or its 32 x 46 mesh (``irc.dse.point_device``), so every bandwidth below is the paper's
4-chip figure: HBM x TB/s is x/4 per chip, NoC y TB/s is y / 5,888 cores per all-to-all
core port (the paper's 8 TB/s per chip is 1,472 x 5.5 GB/s). The paper gives no mesh link
rate nor says how it counts a mesh's NoC bandwidth; with ``--mesh-links hbm-cut`` (the
default, as ``ipu-mk2-hbm-mesh``) the mesh at the base chip's own NoC has links as fast as
it takes to deliver the base chip's HBM bandwidth into its interior
(``irc.devices.topology.hbm_cut_link_bytes_per_s``: 30.57 GB/s for ipu-mk2-hbm's 4 TB/s,
at least a core's port), and a NoC of y TB/s scales them by y over the default (32.384
TB/s): mesh link = 30.57 GB/s x y / 32.384, the mesh whose edge cut carries y / 32.384 x
16 TB/s of HBM. ``--mesh-links core`` reads every mesh link at the all-to-all's port rate
(5.5 GB/s at the default, as ``ipu-mk2-hbm-mesh-5g5``). The mesh's ops shift at the
all-to-all port's rate at the same NoC (``--mesh-shifts port``, the default: s6.1 keeps
each core and link as the emulator's, only irc's hbm-cut links are faster, to carry the
HBM inward, and ELK's artifact prices a mesh's shifts as the all-to-all's,
IPU_COST_FACTS s6) or at the mesh link's (``link``: the IPU's measured 0.28 cycles per
byte at 5.5 GB/s scaled to it, as ``irc.dse.point_device`` and ``ipu-mk2-hbm-mesh`` do).
Op tables do not depend on the HBM, so each (topology, link and shift rate) searches
them once.

Printed per figure: irc's numbers (ms/token per design, overlap bound, utilisation per
link class: the cores' own exchange, the HBM controllers' egress, the controllers' links
to the mesh edge, the core or mesh links preloads cross), then each statement the paper's
text makes about the figure beside what irc measures. The figures' images are not in the
stored paper: the values given for the paper are only those its text states (16 TB/s
default, the knee near 8 TB/s for Llama2-70B, no gain past 40 TB/s NoC at 8 TB/s HBM,
"similar" latencies across topologies); trends are compared by direction. Where irc
differs from the paper's value by more than a fifth, a ``reason:`` line gives the
measured cause.

    PYTHONPATH=. python benchmarks/elk_mesh.py [--figures 19,20,21,22]
        [--models llama2-13b,gemma2-27b,opt-30b,llama2-70b] [--layers 2]
        [--hbm 2,4,8,16,32] [--noc 16.2,32.4,40,64.8] [--noc-hbm 8,16,32]
        [--mesh-links hbm-cut|core] [--mesh-shifts port|link] [--max-orders 8] [--json out.json]
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import importlib.util
import json
import math
import resource
import sys
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from irc.devices import DeviceError, load_device
from irc.output import write_atomically
from irc.devices.topology import hbm_cut_link_bytes_per_s, link_bytes_per_s, multicast_link_bytes, replication
from irc.dse import (DseError, Point, Workload, allreduce_exec_cycles, chips_of, offchip_inputs, point_device,
                     workload_model)
from irc.planner.elk import DESIGNS, offchip_study
from irc.planner.op_table import FrontierCache
from irc.progress import Progress
from irc.workloads.llm import CONFIGS

# benchmarks/elk.py is a script, not a package module: load it by path for its labels
_ELK_PATH = Path(__file__).resolve().parent / "elk.py"
_ELK_SPEC = importlib.util.spec_from_file_location("benchmark_elk", _ELK_PATH)
elk = importlib.util.module_from_spec(_ELK_SPEC)
_ELK_SPEC.loader.exec_module(elk)

PAPER_CHIPS = 4
"""The paper's simulated chips (IPU-POD4, s6.1): its bandwidths are of all four."""
DEFAULT_HBM_TBPS = 16.0
"""The paper's default HBM bandwidth of the 4 chips (s6.1)."""
HBM_TBPS = (2.0, 4.0, 8.0, 16.0, 32.0)
NOC_TBPS = (16.2, 32.4, 40.0, 64.8)   # 32.4: the default 32.384 (within 0.5%)
"""Half, once (1,472 cores x 4 x 5.5 GB/s), 40 TB/s (the text's knee) and twice the default."""
NOC_HBM_TBPS = (8.0, 16.0, 32.0)
TOPOLOGIES = ("all-to-all", "mesh-2d")
LINK_CLASSES = ("core", "ctrl", "edge", "lines")
"""Utilisation per link class: the ops' own exchange (``core``), the HBM controllers'
egress (``ctrl``), their links to the mesh's edge cores (``edge``), and the core ports
(all-to-all) or mesh links (mesh) preloads cross on their way (``lines``)."""
GQA = {name for name, config in CONFIGS.items() if config.kv_heads < config.heads}
FIFTH = 0.2


def per_chip(tbps: float) -> float:
    return tbps * 1e12 / PAPER_CHIPS


def link_rate(noc_tbps: float, cores: int) -> float:
    """A core's link rate (bytes/s) at the paper's 4-chip NoC bandwidth ``noc_tbps``."""
    return noc_tbps * 1e12 / (PAPER_CHIPS * cores)


MESH_LINKS = ("hbm-cut", "core")
"""How a NoC bandwidth maps to a mesh link rate (``mesh_link_scale``)."""
MESH_SHIFTS = ("port", "link")
"""The shift rate of a mesh's ops (``Planner.device``): at the all-to-all port's at the
same NoC bandwidth (``port``, the default: the cores exchange as fast as on the
all-to-all, only the preloads use the mesh's faster links, as ELK's artifact prices a
mesh's shifts, IPU_COST_FACTS s6), or at its link rate (``link``, as
``irc.dse.point_device`` scales the IPU's measured 0.28 cycles per byte at 5.5 GB/s)."""


def mesh_link_scale(base, links: str = "hbm-cut") -> float:
    """A mesh link's rate over an all-to-all core port's at the same NoC bandwidth: with
    ``hbm-cut``, the least mesh link rate that delivers ``base``'s own HBM bandwidth into its
    mesh (``hbm_cut_link_bytes_per_s``; at least a port) over ``base``'s port rate (a NoC y
    TB/s then has mesh links at that rate times y over the default NoC); ``core``: 1."""
    if links == "core":
        return 1.0
    mesh = point_device(base, Point(0, base.offchip.bytes_per_s / base.chips, base.link_bytes_per_s, "mesh-2d",
                                    base.cores_per_chip))
    return max(1.0, hbm_cut_link_bytes_per_s(mesh) / base.link_bytes_per_s)


def default_noc_tbps(base) -> float:
    return base.link_bytes_per_s * base.cores_per_chip * PAPER_CHIPS / 1e12


def link_class(link) -> str:
    kind = link[0]
    if kind == "out":
        return "ctrl"
    return "edge" if kind == "edge" else "lines"


@lru_cache(maxsize=4096)
def class_seconds_per_byte(device, replicas: float) -> dict[str, float]:
    """Per preload link class, the busiest link's seconds per byte a preload delivers to
    every core, each HBM byte broadcast to ``replicas`` cores (the links'
    ``multicast_link_bytes`` over their rates, ``irc.devices.topology``)."""
    found = {name: 0.0 for name in LINK_CLASSES[1:]}
    for link, load in multicast_link_bytes(device, replicas).items():
        name = link_class(link)
        found[name] = max(found[name], load / link_bytes_per_s(device, link))
    return found


def class_utilisation(study, decision, device) -> dict[str, float]:
    """Busy time of each link class's busiest link over the design's latency per token
    (never above 1: a preload never outruns its slowest link): ``core`` as
    ``benchmarks/elk.py``'s core links, the others each op's preload-state bytes per core
    at the class's busiest link."""
    clock, latency = device.clock_hz, decision.latency_cycles
    used = {"core": elk.link_utilisation(study, decision, device)["core_links"]}
    busy = dict.fromkeys(LINK_CLASSES[1:], 0.0)
    for t, op in enumerate(study.ops[study.prefix:]):
        if op.hbm_bytes <= 0:
            continue
        r = int(op.load_cycles.argmin()) if decision.plan is None else decision.plan.preload_plan[study.prefix + t]
        size = float(op.preload_bytes[r])
        replicas = round(replication(device, size, op.hbm_bytes), 9)
        for name, per_byte in class_seconds_per_byte(device, replicas).items():
            busy[name] += size * per_byte * clock
    used.update({name: cycles / latency for name, cycles in busy.items()})
    return used


def hbm_reads(study, device) -> dict:
    """What a token reads from HBM (GB, the paper's 4 chips) and the HBM bandwidth (TB/s of
    4 chips) at which one decoder layer's reads take as long as ELK-Full executes it (its
    plans' cycles: execution, distribution, relayouts, waits for the link): past it the
    layer is bound by execution and the interconnect (``roofline_knee``), whatever the
    model's depth (the first layer after a decode loop's prefix, ``loop_model``)."""
    token = study.ops[study.prefix:]
    full = study.decisions["full"]
    ops = (study.ops if full.preload_ops is None else full.preload_ops)
    _, _, start, end = full.plan.timeline()
    layer = next((op.layer for op in token if op.layer is not None), None)
    mine = [i for i in range(study.prefix, len(ops)) if ops[i].layer == layer] if layer is not None else []
    executed = sum(float(end[i] - start[i]) for i in mine) / device.clock_hz
    read = sum(float(ops[i].hbm_bytes) for i in mine) * PAPER_CHIPS
    return {"token_hbm_gb": sum(float(op.hbm_bytes) for op in token) * PAPER_CHIPS / 1e9,
            "layer_knee_tbps": read / executed / 1e12 if executed > 0 else None}


def delivery_cap(device) -> tuple[float, str, float]:
    """(bytes/s the exchange delivers to the cores when every core receives its own bytes
    from the HBM, the class of the link that caps it, that link's bytes per byte to every
    core): the exchange's side of the HBM roofline."""
    per_byte = class_seconds_per_byte(device, 1.0)
    name = max(per_byte, key=per_byte.get)
    worst = max((load for link, load in multicast_link_bytes(device, 1.0).items() if link_class(link) == name))
    return device.cores_per_chip / per_byte[name], name, worst


@dataclass
class Sweep:
    """What every point plans: the models' depth, batch, sequence and ELK-Full's orders."""

    layers: int | None = 2
    batch: int = 32
    seq: int = 2048
    max_orders: int | None = 8
    base: str = "ipu-mk2-hbm"
    scale: int = 1   # every model's widths divided by this (the tests' small chips)
    mesh_links: str = "hbm-cut"   # how a NoC bandwidth maps to a mesh link rate (MESH_LINKS)
    mesh_shifts: str = "port"     # the rate a mesh's ops shift at (MESH_SHIFTS)


class Planner:
    """Plans points, sharing op tables per (topology, link rate) and models per name."""

    def __init__(self, sweep: Sweep):
        self.sweep = sweep
        self.base = load_device(sweep.base)
        self.mesh_scale = mesh_link_scale(self.base, sweep.mesh_links)
        self.caches: dict[tuple, FrontierCache] = {}
        self.models: dict[str, tuple] = {}
        self.planned: dict[tuple, dict[float, dict]] = {}   # (model, topology, NoC) -> HBM -> decisions

    def model(self, name: str):
        """(model, layers, extra HBM bytes, all-reduce bytes, chips) of a built-in model."""
        if name not in self.models:
            workload = Workload(name, self.sweep.batch, self.sweep.seq, None, self.sweep.layers, self.sweep.scale)
            self.models[name] = (*workload_model(workload), chips_of(workload))
        return self.models[name]

    def cache(self, device) -> FrontierCache:
        """A cache on ``device`` sharing the op tables of its (topology, link and shift
        rates): they price the exchange only, never the HBM (``irc.planner.op_table``)."""
        key = (device.topology, device.link_bytes_per_s, device.shift_cycles_per_byte)
        if key not in self.caches:
            self.caches[key] = FrontierCache(device, "t10")
        mine = copy.copy(self.caches[key])   # shares its tables; the point's own device
        mine.device = device
        return mine

    def device(self, topology: str, hbm_tbps: float, noc_tbps: float):
        """One chip at the paper's 4-chip HBM and NoC bandwidths: an all-to-all core port at
        the NoC's per-core rate, a mesh link at it times ``mesh_scale`` (``--mesh-links``)."""
        port = link_rate(noc_tbps, self.base.cores_per_chip)
        rate = port * (self.mesh_scale if topology == "mesh-2d" else 1.0)
        device = point_device(self.base, Point(0, per_chip(hbm_tbps), rate, topology, self.base.cores_per_chip))
        if topology == "mesh-2d" and self.sweep.mesh_shifts == "port":
            shift = self.base.shift_cycles_per_byte * self.base.link_bytes_per_s / port
            device = dataclasses.replace(device, shift_cycles_per_byte=shift)
        return device

    def point(self, name: str, topology: str, hbm_tbps: float, noc_tbps: float) -> dict:
        """Every design of ``name`` on ``topology`` at the paper's 4-chip HBM and NoC
        bandwidths: latencies, ratios to the overlap bound and Ideal, contention share,
        utilisation per link class, and the exchange's HBM delivery cap."""
        started = time.perf_counter()
        device = self.device(topology, hbm_tbps, noc_tbps)
        model, layer_of, loads, allreduce, chips = self.model(name)
        # the nearest slower HBM's choices are candidates here: more bandwidth is never slower
        planned = self.planned.setdefault((name, topology, noc_tbps), {})
        slower = max((h for h in planned if h < hbm_tbps), default=None)
        study = offchip_study(model, self.cache(device), DESIGNS, **offchip_inputs(loads), layer_of=layer_of,
                              max_orders=self.sweep.max_orders, loop=True,
                              extra_exec_cycles=allreduce_exec_cycles(device, allreduce, chips),
                              seeds=None if slower is None else planned[slower])
        planned[hbm_tbps] = study.decisions
        clock = device.clock_hz
        cap, capped_by, worst = delivery_cap(device)
        row = {"model": name, "topology": topology, "hbm_tbps": hbm_tbps, "noc_tbps": noc_tbps,
               "link_gbps": device.link_bytes_per_s / 1e9,
               "bound_ms": study.bound_cycles / clock * 1e3, "delivery_tbps": cap * PAPER_CHIPS / 1e12,
               "delivery_capped_by": capped_by, "delivery_link_load": worst, "designs": {}}
        specs = elk.op_specs(model)
        for design, decision in study.decisions.items():
            contention = (0.0 if decision.plan is None   # rounding may leave -1e-12 of a cycle
                          else max(0.0, sum(decision.plan.contention_cycles()[study.prefix:])) / decision.latency_cycles)
            row["designs"][design] = {
                "latency_ms": decision.latency_cycles / clock * 1e3,
                "of_bound": decision.latency_cycles / study.bound_cycles,
                "contention": contention, "utilisation": class_utilisation(study, decision, device),
                "interconnect": elk.interconnect_utilisation(study, decision, device, specs),
                "of_ideal_relayouts": elk.ideal_with_relayouts(study, decision),
                "relayout_ms": elk.relayout_cycles(study, decision) / clock * 1e3}
        row.update(hbm_reads(study, device))
        ideal = row["designs"]["ideal"]["latency_ms"]
        for data in row["designs"].values():
            data["of_ideal"] = ideal / data["latency_ms"]
        row["seconds"] = time.perf_counter() - started
        return row


def figure_points(figures, models, hbm, noc, noc_hbm, default_noc) -> list[tuple]:
    """(model, topology, HBM TB/s, NoC TB/s) of every point the figures need, once each."""
    wanted = []
    if figures & {19, 20, 21}:
        wanted += [(m, t, h, default_noc) for m in models for t in TOPOLOGIES for h in hbm]
    if 22 in figures:   # a NoC within 0.5% of the default is the default (its points shared)
        noc = [default_noc if abs(n - default_noc) <= 0.005 * default_noc else n for n in noc]
        wanted += [("llama2-70b", t, h, n) for t in TOPOLOGIES for h in noc_hbm for n in noc]
    return list(dict.fromkeys(wanted))


def _find(rows, **match) -> dict | None:
    for row in rows:
        if all(row[k] == v for k, v in match.items()):
            return row
    return None


def _latency(row, design="full") -> float:
    return row["designs"][design]["latency_ms"]


def _interconnect(row, design="full") -> float:
    """The busiest link's utilisation in the class the paper's interconnect figure
    counts: the cores' own exchange or the preloads' way to the cores, the larger."""
    use = row["designs"][design]["utilisation"]
    return max(use["core"], use["lines"], use["edge"])


def reason(row, design: str = "full") -> str:
    """The measured cause of a point's latency: which resource is busiest for ``design``."""
    use, data = row["designs"][design]["utilisation"], row["designs"][design]
    hbm_share = row["bound_ms"] / data["latency_ms"]
    return (f"reason: {row['model']} on {row['topology']} at {row['hbm_tbps']:g} TB/s HBM, {row['noc_tbps']:g} TB/s "
            f"NoC: {elk.LABELS[design]} {data['of_bound']:.2f}x the overlap bound; the exchange delivers HBM data at most at "
            f"{row['delivery_tbps']:.2f} TB/s (4 chips; capped by the {row['delivery_capped_by']} links, "
            f"{row['delivery_link_load']:.2f} B per B to every core), busiest link utilisation: core "
            f"{100 * use['core']:.0f}%, HBM ctrl {100 * use['ctrl']:.0f}%, edge {100 * use['edge']:.0f}%, "
            f"preload lines {100 * use['lines']:.0f}%; the bound's share of the latency {100 * hbm_share:.0f}%")


def print_points(rows, out) -> None:
    header = (f"{'model':<11} {'topology':<10} {'HBM':>5} {'NoC':>5} " + " ".join(f"{elk.LABELS[d]:>8}" for d in DESIGNS)
              + f" {'bound':>7} {'Full/bd':>7} {'core':>5} {'ctrl':>5} {'edge':>5} {'lines':>5} {'cont.':>5} {'deliv':>6}"
              + f" {'ic':>5} {'Id+R':>5}")
    print(header, file=out)
    print("-" * len(header), file=out)
    for row in rows:
        full = row["designs"]["full"]
        use = full["utilisation"]
        print(f"{row['model']:<11} {row['topology']:<10} {row['hbm_tbps']:>5g} {row['noc_tbps']:>5g} "
              + " ".join(f"{row['designs'][d]['latency_ms']:>8.4f}" for d in DESIGNS)
              + f" {row['bound_ms']:>7.4f} {full['of_bound']:>6.2f}x " + " ".join(
                  f"{100 * use[c]:>4.0f}%" for c in LINK_CLASSES) + f" {100 * full['contention']:>4.0f}%"
              + f" {row['delivery_tbps']:>6.2f} {_percent(full.get('interconnect')):>5}"
              + f" {_percent(full.get('of_ideal_relayouts')):>5}", file=out)
    print("(ms/token per design; HBM and NoC in TB/s of 4 chips; utilisation of ELK-Full's busiest link per class; "
          "cont.: ELK-Full's interconnect-contention share of its latency; deliv: the exchange's HBM delivery cap, "
          "TB/s of 4 chips; ic: ELK-Full's interconnect utilisation as the paper counts it, both flows on one link, "
          "benchmarks/elk.py's interconnect_utilisation; Id+R: Ideal over ELK-Full, Ideal paying ELK-Full's "
          "relayouts, ideal_with_relayouts)", file=out)


def _percent(share) -> str:
    return "-" if share is None else f"{100 * share:.0f}%"


def compare(label: str, paper: str, irc: str, agrees: bool, why: str | None, out) -> None:
    print(f"  {label}\n    paper: {paper}\n    irc:   {irc} -> {'agrees' if agrees else 'differs'}", file=out)
    if not agrees and why:
        print(f"    {why}", file=out)


def within_fifth(measured: float, paper: float) -> bool:
    return abs(measured - paper) <= FIFTH * abs(paper)


def figure19(rows, models, hbm, noc, out) -> None:
    """Latency against HBM bandwidth (Figure 19) and the text's three statements on it."""
    print("\nFigure 19: per-token latency at varied HBM bandwidths (ms/token above)", file=out)
    low, default = min(hbm), DEFAULT_HBM_TBPS if DEFAULT_HBM_TBPS in hbm else max(hbm)
    for model in models:
        for topology in TOPOLOGIES:
            row = _find(rows, model=model, topology=topology, hbm_tbps=low, noc_tbps=noc)
            slowest = max(DESIGNS, key=lambda d: row["designs"][d]["of_bound"])
            worst = row["designs"][slowest]["of_bound"]
            compare(f"{model}, {topology}: at {low:g} TB/s HBM every design is HBM-bound",
                    "\"When HBM bandwidth is low, all designs are bounded by HBM\" (latency at the HBM's time: 1.0x)",
                    f"the slowest design ({elk.LABELS[slowest]}) at {worst:.2f}x the overlap bound",
                    within_fifth(worst, 1.0), reason(row, slowest), out)
            series = [_find(rows, model=model, topology=topology, hbm_tbps=h, noc_tbps=noc) for h in sorted(hbm)]
            rises = [(a, b) for a, b in zip(series, series[1:]) if _latency(b) > _latency(a) * (1 + 1e-3)]
            compare(f"{model}, {topology}: ELK-Full's latency against HBM bandwidth",
                    "\"Higher HBM bandwidth improves the per-token latency, but the benefit will diminish\" "
                    "(never slower)", "slower at " + ", ".join(f"{b['hbm_tbps']:g} than at {a['hbm_tbps']:g} TB/s "
                                                             f"({_latency(b) / _latency(a):.3f}x)" for a, b in rises)
                    if rises else "never slower with more HBM bandwidth", not rises,
                    reason(rises[0][1]) + f"; ELK-Full's contention {100 * rises[0][0]['designs']['full']['contention']:.0f}%"
                    f" -> {100 * rises[0][1]['designs']['full']['contention']:.0f}% of its latency (a faster preload "
                    f"takes more of the link while it runs)" if rises else None, out)
            knee = next((a["hbm_tbps"] for a, b in zip(series, series[1:]) if _latency(b) > 0.9 * _latency(a)), None)
            shown = "beyond the sweep" if knee is None else f"{knee:g} TB/s"
            if model == "llama2-70b":
                at = _find(rows, model=model, topology=topology, hbm_tbps=8.0 if 8.0 in hbm else default, noc_tbps=noc)
                roof = roofline_knee(series)
                compare(f"{model}, {topology}: the HBM bandwidth past which ELK-Full is bound by execution and the "
                        f"interconnect", "\"With more HBM bandwidth (e.g., ~8TB/s for Llama2-70B), the performance "
                        "becomes bounded by the interconnect and per-core execution\": 8 TB/s",
                        ("its roofline knee (a token's HBM bytes over ELK-Full's latency at "
                         f"{series[-1]['hbm_tbps']:g} TB/s) {roof:.2f} TB/s" if roof is not None else "no knee known")
                        + f"; doubling the HBM gains < 10% past {shown}",
                        roof is not None and within_fifth(roof, 8.0), reason(at) + knee_reason(series, at), out)
            else:
                roof = roofline_knee(series)
                print(f"  {model}, {topology}: doubling the HBM bandwidth gains < 10% past {shown}"
                      + ("" if roof is None else f", its roofline knee {roof:.2f} TB/s")
                      + " (the paper states a knee for Llama2-70B only)", file=out)
    figure19_topologies(rows, models, default, noc, out)


def roofline_knee(series) -> float | None:
    """The HBM bandwidth (TB/s of 4 chips) at which a token's HBM reads take as long as
    ELK-Full's latency at the largest bandwidth of ``series`` (one model and topology,
    by HBM bandwidth): where the HBM roofline meets the plateau past which the paper
    finds the performance "bounded by the interconnect and per-core execution" (s6.4).
    None for a sweep that did not record the reads."""
    last = series[-1]
    return None if "token_hbm_gb" not in last else last["token_hbm_gb"] / _latency(last)


def knee_reason(series, at) -> str:
    """Why irc's knee is where it is, measured: ELK-Full against the overlap bound at
    ``at`` (no scheduler gap when at it), one decoder layer's knee (the 2-layer sweep's LM
    head aside), and the execution time the paper's 8 TB/s knee implies."""
    last, roof = series[-1], roofline_knee(series)
    if roof is None:
        return ""
    layer = last.get("layer_knee_tbps")
    return (f"; ELK-Full at {at['hbm_tbps']:g} TB/s is {at['designs']['full']['of_bound']:.2f}x the overlap bound; "
            f"a token reads {last['token_hbm_gb']:.3f} GB (4 chips) and ELK-Full takes {_latency(last):.4f} ms at "
            f"{last['hbm_tbps']:g} TB/s" + ("" if layer is None else f", one decoder layer alone knees at {layer:.2f} TB/s")
            + f"; a knee at 8 TB/s takes a token {last['token_hbm_gb'] / 8.0:.4f} ms to execute, "
            f"{last['token_hbm_gb'] / 8.0 / _latency(last):.2f}x irc's")


def _gap(mesh, a2a) -> str:
    """What separates ELK-Full from Ideal on each topology, measured: the gap in ms, the
    contention share, each Ideal, the link rates, and on all-to-all the core ports the
    preloads share with the operators' exchange."""
    def one(row):
        full = row["designs"]["full"]
        relayouts = "" if "relayout_ms" not in full else f", {full['relayout_ms']:.4f} ms of it relayouts"
        return (f"{full['latency_ms'] - _latency(row, 'ideal'):.4f} ms ({100 * full['contention']:.1f}% contention"
                f"{relayouts}) on {row['topology']}")
    use = a2a["designs"]["full"]["utilisation"]
    carried = ("enough to carry the HBM inward" if mesh["delivery_tbps"] >= mesh["hbm_tbps"] * (1 - 1e-6) else
               f"delivering at most {mesh['delivery_tbps']:.2f} of the HBM's {mesh['hbm_tbps']:g} TB/s")
    rates = "" if "link_gbps" not in mesh else (
        f"; the mesh's links ({mesh['link_gbps']:.3g} GB/s, {carried}) are "
        f"{mesh['link_gbps'] / a2a['link_gbps']:.2f}x an all-to-all port ({a2a['link_gbps']:.3g} GB/s)")
    return (f"ELK-Full's gap to Ideal: {one(mesh)}, {one(a2a)}{rates}; Ideal {_latency(mesh, 'ideal'):.4f} ms on "
            f"the mesh against {_latency(a2a, 'ideal'):.4f} ms; on all-to-all the preloads cross the core ports the "
            f"operators exchange over ({100 * use['lines']:.0f}% and {100 * use['core']:.0f}% busy)")


def figure19_topologies(rows, models, default, noc, out) -> None:
    """Figure 19's statements comparing the topologies at the default HBM bandwidth: the
    mesh's higher contention, and ELK-Full further from Ideal on it."""
    for model in models:
        a2a, mesh = (_find(rows, model=model, topology=t, hbm_tbps=default, noc_tbps=noc) for t in TOPOLOGIES)
        higher = [d for d in ("basic", "static", "dyn")
                  if mesh["designs"][d]["contention"] >= a2a["designs"][d]["contention"]]
        compare(f"{model} at {default:g} TB/s: interconnect contention on the mesh against all-to-all",
                "\"since mesh-based network takes multiple hops to deliver HBM data to cores, it suffers higher "
                "interconnect contention than all-to-all network\" (Basic, Static, ELK-Dyn)",
                ", ".join(f"{elk.LABELS[d]} {100 * mesh['designs'][d]['contention']:.1f}% vs "
                          f"{100 * a2a['designs'][d]['contention']:.1f}%" for d in ("basic", "static", "dyn"))
                + " of latency (mesh vs all-to-all)", len(higher) == 3, reason(mesh, "dyn"), out)
        kind = "GQA" if model in GQA else "non-GQA"
        paid = [row["designs"]["full"].get("of_ideal_relayouts") for row in (a2a, mesh)]
        judged = paid if None not in paid else [row["designs"]["full"]["of_ideal"] for row in (a2a, mesh)]
        compare(f"{model} ({kind}) at {default:g} TB/s: ELK-Full further from Ideal on the mesh",
                "\"it is harder for ELK-Full to match with Ideal on mesh, especially for non-GQA models\" (Ideal: the "
                "roofline of the same execution, relayouts between ops paid)",
                (f"ELK-Full {100 * paid[0]:.1f}% of Ideal+R all-to-all, {100 * paid[1]:.1f}% on the mesh; "
                 if None not in paid else "") +
                f"of irc's Ideal (no relayouts) {100 * a2a['designs']['full']['of_ideal']:.1f}% all-to-all, "
                f"{100 * mesh['designs']['full']['of_ideal']:.1f}% on the mesh",
                judged[1] < judged[0], reason(mesh) + "; " + _gap(mesh, a2a), out)


def figure20(rows, models, hbm, noc, out) -> None:
    """Llama2-13B's interconnect-contention share against HBM bandwidth, all-to-all (Figure 20;
    the first model swept when Llama2-13B is not)."""
    model = "llama2-13b" if "llama2-13b" in models else models[0]
    series = [_find(rows, model=model, topology="all-to-all", hbm_tbps=h, noc_tbps=noc) for h in sorted(hbm)]
    print(f"\nFigure 20: {model} on all-to-all (the paper: Llama2-13B), interconnect contention "
          f"(% of each design's latency)", file=out)
    print(f"  {'HBM':>5} " + " ".join(f"{elk.LABELS[d]:>8}" for d in DESIGNS[:4]), file=out)
    for row in series:
        print(f"  {row['hbm_tbps']:>5g} " + " ".join(f"{100 * row['designs'][d]['contention']:>7.1f}%"
                                                    for d in DESIGNS[:4]), file=out)
    first, last = series[0], series[-1]
    for design in ("basic", "static", "dyn"):
        a, b = first["designs"][design]["contention"], last["designs"][design]["contention"]
        compare(f"{elk.LABELS[design]}: contention from {first['hbm_tbps']:g} to {last['hbm_tbps']:g} TB/s HBM",
                "\"For Basic/Static/ELK-Dyn, contention increases with higher HBM bandwidth\"",
                f"{100 * a:.1f}% -> {100 * b:.1f}%", b > a, reason(last), out)
    dyn, full = last["designs"]["dyn"]["contention"], last["designs"]["full"]["contention"]
    compare(f"ELK-Full's contention at {last['hbm_tbps']:g} TB/s against ELK-Dyn's",
            "\"ELK-Full's reordering ... eliminate[s] the contention\" (s6.2: 87.65% of ELK-Dyn's removed)",
            f"ELK-Full {100 * full:.1f}%, ELK-Dyn {100 * dyn:.1f}% of latency",
            full <= (1 - 0.8765) * dyn or full < 0.01,
            reason(last) + ("; ELK-Full's plan is ELK-Dyn's (no preload order it tried beat execution order)"
                            if _latency(last) >= _latency(last, "dyn") * (1 - 1e-9) else ""), out)


def _shared(row, design="full") -> float | None:
    """The paper's interconnect utilisation of ``design`` at ``row`` (both flows on one
    link, ``benchmarks/elk.py``'s ``interconnect_utilisation``), None in an older sweep."""
    return row["designs"][design].get("interconnect")


def figure21(rows, models, hbm, noc, out) -> None:
    """Interconnect utilisation against HBM bandwidth per topology (Figure 21), and the
    text's statement that both topologies serve at similar latency. Utilisation is judged
    as the paper counts it (both flows on one link) where the sweep recorded it."""
    print("\nFigure 21: interconnect utilisation, both flows on one link (a core's port; a mesh's busiest link) / "
          "irc's busiest link of one class (the cores' exchange or the preloads' way)", file=out)
    print(f"  {'model':<11} {'topology':<10} {'HBM':>5} " + " ".join(f"{elk.LABELS[d]:>11}" for d in DESIGNS[:4])
          + "  Full ms (mesh / all-to-all)", file=out)
    for model in models:
        for h in sorted(hbm):
            pair = [_find(rows, model=model, topology=t, hbm_tbps=h, noc_tbps=noc) for t in TOPOLOGIES]
            for row in pair:
                ratio = _latency(pair[1]) / _latency(pair[0])
                print(f"  {model:<11} {row['topology']:<10} {h:>5g} " + " ".join(
                    f"{_percent(_shared(row, d)):>5}/{100 * _interconnect(row, d):>4.0f}%" for d in DESIGNS[:4])
                    + (f"  {ratio:.2f}x" if row is pair[1] else ""), file=out)
    for model in models:
        pairs = [[_find(rows, model=model, topology=t, hbm_tbps=h, noc_tbps=noc) for t in TOPOLOGIES]
                 for h in sorted(hbm)]
        paper = all(_shared(row) is not None for pair in pairs for row in pair)
        use = _shared if paper else _interconnect
        higher = [h for (a, m), h in zip(pairs, sorted(hbm)) if use(m) > use(a)]
        busiest = sum(_interconnect(m) > _interconnect(a) for a, m in pairs)
        lower = [(a, m) for (a, m), h in zip(pairs, sorted(hbm)) if h not in higher]
        compare(f"{model}: mesh utilisation above all-to-all's (ELK-Full)",
                "\"mesh chips always experience higher interconnect utilization than all-to-all\"",
                (f"both flows on one link: higher at {len(higher)} of {len(pairs)} HBM bandwidths"
                 + "".join(f" (not at {a['hbm_tbps']:g} TB/s: {100 * use(m):.1f}% vs {100 * use(a):.1f}%)" for a, m in lower)
                 + "; " if paper else "") + f"irc's busiest link of one class: higher at {busiest} of {len(pairs)}",
                len(higher) == len(pairs), reason((lower[0] if lower else pairs[-1])[1]) + (
                    "" if not lower else utilisation_gap(*lower[0])), out)
        ratios = [_latency(m) / _latency(a) for a, m in pairs]
        worst = max(range(len(ratios)), key=lambda i: abs(ratios[i] - 1))
        compare(f"{model}: mesh against all-to-all latency (ELK-Full)",
                "\"While achieving similar serving latencies\" (mesh / all-to-all ~1.0)",
                "mesh / all-to-all " + ", ".join(f"{r:.2f}x" for r in ratios) + f" at {', '.join(f'{h:g}' for h in sorted(hbm))} TB/s",
                all(within_fifth(r, 1.0) for r in ratios), reason(pairs[worst][1]), out)
        at = next((p for p, h in zip(pairs, sorted(hbm)) if h == DEFAULT_HBM_TBPS), pairs[-1])
        best = max(DESIGNS[:4], key=lambda d: _interconnect(at[0], d))
        shared = {d: _shared(at[0], d) for d in DESIGNS[:4]}
        counted = shared["full"] if shared["full"] is not None else _interconnect(at[0])
        compare(f"{model} at {at[0]['hbm_tbps']:g} TB/s, all-to-all: ELK-Full's interconnect utilisation",
                "\"ELK-Full is the only design that can almost fully utilize the interconnect\" (s6.3: 89.52%; "
                "Basic 57.25%, Static 76.33%, ELK-Dyn 78.28%: the ops' transfers and the preloads on one interconnect)",
                ("both flows on a core's port: " + ", ".join(f"{elk.LABELS[d]} {100 * shared[d]:.1f}%" for d in DESIGNS[:4])
                 + "; " if shared["full"] is not None else "")
                + f"irc's busiest link of one class: ELK-Full {100 * _interconnect(at[0]):.1f}% "
                f"(highest: {elk.LABELS[best]})", within_fifth(counted, 0.8952),
                reason(at[0]) + interconnect_reason(at[0]), out)


def utilisation_gap(a2a, mesh) -> str:
    """What the mesh's one link carries against an all-to-all port, measured: each one's
    preload share, the ops' own transfers the rest, and the shift rates they run at."""
    def one(row):
        full = row["designs"]["full"]
        return (f"{100 * full['utilisation']['lines']:.0f}% preloads, "
                f"{100 * (full['interconnect'] - full['utilisation']['lines']):.0f}% the ops' transfers on {row['topology']}")
    return (f"; both flows: {one(mesh)}, {one(a2a)}" if _shared(mesh) is not None else "") + (
        "" if "link_gbps" not in mesh else f"; the mesh's links {mesh['link_gbps']:.3g} GB/s, an all-to-all port "
        f"{a2a['link_gbps']:.3g} GB/s")


def interconnect_reason(row) -> str:
    """What keeps ELK-Full's port from the paper's 89.52%, measured: how much of its
    latency the HBM roofline explains (the preloads' share of the port follows the HBM's
    busy share) and how far it is from the overlap bound (time neither flow fills)."""
    full = row["designs"]["full"]
    if full.get("interconnect") is None or "token_hbm_gb" not in row:
        return ""
    hbm = row["token_hbm_gb"] / row["hbm_tbps"] / full["latency_ms"]
    return (f"; both flows fill {100 * full['interconnect']:.1f}% of a port: the preloads "
            f"{100 * full['utilisation']['lines']:.0f}% (the HBM busy {100 * hbm:.0f}% of the latency), the ops' own "
            f"transfers {100 * (full['interconnect'] - full['utilisation']['lines']):.0f}%; "
            f"ELK-Full is {full['of_bound']:.2f}x the overlap bound")


def figure22(rows, noc_hbm, out) -> None:
    """Llama2-70B's latency against NoC bandwidth at several HBM bandwidths (Figure 22)."""
    found = [r for r in rows if r["model"] == "llama2-70b" and r["hbm_tbps"] in noc_hbm]
    noc = sorted({r["noc_tbps"] for r in found})
    if not found:
        return
    print("\nFigure 22: Llama2-70B latency (ELK-Full / Ideal, ms/token) at varied NoC bandwidths", file=out)
    print(f"  {'topology':<10} {'HBM':>5} " + " ".join(f"{f'{n:g} TB/s':>17}" for n in sorted(noc)), file=out)
    curve = {}
    for topology in TOPOLOGIES:
        for h in sorted(noc_hbm):
            series = [_find(found, topology=topology, hbm_tbps=h, noc_tbps=n) for n in sorted(noc)]
            curve[topology, h] = series
            print(f"  {topology:<10} {h:>5g} " + " ".join(
                f"{_latency(r):>8.4f}/{_latency(r, 'ideal'):<8.4f}" for r in series), file=out)
    low, high = min(noc_hbm), max(noc_hbm)
    spread = {key: _latency(s[0]) / _latency(s[-1]) for key, s in curve.items()}
    for topology in TOPOLOGIES:
        series = curve[topology, low]   # the swept NoC nearest the text's 40 TB/s, below the largest
        knee = min(series[:-1] or series, key=lambda r: abs(r["noc_tbps"] - 40.0))
        gain = _latency(knee) / _latency(series[-1])
        compare(f"{topology} at {low:g} TB/s HBM: ELK-Full at {knee['noc_tbps']:g} TB/s NoC over at "
                f"{series[-1]['noc_tbps']:g} TB/s",
                "\"When the HBM bandwidth is low (e.g., 8TB/s per 4 chips), increasing the interconnect bandwidth "
                "beyond a certain point (e.g., 40TB/s) has no benefit\" (1.0x)", f"{gain:.2f}x",
                within_fifth(gain, 1.0), reason(knee), out)
        compare(f"{topology}: NoC sensitivity at {high:g} against {low:g} TB/s HBM",
                "\"With higher HBM bandwidth, performance scales with the interconnect bandwidth\"",
                f"slowest / fastest NoC: {spread[topology, high]:.2f}x at {high:g}, {spread[topology, low]:.2f}x at {low:g}",
                spread[topology, high] > 1.01 * spread[topology, low], reason(curve[topology, high][0]), out)
        best = curve[topology, high][-1]
        compare(f"{topology} at {high:g} TB/s HBM, {best['noc_tbps']:g} TB/s NoC: ELK-Full against Ideal",
                "\"ELK-Full can best utilize both bandwidths to achieve near-Ideal performance\" (s6.2: 94.84%)",
                f"{100 * best['designs']['full']['of_ideal']:.1f}% of Ideal",
                within_fifth(best["designs"]["full"]["of_ideal"], 0.9484), reason(best), out)
    more = sum(spread["mesh-2d", h] > 1.01 * spread["all-to-all", h] for h in noc_hbm)
    compare("mesh against all-to-all sensitivity to NoC bandwidth",
            "\"Compared with all-to-all, the performance of mesh is more sensitive to the interconnect bandwidth\"",
            f"mesh more sensitive at {more} of {len(noc_hbm)} HBM bandwidths (" + ", ".join(
                f"{h:g}: {spread['mesh-2d', h]:.2f}x vs {spread['all-to-all', h]:.2f}x" for h in sorted(noc_hbm)) + ")",
            more == len(noc_hbm), reason(curve["mesh-2d", low][0]), out)


def _numbers(text: str, option: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise DseError(f"{option}: a comma-separated list of TB/s, got {text!r}") from None
    if not values or not all(math.isfinite(v) and 0 < v <= 1e4 for v in values):
        raise DseError(f"{option}: give one or more bandwidths in TB/s, each positive (at most 1e4), got {text!r}")
    return values


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--figures", default="19,20,21,22", help="which of Figures 19-22 to sweep")
    parser.add_argument("--models", default="llama2-13b,gemma2-27b,opt-30b,llama2-70b",
                        help=f"Figures 19-21's models ({', '.join(CONFIGS)})")
    parser.add_argument("--device", default="ipu-mk2-hbm",
                        help="the base chip each point derives from (irc.dse.point_device)")
    parser.add_argument("--layers", type=int, default=2, help="decoder layers planned (-1: the model's own)")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--hbm", default=",".join(f"{h:g}" for h in HBM_TBPS), help="HBM TB/s of 4 chips")
    parser.add_argument("--noc", default=",".join(f"{n:g}" for n in NOC_TBPS), help="Figure 22's NoC TB/s of 4 chips")
    parser.add_argument("--noc-hbm", default=",".join(f"{h:g}" for h in NOC_HBM_TBPS),
                        help="Figure 22's HBM TB/s of 4 chips")
    parser.add_argument("--max-orders", type=int, default=8,
                        help="ELK-Full plans at most this many preload orders per point (-1: s4.4's whole tree)")
    parser.add_argument("--mesh-links", default="hbm-cut",
                        help="a mesh link's rate at a NoC bandwidth: hbm-cut (default; the mesh at the default NoC "
                             "delivers the base chip's HBM into its interior) or core (an all-to-all port's rate)")
    parser.add_argument("--mesh-shifts", default="port",
                        help="the rate a mesh's ops shift at: port (default; the all-to-all port's at the same NoC, "
                             "only preloads use the faster links) or link (the IPU's measured rate scaled to the link)")
    parser.add_argument("--scale", type=int, default=1, help="divide every model's widths by this")
    parser.add_argument("--json", default=None, help="write every point's numbers here")
    parser.add_argument("--replay", default=None, metavar="JSON",
                        help="print the figures from a --json file of an earlier sweep instead of planning")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    if args.replay:
        try:
            with open(args.replay) as stream:
                report(json.load(stream), sys.stdout)
        except (OSError, ValueError, KeyError, TypeError) as error:
            print(f"error: --replay: {args.replay}: not a sweep this script wrote ({error})", file=sys.stderr)
            return 1
        return 0
    try:
        figures = {int(f) for f in args.figures.split(",") if f.strip()}
    except ValueError:
        figures = set()
    if not figures or not figures <= {19, 20, 21, 22}:
        print(f"error: --figures: a comma-separated choice of 19, 20, 21, 22, got {args.figures!r}", file=sys.stderr)
        return 1
    if args.mesh_links not in MESH_LINKS:
        print(f"error: --mesh-links: one of {', '.join(MESH_LINKS)}, got {args.mesh_links!r}", file=sys.stderr)
        return 1
    if args.mesh_shifts not in MESH_SHIFTS:
        print(f"error: --mesh-shifts: one of {', '.join(MESH_SHIFTS)}, got {args.mesh_shifts!r}", file=sys.stderr)
        return 1
    models = [m for m in args.models.split(",") if m]
    unknown = [m for m in models if m not in CONFIGS]
    if unknown or not models:
        print(f"error: --models: unknown model {unknown[0] if unknown else ''!r}; known: {', '.join(CONFIGS)}",
              file=sys.stderr)
        return 1
    try:
        hbm, noc, noc_hbm = (_numbers(args.hbm, "--hbm"), _numbers(args.noc, "--noc"),
                             _numbers(args.noc_hbm, "--noc-hbm"))
        planner = Planner(Sweep(None if args.layers < 0 else args.layers, args.batch, args.seq,
                                None if args.max_orders < 0 else args.max_orders, args.device, args.scale,
                                args.mesh_links, args.mesh_shifts))
    except DseError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except DeviceError as error:
        print(f"error: --device: {error}", file=sys.stderr)
        return 1
    noc_default = default_noc_tbps(planner.base)
    wanted = figure_points(figures, models, hbm, noc, noc_hbm, noc_default)
    mesh = point_device(planner.base, Point(0, 1.0, 1.0, "mesh-2d", planner.base.cores_per_chip)).mesh
    sweep = {"base": planner.base.name, "mesh": list(mesh), "layers": args.layers, "batch": args.batch,
             "seq": args.seq, "noc_default": noc_default, "mesh_links": args.mesh_links, "mesh_shifts": args.mesh_shifts,
             "mesh_link_gbps": planner.base.link_bytes_per_s * planner.mesh_scale / 1e9, "figures": sorted(figures), "models": models,
             "hbm": hbm, "noc_hbm": noc_hbm, "seconds": 0.0, "peak_rss_mib": 0.0, "rows": []}
    started = time.perf_counter()
    with Progress(len(wanted), "ELK s6.4 sweep") as bar:
        for model, topology, h, n in wanted:
            try:
                sweep["rows"].append(planner.point(model, topology, h, n))
            except (DseError, DeviceError, ValueError) as error:
                print(f"error: {model} on {topology} at {h:g} TB/s HBM, {n:g} TB/s NoC: {error}", file=sys.stderr)
                return 1
            sweep["seconds"] = time.perf_counter() - started
            sweep["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            if args.json:   # every finished point kept, should the sweep stop early
                write_atomically(args.json, json.dumps(sweep, indent=1))
            bar.advance(f"{model} {topology} {h:g}/{n:g}")
    report(sweep, sys.stdout)
    return 0


def report(sweep: dict, out) -> None:
    """Every point, then each figure's statements beside irc's numbers (of a sweep that
    stopped early, the models and bandwidths whose points all finished)."""
    rows, figures, noc = sweep["rows"], set(sweep["figures"]), sweep["noc_default"]

    def complete(model, h):
        return all(_find(rows, model=model, topology=t, hbm_tbps=h, noc_tbps=noc) for t in TOPOLOGIES)

    models = [m for m in sweep["models"] if any(complete(m, h) for h in sweep["hbm"])]
    hbm = [h for h in sweep["hbm"] if models and all(complete(m, h) for m in models)]
    noc_tbps = {r["noc_tbps"] for r in rows if r["model"] == "llama2-70b"}
    noc_hbm = [h for h in sweep["noc_hbm"] if len(noc_tbps) > 1 and all(
        _find(rows, model="llama2-70b", topology=t, hbm_tbps=h, noc_tbps=n) for t in TOPOLOGIES for n in noc_tbps)]
    print(f"ELK s6.4 in irc: {len(rows)} points on {sweep['base']} (all-to-all) and its "
          f"{'x'.join(map(str, sweep['mesh']))} mesh, {sweep['layers'] if sweep['layers'] >= 0 else 'all'} layers, "
          f"batch {sweep['batch']}, KV cache {sweep['seq']}; the NoC of Figures 19-21: {noc:g} TB/s", file=out)
    if "mesh_links" in sweep:
        shifts = ("the ops shifting at the all-to-all port's rate" if sweep.get("mesh_shifts") == "port"
                  else "the ops shifting at the link rate")   # a sweep before --mesh-shifts: at the link rate
        print(f"mesh links ({sweep['mesh_links']}): {sweep['mesh_link_gbps']:.4g} GB/s each at that NoC, "
              f"each NoC bandwidth scaling them in proportion; {shifts}", file=out)
    print_points(rows, out)
    if hbm and 19 in figures:
        figure19(rows, models, hbm, noc, out)
    if hbm and 20 in figures:
        figure20(rows, models, hbm, noc, out)
    if hbm and 21 in figures:
        figure21(rows, models, hbm, noc, out)
    if noc_hbm and 22 in figures:
        figure22(rows, noc_hbm, out)
    print(f"\n{len(rows)} points in {sweep['seconds']:.0f} s, peak RSS {sweep['peak_rss_mib']:.0f} MiB", file=out)

if __name__ == "__main__":
    sys.exit(main())
