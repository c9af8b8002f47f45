"""The te -> planner adapter: kinds, dims, axis order, and SpecError for the rest."""

from dataclasses import dataclass

import pytest

from irc.dialects.te_expr import Access, AffineIndex, BoundExpr, TensorExpr, parse_expression
from irc.planner import SpecError, matmul_spec
from irc.plans.from_te import classify, op_spec_from_expr, reading_order
from irc.plans.roles import compute_roles


def bind(text, inputs, output):
    return parse_expression(text).bind(inputs, output)


@pytest.mark.parametrize(
    "text, inputs, output, kind",
    [
        ("C[m,n] += A[m,k] * B[k,n]", [(4, 8), (8, 6)], (4, 6), "matmul"),
        ("S[b,i,j] += Q[b,i,d] * K[b,d,j] * 0.125", [(2, 4, 3), (2, 3, 4)], (2, 4, 4), "matmul"),
        ("Y[n,f,h,w] += X[n,c,h+r,w+s] * W[f,c,r,s]", [(1, 2, 6, 6), (3, 2, 3, 3)], (1, 3, 4, 4), "conv"),
        ("Y[n,f,h,w] += X[n,c,2*h+r,2*w+s] * W[f,c,r,s]", [(1, 3, 9, 9), (4, 3, 3, 3)], (1, 4, 4, 4), "conv"),
        ("Y[n,c,h,w] max= X[n,c,2*h+r,2*w+s] where r in 2, s in 2", [(1, 2, 8, 8)], (1, 2, 4, 4), "pool"),
        ("S[i] += A[i,j]", [(4, 8)], (4,), "reduce"),
        ("S[i] max= A[i,j]", [(4, 8)], (4,), "reduce"),
        ("Y[i,j] = relu(X[i,j])", [(4, 8)], (4, 8), "unary"),
        ("Y[i,j] = X[i,j] * 2 + 1", [(4, 8)], (4, 8), "unary"),
        ("Y[i,j] = X[i,j] + B[j]", [(4, 8), (8,)], (4, 8), "elementwise"),
        ("P[h+1] = X[h]", [(4,)], (6,), "other"),
        ("D[i,j] += A[i,k] * B[k,j] * E[k,j]", [(2, 3), (3, 2), (3, 2)], (2, 2), "other"),
        ("D[i,j] += A[i,k] + B[k,j]", [(2, 3), (3, 2)], (2, 2), "other"),
    ],
)
def test_kind_is_read_off_the_structure(text, inputs, output, kind):
    bound = bind(text, inputs, output)
    assert classify(bound) == kind
    assert op_spec_from_expr(bound, 2).kind == kind


def test_matmul_matches_the_planner_spec_in_reading_order():
    bound = bind("C[m,n] += A[m,k] * B[k,n]", [(32, 5120), (5120, 15360)], (32, 15360))
    assert reading_order(bound) == ("m", "k", "n")
    assert op_spec_from_expr(bound, 2, reading_order(bound)) == matmul_spec(32, 5120, 15360)
    # default order: the expression's axes (output first), as rtensor.op's F_op uses
    assert op_spec_from_expr(bound, 2).axis_names == ("m", "n", "k")


def test_compound_dims_list_every_axis_of_the_index():
    bound = bind("Y[n,f,h,w] += X[n,c,h+r,w+s] * W[f,c,r,s]", [(1, 3, 6, 6), (4, 3, 3, 3)], (1, 4, 4, 4))
    assert op_spec_from_expr(bound, 4).tensor("X").dims == (("n",), ("c",), ("h", "r"), ("w", "s"))
    # a coefficient c lists its axis c times: "sum of spans - (listed - 1)" = c*(span-1) + ...
    bound = bind("Y[n,f,h,w] += X[n,c,2*h+r,2*w+s] * W[f,c,r,s]", [(1, 3, 9, 9), (4, 3, 3, 3)], (1, 4, 4, 4))
    spec = op_spec_from_expr(bound, 4)
    assert spec.tensor("X").dims == (("n",), ("c",), ("h", "h", "r"), ("w", "w", "s"))
    assert spec.reduction_axes == ("c", "r", "s")
    assert spec.dtype_bytes == 4


@pytest.mark.parametrize(
    "text, inputs, output, reason",
    [
        ("Y[4*i+j] = X[i,j]", [(3, 4)], (12,), "output dimension 0 of Y is indexed by '4\\*i\\+j'"),
        ("Y[h+r] = X[h] * W[r]", [(3,), (2,)], (4,), "combines the axes h \\(extent 3\\), r"),
        ("Y[i,j] = X[i,j] + X[j,i]", [(4, 4)], (4, 4), "tensor X is read with 2 different index patterns"),
    ],
)
def test_what_the_planner_cannot_describe_is_a_spec_error(text, inputs, output, reason):
    with pytest.raises(SpecError, match=reason):
        op_spec_from_expr(bind(text, inputs, output), 2)


@dataclass(frozen=True)
class Select:  # a node of a future expression language (ONNX import grows it)
    cond: object
    a: object
    b: object


@dataclass(frozen=True)
class Indirect:  # an index such as I[i] in E[I[i], j]
    tensor: str
    axis: str

    @property
    def axes(self):
        return (self.axis,)


def test_unknown_expression_nodes_are_spec_errors_not_crashes():
    read = Access("X", (AffineIndex((("i", 1),)),))
    expr = TensorExpr(Access("Y", (AffineIndex((("i", 1),)),)), "=", Select(read, read, read))
    bound = BoundExpr(expr, (("i", 4),), {"Y": (4,), "X": (4,)})
    with pytest.raises(SpecError, match="cannot describe a Select node"):
        op_spec_from_expr(bound, 2)


