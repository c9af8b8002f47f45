"""An OPT decoder exported the way PyTorch exports it, larger than SRAM, on ELK's chip
(issue 23, item 5): the plan's preload frontiers are what runs. `preload-schedule`
checks the plan's frontiers with `device-alloc`'s placement and narrows any whose
buffers it cannot pack (the function's ``irc.remark`` counts them), or fails where
narrowing cannot help; here nothing is narrowed and nothing fails. OPT-1.3B's shape at
two layers narrowed 18 frontiers at d8075bb (its 24 layers 207), every one where the
bytes fit but the placement could not pack them; at batch 8 and sequence 512 it ended
in an ``OrderError`` traceback, then (that fixed) in preload-schedule's "fragmented"
error, until `device-alloc` searched placements. The scaled-down decoder runs on the
interpreter with te's numbers."""

from __future__ import annotations

import functools

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
from irc.runner import run, run_function

from irc.workloads.graphs import OPTConfig, build_opt_decoder
from irc.workloads.graphs.graph import mark_weight_inputs
from tests.programs import model_feeds



def _function(module) -> FuncOp:
    return next(op for op in module.walk() if isinstance(op, FuncOp))


def _lowered_opt(config: OPTConfig) -> FuncOp:
    """``config``'s decoder (weights as graph inputs without data: the plan needs their
    shapes only) through ``inference{device=ipu-mk2-hbm}``."""
    model = build_opt_decoder(config)
    module = import_model(model).module
    mark_weight_inputs(module, model)
    InferencePipeline(device="ipu-mk2-hbm").apply(Context(), module)
    return _function(module)


@pytest.mark.slow
@pytest.mark.parametrize("config", [OPTConfig(layers=2, weights_as_inputs=True),
                                    OPTConfig(batch=8, seq=512, weights_as_inputs=True)],
                         ids=["2-layers", "batch8-seq512"])
def test_opt_1_3b_keeps_the_plans_preload_frontiers(config):
    """OPT-1.3B's shape (2048 wide, 32 heads, 8192 FFN, 50272-token embedding): larger
    than the IPU Mk2's SRAM, planned with ELK, lowered with every frontier as planned
    and within SRAM."""
    lowered = _lowered_opt(config)
    assert PRELOADED_ATTR in lowered.attributes   # larger than SRAM: planned with ELK
    assert "irc.remark" not in lowered.attributes, lowered.attributes["irc.remark"]   # no frontier narrowed
    assert peak_live_bytes(live_intervals(lowered)) <= load_device("ipu-mk2-hbm").sram_bytes


SCALED = OPTConfig(batch=1, seq=8, hidden=128, heads=4, ffn=512, vocab=64, positions=64, layers=3)
"""An OPT decoder at a sixteenth of OPT-1.3B's width, its 2.4 MB of weights more than
twice tiny16-hbm's SRAM."""


@functools.cache
def _scaled_run():
    imported = import_model(build_opt_decoder(SCALED))
    inputs = {**model_feeds(imported.module, vocabulary=SCALED.vocab), **imported.weights}
    reference = run_function(imported.module.clone(), inputs)
    compiled, _ = compile_module(imported.module.clone(), "tiny16-hbm")
    results, report = run(compiled, inputs)
    return imported, compiled, reference, results, report


@pytest.mark.slow
def test_scaled_opt_decoder_runs_with_the_plans_frontiers():
    """The same exported graph scaled down on tiny16-hbm: planned with ELK, nothing
    narrowed, within SRAM, te's numbers."""
    imported, compiled, reference, results, report = _scaled_run()
    device = load_device("tiny16-hbm")
    assert sum(w.nbytes for w in imported.weights.values()) > 2 * device.cores * device.sram_bytes
    function = _function(compiled)
    assert PRELOADED_ATTR in function.attributes
    assert "irc.remark" not in function.attributes, function.attributes["irc.remark"]
    assert report.peak_sram_bytes <= device.sram_bytes
    for key, value in reference.items():
        assert np.isfinite(value).all()
        np.testing.assert_allclose(results[key], value, rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_scaled_opt_decoder_runs_at_the_planned_cycles():
    """The plan's cycles are the run's: the attention mask (an input that is not a weight,
    read by the first op) is preloaded into that op's execute layout, replicated to its
    cores, as its own load beside the op's weight; ELK prices it so per execute state
    (`irc.planner.preload_ops.own_input_loads`; priced inside the weight's load it was 12.8
    cycles short of 236,899)."""
    _, compiled, _, _, report = _scaled_run()
    assert report.model_cycles == pytest.approx(planned_model_cycles(compiled), rel=1e-9)
