"""Cost formulas against values computed by hand from IPU_COST_FACTS.md and seeds/003."""

import math

import numpy as np
import pytest

from irc.cost import CostModel, CostModelError, OpWork, SubTask, get_cost_model, known_cost_models
from irc.cost import t10
from irc.devices import load_device

IPU = load_device("ipu-mk2")


def test_registry():
    assert {"seed003", "t10"} <= set(known_cost_models())  # and any plug-in's
    for name in known_cost_models():
        model = get_cost_model(name)
        assert isinstance(model, CostModel)
        assert model.name == name
    with pytest.raises(CostModelError) as error:
        get_cost_model("roofline9")
    assert "seed003" in str(error.value) and "t10" in str(error.value)


def test_matmul_formula_by_hand():
    # m=334 (> 16, stays m after orientation), k=320, n=16, fp16:
    # kb = ceil(320/16) = 20, ceil(n/16) = 1, ceil(334/6) = 56
    # 12*2*56*20*1 + 514*20*1 + 113*1 + 173 = 26880 + 10280 + 286 = 37446
    assert t10.matmul_step_cycles(1, 334, 320, 16, 2) == 37446
    # orientation: (m, n) = (16, 334) is swapped to the same cost
    assert t10.matmul_step_cycles(1, 16, 320, 334, 2) == 37446
    # both <= 16: m is the smaller. m=4, n=16, k=32: kb=2, nb=1, ceil(4/6)=1
    # 24*1*2*1 + 514*2 + 113 + 173 = 48 + 1028 + 286 = 1362
    assert t10.matmul_step_cycles(1, 16, 32, 4, 2) == 1362
    assert t10.matmul_step_cycles(3, 16, 32, 4, 2) == 3 * 1362


def test_elementwise_unary_formulas():
    assert t10.elementwise_step_cycles(100) == 0.75 * 100 + 290
    assert t10.elementwise_step_cycles(16000) == 8517          # min(8517, 12290)
    assert t10.elementwise_step_cycles(20000) == 0.5 * 20000 + 300
    assert t10.unary_step_cycles(1000) == 700


def test_reduce_ladder_and_formula():
    aligned = t10.align_reduce_outputs(np.array([1, 2, 3, 5, 9, 13, 17, 24, 25, 49]))
    assert aligned.tolist() == [1, 2, 4, 8, 12, 16, 24, 24, 48, 96]
    # O=3 -> 4, R=10: X=40 -> min(295.25, 235) = 235
    assert t10.reduce_step_cycles(3, 10) == 235
    # O=3 -> 4, R=100: X=400 -> min(295.25, 775) = 295.25
    assert t10.reduce_step_cycles(3, 100) == 295.25
    # O=25 -> 48, R=20: X=960 -> 0.25*960 + 175 = 415
    assert t10.reduce_step_cycles(25, 20) == 415


def test_gather_and_conv_formulas():
    # 300 + ceil(100/10/2)*10 + 10 = 360
    assert t10.gather_step_cycles(10, 100) == 360
    # 0.0495 * 1 * 8 * 8 * 64 * 9 + 2030
    assert t10.conv_step_cycles(1, 3, 5, 64, 9) == pytest.approx(0.0495 * 64 * 576 + 2030)


def test_pool_fit_is_close_to_published_samples():
    ch, hw, win, cycles = t10._POOL_SAMPLES.T
    predicted = t10.pool_step_cycles(ch, hw, win)
    assert np.all(np.abs(predicted / cycles - 1) < 0.2)


def _work(kind="matmul", **overrides):
    base = dict(
        subtask=SubTask(kind, 2, 64 * 64, {"batch": 1, "m": 64, "k": 64, "n": 64}),
        steps=1, shifted_bytes=0, shift_events=0, partial_copies=1,
        out_step_elems=64 * 64, out_resident_elems=64 * 64, cores=1472,
    )
    base.update(overrides)
    return OpWork(**base)


