"""te programs shared by the model-wide planning tests."""


def mlp(widths, tokens=32, dtype="f16", relu=True, marked=True):
    """te program: x -> (matmul with weight w_i -> relu) per layer, weights marked."""
    mark = ", irc.weight" if marked else ""
    args = [f'%x: tensor<{tokens}x{widths[0]}x{dtype}> {{irc.name = "x"}}']
    lines, value, width = [], "%x", widths[0]
    for i, out in enumerate(widths[1:]):
        args.append(f'%w{i}: tensor<{width}x{out}x{dtype}> {{irc.name = "w{i}"{mark}}}')
        act, wt, res = f"tensor<{tokens}x{width}x{dtype}>", f"tensor<{width}x{out}x{dtype}>", f"tensor<{tokens}x{out}x{dtype}>"
        lines.append(f'  %h{i} = te.op "H[m,n] += X[m,k] * W[k,n]" ({value}, %w{i}) : ({act}, {wt}) -> {res}')
        value = f"%h{i}"
        if relu:
            lines.append(f'  %r{i} = te.op "R[m,n] = relu(H[m,n])" (%h{i}) : ({res}) -> {res}')
            value = f"%r{i}"
        width = out
    result = f"tensor<{tokens}x{width}x{dtype}>"
    return (
        f"func.func @main({', '.join(args)}) -> ({result} {{irc.name = \"y\"}}) {{\n"
        + "\n".join(lines)
        + f"\n  func.return {value} : {result}\n}}\n"
    )


MLP3 = mlp([32, 32, 32, 32])


FALLBACK = """\
func.func @main(%table: tensor<16x8xf32> {irc.name = "table", irc.weight}, %ids: tensor<4xi32> {irc.name = "ids"},
                %w: tensor<8x8xf32> {irc.name = "w", irc.weight}) -> (tensor<4x8xf32> {irc.name = "y"}, tensor<4x4xf32> {irc.name = "halves"}) {
  %g = te.op "G[i,j] = E[I[i],j] * 2" (%table, %ids) : (tensor<16x8xf32>, tensor<4xi32>) -> tensor<4x8xf32>
  %h = te.op "H[m,n] += G[m,k] * W[k,n]" (%g, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %f = te.op "F[i,j] = H[i,j] - H[i,j+4] where j in 4" (%h) : (tensor<4x8xf32>) -> tensor<4x4xf32>
  func.return %h, %f : tensor<4x8xf32>, tensor<4x4xf32>
}
"""


def small_models() -> dict:
    """Builders of every model family at a scaled-down configuration (ONNX, built in code
    by `irc.workloads.graphs`): name -> a function returning the ModelProto."""
    from irc.workloads import graphs as models

    return {
        "bert": lambda: models.build_bert_layer(models.BertConfig(batch=2, seq=8, hidden=32, heads=4, intermediate=64)),
        "vit": lambda: models.build_vit_block(models.ViTConfig(batch=2, tokens=5, hidden=32, heads=4, mlp=64)),
        "resnet": lambda: models.build_resnet_stage(
            models.ResNetStageConfig(batch=1, in_channels=16, width=8, size=8, blocks=2)),
        "gpt2": lambda: models.build_gpt2_block(
            models.GPT2Config(batch=1, seq=8, hidden=32, heads=2, vocab=50, positions=16)),
        "opt": lambda: models.build_opt_decoder(
            models.OPTConfig(batch=1, seq=8, hidden=32, heads=2, ffn=64, vocab=50, positions=16)),
    }


