"""ONNX-shaped operators on the chip: constant indices, broadcasts, windows, merged reads.

The ONNX importer writes size-1 batch dimensions read at index 0 (``A[0,m,k]``),
broadcasts (``B[0,0,0,d]``), slices (``X[i+2] where i in 4``), reshapes whose reads
merge axes row-major (``A[0,o1,16*o2+o3]``) and outputs at constant indices
(``Y[0,0,o]``). For random such operators x random legal plans x tiny devices:

- the compute-shift program on the reference chip equals ``te_eval.evaluate`` (the
  tolerance of ``test_differential``);
- the interpreted kernel time equals the planner's exactly (relative 1e-9), with *no*
  correction term: the planner sizes a merged or strided dimension by the contiguous
  range its index covers (``irc.plans.from_te``), which is the partition the kernel
  holds, so every resident partition, shift and reduction is priced as executed;
- every partition the kernel allocates has the planner's element count.

Then the imported BERT layer (small config) through the ``inference`` pipeline on tiny16:
every op but the stated ones runs on the chip and the results equal
``onnx.reference.ReferenceEvaluator``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from irc.dialects.te_expr import parse_expression
from irc.devices import load_device
from irc.planner import Plan, SpecError, search
from irc.plans.from_te import op_spec_from_expr
from irc.schedule.kernel import build_shift_kernel
from irc.schedule.spec import op_spec_from_bound
from tests.plan_strategies import DEVICES, legal_plans
from tests.lowering.test_differential import run_case

SHAPES = (
    "batch-matmul", "broadcast-add", "output-constant", "slice", "window-sum", "reshape",
    "merged-matmul", "transpose", "scalar", "reduce-constant", "flip",
)


@st.composite
def onnx_operators(draw, kinds=SHAPES):
    """(bound expression, input shapes) of a small operator of an ONNX-import shape."""
    kind = draw(st.sampled_from(kinds))
    e = lambda lo=1, hi=6: draw(st.integers(lo, hi))  # noqa: E731
    if kind == "batch-matmul":      # MatMul of a [1,M,K] activation: batch read at a constant
        nb, m, k, n = e(1, 3), e(), e(1, 8), e()
        c = draw(st.integers(0, nb - 1))
        text = f"Y[b0,m,n] += A[{c},m,k] * B[k,n]"
        shapes, out = [(nb, m, k), (k, n)], (1, m, n)
    elif kind == "broadcast-add":   # Add with a [1,1,1,D] bias
        b, c, d = e(1, 3), e(), e()
        text = "Y[d0,d1,d2,d3] = A[0,d1,d2,d3] + B[0,0,0,d3]"
        shapes, out = [(1, b, c, d), (1, 1, 1, d)], (1, b, c, d)
    elif kind == "output-constant":  # Unsqueeze-like: write one row of a larger output
        r, o = e(1, 3), e(1, 9)
        row = draw(st.integers(0, r - 1))
        text = f"Y[0,{row},o] = A[0,o]"
        shapes, out = [(1, o)], (1, r, o)
    elif kind == "slice":           # Slice: a window of a larger dimension
        n, j, p = e(1, 6), e(), e(0, 3)
        text = f"Y[i,j] = X[i+{p},j] where i in {n}" if p else f"Y[i,j] = X[i,j] where i in {n}"
        shapes, out = [(n + p + e(0, 2), j)], (n, j)
    elif kind == "window-sum":      # a fold over a window, read at a constant batch index
        n, k, p = e(1, 5), e(1, 6), e(0, 2)
        text = f"Y[i] += X[0,i+{p},k] where i in {n}"
        shapes, out = [(1, n + p + e(0, 2), k)], (n,)
    elif kind == "reshape":         # Reshape [1,S,H*D] -> [1,S,H,D]: a merged read
        s, h, d = e(1, 4), e(1, 3), e(1, 6)
        text = f"Y[0,o1,o2,o3] = A[0,o1,{d}*o2+o3]"
        shapes, out = [(1, s, h * d)], (1, s, h, d)
    elif kind == "merged-matmul":   # a contraction over a merged (flattened) dimension
        m, k1, k2, n = e(), e(1, 3), e(1, 4), e()
        text = f"Y[m,n] += A[m,{k2}*k1+k2] * B[k1,k2,n]"
        shapes, out = [(m, k1 * k2), (k1, k2, n)], (m, n)
    elif kind == "transpose":       # Transpose of a [1,...] tensor
        a, b, c = e(1, 3), e(), e()
        text = "Y[d0,d2,d1,d3] = A[0,d1,d2,d3]"
        shapes, out = [(1, a, b, c)], (1, b, a, c)
    elif kind == "scalar":          # a tensor read only at constants: every core holds it
        i, j = e(), e()
        text = "Y[i,j] = X[i,j] * S[0,1] + 1"
        shapes, out = [(i, j), (2, 2)], (i, j)
    elif kind == "reduce-constant":  # ReduceMax keeping a size-1 dim
        a, b = e(), e(1, 8)
        text = "M[0,d1] max= A[0,d1,d2]"
        shapes, out = [(1, a, b)], (1, a)
    else:                           # a reversed read (negative coefficient)
        n, j = e(1, 8), e()
        text = f"Y[i,j] = X[{n - 1}-i,j]"
        shapes, out = [(n, j)], (n, j)
    return parse_expression(text).bind(shapes, out), shapes


def check(bound, shapes, plan, device, dtype):
    kernel = run_case(bound, shapes, plan, device, "t10", dtype)
    if kernel is not None:
        assert kernel.shifted_bytes_beyond_plan() == 0
        for tensor in kernel.tensors.values():
            assert tensor.partition_elements == kernel.planner_resident(tensor), tensor.name
    return kernel


@pytest.mark.slow
@settings(max_examples=150)
@given(data=st.data(), op=onnx_operators(), device=st.sampled_from(DEVICES),
       dtype=st.sampled_from([np.float32, np.float16]))
def test_onnx_shaped_operators_match_te_and_planner(data, op, device, dtype):
    bound, shapes = op
    spec = op_spec_from_bound(bound, np.dtype(dtype).itemsize)
    plan = data.draw(legal_plans(spec, load_device(device).cores))
    assume(check(bound, shapes, plan, device, dtype) is not None)


@pytest.mark.slow
@settings(max_examples=20)
@given(op=onnx_operators(), device=st.sampled_from(DEVICES))
def test_the_searched_plan_runs(op, device):
    """The plan the pass would pick (with the relaxed utilisation floor) runs too."""
    bound, shapes = op
    spec = op_spec_from_bound(bound, 4)
    best = search(spec, device, "t10").best
    assert check(bound, shapes, best.unscored(), device, np.float32) is not None


def test_merged_read_split_inside_is_priced_as_held():
    """``A[o1,4*o2+o3]`` with o3 split over 2 cores and o2 whole: each core holds the
    contiguous range 4*(2-1)+2 = 6 elements of A's row; rotating A along o2 moves them."""
    bound = parse_expression("Y[o1,o2,o3] = A[o1,4*o2+o3]").bind([(2, 8)], (2, 2, 4))
    plan = Plan(("o1", "o2", "o3"), (1, 1, 2), {"Y": (1, 1, 1), "A": (1, 1, 1)})
    kernel = check(bound, [(2, 8)], plan, "tiny4", np.float32)
    assert kernel.tensors["A"].partition_shape == (2, 6)
    assert kernel.partition_origin(kernel.tensors["A"], kernel.start)[:, 1].tolist() == [0, 2]


