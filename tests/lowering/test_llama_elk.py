"""A Llama2-13B decoder layer with its LM head on ELK's chip (issue 23, item 5): built in
code from the published configuration (5120 hidden, 40 heads of 128, 13824 SwiGLU FFN,
RMSNorm, rotary embeddings as Hugging Face exports them, a 32000-token LM head; batch 32
decoding one token against a KV cache, ELK's setting), its weights (1.0 GB) exceed the
IPU Mk2's SRAM, so `inference{device=ipu-mk2-hbm}` plans it with ELK. The plan's memory
account is what the program holds: it lowers with the plan's preload frontiers as they
are (nothing narrowed) within SRAM. The same graph scaled down runs on the interpreter
at the planned cycles with te's numbers."""

from __future__ import annotations


import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.func import FuncOp

from irc.compile import compile_module, planned_model_cycles
from irc.devices import load_device
from irc.frontend.onnx_import import import_model
from irc.lowering.te_to_rtensor import PRELOADED_ATTR
from irc.passes.device_alloc import live_intervals, peak_live_bytes
from irc.passes.pipelines import InferencePipeline
from irc.runner import find_function, random_inputs, run, run_function

from irc.workloads.graphs import LLAMA2_13B, LlamaConfig, build_llama_layer
from irc.workloads.graphs.graph import mark_weight_inputs



def _function(module) -> FuncOp:
    return next(op for op in module.walk() if isinstance(op, FuncOp))


@pytest.mark.slow
def test_llama2_13b_layer_with_its_lm_head_lowers_as_elk_planned():
    """Full size, compiled (its weights are arguments without data: the plan needs their
    shapes only): ELK plans it, and the program keeps the plan's frontiers and fits."""
    config = LlamaConfig(vocab=32000, weights_as_inputs=True)
    assert (config.hidden, config.heads, config.intermediate, config.batch) == (5120, 40, 13824, 32) == (
        LLAMA2_13B.hidden, LLAMA2_13B.heads, LLAMA2_13B.intermediate, LLAMA2_13B.batch)
    model = build_llama_layer(config)
    module = import_model(model).module
    mark_weight_inputs(module, model)
    function = _function(module)
    weights = [a for a in function.arg_attrs.data if "irc.weight" in a.data]
    assert len(weights) == 13   # 3 norms, 7 projections, the LM head, the rotary cos and sin
    InferencePipeline(device="ipu-mk2-hbm").apply(Context(), module)
    lowered = _function(module)
    assert PRELOADED_ATTR in lowered.attributes   # larger than SRAM: planned with ELK
    assert "irc.remark" not in lowered.attributes, lowered.attributes["irc.remark"]   # no frontier narrowed
    assert peak_live_bytes(live_intervals(lowered)) <= load_device("ipu-mk2-hbm").sram_bytes
    text = str(module)
    assert text.count("device.preload_async") == len(function.arg_attrs.data) == len(weights) + 3   # each once


@pytest.mark.slow
def test_scaled_llama_layer_with_its_lm_head_runs_as_elk_planned():
    """The same graph at a twentieth of its width on tiny16-hbm (its 2.3 MB of weights
    twice the chip's SRAM): planned with ELK, run at the planned cycles, te's numbers."""
    config = LlamaConfig(batch=2, past=7, hidden=256, heads=8, intermediate=704, vocab=1600)
    imported = import_model(build_llama_layer(config))
    assert sum(w.nbytes for w in imported.weights.values()) > 2 * 16 * load_device("tiny16-hbm").sram_bytes
    inputs = {**random_inputs(find_function(imported.module, None), 0), **imported.weights}
    reference = run_function(imported.module.clone(), inputs)
    compiled, _ = compile_module(imported.module.clone(), "tiny16-hbm")
    function = _function(compiled)
    assert PRELOADED_ATTR in function.attributes and "irc.remark" not in function.attributes
    results, report = run(compiled, inputs)
    # (ELK plans with the layout-matched tables too: an idle slice padded past its weight's
    # end is read whole from HBM, as the chip times it: `irc.planner.preload_ops.weight_loads`)
    assert report.model_cycles == pytest.approx(planned_model_cycles(compiled), rel=1e-9)
    assert report.peak_sram_bytes <= load_device("tiny16-hbm").sram_bytes
    for key, value in reference.items():   # f16 end to end: within a few roundings of te level
        assert np.isfinite(value).all()
        scale = float(np.max(np.abs(value.astype(np.float32))))
        np.testing.assert_allclose(results[key], value, rtol=2 ** -7, atol=2 ** -8 * scale)
