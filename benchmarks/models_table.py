"""Whole models on one IPU Mk2 through the compiler: irc's model-wide plan against VGM and Roller-style (T10 §6.1-6.2).

For BERT-base (sequence 128), BERT-large (sequence 128 and 384), ViT-base, ResNet-50
and GPT-2 small (with its LM head), at batch sizes doubling from 1 until the model no
longer fits on the chip (T10 §6.1), one table row each. Each model is built as an ONNX
graph in code (``irc.workloads.graphs``, float16, random weights; identical transformer
layers share one set of initializers so that BERT-large costs one layer's memory to
build: the planner still rests every op's weights on its own), imported with irc's
ONNX importer (``irc.frontend.import_model``, what ``irc-translate`` runs), and what the
importer produced is planned (``irc.lowering.model_from_ir``: ``function_model``, then
``plan_function``, the plan ``rtensor-partition{mode=model}`` puts in the IR):

    ops (planned te ops; host fallbacks, if any, in brackets), irc time (T10 Algorithm
    1), VGM and Roller-style times (``irc.planner.baselines_model``, same cost model),
    speedups, the ops where a baseline's plan for that op beats irc's, SRAM used (peak bytes per core while any op runs), host I/O share,
    compile time (import + every plan search + Algorithm 1) and peak RSS.

Host I/O share: only the model's edges, computed from the plan (without compiling and
running it; on a compiled run it equals ``report.cycles["host_io"]``, which
``tests/benchmarks/test_benchmark_models.py`` checks): the weights loaded into their idle
layouts (the plan's idle bytes per core), each input from outside loaded once into the
partition of the op that reads it, and each returned output stored from its producer's
partition, each core moving its own bytes over its link at the device's link bandwidth,
as ``irc-run`` prices ``device.load``/``device.store``; the share is that time over
(planned time + host I/O).

Cross-check (``--cross-check``): the same models built directly from planner ``OpSpec``s
(the builders below: ``irc.workloads.bert`` layers, convolutions with their real stride)
are planned too, and the table says whether both paths agree on the heavy operators
(every matmul and conv, by kind and multiply-accumulates) and on their time (the sum of
their fastest plans); the OpSpec models fold biases, batch-norms and activations into
their neighbours, so their whole-model times are lower and only compared as a ratio.

    PYTHONPATH=. python benchmarks/models_table.py [--models bert-base-s128,vit-base] [--max-batch 64]
        [--device ipu-mk2] [--cost t10] [--cross-check] [--jobs 2] [--json out.json]

The (model, batch) rows are planned by ``--jobs`` worker processes (default one per CPU;
``--jobs 1`` plans in this process, one batch after another), each with its own caches;
the rows print in table order. The peak RSS column is the peak so far of the process that
planned the row (it only grows); the closing line gives the processes' peaks summed (at
most what they held together) and the largest, and the CPU time of all of them. A
progress bar (over rows, or with ``--jobs 1`` over each row's operators) is drawn on a
terminal only.
"""

from __future__ import annotations

import argparse
import io
import json
import multiprocessing
import math
import resource
import sys
import time
from dataclasses import replace

import numpy as np

import os
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

from xdsl.dialects.func import FuncOp

