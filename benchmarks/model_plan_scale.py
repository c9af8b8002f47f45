"""Model-wide planning at scale: a Llama2-13B-sized decoder (40 layers, 1,920 ops) planned end to end.

Builds the decoder from Llama 2 13B's published configuration (hidden 5120, 40 heads of
128, SwiGLU FFN 13824, 40 layers, RMSNorm, rotary embeddings; Touvron et al. 2023) as
planner ``OpSpec``s, 48 operators per layer (``llama_layer_ops``), at batch 1 and
sequence 128 by default, and plans it twice (identical layers share one frontier search
per op signature):

1. **As compiled**: the whole model on ``--device`` (default ``ipu-mk2-hbm``, one IPU Mk2
   with HBM), planned the way ``rtensor-partition`` plans a function: T10's Algorithm 1
   (``irc.lowering.model_from_ir.plan_function``: Algorithm 1 or the per-op plans, the
   faster that fits), and, when the model does not fit in SRAM on a chip with off-chip
   memory, ELK's preload planner (ELK-Dyn, seeds/004 s4.2-s4.3, ``irc.planner.elk``). 13B
   parameters in float16 are 25 GB, far beyond one IPU's 900 MB of SRAM, so this is ELK;
   ELK's other designs (Basic, Static, the Ideal bound) are printed beside it.
2. **Algorithm 1 at the same depth**: the same 40-layer, 1,920-op decoder with its width
   divided by ``--fit-scale`` (default 8: hidden 640, 5 heads of 128, FFN 1728, 382 MiB of
   weights) on ``--fit-device`` (default ``ipu-mk2``, no off-chip memory), where the
   weights rest on chip and T10's Algorithm 1 (s4.3.2) plans it; then the end-to-end and
   per-layer times of irc, the T10 artifact's reverse walk, a PopART-style VGM baseline, a
   Roller-style baseline and every op at its fastest plan (memory ignored).

Each part prints its wall and CPU time (the op tables' searches included) and the
process's peak RSS so far against the issue's targets (< 60 s, < 2 GB), and the
published planner times beside them: T10 compiles "in a few hours for most DNN inference
programs" (T10 s6, Figure 15, on an AMD Ryzen 7950X3D); ELK plans an LLM on an IPU-POD4
"in 5 minutes using a 32-core AMD EPYC 7543" (ELK s6, Figure 16).

    PYTHONPATH=. python benchmarks/model_plan_scale.py [--layers 40] [--batch 1] [--seq 128]
        [--model llama2-13b|bert] [--device ipu-mk2-hbm] [--fit-scale 8] [--fit-device ipu-mk2]
        [--cost t10] [--json out.json]

``--model bert`` plans BERT-large (24 layers, batch 8, sequence 384) on ``ipu-mk2`` as
part 1 (it fits: Algorithm 1 and the baselines); ``--fit-scale 0`` skips part 2.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import sys
import time
from dataclasses import dataclass

from irc.cost import CostModelError
from irc.planner.baselines_model import fastest_bound, roller_plan, vgm_plan
from irc.planner.elk import elk_plan
from irc.planner.model import ModelFitError, ModelOp, ModelSpec, plan_model
from irc.planner.op_table import FrontierCache
from irc.planner.preload import PreloadFitError
from irc.planner.serialize import plan_to_dict
from irc.plans.spec import OpSpec, TensorSpec
from irc.progress import Progress
from irc.workloads.bert import LAYER_INPUT, bert_model, stack_layers

PLAN_SECONDS_TARGET = 60.0
PEAK_RSS_TARGET_MB = 2048.0
PUBLISHED = (
    'T10: "a few hours for most DNN inference programs" (T10 s6, Figure 15; AMD Ryzen 7950X3D); '
    'ELK: an LLM on an IPU-POD4 "in 5 minutes using a 32-core AMD EPYC 7543" (ELK s6, Figure 16)'
)

# Llama 2 13B (Touvron et al. 2023, Table 1 and the published config.json)
LLAMA2_13B = {"hidden": 5120, "heads": 40, "ffn": 13824, "layers": 40, "vocab": 32000}


def _t(name: str, *axes: str) -> TensorSpec:
    return TensorSpec(name, tuple((a,) for a in axes))


def llama_layer_ops(batch: int, seq: int, hidden: int, heads: int, ffn: int) -> list[ModelOp]:
    """One Llama decoder layer as 48 operators on m = batch*seq tokens, g = batch*heads
    attention groups of head size d: RMSNorm (square, mean, +eps, rsqrt, normalise, scale
    by its weight), q/k/v projections and their split into heads, rotary embeddings on q
    and k (the first seq rows of the cos/sin tables, rotate-half as a negation and a concatenation,
    two products and a sum), causal attention (scores, 1/sqrt(d), mask, softmax as max,
    exp, sum, divide; context; merge of heads), the output projection and residual, a
    second RMSNorm, the SwiGLU FFN (gate, up, sigmoid, x*sigmoid, gate*up, down) and the
    second residual. ``producers`` index this list; -1 is the layer's input."""
    m, g, d = batch * seq, batch * heads, hidden // heads
    th, gid, gij = (("m", m), ("h", hidden)), (("g", g), ("i", seq), ("d", d)), (("g", g), ("i", seq), ("j", seq))
    ops: list[ModelOp] = []

    def add(name, axes, tensors, reduction=(), kind="elementwise", weights=(), **producers):
        ops.append(ModelOp(name, OpSpec(tuple(axes), tuple(tensors), tuple(reduction), kind), tuple(weights), producers))
        return len(ops) - 1

    def rmsnorm(prefix, source):
        sq = add(f"{prefix}_square", th, (_t("S", "m", "h"), _t("X", "m", "h")), kind="unary", X=source)
        mean = add(f"{prefix}_mean", th, (_t("Ms", "m"), _t("S", "m", "h")), ("h",), "reduce", S=sq)
        eps = add(f"{prefix}_eps", (("m", m),), (_t("Me", "m"), _t("Ms", "m")), kind="unary", Ms=mean)
        rs = add(f"{prefix}_rsqrt", (("m", m),), (_t("R", "m"), _t("Me", "m")), kind="unary", Me=eps)
        normal = add(f"{prefix}_normalize", th, (_t("N", "m", "h"), _t("X", "m", "h"), _t("R", "m")), X=source, R=rs)
        return add(f"{prefix}_weight", th, (_t("Y", "m", "h"), _t("N", "m", "h"), _t("G", "h")),
                   weights=("G",), N=normal)

    def proj(name, source, n_in, n_out, w):
        return add(name, (("m", m), ("k", n_in), ("n", n_out)), (_t("O", "m", "n"), _t("X", "m", "k"), _t(w, "k", "n")),
                   ("k",), "matmul", (w,), X=source)

    def heads_of(name, source):   # [m, h] -> [g, i, d]: a pure data movement
        return add(name, gid, (_t("Hd", "g", "i", "d"), _t("O", "g", "i", "d")), kind="other", O=source)

    def rotary(prefix, source, cos, sin):
        neg = add(f"{prefix}_neg_half", gid, (_t("N", "g", "i", "d"), _t("Hd", "g", "i", "d")), kind="unary", Hd=source)
        rot = add(f"{prefix}_rotate_half", gid, (_t("Rh", "g", "i", "d"), _t("N", "g", "i", "d")), kind="other", N=neg)
        a = add(f"{prefix}_cos", gid, (_t("A", "g", "i", "d"), _t("Hd", "g", "i", "d"), _t("C", "i", "d")),
                Hd=source, C=cos)
        b = add(f"{prefix}_sin", gid, (_t("B", "g", "i", "d"), _t("Rh", "g", "i", "d"), _t("Sn", "i", "d")),
                Rh=rot, Sn=sin)
        return add(f"{prefix}_sum", gid, (_t("Q", "g", "i", "d"), _t("A", "g", "i", "d"), _t("B", "g", "i", "d")),
                   A=a, B=b)

    x = LAYER_INPUT
    normed = rmsnorm("attn_norm", x)
    q = heads_of("q_heads", proj("q_proj", normed, hidden, hidden, "Wq"))
    k = heads_of("k_heads", proj("k_proj", normed, hidden, hidden, "Wk"))
    v = heads_of("v_heads", proj("v_proj", normed, hidden, hidden, "Wv"))
    # the first ``seq`` rows of the cos/sin tables (positions 0..seq-1), resting on chip
    table = (("i", seq), ("d", d))
    cos = add("cos_slice", table, (_t("C", "i", "d"), _t("Pc", "i", "d")), kind="other", weights=("Pc",))
    sin = add("sin_slice", table, (_t("Sn", "i", "d"), _t("Ps", "i", "d")), kind="other", weights=("Ps",))
    q = rotary("q_rope", q, cos, sin)
    k = rotary("k_rope", k, cos, sin)
    scores = add("scores", (("g", g), ("i", seq), ("d", d), ("j", seq)),
                 (_t("S", "g", "i", "j"), _t("Q", "g", "i", "d"), _t("K", "g", "j", "d")), ("d",), "matmul", Q=q, K=k)
    scaled = add("scale", gij, (_t("Sc", "g", "i", "j"), _t("S", "g", "i", "j")), kind="unary", S=scores)
    masked = add("causal_mask", gij, (_t("Sm", "g", "i", "j"), _t("Sc", "g", "i", "j"), _t("Mask", "i", "j")),
                 weights=("Mask",), Sc=scaled)
    row_max = add("softmax_max", gij, (_t("Mx", "g", "i"), _t("Sm", "g", "i", "j")), ("j",), "reduce", Sm=masked)
    e = add("softmax_exp", gij, (_t("E", "g", "i", "j"), _t("Sm", "g", "i", "j"), _t("Mx", "g", "i")),
            Sm=masked, Mx=row_max)
    z = add("softmax_sum", gij, (_t("Z", "g", "i"), _t("E", "g", "i", "j")), ("j",), "reduce", E=e)
    p = add("softmax_div", gij, (_t("P", "g", "i", "j"), _t("E", "g", "i", "j"), _t("Z", "g", "i")), E=e, Z=z)
    ctx = add("context", (("g", g), ("i", seq), ("j", seq), ("d", d)),
              (_t("Cx", "g", "i", "d"), _t("P", "g", "i", "j"), _t("V", "g", "j", "d")), ("j",), "matmul", P=p, V=v)
    merged = add("merge_heads", gid, (_t("Mh", "g", "i", "d"), _t("Cx", "g", "i", "d")), kind="other", Cx=ctx)
    out = proj("o_proj", merged, hidden, hidden, "Wo")
    res1 = add("residual1", th, (_t("R1", "m", "h"), _t("O", "m", "h"), _t("X", "m", "h")), O=out, X=x)
    normed2 = rmsnorm("ffn_norm", res1)
    gate = proj("gate_proj", normed2, hidden, ffn, "Wg")
    up = proj("up_proj", normed2, hidden, ffn, "Wu")
    mf = (("m", m), ("n", ffn))
    sig = add("silu_sigmoid", mf, (_t("Sg", "m", "n"), _t("O", "m", "n")), kind="unary", O=gate)
    silu = add("silu_mul", mf, (_t("Sl", "m", "n"), _t("O", "m", "n"), _t("Sg", "m", "n")), O=gate, Sg=sig)
    both = add("gate_up", mf, (_t("Gu", "m", "n"), _t("Sl", "m", "n"), _t("U", "m", "n")), Sl=silu, U=up)
    down = proj("down_proj", both, ffn, hidden, "Wd")
    add("residual2", th, (_t("R2", "m", "h"), _t("O", "m", "h"), _t("R1", "m", "h")), O=down, R1=res1)
    return ops


