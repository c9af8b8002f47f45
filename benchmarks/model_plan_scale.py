"""Model-wide planning at scale: a Llama2-13B-sized decoder (40 layers, 1,900+ ops) on the IPU Mk2.

Builds the decoder from Llama 2 13B's published configuration (hidden 5120, 40 heads of
128, SwiGLU FFN 13824, 40 layers, RMSNorm, rotary embeddings; Touvron et al. 2023) as
planner ``OpSpec``s, 48 operators per layer (``llama_layer_ops``), at batch 1 and
sequence 128 by default, and prints the wall and CPU time and peak RSS of T10's
Algorithm 1 over the whole model (identical layers share one frontier search per op
signature; the per-op comparison reuses the same searches), then the end-to-end and
per-layer times of: irc (Algorithm 1, T10 s4.3.2), the artifact's reverse walk, a
PopART-style VGM baseline, a Roller-style baseline, and every op at its fastest plan
(memory ignored). Target: planning in < 60 s and < 2 GB. 13B parameters in float16 are
26 GB, more than the chip's 900 MB of SRAM, so ``--layers`` defaults to the 40 layers
but the fit is reported, not required: a model that does not fit says by how much.

    PYTHONPATH=. python benchmarks/model_plan_scale.py [--layers 40] [--batch 1] [--seq 128]
        [--model llama2-13b|bert] [--cost t10|seed003] [--device ipu-mk2] [--json out.json]

``--model bert`` plans BERT-large (24 layers, batch 8, sequence 384) as before.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time

from irc.cost import CostModelError
from irc.planner.baselines_model import fastest_bound, roller_plan, vgm_plan
from irc.planner.bert import LAYER_INPUT, bert_model, stack_layers
from irc.planner.model import ModelFitError, ModelOp, ModelSpec, plan_model
from irc.planner.op_table import FrontierCache
from irc.planner.spec import OpSpec, TensorSpec
from irc.progress import Progress

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
    parser.add_argument("--model", choices=("llama2-13b", "bert"), default="llama2-13b")
    parser.add_argument("--layers", type=int)
    parser.add_argument("--batch", type=int)
    parser.add_argument("--seq", type=int)
    parser.add_argument("--hidden", type=int)
    parser.add_argument("--heads", type=int)
    parser.add_argument("--ffn", type=int)
    parser.add_argument("--device", default="ipu-mk2")
    parser.add_argument("--cost", default="t10")
    parser.add_argument("--json", help="write every plan's to_dict() here")
    args = parser.parse_args(argv)

    defaults = ({"layers": 40, "batch": 1, "seq": 128, "hidden": 5120, "heads": 40, "ffn": 13824}
                if args.model == "llama2-13b" else
                {"layers": 24, "batch": 8, "seq": 384, "hidden": 1024, "heads": 16, "ffn": 4096})
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    build = llama_model if args.model == "llama2-13b" else bert_model
    model = build(args.layers, args.batch, args.seq, args.hidden, args.heads, args.ffn)
    print(f"{model.name}: {len(model.ops)} ops, {model.weight_bytes() / 2**20:.1f} MiB of weights, "
          f"device {args.device}, cost model {args.cost}")
    cache = FrontierCache(args.device, args.cost)
    started, cpu = time.perf_counter(), time.process_time()
    # the frontier searches and idle tables of every op (what planning costs), then
    # Algorithm 1 over them when the model fits
    with Progress(len(model.ops), "op tables") as bar:
        for op in model.ops:
            cache.table(op.spec, op.weights)
            bar.advance(op.name)
    tables = time.perf_counter() - started
    print(f"op tables: {tables:.1f} s wall, {time.process_time() - cpu:.1f} s CPU ({cache.searches} frontier "
          f"searches for {len(model.ops)} ops), peak RSS {peak_rss_mb():.0f} MB")
    try:
        irc = plan_model(model, args.device, args.cost, cache=cache, progress=progress)
    except (ModelFitError, CostModelError) as error:
        print(f"irc: {error}")
        print(f"irc planning: {time.perf_counter() - started:.1f} s wall, {time.process_time() - cpu:.1f} s CPU, "
              f"peak RSS {peak_rss_mb():.0f} MB")
        return 0 if isinstance(error, ModelFitError) else 1
    planned = time.perf_counter() - started
    print(f"irc planning: {planned:.1f} s wall, {time.process_time() - cpu:.1f} s CPU ({irc.searches} frontier "
          f"searches for {irc.unique_signatures} op signatures, {len(irc.trajectory)} Algorithm 1 states), "
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