from irc.dialects.dtypes import element_bytes
from irc.dialects.te import TensorOp
from irc.frontend import import_model
from irc.lowering.model_from_ir import function_model, is_weight, plan_function
from irc.planner.baselines_model import roller_plan, vgm_plan
from irc.planner.model import ModelFitError, ModelOp, ModelSpec, check_fits
from irc.planner.op_table import FrontierCache
from irc.plans.spec import OpSpec, TensorSpec
from irc.progress import Progress
from irc.workloads.bert import LAYER_INPUT, bert_layer_ops, stack_layers
from irc.workloads.graphs import (  # the ONNX builders
    BertConfig, GPT2Config, ResNet50Config, ViTConfig, build_bert_layer, build_gpt2_block, build_resnet50, build_vit,
)
from irc.workloads.graphs.graph import mark_weight_inputs


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
    """ViT-B/16 on 224x224: the patch embedding (a 16x16 stride-16 conv, 196 patches),
    then 12 encoder layers over 197 tokens with a fused qkv projection (the class token
    joins on the host, so the embedding is not linked to the first layer), then the head."""
    tokens, hidden = 197, 768
    embed = _conv("patch_embed", batch, 3, hidden, 14, 16, stride=16)
    encoder = stack("vit", fuse_qkv(bert_layer_ops(batch, tokens, hidden, 12, 3072)), 12)
    head = ModelOp(
        "head",
        OpSpec((("b", batch), ("h", hidden), ("c", 1000)), (_t("L", "b", "c"), _t("X", "b", "h"), _t("Wh", "h", "c")),
               ("h",), "matmul"),
        ("Wh",),
    )
    ops = [embed] + [_shift(op, 1) for op in encoder.ops] + [head]
    return ModelSpec("vit-base", tuple(ops))


def fuse_qkv(layer: list[ModelOp]) -> list[ModelOp]:
    """A layer of ``bert_layer_ops`` with q/k/v_proj as one projection to 3x the hidden
    size (as GPT-2's c_attn and timm's qkv); scores and context read its thirds."""
    q, k, v = layer[:3]
    axes = tuple((a, 3 * e if a == "n" else e) for a, e in q.spec.axes)
    fused = ModelOp("qkv_proj", replace(q.spec, axes=axes, tensors=(_t("QKV", "m", "n"), _t("X", "m", "h"),
                                                                     _t("Wqkv", "h", "n"))),
                    ("Wqkv",), q.producers)
    ops = [fused]
    for op in layer[3:]:
        producers, windows = {}, set(op.window_reads)
        for tensor, producer in op.producers.items():
            if producer in (0, 1, 2):
                producers[tensor] = 0
                windows.add(tensor)
            else:
                producers[tensor] = producer - 2 if producer >= 0 else producer
        ops.append(ModelOp(op.name, op.spec, op.weights, producers, frozenset(windows), op.moved_reads))
    return ops


def stack(name: str, layer: list[ModelOp], layers: int) -> ModelSpec:
    """``irc.workloads.bert.stack_layers`` keeping each op's window and moved reads."""
    ops = []
    for n in range(layers):
        base = n * len(layer)
        for op in layer:
            producers = {t: (base - 1 if p == LAYER_INPUT else base + p) for t, p in op.producers.items()
                         if not (p == LAYER_INPUT and n == 0)}
            ops.append(replace(op, name=f"layer{n}.{op.name}", producers=producers))
    return ModelSpec(name, tuple(ops))


def _shift(op: ModelOp, by: int) -> ModelOp:
    return replace(op, producers={t: p + by for t, p in op.producers.items()})


def gpt2_small(seq: int):
    """GPT-2 small (12 layers, 768 hidden, 12 heads): a decoder layer is an encoder layer
    whose softmax also reads the causal mask M[i,j] (a constant buffer resting on chip
    like a weight), plus the LM head against the 50257-token embedding."""
    def build(batch: int) -> ModelSpec:
        layer = []
        for op in fuse_qkv(bert_layer_ops(batch, seq, 768, 12, 3072)):
            if op.name == "softmax_exp":
                spec = op.spec
                op = replace(op, spec=replace(spec, tensors=spec.tensors + (_t("Mask", "i", "j"),)),
                             weights=op.weights + ("Mask",))
            layer.append(op)
        decoder = stack("gpt2", layer, 12)
        head = ModelOp(
            "lm_head",
            OpSpec((("m", batch * seq), ("h", 768), ("v", 50257)), (_t("L", "m", "v"), _t("Y", "m", "h"), _t("Wte", "h", "v")),
                   ("h",), "matmul"),
            ("Wte",), {"Y": len(decoder.ops) - 1},
        )
        return ModelSpec("gpt2-small", decoder.ops + (head,))

    return build