def test_constant_indices_are_slices_of_the_host_tensor():
    """``A[2,m,k]``: every core loads the slice at 2 (origin 2 on dimension 0, extent 1)."""
    bound = parse_expression("Y[b0,m,n] += A[2,m,k] * B[k,n]").bind([(3, 4, 8), (8, 4)], (1, 4, 4))
    plan = Plan(("b0", "m", "n", "k"), (1, 2, 2, 1), {"Y": (1,) * 4, "A": (1, 1, 1, 2), "B": (1, 1, 1, 2)})
    kernel = check(bound, [(3, 4, 8), (8, 4)], plan, "tiny4", np.float32)
    a = kernel.tensors["A"]
    assert a.partition_shape == (1, 2, 4) and a.rotating
    assert set(kernel.partition_origin(a, kernel.start)[:, 0].tolist()) == {2}


@pytest.mark.parametrize(
    "text, inputs, output, reason",
    [
        ("Y[i,j] = E[I[i],j] * 2", [(10, 3), (4,)], (4, 3), "dimension 0 of E is indexed by I\\[i\\]"),
        ("Y[0,4*i+j] = X[i,j]", [(3, 4)], (1, 12), "output dimension 1 of Y is indexed by '4\\*i\\+j'"),
    ],
)
def test_what_stays_on_the_host_says_why(text, inputs, output, reason):
    with pytest.raises(SpecError, match=reason):
        op_spec_from_expr(parse_expression(text).bind(inputs, output), 4)