def every_builder() -> dict:
    """`small_models` plus a tiny configuration of every other builder of
    `irc.workloads.graphs` and of its whole-model options: the Llama decoder layer (f16),
    the whole ViT (patch embedding, blocks, head) and ResNet-50 (stem, the 16 bottlenecks
    of its four stages, pooling, FC; channels scaled down), f16 BERT with two layers and
    GPT-2 with two layers and its LM head."""
    from irc.workloads import graphs as models

    return {
        **small_models(),
        "llama": lambda: models.build_llama_layer(
            models.LlamaConfig(batch=2, past=7, hidden=32, heads=4, intermediate=64)),
        "vit-whole": lambda: models.build_vit(
            models.ViTConfig(batch=1, hidden=32, heads=4, mlp=64, layers=2, image=32, patch=8, classes=10)),
        "resnet50-whole": lambda: models.build_resnet50(
            models.ResNet50Config(batch=1, image=32, classes=10, width=4)),
        "bert-2-layers-f16": lambda: models.build_bert_layer(
            models.BertConfig(batch=1, seq=8, hidden=32, heads=4, intermediate=64, layers=2, dtype="float16")),
        "gpt2-lm-head": lambda: models.build_gpt2_block(
            models.GPT2Config(batch=1, seq=8, hidden=32, heads=2, vocab=50, positions=16, layers=2, lm_head=True)),
    }


SMALL_VOCABULARY = 50
"""Vocabulary of the small GPT-2 and OPT configurations of `small_models`."""


def model_feeds(module, seed: int = 0, vocabulary: int = SMALL_VOCABULARY) -> dict:
    """Random inputs of an imported model's function that a real caller could give: token
    ids inside the vocabulary and attention masks of 0/1 (the last sequence's last three
    positions padded), so its outputs are finite (a mask of 2 or 3 scales the additive
    mask ``(1 - mask) * lowest`` past the float range and turns every output into NaN,
    against which any comparison of NaN with NaN would pass)."""
    import numpy as np

    from irc.runner import find_function, random_inputs

    feeds = random_inputs(find_function(module, None), seed)
    for name, value in feeds.items():
        if name == "input_ids":
            feeds[name] = (np.arange(value.size).reshape(value.shape) * 7 % vocabulary).astype(value.dtype)
        elif "mask" in name:
            mask = np.ones_like(value)
            mask[(-1,) * (value.ndim - 1) + (slice(-3, None),)] = 0
            feeds[name] = mask
    return feeds



class TeFunction:
    """A te function's text built op by op on ``tokens`` x ``width`` activations of
    ``dtype`` from an argument ``%x`` (the random-model builders of the lowering tests)."""

    def __init__(self, tokens: int, width: int, dtype: str) -> None:
        self.tokens, self.width, self.dtype = tokens, width, dtype
        self.args = [f'%x: {self.ty(tokens, width)} {{irc.name = "x"}}']
        self.lines: list[str] = []
        self.value = "%x"

    def ty(self, *shape: int) -> str:
        return f"tensor<{'x'.join(map(str, shape))}x{self.dtype}>"

    def argument(self, prefix: str, *shape: int, weight: bool = True) -> str:
        """A new argument ``%<prefix><n>`` of ``shape`` (marked ``irc.weight`` if ``weight``)."""
        name = f"{prefix}{len(self.args)}"
        self.args.append(f'%{name}: {self.ty(*shape)} {{irc.name = "{name}"{", irc.weight" if weight else ""}}}')
        return f"%{name}"

    def op(self, out: str, expr: str, operands: str, types: str, result: str) -> None:
        """``out = te.op expr (operands) : (types) -> result``, the function's value after it."""
        self.lines.append(f'{out} = te.op "{expr}" ({operands}) : ({types}) -> {result}')
        self.value = out

    def linear(self, out: str, prefix: str, wide: int) -> None:
        """The value times a new weight of ``width`` x ``wide``."""
        weight, act = self.argument(prefix, self.width, wide), self.ty(self.tokens, self.width)
        self.op(out, "H[m,n] += X[m,k] * W[k,n]", f"{self.value}, {weight}", f"{act}, {self.ty(self.width, wide)}",
                self.ty(self.tokens, wide))
        self.width = wide

    def bias(self, out: str, prefix: str) -> None:
        """relu of the value plus a new bias weight."""
        bias, act = self.argument(prefix, self.width), self.ty(self.tokens, self.width)
        self.op(out, "A[m,n] = relu(H[m,n] + B[n])", f"{self.value}, {bias}", f"{act}, {self.ty(self.width)}", act)

    def text(self) -> str:
        result, body = self.ty(self.tokens, self.width), "\n  ".join(self.lines)
        return (f"func.func @main({', '.join(self.args)}) -> {result} {{\n  {body}\n"
                f"  func.return {self.value} : {result}\n}}\n")