def llama_model(layers: int, batch: int, seq: int, hidden: int, heads: int, ffn: int) -> ModelSpec:
    """A Llama decoder stack (the embedding lookup and the LM head run on the host)."""
    return stack_layers(f"llama-l{layers}-h{hidden}-b{batch}-s{seq}",
                        llama_layer_ops(batch, seq, hidden, heads, ffn), layers)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@dataclass
class Timed:
    """Wall and CPU seconds of one planning, and the process's peak RSS after it."""

    wall: float
    cpu: float
    rss_mb: float

    def line(self) -> str:
        wall_ok = "within" if self.wall < PLAN_SECONDS_TARGET else "OVER"
        rss_ok = "within" if self.rss_mb < PEAK_RSS_TARGET_MB else "OVER"
        return (f"plan time {self.wall:.1f} s wall, {self.cpu:.1f} s CPU ({wall_ok} the < {PLAN_SECONDS_TARGET:.0f} s "
                f"target); peak RSS {self.rss_mb:.0f} MB ({rss_ok} the < {PEAK_RSS_TARGET_MB:.0f} MB target)")


class Clock:
    def __enter__(self) -> "Clock":
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc) -> None:
        self.timed = Timed(time.perf_counter() - self.wall, time.process_time() - self.cpu, peak_rss_mb())


