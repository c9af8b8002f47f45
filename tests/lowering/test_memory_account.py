"""One memory account from planner to allocator (issue 23, item 5): the bytes per core the
model-wide plan counts for every op (the idle weights, each once; the tensors kept on
chip across it, at the size they are kept; its execute buffers; a preloaded weight held
in place once) are the bytes `device-alloc` places. For random plans of random small
models - not only the plans the planner picks - the plan's peak equals the compiled
program's."""

from __future__ import annotations

from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import pytest
from xdsl.context import Context
from xdsl.dialects.func import FuncOp

from irc.devices import load_device
from irc.lowering import te_to_rtensor
from irc.lowering.model_from_ir import decision_of, function_model
from irc.passes.device_alloc import live_intervals, peak_live_bytes
from irc.passes.pipelines import InferencePipeline
from irc.planner.model import fixed_plan
from irc.planner.op_table import FrontierCache
from irc.runner import parse_module

WIDTHS = (16, 32, 48)


@st.composite
def small_models(draw):
    """A te function of 2-5 ops on tokens x width: linear layers and biases whose weights
    (``irc.weight``) may be read again by a later op, RMS-style norms (a tensor read by two
    ops) and residual adds (a tensor kept across ops)."""
    tokens = draw(st.sampled_from((8, 16)))
    dtype = draw(st.sampled_from(("f16", "f32")))
    args = [f'%x: tensor<{tokens}x{WIDTHS[0]}x{dtype}> {{irc.name = "x"}}']
    weights: dict[tuple, list[str]] = {}
    lines = []
    value, width = "%x", WIDTHS[0]
    earlier: list[tuple[str, int]] = []
    count = draw(st.integers(2, 5))

    def weight(shape):
        known = weights.setdefault(shape, [])
        if known and draw(st.booleans()):
            return draw(st.sampled_from(known))
        name = f"%w{len(args)}"
        text = "x".join(map(str, shape))
        args.append(f'{name}: tensor<{text}x{dtype}> {{irc.name = "w{len(args)}", irc.weight}}')
        known.append(name)
        return name

    def ty(*shape):
        return f"tensor<{'x'.join(map(str, shape))}x{dtype}>"

    for index in range(count):
        kind = draw(st.sampled_from(("linear", "bias", "norm", "residual")))
        out = f"%v{index}"
        if kind == "linear":
            wide = draw(st.sampled_from(WIDTHS))
            w = weight((width, wide))
            lines.append(f'{out} = te.op "H[m,n] += X[m,k] * W[k,n]" ({value}, {w}) : '
                         f'({ty(tokens, width)}, {ty(width, wide)}) -> {ty(tokens, wide)}')
            width = wide
        elif kind == "bias":
            b = weight((width,))
            lines.append(f'{out} = te.op "A[m,n] = relu(H[m,n] + B[n])" ({value}, {b}) : '
                         f'({ty(tokens, width)}, {ty(width)}) -> {ty(tokens, width)}')
        elif kind == "norm":
            lines.append(f'{out}s = te.op "N[m] += X[m,n] * X[m,n]" ({value}) : '
                         f"({ty(tokens, width)}) -> {ty(tokens)}")
            lines.append(f'{out} = te.op "Y[m,n] = X[m,n] * N[m]" ({value}, {out}s) : '
                         f'({ty(tokens, width)}, {ty(tokens)}) -> {ty(tokens, width)}')
        else:
            same = [v for v, w in earlier if w == width and v != value]
            other = draw(st.sampled_from(same)) if same else value
            lines.append(f'{out} = te.op "Y[m,n] = A[m,n] + B[m,n]" ({value}, {other}) : '
                         f'({ty(tokens, width)}, {ty(tokens, width)}) -> {ty(tokens, width)}')
        earlier.append((out, width))
        value = out
    body = "\n  ".join(lines)
    return (f"func.func @main({', '.join(args)}) -> {ty(tokens, width)} {{\n  {body}\n"
            f"  func.return {value} : {ty(tokens, width)}\n}}\n")


@pytest.mark.slow
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=small_models(), device=st.sampled_from(("tiny16", "tiny16-hbm")), data=st.data())
def test_a_random_plan_holds_what_it_counts(text, device, data):
    """Random idle and active plans of every op of a random model: the plan's peak bytes
    per core (``ModelPlan.peak_bytes``) are the compiled program's (every buffer from its
    alloc to its free), on a chip without off-chip memory and on one with it (where
    `preload-schedule` issues loads ahead only within the plan's account)."""
    module = parse_module(text, "random.mlir")
    (function,) = [op for op in module.walk() if isinstance(op, FuncOp)]
    model = function_model(function).model
    chip = load_device(device)
    cache = FrontierCache(chip, "t10", min_utilization=0.0)
    rows, choice = [], []
    for op in model.ops:
        table = cache.op_table(op)
        row = data.draw(st.integers(0, len(table.cold) - 1), label=f"{op.name} idle row")
        usable = [j for j in range(len(table.active)) if table.table[row, j] < float("inf")]
        rows.append(row)
        choice.append(data.draw(st.sampled_from(usable), label=f"{op.name} active plan"))
    planned = fixed_plan(model, chip, "t10", rows, choice, cache=cache)
    if planned.peak_bytes > chip.sram_bytes:
        return   # this plan does not fit: rtensor-check would refuse it
    decision = decision_of(model, planned, cache)
    compiled = module.clone()
    # rtensor-partition plans through the name it imported: the drawn plan stands in for its search
    with mock.patch.object(te_to_rtensor, "plan_function", lambda *args, **kwargs: decision):
        InferencePipeline(device=device).apply(Context(), compiled)
    (lowered,) = [op for op in compiled.walk() if isinstance(op, FuncOp)]
    assert peak_live_bytes(live_intervals(lowered)) == planned.peak_bytes