def _conv(name, batch, c_in, c_out, size, kernel, producer=None, stride=1) -> ModelOp:
    """Conv (batch-norm folded) producing c_out x size x size with its real stride: the
    input window ``stride*h + r`` lists h ``stride`` times (``irc.plans.from_te``)."""
    axes = (("b", batch), ("f", c_out), ("c", c_in), ("h", size), ("w", size), ("r", kernel), ("s", kernel))
    x = _t("X", "b", "c", ("h",) * stride + ("r",), ("w",) * stride + ("s",))
    spec = OpSpec(axes, (_t("Y", "b", "f", "h", "w"), x, _t("W", "f", "c", "r", "s")), ("c", "r", "s"), "conv")
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

    stem = add(_conv("stem", batch, 3, 64, 112, 7, stride=2))
    pool_axes = (("b", batch), ("f", 64), ("h", 56), ("w", 56), ("r", 3), ("s", 3))
    x = add(ModelOp("maxpool", OpSpec(pool_axes, (_t("Y", "b", "f", "h", "w"), _t("X", "b", "f", ("h", "r"), ("w", "s"))),
                                      ("r", "s"), "pool"), (), {}))
    del stem
    channels, size = 64, 56
    for stage, (width, blocks) in enumerate(zip((64, 128, 256, 512), (3, 4, 6, 3))):
        for block in range(blocks):
            stride = 2 if (block == 0 and stage > 0) else 1
            out_size = size // stride
            prefix = f"stage{stage + 1}.{block}"
            a = add(_conv(f"{prefix}.conv1", batch, channels, width, size, 1, x))
            b = add(_conv(f"{prefix}.conv2", batch, width, width, out_size, 3, stride=stride))
            c = add(_conv(f"{prefix}.conv3", batch, width, 4 * width, out_size, 1, b))
            del a
            if block == 0:
                shortcut = add(_conv(f"{prefix}.downsample", batch, channels, 4 * width, out_size, 1,
                                     x if out_size == size else None, stride=stride))
            else:
                shortcut = x
            x = add(_eltwise(f"{prefix}.add_relu", batch, 4 * width, out_size, {"A": c, "B": shortcut}))
            channels, size = 4 * width, out_size
    pooled = add(ModelOp("avgpool", OpSpec((("b", batch), ("f", 2048), ("p", 49)),
                                           (_t("Y", "b", "f"), _t("X", "b", "f", "p")), ("p",), "reduce"), (), {}))
    add(ModelOp("fc", OpSpec((("b", batch), ("f", 2048), ("c", 1000)), (_t("L", "b", "c"), _t("X", "b", "f"), _t("W", "f", "c")),
                             ("f",), "matmul"), ("W",), {"X": pooled}))
    return ModelSpec("resnet-50", tuple(ops))


OPSPEC_MODELS = {
    "bert-base-s128": bert(12, 768, 12, 3072, 128, "bert-base-s128"),
    "bert-large-s128": bert(24, 1024, 16, 4096, 128, "bert-large-s128"),
    "bert-large-s384": bert(24, 1024, 16, 4096, 384, "bert-large-s384"),
    "vit-base": vit_base,
    "resnet-50": resnet50,
    "gpt2-small-s128": gpt2_small(128),
}
assert LAYER_INPUT == -1
MODELS = OPSPEC_MODELS  # the OpSpec builders, by model name (the cross-check's side)

