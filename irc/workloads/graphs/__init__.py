"""Real models built with `onnx.helper` and random weights (no downloads), each
parametrised so tests can build scaled-down configurations:

* `build_bert_layer(BertConfig)`: a BERT-base encoder layer;
* `build_vit_block(ViTConfig)`: a ViT-base block;
* `build_resnet_stage(ResNetStageConfig)`: a ResNet-50 bottleneck stage;
* `build_gpt2_block(GPT2Config)`: a GPT-2-style decoder block with embeddings;
* `build_llama_layer(LlamaConfig)`: a Llama2-13B decoder layer decoding one token (f16).
* `build_opt_decoder(OPTConfig)`: an OPT-1.3B-style pre-LN decoder with embeddings.

Whole models (``benchmarks/models_table.py``): `build_bert_layer` with
``BertConfig(layers=...)``, `build_vit(ViTConfig)`, `build_resnet50(ResNet50Config)`,
`build_gpt2_block` with ``GPT2Config(layers=..., lm_head=True)``; ``dtype="float16"``
builds them in T10's element type.

``python -m irc.workloads.graphs OUT_DIR`` writes the full-size models as .onnx files.
"""

from .bert import BertConfig, build_bert_layer
from .gpt2 import GPT2Config, build_gpt2_block
from .llama import GEMMA2_27B, LLAMA2_13B, LlamaConfig, build_llama_layer
from .opt import OPTConfig, build_opt_decoder
from .resnet import ResNet50Config, ResNetStageConfig, build_resnet50, build_resnet_stage
from .vit import ViTConfig, build_vit, build_vit_block

MODELS = {
    "bert_layer": (build_bert_layer, BertConfig),
    "vit_block": (build_vit_block, ViTConfig),
    "resnet50_stage": (build_resnet_stage, ResNetStageConfig),
    "gpt2_block": (build_gpt2_block, GPT2Config),
    "llama2_13b_layer": (build_llama_layer, LlamaConfig),
    "opt_decoder": (build_opt_decoder, OPTConfig),
}

__all__ = [
    "MODELS",
    "BertConfig",
    "GPT2Config",
    "OPTConfig",
    "ResNet50Config",
    "GEMMA2_27B",
    "LLAMA2_13B",
    "LlamaConfig",
    "ResNetStageConfig",
    "ViTConfig",
    "build_bert_layer",
    "build_gpt2_block",
    "build_opt_decoder",
    "build_resnet50",
    "build_llama_layer",
    "build_resnet_stage",
    "build_vit",
    "build_vit_block",
]