def test_unknown_index_kinds_are_spec_errors_not_crashes():
    gather = Access("E", (Indirect("I", "i"), AffineIndex((("j", 1),))))
    expr = TensorExpr(Access("Y", (AffineIndex((("i", 1),)), AffineIndex((("j", 1),)))), "=", gather)
    bound = BoundExpr(expr, (("i", 4), ("j", 3)), {"Y": (4, 3), "E": (10, 3)})
    with pytest.raises(SpecError, match="not an affine index"):
        op_spec_from_expr(bound, 2)


def test_axis_order_must_be_a_permutation():
    bound = bind("C[m,n] += A[m,k] * B[k,n]", [(4, 8), (8, 6)], (4, 6))
    with pytest.raises(SpecError, match="not a permutation"):
        op_spec_from_expr(bound, 2, ("m", "k"))


def test_a_gather_holds_its_table_whole_along_the_indexed_dim():
    """``Y[i,j] = E[I[i],j]``: partitioned over the index tensor's axes and the table's
    other dims, the table's rows held whole (``TensorSpec.whole``), priced as a gather;
    an index read anywhere but a gather's table read stays a spec error."""
    bound = bind("Y[i,j] = E[I[i],j]", [(10, 3), (4,)], (4, 3))
    spec = op_spec_from_expr(bound, 2, tensor_bytes={"I": 8})
    assert spec.kind == "gather"
    assert [(t.name, t.dims, t.whole) for t in spec.tensors] == [
        ("Y", (("i",), ("j",)), ()), ("E", (("j",),), (10,)), ("I", (("i",),), ())]
    assert compute_roles(spec) == {"index": (0,), "leading": (0,)}
    with pytest.raises(SpecError, match="dimension 0 of E is indexed by I\\[i\\], which is not an affine index"):
        op_spec_from_expr(bind("Y[i,j] = E[I[i],j] * 2", [(10, 3), (4,)], (4, 3)), 2)


@pytest.mark.parametrize(
    "text, inputs, output, dims, kind",
    [
        # a constant index is the slice at the constant: no dimension of the plan
        ("Y[i] = X[i,0]", [(4, 2)], (4,), {"Y": (("i",),), "X": (("i",),)}, "unary"),
        ("Y[b,m,n] += A[0,m,k] * B[k,n]", [(1, 4, 8), (8, 6)], (1, 4, 6),
         {"Y": (("b",), ("m",), ("n",)), "A": (("m",), ("k",)), "B": (("k",), ("n",))}, "matmul"),
        ("Y[a,b,c,d] = A[0,b,c,d] + B[0,0,0,d]", [(1, 2, 3, 4), (1, 1, 1, 4)], (1, 2, 3, 4),
         {"A": (("b",), ("c",), ("d",)), "B": (("d",),)}, "elementwise"),
        ("Y[0,0,o] = A[0,o]", [(1, 5)], (1, 1, 5), {"Y": (("o",),), "A": (("o",),)}, "unary"),
        ("Y[i] = X[2,i] + S[1,1]", [(3, 4), (2, 2)], (4,), {"X": (("i",),), "S": ()}, "elementwise"),
        # a row-major merged read lists the outer axis once per unit of its coefficient
        ("Y[0,o1,o2,o3] = A[0,o1,4*o2+o3]", [(1, 3, 8)], (1, 3, 2, 4),
         {"Y": (("o1",), ("o2",), ("o3",)), "A": (("o1",), ("o2",) * 4 + ("o3",))}, "other"),
        # an axis of extent 1 takes only the value 0: its coefficient does not matter
        ("Y[0,o1,4*i2+i3] = A[0,o1,i2,i3]", [(1, 3, 1, 4)], (1, 3, 4),
         {"Y": (("o1",), ("i2", "i3")), "A": (("o1",), ("i2",), ("i3",))}, "other"),
        # a window of a larger dimension (where-bound axis, shifted)
        ("Y[i] = X[i+2] where i in 3", [(8,)], (3,), {"X": (("i",),)}, "other"),
        ("Y[i] = X[i] where i in 3", [(8,)], (3,), {"X": (("i",),)}, "unary"),
    ],
)
def test_constant_indices_windows_and_merges_are_described(text, inputs, output, dims, kind):
    spec = op_spec_from_expr(bind(text, inputs, output), 2)
    for name, expected in dims.items():
        assert spec.tensor(name).dims == expected
    assert spec.kind == kind


def test_merged_read_memory_is_the_contiguous_range_it_covers():
    """The planner's resident size of a merged dim is c*(span-1) + span_inner, the block
    of A a core's partition covers, not the term-count formula of a unit-stride window."""
    from irc.planner import Plan, check_plan

    bound = bind("Y[o1,o2,o3] = A[o1,4*o2+o3]", [(3, 8)], (3, 2, 4))
    spec = op_spec_from_expr(bound, 2)
    # o2 whole (span 2), o3 split in 2 (span 2): A's partition covers 4*(2-1) + 2 = 6 elements
    plan = Plan(spec.axis_names, (1, 1, 2), {"Y": (1, 1, 1), "A": (1, 1, 1)})
    score = check_plan(spec, plan, "tiny4", "t10")
    assert score.memory.partitions["A"] == 2 * 3 * 6
    assert score.memory.partitions["Y"] == 2 * 3 * 2 * 2