# The models as ONNX graphs (batch -> ModelProto): the table's side. Planning reads no
# weight data: BERT's and ViT's weights are graph inputs without data (marked weights once
# imported; their te graphs are those of the initializer-built models, checked in
# tests/benchmarks), so a 24-layer BERT-large imports in a few MB instead of GBs. GPT-2
# keeps initializers: its position table, gathered by constant positions, is folded at
# import only when it holds data.
F16 = "float16"
ONNX_MODELS = {
    "bert-base-s128": lambda b: build_bert_layer(BertConfig(b, 128, 768, 12, 3072, layers=12, dtype=F16,
                                                            weights_as_inputs=True)),
    "bert-large-s128": lambda b: build_bert_layer(BertConfig(b, 128, 1024, 16, 4096, layers=24, dtype=F16,
                                                             weights_as_inputs=True)),
    "bert-large-s384": lambda b: build_bert_layer(BertConfig(b, 384, 1024, 16, 4096, layers=24, dtype=F16,
                                                             weights_as_inputs=True)),
    "vit-base": lambda b: build_vit(ViTConfig(batch=b, dtype=F16, weights_as_inputs=True)),
    "resnet-50": lambda b: build_resnet50(ResNet50Config(batch=b, dtype=F16)),
    "gpt2-small-s128": lambda b: build_gpt2_block(GPT2Config(b, 128, layers=12, lm_head=True, dtype=F16,
                                                             weights_as_inputs=True)),
}


class ImportedModel:
    """An ONNX model imported into te and read as a ``ModelSpec`` (what the compiler
    plans): the spec, the ops left to the host, and the bytes of the function's inputs
    and outputs (its edges, weights apart)."""

    def __init__(self, name: str, onnx_model) -> None:
        result = import_model(onnx_model, {})
        mark_weight_inputs(result.module, onnx_model)
        function = next(op for op in result.module.walk() if isinstance(op, FuncOp))
        described = function_model(function, name=name)
        self.spec: ModelSpec = described.model
        self.fallbacks = len(described.fallbacks)
        nbytes = lambda t: int(np.prod(t.get_shape())) * element_bytes(t.get_element_type())  # noqa: E731
        self.edge_bytes = sum(nbytes(a.type) for a in function.body.block.args if not is_weight(a))
        self.edge_bytes += sum(nbytes(t) for t in function.function_type.outputs.data)
        # the planned ops whose outputs the function returns (directly, or through data
        # movements that run as the store's layout): each is stored from its partition
        index = {op: i for i, op in enumerate(described.ops)}
        self.returned: list[int] = []
        for value in function.body.block.last_op.operands:
            while value.owner not in index and isinstance(value.owner, TensorOp) and len(value.owner.inputs) == 1:
                value = value.owner.inputs[0]
            if value.owner in index:
                self.returned.append(index[value.owner])



# ---------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _ms(plan) -> float | None:
    return None if plan is None else plan.seconds * 1e3


def heavy_ops(model: ModelSpec) -> Counter:
    """The matmuls and convolutions of a model, by (kind, multiply-accumulates)."""
    return Counter((op.spec.kind, op.spec.iteration_volume) for op in model.ops if op.spec.kind in ("matmul", "conv"))


def heavy_cycles(model: ModelSpec, cache: FrontierCache) -> float:
    """The summed cycles of the heavy operators at their fastest plans."""
    return sum(cache.table(op.spec, op.weights).active_cycles[-1]
               for op in model.ops if op.spec.kind in ("matmul", "conv"))


def cross_check(imported: ModelSpec, direct: ModelSpec, cache: FrontierCache) -> dict:
    """Whether the ONNX and OpSpec models agree on their heavy operators and on the time
    of those at their fastest plans (module docstring)."""
    same_ops = heavy_ops(imported) == heavy_ops(direct)
    ratio = heavy_cycles(imported, cache) / heavy_cycles(direct, cache)
    return {"heavy_ops_agree": same_ops, "heavy_time_ratio": ratio}


