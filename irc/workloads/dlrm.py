"""DLRM built in code (Naumov et al., "Deep Learning Recommendation Model for
Personalization and Recommendation Systems", 2019; the MTIA paper's reference [16]).

The published architecture: dense features through a bottom MLP (its last width is the
embedding dimension); each sparse feature an EmbeddingBag over its own table (sum
pooling); the bottom MLP's output and the pooled embeddings interact by pairwise dot
products (a BatchMatMul of the stacked vectors with themselves); the dot products,
concatenated with the bottom MLP's output, go through a top MLP ending in one logit and a
sigmoid. Two forms:

- ``dlrm_te``: te IR text of the whole model (FC layers as matmuls plus bias and ReLU,
  embedding bags as ``te.opaque "EmbeddingBag"``, concatenations as padded writes, the
  interaction as a batched matmul; optional INT8 FC layers with QuantizeLinear and
  DequantizeLinear around them), for the interpreters;
- ``dlrm_mtia_model``: the same operators as the MTIA planner's ``MtiaModel`` (tables as
  one TableBatchedEmbedding, section 6), with Table III's operator classes.

Sizes: ``SMALL`` is for tests. ``LC`` and ``MC`` follow the shapes of the DLRM
repository's Criteo Kaggle model (26 tables of dimension 16, a bottom MLP ending at 16)
and its Criteo Terabyte / MLPerf one (26 tables of dimension 128, bottom 13-512-256-128),
with MLP widths, table rows and pooling factors chosen (Meta's production models are
unpublished) so that at batch 64 their complexity falls in Table IV's ranges: ``LC``
(bottom 13-256-64-16, top 256-1) 0.029 GFLOPs per batch, in LC's 0.014-0.032, with 5.0 GB
of INT8 tables, in LC's 4.5-53.2 GB; ``MC`` (top 512-512-256-1) 0.149 GFLOPs, in MC's
0.140-0.220, with 59.9 GB of tables - less than MC's 120-200 GB, which exceed one card's 64
GB of LPDDR (Table I): the planner places a model on one card. ``flops_per_batch`` and
``table_bytes`` state both; ``benchmarks/mtia.py`` prints them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from irc.planner.model import ModelOp
from irc.planner.mtia import EmbeddingOp, EmbeddingSpec, MtiaModel
from irc.plans.spec import OpSpec, TensorSpec


@dataclass(frozen=True)
class DlrmConfig:
    name: str
    batch: int
    dense: int                      # dense input features
    bottom: tuple[int, ...]         # bottom MLP widths; the last is the embedding dim
    top: tuple[int, ...]            # top MLP widths; the last is 1 (the logit)
    tables: tuple[int, ...]         # rows of each embedding table
    pooling: int                    # lookups per bag
    int8: bool = False              # FC layers in INT8 (tables INT8 too, section 6)

    @property
    def dim(self) -> int:
        return self.bottom[-1]

    @property
    def vectors(self) -> int:
        """Vectors that interact: the bottom MLP's output and one per table."""
        return 1 + len(self.tables)

    @property
    def top_input(self) -> int:
        return self.dim + self.vectors * self.vectors

    def at_batch(self, batch: int) -> "DlrmConfig":
        return replace(self, batch=batch)

    def fc_layers(self) -> list[tuple[str, int, int]]:
        """(name, inputs, outputs) of every FC layer, bottom then top."""
        layers, width = [], self.dense
        for i, out in enumerate(self.bottom):
            layers.append((f"bot{i}", width, out))
            width = out
        width = self.top_input
        for i, out in enumerate(self.top):
            layers.append((f"top{i}", width, out))
            width = out
        return layers

    def flops_per_batch(self) -> float:
        """Multiply-adds as two flops: FC layers and the interaction (Table IV's
        complexity column is GFLOPS per batch)."""
        fc = sum(2 * self.batch * i * o for _, i, o in self.fc_layers())
        interaction = 2 * self.batch * self.vectors * self.vectors * self.dim
        pooling = self.batch * len(self.tables) * self.pooling * self.dim
        return float(fc + interaction + pooling)

    def table_bytes(self) -> int:
        return sum(self.tables) * self.dim * (1 if self.int8 else 4)


