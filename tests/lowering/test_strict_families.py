"""Every op of exported model families on chip (issue 11): with ``strict=true``,
`rtensor-partition` plans every op of the BERT, ViT and ResNet builders (casts, masks,
head merges included) or fails; the device program then equals onnx's reference. GPT-2's
embedding lookup (a data-dependent gather) is the op still left: planning it strictly is
an error naming it."""

from __future__ import annotations

import numpy as np
import pytest
from onnx.reference import ReferenceEvaluator
from xdsl.context import Context
from xdsl.utils.exceptions import DiagnosticException

from irc.compile import compile_module
from irc.frontend import import_model
from irc.lowering.te_to_rtensor import RTensorPartition
from irc.runner import find_function, random_inputs, run
from tests.programs import small_models

FAMILIES = {name: build for name, build in small_models().items() if name != "gpt2"}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_strict_partition_and_device_numerics(family):
    model = FAMILIES[family]()
    imported = import_model(model)
    RTensorPartition(device="tiny16", strict=True).apply(Context(), imported.module.clone())
    compiled, _ = compile_module(imported.module.clone(), "tiny16")
    assert "te.op" not in str(compiled)
    feeds = {k: v for k, v in random_inputs(find_function(imported.module, None), 0).items()}
    if family == "bert":
        feeds["attention_mask"] = np.array([[1] * 8, [1] * 5 + [0] * 3], dtype=np.int64)
    results, report = run(compiled, {**feeds, **imported.weights})
    (want,) = ReferenceEvaluator(model).run(None, feeds)
    (got,) = results.values()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_gpt2_embedding_gather_is_the_strict_error():
    imported = import_model(small_models()["gpt2"]())
    with pytest.raises(DiagnosticException, match=r"te\.op.* the planner cannot describe it"):
        RTensorPartition(device="tiny16", strict=True).apply(Context(), imported.module)
