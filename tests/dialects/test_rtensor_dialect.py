"""The rtensor dialect: the plan accessors, relayout costs, and the verifier agreeing
with the planner on legal plans (the Pareto frontier) and on broken ones."""

import math
from functools import lru_cache

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp, TensorType, f16, f32
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from irc.dialects.target import TARGET_ATTR, target_of
from irc.target import target_attr
from irc.passes.rtensor_check import RTensorCheck
from irc.lowering.rtensor_plan import idle_plan, op_spec, scored_plan, stated_plan
from irc.dialects.rtensor import RelayoutOp, RTensorOp, RTensorType, layout_types
from irc.dialects.te_expr import parse_expression
from irc.devices import load_device
from irc.planner import Plan, PlanError, check_plan, search
from irc.plans.from_te import op_spec_from_expr
from irc.runner import make_context, parse_module

CONSTRAINT_PHRASES = (
    "does not divide the",                    # prod(f_t) | sharing cores (T10 s4.2)
    "must divide one another",                # f_t chain on a shared axis (T10 s4.2)
    "cores, device",                          # cores used <= device cores
    "bytes of SRAM",                          # memory per core <= SRAM
    "more than its extent",                   # every core gets work
    "temporal partitions but has only",       # f_t <= per-core extent
)

OPERATORS = [
    ("C[m,n] += A[m,k] * B[k,n]", [(8, 16), (16, 12)], (8, 12)),
    ("C[m,n] += A[m,k] * B[k,n]", [(24, 32), (32, 16)], (24, 16)),
    ("S[b,i,j] += Q[b,i,d] * K[b,d,j]", [(2, 8, 12), (2, 12, 8)], (2, 8, 8)),
    ("Y[n,f,h,w] += X[n,c,h+r,w+s] * W[f,c,r,s]", [(2, 4, 10, 10), (8, 4, 3, 3)], (2, 8, 8, 8)),
    ("Y[i,j] = X[i,j] + B[i,j]", [(16, 24), (16, 24)], (16, 24)),
    ("S[i] += A[i,j]", [(16, 32)], (16,)),
]
DEVICES = ["tiny8", "tiny16"]


@lru_cache(maxsize=None)
def frontier(index, device):
    text, inputs, output = OPERATORS[index]
    bound = parse_expression(text).bind(inputs, output)
    spec = op_spec_from_expr(bound, 4)
    return bound, spec, search(spec, device, "t10").pareto


def build(bound, types, factors, device, cost="t10"):
    """A verified-on-demand module holding one rtensor.op with these layouts."""
    expr = bound.expr
    arg_types = [types[name] for name in expr.inputs]
    func = FuncOp("f", (arg_types, [types[expr.output.tensor]]))
    op = RTensorOp(str(expr), func.body.block.args, types[expr.output.tensor], factors)
    func.body.block.add_ops([op, ReturnOp(op.output)])
    module = ModuleOp([func])
    module.attributes[TARGET_ATTR] = target_attr(load_device(device), cost)
    return module, op


def check(module):
    """The verifier, then the target-dependent checks of ``rtensor-check``."""
    module.verify()
    RTensorCheck().apply(make_context(), module)


def test_accessors_of_the_seed003_plan():
    bound = parse_expression("C[m,n] += A[m,k] * B[k,n]").bind([(32, 5120), (5120, 15360)], (32, 15360))
    spec = op_spec_from_expr(bound, 2)
    best = search(spec, "ipu-mk2", "t10").best
    types = layout_types(bound, best, f16)
    module, op = build(bound, types, best.op_factors, "ipu-mk2")
    check(module)
    assert op.bound().extent == {"m": 32, "n": 15360, "k": 5120}
    assert op_spec(op) == spec
    assert stated_plan(op) == best.unscored()
    scored = scored_plan(op)
    assert scored.score == best.score
    assert target_of(op).device_name == "ipu-mk2" and target_of(op).cost_name == "t10"
    c = types["C"]
    assert c.get_shape() == (32, 15360) and c.get_element_type() == f16
    assert c.replica_count == best.score.replicas["C"]
    assert [math.prod(t) for t in c.spatial_factors] == [best.op_factor("m"), best.op_factor("n")]
    assert c.padded_shape == (best.score.padded_extents[0], best.score.padded_extents[1])
    assert c.cores == best.cores  # spatial groups x replicas cover every core