SMALL = DlrmConfig("dlrm-small", batch=8, dense=13, bottom=(64, 32), top=(64, 1), tables=(50, 40, 30), pooling=4)
LC = DlrmConfig("dlrm-lc", batch=64, dense=13, bottom=(256, 64, 16), top=(256, 1),
                tables=(12_000_000,) * 26, pooling=20, int8=True)
MC = DlrmConfig("dlrm-mc", batch=64, dense=13, bottom=(512, 256, 128), top=(512, 512, 256, 1),
                tables=(18_000_000,) * 26, pooling=40, int8=True)
CONFIGS = {c.name: c for c in (SMALL, LC, MC)}

# Quantization of the INT8 FC layers' activations and weights (symmetric, per tensor).
ACT_SCALE = 0.05
WEIGHT_SCALE = 0.02


# ---------------------------------------------------------------------------------------
# te IR
# ---------------------------------------------------------------------------------------


def _t(shape, dtype="f32") -> str:
    return "tensor<" + "x".join(str(d) for d in shape) + f"x{dtype}>"


def dlrm_te(config: DlrmConfig, int8_layers: tuple[str, ...] = ()) -> str:
    """The model as te IR: ``@main(dense, idx0, off0, ..., weights...) -> probability``.
    Layers named in ``int8_layers`` run quantized (QuantizeLinear, an INT8 FC
    accumulating in INT32, DequantizeLinear)."""
    b, d = config.batch, config.dim
    args, lines = [f"%dense: {_t((b, config.dense))}"], []
    for t, rows in enumerate(config.tables):
        args += [f"%idx{t}: {_t((b * config.pooling,), 'i64')}", f"%off{t}: {_t((b,), 'i64')}"]
    weights = []
    for name, fan_in, fan_out in config.fc_layers():
        dtype = "i8" if name in int8_layers else "f32"
        weights += [f"%w_{name}: {_t((fan_in, fan_out), dtype)} {{irc.weight}}",
                    f"%b_{name}: {_t((fan_out,))} {{irc.weight}}"]
    for t, rows in enumerate(config.tables):
        weights.append(f"%emb{t}: {_t((rows, d))} {{irc.weight}}")
    args += weights

    def fc(name, x, fan_in, fan_out, last):
        out = f"%{name}"
        if name in int8_layers:
            lines.append(f'{out}_q = te.op "Q[b,i] = cast(min(max(round(X[b,i] / {ACT_SCALE}), -128), 127))" ({x}) '
                         f': ({_t((b, fan_in))}) -> {_t((b, fan_in), "i8")}')
            lines.append(f'{out}_acc = te.op "C[m,n] += cast(A[m,k]) * cast(B[k,n])" ({out}_q, %w_{name}) '
                         f': ({_t((b, fan_in), "i8")}, {_t((fan_in, fan_out), "i8")}) -> {_t((b, fan_out), "i32")}')
            lines.append(f'{out}_mm = te.op "Y[b,o] = cast(C[b,o]) * {ACT_SCALE * WEIGHT_SCALE}" ({out}_acc) '
                         f': ({_t((b, fan_out), "i32")}) -> {_t((b, fan_out))}')
        else:
            lines.append(f'{out}_mm = te.op "C[m,n] += A[m,k] * B[k,n]" ({x}, %w_{name}) '
                         f': ({_t((b, fan_in))}, {_t((fan_in, fan_out))}) -> {_t((b, fan_out))}')
        activation = "sigmoid" if last == "sigmoid" else "relu"
        lines.append(f'{out} = te.op "Y[b,o] = {activation}(C[b,o] + Z[o])" ({out}_mm, %b_{name}) '
                     f': ({_t((b, fan_out))}, {_t((fan_out,))}) -> {_t((b, fan_out))}')
        return out

    x, width = "%dense", config.dense
    for i, out in enumerate(config.bottom):
        x = fc(f"bot{i}", x, width, out, "relu")
        width = out
    bottom = x
    n = config.vectors
    pooled = []
    for t in range(len(config.tables)):
        lines.append(f'%pool{t} = te.opaque "EmbeddingBag"(%emb{t}, %idx{t}, %off{t}) {{mode = "sum"}} '
                     f': ({_t((config.tables[t], d))}, {_t((b * config.pooling,), "i64")}, {_t((b,), "i64")}) '
                     f'-> {_t((b, d))}')
        pooled.append(f"%pool{t}")
    # Concat of the n vectors along a new axis: each written at its own slot, zeros elsewhere
    slots = []
    for v, value in enumerate([bottom] + pooled):
        lines.append(f'%slot{v} = te.op "F[b,{v},e] = X[b,e]" ({value}) : ({_t((b, d))}) -> {_t((b, n, d))}')
        slots.append(f"%slot{v}")
    names = [chr(ord("A") + i) for i in range(n)]
    body = " + ".join(f"{name}[b,v,e]" for name in names)
    lines.append(f'%stacked = te.op "F[b,v,e] = {body}" ({", ".join(slots)}) '
                 f': ({", ".join([_t((b, n, d))] * n)}) -> {_t((b, n, d))}')
    # BatchMatMul: every pair's dot product
    lines.append(f'%dots = te.op "Z[b,i,j] += F[b,i,e] * G[b,j,e]" (%stacked, %stacked) '
                 f': ({_t((b, n, d))}, {_t((b, n, d))}) -> {_t((b, n, n))}')
    # Concat of the bottom output and the flattened dot products
    total = config.top_input
    lines.append(f'%lead = te.op "P[b,e] = X[b,e] where e in {d}" ({bottom}) : ({_t((b, d))}) -> {_t((b, total))}')
    lines.append(f'%tail = te.op "P[b,{d}+{n}*i+j] = Z[b,i,j]" (%dots) : ({_t((b, n, n))}) -> {_t((b, total))}')
    lines.append(f'%joined = te.op "P[b,e] = X[b,e] + Y[b,e]" (%lead, %tail) '
                 f': ({_t((b, total))}, {_t((b, total))}) -> {_t((b, total))}')
    x, width = "%joined", total
    for i, out in enumerate(config.top):
        last = "sigmoid" if i == len(config.top) - 1 else "relu"
        x = fc(f"top{i}", x, width, out, last)
        width = out
    lines.append(f"func.return {x} : {_t((b, 1))}")
    header = f"func.func @main({', '.join(args)}) -> {_t((b, 1))} {{"
    return "\n".join([header] + ["  " + line for line in lines] + ["}"]) + "\n"