def host_io_bytes(decision, imported: ImportedModel) -> int:
    """Bytes per core the device program moves over the host link (module docstring): the
    weights into their idle layouts, each input from outside into the partition of the op
    that loads it (once, when several read it: ``ModelOp.shared_reads``), each returned
    output from its producer's partition (in its own element type: accumulators are
    rounded first)."""
    total = decision.idle_bytes
    for model_op, chosen in zip(imported.spec.ops, decision.ops):
        memory = chosen.active.score.memory
        for tensor in model_op.spec.inputs:
            name = tensor.name
            if name in model_op.weights or name in model_op.producers or name in model_op.shared_reads:
                continue
            total += memory.partitions[name]
    for k in imported.returned:
        spec, memory = imported.spec.ops[k].spec, decision.ops[k].active.score.memory
        total += memory.elements(spec.output.name) * spec.bytes_of(spec.output.name)
    return total


def host_io_seconds(decision, imported: ImportedModel, device) -> float:
    """The model's edges over the links (module docstring): ``host_io_bytes`` per core at
    the link bandwidth, as ``irc-run`` times ``device.load``/``device.store``."""
    return host_io_bytes(decision, imported) * device.link_cycles_per_byte / device.clock_hz


def baseline_wins(model: ModelSpec, decision, baselines) -> dict:
    """The ops where a baseline's plan for that op costs less than irc's (its active,
    setup and relayout time against the baseline's compute and VGM load/store time), and
    the worst of them: ``{"count": n, "traded": {"memory": m, "relayouts": r}, "worst":
    (op name, irc us, baseline us, baseline)}``. A win is *traded* where irc's own fastest
    plan for the op beats the baseline and the model-wide plan gave it up: for memory
    (the op's ``memory-bound`` remark) or for the relayouts into and out of its neighbours;
    the others are losses of irc's plan space."""
    count, traded, worst = 0, {"memory": 0, "relayouts": 0}, None
    planned = decision.model_plan.ops if decision.model_plan is not None else None   # fastest plans, budgets
    for i, (op, chosen) in enumerate(zip(model.ops, decision.ops)):
        best = min(baselines, key=lambda b: b.ops[i].seconds, default=None)
        if best is None or best.ops[i].seconds >= chosen.seconds * (1 - 1e-9):
            continue
        count += 1
        if planned is not None and planned[i].fastest_seconds < best.ops[i].seconds:
            traded["memory" if planned[i].memory_bound else "relayouts"] += 1
        ratio = chosen.seconds / max(best.ops[i].seconds, 1e-30)
        if worst is None or ratio > worst[0]:
            worst = (ratio, op.name, chosen.seconds * 1e6, best.ops[i].seconds * 1e6, best.name)
    return {"count": count, "traded": traded, "worst": None if worst is None else list(worst[1:])}


def run_row(name: str, batch: int, imported: ImportedModel, cache: FrontierCache, started: float,
            direct: ModelSpec | None = None, show_progress: bool = True) -> dict:
    model = imported.spec
    with Progress(len(model.ops), f"{name} b{batch}", stream=None if show_progress else io.StringIO()) as bar:
        decision = plan_function(model, cache, progress=lambda done, total, label: bar.advance(label))
    compile_seconds = time.perf_counter() - started
    baselines = {}
    for label, function in (("vgm", vgm_plan), ("roller", roller_plan)):
        try:
            baselines[label] = function(model, cache.device, cache.cost, cache=cache)
        except ModelFitError:
            baselines[label] = None
    irc_ms = decision.seconds * 1e3
    wins = baseline_wins(model, decision, [b for b in baselines.values() if b is not None])
    host_io = host_io_seconds(decision, imported, cache.device)
    row = {
        "model": name, "batch": batch, "ops": len(model.ops), "host_ops": imported.fallbacks,
        "signatures": decision.model_plan.unique_signatures,
        "irc_ms": irc_ms, "vgm_ms": _ms(baselines["vgm"]), "roller_ms": _ms(baselines["roller"]),
        "sram_used": decision.peak_bytes / cache.device.sram_bytes,
        "idle_bytes": decision.idle_bytes, "peak_bytes": decision.peak_bytes,
        "host_io_ms": host_io * 1e3, "host_io_share": host_io / (decision.seconds + host_io),
        "compile_s": compile_seconds, "peak_rss_mb": peak_rss_mb(), "source": decision.source,
        "baseline_wins": wins["count"], "traded_wins": wins["traded"], "worst_op": wins["worst"],
    }
    for label in ("vgm", "roller"):
        value = row[f"{label}_ms"]
        row[f"speedup_{label}"] = None if value is None else value / irc_ms
    convs = [t for t in cache.tables.values() if t.spec.kind == "conv"]
    row["conv_searches"] = len(convs)
    row["conv_search_max_s"] = max((t.search_seconds for t in convs), default=0.0)
    row["conv_search_max_cpu_s"] = max((t.search_cpu_seconds for t in convs), default=0.0)
    row["conv_search_total_s"] = sum(t.search_seconds for t in convs)
    row["conv_searches_over_target"] = sum(t.search_cpu_seconds >= CONV_TARGET_S for t in convs)
    row["conv_searches_over_target_wall"] = sum(t.search_seconds >= CONV_TARGET_S for t in convs)
    if direct is not None:
        row.update(cross_check(model, direct, cache))
        row["opspec_irc_ms"] = plan_function(direct, cache).seconds * 1e3
    return row


