"""SCALE-Sim 3's memory model (irc.cost.igo_scalesim, ``memory=scalesim``; issue 25 item
5): its DRAM reads and writes per GEMM equal what the real `scalesim` package (3.0.0)
computed for the dX and dW GEMMs of layers of IGO's workloads on both NPUs, output- and
weight-stationary, and for random small GEMMs on small buffers; the files were made by
benchmarks/scalesim_reference.py in a separate environment (it needs numpy < 2)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from irc.cost.igo import Layer, Tiling
from irc.planner.igo import evaluate
from irc.cost.igo_scalesim import ReadBuffer, buffer_words, gemm_traffic
from irc.devices import load_device

REFERENCES = json.loads((Path(__file__).parents[1] / "data" / "scalesim" / "npu_gemms.json").read_text())
NPU_GEMMS = [g for g in REFERENCES["gemms"] if g["npu"]]
RANDOM_GEMMS = [g for g in REFERENCES["gemms"] if not g["npu"]]


def _traffic(entry: dict):
    g = entry["gemm"]
    found = gemm_traffic(g["M"], g["K"], g["N"], entry["rows"], entry["cols"], entry["dataflow"], entry["kb"] * 1024)
    return found.ifmap_reads, found.filter_reads, found.ofmap_writes


def _want(entry: dict):
    return entry["ifmap_reads"], entry["filter_reads"], entry["ofmap_writes"]


def test_references_cover_both_npus_gradients_and_dataflows():
    assert REFERENCES["scalesim"] == "3.0.0" and len(NPU_GEMMS) >= 12
    assert {(g["npu"], g["gradient"], g["dataflow"]) for g in NPU_GEMMS} == {
        (npu, gradient, dataflow) for npu in ("npu-edge", "npu-server") for gradient in ("dX", "dW")
        for dataflow in ("os", "ws")}
    # SCALE-Sim's buffers are irc's rule for each NPU: a third of the SPM in KB of f16 elements
    for entry in NPU_GEMMS:
        device = load_device(entry["npu"])
        assert (entry["rows"], entry["cols"], entry["kb"] * 1024) == (device.pe_rows, device.pe_cols,
                                                                      buffer_words(device, 2))


@pytest.mark.parametrize("entry", NPU_GEMMS, ids=lambda e: f"{e['npu']}-{e['gradient']}-{e['dataflow']}-"
                                                          f"{e['layer']['M']}x{e['layer']['K']}x{e['layer']['N']}")
def test_npu_gemms_equal_scalesim(entry):
    assert _traffic(entry) == _want(entry)


def test_random_gemms_equal_scalesim():
    """Small arrays and buffers: windows roll over inside folds, drains close lines early."""
    assert len(RANDOM_GEMMS) >= 20
    assert [_traffic(e) for e in RANDOM_GEMMS] == [_want(e) for e in RANDOM_GEMMS]


@pytest.mark.parametrize("npu", ["npu-edge", "npu-server"])
@pytest.mark.parametrize("dataflow", ["os", "ws"])
def test_memory_scalesim_baseline_moves_scalesims_bytes(npu, dataflow):
    """``memory=scalesim``: the baseline of a layer, its tiles SCALE-Sim's (the whole
    GEMMs), moves the DRAM bytes SCALE-Sim computed for its dX and dW layers: dY read by
    both (ifmap of dX, filter of dW), W by dX, X by dW, f16."""
    device = dataclasses.replace(load_device(npu), dataflow=dataflow)
    for name in {g["layer"]["name"] for g in NPU_GEMMS if g["npu"] == npu}:
        gemms = {g["gradient"]: g for g in NPU_GEMMS
                 if g["npu"] == npu and g["dataflow"] == dataflow and g["layer"]["name"] == name}
        m, k, n = (gemms["dX"]["layer"][d] for d in "MKN")
        cost = evaluate(Layer(m, k, n), device, "baseline", tiling=Tiling(m, k, n), memory="scalesim")
        dx, dw = gemms["dX"], gemms["dW"]
        assert dict(cost.read) == {"dY": 2 * (dx["ifmap_reads"] + dw["filter_reads"]), "W": 2 * dx["filter_reads"],
                                   "X": 2 * dw["ifmap_reads"]}
        assert dict(cost.written) == {"dX": 2 * dx["ofmap_writes"], "dW": 2 * dw["ofmap_writes"]}
        assert cost.compute_cycles == dx["compute_cycles"] + dw["compute_cycles"] + 2  # SCALE-Sim: closed form - 1


def test_read_buffer_windows():
    """1000 words: sets of 10, a window of 50 sets = 500 new elements, then a new window."""
    buffer = ReadBuffer(1000)
    assert buffer.visit("a", 300) == 300 and buffer.visit("a", 300) == 0   # within the window: hits
    assert buffer.visit("b", 300) == 300   # the window fills at b's 200th element; b's last 100 open the next
    assert buffer.visit("a", 300) == 300   # a was in the old window: read again (400 in this one)
    # b's first 100 fill this window; the next opens at its 101st: b's 100th-299th are new there
    assert buffer.visit("b", 300) == 300 and buffer.seen == {"b": (100, 300)}
    assert buffer.reads == 1200