def dlrm_te_classes(config: DlrmConfig, int8_layers: tuple[str, ...] = ()) -> dict[str, str]:
    """Table III's operator class of every value ``dlrm_te`` defines, by name (what a run's
    kernels are named after): FC, Quantize, Dequantize, EB, Concat, BatchMatMul, Others."""
    classes = {}
    for name, _, _ in config.fc_layers():
        if name in int8_layers:
            classes.update({f"{name}_q": "Quantize", f"{name}_acc": "FC", f"{name}_mm": "Dequantize"})
        else:
            classes[f"{name}_mm"] = "FC"
        classes[name] = "Others"          # bias and activation
    for t in range(len(config.tables)):
        classes[f"pool{t}"] = "EB"
    for v in range(config.vectors):
        classes[f"slot{v}"] = "Concat"
    classes.update({"stacked": "Concat", "dots": "BatchMatMul", "lead": "Concat", "tail": "Concat",
                    "joined": "Concat"})
    return classes


def dlrm_inputs(config: DlrmConfig, int8_layers: tuple[str, ...] = (), seed: int = 0) -> dict:
    """Random inputs and weights by argument name (``arg0`` is the dense features, then
    each table's indices and offsets, then the weights in signature order)."""
    rng = np.random.default_rng(seed)
    b = config.batch
    values = [rng.standard_normal((b, config.dense)).astype(np.float32)]
    for rows in config.tables:
        values.append(rng.integers(0, rows, b * config.pooling).astype(np.int64))
        values.append((np.arange(b) * config.pooling).astype(np.int64))
    for name, fan_in, fan_out in config.fc_layers():
        if name in int8_layers:
            values.append(rng.integers(-127, 128, (fan_in, fan_out)).astype(np.int8))
        else:
            values.append((rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32))
        values.append((0.1 * rng.standard_normal(fan_out)).astype(np.float32))
    for rows in config.tables:
        values.append((0.1 * rng.standard_normal((rows, config.dim))).astype(np.float32))
    return {f"arg{i}": v for i, v in enumerate(values)}


