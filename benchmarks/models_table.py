"""Whole models on one IPU Mk2: irc's model-wide plan against VGM and Roller-style (T10 §6.1-6.2).

For BERT-base (sequence 128), BERT-large (sequence 128 and 384), ViT-base, ResNet-50
and a GPT-2-style decoder (GPT-2 small with its LM head), at batch sizes doubling
from 1 until the model no longer fits on the chip (T10 §6.1), one table row each:

    ops, irc time (T10 Algorithm 1 via `irc.lowering.model_from_ir.plan_function`, the
    plan ``rtensor-partition{mode=model}`` puts in the IR), VGM time, Roller-style time
    (`irc.planner.baselines_model`, same cost model), speedups, SRAM used (peak bytes
    per core while any op runs, of the SRAM), compile (planning) time and peak RSS.

    PYTHONPATH=. python benchmarks/models_table.py [--models bert-base,vit-base] [--max-batch 64]
        [--device ipu-mk2] [--cost t10] [--json out.json]

Models are built from `OpSpec`s (`irc.planner.bert` for the transformer layers, the
builders below for ViT's patch embedding, GPT-2's causal mask and LM head and
ResNet-50's convolutions). The ONNX builders of ``benchmarks/models/`` describe one
layer, block or stage each, not whole models, so the table uses the OpSpec builders
(``irc-plan --model layer.onnx`` plans one imported layer). Modelling notes:
biases, scales and batch-norms fold into neighbouring ops; a stride-s convolution is
priced as a stride-1 convolution over its output extent (OpSpec has no stride); an
activation read through a padded/strided window or a reshape is not linked to its
producer (no relayout is charged for it); the peak RSS column is the process's peak
so far (it only grows). A progress bar over operators is drawn on a terminal only.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import sys
import time
from dataclasses import replace

from irc.planner.baselines_model import roller_plan, vgm_plan
from irc.planner.bert import LAYER_INPUT, bert_layer_ops, stack_layers
from irc.planner.model import ModelFitError, ModelOp, ModelSpec, check_fits
from irc.lowering.model_from_ir import plan_function
from irc.planner.op_table import FrontierCache
from irc.planner.spec import OpSpec, TensorSpec
from irc.progress import Progress


def _t(name: str, *dims) -> TensorSpec:
    return TensorSpec(name, tuple(d if isinstance(d, tuple) else (d,) for d in dims))


# ---------------------------------------------------------------------------
# Model builders (batch -> ModelSpec)
# ---------------------------------------------------------------------------


def bert(layers: int, hidden: int, heads: int, ffn: int, seq: int, name: str):
    def build(batch: int) -> ModelSpec:
        return replace(stack_layers(name, bert_layer_ops(batch, seq, hidden, heads, ffn), layers), name=name)

    return build


def vit_base(batch: int) -> ModelSpec:
    """ViT-B/16 on 224x224 images: a patch-embedding matmul (16x16x3 = 768 pixels per
    patch, 196 patches), then 12 encoder layers over 197 tokens (the class token joins
    on the host, so the embedding is not linked to the first layer), then the head."""
    patches, tokens, hidden = 196, 197, 768
    embed = ModelOp(
        "patch_embed",
        OpSpec((("m", batch * patches), ("p", 768), ("h", hidden)), (_t("E", "m", "h"), _t("P", "m", "p"), _t("Wp", "p", "h")),
               ("p",), "matmul"),
        ("Wp",),
    )
    encoder = stack_layers("vit", bert_layer_ops(batch, tokens, hidden, 12, 3072), 12)
    head = ModelOp(
        "head",
        OpSpec((("b", batch), ("h", hidden), ("c", 1000)), (_t("L", "b", "c"), _t("X", "b", "h"), _t("Wh", "h", "c")),
               ("h",), "matmul"),
        ("Wh",),
    )
    ops = [embed] + [_shift(op, 1) for op in encoder.ops] + [head]
    return ModelSpec("vit-base", tuple(ops))


def _shift(op: ModelOp, by: int) -> ModelOp:
    return ModelOp(op.name, op.spec, op.weights, {t: p + by for t, p in op.producers.items()})


def gpt2_small(seq: int):
    """GPT-2 small (12 layers, 768 hidden, 12 heads): a decoder layer is an encoder layer
    whose softmax also reads the causal mask M[i,j] (a constant buffer resting on chip
    like a weight), plus the LM head against the 50257-token embedding."""
    def build(batch: int) -> ModelSpec:
        layer = []
        for op in bert_layer_ops(batch, seq, 768, 12, 3072):
            if op.name == "softmax_exp":
                spec = op.spec
                op = ModelOp(op.name, replace(spec, tensors=spec.tensors + (_t("Mask", "i", "j"),)),
                             op.weights + ("Mask",), op.producers)
            layer.append(op)
        decoder = stack_layers("gpt2", layer, 12)
        head = ModelOp(
            "lm_head",
            OpSpec((("m", batch * seq), ("h", 768), ("v", 50257)), (_t("L", "m", "v"), _t("Y", "m", "h"), _t("Wte", "h", "v")),
                   ("h",), "matmul"),
            ("Wte",), {"Y": len(decoder.ops) - 1},
        )
        return ModelSpec("gpt2-small", decoder.ops + (head,))

    return build


def _conv(name, batch, c_in, c_out, size, kernel, producer=None) -> ModelOp:
    """Conv (batch-norm folded) producing c_out x size x size: stride-1 pricing."""
    axes = [("b", batch), ("f", c_out), ("c", c_in), ("h", size), ("w", size)]
    if kernel > 1:
        axes += [("r", kernel), ("s", kernel)]
        x = _t("X", "b", "c", ("h", "r"), ("w", "s"))
        w = _t("W", "f", "c", "r", "s")
        reduction = ("c", "r", "s")
    else:
        x = _t("X", "b", "c", "h", "w")
        w = _t("W", "f", "c")
        reduction = ("c",)
    spec = OpSpec(tuple(axes), (_t("Y", "b", "f", "h", "w"), x, w), reduction, "conv" if kernel > 1 else "matmul")
    return ModelOp(name, spec, ("W",), {"X": producer} if producer is not None else {})


def _eltwise(name, batch, channels, size, producers: dict) -> ModelOp:
    """Residual add + ReLU."""
    axes = (("b", batch), ("f", channels), ("h", size), ("w", size))
    inputs = tuple(_t(n, "b", "f", "h", "w") for n in producers)
    return ModelOp(name, OpSpec(axes, (_t("Y", "b", "f", "h", "w"),) + inputs, (), "elementwise"), (), dict(producers))


def resnet50(batch: int) -> ModelSpec:
    """ResNet-50 on 224x224: stem conv 7x7 (112x112) and max-pool (56x56), 16 bottleneck
    blocks in stages of 3, 4, 6, 3 (widths 64-512, 4x expansion), global average pool
    and the 1000-class FC layer."""
    ops: list[ModelOp] = []

    def add(op: ModelOp) -> int:
        ops.append(op)
        return len(ops) - 1

    stem = add(_conv("stem", batch, 3, 64, 112, 7))
    pool_axes = (("b", batch), ("f", 64), ("h", 56), ("w", 56), ("r", 3), ("s", 3))
    x = add(ModelOp("maxpool", OpSpec(pool_axes, (_t("Y", "b", "f", "h", "w"), _t("X", "b", "f", ("h", "r"), ("w", "s"))),
                                      ("r", "s"), "pool"), (), {}))
    del stem
    channels, size = 64, 56
    for stage, (width, blocks) in enumerate(zip((64, 128, 256, 512), (3, 4, 6, 3))):
        for block in range(blocks):
            out_size = size // 2 if (block == 0 and stage > 0) else size
            prefix = f"stage{stage + 1}.{block}"
            a = add(_conv(f"{prefix}.conv1", batch, channels, width, size, 1, x))
            b = add(_conv(f"{prefix}.conv2", batch, width, width, out_size, 3))
            c = add(_conv(f"{prefix}.conv3", batch, width, 4 * width, out_size, 1, b))
            del a
            if block == 0:
                shortcut = add(_conv(f"{prefix}.downsample", batch, channels, 4 * width, out_size, 1,
                                     x if out_size == size else None))
            else:
                shortcut = x
            x = add(_eltwise(f"{prefix}.add_relu", batch, 4 * width, out_size, {"A": c, "B": shortcut}))
            channels, size = 4 * width, out_size
    pooled = add(ModelOp("avgpool", OpSpec((("b", batch), ("f", 2048), ("p", 49)),
                                           (_t("Y", "b", "f"), _t("X", "b", "f", "p")), ("p",), "reduce"), (), {}))
    add(ModelOp("fc", OpSpec((("b", batch), ("f", 2048), ("c", 1000)), (_t("L", "b", "c"), _t("X", "b", "f"), _t("W", "f", "c")),
                             ("f",), "matmul"), ("W",), {"X": pooled}))
    return ModelSpec("resnet-50", tuple(ops))


MODELS = {
    "bert-base-s128": bert(12, 768, 12, 3072, 128, "bert-base-s128"),
    "bert-large-s128": bert(24, 1024, 16, 4096, 128, "bert-large-s128"),
    "bert-large-s384": bert(24, 1024, 16, 4096, 384, "bert-large-s384"),
    "vit-base": vit_base,
    "resnet-50": resnet50,
    "gpt2-small-s128": gpt2_small(128),
}
assert LAYER_INPUT == -1


# ---------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _ms(plan) -> float | None:
    return None if plan is None else plan.seconds * 1e3


def run_row(name: str, batch: int, model: ModelSpec, cache: FrontierCache) -> dict:
    started = time.perf_counter()
    with Progress(len(model.ops), f"{name} b{batch}") as bar:
        decision = plan_function(model, cache, progress=lambda done, total, label: bar.advance(label))
    compile_seconds = time.perf_counter() - started
    baselines = {}
    for label, function in (("vgm", vgm_plan), ("roller", roller_plan)):
        try:
            baselines[label] = function(model, cache.device, cache.cost, cache=cache)
        except ModelFitError:
            baselines[label] = None
    irc_ms = decision.seconds * 1e3
    row = {
        "model": name, "batch": batch, "ops": len(model.ops),
        "signatures": decision.model_plan.unique_signatures,
        "irc_ms": irc_ms, "vgm_ms": _ms(baselines["vgm"]), "roller_ms": _ms(baselines["roller"]),
        "sram_used": decision.peak_bytes / cache.device.sram_bytes,
        "idle_bytes": decision.idle_bytes, "peak_bytes": decision.peak_bytes,
        "compile_s": compile_seconds, "peak_rss_mb": peak_rss_mb(), "source": decision.source,
    }
    for label in ("vgm", "roller"):
        value = row[f"{label}_ms"]
        row[f"speedup_{label}"] = None if value is None else value / irc_ms
    return row


HEADER = (f"{'model':<16} {'batch':>5} {'ops':>5} {'irc ms':>10} {'VGM ms':>10} {'Roller ms':>10} "
          f"{'x VGM':>7} {'x Roller':>8} {'SRAM':>6} {'compile s':>9} {'RSS MB':>7}")


def _fmt(value, spec: str, width: int) -> str:
    return f"{'n/a':>{width}}" if value is None else f"{value:>{width}{spec}}"


def format_row(row: dict) -> str:
    return (f"{row['model']:<16} {row['batch']:>5} {row['ops']:>5} {row['irc_ms']:>10.3f} "
            f"{_fmt(row['vgm_ms'], '.3f', 10)} {_fmt(row['roller_ms'], '.3f', 10)} "
            f"{_fmt(row['speedup_vgm'], '.2f', 7)} {_fmt(row['speedup_roller'], '.2f', 8)} "
            f"{row['sram_used'] * 100:>5.1f}% {row['compile_s']:>9.1f} {row['peak_rss_mb']:>7.0f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated subset of {', '.join(MODELS)}")
    parser.add_argument("--max-batch", type=int, default=4096, help="stop doubling at this batch")
    parser.add_argument("--device", default="ipu-mk2")
    parser.add_argument("--cost", default="t10")
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")
    cache = FrontierCache(args.device, args.cost)
    print(f"device {cache.device.name} ({cache.device.cores} cores, {cache.device.sram_bytes} B SRAM per core), "
          f"cost model {cache.cost.name}; batch doubles from 1 until the model no longer fits")
    print(HEADER, flush=True)
    rows = []
    for name in names:
        batch = 1
        while batch <= args.max_batch:
            model = MODELS[name](batch)
            try:
                check_fits(model, cache.device, cache.cost, cache=cache)
                row = run_row(name, batch, model, cache)
            except ModelFitError as error:
                if error.needed > error.available + 1:
                    why = f"needs {error.needed} B per core, {error.available} B available"
                else:  # one operator has no plan at all: say which and why
                    why = str(error).split(": ", 1)[-1][:160]
                print(f"{name:<16} {batch:>5} {len(model.ops):>5}  does not fit: {why}", flush=True)
                break
            rows.append(row)
            print(format_row(row), flush=True)
            batch *= 2
            # another batch has other shapes: these tables never serve again, free them
            cache.tables.clear()
            cache._rescored.clear()
    if rows:
        speedups = [r["speedup_vgm"] for r in rows if r["speedup_vgm"] is not None]
        if speedups:
            geo = math.exp(sum(math.log(s) for s in speedups) / len(speedups))
            print(f"\ngeometric mean speedup over VGM: {geo:.2f}x over {len(speedups)} rows; "
                  f"peak RSS {peak_rss_mb():.0f} MB")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