CONV_TARGET_S = 2.0            # every convolution planned (its frontier and idle table) within this
TABLE_TARGET_S = 300.0         # the whole table within this
RSS_TARGET_MB = 2048.0         # and this peak RSS


HEADER = (f"{'model':<16} {'batch':>5} {'ops':>9} {'irc ms':>10} {'VGM ms':>10} {'Roller ms':>10} "
          f"{'x VGM':>7} {'x Roller':>8} {'base wins':>9} {'SRAM':>6} {'host I/O':>8} {'compile s':>9} {'RSS MB':>7}")


def _fmt(value, spec: str, width: int) -> str:
    return f"{'n/a':>{width}}" if value is None else f"{value:>{width}{spec}}"


def format_row(row: dict) -> str:
    ops = f"{row['ops']}" + (f"[{row['host_ops']}]" if row.get("host_ops") else "")
    text = (f"{row['model']:<16} {row['batch']:>5} {ops:>9} {row['irc_ms']:>10.3f} "
            f"{_fmt(row['vgm_ms'], '.3f', 10)} {_fmt(row['roller_ms'], '.3f', 10)} "
            f"{_fmt(row['speedup_vgm'], '.2f', 7)} {_fmt(row['speedup_roller'], '.2f', 8)} "
            f"{row['baseline_wins']:>9} "
            f"{row['sram_used'] * 100:>5.1f}% {row.get('host_io_share', 0.0) * 100:>7.2f}% "
            f"{row['compile_s']:>9.1f} {row['peak_rss_mb']:>7.0f}")
    if "heavy_ops_agree" in row:
        text += (f"   x-check: heavy ops {'agree' if row['heavy_ops_agree'] else 'DIFFER'}, heavy time "
                 f"x{row['heavy_time_ratio']:.3f}, OpSpec model {row['opspec_irc_ms']:.3f} ms")
    return text


_CACHES: dict[tuple[str, str], FrontierCache] = {}
"""Each process's frontier cache, per (device, cost model)."""


