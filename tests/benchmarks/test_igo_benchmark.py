"""benchmarks/igo.py prices what igo-fuse fuses: a workload's layers come out of
te-autodiff + igo-fuse (a batched pair as one GEMM per batch element), its order and
partition choices are the pass's, the configurations' ratios are consistent, and the
ipu-mk2 section compares each pair's fused plan with its unfused pair."""

import importlib.util
from pathlib import Path

from benchmarks.igo_workloads import bert_tiny, transformer_encoder
from irc.cost.igo import Layer
from irc.devices import load_device
from irc.dialects.igo import GradPairOp
from irc.passes.igo_fuse import IgoFuse
from irc.passes.te_autodiff import TeAutodiff
from irc.progress import Progress
from irc.runner import make_context, parse_module

_PATH = Path(__file__).parents[2] / "benchmarks" / "igo.py"
_SPEC = importlib.util.spec_from_file_location("benchmark_igo", _PATH)
igo = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(igo)


def test_layers_are_the_fused_pairs():
    layers = igo.layers_of(bert_tiny(4, tokens=128, layers=1, dtype="f16"))
    # attention output (512 tokens, 128 -> 128), the FFN's two linears, and per head
    # (batch 4 x 2 heads: 8 GEMMs, each with its own K resp. V) Q·Kᵀ (M = 128 queries,
    # K = head width 64, N = 128 keys) and P·V (K = keys, N = head width); Q, K and V
    # read the input, which needs no gradient (no dX: not fused)
    assert sorted((g.layer.M, g.layer.K, g.layer.N, g.count) for g in layers) == [
        (128, 64, 128, 8), (128, 128, 64, 8), (512, 128, 128, 1), (512, 128, 512, 1), (512, 512, 128, 1)
    ]
    assert all(g.layer.element_bytes == 2 for g in layers)


def test_price_is_consistent_and_chooses_as_igo_fuse_does():
    text = transformer_encoder(2, 16, 64, 2, 128, dtype="f16")
    layers = igo.layers_of(text)
    device = load_device("npu-edge")
    result = igo.price(layers, device, "lru")
    r = igo.ratios(result)
    assert r["baseline"] == (1.0, 1.0)
    assert r["partition"][0] <= r["rearrange"][0] + 1e-12
    assert 0 <= result["paper_differs"] <= result["layers"] == len(layers)
    assert result["dy_read"] >= result["dy_size"] > 0
    assert igo.price([igo.Gemms(Layer(8, 8, 8))], load_device("npu-server").with_cores(2), "belady")["layers"] == 1
    # the benchmark's +rearrange and +partition are igo-fuse's choices, layer by layer
    module = parse_module(text, "w.mlir")
    TeAutodiff().apply(make_context(), module)
    IgoFuse(order="cost", partition="cost", device="npu-edge").apply(make_context(), module)
    chosen = {}
    for op in module.walk():
        if isinstance(op, GradPairOp):
            chosen[op.attributes["irc.gemm"].data] = op.order.data
    assert set(chosen.values()) <= {"interleave", "dx-major", "dw-major"}
    for gemms in layers:
        from irc.cost.igo import FUSED_ORDERS, cheapest, evaluate

        costs = {o: evaluate(gemms.layer, device, o) for o in FUSED_ORDERS}
        key = f"M={gemms.layer.M * gemms.count} K={gemms.layer.K} N={gemms.layer.N}"
        assert chosen[key] == cheapest(costs, FUSED_ORDERS)


def test_ipu_section_compares_fused_and_unfused_pairs():
    with Progress(0, "test") as progress:
        lines, data = igo.ipu_section(["ncf"], 2, progress)
    assert lines[0].startswith("\nipu-mk2 (1472 cores, t10 cost model), batch 2")
    rows = [line for line in lines if line.startswith("ncf ")]
    assert len(rows) == 6 and rows[-1].startswith("ncf   total (fused where it wins)")
    assert data["ncf"]["kept_cycles"] <= data["ncf"]["unfused_cycles"] and data["ncf"]["undescribed"] == 0


def test_ipu_pressure_section_compares_kernels_alone():
    """Kernel-only figures under a per-core budget, measured in the same run: the fused
    kernel where it is faster, never an arrival model."""
    with Progress(0, "test") as progress:
        lines, data = igo.ipu_pressure_section(["ncf"], 2, [64, 8], progress)
    assert "KERNEL-ONLY time (no arrival model)" in lines[0]
    totals = [line for line in lines if line.startswith("ncf   total")]
    assert len(totals) == 2 and "64KB" in totals[0] and "8KB" in totals[1]
    for kb in ("64", "8"):
        figures = data["ncf"][kb]
        assert figures["kept_cycles"] <= figures["unfused_cycles"] and figures["shapes"] == 5
