"""The real-model builders (`irc.workloads.graphs`), scaled down, end to end at te level:
build with onnx.helper, import, run on the interpreter, compare with
onnx.reference.ReferenceEvaluator on the same inputs."""

from __future__ import annotations

import numpy as np
import pytest
from onnx.reference import ReferenceEvaluator

from irc.dialects.te import OpaqueOp, TensorOp
from irc.frontend import import_model
from irc.runner import run_function


def _check(model, feeds, rtol=1e-4, atol=1e-5):
    (want,) = ReferenceEvaluator(model).run(None, feeds)
    assert np.isfinite(want).all()  # NaN == NaN must not pass
    result = import_model(model)
    ops = [op for op in result.module.walk() if isinstance(op, (TensorOp, OpaqueOp))]
    # Every op of these models is a tensor expression (no vendor kernel).
    assert ops and all(isinstance(op, TensorOp) for op in ops)
    # Weights are arguments, not text: the printed IR stays small.
    assert len(str(result.module)) < 40_000
    (got,) = run_function(result.module, {**feeds, **result.weights}).values()
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    return result


def test_bert_layer(models):
    config = models.BertConfig(batch=2, seq=8, hidden=32, heads=4, intermediate=64)
    rng = np.random.default_rng(0)
    feeds = {
        "hidden_states": rng.standard_normal((2, 8, 32)).astype(np.float32),
        "attention_mask": np.array([[1] * 8, [1] * 5 + [0] * 3], dtype=np.int64),
    }
    result = _check(models.build_bert_layer(config), feeds)
    assert result.input_names == ["hidden_states", "attention_mask"]
    assert result.output_names == ["last_hidden_state"]
    assert "attention.self.query.weight" in result.weights


def test_vit_block(models):
    config = models.ViTConfig(batch=2, tokens=5, hidden=32, heads=4, mlp=64)
    feeds = {"tokens": np.random.default_rng(1).standard_normal((2, 5, 32)).astype(np.float32)}
    _check(models.build_vit_block(config), feeds)


def test_resnet_stage(models):
    config = models.ResNetStageConfig(batch=1, in_channels=16, width=8, size=8, blocks=2)
    feeds = {"input": np.random.default_rng(2).standard_normal((1, 16, 8, 8)).astype(np.float32)}
    _check(models.build_resnet_stage(config), feeds)


def test_gpt2_block(models):
    config = models.GPT2Config(batch=2, seq=6, hidden=32, heads=4, vocab=50, positions=16)
    rng = np.random.default_rng(3)
    feeds = {
        "input_ids": rng.integers(0, 50, (2, 6)).astype(np.int64),
        "attention_mask": np.array([[1] * 6, [1] * 4 + [0] * 2], dtype=np.int64),
    }
    with np.errstate(over="ignore"):  # lowest + lowest in masked positions, as in HF
        _check(models.build_gpt2_block(config), feeds)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bert_layer", "vit_block", "resnet50_stage", "gpt2_block"])
def test_full_size_configs_build(models, name):
    """The default (full-size) configurations are valid ONNX of the stated sizes."""
    build, config = models.MODELS[name]
    model = build(config())
    sizes = {t.name: tuple(t.dims) for t in model.graph.initializer}
    if name == "bert_layer":
        assert sizes["intermediate.dense.weight"] == (768, 3072)
    elif name == "vit_block":
        assert sizes["attn.qkv.weight"] == (768, 2304)
    elif name == "resnet50_stage":
        assert sizes["layer.0.2.conv.weight"] == (128, 128, 3, 3)
    else:
        assert sizes["wte"] == (50257, 768)
