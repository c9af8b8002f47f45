"""What the model-wide plan says is what runs (issue 11): activations stay on chip between
operators (an on-chip ``device.relayout`` where layouts differ), weights rest in their idle
layouts and are gathered at each use, host I/O happens only at the function's edges, and
the interpreted chip time equals the model-wide planner's prediction exactly."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.func import FuncOp

from irc.devices import load_device
from irc.frontend.onnx_import import import_model
from irc.interpreter.registry import chips_of
from irc.lowering.model_from_ir import function_model, plan_function
from irc.passes.pipelines import InferencePipeline
from irc.planner.op_table import FrontierCache
from irc.runner import check_inputs, find_function, interpreter_for, parse_module, random_inputs, run_function
from irc.workloads import graphs as models

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the repository's tests/ package

from tests.programs import model_feeds  # noqa: E402

TINY16_1152 = str(ROOT / "tests/filecheck/passes/rtensor-partition/Inputs/tiny16-1152.toml")
WEIGHTED_MLP = """
func.func @main(%x: tensor<32x32xf16> {irc.name = "x"}, %w0: tensor<32x32xf16> {irc.name = "w0", irc.weight},
                %w1: tensor<32x32xf16> {irc.name = "w1", irc.weight}) -> tensor<32x32xf16> {
  %h0 = te.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w0) : (tensor<32x32xf16>, tensor<32x32xf16>) -> tensor<32x32xf16>
  %r0 = te.op "R[m,n] = relu(H[m,n])" (%h0) : (tensor<32x32xf16>) -> tensor<32x32xf16>
  %h1 = te.op "H[m,n] += X[m,k] * W[k,n]" (%r0, %w1) : (tensor<32x32xf16>, tensor<32x32xf16>) -> tensor<32x32xf16>
  func.return %h1 : tensor<32x32xf16>
}
"""


def _planned_cycles(module, device: str) -> float:
    (function,) = [op for op in module.walk() if isinstance(op, FuncOp)]
    found = function_model(function)
    dev = load_device(device)
    return plan_function(found.model, FrontierCache(dev, "t10")).seconds * dev.clock_hz


def _run(te_module, device: str, inputs: dict):
    """Plan, compile and run ``te_module`` on ``device``; the results at te and device
    level, the chip report, the planner's whole-model cycles and the device IR."""
    reference = run_function(te_module.clone(), inputs)
    planned = _planned_cycles(te_module, device)
    module = te_module.clone()
    InferencePipeline(device=device).apply(Context(), module)
    text = str(module)
    module = parse_module(text, "device.mlir")
    signature = find_function(module, None)
    interpreter = interpreter_for(module)
    values = interpreter.call_op(signature.function, tuple(check_inputs(signature, inputs)))
    results = dict(zip(signature.result_names, (np.asarray(v) for v in values)))
    (chip,) = chips_of(interpreter)
    return reference, results, chip.report(), planned, text


def _host_io_only_at_edges(text: str, arguments: int, results: int) -> None:
    """Every load reads a function argument, each argument once (a weight into its idle
    layout, all weights before the first computation: the model's edge; issue 23), and
    every store is a result of the function."""
    from collections import Counter

    from xdsl.dialects.func import ReturnOp
    from xdsl.ir import BlockArgument

    from irc.dialects.device import GatherOp, LoadOp, MmaOp, StoreOp, VectorOp
    from irc.lowering.model_from_ir import is_weight

    module = parse_module(text, "device.mlir")
    ops = list(module.walk())
    loads = [op for op in ops if isinstance(op, LoadOp)]
    stores = [op for op in ops if isinstance(op, StoreOp)]
    assert all(isinstance(op.source, BlockArgument) for op in loads), "a load mid-model"
    assert all(all(isinstance(use.operation, ReturnOp) for use in op.result.uses) for op in stores), \
        "a store mid-model"
    assert "te.op" not in text and "te.opaque" not in text, "an op left on the host"
    first = min(i for i, op in enumerate(ops) if isinstance(op, (MmaOp, VectorOp, GatherOp)))
    for op in loads:
        if is_weight(op.source):
            assert ops.index(op) < first and op.buffer.owner.buffer_name.data.endswith(".idle"), \
                "a weight loaded at its use instead of resting in its idle layout"
    loaded = Counter(op.source for op in loads)
    assert all(count == 1 for count in loaded.values()), "an argument was loaded from the host twice"
    assert len(loads) == len(loaded) <= arguments
    assert len(stores) == results


