"""ELK's workloads from published configurations (seeds/004 Table 2), planned with ELK."""

import pytest

from irc.planner.elk import elk_plan, preload_ops, weight_bytes
from irc.planner.op_table import FrontierCache, signature
from irc.workloads.llm import CONFIGS, decode_layer_ops, workload


def test_layer_shapes_follow_the_configs():
    ops = {op.name: op for op in decode_layer_ops(CONFIGS["llama2-70b"], batch=32, seq=2048, chips=4)}
    # GQA: 64 query heads over 8 KV heads, 2 KV heads per chip; QKV projection of (16 + 4) * 128
    assert dict(ops["qkv"].spec.axes) == {"b": 32, "h": 8192, "n": (16 + 2 * 2) * 128}
    assert dict(ops["scores"].spec.axes) == {"b": 32, "g": 2, "r": 8, "s": 2048, "d": 128}
    # the KV cache of one layer on one chip: batch x kv heads x seq x head size, f16
    assert weight_bytes(ops["scores"]) == 32 * 2 * 2048 * 128 * 2
    assert set(ops) >= {"gate", "up", "act", "down"}
    opt = {op.name for op in decode_layer_ops(CONFIGS["opt-30b"], 32, 2048, 4)}
    assert {"fc1", "act", "down"} <= opt and "gate" not in opt


def test_weights_of_a_chip_are_a_quarter_of_the_model():
    model, layer_of = workload("llama2-13b", layers=1)
    per_layer = sum(weight_bytes(op) for op in model.ops if op.name.split(".")[1] not in ("scores", "context"))
    cfg = CONFIGS["llama2-13b"]
    full_layer = 2 * (cfg.hidden * 3 * cfg.hidden + cfg.hidden * cfg.hidden + 3 * cfg.hidden * cfg.ffn + 2 * cfg.hidden)
    assert per_layer == pytest.approx(full_layer / 4, rel=0.01)


def test_identical_layers_are_planned_once_and_elk_beats_basic():
    model, layer_of = workload("llama2-13b", batch=4, seq=64, chips=1, layers=3, factor=32)
    cache = FrontierCache("tiny16-hbm", "t10")
    ops = preload_ops(model, cache, layer_of)
    first_layer = {signature(op.spec, op.weights) for op in model.ops[: len(model.ops) // 3]}
    assert cache.searches == len(first_layer) < len(model.ops) // 3   # later layers reuse them
    basic = elk_plan(model, cache, "basic", ops=ops)
    dyn = elk_plan(model, cache, "dyn", ops=ops)
    full = elk_plan(model, cache, "full", ops=ops, max_displacement=1)
    ideal = elk_plan(model, cache, "ideal", ops=ops)
    assert ideal.latency_cycles <= full.latency_cycles * (1 + 1e-9) <= dyn.latency_cycles * (1 + 2e-9)
    assert dyn.latency_cycles <= basic.latency_cycles
    assert len(full.ops) == len(model.ops) and full.order[0] == 0
