"""ELK's fallback for a training MLP larger than SRAM on an HBM chip (issue 23, item 5).

Counted at the most their holders' plans place (a whole tensor on one core), the
tensors kept on chip across each op left the loss reduction no room (65,540 B needed of
65,536 on tiny16-hbm); ``offchip_study`` then counts them at the least and relies on the
packing check to hold the program to the core's bytes, which raises a clear error where
no plan packs rather than `preload-schedule` failing.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.utils.exceptions import DiagnosticException

from irc.compile import planned_model_cycles
from irc.passes.pipelines import TrainingPipeline
from irc.passes.te_autodiff import TeAutodiff
from irc.runner import parse_module, run

MLP = """func.func @main(%x: tensor<{m}x256xf32> {{irc.name = "x"}},
                %w1: tensor<256x256xf32> {{irc.name = "w1", irc.weight}},
                %w2: tensor<256x256xf32> {{irc.name = "w2", irc.weight}}) -> (tensor<f32> {{irc.name = "loss"}}) {{
  %h = te.op "Y[m,n] += X[m,k] * W[k,n]" (%x, %w1) : (tensor<{m}x256xf32>, tensor<256x256xf32>) -> tensor<{m}x256xf32>
  %g = te.op "Y[m,n] = relu(X[m,n])" (%h) : (tensor<{m}x256xf32>) -> tensor<{m}x256xf32>
  %y = te.op "Y[m,n] += X[m,k] * W[k,n]" (%g, %w2) : (tensor<{m}x256xf32>, tensor<256x256xf32>) -> tensor<{m}x256xf32>
  %l = te.op "L[] += Y[m,n] * Y[m,n] * 0.5" (%y) : (tensor<{m}x256xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}}
"""


def _train(m: int):
    module = parse_module(MLP.format(m=m), "mlp.mlir")
    reference = parse_module(MLP.format(m=m), "mlp.mlir")
    TrainingPipeline(device="tiny16-hbm").apply(Context(), module)
    return module, reference


def test_a_training_mlp_larger_than_sram_plans_with_the_least_kept_and_runs_as_planned():
    """32x256 activations: refused before (at the most, 'op5' needed 75,776 B); planned at
    the least kept bytes, it packs, runs at the planned cycles and computes te's numbers."""
    module, reference = _train(32)
    results, report = run(module, seed=3)
    assert report.model_cycles == pytest.approx(planned_model_cycles(module), rel=1e-9)
    TeAutodiff().apply(Context(), reference)
    expected, _ = run(reference, seed=3)
    assert set(results) == set(expected)
    for name, value in expected.items():
        # f32 sums in another order: off by a few ulps of the largest entry
        np.testing.assert_allclose(results[name], value, rtol=1e-4, atol=1e-5 * float(np.abs(value).max()))


@pytest.mark.parametrize("m, says", [
    (48, "does not pack in a core"),                       # planned, but its program does not pack
    (64, "at the least their holders' plans place"),       # no room even at the least
])
def test_a_training_mlp_that_cannot_fit_is_refused_by_the_planner(m, says):
    """Where the least kept bytes plan but do not pack, or do not fit, rtensor-partition
    says so (before: `preload-schedule` failed on an operator's own buffers)."""
    with pytest.raises(DiagnosticException, match=says):
        _train(m)