def search_tables(model: ModelSpec, cache: FrontierCache) -> None:
    """Every op's frontier search and idle table (what planning costs), with a progress bar."""
    with Progress(len(model.ops), "op tables") as bar:
        for op in model.ops:
            cache.table(op.spec, op.weights)
            bar.advance(op.name)


def plan_as_compiled(model: ModelSpec, cache: FrontierCache):
    """What ``rtensor-partition`` does with a function (``lowering/te_to_rtensor.py``):
    Algorithm 1 or the per-op plans (``plan_function``); a model that does not fit, on a
    chip with off-chip memory, ELK-Dyn. Returns (kind, decision, the fit error or None)."""
    from irc.lowering.model_from_ir import plan_function

    search_tables(model, cache)
    try:
        return "algorithm1", plan_function(model, cache), None
    except ModelFitError as error:
        if cache.device.offchip is None:
            return "none", None, error
        return "elk-dyn", elk_plan(model, cache, "dyn"), error


def print_baselines(model: ModelSpec, layers: int, irc, cache: FrontierCache) -> dict:
    """Algorithm 1 beside the artifact's walk and the VGM, Roller and fastest baselines."""
    results = {"irc": irc}
    device, cost = cache.device, cache.cost
    started = time.perf_counter()
    try:
        results["artifact"] = plan_model(model, device, cost, cache=cache, direction="artifact")
        print(f"artifact walk: {time.perf_counter() - started:.1f} s")
    except ModelFitError as error:
        results["artifact"] = None
        print(f"artifact walk: {error}")
    for name, baseline in (("vgm", vgm_plan), ("roller", roller_plan), ("fastest", fastest_bound)):
        started = time.perf_counter()
        try:
            results[name] = baseline(model, device, cost, cache=cache)
        except ModelFitError as error:
            results[name] = None
            print(f"{name}: does not fit: {error}")
            continue
        print(f"{name} baseline: {time.perf_counter() - started:.1f} s")
    print(f"{'plan':<10} {'total ms':>10} {'per layer ms':>13} {'x irc':>7}  breakdown")
    for name, result in results.items():
        if result is None:
            print(f"{name:<10} {'-':>10} {'-':>13} {'-':>7}  no plan")
            continue
        total = result.seconds * 1e3
        if name in ("irc", "artifact"):
            detail = (f"active {result.active_seconds * 1e3:.2f}, setup {result.setup_seconds * 1e3:.2f}, "
                      f"relayout {result.relayout_seconds * 1e3:.2f} ms")
        elif name == "fastest":
            detail = "every op at its fastest plan; no setup, relayout or memory limit"
        else:
            detail = f"VGM load/store {result.transfer_seconds * 1e3:.2f} ms"
        print(f"{name:<10} {total:>10.3f} {total / layers:>13.3f} {result.seconds / irc.seconds:>7.2f}  {detail}")
    return {name: (r.to_dict() if r is not None else None) for name, r in results.items()}


