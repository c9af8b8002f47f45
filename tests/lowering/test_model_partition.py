"""rtensor-partition{mode=model}: T10 §4.3.2's model-wide plans in the IR.

On small multi-op te programs with weights marked ``irc.weight``: the partitioned IR
verifies, carries exactly the planner's model-wide decision (active plans, idle plans
and setup cycles), relayouts appear exactly where a producer's layout differs from
its consumer's, the program computes what its te form computes, and the model-wide
total is never above the per-operator (mode=op) plans' total in the planner's own
accounting whenever those fit together. Fallback ops and the fit error are checked too.
"""

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.utils.exceptions import DiagnosticException

from irc.lowering.rtensor_plan import idle_plan, op_spec, scored_plan, stated_plan
from irc.dialects.rtensor import IDLE_ATTR, IdlePlanAttr, RelayoutOp, RTensorOp, RTensorType, layout_types
from irc.dialects.te import TensorOp
from irc.cost import get_cost_model
from irc.devices import load_device
from irc.planner.idle import setup_cycles
from irc.lowering.model_from_ir import function_model, per_op_decision, plan_function
from irc.planner.op_table import FrontierCache, signature
from irc.runner import find_function, make_context, parse_module, run_function
from irc.lowering.te_to_rtensor import REMARK_ATTR, RTensorPartition
from tests.programs import FALLBACK, MLP3, mlp

TINY16_1152 = str(Path(__file__).parents[1] / "filecheck/passes/rtensor-partition/Inputs/tiny16-1152.toml")
"""tiny16 with 1152 bytes of SRAM per core: weights must rest in idle plans finer than active."""




def partition(text, device, mode="model", strict=False):
    module = parse_module(text, "model.mlir")
    RTensorPartition(device=device, mode=mode, strict=strict).apply(make_context(), module)
    module.verify()
    return module


def decision_for(text, device):
    module = parse_module(text, "model.mlir")
    found = function_model(find_function(module, None).function)
    cache = FrontierCache(load_device(device), get_cost_model("t10"))
    return found, plan_function(found.model, cache), cache


def rtensor_ops(module):
    return [op for op in module.walk() if isinstance(op, RTensorOp)]


def random_arguments(text, seed):
    """Every argument of @main, weights included, as reproducible normal values."""
    from irc.dialects.dtypes import numpy_dtype

    signature = find_function(parse_module(text, "te.mlir"), None)
    rng = np.random.default_rng(seed)
    return {
        name: rng.standard_normal(tuple(arg.type.get_shape())).astype(numpy_dtype(arg.type.get_element_type()))
        for name, arg in zip(signature.arg_names, signature.function.args)
    }


def assert_same_results(text, module, seed=3):
    inputs = random_arguments(text, seed)
    reference = run_function(parse_module(text, "te.mlir"), inputs)
    results = run_function(parse_module(str(module), "rtensor.mlir"), inputs)
    assert results.keys() == reference.keys()
    for name, value in reference.items():
        assert results[name].dtype == value.dtype
        np.testing.assert_array_equal(results[name], value, err_msg=name)


@pytest.mark.parametrize("device", ["tiny16", TINY16_1152])
def test_model_mode_verifies_and_computes_what_te_computes(device):
    module = partition(MLP3, device)
    assert not any(isinstance(op, TensorOp) for op in module.walk())
    assert len(rtensor_ops(module)) == 6
    assert_same_results(MLP3, module)


@pytest.mark.parametrize("device", ["tiny16", TINY16_1152])
def test_ir_records_the_planners_model_wide_decision(device):
    module = partition(MLP3, device)
    found, decision, _ = decision_for(MLP3, device)
    planned = rtensor_ops(module)
    assert len(planned) == len(decision.ops)
    for op, chosen, model_op in zip(planned, decision.ops, found.model.ops):
        assert stated_plan(op) == chosen.active.unscored()
        attr = op.attributes.get(IDLE_ATTR)
        if not model_op.weights:
            assert attr is None
            continue
        assert isinstance(attr, IdlePlanAttr) and attr.weight_names == ("W",)
        idle = idle_plan(op)
        assert dict(idle.weight_factors) == dict(chosen.idle.weight_factors)
        assert attr.bytes_per_core == chosen.idle.cold_bytes == chosen.idle_bytes
        assert attr.setup_cycles == math.ceil(setup_cycles(chosen.idle, chosen.active, device))
        assert chosen.setup_seconds * load_device(device).clock_hz == pytest.approx(chosen.setup_cycles)
    if device == TINY16_1152:
        # 1152 bytes per core: the weights rest cut finer than they execute and pay a setup
        setups = [op.attributes[IDLE_ATTR].setup_cycles for op in planned if IDLE_ATTR in op.attributes]
        assert setups and any(s > 0 for s in setups)
        assert decision.peak_bytes <= 1152