def test_t10_shift_sync_and_shuffle():
    model = get_cost_model("t10")
    assert model.shift_cycles(IPU, 1000) == pytest.approx(280)
    assert model.sync_cycles(IPU) == 236
    # R = 1: sh = shift(e_0) + 6 syncs
    one = model.op_time(IPU, _work())
    assert one.reduction == pytest.approx(0.28 * 2 * 4096 + 6 * 118)
    # R = 2: + 2 syncs + shift(O_s/2) + elementwise(O_s/2)
    two = model.op_time(IPU, _work(partial_copies=2))
    extra = 2 * 118 + 0.28 * 2 * 2048 + min(8517, 0.75 * 2048 + 290)
    assert two.reduction == pytest.approx(one.reduction + extra)
    # R = 4: + 4 syncs + shift(O_s) + reduce(O_r = 1024 -> 1056, 4 rows)
    four = model.op_time(IPU, _work(partial_copies=4))
    extra = 4 * 118 + 0.28 * 2 * 4096 + (0.25 * 1056 * 4 + 175)
    assert four.reduction == pytest.approx(one.reduction + extra)
    # elementwise ops pay a single barrier
    ew = model.op_time(IPU, _work("elementwise", subtask=SubTask("elementwise", 2, 4096, {})))
    assert ew.reduction == 118
    # shift events and bytes
    shifted = model.op_time(IPU, _work(shifted_bytes=1000, shift_events=3, steps=4))
    assert shifted.shift == pytest.approx(280)
    assert shifted.sync == 3 * 236
    assert shifted.compute == 4 * t10.matmul_step_cycles(1, 64, 64, 64, 2)


def test_partial_sums_move_in_the_accumulators_width():
    """An f16 ``+=`` output's partial sums are f32 (IPU_COST_FACTS s5's gather ``g`` and
    seed 003's reduce-scatter move 4 bytes per element); the reduced, rounded output
    (``shift(e_0)``) moves in its own 2."""
    model = get_cost_model("t10")
    for copies, gathered in ((2, 2048), (4, 4096)):
        f16 = model.op_time(IPU, _work(partial_copies=copies))
        f32 = model.op_time(IPU, _work(partial_copies=copies, partial_bytes=4))
        assert f32.reduction - f16.reduction == pytest.approx(0.28 * 2 * gathered)
    one = model.op_time(IPU, _work(partial_bytes=4))
    assert one.reduction == pytest.approx(0.28 * 2 * 4096 + 6 * 118)  # no copies: nothing gathered
    seed = get_cost_model("seed003")
    task = SubTask("matmul", 2, 16, {"batch": 1, "m": 1, "k": 16, "n": 1})
    wide = seed.op_time(IPU, _work(subtask=task, partial_copies=4, out_resident_elems=1000, partial_bytes=4))
    assert wide.reduction == pytest.approx(0.75 * 1000 * 4 * 1.325 / 5.5)


def test_t10_multi_chip_overhead():
    model = get_cost_model("t10")
    big = load_device("ipu-mk2")
    from dataclasses import replace

    pod = replace(big, cores=5888)
    single = model.op_time(pod, _work(shifted_bytes=1000, cores=1472))
    multi = model.op_time(pod, _work(shifted_bytes=1000, cores=2000))
    assert multi.shift == pytest.approx(1.25 * single.shift)
    assert multi.compute == single.compute


def test_seed003_model():
    model = get_cost_model("seed003")
    # m=20 -> 32, k=33 -> 48, n=16: 32*48*16 MACs at 64 MACs/cycle = 384 cycles
    task = SubTask("matmul", 2, 20 * 33 * 16, {"batch": 1, "m": 20, "k": 33, "n": 16})
    assert model.compute_cycles(IPU, task) == 384
    # 5.5 GB/s at 1.325 GHz
    assert model.shift_cycles(IPU, 5.5e9) == pytest.approx(1.325e9)
    assert model.sync_cycles(IPU) == 0
    breakdown = model.op_time(IPU, _work(subtask=task, steps=2, shifted_bytes=11000, partial_copies=4,
                                         out_resident_elems=1000))
    assert breakdown.compute == 768
    assert breakdown.shift == pytest.approx(11000 * 1.325 / 5.5)
    assert breakdown.reduction == pytest.approx(0.75 * 1000 * 2 * 1.325 / 5.5)
    with pytest.raises(CostModelError, match="elementwise"):
        model.compute_cycles(IPU, SubTask("elementwise", 2, 10, {}))


def test_vectorised_cost_matches_scalar():
    m = np.array([4, 16, 100, 334])
    vector = t10.matmul_step_cycles(1, m, 320, 16, 2)
    assert vector.tolist() == [float(t10.matmul_step_cycles(1, int(x), 320, 16, 2)) for x in m]
    assert math.isfinite(float(vector.sum()))
