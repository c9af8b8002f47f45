"""A plan the planner makes for a model larger than SRAM is what runs (issue 23, item 5):
ELK's preload plan counts bytes, the compiled program places buffers, and the planner
checks its plan's program with `device-alloc`'s own placement
(`irc.planner.preload_packing`, `irc.planner.elk.packed_decision`), so `preload-schedule`
never narrows a frontier the planner chose nor fails where the bytes fit but the buffers
fragment. For random small models on random small chips with off-chip memory: every
model the planner plans with ELK lowers with no frontier narrowed and runs at the
planned cycles."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects.func import FuncOp
from xdsl.utils.exceptions import DiagnosticException

from irc.compile import planned_model_cycles
from irc.devices import load_device
from irc.dialects.target import TARGET_ATTR
from irc.lowering.te_to_rtensor import PRELOADED_ATTR
from irc.passes.pipelines import InferencePipeline
from irc.runner import parse_module, run
from irc.target import target_attr
from tests.programs import TeFunction

WIDTHS = (16, 32, 48, 64)

FRAGMENTED = (
    # ELK's plan of these fit by bytes, but their buffers did not pack (preload-schedule:
    # "no placement of the program's buffers leaves it a free range (fragmented)")
    'func.func @main(%x: tensor<16x32xf16> {irc.name = "x"}, %w1: tensor<32xf16> {irc.name = "w1", irc.weight}, '
    '%w2: tensor<32xf16> {irc.name = "w2", irc.weight}, %w3: tensor<32x48xf16> {irc.name = "w3", irc.weight}, '
    '%w4: tensor<48x16xf16> {irc.name = "w4", irc.weight}, %w5: tensor<16x64xf16> {irc.name = "w5", irc.weight}) '
    '-> tensor<16x64xf16> {\n'
    '  %v0 = te.op "A[m,n] = relu(H[m,n] + B[n])" (%x, %w1) : (tensor<16x32xf16>, tensor<32xf16>) -> tensor<16x32xf16>\n'
    '  %v1 = te.op "A[m,n] = relu(H[m,n] + B[n])" (%v0, %w2) : (tensor<16x32xf16>, tensor<32xf16>) -> tensor<16x32xf16>\n'
    '  %v2 = te.op "H[m,n] += X[m,k] * W[k,n]" (%v1, %w3) : (tensor<16x32xf16>, tensor<32x48xf16>) -> tensor<16x48xf16>\n'
    '  %v3 = te.op "H[m,n] += X[m,k] * W[k,n]" (%v2, %w4) : (tensor<16x48xf16>, tensor<48x16xf16>) -> tensor<16x16xf16>\n'
    '  %v4 = te.op "H[m,n] += X[m,k] * W[k,n]" (%v3, %w5) : (tensor<16x16xf16>, tensor<16x64xf16>) -> tensor<16x64xf16>\n'
    '  func.return %v4 : tensor<16x64xf16>\n}\n',
    'func.func @main(%x: tensor<8x32xf16> {irc.name = "x"}, %w1: tensor<32x48xf16> {irc.name = "w1", irc.weight}, '
    '%w2: tensor<48x64xf16> {irc.name = "w2", irc.weight}, %w3: tensor<64x64xf16> {irc.name = "w3", irc.weight}, '
    '%w4: tensor<64x64xf16> {irc.name = "w4", irc.weight}) -> tensor<8x64xf16> {\n'
    '  %v0s = te.op "N[m] += X[m,n] * X[m,n]" (%x) : (tensor<8x32xf16>) -> tensor<8xf16>\n'
    '  %v0 = te.op "Y[m,n] = X[m,n] * N[m]" (%x, %v0s) : (tensor<8x32xf16>, tensor<8xf16>) -> tensor<8x32xf16>\n'
    '  %v1 = te.op "H[m,n] += X[m,k] * W[k,n]" (%v0, %w1) : (tensor<8x32xf16>, tensor<32x48xf16>) -> tensor<8x48xf16>\n'
    '  %v2 = te.op "H[m,n] += X[m,k] * W[k,n]" (%v1, %w2) : (tensor<8x48xf16>, tensor<48x64xf16>) -> tensor<8x64xf16>\n'
    '  %v3 = te.op "H[m,n] += X[m,k] * W[k,n]" (%v2, %w3) : (tensor<8x64xf16>, tensor<64x64xf16>) -> tensor<8x64xf16>\n'
    '  %v4 = te.op "Y[m,n] = A[m,n] + B[m,n]" (%v3, %v3) : (tensor<8x64xf16>, tensor<8x64xf16>) -> tensor<8x64xf16>\n'
    '  %v5 = te.op "H[m,n] += X[m,k] * W[k,n]" (%v4, %w4) : (tensor<8x64xf16>, tensor<64x64xf16>) -> tensor<8x64xf16>\n'
    '  func.return %v5 : tensor<8x64xf16>\n}\n',
)


@st.composite
def models(draw):
    """A te function of 3-6 ops on tokens x width: linear layers and biases (weights marked
    ``irc.weight``), RMS-style norms (an input read by two ops) and residual adds."""
    tokens = draw(st.sampled_from((4, 8, 16)))
    function = TeFunction(tokens, WIDTHS[1], draw(st.sampled_from(("f16", "f32"))))
    for index in range(draw(st.integers(3, 6))):
        kind = draw(st.sampled_from(("linear", "linear", "bias", "norm", "residual")))
        out, act = f"%v{index}", function.ty(tokens, function.width)
        if kind == "linear":
            function.linear(out, "w", draw(st.sampled_from(WIDTHS)))
        elif kind == "bias":
            function.bias(out, "w")
        elif kind == "norm":
            value = function.value
            function.op(f"{out}s", "N[m] += X[m,n] * X[m,n]", value, act, function.ty(tokens))
            function.op(out, "Y[m,n] = X[m,n] * N[m]", f"{value}, {out}s", f"{act}, {function.ty(tokens)}", act)
        else:
            function.op(out, "Y[m,n] = A[m,n] + B[m,n]", f"{function.value}, {function.value}", f"{act}, {act}", act)
    return function.text()


def _chip(sram: int, cores: int, base: str = "tiny16-hbm"):
    """``base`` (tiny16-hbm) with ``cores`` cores of ``sram`` bytes each."""
    device = load_device(base)
    return dataclasses.replace(device, name=f"{base}-{cores}-{sram}", sram_bytes=sram, cores=cores,
                               cores_per_chip=cores)


def planned_on_chip(text: str, sram: int, cores: int, preloaded: bool, base: str = "tiny16-hbm"):
    """``text`` compiled by the inference pipeline for a small chip (``_chip``: with HBM
    by default) when rtensor-partition plans it and plans it with ELK's preloads
    (``preloaded``) or within SRAM (not): the module and its function, else (None, None)."""
    module = parse_module(text, "random.mlir")
    module.attributes[TARGET_ATTR] = target_attr(_chip(sram, cores, base), "t10")
    partition, *rest = InferencePipeline().passes()
    try:
        partition.apply(Context(), module)
    except DiagnosticException:
        return None, None   # refused by the planner, with its reason
    (function,) = [op for op in module.walk() if isinstance(op, FuncOp)]
    if (PRELOADED_ATTR in function.attributes) != preloaded:
        return None, None
    for later in rest:
        later.apply(Context(), module)
    return module, function


@pytest.mark.slow
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=models(), sram=st.sampled_from((768, 1024, 1536, 2048)), cores=st.sampled_from((4, 8, 16)))
@example(text=FRAGMENTED[0], sram=1536, cores=8)
@example(text=FRAGMENTED[1], sram=1536, cores=8)
def test_a_preload_plan_runs_as_planned(text, sram, cores):
    """The planner's ELK plan lowers with every frontier as planned (no ``irc.remark``),
    within SRAM, and the run takes the planned cycles. A model the planner refuses (an
    op no plan fits) or plans without preloading (it fits SRAM) says nothing here."""
    module, function = planned_on_chip(text, sram, cores, preloaded=True)
    if module is None:
        return   # refused by the planner, or planned without preloading (it fits SRAM)
    assert "irc.remark" not in function.attributes, function.attributes["irc.remark"]
    _, report = run(module)
    assert report.peak_sram_bytes <= sram
    assert report.model_cycles == pytest.approx(planned_model_cycles(module), rel=1e-9)
