"""Hypothesis strategies for tensor expressions and matching operand shapes."""

from hypothesis import strategies as st

from irc.dialects.te_expr import (
    Access,
    AffineIndex,
    Binary,
    COMPARISONS,
    Call,
    Const,
    FUNCTION_ARITY,
    IndirectIndex,
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
def indices(draw):
    """Mostly affine; sometimes an indirect index `I[...]` (a Gather)."""
    if draw(st.integers(0, 5)) == 0:
        rank = draw(st.integers(0, 2))
        return IndirectIndex(Access("I", tuple(draw(affine_indices()) for _ in range(rank))))
    return draw(affine_indices())


@st.composite
def accesses(draw, tensor=None):
    name = tensor or draw(st.sampled_from(TENSORS))
    rank = draw(st.integers(0, 3))
    return Access(name, tuple(draw(indices()) for _ in range(rank)))


def bodies():
    leaves = st.one_of(
        accesses(),
        st.builds(Const, st.sampled_from([0.5, 2.0, 3.0, 1e-3, 10.0, 0.0])),
    )

    def extend(children):
        return st.one_of(
            st.builds(
                Binary, st.sampled_from(["+", "-", "*", "/", *COMPARISONS]), children, children
            ),
            st.sampled_from(sorted(FUNCTION_ARITY)).flatmap(
                lambda f: st.lists(
                    children, min_size=FUNCTION_ARITY[f], max_size=FUNCTION_ARITY[f]
                ).map(lambda args: Call(f, tuple(args)))
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
