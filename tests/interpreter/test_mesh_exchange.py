"""Shifts and relayouts on a 2D mesh (ELK s5, s6.4): routed link by link, priced at the
busiest link, waiting for the link they share with preloads; the planner prices rotations the same way."""

import numpy as np
import pytest
from xdsl.context import Context

from irc.interpreter.chip import Chip
from irc.interpreter.offchip import breakdown

BW = 5.5e9 / 1.325e9        # tiny16-hbm-mesh: bytes per cycle of a link


def _buffers(chip, tile=16):
    shifted = chip.alloc("A", (1, tile), np.float32, 16, 1024, "a:")
    receive = chip.alloc("R", (1, tile), np.float32, 16, 2048, "r:")
    chip.fill(shifted, 1.0, "f:")
    return shifted, receive


def test_a_strided_shift_on_the_mesh_by_hand():
    # 4x4 mesh, row-major: core c receives 64 B from core c + 2. Cores 0, 1 of a row get
    # theirs from columns 2, 3 (two hops west, both over link 2 -> 1); cores 2, 3 from the
    # next row's columns 0, 1 (east along that row, both over its link 1 -> 2, then one
    # north); cores 14, 15 from cores 0, 1 (east along row 0, then 3 south: 5 hops). The
    # busiest links carry 2 x 64 B: 0.28 cycles per byte x 128 B, plus 5 hops of 1 cycle.
    chip = Chip("tiny16-hbm-mesh")
    shifted, receive = _buffers(chip)
    chip.shift(shifted, receive, (np.arange(16) + 2) % 16, "s:")
    assert chip.cycles["shift"] == pytest.approx(0.28 * 128 + 5)
    # the same shift on the all-to-all exchange: each core's port carries its own 64 B
    flat = Chip("tiny16-hbm")
    shifted, receive = _buffers(flat)
    flat.shift(shifted, receive, (np.arange(16) + 2) % 16, "s:")
    assert flat.cycles["shift"] == pytest.approx(0.28 * 64)


def test_an_operator_on_the_mesh_waits_for_the_busiest_link_by_hand():
    # A preload of 160 B to every core, half from each controller: each controller's port
    # (8 x 160 B at 16 GB/s, 106 cycles) is slower than its edge ports (2 x 80 B each at
    # 5.5 GB/s), plus 5 hops of latency. Every inward mesh link carries one core's half,
    # 80 B, the most any mesh link does: the preload takes rho = 80 B / its time of each.
    # Cores 4 and 5 then swap 64 B (one hop each way, 0.28 x 64 + 1 cycles, all link time)
    # and the operator ends: its window grows until the link has room for the swap and the
    # preload's share of it, X / (1 - rho / bw); the preload keeps its pace.
    chip = Chip("tiny16-hbm-mesh")
    preloaded = chip.alloc("P", (1, 40), np.float32, 16, 0, "p:")
    shifted, receive = _buffers(chip)
    chip.preload(preloaded, np.ones((16, 40), np.float32), np.stack([np.arange(16), np.zeros(16, int)], 1), "p:")
    load = 8 * 160 / 16e9 * 1.325e9 + 5
    assert chip.hbm_events[0].cycles == pytest.approx(load)
    share = 80 / load / BW
    swap = np.array([5 if c == 4 else 4 if c == 5 else c for c in range(16)])
    chip.shift(shifted, receive, swap, "s:")
    alone = 0.28 * 64 + 1
    assert chip.cycles["shift"] == pytest.approx(alone)
    chip.close_operator("k:")
    assert chip.cycles["contention"] == pytest.approx(alone * share / (1 - share))
    waited_from = chip.now
    chip.wait(preloaded, "w:")
    assert chip.cycles["preload_wait"] == pytest.approx(load - waited_from)
    assert breakdown(chip.report())["interconnect"] == pytest.approx(chip.cycles["contention"])


def test_a_relayout_during_a_preload_is_contended_too():
    # all-to-all: a relayout whose every core receives a 256 B piece from its neighbour
    # (0.28 x 256 = 71.68 cycles) while a preload of 1600 B per core streams into every
    # core's ingress port at 4/11 of it (2 GB/s of 5.5, 1060 cycles): the operator's
    # window grows by 4/7 of the relayout
    chip = Chip("tiny16-hbm")
    preloaded = chip.alloc("P", (1, 400), np.float32, 16, 0, "p:")
    source = chip.alloc("S", (1, 64), np.float32, 16, 2048, "s:")
    target = chip.alloc("T", (1, 64), np.float32, 16, 4096, "t:")
    chip.fill(source, 1.0, "f:")
    chip.preload(preloaded, np.ones((16, 400), np.float32), np.stack([np.arange(16), np.zeros(16, int)], 1), "p:")
    pieces = np.zeros((16, 1, 5), dtype=np.int64)
    pieces[:, 0, 0] = (np.arange(16) + 1) % 16   # the whole tile of the next core, at offsets 0
    origins = np.stack([np.arange(16), np.zeros(16, int)], 1)
    chip.relayout_pieces(source, target, pieces, (1, 64), origins, (16, 64), 256, 0, "r:")
    assert chip.cycles["relayout"] == pytest.approx(0.28 * 256)
    chip.close_operator("k:")
    assert chip.cycles["contention"] == pytest.approx(0.28 * 256 * 4 / 7)


def test_the_planner_prices_rotations_on_the_mesh_as_they_run():
    """A matmul whose A rotates at two paces (a ring of 4 with digits of weight 2 and 1)
    and B in a ring of 2: rotation-align's planned kernel time equals the interpreted
    one on the mesh, where the coarse shift of A loads two routes on one link."""
    from pathlib import Path

    from irc.dialects.shift import KernelOp
    from irc.lowering.rtensor_to_shift import RTensorToShift
    from irc.lowering.shift_to_device import ShiftToDevice
    from irc.passes.device_alloc import DeviceAlloc
    from irc.passes.rotation_align import RotationAlign
    from irc.runner import parse_module, run

    text = (Path(__file__).parents[1] / "filecheck" / "passes" / "rtensor-to-shift" / "lower.mlir").read_text()
    text = "\n".join(line for line in text.splitlines() if not line.startswith("//"))
    rng = np.random.default_rng(0)
    inputs = {"arg0": rng.standard_normal((8, 12)).astype(np.float32),
              "arg1": rng.standard_normal((12, 16)).astype(np.float32)}
    shift = {}
    for device in ("tiny16-hbm", "tiny16-hbm-mesh"):
        module = parse_module(text.replace('"tiny16"', f'"{device}"'), "lower.mlir")
        for stage in (RTensorToShift(), RotationAlign()):
            stage.apply(Context(), module)
        planned = sum(float(k.planned_cycles.value.data) for k in module.walk() if isinstance(k, KernelOp))
        ShiftToDevice().apply(Context(), module)
        DeviceAlloc().apply(Context(), module)
        _, report = run(module, inputs)
        assert report.kernel_cycles == pytest.approx(planned, rel=1e-9)
        shift[device] = report.cycles["shift"]
    # A's coarse step (48 B, two routes on a link, 2 hops), its fine step (48 B, 1 hop)
    # twice and B's step (96 B, 1 hop) cost 0.28 x (96 + 2 x 48 + 96) + 2 + 2 + 1 cycles
    assert shift["tiny16-hbm-mesh"] == pytest.approx(0.28 * (96 + 2 * 48 + 96) + 5)
    assert shift["tiny16-hbm"] == pytest.approx(0.28 * (48 + 2 * 48 + 96))
