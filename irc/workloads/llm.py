"""ELK's workloads (seeds/004 s6.1, Table 2) built from their published configurations.

Decoding of Llama2-13B, Gemma2-27B (grouped-query attention), OPT-30B and Llama2-70B
(GQA) at a batch and sequence length (one new token per sequence, the KV cache of
``seq`` tokens read from HBM), and DiT-XL (a diffusion transformer: BERT-like blocks over
its 256 latent patches). The chips run the model with tensor (model) parallelism (ELK s5:
"model parallelism across the four chips"): each of ``chips`` chips holds 1/chips of the
heads and of the FFN, so one chip's share of each layer is what is planned, on one chip.

One decoding layer, for b = batch, h = hidden, d = head size, g = KV heads per chip,
r = query heads per KV head, f = FFN size per chip:

    norm1     N[b] += X[b,h] * X[b,h];  Y[b,h] = X[b,h] * N[b] * G[h]     (RMS/LayerNorm)
    qkv       QKV[b,n] += Y[b,h] * Wqkv[h,n]        n = (g*r + 2g) * d    (weight)
    scores    S[b,g,r,s] += Q[b,g,r,d] * K[b,g,s,d]                      (KV cache from HBM)
    softmax   max over s, exp, sum over s, divide
    context   C[b,g,r,d] += P[b,g,r,s] * V[b,g,s,d]                      (KV cache from HBM)
    o_proj    O[b,h] += C[b,n] * Wo[n,h]            n = g*r*d             (weight)
    residual, norm2, then the MLP: gate/up/act/down (Llama, Gemma) or fc1/relu/fc2 (OPT),
    residual.

The KV cache and the weights are what a layer preloads (the planner's "weights": inputs
no op produces). Identical layers have identical op signatures, so they are planned once.
"""

from __future__ import annotations

from dataclasses import dataclass

from irc.workloads.bert import bert_layer_ops
from irc.planner.model import ModelOp, ModelSpec, ModelSpecError
from irc.planner.relayout import tensor_elements
from irc.planner.spec import OpSpec, TensorSpec


@dataclass(frozen=True)
class LLMConfig:
    """A decoder's published shape (Hugging Face configs of the released checkpoints)."""

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    gated: bool          # SiLU/GELU-gated MLP (gate, up, down) instead of fc1/act/fc2


CONFIGS = {
    "llama2-13b": LLMConfig("llama2-13b", 40, 5120, 40, 40, 128, 13824, True),
    "gemma2-27b": LLMConfig("gemma2-27b", 46, 4608, 32, 16, 128, 36864, True),
    "opt-30b": LLMConfig("opt-30b", 48, 7168, 56, 56, 128, 28672, False),
    "llama2-70b": LLMConfig("llama2-70b", 80, 8192, 64, 8, 128, 28672, True),
}
DIT_XL = dict(layers=28, hidden=1152, heads=16, ffn=4608, patches=256)
MODELS = tuple(CONFIGS) + ("dit-xl",)


def _t(name: str, *axes: str) -> TensorSpec:
    return TensorSpec(name, tuple((a,) for a in axes))


def _spec(axes, out, *inputs, reduction=(), kind="elementwise") -> OpSpec:
    return OpSpec(axes=tuple(axes), tensors=(out, *inputs), reduction_axes=tuple(reduction), kind=kind)


