"""benchmarks/igo.py prices what igo-fuse fuses: a workload's layers come out of
te-autodiff + igo-fuse, and the configurations' ratios are consistent (partitioning
never worse than the rearranged order it partitions, on one core)."""

import importlib.util
from pathlib import Path

from benchmarks.igo_workloads import bert_tiny, transformer_encoder
from irc.cost.igo import Layer
from irc.devices import load_device

_PATH = Path(__file__).parents[2] / "benchmarks" / "igo.py"
_SPEC = importlib.util.spec_from_file_location("benchmark_igo", _PATH)
igo = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(igo)


def test_layers_are_the_fused_pairs():
    layers = igo.layers_of(bert_tiny(4, tokens=128, layers=1, dtype="f16"))
    # attention output (512 tokens, 128 -> 128), Q·Kᵀ (M = batch x heads x queries = 1024,
    # K = head width 64, N = keys 128), P·V (K = keys, N = head width), the FFN's two
    # linears; Q, K and V read the input, which needs no gradient (no dX: not fused)
    assert sorted((l.M, l.K, l.N) for l in layers) == [
        (512, 128, 128), (512, 128, 512), (512, 512, 128), (1024, 64, 128), (1024, 128, 64)
    ]
    assert all(l.element_bytes == 2 for l in layers)


def test_price_is_consistent():
    layers = igo.layers_of(transformer_encoder(2, 16, 64, 2, 128, dtype="f16"))
    result = igo.price(layers, load_device("npu-edge"), "lru")
    r = igo.ratios(result)
    assert r["baseline"] == (1.0, 1.0)
    assert r["partition"][0] <= r["rearrange"][0] + 1e-12
    assert 0 <= result["paper_differs"] <= result["layers"] == len(layers)
    assert igo.price([Layer(8, 8, 8)], load_device("npu-server").with_cores(2), "belady")["layers"] == 1
