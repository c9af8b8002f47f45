"""One relayout per tensor and layout (issue 24, item 1): Q, K and V reading one norm's
output in the same layout share one relayouted copy, in the plan's price and in the
device program, which runs at the planned cycles with te's numbers."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.func import FuncOp

import irc.planner.preload_packing as packing
from irc.compile import planned_model_cycles
from irc.cost.registry import get_cost_model
from irc.devices import load_device
from irc.dialects.device import RelayoutOp
from irc.dialects.target import TARGET_ATTR
from irc.lowering.model_from_ir import argument_loads, function_model
from irc.lowering.te_to_rtensor import PRELOADED_ATTR
from irc.passes.pipelines import InferencePipeline
from irc.planner.elk import plan_offchip
from irc.planner.op_table import FrontierCache
from irc.planner.relayout_sharing import SharedCopy, fitting_copies
from irc.runner import find_function, parse_module, random_inputs, run, run_function
from irc.target import target_attr

T, W, H = "tensor<8x32xf32>", "tensor<32x48xf32>", "tensor<8x48xf32>"
QKV = f"""func.func @main(%x: {T} {{irc.name = "x"}}, %wq: {W} {{irc.name = "wq", irc.weight}},
    %wk: {W} {{irc.name = "wk", irc.weight}}, %wv: {W} {{irc.name = "wv", irc.weight}}) -> {H} {{
  %n = te.op "N[m] += X[m,n] * X[m,n]" (%x) : ({T}) -> tensor<8xf32>
  %y = te.op "Y[m,n] = X[m,n] * N[m]" (%x, %n) : ({T}, tensor<8xf32>) -> {T}
  %q = te.op "H[m,n] += X[m,k] * W[k,n]" (%y, %wq) : ({T}, {W}) -> {H}
  %k = te.op "H[m,n] += X[m,k] * W[k,n]" (%y, %wk) : ({T}, {W}) -> {H}
  %v = te.op "H[m,n] += X[m,k] * W[k,n]" (%y, %wv) : ({T}, {W}) -> {H}
  %s = te.op "Y[m,n] = A[m,n] + B[m,n]" (%q, %k) : ({H}, {H}) -> {H}
  %o = te.op "Y[m,n] = A[m,n] + B[m,n]" (%s, %v) : ({H}, {H}) -> {H}
  func.return %o : {H}
}}
"""


def _compiled(text: str, sram: int, cores: int):
    """``text`` through the inference pipeline on tiny16-hbm cut to ``cores`` cores of
    ``sram`` bytes (its weights past SRAM: planned with ELK)."""
    chip = dataclasses.replace(load_device("tiny16-hbm"), name=f"tiny{cores}-hbm-{sram}", sram_bytes=sram,
                               cores=cores, cores_per_chip=cores)
    module = parse_module(text, "qkv.mlir")
    module.attributes[TARGET_ATTR] = target_attr(chip, "t10")
    InferencePipeline().apply(Context(), module)
    return module


def test_q_k_and_v_share_one_relayout_and_run_as_planned():
    module = _compiled(QKV, 2048, 16)
    (function,) = [op for op in module.walk() if isinstance(op, FuncOp)]
    assert PRELOADED_ATTR in function.attributes and "irc.remark" not in function.attributes
    # the norm's output moves once into the projections' layout (K and V read Q's copy)
    moved = [op for op in module.walk() if isinstance(op, RelayoutOp) and op.setup is None
             and (op.source.name_hint, op.target.name_hint) == ("Y", "X")]
    assert len(moved) == 1 and moved[0].bytes.value.data > 0
    reference = parse_module(QKV, "qkv.mlir")
    inputs = random_inputs(find_function(reference, None), 0, weights=True)
    expected = run_function(reference, inputs)
    results, report = run(module, inputs)
    assert report.model_cycles == pytest.approx(planned_model_cycles(module), rel=1e-9)
    assert report.peak_sram_bytes <= 2048
    for name, value in expected.items():
        np.testing.assert_allclose(results[name], value, rtol=1e-5, atol=1e-5)


def test_a_copy_is_shared_only_where_the_ops_between_have_room():
    """The copy lives from its holder to its last sharer: the ops between that do not read
    it hold it beside their own bytes."""
    first = SharedCopy(holder=0, sharers=(1,), first=1, last=4, nbytes=100, readers=frozenset({1, 4}))
    second = SharedCopy(holder=2, sharers=(3,), first=2, last=3, nbytes=50, readers=frozenset({2, 3}))
    assert fitting_copies([first], [0, 0, 900, 900, 0], 1000) == [first]
    assert fitting_copies([first], [0, 0, 900, 901, 0], 1000) == []
    assert fitting_copies([first], [0, 2000, 0, 0, 2000], 1000) == [first]   # its readers: no extra
    # adjacent consumers: nothing between, always shared; copies kept so far count
    assert fitting_copies([second], [5000] * 5, 1000) == [second]
    third = SharedCopy(holder=5, sharers=(6,), first=1, last=4, nbytes=60, readers=frozenset({1, 4}))
    assert fitting_copies([first, third], [0, 0, 850, 850, 0], 1000) == [first]


def test_the_packing_check_holds_a_shared_copy_from_its_holder_to_its_last_sharer(monkeypatch):
    """The buffers the planner checks for packing (`irc.planner.preload_packing`) are the
    program's: Q's relayouted input stays to V's end; K and V hold none of their own."""
    checked = []
    program_buffers = packing.program_buffers
    monkeypatch.setattr(packing, "program_buffers", lambda *a, **k: checked.append(program_buffers(*a, **k))
                        or checked[-1])
    chip = dataclasses.replace(load_device("tiny16-hbm"), name="tiny16-hbm-2048", sram_bytes=2048)
    found = function_model(next(op for op in parse_module(QKV, "qkv.mlir").walk() if isinstance(op, FuncOp)))
    loads = argument_loads(found)
    decision = plan_offchip(found.model, FrontierCache(chip, get_cost_model("t10")), "full", "paper",
                            loads.hbm_bytes, loads.own)
    (copy,) = decision.plan.shared
    assert (copy.first, copy.last) == (2, 4)
    intervals, op_at = checked[-1]
    copies = [i for i in intervals if i.op[0] == "exec" and i.op[1] in (2, 3, 4) and i.op[2] == "t1"]
    assert [i.op[1] for i in copies] == [2]   # the holder's only
    assert op_at[copies[0].end - 1] == 4      # freed at the last sharer's end