def test_mlp_runs_as_planned_with_relayouts_on_chip():
    module = parse_module((ROOT / "examples/mlp.mlir").read_text(), "mlp.mlir")
    inputs = random_inputs(find_function(module, None), 0)
    reference, results, report, planned, text = _run(module, "tiny16", inputs)
    assert np.isfinite(reference["y"]).all()
    _host_io_only_at_edges(text, arguments=4, results=1)
    assert "device.relayout" in text and report.cycles["relayout"] > 0
    assert report.model_cycles == pytest.approx(planned, rel=1e-9)
    np.testing.assert_allclose(results["y"], reference["y"], rtol=1e-5, atol=1e-5)


def test_weights_rest_idle_and_pay_their_setup():
    """1152 bytes per core: the weights rest cut finer than they execute (idle plans) and are
    gathered into their active layout at each use, exactly as the planner prices it."""
    module = parse_module(WEIGHTED_MLP, "weighted.mlir")
    rng = np.random.default_rng(0)
    inputs = {name: rng.standard_normal((32, 32)).astype(np.float16) for name in ("x", "w0", "w1")}
    reference, results, report, planned, text = _run(module, TINY16_1152, inputs)
    assert np.isfinite(reference["result0"]).all()
    assert ".idle" in text
    _host_io_only_at_edges(text, arguments=3, results=1)
    assert report.model_cycles == pytest.approx(planned, rel=1e-9)
    assert report.peak_sram_bytes <= 1152
    want = reference["result0"].astype(np.float32)
    got = results["result0"].astype(np.float32)
    assert np.max(np.abs(got - want)) <= 2 ** -8 * np.max(np.abs(want))


ONNX_MODELS = {
    "bert": lambda: models.build_bert_layer(models.BertConfig(batch=2, seq=8, hidden=32, heads=4, intermediate=64)),
    "gpt2-2-layers": lambda: models.build_gpt2_block(
        models.GPT2Config(batch=1, seq=8, hidden=32, heads=2, vocab=50, positions=16, layers=2)),
    # the token embedding is the LM head's weight too (tied): read by a gather and, through a
    # transpose, by the logits' matmul; it rests once
    "gpt2-lm-head": lambda: models.build_gpt2_block(
        models.GPT2Config(batch=1, seq=8, hidden=32, heads=2, vocab=50, positions=16, layers=2, lm_head=True)),
    "llama": lambda: models.build_llama_layer(
        models.LlamaConfig(batch=2, past=7, hidden=32, heads=4, intermediate=64)),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ONNX_MODELS))
