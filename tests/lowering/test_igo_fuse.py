"""igo-fuse on every workload of irc/workloads/igo.py, scaled down: the fused
program computes exactly what the unfused backward pass computes, every layer but the
first has its pair fused, and the pass's chosen order is the cost model's cheapest."""

from __future__ import annotations

import numpy as np
import pytest

from irc.workloads.igo import scaled_down
from irc.planner.igo import evaluate, paper_order
from irc.devices import load_device
from irc.dialects.igo import ORDERS, GradPairOp
from irc.lowering.igo_fuse import COST_ORDER, IgoFuse, find_pairs, layer_of
from irc.passes.te_autodiff import TeAutodiff
from irc.runner import make_context, parse_module, random_inputs, find_function, run_function

WORKLOADS = scaled_down()


def _inputs(module):
    signature = find_function(module, None)
    rng = np.random.default_rng(0)
    inputs = random_inputs(signature, 0)
    for name, type_ in zip(signature.arg_names, signature.function.function_type.inputs):
        if name in signature.weight_names:
            inputs[name] = rng.standard_normal(tuple(type_.get_shape())).astype(np.float32) * 0.5
        elif name.startswith("ids"):
            inputs[name] = rng.integers(0, 6, tuple(type_.get_shape())).astype(np.int64)
    return inputs


@pytest.mark.parametrize("name", sorted(WORKLOADS))
@pytest.mark.parametrize("order", ["cost", "paper", "dw-major"])
def test_fused_program_equals_unfused(name, order):
    unfused = parse_module(WORKLOADS[name], f"{name}.mlir")
    TeAutodiff().apply(make_context(), unfused)
    pairs = len(find_pairs(unfused.body.block.first_op.body.block))
    fused = unfused.clone()
    IgoFuse(order=order, device="npu-edge").apply(make_context(), fused)
    ops = [op for op in fused.walk() if isinstance(op, GradPairOp)]
    assert pairs >= 2 and len(ops) == pairs
    inputs = _inputs(unfused)
    want, got = run_function(unfused, inputs), run_function(fused, inputs)
    assert want.keys() == got.keys()
    for key in want:
        np.testing.assert_array_equal(got[key], want[key], err_msg=f"{name} {key}")


def test_cost_order_is_the_cheapest():
    module = parse_module(WORKLOADS["bert"], "bert.mlir")
    TeAutodiff().apply(make_context(), module)
    device = load_device("npu-edge")
    IgoFuse(order="cost").apply(make_context(), module)
    for op in module.walk():
        if isinstance(op, GradPairOp):
            dy_name = (set(op.dx_expression.expr.inputs) & set(op.dw_expression.expr.inputs)).pop()
            layer = layer_of(op.dx_expression.expr, dy_name, op.bound_dx().extent, 4, "l")
            costs = {o: evaluate(layer, device, COST_ORDER.get(o, o)).cycles for o in ORDERS}
            assert costs[op.order.data] == min(costs.values())
            assert op.attributes["irc.gemm"].data == f"M={layer.M} K={layer.K} N={layer.N}"


def test_paper_order_follows_algorithm_1():
    module = parse_module(WORKLOADS["res"], "res.mlir")
    TeAutodiff().apply(make_context(), module)
    IgoFuse(order="paper").apply(make_context(), module)
    for op in module.walk():
        if isinstance(op, GradPairOp):
            dy_name = (set(op.dx_expression.expr.inputs) & set(op.dw_expression.expr.inputs)).pop()
            layer = layer_of(op.dx_expression.expr, dy_name, op.bound_dx().extent, 4, "l")
            assert op.order.data == paper_order(layer)


@pytest.mark.slow
@pytest.mark.parametrize("cores", [1, 4])
def test_partition_is_the_exhaustive_minimum(cores):
    """§5: each layer's scheme and parts equal the best of every scheme x parts priced."""
    from irc.cost.igo import SCHEMES

    module = parse_module(WORKLOADS["bert"], "bert.mlir")
    TeAutodiff().apply(make_context(), module)
    IgoFuse(order="cost", partition="cost", device="npu-server", cores=cores).apply(make_context(), module)
    device = load_device("npu-server").with_cores(cores)
    seen = 0
    for op in module.walk():
        if not isinstance(op, GradPairOp):
            continue
        dy_name = (set(op.dx_expression.expr.inputs) & set(op.dw_expression.expr.inputs)).pop()
        layer = layer_of(op.dx_expression.expr, dy_name, op.bound_dx().extent, 4, "l")
        order = COST_ORDER.get(op.order.data, op.order.data)
        options = {(s, p): evaluate(layer, device, order, s if (p > 1 or cores > 1) else None, p).cycles
                   for p in ((1, 2, 4) if cores == 1 else (cores,)) for s in SCHEMES}
        chosen = ((op.attributes["partition"].data, op.attributes["parts"].value.data)
                  if "partition" in op.attributes else (SCHEMES[0], 1))
        assert options[chosen] == min(options.values())
        seen += 1
    assert seen >= 2