def test_relayout_bytes_and_verifier():
    on_chip = RTensorType((8, 12), f32, [[2], [4]], [[1], [1]], 2)
    other = RTensorType((8, 12), f32, [[4], [4]], [[1], [1]], 1)
    func = FuncOp("f", ([TensorType(f32, (8, 12)), on_chip], []))
    host, value = func.body.block.args
    load = RelayoutOp(host, on_chip)
    change = RelayoutOp(value, other)
    same = RelayoutOp(value, on_chip)
    func.body.block.add_ops([load, change, same, ReturnOp()])
    ModuleOp([func]).verify()
    assert on_chip.partition_shape() == (4, 3)
    assert load.bytes_per_core() == 4 * 3 * 4 and load.is_host_transfer
    assert change.bytes_per_core() == 2 * 3 * 4 and not change.is_host_transfer
    assert same.bytes_per_core() == 0   # the dialect states bytes; the planner prices them


def test_types_print_and_parse_back():
    ctx = make_context()
    for type_ in (
        RTensorType((2, 4, 10, 10), f32, [[2], [1], [2, 1], [4, 1]], [[1], [1], [1, 1], [1, 2]], 3, (2, 4, 11, 10)),
        RTensorType((7,), f16),
    ):
        text = f"func.func @f(%a: {type_}) {{\n  func.return\n}}\n"
        module = parse_module(text, "t.mlir", ctx)
        assert module.body.block.first_op.function_type.inputs.data[0] == type_


@pytest.mark.slow
@settings(max_examples=30)
@given(operator=st.integers(0, len(OPERATORS) - 1), device=st.sampled_from(DEVICES), pick=st.integers(0, 1000))
def test_frontier_plans_verify_as_rtensor_ir(operator, device, pick):
    bound, spec, pareto = frontier(operator, device)
    plan = pareto[pick % len(pareto)]
    types = layout_types(bound, plan, f32)
    module, op = build(bound, types, plan.op_factors, device)
    check(module)
    assert stated_plan(op) == plan.unscored()
    # and through text: print, parse, verify with locations
    reparsed = parse_module(str(module), "t.mlir")
    assert str(reparsed) == str(module)


@settings(max_examples=40)
@given(
    operator=st.integers(0, len(OPERATORS) - 1),
    device=st.sampled_from(DEVICES),
    pick=st.integers(0, 1000),
    mutation=st.sampled_from(["F_op", "f_t", "beyond_extent"]),
    where=st.integers(0, 1000),
    factor=st.integers(2, 9),
)
def test_mutated_plans_are_rejected_with_the_constraint(operator, device, pick, mutation, where, factor):
    bound, spec, pareto = frontier(operator, device)
    plan = pareto[pick % len(pareto)]
    axes = plan.axes
    op_factors = list(plan.op_factors)
    temporal = {name: list(f) for name, f in plan.temporal_factors.items()}
    if mutation == "F_op":
        op_factors[where % len(axes)] *= factor
    elif mutation == "beyond_extent":
        d = where % len(axes)
        op_factors[d] = spec.extents[d] + factor
    else:
        tensor = spec.tensors[where % len(spec.tensors)]
        indexing = [d for d, a in enumerate(axes) if tensor.indexed_by(a)]
        temporal[tensor.name][indexing[(where // 7) % len(indexing)]] = factor
    mutated = Plan(axes, tuple(op_factors), {n: tuple(f) for n, f in temporal.items()})
    try:
        check_plan(spec, mutated, device, "t10")
        assume(False)  # the mutation happened to stay legal
    except PlanError as error:
        expected = str(error)
    assert any(phrase in expected for phrase in CONSTRAINT_PHRASES), expected
    # layouts of the mutated plan (replicas and padding of the original: the
    # constraint check comes first)
    original = layout_types(bound, plan, f32)
    types = {}
    for name, type_ in original.items():
        indices = bound.expr.output.indices if name == bound.expr.output.tensor else bound.expr.accesses_of(name)[0].indices
        types[name] = RTensorType(
            type_.get_shape(), f32,
            [[op_factors[axes.index(a)] for a in index.axes] for index in indices],
            [[temporal[name][axes.index(a)] for a in index.axes] for index in indices],
            type_.replica_count, type_.padded_shape,
        )
    module, op = build(bound, types, op_factors, device)
    with pytest.raises((VerifyException, DiagnosticException)) as caught:
        check(module)
    assert f"plan breaks a T10 constraint: {expected}" in str(caught.value)


def test_spatial_factors_must_match_f_op():
    bound, spec, pareto = frontier(0, "tiny16")
    plan = pareto[-1]
    types = layout_types(bound, plan, f32)
    a = types["A"]
    m = plan.op_factor("m")
    wrong = [[m + 1], list(a.spatial_factors[1])]
    types["A"] = RTensorType(a.get_shape(), f32, wrong, a.temporal_factors, a.replica_count, a.padded_shape)
    module, _ = build(bound, types, plan.op_factors, "tiny16")
    message = rf"fs of A on axis m \(dimension 0\) is {m + 1}, but F_op on m is {m}"
    with pytest.raises(VerifyException, match=message):
        module.verify()
