"""BERT encoder layers as ``ModelOp`` sequences, built directly from ``OpSpec`` values.

One encoder layer (Devlin et al.; T10 s6 evaluates BERT-large) on ``m = batch * seq``
tokens, ``g = batch * heads`` attention groups and head size ``d = hidden / heads``:

    q/k/v_proj  Q[m,n] += X[m,h] * Wq[h,n]            (matmul, weight)
    scores      S[g,i,j] += Q[g,i,d] * K[g,j,d]         (batched matmul; Q, K reshaped)
    softmax     max_j (reduce), exp(S - max) (elementwise), sum_j (reduce), divide (elementwise)
    context     C[g,i,d] += P[g,i,j] * V[g,j,d]         (batched matmul)
    out_proj    O[m,h] += C[m,n] * Wo[n,h]              (matmul, weight; C reshaped)
    residual    R = O + X                                (elementwise)
    layernorm   mean (reduce), centre (elementwise), variance (reduce), scale by gamma (weight)
    ffn1/gelu/ffn2, residual, layernorm

Biases and the 1/sqrt(d) scale are left out (they fold into neighbouring elementwise ops).
Reshapes between [m, n] and [g, i, d] are expressed by the consumer reading the producer's
output with other dimensions; the relayout then prices the whole partition as moved.
"""

from __future__ import annotations

from irc.planner.model import ModelOp, ModelSpec, ModelSpecError
from irc.plans.spec import OpSpec, TensorSpec

LAYER_INPUT = -1   # producer index meaning "the layer's input" in ``bert_layer_ops``


def _t(name: str, *axes: str) -> TensorSpec:
    return TensorSpec(name, tuple((a,) for a in axes))


def _matmul(axes, out, a, b, reduction) -> OpSpec:
    return OpSpec(axes=tuple(axes), tensors=(out, a, b), reduction_axes=reduction, kind="matmul")


def _elementwise(axes, out, *inputs, kind: str = "elementwise") -> OpSpec:
    return OpSpec(axes=tuple(axes), tensors=(out, *inputs), reduction_axes=(), kind=kind)


def _reduce(axes, out, data, reduction) -> OpSpec:
    return OpSpec(axes=tuple(axes), tensors=(out, data), reduction_axes=reduction, kind="reduce")


