"""IGO's workloads (MICRO'23, Table 4) built in code as te functions with a scalar loss:
the layers whose backward pass IGO transforms, at any scale.

Each builder returns the text of one ``func.func @main`` whose arguments are the input
and the weights (``irc.weight``) and whose last result is ``L = sum(Y*Y)/2`` of the
network's output; `te-autodiff` then appends the backward pass. ``scale`` divides the
channel and hidden widths (and ``image`` sets the input side), so tests run scaled-down
versions of the same graphs on the interpreter. The models are the paper's families
restated: no downloads, random weights.
"""

from __future__ import annotations

import math


class Net:
    """A te function under construction."""

    def __init__(self, dtype: str = "f32"):
        self.dtype = dtype
        self.args: list[tuple[str, tuple, bool]] = []
        self.lines: list[str] = []
        self.shapes: dict[str, tuple] = {}
        self.integer: set[str] = set()
        self.count = 0

    def _type(self, shape, element: str | None = None) -> str:
        return f"tensor<{'x'.join(map(str, shape))}{'x' if shape else ''}{element or self.dtype}>"

    def _type_of(self, value: str) -> str:
        return self._type(self.shapes[value], "i64" if value in self.integer else None)

    def arg(self, name: str, shape, weight: bool = False, integer: bool = False) -> str:
        self.args.append((name, tuple(shape), weight))
        self.shapes[f"%{name}"] = tuple(shape)
        if integer:
            self.integer.add(f"%{name}")
        return f"%{name}"

    def weight(self, stem: str, shape) -> str:
        self.count += 1
        return self.arg(f"{stem}{self.count}", shape, weight=True)

    def op(self, expr: str, inputs: list[str], shape) -> str:
        self.count += 1
        name = f"%v{self.count}"
        types = ", ".join(self._type_of(i) for i in inputs)
        self.lines.append(f"  {name} = te.op \"{expr}\" ({', '.join(inputs)}) : ({types}) -> {self._type(shape)}")
        self.shapes[name] = tuple(shape)
        return name

    # layers ------------------------------------------------------------------

    def linear(self, x: str, features: int, bias: bool = True) -> str:
        *lead, k = self.shapes[x]
        axes = [f"a{d}" for d in range(len(lead))]
        idx = ",".join(axes)
        w = self.weight("w", (k, features))
        y = self.op(f"Y[{idx},n] += X[{idx},k] * W[k,n]", [x, w], (*lead, features))
        if bias:
            b = self.weight("b", (features,))
            y = self.op(f"Y[{idx},n] = X[{idx},n] + B[n]", [y, b], (*lead, features))
        return y

    def conv(self, x: str, features: int, kernel: int, stride: int = 1, groups: int = 1) -> str:
        """A 'same'-padded convolution (NCHW); groups == channels is depthwise."""
        n, c, h, w = self.shapes[x]
        pad = kernel // 2
        if pad:
            x = self.op(f"P[n,c,h+{pad},w+{pad}] = X[n,c,h,w]", [x], (n, c, h + 2 * pad, w + 2 * pad))
        ho, wo = (h + 2 * pad - kernel) // stride + 1, (w + 2 * pad - kernel) // stride + 1
        hi = f"{stride}*h+r" if stride > 1 else "h+r"
        wi = f"{stride}*w+s" if stride > 1 else "w+s"
        if groups == 1:
            wt = self.weight("w", (features, c, kernel, kernel))
            expr = f"Y[n,f,h,w] += X[n,c,{hi},{wi}] * W[f,c,r,s]"
        else:  # depthwise
            wt = self.weight("w", (c, kernel, kernel))
            expr = f"Y[n,c,h,w] += X[n,c,{hi},{wi}] * W[c,r,s]"
            features = c
        if kernel == 1:
            expr = expr.replace("+r", "").replace("+s", "").replace(",r,s]", "]")
            wt_shape = self.shapes[wt]
            self.shapes[wt] = wt_shape[:-2]
            self.args[-1] = (self.args[-1][0], wt_shape[:-2], True)
        return self.op(expr, [x, wt], (n, features, ho, wo))

    def relu(self, x: str) -> str:
        idx = ",".join(f"a{d}" for d in range(len(self.shapes[x])))
        return self.op(f"Y[{idx}] = relu(X[{idx}])", [x], self.shapes[x])

    def gelu(self, x: str) -> str:
        idx = ",".join(f"a{d}" for d in range(len(self.shapes[x])))
        return self.op(f"Y[{idx}] = gelu(X[{idx}])", [x], self.shapes[x])

    def add(self, x: str, y: str) -> str:
        idx = ",".join(f"a{d}" for d in range(len(self.shapes[x])))
        return self.op(f"Y[{idx}] = A[{idx}] + B[{idx}]", [x, y], self.shapes[x])

    def maxpool(self, x: str, k: int = 2) -> str:
        n, c, h, w = self.shapes[x]
        return self.op(f"Y[n,c,h,w] max= X[n,c,{k}*h+r,{k}*w+s] where r in {k}, s in {k}",
                       [x], (n, c, h // k, w // k))

    def global_pool(self, x: str) -> str:
        n, c, h, w = self.shapes[x]
        return self.op(f"Y[n,c] += X[n,c,h,w] * {1.0 / (h * w)!r}", [x], (n, c))

    def layer_norm(self, x: str) -> str:
        *lead, d = self.shapes[x]
        idx = ",".join(f"a{k}" for k in range(len(lead)))
        mean = self.op(f"M[{idx}] += X[{idx},d] * {1.0 / d!r}", [x], tuple(lead))
        centred = self.op(f"C[{idx},d] = X[{idx},d] - M[{idx}]", [x, mean], self.shapes[x])
        var = self.op(f"V[{idx}] += C[{idx},d] * C[{idx},d] * {1.0 / d!r}", [centred], tuple(lead))
        g, b = self.weight("g", (d,)), self.weight("b", (d,))
        return self.op(f"Y[{idx},d] = C[{idx},d] * rsqrt(V[{idx}] + 1e-05) * G[d] + B[d]", [centred, var, g, b],
                       self.shapes[x])

    def softmax(self, x: str) -> str:
        *lead, d = self.shapes[x]
        idx = ",".join(f"a{k}" for k in range(len(lead)))
        m = self.op(f"M[{idx}] max= X[{idx},d]", [x], tuple(lead))
        e = self.op(f"E[{idx},d] = exp(X[{idx},d] - M[{idx}])", [x, m], self.shapes[x])
        s = self.op(f"S[{idx}] += E[{idx},d]", [e], tuple(lead))
        return self.op(f"Y[{idx},d] = E[{idx},d] / S[{idx}]", [e, s], self.shapes[x])

    def attention(self, x: str, heads: int) -> str:
        b, t, d = self.shapes[x]
        q, k, v = (self.linear(x, d) for _ in range(3))
        hd = d // heads
        split = lambda y: self.op(f"Y[b,h,t,e] = X[b,t,{hd}*h+e]", [y], (b, heads, t, hd))  # noqa: E731
        q, k, v = split(q), split(k), split(v)
        s = self.op(f"S[b,h,i,j] += Q[b,h,i,e] * K[b,h,j,e] * {1.0 / math.sqrt(hd)!r}", [q, k], (b, heads, t, t))
        p = self.softmax(s)
        o = self.op("O[b,h,i,e] += P[b,h,i,j] * V[b,h,j,e]", [p, v], (b, heads, t, hd))
        merged = self.op(f"Y[b,t,{hd}*h+e] = O[b,h,t,e]", [o], (b, t, d))
        return self.linear(merged, d)

    def embedding(self, ids: str, rows: int, dim: int) -> str:
        (b, f) = self.shapes[ids]
        table = self.weight("e", (rows, dim))
        return self.op("Y[b,f,d] = E[I[b,f],d]", [table, ids], (b, f, dim))

    # the function ----------------------------------------------------------------

    def text(self, y: str) -> str:
        idx = ",".join(f"a{d}" for d in range(len(self.shapes[y])))
        loss = self.op(f"L[] += Y[{idx}] * Y[{idx}] * 0.5", [y], ())
        args = ", ".join(
            f"%{name}: {self._type_of('%' + name)} {{irc.name = \"{name}\"{', irc.weight' if weight else ''}}}"
            for name, shape, weight in self.args
        )
        body = "\n".join(self.lines)
        return (f"func.func @main({args}) -> ({self._type(())} {{irc.name = \"loss\"}}) {{\n{body}\n"
                f"  func.return {loss} : {self._type(())}\n}}\n")


def resnet50(batch: int, scale: int = 1, image: int = 224, dtype: str = "f32", stages=(3, 4, 6, 3)) -> str:
    """ResNet-50: a 7x7/2 stem, max pool, bottleneck stages (1x1, 3x3 stride, 1x1 and a
    projected residual), global pool and the classifier."""
    net = Net(dtype)
    x = net.arg("x", (batch, 3, image, image))
    y = net.maxpool(net.relu(net.conv(x, 64 // scale, 7, stride=2)))
    for stage, blocks in enumerate(stages):
        width = (64 << stage) // scale
        for block in range(blocks):
            stride = 2 if block == 0 and stage > 0 else 1
            h = net.relu(net.conv(y, width, 1))
            h = net.relu(net.conv(h, width, 3, stride=stride))
            h = net.conv(h, 4 * width, 1)
            shortcut = net.conv(y, 4 * width, 1, stride=stride) if block == 0 else y
            y = net.relu(net.add(h, shortcut))
    return net.text(net.linear(net.global_pool(y), max(10, 1000 // scale)))


def mobilenet_v2(batch: int, scale: int = 1, image: int = 224, dtype: str = "f32", repeats=(1, 2, 3, 4, 3, 3, 1)) -> str:
    """MobileNet-v2: inverted residuals (1x1 expand, 3x3 depthwise, 1x1 project)."""
    net = Net(dtype)
    x = net.arg("x", (batch, 3, image, image))
    y = net.relu(net.conv(x, 32 // scale, 3, stride=2))
    settings = [(1, 16, 1), (6, 24, 2), (6, 32, 2), (6, 64, 2), (6, 96, 1), (6, 160, 2), (6, 320, 1)]
    for (expand, channels, stride), count in zip(settings, repeats):
        for block in range(count):
            c_in = net.shapes[y][1]
            h = net.relu(net.conv(y, c_in * expand, 1)) if expand > 1 else y
            h = net.relu(net.conv(h, 0, 3, stride=stride if block == 0 else 1, groups=-1))
            h = net.conv(h, max(1, channels // scale), 1)
            y = net.add(h, y) if block > 0 else h
    y = net.relu(net.conv(y, 1280 // scale, 1))
    return net.text(net.linear(net.global_pool(y), max(10, 1000 // scale)))


def transformer_encoder(batch: int, tokens: int, hidden: int, heads: int, ffn: int, layers: int = 1,
                        dtype: str = "f32", activation: str = "gelu", vocab: int = 0) -> str:
    """BERT / T5 style encoder layers: attention, residual, layer norm, FFN. With a
    `vocab`, the input is token ids looked up in a trained embedding table, as in the
    real models: the gradient then flows into the table, so every block's Q, K and V
    projections have a dX (without it the first block's read an input that needs none)."""
    net = Net(dtype)
    if vocab:
        ids = net.arg("ids", (batch, tokens), integer=True)
        y = net.embedding(ids, vocab, hidden)
    else:
        y = net.arg("x", (batch, tokens, hidden))
    for _ in range(layers):
        a = net.layer_norm(net.add(net.attention(y, heads), y))
        h = net.linear(a, ffn)
        h = net.gelu(h) if activation == "gelu" else net.relu(h)
        y = net.layer_norm(net.add(net.linear(h, hidden), a))
    return net.text(y)


BERT_VOCAB = 30522
T5_VOCAB = 32128


def bert_large(batch: int, tokens: int = 128, layers: int = 1, dtype: str = "f32", vocab: int = 0) -> str:
    """BERT-large (Devlin et al.): 24 of these layers, 340M parameters (IGO Table 4)."""
    return transformer_encoder(batch, tokens, 1024, 16, 4096, layers, dtype, vocab=vocab)


def bert_tiny(batch: int, tokens: int = 128, layers: int = 2, dtype: str = "f32", vocab: int = 0) -> str:
    """Google's BERT-Tiny (L=2, H=128, 4.4M parameters with its embeddings)."""
    return transformer_encoder(batch, tokens, 128, 2, 512, layers, dtype, vocab=vocab)


def tinybert_4(batch: int, tokens: int = 128, layers: int = 4, dtype: str = "f32", vocab: int = 0) -> str:
    """TinyBERT-4 (Jiao et al.: L=4, H=312, 12 heads, FFN 1200): 14.5M parameters with
    its embeddings, the "BERT tiny, 14M" of IGO Table 4 (Google's BERT-Tiny has 4.4M)."""
    return transformer_encoder(batch, tokens, 312, 12, 1200, layers, dtype, vocab=vocab)


def t5_large(batch: int, tokens: int = 128, layers: int = 1, dtype: str = "f32", vocab: int = 0) -> str:
    """T5-large (Raffel et al., d_model 1024, d_ff 4096, 16 heads; 770M parameters as in
    IGO Table 4; T5 v1.1's d_ff 2816 is the 783M model), encoder layers."""
    return transformer_encoder(batch, tokens, 1024, 16, 4096, layers, dtype, activation="relu", vocab=vocab)


def t5_small(batch: int, tokens: int = 128, layers: int = 1, dtype: str = "f32", vocab: int = 0) -> str:
    """T5-small (d_model 512, d_ff 2048, 8 heads; 60M parameters, IGO Table 4), encoder layers."""
    return transformer_encoder(batch, tokens, 512, 8, 2048, layers, dtype, activation="relu", vocab=vocab)


def yolov2_tiny(batch: int, scale: int = 1, image: int = 416, dtype: str = "f32") -> str:
    """YOLOv2-tiny (darknet's yolov2-tiny.cfg, COCO: 11M parameters as in IGO Table 4):
    3x3 conv + max pool stages, 3x3 convs of 512, 1024 and 512 channels at 1/32 of the
    image (the sixth pool has stride 1: no GEMM, left out), a 1x1 detection conv of
    5 x (80 + 5) = 425 channels."""
    net = Net(dtype)
    y = net.arg("x", (batch, 3, image, image))
    for channels in (16, 32, 64, 128, 256):
        y = net.maxpool(net.relu(net.conv(y, max(2, channels // scale), 3)))
    y = net.relu(net.conv(y, max(2, 512 // scale), 3))
    y = net.relu(net.conv(y, max(2, 1024 // scale), 3))
    y = net.relu(net.conv(y, max(2, 512 // scale), 3))
    return net.text(net.conv(y, max(2, 425 // scale), 1))


def ncf_mlp(batch: int, rows: int = 100000, dim: int = 128, layers=(256, 128, 64), dtype: str = "f32") -> str:
    """NCF / DLRM style: user and item embeddings gathered, concatenated, an MLP. The
    defaults are the MLP tower of MLPerf's NeuMF (layer sizes 256, 256, 128, 64: two 128
    wide embeddings concatenated, then 256, 128 and 64 wide layers), then the output
    layer; NeuMF's GMF branch (an elementwise product of two more embeddings, no GEMM,
    whose 64 features join the output layer's input) is left out."""
    net = Net(dtype)
    ids = net.arg("ids", (batch, 2), integer=True)
    e = net.embedding(ids, rows, dim)
    y = net.op(f"Y[b,{dim}*f+d] = E[b,f,d]", [e], (batch, 2 * dim))
    for width in layers:
        y = net.relu(net.linear(y, width))
    return net.text(net.linear(y, 1))


def workloads(npu: str, batch: int | None = None) -> dict[str, str]:
    """The workloads at the paper's sizes for `npu` (``edge``: batch 4, the small models
    of a family; ``server``: batch 8, the large ones), §6.1. The transformers are one
    encoder layer (every layer of BERT-large, TinyBERT-4 or a T5 encoder has the same
    GEMMs, so ratios of sums do not depend on how many) after the token embedding."""
    edge = npu == "edge"
    b = batch or (4 if edge else 8)
    models = {
        "res": lambda: resnet50(b, dtype="f16"),
        "mob": lambda: mobilenet_v2(b, dtype="f16"),
        "bert": lambda: (tinybert_4(b, layers=1, dtype="f16", vocab=BERT_VOCAB) if edge
                         else bert_large(b, dtype="f16", vocab=BERT_VOCAB)),
        "T5": lambda: (t5_small(b, dtype="f16", vocab=T5_VOCAB) if edge else t5_large(b, dtype="f16", vocab=T5_VOCAB)),
        "yolo": lambda: yolov2_tiny(b, dtype="f16"),
        "ncf": lambda: ncf_mlp(b, dtype="f16"),
    }
    return {name: build() for name, build in models.items()}


def scaled_down(dtype: str = "f32") -> dict[str, str]:
    """Each workload's graph at a size the interpreter runs in a moment."""
    return {
        "res": resnet50(1, scale=16, image=16, stages=(1, 1), dtype=dtype),
        "mob": mobilenet_v2(1, scale=8, image=16, repeats=(1, 2, 1), dtype=dtype),
        "bert": transformer_encoder(1, 4, 8, 2, 16, layers=1, dtype=dtype, vocab=11),
        "T5": transformer_encoder(1, 4, 8, 2, 12, layers=1, activation="relu", dtype=dtype, vocab=13),
        "yolo": yolov2_tiny(1, scale=32, image=32, dtype=dtype),
        "ncf": ncf_mlp(2, rows=6, dim=3, layers=(5, 4), dtype=dtype),
    }
