"""Hypothesis strategies for tensor expressions and matching operand shapes."""

from hypothesis import strategies as st

from dialects.te_expr import (
    Access,
    AffineIndex,
    Binary,
    Call,
    Const,
    FUNCTION_ARITY,
    TensorExpr,
)

AXES = ["i", "j", "k", "l", "m"]
TENSORS = ["A", "B", "C", "D"]


@st.composite
def affine_indices(draw):
    count = draw(st.integers(1, 2))
    axes = draw(st.lists(st.sampled_from(AXES), min_size=count, max_size=count, unique=True))
    coeffs = [draw(st.sampled_from([1, 1, 2, 3, -1])) for _ in axes]
    constant = draw(st.sampled_from([0, 0, 1, 2, -1]))
    return AffineIndex(tuple(zip(axes, coeffs)), constant)


@st.composite
def accesses(draw, tensor=None):
    name = tensor or draw(st.sampled_from(TENSORS))
    rank = draw(st.integers(0, 3))
    return Access(name, tuple(draw(affine_indices()) for _ in range(rank)))


def bodies():
    leaves = st.one_of(
        accesses(),
        st.builds(Const, st.sampled_from([0.5, 2.0, 3.0, 1e-3, 10.0, 0.0])),
    )

    def extend(children):
        return st.one_of(
            st.builds(Binary, st.sampled_from(["+", "-", "*", "/"]), children, children),
            st.sampled_from(sorted(f for f, n in FUNCTION_ARITY.items() if n == 1)).flatmap(
                lambda f: st.builds(lambda a: Call(f, (a,)), children)
            ),
            st.sampled_from(sorted(f for f, n in FUNCTION_ARITY.items() if n == 2)).flatmap(
                lambda f: st.builds(lambda a, b: Call(f, (a, b)), children, children)
            ),
        )

    return st.recursive(leaves, extend, max_leaves=6)


@st.composite
def expressions(draw):
    """Syntactically valid expressions (not necessarily bindable to shapes)."""
    body = draw(bodies())
    out_axes = draw(st.lists(st.sampled_from(AXES), max_size=3, unique=True))
    output = Access("Y", tuple(AffineIndex(((a, 1),), 0) for a in out_axes))
    combiner = draw(st.sampled_from(["=", "+=", "max=", "min="]))
    bindings = tuple(
        (a, draw(st.integers(1, 9))) for a in draw(st.lists(st.sampled_from(AXES), max_size=2, unique=True))
    )
    return TensorExpr(output, combiner, body, bindings)