def bert_layer_ops(batch: int, seq: int, hidden: int, heads: int, ffn: int) -> list[ModelOp]:
    """The 23 operators of one encoder layer; ``producers`` index ops of this list, and
    ``LAYER_INPUT`` (-1) stands for the layer's input activation X[m,h]."""
    if hidden % heads:
        raise ModelSpecError(f"hidden size {hidden} is not a multiple of the {heads} heads")
    m, g, d = batch * seq, batch * heads, hidden // heads
    tokens_h = (("m", m), ("h", hidden))
    ops: list[ModelOp] = []

    def add(name, spec, weights=(), **producers):
        ops.append(ModelOp(name, spec, tuple(weights), producers))
        return len(ops) - 1

    proj = lambda out, w: _matmul(  # noqa: E731
        (("m", m), ("h", hidden), ("n", hidden)), _t(out, "m", "n"), _t("X", "m", "h"), _t(w, "h", "n"), ("h",)
    )
    q = add("q_proj", proj("Q", "Wq"), ["Wq"], X=LAYER_INPUT)
    k = add("k_proj", proj("K", "Wk"), ["Wk"], X=LAYER_INPUT)
    v = add("v_proj", proj("V", "Wv"), ["Wv"], X=LAYER_INPUT)
    attn = (("g", g), ("i", seq), ("j", seq))
    scores = add(
        "scores",
        _matmul((("g", g), ("i", seq), ("d", d), ("j", seq)), _t("S", "g", "i", "j"),
                _t("Q", "g", "i", "d"), _t("K", "g", "j", "d"), ("d",)),
        Q=q, K=k,
    )
    row_max = add("softmax_max", _reduce(attn, _t("Mx", "g", "i"), _t("S", "g", "i", "j"), ("j",)), S=scores)
    exp = add("softmax_exp", _elementwise(attn, _t("E", "g", "i", "j"), _t("S", "g", "i", "j"), _t("Mx", "g", "i")),
              S=scores, Mx=row_max)
    row_sum = add("softmax_sum", _reduce(attn, _t("Z", "g", "i"), _t("E", "g", "i", "j"), ("j",)), E=exp)
    probs = add("softmax_div", _elementwise(attn, _t("P", "g", "i", "j"), _t("E", "g", "i", "j"), _t("Z", "g", "i")),
                E=exp, Z=row_sum)
    context = add(
        "context",
        _matmul((("g", g), ("i", seq), ("j", seq), ("d", d)), _t("C", "g", "i", "d"),
                _t("P", "g", "i", "j"), _t("V", "g", "j", "d"), ("j",)),
        P=probs, V=v,
    )
    out = add(
        "out_proj",
        _matmul((("m", m), ("n", hidden), ("h", hidden)), _t("O", "m", "h"), _t("C", "m", "n"), _t("Wo", "n", "h"), ("n",)),
        ["Wo"], C=context,
    )
    residual = add("residual1", _elementwise(tokens_h, _t("R", "m", "h"), _t("O", "m", "h"), _t("X", "m", "h")),
                   O=out, X=LAYER_INPUT)

    def layernorm(prefix: str, source: int) -> int:
        mean = add(f"{prefix}_mean", _reduce(tokens_h, _t("Mu", "m"), _t("R", "m", "h"), ("h",)), R=source)
        centre = add(f"{prefix}_center",
                     _elementwise(tokens_h, _t("D", "m", "h"), _t("R", "m", "h"), _t("Mu", "m")), R=source, Mu=mean)
        var = add(f"{prefix}_var", _reduce(tokens_h, _t("Var", "m"), _t("D", "m", "h"), ("h",)), D=centre)
        return add(
            f"{prefix}_scale",
            _elementwise(tokens_h, _t("Y", "m", "h"), _t("D", "m", "h"), _t("Var", "m"), _t("G", "h")),
            ["G"], D=centre, Var=var,
        )

    normed = layernorm("ln1", residual)
    up = add(
        "ffn1",
        _matmul((("m", m), ("h", hidden), ("f", ffn)), _t("H1", "m", "f"), _t("Y", "m", "h"), _t("W1", "h", "f"), ("h",)),
        ["W1"], Y=normed,
    )
    gelu = add("gelu", _elementwise((("m", m), ("f", ffn)), _t("A", "m", "f"), _t("H1", "m", "f"), kind="unary"), H1=up)
    down = add(
        "ffn2",
        _matmul((("m", m), ("f", ffn), ("h", hidden)), _t("O2", "m", "h"), _t("A", "m", "f"), _t("W2", "f", "h"), ("f",)),
        ["W2"], A=gelu,
    )
    residual2 = add("residual2", _elementwise(tokens_h, _t("R", "m", "h"), _t("O2", "m", "h"), _t("Y", "m", "h")),
                    O2=down, Y=normed)
    layernorm("ln2", residual2)
    return ops


def stack_layers(name: str, layer: list[ModelOp], layers: int) -> ModelSpec:
    """``layers`` copies of ``layer``; each copy's ``LAYER_INPUT`` reads the previous copy's
    last op (the first copy's is a model input)."""
    ops: list[ModelOp] = []
    for n in range(layers):
        base = n * len(layer)
        for op in layer:
            producers = {}
            for tensor, producer in op.producers.items():
                if producer == LAYER_INPUT:
                    if n > 0:
                        producers[tensor] = base - 1
                else:
                    producers[tensor] = base + producer
            ops.append(ModelOp(f"layer{n}.{op.name}", op.spec, op.weights, producers))
    return ModelSpec(name, tuple(ops))


def bert_model(
    layers: int = 24, batch: int = 8, seq: int = 384, hidden: int = 1024, heads: int = 16, ffn: int = 4096
) -> ModelSpec:
    """A BERT encoder stack (defaults: BERT-large, batch 8, sequence 384)."""
    return stack_layers(
        f"bert-l{layers}-h{hidden}-b{batch}-s{seq}", bert_layer_ops(batch, seq, hidden, heads, ffn), layers
    )