def report_as_compiled(model: ModelSpec, layers: int, device: str, cost: str) -> dict:
    print(f"[1] {model.name}: {len(model.ops)} ops, {model.weight_bytes() / 2**20:.1f} MiB of weights, "
          f"planned as rtensor-partition plans it on {device} (cost model {cost})")
    cache = FrontierCache(device, cost)
    with Clock() as clock:
        kind, decision, error = plan_as_compiled(model, cache)
    out = {"model": model.name, "ops": len(model.ops), "device": device, "planner": kind,
           "plan_seconds": clock.timed.wall, "plan_cpu_seconds": clock.timed.cpu, "peak_rss_mb": clock.timed.rss_mb,
           "searches": cache.searches}
    if error is not None:
        print(f"Algorithm 1: {error}")
    if kind == "none":
        print(f"no plan: {cache.device.name} has no off-chip memory to preload from")
        print(clock.timed.line())
        return out
    if kind == "elk-dyn":
        clock_hz = cache.device.clock_hz
        print(f"-> ELK preload planning (off-chip memory: {cache.device.offchip.bytes_per_s / 1e9:.0f} GB/s)")
        print(f"ELK-Dyn: {decision.latency_cycles / clock_hz * 1e3:.3f} ms for the {layers} layers "
              f"({decision.latency_cycles / clock_hz * 1e3 / layers:.3f} ms per layer), {cache.searches} frontier "
              f"searches for {len(model.ops)} ops")
        print(clock.timed.line())
        out["latency_ms"] = decision.latency_cycles / clock_hz * 1e3
        out["ops_plans"] = [{"name": op.name, "active": plan_to_dict(op.active),
                             "idle": op.idle.to_dict() if op.idle is not None else None,
                             "setup_cycles": op.setup_cycles} for op in decision.ops]
        out["designs"] = {}
        for design in ("basic", "static", "ideal"):
            started = time.perf_counter()
            try:
                other = elk_plan(model, cache, design)
            except PreloadFitError as failure:
                print(f"  {design:<7} no plan: {failure}")
                continue
            ms = other.latency_cycles / clock_hz * 1e3
            out["designs"][design] = {"latency_ms": ms, "seconds": time.perf_counter() - started}
            print(f"  {design:<7} {ms:>9.3f} ms ({ms / out['latency_ms']:.2f}x ELK-Dyn), scheduled in "
                  f"{time.perf_counter() - started:.1f} s")
        return out
    plan = decision.model_plan
    print(f"Algorithm 1: {len(plan.trajectory)} states; {decision.source} plans chosen; "
          f"{decision.seconds * 1e3:.3f} ms end to end; memory per core: idle {plan.idle_bytes} B, "
          f"peak {plan.peak_bytes} B of {plan.sram_bytes} B")
    print(clock.timed.line())
    out["latency_ms"] = decision.seconds * 1e3
    out["plans"] = print_baselines(model, layers, plan, cache)
    return out


