"""ELK's workloads (seeds/004 s6.1, Table 2) built from their published configurations.

Decoding of Llama2-13B, Gemma2-27B and Llama2-70B (grouped-query attention where the
model has it) and OPT-30B at a batch and KV-cache length (one new token per sequence,
the cache of ``seq`` tokens read from HBM), and DiT-XL (a diffusion transformer:
BERT-like blocks over its 256 latent patches). The chips run the model with tensor
(model) parallelism (ELK s5: "model parallelism across the four chips", Megatron-style):
each of ``chips`` chips holds 1/chips of the query heads, of the KV heads (each whole;
a KV head is replicated when there are fewer than chips), of the FFN and of the LM
head's vocabulary, so one chip's share of the model is what is planned.

An LLM is written as te ops (``decoder_te``: the text of a ``func.func`` in f16, its
weights and KV caches arguments marked ``irc.weight``), so a built-in model is planned
exactly as the same program given as a file (``irc-dse --model FILE.mlir``). One
decoding layer, for b = batch, h = hidden, g = KV heads and r = query heads per KV head
on the chip, d = head size, s = cached positions, f = FFN size on the chip, as the
published architectures have it (Hugging Face's configs and modelling code):

    norm      RMSNorm (Llama, Gemma2) or LayerNorm with bias (OPT)
    q/k/v     Q[b,g,r,d] += Y[b,h] * Wq[h,g,r,d]; K[b,g,d], V[b,g,d] likewise (separate
              projections; OPT adds their biases)
    rotary    QR[b,g,r,e] += Q[b,g,r,d] * R[d,e]: RoPE at the decoded position as its
              rotation matrix (RoFormer eq. 15; R = diag(cos) + rotate_half * sin), on q
              and k (Llama, Gemma2; OPT has learned positions at its embedding instead)
    scores    S[b,g,r,s] += Q[b,g,r,d] * Kc[b,g,s,d] (the KV cache, from HBM); the new
              key and value rows are results (written back to the cache)
    softmax   max over s, exp of the scaled difference (Gemma2: its logit soft-capping),
              sum over s, divide
    context   C[b,g,r,d] += P[b,g,r,s] * Vc[b,g,s,d]
    o_proj    O[b,h] += C[b,g,r,d] * Wo[g,r,d,h] (row parallel: all-reduced over chips)
    residual, norm, then the MLP: gate/up/act/down with SiLU (Llama) or tanh-GELU
    (Gemma2) gating, or fc1/ReLU/fc2 (OPT); residual. Gemma2 also normalises the
    attention's and the MLP's outputs (its sandwich norms).

After the last layer: the final norm and the LM head over the chip's share of the
vocabulary. The token embedding (a gather of ``b`` rows) is the model's input ``x``.
Identical layers have identical op signatures, so they are planned once.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from irc.planner.model import ModelOp, ModelSpec, ModelSpecError
from irc.planner.relayout import tensor_elements
from irc.workloads.bert import bert_layer_ops


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
    vocab: int
    norm: str = "rms"          # "rms" (RMSNorm) or "layer" (LayerNorm with bias)
    mlp: str = "silu"          # "silu" / "gelu_tanh" (gated: gate, up, down) or "relu" (fc1, fc2)
    rotary: bool = True        # rotary position embedding on q and k
    biases: bool = False       # biases on the projections (OPT)
    sandwich: bool = False     # norms after the attention and the MLP too (Gemma2)
    softcap: float = 0.0       # attention logit soft-capping (Gemma2: 50); 0: none
    query_scale: float = 0.0   # scores scaled by 1/sqrt of this (Gemma2: 144); 0: head_dim
    eps: float = 1e-5


CONFIGS = {
    "llama2-13b": LLMConfig("llama2-13b", 40, 5120, 40, 40, 128, 13824, 32000),
    "gemma2-27b": LLMConfig("gemma2-27b", 46, 4608, 32, 16, 128, 36864, 256000, mlp="gelu_tanh",
                            sandwich=True, softcap=50.0, query_scale=144.0, eps=1e-6),
    "opt-30b": LLMConfig("opt-30b", 48, 7168, 56, 56, 128, 28672, 50272, norm="layer", mlp="relu",
                         rotary=False, biases=True),
    "llama2-70b": LLMConfig("llama2-70b", 80, 8192, 64, 8, 128, 28672, 32000),
}
DIT_XL = dict(layers=28, hidden=1152, heads=16, ffn=4608, patches=256)
MODELS = tuple(CONFIGS) + ("dit-xl",)

ROW_PARALLEL = ("o_proj", "down", "fc2", "out_proj", "ffn2")
"""The ops whose reduction axis tensor parallelism splits over the chips (the attention's
output projection, the MLP's down projection, Megatron-style): each chip holds partial
sums of their whole output, all-reduced over the chips before the residual reads it."""


def scaled(config: LLMConfig, factor: int) -> LLMConfig:
    """``config`` with hidden, heads, KV heads, FFN and vocabulary divided by ``factor``
    (small configurations for tests)."""
    return replace(config, name=f"{config.name}/{factor}", hidden=config.hidden // factor,
                   heads=max(1, config.heads // factor), kv_heads=max(1, config.kv_heads // factor),
                   ffn=config.ffn // factor, vocab=max(1, config.vocab // factor))


@dataclass(frozen=True)
class ChipShare:
    """The sizes of one chip's share of a layer: ``g`` KV heads of ``r`` query heads each,
    ``f`` of the FFN, ``v`` of the vocabulary."""

    g: int
    r: int
    f: int
    v: int


def chip_share(config: LLMConfig, chips: int) -> ChipShare:
    """One chip's share under ``chips``-way tensor parallelism; a ``ModelSpecError`` (naming
    the chips) when the heads do not split over them. Fewer (KV) heads than chips, as in
    a scaled-down model, leaves each chip one, replicated."""
    heads, kv = config.heads, config.kv_heads
    if heads % kv or (kv >= chips and kv % chips) or (heads >= chips and heads % chips):
        raise ModelSpecError(f"{config.name}: {heads} heads, {kv} KV heads and {chips} chips do not divide")
    g = max(1, kv // chips)
    r = max(1, heads // chips // g)
    return ChipShare(g, r, max(1, config.ffn // chips), max(1, -(-config.vocab // chips)))


def _number(value: float) -> str:
    """A te number literal (no sign: callers subtract)."""
    text = repr(float(value))
    return text if "e" in text or "." in text else text + ".0"


class _Program:
    """The text of one te function: arguments (``irc.weight`` ones are what a layer
    preloads) and ops, each result named ``%<name>`` (the planner's op label)."""

    def __init__(self):
        self.arguments: list[str] = []
        self.lines: list[str] = []
        self.types: dict[str, str] = {}
        self.results: list[str] = []

    @staticmethod
    def _type(shape) -> str:
        return f"tensor<{'x'.join(str(n) for n in shape)}xf16>"

    def argument(self, name: str, shape, weight: bool = True) -> str:
        value = "%" + name   # dotted: never an op's result name (``%l0_attn_q_proj``)
        self.types[value] = self._type(shape)
        flag = ", irc.weight" if weight else ""
        self.arguments.append(f'{value}: {self.types[value]} {{irc.name = "{name}"{flag}}}')
        return value

    def op(self, name: str, expression: str, operands, shape) -> str:
        """``%name = te.op "expression" (operands)``: the operands in the order their
        tensors first appear in the expression."""
        value = "%" + name
        self.types[value] = self._type(shape)
        inputs = ", ".join(operands)
        types = ", ".join(self.types[o] for o in operands)
        self.lines.append(f'  {value} = te.op "{expression}" ({inputs}) : ({types}) -> {self.types[value]}')
        return value

    def text(self, name: str) -> str:
        results = ", ".join(self.results)
        types = ", ".join(self.types[r] for r in self.results)
        head = f"func.func @{re.sub(r'[^A-Za-z0-9_]', '_', name)}(" + ",\n    ".join(self.arguments) + ")"
        return "\n".join([f"{head} -> ({types}) {{", *self.lines, f"  func.return {results} : {types}", "}", ""])


def _norm(p: _Program, c: LLMConfig, tag: str, x: str, b: int) -> str:
    """RMSNorm or LayerNorm of ``x`` [b, hidden] over the hidden axis."""
    h, name = c.hidden, tag
    tag = tag.replace(".", "_")
    inverse, eps = _number(1 / h), _number(c.eps)
    gain = p.argument(f"{name}.weight", (h,))
    if c.norm == "rms":
        n = p.op(f"{tag}_sq", "N[b] += X[b,h] * X[b,h]", [x], (b,))
        return p.op(tag, f"Y[b,h] = X[b,h] * rsqrt(N[b] * {inverse} + {eps}) * G[h]", [x, n, gain], (b, h))
    mean = p.op(f"{tag}_mean", "M[b] += X[b,h]", [x], (b,))
    centred = p.op(f"{tag}_center", f"D[b,h] = X[b,h] - M[b] * {inverse}", [x, mean], (b, h))
    var = p.op(f"{tag}_var", "V[b] += D[b,h] * D[b,h]", [centred], (b,))
    bias = p.argument(f"{name}.bias", (h,))
    return p.op(tag, f"Y[b,h] = D[b,h] * rsqrt(V[b] * {inverse} + {eps}) * G[h] + B[h]",
                [centred, var, gain, bias], (b, h))


def _projection(p: _Program, c: LLMConfig, tag: str, y: str, heads: tuple, b: int, d: int) -> str:
    """A q/k/v projection of ``y`` onto ``heads`` ([g, r] or [g]) heads of size ``d``, its
    bias added (OPT), its rotary embedding applied (q and k of Llama and Gemma2)."""
    axes = ",".join(["g", "r"][: len(heads)])
    shape = (b, *heads, d)
    weight = p.argument(f"{tag}.weight", (c.hidden, *heads, d))
    t = tag.replace(".", "_")
    out = p.op(f"{t}_proj", f"T[b,{axes},d] += Y[b,h] * W[h,{axes},d]", [y, weight], shape)
    if c.biases:
        bias = p.argument(f"{tag}.bias", (*heads, d))
        out = p.op(f"{t}_bias", f"T[b,{axes},d] = A[b,{axes},d] + B[{axes},d]", [out, bias], shape)
    if c.rotary and tag.endswith(("q", "k")):
        rotation = p.argument(f"{tag}.rotary", (d, d))
        out = p.op(f"{t}_rope", f"T[b,{axes},e] += A[b,{axes},d] * R[d,e]", [out, rotation], shape)
    return out


def _attention(p: _Program, c: LLMConfig, share: ChipShare, tag: str, y: str, b: int, seq: int) -> str:
    """Self-attention of the decoded token over the KV cache; returns O[b, hidden] (the
    chip's partial sums)."""
    g, r, d = share.g, share.r, c.head_dim
    q = _projection(p, c, f"{tag}.q", y, (g, r), b, d)
    k = _projection(p, c, f"{tag}.k", y, (g,), b, d)
    v = _projection(p, c, f"{tag}.v", y, (g,), b, d)
    p.results += [k, v]   # the new cache rows, written back to HBM
    keys = p.argument(f"{tag}.past_key", (b, g, seq, d))
    values = p.argument(f"{tag}.past_value", (b, g, seq, d))
    t = tag.replace(".", "_")
    full, rows = (b, g, r, seq), (b, g, r)
    scores = p.op(f"{t}_scores", "S[b,g,r,s] += Q[b,g,r,d] * K[b,g,s,d]", [q, keys], full)
    top = p.op(f"{t}_softmax_max", "M[b,g,r] max= S[b,g,r,s]", [scores], rows)
    scale = 1 / math.sqrt(c.query_scale or d)
    if c.softcap:   # cap * tanh(x / cap) is increasing, so the max stays the max
        cap, inner = _number(c.softcap), _number(scale / c.softcap)
        body = f"exp({cap} * tanh(S[b,g,r,s] * {inner}) - {cap} * tanh(M[b,g,r] * {inner}))"
    else:
        body = f"exp((S[b,g,r,s] - M[b,g,r]) * {_number(scale)})"
    exp = p.op(f"{t}_softmax_exp", f"E[b,g,r,s] = {body}", [scores, top], full)
    total = p.op(f"{t}_softmax_sum", "Z[b,g,r] += E[b,g,r,s]", [exp], rows)
    probs = p.op(f"{t}_softmax_div", "P[b,g,r,s] = E[b,g,r,s] / Z[b,g,r]", [exp, total], full)
    context = p.op(f"{t}_context", "C[b,g,r,d] += P[b,g,r,s] * V[b,g,s,d]", [probs, values], (b, g, r, d))
    weight = p.argument(f"{tag}.o_proj.weight", (g, r, d, c.hidden))
    return p.op(f"{t}_o_proj", "O[b,h] += C[b,g,r,d] * W[g,r,d,h]", [context, weight], (b, c.hidden))


def _mlp(p: _Program, c: LLMConfig, share: ChipShare, tag: str, y: str, b: int) -> str:
    """The MLP on the chip's share of the FFN; returns its partial sums D[b, hidden]."""
    h, f, t = c.hidden, share.f, tag.replace(".", "_")
    if c.mlp == "relu":
        a = p.op(f"{t}_fc1", "A[b,f] += Y[b,h] * W[h,f]", [y, p.argument(f"{tag}.fc1.weight", (h, f))], (b, f))
        if c.biases:
            act = p.op(f"{t}_act", "H[b,f] = relu(A[b,f] + B[f])", [a, p.argument(f"{tag}.fc1.bias", (f,))], (b, f))
        else:
            act = p.op(f"{t}_act", "H[b,f] = relu(A[b,f])", [a], (b, f))
        return p.op(f"{t}_fc2", "D[b,h] += H[b,f] * W[f,h]", [act, p.argument(f"{tag}.fc2.weight", (f, h))], (b, h))
    gate = p.op(f"{t}_gate", "A[b,f] += Y[b,h] * W[h,f]", [y, p.argument(f"{tag}.gate_proj.weight", (h, f))], (b, f))
    up = p.op(f"{t}_up", "U[b,f] += Y[b,h] * W[h,f]", [y, p.argument(f"{tag}.up_proj.weight", (h, f))], (b, f))
    if c.mlp == "silu":
        body = "A[b,f] * sigmoid(A[b,f]) * U[b,f]"
    else:   # GELU's tanh form: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
        body = (f"0.5 * A[b,f] * (1.0 + tanh({_number(math.sqrt(2 / math.pi))} * "
                f"(A[b,f] + 0.044715 * A[b,f] * A[b,f] * A[b,f]))) * U[b,f]")
    act = p.op(f"{t}_act", f"H[b,f] = {body}", [gate, up], (b, f))
    return p.op(f"{t}_down", "D[b,h] += H[b,f] * W[f,h]", [act, p.argument(f"{tag}.down_proj.weight", (f, h))], (b, h))


def _residual(p: _Program, c: LLMConfig, name: str, x: str, delta: str, b: int) -> str:
    """x + delta (+ the row-parallel projection's bias, OPT)."""
    if c.biases:
        bias = p.argument(f"{name}.bias", (c.hidden,))
        return p.op(name, "Y[b,h] = X[b,h] + D[b,h] + B[h]", [x, delta, bias], (b, c.hidden))
    return p.op(name, "Y[b,h] = X[b,h] + D[b,h]", [x, delta], (b, c.hidden))


def decoder_te(config: LLMConfig, batch: int, seq: int, chips: int = 1, layers: int | None = None) -> str:
    """The te program (a ``func.func``'s text) of one chip's share of ``config`` decoding
    one token per sequence of ``batch`` against a KV cache of ``seq`` positions, over
    ``layers`` layers (default: the model's), then its final norm and LM head."""
    share, p, b = chip_share(config, chips), _Program(), batch
    x = p.argument("x", (b, config.hidden), weight=False)
    for layer in range(layers or config.layers):
        tag = f"l{layer}"
        attention = _attention(p, config, share, f"{tag}.attn", _norm(p, config, f"{tag}.norm1", x, b), b, seq)
        if config.sandwich:
            attention = _norm(p, config, f"{tag}.post_attn_norm", attention, b)
        x = _residual(p, config, f"{tag}_residual1", x, attention, b)
        mlp = _mlp(p, config, share, f"{tag}.mlp", _norm(p, config, f"{tag}.norm2", x, b), b)
        if config.sandwich:
            mlp = _norm(p, config, f"{tag}.post_mlp_norm", mlp, b)
        x = _residual(p, config, f"{tag}_residual2", x, mlp, b)
    y = _norm(p, config, "final_norm", x, b)
    head = p.argument("lm_head.weight", (config.hidden, share.v))
    p.results.insert(0, p.op("lm_head", "L[b,v] += Y[b,h] * W[h,v]", [y, head], (b, share.v)))
    return p.text(config.name)


def base_name(op_name: str) -> str:
    """An op's name without its layer (``%l3_attn_o_proj`` -> ``attn_o_proj``,
    ``l3.ffn2`` -> ``ffn2``)."""
    return re.sub(r"^l\d+[._]", "", op_name.removeprefix("%"))


def allreduce_bytes(model: ModelSpec, chips: int) -> list[float]:
    """Per op of a built-in workload split over ``chips`` chips, the bytes of partial sums
    each chip all-reduces after it (its output, for the ``ROW_PARALLEL`` ops; 0 on one
    chip)."""
    found = []
    for op in model.ops:
        out = op.spec.tensors[0]
        split = chips > 1 and base_name(op.name).endswith(ROW_PARALLEL)
        found.append(float(tensor_elements(op.spec, out.name) * op.spec.bytes_of(out.name)) if split else 0.0)
    return found


def llm_config(model: str, factor: int = 1) -> LLMConfig:
    """The built-in LLM ``model`` (``CONFIGS``), its widths divided by ``factor``."""
    if model not in CONFIGS:
        raise ModelSpecError(f"unknown workload '{model}'; known: {', '.join(MODELS)}")
    return CONFIGS[model] if factor == 1 else scaled(CONFIGS[model], factor)


def stack(name: str, layer: list[ModelOp], layers: int) -> tuple[ModelSpec, list[int]]:
    """``layers`` copies of ``layer`` (producer -1: the previous copy's last op), named
    ``l<k>.<op>``; returns the model and each op's layer index."""
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


def dit_workload(batch: int = 32, chips: int = 4, layers: int | None = None,
                 factor: int = 1) -> tuple[ModelSpec, list[int]]:
    """DiT-XL's blocks (BERT-like, over its latent patches): one chip's share under
    ``chips``-way model parallelism, and each op's layer."""
    cfg = DIT_XL
    heads = max(1, cfg["heads"] // (chips * factor))
    hidden = cfg["hidden"] // factor
    layer = bert_layer_ops(batch, cfg["patches"], hidden, heads if hidden % heads == 0 else 1,
                           cfg["ffn"] // (chips * factor))
    return stack("dit-xl", layer, layers or cfg["layers"])
