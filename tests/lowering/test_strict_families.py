"""Every op of exported model families on chip (issue 11): with ``strict=true``,
`rtensor-partition` plans every op of the BERT, ViT, ResNet, GPT-2 and OPT builders
(casts, masks, head merges and the embedding gathers included) or fails; the te program
and the device program both equal onnx's reference, and the device program touches the
host only at the model's edges. A gather's index outside its table is a located error
at te and at device level, never a wrong answer."""

from __future__ import annotations

import numpy as np
import pytest
from onnx.reference import ReferenceEvaluator
from xdsl.context import Context
from xdsl.dialects.func import ReturnOp
from xdsl.ir import BlockArgument
from xdsl.utils.exceptions import InterpretationError

from irc.compile import compile_module
from irc.dialects.device import GatherOp, LoadOp, StoreOp
from irc.frontend import import_model
from irc.lowering.te_to_rtensor import RTensorPartition
from irc.runner import find_function, run, run_function
from tests.programs import model_feeds, small_models

FAMILIES = small_models()
LOOKUP = """\
func.func @main(%table: tensor<16x8xf32> {irc.name = "table", irc.weight}, %ids: tensor<4xi32> {irc.name = "ids"},
                %w: tensor<8x8xf32> {irc.name = "w", irc.weight}) -> (tensor<4x8xf32> {irc.name = "y"}) {
  %g = te.op "G[i,j] = E[I[i],j]" (%table, %ids) : (tensor<16x8xf32>, tensor<4xi32>) -> tensor<4x8xf32>
  %h = te.op "H[m,n] += G[m,k] * W[k,n]" (%g, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  func.return %h : tensor<4x8xf32>
}
"""


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_strict_partition_and_numerics_at_te_and_device_level(family):
    model = FAMILIES[family]()
    imported = import_model(model)
    RTensorPartition(device="tiny16", strict=True).apply(Context(), imported.module.clone())
    compiled, _ = compile_module(imported.module.clone(), "tiny16")
    assert "te.op" not in str(compiled) and "te.opaque" not in str(compiled)
    feeds = model_feeds(imported.module)
    (want,) = ReferenceEvaluator(model).run(None, feeds)
    assert np.isfinite(want).all()  # NaN == NaN must not pass
    (at_te,) = run_function(imported.module, {**feeds, **imported.weights}).values()
    np.testing.assert_allclose(at_te, want, rtol=1e-4, atol=1e-4)
    results, _ = run(compiled, {**feeds, **imported.weights})
    (got,) = results.values()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    # host I/O only at the edges: loads read arguments, stores are the results
    assert all(isinstance(op.source, BlockArgument) for op in compiled.walk() if isinstance(op, LoadOp))
    for store in (op for op in compiled.walk() if isinstance(op, StoreOp)):
        assert all(isinstance(use.operation, ReturnOp) for use in store.result.uses)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["gpt2", "opt"])
def test_embedding_lookups_run_as_device_gathers(family):
    """The token (and position) embeddings are `device.gather`s of tables resting on chip:
    the ids never go back to the host mid-model."""
    compiled, _ = compile_module(import_model(FAMILIES[family]()).module, "tiny16")
    gathers = [op for op in compiled.walk() if isinstance(op, GatherOp)]
    assert len(gathers) == {"gpt2": 1, "opt": 2}[family]
    assert [op.result.type.get_element_type() for op in compiled.walk() if isinstance(op, StoreOp)] \
        == [find_function(compiled, None).function.function_type.outputs.data[0].get_element_type()]


@pytest.mark.slow
def test_an_index_outside_the_table_is_a_located_error():
    """An embedding id past the vocabulary: te level names the op (at its file:line:col
    in a program written as text, at its node in an imported graph), the device program
    names its gather, the core and the value."""
    from irc.runner import parse_module

    module = parse_module(LOOKUP, "fallback.mlir")
    rng = np.random.default_rng(0)
    inputs = {"table": rng.standard_normal((16, 8)).astype(np.float32), "ids": np.array([1, 3, 16, 2], np.int32),
              "w": rng.standard_normal((8, 8)).astype(np.float32)}
    with pytest.raises(InterpretationError, match=r"^fallback\.mlir:3:3: error: 'te.op' op indirect index I\[i\] of E "
                                                  r"\(dim 0\) is 16, outside \[0, 16\)"):
        run_function(module.clone(), inputs)
    compiled, _ = compile_module(module, "tiny16")
    with pytest.raises(InterpretationError, match=r"^fallback\.mlir:3:3: error: 'device.gather' op core \d+: index 16 "
                                                  r"read from \S+ selects row 16 of table \S+ \(dim 0\), which has 16 rows"):
        run(compiled, inputs)
    imported = import_model(FAMILIES["gpt2"]())
    feeds = model_feeds(imported.module)
    feeds["input_ids"][0, 3] = 50   # the vocabulary has 50 rows
    compiled, _ = compile_module(imported.module.clone(), "tiny16")
    # an imported op is located at its ONNX node
    with pytest.raises(InterpretationError, match=r'^loc\("Gather_\d+"\): error: \'te.op\' op indirect index'):
        run_function(imported.module, {**feeds, **imported.weights})
    with pytest.raises(InterpretationError, match=r'^loc\("Gather_\d+"\): error: \'device.gather\' op core \d+: '
                                                  r"index 50 read from \S+ selects row 50 of table \S+ \(dim 0\), "
                                                  r"which has 50 rows"):
        run(compiled, {**feeds, **imported.weights})
