"""Layout-matched candidates (`irc.planner.layout_match`): a chain of cheap operators keeps
one layout instead of relayouting between every two of them, and the program runs as
planned with the reference's numbers."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.func import FuncOp

from irc.devices import load_device
from irc.frontend.onnx_import import import_model
from irc.interpreter.registry import chips_of
from irc.lowering.model_from_ir import function_model
from irc.passes.pipelines import InferencePipeline
from irc.planner.baselines_model import roller_plan, vgm_plan
from irc.planner.layout_match import CHEAP_KINDS, matched_plan
from irc.planner.model import _ModelProblem, plan_model
from irc.planner.op_table import FrontierCache
from irc.planner.relayout import tensor_layout
from irc.runner import check_inputs, find_function, interpreter_for, parse_module, random_inputs, run_function
from tests.programs import small_models

# attention scores and their softmax, as an exporter writes it: every step its own op
SOFTMAX = """
func.func @main(%q: tensor<4x2x16x8xf32> {irc.name = "q"}, %k: tensor<4x2x16x8xf32> {irc.name = "k"})
    -> tensor<4x2x16x16xf32> {
  %s = te.op "S[b,h,m,n] += Q[b,h,m,d] * K[b,h,n,d]" (%q, %k) : (tensor<4x2x16x8xf32>, tensor<4x2x16x8xf32>) -> tensor<4x2x16x16xf32>
  %c = te.op "C[b,h,m,n] = A[b,h,m,n] * 0.125" (%s) : (tensor<4x2x16x16xf32>) -> tensor<4x2x16x16xf32>
  %m = te.op "M[b,h,m] max= A[b,h,m,n]" (%c) : (tensor<4x2x16x16xf32>) -> tensor<4x2x16xf32>
  %e = te.op "E[b,h,m,n] = exp(A[b,h,m,n] - B[b,h,m])" (%c, %m) : (tensor<4x2x16x16xf32>, tensor<4x2x16xf32>) -> tensor<4x2x16x16xf32>
  %z = te.op "Z[b,h,m] += A[b,h,m,n]" (%e) : (tensor<4x2x16x16xf32>) -> tensor<4x2x16xf32>
  %p = te.op "P[b,h,m,n] = A[b,h,m,n] / B[b,h,m]" (%e, %z) : (tensor<4x2x16x16xf32>, tensor<4x2x16xf32>) -> tensor<4x2x16x16xf32>
  func.return %p : tensor<4x2x16x16xf32>
}
"""


def _model():
    module = parse_module(SOFTMAX, "softmax.mlir")
    (function,) = [op for op in module.walk() if isinstance(op, FuncOp)]
    return module, function_model(function).model


def test_a_matched_plan_cuts_the_tensor_as_its_neighbour_does():
    _, model = _model()
    dev = load_device("tiny16")
    cache = FrontierCache(dev, "t10")
    producer, consumer = cache.op_table(model.ops[1]), cache.op_table(model.ops[2])   # scale -> max
    for plan in producer.active:
        blocks = tuple(count for count, _ in tensor_layout(producer.spec, plan, "t0").dims)
        found = matched_plan(consumer.spec, "t1", blocks, dev, cache.cost)
        if found is None:
            continue   # e.g. the reduced axis cut where its padding would change the max
        assert tuple(c for c, _ in tensor_layout(consumer.spec, found, "t1").dims) == blocks
        assert all(f == 1 for t in found.temporal_factors.values() for f in t)


def test_the_chain_keeps_one_layout_and_is_never_slower():
    _, model = _model()
    dev = load_device("tiny16")
    cache = FrontierCache(dev, "t10")
    plain = _ModelProblem(model, cache, None)
    matched = _ModelProblem(model, cache, None, layouts=True)
    cheap = [i for i, op in enumerate(model.ops) if op.spec.kind in CHEAP_KINDS]
    assert cheap and all(len(matched.tables[i].active) >= len(plain.tables[i].active) for i in cheap)
    assert any(len(matched.tables[i].active) > len(plain.tables[i].active) for i in cheap)
    with_layouts = plan_model(model, dev, cache=cache)
    (total, rows), trajectory = plain.greedy_paper()
    without = plain.result(rows, "paper", trajectory, 0.0)
    assert with_layouts.seconds <= without.seconds * (1 + 1e-12)
    assert with_layouts.relayout_seconds < without.relayout_seconds


@pytest.mark.parametrize("device", ["tiny16", "ipu-mk2"])
def test_the_matched_chain_runs_as_planned(device):
    module, _ = _model()
    inputs = random_inputs(find_function(module, None), 0)
    reference = run_function(module.clone(), inputs)
    InferencePipeline(device=device).apply(Context(), module)
    planned = float(find_function(module, None).function.attributes["irc.planned_cycles"].value.data)
    module = parse_module(str(module), "device.mlir")
    signature = find_function(module, None)
    interpreter = interpreter_for(module)
    values = interpreter.call_op(signature.function, tuple(check_inputs(signature, inputs)))
    (chip,) = chips_of(interpreter)
    assert chip.report().model_cycles == pytest.approx(planned, rel=1e-9)
    (name,) = reference
    np.testing.assert_allclose(np.asarray(values[0]), reference[name], rtol=1e-5, atol=1e-6)


def _baseline_wins(model, planned, baselines) -> list[str]:
    """The ops a baseline runs faster than the model-wide plan (`benchmarks/models_table`'s
    rule: irc's active, setup and relayout time against the baseline's compute and VGM
    load/store time)."""
    return [op.name for i, op in enumerate(planned.ops)
            if min(b.ops[i].seconds for b in baselines) < op.seconds * (1 - 1e-9)]


@pytest.mark.parametrize("name", ["bert", "gpt2", "opt"])
@pytest.mark.parametrize("device", ["tiny16", "ipu-mk2"])
def test_no_op_is_slower_than_a_baseline_and_the_floor_is_a_bound(name, device):
    """Exported transformer blocks: no op of the model-wide plan is slower than VGM's or
    Roller's plan for it (the relayout-aware choice never trades one op below them), and
    each op's floor (`_ModelProblem.op_floors`) is at most what either baseline pays."""
    imported = import_model(small_models()[name]())
    (function,) = [op for op in imported.module.walk() if isinstance(op, FuncOp)]
    model = function_model(function).model
    dev = load_device(device)
    cache = FrontierCache(dev, "t10")
    planned = plan_model(model, dev, cache=cache)
    baselines = [vgm_plan(model, dev, cache.cost, cache=cache), roller_plan(model, dev, cache.cost, cache=cache)]
    assert not _baseline_wins(model, planned, baselines)
    floors = _ModelProblem(model, cache, None).op_floors()
    for i, floor in enumerate(floors):
        assert floor / dev.clock_hz <= min(b.ops[i].seconds for b in baselines) * (1 + 1e-12)
