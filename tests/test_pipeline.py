"""Pipelines are xDSL ``PassPipeline``s (issue 10 item 6): ``inference`` calls back
between its passes, ``compile_module`` reads the kernels' ``planned_cycles`` through that
callback, and a plain xDSL ``Universe`` plug-in still works beside ``IrcUniverse`` ones."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.universe import Universe

import irc.plugins
from irc.compile import compile_module
from irc.cost import get_cost_model, known_cost_models
from irc.dialects.shift import KernelOp
from irc.passes.pipelines import InferencePipeline
from irc.runner import parse_module

MLP = Path(__file__).resolve().parents[1] / "examples/mlp.mlir"


def _mlp():
    return parse_module(MLP.read_text(), str(MLP))


def test_inference_calls_back_around_each_pass():
    pipeline = InferencePipeline(device="tiny16")
    seen: list[tuple[str | None, str | None]] = []
    aligned: list[float] = []

    def between(previous, module, following):
        seen.append((previous and previous.name, following and following.name))
        if previous is not None and previous.name == "rotation-align":
            aligned.extend(float(op.planned_cycles.value.data) for op in module.walk() if isinstance(op, KernelOp))

    pipeline.pipeline(between).apply(Context(), _mlp())
    names = [None, *(p.name for p in pipeline.passes()), None]
    assert seen == list(zip(names, names[1:]))
    assert aligned and all(cycles > 0 for cycles in aligned)


def test_compile_module_sums_the_aligned_kernels_planned_cycles():
    aligned: list[float] = []

    def after_align(previous, module, following):
        if previous is not None and previous.name == "rotation-align":
            aligned.extend(float(op.planned_cycles.value.data) for op in module.walk() if isinstance(op, KernelOp))

    InferencePipeline(device="tiny16").pipeline(after_align).apply(Context(), _mlp())
    _, planned = compile_module(_mlp(), "tiny16")
    assert planned == pytest.approx(sum(aligned))


def test_a_plain_universe_plugin_brings_no_cost_models(monkeypatch):
    plain = Universe(all_passes={})
    monkeypatch.setattr(irc.plugins, "plugin_universes", lambda: {"plain": plain})
    assert irc.plugins.plugin_cost_models() == {} and irc.plugins.plugin_devices() == {}
    assert known_cost_models() == ["engdesign", "igo", "mtia", "seed003", "t10"]
    assert get_cost_model("t10").name == "t10"


def test_plugins_clashing_on_a_cost_model_name_is_one_error(monkeypatch):
    def model():
        return type(get_cost_model("t10"))

    one = irc.plugins.IrcUniverse(cost_models={"same": model})
    two = irc.plugins.IrcUniverse(cost_models={"same": model})
    monkeypatch.setattr(irc.plugins, "plugin_universes", lambda: {"one": one, "two": two})
    with pytest.raises(irc.plugins.PluginError, match="cost model 'same' from plug-in 'two' clashes with plug-in 'one'"):
        irc.plugins.plugin_cost_models()


def test_a_plugin_cost_model_may_not_shadow_one_of_ircs(monkeypatch):
    """irc's own cost models are registered as a plug-in's are (irc.plugins.IRC_UNIVERSE):
    one route, one clash rule."""
    shadow = irc.plugins.IrcUniverse(cost_models={"t10": lambda: type(get_cost_model("seed003"))})
    monkeypatch.setattr(irc.plugins, "plugin_universes", lambda: {"shadow": shadow})
    with pytest.raises(irc.plugins.PluginError, match="cost model 't10' from plug-in 'shadow' clashes with irc's own"):
        get_cost_model("t10")