def test_products_with_constant_indices_take_the_blas_path():
    """``contract`` (the chip's batched-BLAS path, and what makes a step a device.mma)
    slices constant reads, repeats along output axes no input reads, and keeps
    constant output dims; it agrees with the te semantics."""
    from irc.dialects.te_expr import product_reads
    from irc.interpreter.chip import contract
    from irc.interpreter.te_eval import evaluate

    rng = np.random.default_rng(0)
    cases = [
        ("Y[b0,m,n] += A[1,m,k] * B[k,n]", [(2, 3, 4), (4, 5)], (1, 3, 5)),
        ("Y[b,m,n] += A[0,m,k] * B[k,2,n] * 0.5", [(1, 3, 4), (4, 3, 5)], (3, 3, 5)),
        ("Y[0,m,n] = A[m,0] * B[0,n]", [(3, 2), (2, 4)], (1, 3, 4)),
    ]
    for text, shapes, out in cases:
        bound = parse_expression(text).bind(shapes, out)
        assert product_reads(bound.expr) is not None, text
        arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        got = contract(bound, dict(zip(bound.expr.inputs, arrays)), np.dtype(np.float32))
        np.testing.assert_allclose(got, evaluate(bound, arrays, np.float32), rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_bert_layer_runs_wholly_on_chip():
    """The imported BERT layer on tiny16: every op on chip, the mask's cast (i64 in, f32
    out: each tensor keeps its element type) planned like any elementwise op and the head
    merge ``Y[0,o1,16*i2+i3] = A[0,o1,i2,i3]`` as the relayout between its producer and its
    reader; the results equal onnx's reference evaluator."""
    from onnx.reference import ReferenceEvaluator

    from irc.compile import compile_module
    from irc.frontend.onnx_import import import_model
    from irc.runner import run
    from irc.workloads.graphs import BertConfig, build_bert_layer

    model = build_bert_layer(BertConfig(batch=1, seq=16, hidden=32, heads=2, intermediate=64))
    imported = import_model(model)
    te_ops = [op for op in imported.module.walk() if op.name == "te.op"]
    assert len(te_ops) == 51
    rng = np.random.default_rng(0)
    feeds = {
        "hidden_states": rng.standard_normal((1, 16, 32)).astype(np.float32),
        "attention_mask": np.array([[1] * 12 + [0] * 4], dtype=np.int64),
    }
    compiled, planned = compile_module(imported.module.clone(), "tiny16")
    left = [op for op in compiled.walk() if op.name == "te.op"]
    assert left == []
    # the head merge (after the heads' transpose, itself a layout change) is a relayout's move
    assert re.search(r'moves = \[(#te\.expr"[^"]*", )*#te\.expr"Y\[0,o1,16\*i2\+i3\] = A\[0,o1,i2,i3\]"\]',
                     str(compiled))
    results, chip = run(compiled, {**feeds, **imported.weights})
    (want,) = ReferenceEvaluator(model).run(None, feeds)
    assert np.isfinite(want).all()  # NaN == NaN must not pass
    (got,) = results.values()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert chip.kernel_cycles == pytest.approx(planned, rel=1e-9)


MIXED = """
builtin.module attributes {irc.target = #irc.target<"tiny8", "t10", {}>} {
func.func @main(%a: tensor<3x4x5xf32>, %b: tensor<3x4x5xf32>, %m: tensor<4x2xi64>) -> (tensor<3x4x5xi1>, tensor<4x1xi1>) {
  %y = shift.kernel "Y[d0,d1,d2] = A[d0,d1,d2] > B[d0,d1,d2]"(%a, %b) {grid = array<i64: 3, 2, 1>} : (tensor<3x4x5xf32>, tensor<3x4x5xf32>) -> tensor<3x4x5xi1> {
    shift.ring "Y" {temporal = array<i64: 1, 1, 1>}
    shift.ring "A" {temporal = array<i64: 1, 1, 1>}
    shift.ring "B" {temporal = array<i64: 1, 1, 1>}
  }
  %z = shift.kernel "Y[d0,d1] = A[d0,1] == 1"(%m) {grid = array<i64: 4, 1>} : (tensor<4x2xi64>) -> tensor<4x1xi1> {
    shift.ring "Y" {temporal = array<i64: 1, 1>}
    shift.ring "A" {temporal = array<i64: 1, 1>}
  }
  func.return %y, %z : tensor<3x4x5xi1>, tensor<4x1xi1>
}
}
"""


def test_comparisons_keep_each_tensors_element_type():
    """A comparison reads f32 (or i64) partitions and writes i1 ones: every buffer has
    its own tensor's element type, through shift-to-device and on the chip."""
    from xdsl.context import Context

    from irc.runner import parse_module, run_function
    from irc.lowering.shift_to_device import ShiftToDevice
    from irc.passes.device_alloc import DeviceAlloc
    from irc.passes.rotation_align import RotationAlign

    module = parse_module(MIXED, "<mixed>")
    rng = np.random.default_rng(1)
    inputs = {"arg0": rng.standard_normal((3, 4, 5)).astype(np.float32),
              "arg1": rng.standard_normal((3, 4, 5)).astype(np.float32),
              "arg2": rng.integers(0, 3, (4, 2)).astype(np.int64)}
    at_shift = run_function(module.clone(), inputs)
    for stage in (RotationAlign(), ShiftToDevice(), DeviceAlloc(device="tiny8")):
        stage.apply(Context(), module)
    text = str(module)
    assert "!device.buffer<1x2x5xf32>" in text and "!device.buffer<1x2x5xi1>" in text
    assert "!device.buffer<1x1xi64>" in text
    at_device = run_function(module, inputs)
    want = [inputs["arg0"] > inputs["arg1"], (inputs["arg2"][:, 1:] == 1)]
    for results in (at_shift, at_device):
        for got, expected in zip(results.values(), want):
            np.testing.assert_array_equal(got, expected)