def test_relayouts_appear_exactly_where_layouts_differ():
    module = partition(MLP3, TINY16_1152)
    found, decision, _ = decision_for(MLP3, TINY16_1152)
    layouts = [
        layout_types(bound, chosen.active, op.output.type.get_element_type())
        for op, bound, chosen in zip(found.ops, found.bounds, decision.ops)
    ]
    differing = 0
    for i, op in enumerate(found.model.ops):
        for tensor, producer in op.producers.items():
            produced = layouts[producer][found.bounds[producer].expr.output.tensor]
            differing += produced != layouts[i][tensor]
    on_chip = [
        op for op in module.walk()
        if isinstance(op, RelayoutOp) and isinstance(op.source.type, RTensorType) and isinstance(op.result.type, RTensorType)
    ]
    assert differing > 0
    assert len(on_chip) == differing
    assert all(op.source.type != op.result.type for op in on_chip)
    # every rtensor.op operand comes straight from an rtensor.op or through one relayout
    for op in rtensor_ops(module):
        for operand in op.inputs:
            owner = operand.owner
            assert isinstance(owner, (RTensorOp, RelayoutOp))


def test_identical_layers_are_planned_once():
    _, decision, cache = decision_for(mlp([32, 32, 32, 32, 32, 32]), "tiny16")
    assert cache.searches == 2                 # one matmul signature, one relu signature
    assert decision.model_plan.unique_signatures == 2
    matmuls = [op.active for op in decision.ops[::2]]
    assert len({(p.op_factors, tuple(sorted(p.temporal_factors.items()))) for p in matmuls}) == 1


@pytest.mark.slow
@settings(max_examples=12)
@given(
    widths=st.lists(st.sampled_from([8, 16, 32, 64]), min_size=3, max_size=4),
    tokens=st.sampled_from([8, 16, 32]),
    device=st.sampled_from(["tiny16", TINY16_1152]),
)
def test_model_mode_never_slower_than_op_mode(widths, tokens, device):
    """In the planner's accounting (active + setup + relayout), the model-wide plan is never
    slower than mode=op's per-operator plans whenever those fit in SRAM together; and the
    per-operator accounting prices exactly the plans mode=op puts in the IR."""
    text = mlp(widths, tokens)
    try:
        found, decision, _ = decision_for(text, device)
    except Exception as error:  # the model does not fit: the pass says so with the numbers
        from irc.planner.model import ModelFitError

        assert isinstance(error, ModelFitError) and error.needed > error.available
        with pytest.raises(DiagnosticException, match=r"(cannot be planned model-wide|no plan fits): .*bytes"):
            partition(text, device)
        return
    dev = load_device(device)
    per_op, per_op_seconds, per_op_peak = per_op_decision(found.model, dev, get_cost_model("t10"))
    if per_op_peak <= dev.sram_bytes:
        assert decision.seconds <= per_op_seconds * (1 + 1e-12)
    assert decision.seconds == pytest.approx(sum(op.seconds for op in decision.ops))
    assert decision.peak_bytes <= dev.sram_bytes
    op_mode = partition(text, device, mode="op")
    assert [stated_plan(op) for op in rtensor_ops(op_mode)] == [d.active.unscored() for d in per_op]


def test_without_marks_there_are_no_weights():
    text = mlp([32, 32, 32], marked=False)
    found, decision, _ = decision_for(text, "tiny16")
    assert all(not op.weights for op in found.model.ops)
    assert found.model.weight_bytes() == 0
    module = partition(text, "tiny16")
    assert not any(IDLE_ATTR in op.attributes for op in rtensor_ops(module))




@pytest.mark.parametrize("mode", ["model", "op"])
def test_unplannable_ops_fall_back_and_the_program_still_computes(mode):
    module = partition(FALLBACK, "tiny16", mode=mode)
    left = [op for op in module.walk() if isinstance(op, TensorOp)]
    assert [op.expression.text for op in left] == ["G[i,j] = E[I[i],j] * 2", "F[i,j] = H[i,j] - H[i,j+4] where j in 4"]
    for op in left:
        remark = op.attributes[REMARK_ATTR].data
        assert remark.startswith("not planned: the planner cannot describe it (")
        assert remark.endswith("; left for the host/vendor fallback")
    assert [op.expression.text for op in rtensor_ops(module)] == ["H[m,n] += G[m,k] * W[k,n]"]
    ids = np.array([3, 0, 15, 7], dtype=np.int32)
    rng = np.random.default_rng(0)
    inputs = {"table": rng.standard_normal((16, 8)).astype(np.float32), "ids": ids,
              "w": rng.standard_normal((8, 8)).astype(np.float32)}
    reference = run_function(parse_module(FALLBACK, "te.mlir"), inputs)
    results = run_function(parse_module(str(module), "rtensor.mlir"), inputs)
    for name in reference:
        np.testing.assert_array_equal(results[name], reference[name])


@pytest.mark.parametrize("mode", ["model", "op"])
def test_strict_keeps_the_error(mode):
    module = parse_module(FALLBACK, "model.mlir")
    with pytest.raises(DiagnosticException, match=r'model.mlir:3:3: error: \'te.op\' op "G\[i,j\] = E\[I\[i\],j\] \* 2": '
                                                 r"the planner cannot describe it: dimension 0 of E"):
        RTensorPartition(device="tiny16", mode=mode, strict=True).apply(make_context(), module)