# ---------------------------------------------------------------------------------------
# The MTIA planner's model
# ---------------------------------------------------------------------------------------


def dlrm_mtia_model(config: DlrmConfig):
    """The model's operators for ``irc.planner.mtia.plan_model``, with Table III's classes."""
    b, d, n = config.batch, config.dim, config.vectors
    act = 4          # f32 activations between operators
    ops, categories = [], {}

    def add(op, category):
        ops.append(op)
        categories[op.name] = category

    def unary(name, shape, kind="unary", out_bytes=None, in_bytes=None, category="Others"):
        axes = tuple((f"a{i}", e) for i, e in enumerate(shape))
        dims = tuple((f"a{i}",) for i in range(len(shape)))
        spec = OpSpec(axes=axes, tensors=(TensorSpec("Y", dims, out_bytes), TensorSpec("X", dims, in_bytes)),
                      reduction_axes=(), kind=kind, dtype_bytes=act)
        add(ModelOp(name, spec), category)

    def fc(name, fan_in, fan_out):
        if config.int8:
            unary(f"{name}.quantize", (b, fan_in), out_bytes=1, category="Quantize")
            spec = OpSpec(axes=(("m", b), ("k", fan_in), ("n", fan_out)),
                          tensors=(TensorSpec("C", (("m",), ("n",)), 4), TensorSpec("A", (("m",), ("k",)), 1),
                                   TensorSpec("B", (("k",), ("n",)), 1)),
                          reduction_axes=("k",), kind="matmul", dtype_bytes=1)
            add(ModelOp(f"{name}.fc", spec, weights=("B",)), "FC")
            unary(f"{name}.dequantize", (b, fan_out), in_bytes=4, category="Dequantize")
        else:
            spec = OpSpec(axes=(("m", b), ("k", fan_in), ("n", fan_out)),
                          tensors=(TensorSpec("C", (("m",), ("n",))), TensorSpec("A", (("m",), ("k",))),
                                   TensorSpec("B", (("k",), ("n",)))),
                          reduction_axes=("k",), kind="matmul", dtype_bytes=2)
            add(ModelOp(f"{name}.fc", spec, weights=("B",)), "FC")
        unary(f"{name}.bias_act", (b, fan_out), kind="elementwise")

    for name, fan_in, fan_out in config.fc_layers():
        if name.startswith("bot"):
            fc(name, fan_in, fan_out)
    add(EmbeddingOp("tbe", EmbeddingSpec(batch=b, pooling=config.pooling, rows=max(config.tables), dim=d,
                                         tables=len(config.tables), dtype_bytes=1 if config.int8 else 4)), "EB")
    unary("interaction.concat", (b, n, d), kind="other", category="Concat")
    bmm = OpSpec(axes=(("b", b), ("i", n), ("e", d), ("j", n)),
                 tensors=(TensorSpec("Z", (("b",), ("i",), ("j",))), TensorSpec("F", (("b",), ("i",), ("e",))),
                          TensorSpec("G", (("b",), ("j",), ("e",)))),
                 reduction_axes=("e",), kind="matmul", dtype_bytes=2)
    add(ModelOp("interaction.bmm", bmm), "BatchMatMul")
    unary("interaction.flatten", (b, n, n), kind="other", category="Others")
    unary("top.concat", (b, config.top_input), kind="other", category="Concat")
    for name, fan_in, fan_out in config.fc_layers():
        if name.startswith("top"):
            fc(name, fan_in, fan_out)
    return MtiaModel(config.name, tuple(ops), categories)