def test_exported_models_run_as_planned(name):
    """Whole models on chip: planned == interpreted to the cycle, host I/O only at the
    edges, and the device results equal onnx's reference evaluator (and te level)."""
    from onnx.reference import ReferenceEvaluator

    model = ONNX_MODELS[name]()
    imported = import_model(model)
    signature = find_function(imported.module, None)
    feeds = model_feeds(imported.module)  # ids in the vocabulary, 0/1 masks
    inputs = {**feeds, **imported.weights}
    reference, results, report, planned, text = _run(imported.module, "tiny16", inputs)
    assert all(np.isfinite(value).all() for value in reference.values())  # NaN == NaN must not pass
    assert report.model_cycles == pytest.approx(planned, rel=1e-9)
    _host_io_only_at_edges(text, arguments=len(signature.arg_names), results=len(reference))
    onnx_reference = dict(zip((o.name for o in model.graph.output), ReferenceEvaluator(model).run(None, feeds)))
    for key, value in reference.items():
        if value.dtype == np.float16:  # f16 end to end: each op within one rounding, chained
            scale = float(np.max(np.abs(value.astype(np.float32))))
            np.testing.assert_allclose(results[key], value, rtol=2 ** -8, atol=2 ** -9 * scale)
        else:
            np.testing.assert_allclose(results[key], value, rtol=1e-4, atol=1e-4)
        if value.dtype != np.float16:
            np.testing.assert_allclose(results[key], onnx_reference[key], rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_bert_base_layer_runs_as_planned_on_the_ipu():
    """The real BERT-base encoder layer (batch 1, sequence 128, 768 wide, 12 heads) on the
    1,472-core IPU Mk2: the interpreted whole-model time (kernels, setups, relayouts)
    equals the model-wide plan's to the cycle, host I/O happens only at the layer's edges
    and the result equals onnx's reference evaluator."""
    from onnx.reference import ReferenceEvaluator

    model = models.build_bert_layer(models.BertConfig(batch=1, seq=128))
    imported = import_model(model)
    rng = np.random.default_rng(0)
    mask = np.ones((1, 128), np.int64)
    mask[:, -16:] = 0
    feeds = {"hidden_states": rng.standard_normal((1, 128, 768)).astype(np.float32), "attention_mask": mask}
    module = imported.module.clone()
    InferencePipeline(device="ipu-mk2").apply(Context(), module)
    planned = float(find_function(module, None).function.attributes["irc.planned_cycles"].value.data)
    signature = find_function(module, None)
    interpreter = interpreter_for(module)
    values = interpreter.call_op(signature.function, tuple(check_inputs(signature, {**feeds, **imported.weights})))
    (chip,) = chips_of(interpreter)
    report = chip.report()
    assert report.model_cycles == pytest.approx(planned, rel=1e-9)
    assert report.cycles["setup"] + report.cycles["relayout"] > 0
    _host_io_only_at_edges(str(module), arguments=len(signature.arg_names), results=1)
    (want,) = ReferenceEvaluator(model).run(None, feeds)
    assert np.isfinite(want).all()
    np.testing.assert_allclose(np.asarray(values[0]), want, rtol=1e-3, atol=1e-3)


@pytest.mark.slow
def test_f16_bert_layer_pads_only_reductions_it_can_and_runs_on_the_ipu():
    """An f16 BERT layer as the exporter writes it (LayerNorm's mean over a cast:
    ``M[d0,d1] += cast(A[d0,d1,d2]) * c``) on the 1,472-core IPU Mk2. Under T10's utilisation floor the planner pads
    that reduction (64 -> 66 wide: the cast of a padded zero is zero, so the sum is
    unchanged) and never one whose padded points would change the fold; the whole layer
    compiles, runs as planned to the cycle and matches te within f16 roundings."""
    from irc.dialects.rtensor import RTensorOp
    from irc.lowering.rtensor_plan import op_spec, scored_plan

    model = models.build_bert_layer(
        models.BertConfig(batch=1, seq=128, hidden=64, heads=2, intermediate=64, dtype="float16"))
    imported = import_model(model)
    rng = np.random.default_rng(0)
    mask = np.ones((1, 128), np.int64)
    mask[:, -16:] = 0
    feeds = {"hidden_states": rng.standard_normal((1, 128, 64)).astype(np.float16), "attention_mask": mask}
    inputs = {**feeds, **imported.weights}
    (reference,) = run_function(imported.module.clone(), inputs).values()
    assert reference.dtype == np.float16 and np.isfinite(reference).all()

    padded_sums = []

    def look(previous, module, following):
        if previous is not None and previous.name == "rtensor-check":
            for op in module.walk():
                if isinstance(op, RTensorOp):
                    spec, score = op_spec(op), scored_plan(op).score
                    for axis, extent, size in zip(spec.axis_names, spec.extents, score.padded_extents):
                        if axis in spec.reduction_axes and size != extent:
                            assert axis not in spec.unpadded_axes or spec.combiner in ("max=", "min=")
                            padded_sums.append(str(op.bound().expr))

    module = imported.module.clone()
    InferencePipeline(device="ipu-mk2", min_utilization=0.9).pipeline(look).apply(Context(), module)
    assert any("cast(" in text for text in padded_sums), padded_sums
    planned = float(find_function(module, None).function.attributes["irc.planned_cycles"].value.data)
    signature = find_function(module, None)
    interpreter = interpreter_for(module)
    (value,) = interpreter.call_op(signature.function, tuple(check_inputs(signature, inputs)))
    (chip,) = chips_of(interpreter)
    assert chip.report().model_cycles == pytest.approx(planned, rel=1e-9)
    scale = float(np.max(np.abs(reference.astype(np.float32))))
    np.testing.assert_allclose(np.asarray(value), reference, rtol=2 ** -8, atol=2 ** -9 * scale)


DEAD_OPS = """
func.func @main(%x: tensor<8x64xf32> {irc.name = "x"}, %w1: tensor<64x32xf32> {irc.name = "w1"},
                %b1: tensor<32xf32> {irc.name = "b1"}, %w2: tensor<32x16xf32> {irc.name = "w2"})
    -> (tensor<8x16xf32> {irc.name = "y"}) {
  %h = te.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w1) : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  %a = te.op "A[m,n] = relu(H[m,n] + B[n])" (%h, %b1) : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %d = te.op "D[m,n] = exp(H[m,n])" (%h) : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %e = te.op "E[m,n] += D[m,k] * W[k,n]" (%d, %w2) : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  %y = te.op "Y[m,n] += A[m,k] * W[k,n]" (%a, %w2) : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  func.return %y : tensor<8x16xf32>
}
"""


def test_dead_ops_are_not_planned():
    """Ops whose results nothing reads (``%d`` and its only reader ``%e``) are erased before
    they run, so the model-wide plan leaves them out: the planned cycles (the pass's
    ``irc.planned_cycles`` and ``irc-plan --model``'s) equal the interpreted ones."""
    from irc.lowering.model_from_ir import function_model

    module = parse_module(DEAD_OPS, "dead.mlir")
    (function,) = [op for op in module.walk() if isinstance(op, FuncOp)]
    assert [op.expression.text for op in function_model(function).ops] == [
        "H[m,n] += X[m,k] * W[k,n]", "A[m,n] = relu(H[m,n] + B[n])", "Y[m,n] += A[m,k] * W[k,n]"]
    inputs = random_inputs(find_function(module, None), 0)
    reference, results, report, planned, text = _run(module, "tiny16", inputs)
    assert "exp" not in text
    stated = float(find_function(parse_module(text, "device.mlir"), None).function.attributes[
        "irc.planned_cycles"].value.data)
    assert report.model_cycles == pytest.approx(planned, rel=1e-9) == pytest.approx(stated, rel=1e-9)
    np.testing.assert_allclose(results["y"], reference["y"], rtol=1e-5, atol=1e-5)


TWO_EMBEDDINGS = """
func.func @main(%words: tensor<4500x12xf32> {irc.name = "words", irc.weight}, %ids: tensor<32xi32> {irc.name = "ids"},
                %places: tensor<4500x12xf32> {irc.name = "places", irc.weight}, %pos: tensor<32xi32> {irc.name = "pos"})
    -> (tensor<32x12xf32> {irc.name = "y"}) {
  %w = te.op "G[q,d] = E[I[q],d]" (%words, %ids) : (tensor<4500x12xf32>, tensor<32xi32>) -> tensor<32x12xf32>
  %p = te.op "G[q,d] = E[I[q],d]" (%places, %pos) : (tensor<4500x12xf32>, tensor<32xi32>) -> tensor<32x12xf32>
  %y = te.op "Y[q,d] = A[q,d] + B[q,d]" (%w, %p) : (tensor<32x12xf32>, tensor<32x12xf32>) -> tensor<32x12xf32>
  func.return %y : tensor<32x12xf32>
}
"""


def test_embeddings_planned_below_the_utilisation_floor_run_as_planned():
    """GPT-2's two embedding tables in miniature on tiny16: at the utilisation floor they
    would rest in 72,000 bytes per core (more than a core has); planned without it (12
    cores each) they fit, compile, run as planned and gather the right rows."""
    module = parse_module(TWO_EMBEDDINGS, "embeddings.mlir")
    rng = np.random.default_rng(0)
    inputs = {"words": rng.standard_normal((4500, 12)).astype(np.float32), "ids": rng.integers(0, 4500, 32).astype(np.int32),
              "places": rng.standard_normal((4500, 12)).astype(np.float32), "pos": np.arange(32, dtype=np.int32)}
    reference, results, report, planned, text = _run(module, "tiny16", inputs)
    assert report.model_cycles == pytest.approx(planned, rel=1e-9)
    assert report.peak_sram_bytes <= load_device("tiny16").sram_bytes
    want = inputs["words"][inputs["ids"]] + inputs["places"][inputs["pos"]]
    np.testing.assert_array_equal(reference["y"], want)
    np.testing.assert_array_equal(results["y"], want)


TIED_WEIGHTS = """
func.func @main(%x: tensor<16x32xf16> {irc.name = "x"}, %w: tensor<32x32xf16> {irc.name = "w", irc.weight},
                %b: tensor<32xf16> {irc.name = "b", irc.weight}) -> (tensor<16x32xf16> {irc.name = "y"}) {
  %h0 = te.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w) : (tensor<16x32xf16>, tensor<32x32xf16>) -> tensor<16x32xf16>
  %a0 = te.op "A[m,n] = relu(H[m,n] + B[n])" (%h0, %b) : (tensor<16x32xf16>, tensor<32xf16>) -> tensor<16x32xf16>
  %h1 = te.op "H[m,n] += X[m,k] * W[k,n]" (%a0, %w) : (tensor<16x32xf16>, tensor<32x32xf16>) -> tensor<16x32xf16>
  %a1 = te.op "A[m,n] = relu(H[m,n] + B[n])" (%h1, %b) : (tensor<16x32xf16>, tensor<32xf16>) -> tensor<16x32xf16>
  %wt = te.op "T[n,k] = W[k,n]" (%w) : (tensor<32x32xf16>) -> tensor<32x32xf16>
  %y = te.op "Y[m,n] += A[m,k] * T[k,n]" (%a1, %wt) : (tensor<16x32xf16>, tensor<32x32xf16>) -> tensor<16x32xf16>
  func.return %y : tensor<16x32xf16>
}
"""


@pytest.mark.parametrize("device", ["tiny16", "tiny16-hbm-mesh"])
def test_a_weight_several_ops_read_rests_once(device):
    """One weight read by three matmuls (the last through a transpose) and one bias read by
    two ops (issue 23): each is loaded from the host once, rests in its first reader's
    idle layout (the one model op holding it as a weight, its idle bytes counted once) and
    every other reader receives its partition from there, as the plan prices it; the
    program runs the planned cycles and computes te's numbers."""
    module = parse_module(TIED_WEIGHTS, "tied.mlir")
    (function,) = [op for op in module.walk() if isinstance(op, FuncOp)]
    model = function_model(function).model
    holders = {w: [op.name for op in model.ops if w in op.weights] for w in ("W", "B")}
    assert holders == {"W": ["%h0"], "B": ["%a0"]}
    assert [dict(op.shared_reads) for op in model.ops[2:]] == [{"W": (0, "W")}, {"B": (1, "B")}, {"T": (0, "W")}]
    assert all(model.shares_weight(i, name) for i in (2, 3, 4) for name in model.ops[i].shared_reads)
    assert model.live_across() == [[], [(0, "H")], [(1, "A")], [(2, "H")], [(3, "A")]]
    rng = np.random.default_rng(0)
    inputs = {"x": rng.standard_normal((16, 32)).astype(np.float16),
              "w": (0.2 * rng.standard_normal((32, 32))).astype(np.float16),
              "b": rng.standard_normal(32).astype(np.float16)}
    reference, results, report, planned, text = _run(module, device, inputs)
    if device == "tiny16":
        _host_io_only_at_edges(text, arguments=3, results=1)
    # (from HBM, preload-schedule issues the loads ahead as preloads; the first reader
    # waits for them, as the plan prices it: `irc.planner.resident_loads`)
    assert text.count("device.load ") + text.count("device.preload_async ") == 3
    assert report.model_cycles == pytest.approx(planned, rel=1e-9)
    want = reference["y"].astype(np.float32)
    assert np.isfinite(want).all()
    np.testing.assert_allclose(results["y"].astype(np.float32), want, rtol=2 ** -8, atol=2 ** -8 * np.abs(want).max())