def test_weights_that_cannot_rest_are_an_error_with_bytes():
    text = mlp([64, 64, 64, 64], tokens=8, relu=False)
    module = parse_module(text, "big.mlir")
    before = str(module)
    with pytest.raises(DiagnosticException) as caught:
        RTensorPartition(device=TINY16_1152).apply(make_context(), module)
    message = str(caught.value)
    assert message.startswith("big.mlir:1:1: error: 'func.func' op @main cannot be planned model-wide: ")
    assert "its weights need 1536 bytes per core at rest" in message
    assert "but a core has 1152 bytes of SRAM" in message
    assert str(module) == before


def test_onnx_initializers_are_the_weights(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    from irc.frontend import import_model

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((16, 16)).astype(np.float32), f"w{i}") for i in range(2)]
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("MatMul", ["r", "w1"], ["y"])]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 16])], inits)
    imported = import_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    found = function_model(find_function(imported.module, None).function)
    assert [op.weights for op in found.model.ops] == [("B",), (), ("B",)]
    assert found.model.weight_bytes() == 2 * 16 * 16 * 4
    text = str(imported.module)
    module = partition(text, "tiny16")
    assert sum(IDLE_ATTR in op.attributes for op in rtensor_ops(module)) == 2
    inputs = {"x": rng.standard_normal((8, 16)).astype(np.float32), **imported.weights}
    reference = run_function(parse_module(text, "te.mlir"), inputs)
    results = run_function(parse_module(str(module), "rtensor.mlir"), inputs)
    np.testing.assert_array_equal(results["y"], reference["y"])
    assert signature(found.model.ops[0].spec, ("B",)) == signature(found.model.ops[2].spec, ("B",))


CONSTANT_INDEX = """\
func.func @main(%a: tensor<1x16x8xf32> {irc.name = "a"}, %w: tensor<8x8xf32> {irc.name = "w", irc.weight},
                %b: tensor<1x1x8xf32> {irc.name = "b", irc.weight}) -> (tensor<1x16x8xf32> {irc.name = "y"}) {
  %h = te.op "Y[b0,m,n] += A[0,m,k] * B[k,n]" (%a, %w) : (tensor<1x16x8xf32>, tensor<8x8xf32>) -> tensor<1x16x8xf32>
  %y = te.op "Y[d0,d1,d2] = A[d0,d1,d2] + B[0,0,d2]" (%h, %b) : (tensor<1x16x8xf32>, tensor<1x1x8xf32>) -> tensor<1x16x8xf32>
  func.return %y : tensor<1x16x8xf32>
}
"""


@pytest.mark.parametrize("mode", ["model", "op"])
def test_constant_index_dims_are_unpartitioned_when_the_planner_accepts_them(mode):
    """What the ONNX importer emits for size-1 (batch) dims: when the te -> planner adapter
    describes a constant-indexed dimension (it drops it from the plan), the rtensor type
    gives that dimension fs = ft = [1] and the program still computes what te computes."""
    from irc.plans.errors import SpecError
    from irc.lowering.model_from_ir import spec_of

    module = parse_module(CONSTANT_INDEX, "c.mlir")
    try:
        for op in module.walk():
            if isinstance(op, TensorOp):
                spec_of(op)
    except SpecError:
        pytest.skip("this version of irc.plans.from_te cannot describe constant indices")
    partitioned = partition(CONSTANT_INDEX, "tiny16", mode=mode)
    ops = rtensor_ops(partitioned)
    assert len(ops) == 2
    a_type = ops[0].inputs[0].type
    assert a_type.spatial_factors[0] == (1,) and a_type.temporal_factors[0] == (1,)
    assert_same_results(CONSTANT_INDEX, partitioned)
    # the verifier insists a constant-indexed dimension is not partitioned
    text = str(partitioned)
    bad = text.replace(str(a_type), str(a_type).replace("fs=[1,", "fs=[2,", 1))
    assert bad != text
    with pytest.raises(Exception, match=r"A dimension 0 is read at the index '0', which no axis "
                                        r"partitions: fs and ft must be \[1\], got fs=\[2\] ft=\[1\]"):
        parse_module(bad, "bad.mlir").verify()


def test_an_op_slower_than_its_fastest_plan_says_why():
    """The remark names memory when the fastest plan does not fit the op's budget, and the
    model's layouts otherwise; an op on its fastest plan has none."""
    from types import SimpleNamespace as NS

    from irc.lowering.te_to_rtensor import memory_remark

    def op(active, memory_bound):
        return NS(active_seconds=active, fastest_seconds=1e-6, memory_bound=memory_bound, fastest_bytes=900,
                  budget_bytes=600)

    memory = memory_remark(op(2e-6, True), 1e9).data
    assert memory.startswith("memory-bound: runs at 2000 cycles where its fastest plan takes 1000")
    assert "needs 900 bytes per core" in memory and "leave 600" in memory
    layout = memory_remark(op(2e-6, False), 1e9).data
    assert layout.startswith("layout trade: runs at 2000 cycles where its fastest plan takes 1000")
    assert memory_remark(op(1e-6, False), 1e9) is None