def plan_batch(name: str, batch: int, device: str, cost: str, cross: bool = False,
               show_progress: bool = True) -> dict:
    """One (model, batch) of the table, in whichever process runs it: its row, or, when the
    model does not fit at this batch, ``{"fits": False, "why": ...}``. Both carry the CPU
    seconds and the process (its peak RSS so far is the row's ``peak_rss_mb``)."""
    cache = _CACHES.get((device, cost))
    if cache is None:
        cache = _CACHES[(device, cost)] = FrontierCache(device, cost)
    started, started_cpu = time.perf_counter(), time.process_time()
    imported = ImportedModel(name, ONNX_MODELS[name](batch))
    direct = MODELS[name](batch) if cross else None
    try:
        check_fits(imported.spec, cache.device, cache.cost, cache=cache)
        row = run_row(name, batch, imported, cache, started, direct, show_progress)
        row["fits"] = True
    except ModelFitError as error:
        if error.needed > error.available + 1:
            why = f"needs {error.needed} B per core, {error.available} B available"
        else:  # one operator has no plan at all: say which and why
            why = str(error).split(": ", 1)[-1][:160]
        row = {"model": name, "batch": batch, "ops": len(imported.spec.ops), "fits": False, "why": why,
               "peak_rss_mb": peak_rss_mb()}
    finally:
        # another batch has other shapes: these tables never serve again, free them
        cache.tables.clear()
        cache._rescored.clear()
    row["cpu_s"], row["pid"] = time.process_time() - started_cpu, os.getpid()
    return row


def batches(max_batch: int) -> list[int]:
    """1, 2, 4, ... up to ``max_batch``."""
    return [1 << e for e in range(max(max_batch, 1).bit_length()) if 1 << e <= max_batch]


def plan_rows(names: list[str], args, emit) -> None:
    """Every model's rows, batch doubling from 1 until it no longer fits, handed to ``emit``
    in table order. With ``args.jobs`` > 1 the models' batch chains run side by side in
    that many worker processes (each with its own caches): a model's next batch is planned
    once its batch before fits (a batch past the first misfit would cost a search of every
    operator at a shape that cannot run), and rows are emitted in order as soon as their
    predecessors are."""
    if args.jobs == 1:
        for name in names:
            for batch in batches(args.max_batch):
                row = plan_batch(name, batch, args.device, args.cost, args.cross_check)
                emit(row)
                if not row["fits"]:
                    break
        return
    done: dict[tuple[str, int], dict] = {}
    order = [(name, batches(args.max_batch)) for name in names]
    shown = [0] * len(order)   # per model, its rows emitted so far
    # fork: the workers inherit this module as loaded (it runs as a script or from a path)
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=context) as pool, \
            Progress(len(names), "models table") as bar:
        running = {}

        def start(name: str, batch: int) -> None:
            future = pool.submit(plan_batch, name, batch, args.device, args.cost, args.cross_check, False)
            running[future] = (name, batch)

        for name, chain in order:
            if chain:
                start(name, chain[0])
        while running:
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                name, batch = running.pop(future)
                row = done[(name, batch)] = future.result()
                larger = [b for b in batches(args.max_batch) if b > batch]
                if row["fits"] and larger:
                    start(name, larger[0])
                else:
                    bar.advance(f"{name} done")
            for m, (name, chain) in enumerate(order):   # emit what is next in table order
                while shown[m] < len(chain) and (name, chain[shown[m]]) in done:
                    row = done[(name, chain[shown[m]])]
                    emit(row)
                    shown[m] = len(chain) if not row["fits"] else shown[m] + 1
                if shown[m] < len(chain):
                    break