def report_fitting(model: ModelSpec, layers: int, device: str, cost: str) -> dict:
    print(f"[2] {model.name}: {len(model.ops)} ops, {model.weight_bytes() / 2**20:.1f} MiB of weights on {device} "
          f"(cost model {cost}): T10 Algorithm 1")
    cache = FrontierCache(device, cost)
    out = {"model": model.name, "ops": len(model.ops), "device": device, "planner": "algorithm1"}
    with Clock() as clock:
        search_tables(model, cache)
        tables = time.perf_counter() - clock.wall
        try:
            irc = plan_model(model, device, cost, cache=cache)
        except ModelFitError as error:
            irc = error
    out.update(plan_seconds=clock.timed.wall, plan_cpu_seconds=clock.timed.cpu, peak_rss_mb=clock.timed.rss_mb,
               searches=cache.searches)
    if isinstance(irc, ModelFitError):
        print(f"does not fit: {irc}")
        print(clock.timed.line())
        out["planner"] = "none"
        return out
    print(f"op tables {tables:.1f} s ({cache.searches} frontier searches for {len(model.ops)} ops), then "
          f"{len(irc.trajectory)} Algorithm 1 states; memory per core: idle {irc.idle_bytes} B, peak "
          f"{irc.peak_bytes} B of {irc.sram_bytes} B")
    print(clock.timed.line())
    out["latency_ms"] = irc.seconds * 1e3
    out["plans"] = print_baselines(model, layers, irc, cache)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=("llama2-13b", "bert"), default="llama2-13b")
    parser.add_argument("--layers", type=int)
    parser.add_argument("--batch", type=int)
    parser.add_argument("--seq", type=int)
    parser.add_argument("--hidden", type=int)
    parser.add_argument("--heads", type=int)
    parser.add_argument("--ffn", type=int)
    parser.add_argument("--device", help="part 1's chip (default: ipu-mk2-hbm for llama2-13b, ipu-mk2 for bert)")
    parser.add_argument("--fit-scale", type=int, default=8,
                        help="part 2 divides hidden, heads and FFN by this (0: skip part 2)")
    parser.add_argument("--fit-device", default="ipu-mk2")
    parser.add_argument("--cost", default="t10")
    parser.add_argument("--json", help="write both parts' figures and plans here")
    args = parser.parse_args(argv)

    llama = args.model == "llama2-13b"
    defaults = ({"layers": 40, "batch": 1, "seq": 128, "hidden": 5120, "heads": 40, "ffn": 13824} if llama else
                {"layers": 24, "batch": 8, "seq": 384, "hidden": 1024, "heads": 16, "ffn": 4096})
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.device is None:
        args.device = "ipu-mk2-hbm" if llama else "ipu-mk2"
    build = llama_model if llama else bert_model
    shape = (args.batch, args.seq, args.hidden, args.heads, args.ffn)
    out: dict = {"targets": {"plan_seconds": PLAN_SECONDS_TARGET, "peak_rss_mb": PEAK_RSS_TARGET_MB}}
    s = args.fit_scale if llama else 0
    if s and (s < 0 or args.hidden % s or args.ffn % s or args.heads % s or (args.hidden // s) % (args.heads // s)):
        print(f"error: --fit-scale {s} must divide hidden {args.hidden}, heads {args.heads} and FFN "
              f"{args.ffn} (and leave whole heads)", file=sys.stderr)
        return 1
    try:
        out["as_compiled"] = report_as_compiled(build(args.layers, *shape), args.layers, args.device, args.cost)
        if s:
            print()
            small = build(args.layers, args.batch, args.seq, args.hidden // s, args.heads // s, args.ffn // s)
            out["fitting"] = report_fitting(small, args.layers, args.fit_device, args.cost)
    except (CostModelError, PreloadFitError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"\npublished planner times: {PUBLISHED}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(out, handle, default=lambda v: None if isinstance(v, float) and not math.isfinite(v) else v)
    return 0


if __name__ == "__main__":
    sys.exit(main())