def scaled(config: LLMConfig, factor: int) -> LLMConfig:
    """``config`` with hidden, heads and FFN divided by ``factor`` (numerics checks)."""
    return LLMConfig(f"{config.name}/{factor}", config.layers, config.hidden // factor,
                     max(1, config.heads // factor), max(1, config.kv_heads // factor),
                     config.head_dim, config.ffn // factor, config.gated)


def decode_layer_ops(config: LLMConfig, batch: int, seq: int, chips: int = 1) -> list[ModelOp]:
    """One chip's share of one decoding layer; producers index this list, -1 is the
    layer's input X[b,h]."""
    if config.heads % config.kv_heads or config.kv_heads % chips and config.kv_heads >= chips:
        raise ModelSpecError(f"{config.name}: {config.heads} heads, {config.kv_heads} KV heads and {chips} chips do not divide")
    g = max(1, config.kv_heads // chips)
    r = config.heads // config.kv_heads
    d, h, f = config.head_dim, config.hidden, max(1, config.ffn // chips)
    b = batch
    ops: list[ModelOp] = []

    def add(name, spec, weights=(), window=(), **producers):
        ops.append(ModelOp(name, spec, tuple(weights), producers, frozenset(window)))
        return len(ops) - 1

    def norm(x_producer, tag):
        n = add(f"{tag}_sq", _spec((("b", b), ("h", h)), _t("N", "b"), _t("X", "b", "h"), _t("X2", "b", "h"),
                                   reduction=("h",), kind="reduce"), X=x_producer, X2=x_producer)
        return add(f"{tag}_scale", _spec((("b", b), ("h", h)), _t("Y", "b", "h"), _t("X", "b", "h"), _t("N", "b"),
                                         _t("G", "h")), ["G"], X=x_producer, N=n)

    y = norm(-1, "norm1")
    qkv_n = (g * r + 2 * g) * d
    qkv = add("qkv", _spec((("b", b), ("h", h), ("n", qkv_n)), _t("QKV", "b", "n"), _t("Y", "b", "h"),
                           _t("Wqkv", "h", "n"), reduction=("h",), kind="matmul"), ["Wqkv"], Y=y)
    att = (("b", b), ("g", g), ("r", r))
    scores = add("scores", _spec(att + (("s", seq), ("d", d)), _t("S", "b", "g", "r", "s"), _t("Q", "b", "g", "r", "d"),
                                 _t("K", "b", "g", "s", "d"), reduction=("d",), kind="matmul"), ["K"], ("Q",), Q=qkv)
    full = att + (("s", seq),)
    mx = add("softmax_max", _spec(full, _t("M", "b", "g", "r"), _t("S", "b", "g", "r", "s"), reduction=("s",),
                                  kind="reduce"), S=scores)
    ex = add("softmax_exp", _spec(full, _t("E", "b", "g", "r", "s"), _t("S", "b", "g", "r", "s"), _t("M", "b", "g", "r")),
             S=scores, M=mx)
    sm = add("softmax_sum", _spec(full, _t("Z", "b", "g", "r"), _t("E", "b", "g", "r", "s"), reduction=("s",),
                                  kind="reduce"), E=ex)
    pr = add("softmax_div", _spec(full, _t("P", "b", "g", "r", "s"), _t("E", "b", "g", "r", "s"), _t("Z", "b", "g", "r")),
             E=ex, Z=sm)
    ctx = add("context", _spec(att + (("d", d), ("s", seq)), _t("C", "b", "g", "r", "d"), _t("P", "b", "g", "r", "s"),
                               _t("V", "b", "g", "s", "d"), reduction=("s",), kind="matmul"), ["V"], P=pr)
    o_n = g * r * d
    o = add("o_proj", _spec((("b", b), ("n", o_n), ("h", h)), _t("O", "b", "h"), _t("C", "b", "n"), _t("Wo", "n", "h"),
                            reduction=("n",), kind="matmul"), ["Wo"], C=ctx)
    res = add("residual1", _spec((("b", b), ("h", h)), _t("R", "b", "h"), _t("O", "b", "h"), _t("X", "b", "h")), O=o, X=-1)
    y2 = norm(res, "norm2")
    up = lambda name, w: _spec((("b", b), ("h", h), ("f", f)), _t(name, "b", "f"), _t("Y", "b", "h"), _t(w, "h", "f"),  # noqa: E731
                               reduction=("h",), kind="matmul")
    if config.gated:
        gate = add("gate", up("A", "Wg"), ["Wg"], Y=y2)
        upv = add("up", up("U", "Wu"), ["Wu"], Y=y2)
        act = add("act", _spec((("b", b), ("f", f)), _t("H", "b", "f"), _t("A", "b", "f"), _t("U", "b", "f")), A=gate, U=upv)
    else:
        fc1 = add("fc1", up("A", "W1"), ["W1"], Y=y2)
        act = add("act", _spec((("b", b), ("f", f)), _t("H", "b", "f"), _t("A", "b", "f")), A=fc1)
    down = add("down", _spec((("b", b), ("f", f), ("h", h)), _t("D", "b", "h"), _t("H", "b", "f"), _t("Wd", "f", "h"),
                             reduction=("f",), kind="matmul"), ["Wd"], H=act)
    add("residual2", _spec((("b", b), ("h", h)), _t("Y", "b", "h"), _t("D", "b", "h"), _t("R", "b", "h")), D=down, R=res)
    return ops


def stack(name: str, layer: list[ModelOp], layers: int) -> tuple[ModelSpec, list[int]]:
    """``layers`` copies of ``layer``, each reading the previous one's last op; returns the
    model and each op's layer index."""
    ops, layer_of = [], []
    last = None
    for index in range(layers):
        base = len(ops)
        for op in layer:
            producers = {k: (base + v if v >= 0 else last) for k, v in op.producers.items()}
            producers = {k: v for k, v in producers.items() if v is not None}
            ops.append(ModelOp(f"l{index}.{op.name}", op.spec, op.weights, producers, op.window_reads, op.moved_reads))
            layer_of.append(index)
        last = len(ops) - 1
    return ModelSpec(name, tuple(ops)), layer_of


ROW_PARALLEL = ("o_proj", "down", "fc2", "out_proj", "ffn2")
"""The ops whose reduction axis tensor parallelism splits over the chips (the attention's
output projection, the MLP's down projection, Megatron-style): each chip holds partial
sums of their whole output, all-reduced over the chips before the residual reads it."""


def allreduce_bytes(model: ModelSpec, chips: int) -> list[float]:
    """Per op of a built-in workload split over ``chips`` chips, the bytes of partial sums
    each chip all-reduces after it (its output, for the ``ROW_PARALLEL`` ops; 0 on one
    chip)."""
    found = []
    for op in model.ops:
        out = op.spec.tensors[0]
        split = chips > 1 and op.name.rsplit(".", 1)[-1] in ROW_PARALLEL
        found.append(float(tensor_elements(op.spec, out.name) * op.spec.bytes_of(out.name)) if split else 0.0)
    return found


def workload(model: str, batch: int = 32, seq: int = 2048, chips: int = 4, layers: int | None = None,
             factor: int = 1) -> tuple[ModelSpec, list[int]]:
    """A benchmark model by name (``MODELS``): one chip's share under ``chips``-way model
    parallelism; ``layers`` overrides the depth, ``factor`` scales the widths down."""
    if model == "dit-xl":
        cfg = DIT_XL
        heads = max(1, cfg["heads"] // (chips * factor))
        hidden = cfg["hidden"] // factor
        layer = bert_layer_ops(batch, cfg["patches"], hidden, heads if hidden % heads == 0 else 1, cfg["ffn"] // (chips * factor))
        return stack("dit-xl", layer, layers or cfg["layers"])
    if model not in CONFIGS:
        raise ModelSpecError(f"unknown workload '{model}'; known: {', '.join(MODELS)}")
    config = CONFIGS[model] if factor == 1 else scaled(CONFIGS[model], factor)
    return stack(model, decode_layer_ops(config, batch, seq, chips), layers or config.layers)