def print_baseline_wins(rows: list[dict]) -> None:
    """Per model, the ops (over its batches) where a baseline's plan beats irc's, how many
    of them the model-wide plan traded (irc's fastest plan for the op beats the baseline;
    given up for memory or for relayouts), and the worst such op (issue 23's target: none
    that is not traded)."""
    print("ops where a baseline's plan beats irc's (the baseline's op time below irc's; target: none"
          " but the model-wide plan's trades):")
    for model in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == model]
        count = sum(r["baseline_wins"] for r in mine)
        memory = sum(r.get("traded_wins", {}).get("memory", 0) for r in mine)
        relayouts = sum(r.get("traded_wins", {}).get("relayouts", 0) for r in mine)
        worst = max((r for r in mine if r["worst_op"]), key=lambda r: r["worst_op"][1] / r["worst_op"][2],
                    default=None)
        traded = "" if not count else f" ({memory} traded for memory, {relayouts} for relayouts," \
                                      f" {count - memory - relayouts} lost)"
        text = "" if worst is None else (
            f"; worst: batch {worst['batch']} {worst['worst_op'][0]} {worst['worst_op'][1]:.3f} us "
            f"against {worst['worst_op'][3]}'s {worst['worst_op'][2]:.3f} us")
        print(f"  {model:<16} {count} op(s){traded} over {len(mine)} batch(es){text}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated subset of {', '.join(MODELS)}")
    parser.add_argument("--max-batch", type=int, default=4096, help="stop doubling at this batch")
    parser.add_argument("--device", default="ipu-mk2")
    parser.add_argument("--cost", default="t10")
    parser.add_argument("--cross-check", action="store_true",
                        help="also plan the OpSpec-built models and compare (module docstring)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="worker processes planning (model, batch) rows (default: one per CPU; 1: in this process)")
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in ONNX_MODELS]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    target = FrontierCache(args.device, args.cost)
    print(f"device {target.device.name} ({target.device.cores} cores, {target.device.sram_bytes} B SRAM per core), "
          f"cost model {target.cost.name}; batch doubles from 1 until the model no longer fits; {args.jobs} "
          f"process(es)")
    print(HEADER, flush=True)
    rows, peaks = [], {os.getpid(): peak_rss_mb()}
    table_started = time.perf_counter()

    def emit(row: dict) -> None:
        peaks[row["pid"]] = max(peaks.get(row["pid"], 0.0), row["peak_rss_mb"])
        if not row["fits"]:
            print(f"{row['model']:<16} {row['batch']:>5} {row['ops']:>9}  does not fit: {row['why']}", flush=True)
            return
        rows.append(row)
        print(format_row(row), flush=True)

    plan_rows(names, args, emit)
    wall = time.perf_counter() - table_started
    children = resource.getrusage(resource.RUSAGE_CHILDREN)   # the workers, reaped
    cpu = time.process_time() + children.ru_utime + children.ru_stime
    peaks[os.getpid()] = peak_rss_mb()
    # the processes' peaks summed: at most what they held together
    rss, largest = sum(peaks.values()), max(peaks.values())
    print(f"\ntable: {wall:.1f} s wall, {cpu:.1f} s CPU in {len(peaks)} process(es) (target < {TABLE_TARGET_S:.0f} s: "
          f"{'met' if wall < TABLE_TARGET_S else 'NOT met'}), peak RSS {rss:.0f} MB summed over the processes, "
          f"{largest:.0f} MB the largest (target < {RSS_TARGET_MB:.0f} MB: "
          f"{'met' if rss < RSS_TARGET_MB else 'NOT met'}); load average at the end "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    convs = [r for r in rows if r["conv_searches"]]
    if convs:
        over = sum(r["conv_searches_over_target"] for r in convs)
        over_wall = sum(r["conv_searches_over_target_wall"] for r in convs)
        print(f"conv plans (frontier search and idle table): {sum(r['conv_searches'] for r in convs)} over "
              f"{len(convs)} rows, slowest {max(r['conv_search_max_cpu_s'] for r in convs):.2f} s CPU "
              f"({max(r['conv_search_max_s'] for r in convs):.2f} s wall), all "
              f"{sum(r['conv_search_total_s'] for r in convs):.1f} s wall; {over} took {CONV_TARGET_S:.0f} s CPU or "
              f"more ({over_wall} by wall time; target: none)")
    if rows:
        print()
        for label, key in (("VGM", "speedup_vgm"), ("Roller", "speedup_roller")):
            speedups = [r[key] for r in rows if r[key] is not None]
            if speedups:
                geo = math.exp(sum(math.log(s) for s in speedups) / len(speedups))
                print(f"geometric mean speedup over {label}: {geo:.2f}x over {len(speedups)} rows "
                      f"(worst {min(speedups):.2f}x)")
        print_baseline_wins(rows)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
