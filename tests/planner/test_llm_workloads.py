"""ELK's workloads from published configurations (seeds/004 Table 2; issue 24, item 3):
the layers as the released architectures have them, planned with ELK."""

import pytest

from irc.dse import builtin_model
from irc.planner.elk import elk_plan, preload_ops, weight_bytes
from irc.planner.model import ModelSpecError
from irc.planner.op_table import FrontierCache, signature
from irc.workloads.llm import CONFIGS, base_name, chip_share, decoder_te, llm_config

# Hugging Face configs of the released checkpoints: hidden, heads, KV heads, FFN, vocabulary, layers
PUBLISHED = {
    "llama2-13b": (5120, 40, 40, 13824, 32000, 40),
    "llama2-70b": (8192, 64, 8, 28672, 32000, 80),
    "gemma2-27b": (4608, 32, 16, 36864, 256000, 46),
    "opt-30b": (7168, 56, 56, 28672, 50272, 48),
}


def _ops(name, chips=4, batch=32, seq=2048):
    model, _, _ = builtin_model(name, batch, seq, chips, layers=1)
    return {base_name(op.name): op for op in model.ops}


def test_configs_are_the_published_ones():
    for name, (hidden, heads, kv, ffn, vocab, layers) in PUBLISHED.items():
        c = CONFIGS[name]
        assert (c.hidden, c.heads, c.kv_heads, c.ffn, c.vocab, c.layers) == (hidden, heads, kv, ffn, vocab, layers)


def test_llama2_70b_layer_has_separate_qkv_rotary_rmsnorm_swiglu_and_gqa():
    ops = _ops("llama2-70b")
    # GQA: 64 query heads over 8 KV heads; a chip holds 2 KV heads of 8 query heads each
    assert dict(ops["attn_q_proj"].spec.axes) == {"b": 32, "h": 8192, "g": 2, "r": 8, "d": 128}
    assert dict(ops["attn_k_proj"].spec.axes) == {"b": 32, "h": 8192, "g": 2, "d": 128}
    assert weight_bytes(ops["attn_k_proj"]) == weight_bytes(ops["attn_v_proj"]) == 8192 * 2 * 128 * 2
    assert dict(ops["attn_scores"].spec.axes) == {"b": 32, "g": 2, "r": 8, "s": 2048, "d": 128}
    # the KV cache of one layer on one chip: batch x kv heads x seq x head size, f16
    assert weight_bytes(ops["attn_scores"]) == 32 * 2 * 2048 * 128 * 2
    assert {"attn_q_rope", "attn_k_rope", "norm1_sq", "norm2_sq", "mlp_gate", "mlp_up", "mlp_act",
            "mlp_down", "lm_head"} <= set(ops)
    assert dict(ops["mlp_gate"].spec.axes)["f"] == 28672 // 4
    assert dict(ops["lm_head"].spec.axes)["v"] == 32000 // 4
    assert not any(name.startswith("attn_qkv") for name in ops)
    assert "sigmoid" in decoder_te(CONFIGS["llama2-70b"], 1, 8, 4, 1)


def test_opt_has_layernorm_relu_ffn_biases_and_no_rotary():
    ops = _ops("opt-30b")
    assert {"norm1_mean", "norm1_center", "norm1_var", "attn_q_bias", "mlp_fc1", "mlp_act", "mlp_fc2"} <= set(ops)
    assert not {"attn_q_rope", "mlp_gate"} & set(ops)
    assert dict(ops["attn_q_proj"].spec.axes) == {"b": 32, "h": 7168, "g": 14, "r": 1, "d": 128}
    gemma = decoder_te(CONFIGS["gemma2-27b"], 1, 8, 4, 1)
    assert "tanh" in gemma and "post_attn_norm" in gemma and "post_mlp_norm" in gemma


def test_weights_of_a_chip_are_a_quarter_of_the_layer():
    model, _, _ = builtin_model("llama2-13b", layers=1)
    cfg = CONFIGS["llama2-13b"]
    per_layer = sum(weight_bytes(op) for op in model.ops if base_name(op.name) not in (
        "attn_scores", "attn_context", "lm_head", "final_norm"))
    full_layer = 2 * (4 * cfg.hidden * cfg.hidden + 3 * cfg.hidden * cfg.ffn)
    assert per_layer == pytest.approx(full_layer / 4, rel=0.01)


def test_a_chip_count_the_heads_do_not_split_over_is_an_error():
    assert chip_share(CONFIGS["llama2-70b"], 16).g == 1   # 8 KV heads over 16 chips: each replicated
    with pytest.raises(ModelSpecError, match="chips do not divide"):
        chip_share(CONFIGS["llama2-13b"], 3)


def test_identical_layers_are_planned_once_and_elk_beats_basic():
    model, layer_of, _ = builtin_model("llama2-13b", batch=4, seq=64, chips=1, layers=3, factor=32)
    assert llm_config("llama2-13b", 32).hidden == 160
    cache = FrontierCache("tiny16-hbm", "t10")
    ops = preload_ops(model, cache, layer_of)
    first_layer = {signature(op.spec, op.weights) for op, layer in zip(model.ops, layer_of) if layer == 0}
    assert set(layer_of) == {0, 1, 2, None}   # the final norm and the LM head belong to no layer
    assert cache.searches <= len(first_layer) + 3 < len(model.ops) // 2   # later layers reuse the first's
    basic = elk_plan(model, cache, "basic", ops=ops)
    dyn = elk_plan(model, cache, "dyn", ops=ops)
    full = elk_plan(model, cache, "full", ops=ops, max_displacement=1)
    ideal = elk_plan(model, cache, "ideal", ops=ops)
    assert ideal.latency_cycles <= full.latency_cycles * (1 + 1e-9) <= dyn.latency_cycles * (1 + 2e-9)
    assert dyn.latency_cycles <= basic.latency_cycles
    assert len(full.ops) == len(model.ops) and full.order[0] == 0
