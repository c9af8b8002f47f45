"""Property and unit tests of the tensor-expression language (`dialects.te_expr`)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from irc.dialects.te_expr import ExprError, parse_expression
from tests.te_strategies import expressions


@given(expressions())
def test_print_parse_print_is_identity(expr):
    text = str(expr)
    try:
        parsed = parse_expression(text)
    except ExprError:
        # Only the shape-free semantic checks may reject a generated expression.
        with pytest.raises(ExprError):
            expr.check()
        return
    assert str(parsed) == text
    assert str(parse_expression(str(parsed))) == text


@pytest.mark.slow
@given(st.text(max_size=60))
def test_random_text_only_raises_expr_error(text):
    try:
        parse_expression(text)
    except ExprError as error:
        assert error.message
        if error.column is not None:
            assert 0 <= error.column <= len(text)


@pytest.mark.slow
@given(expressions(), st.data())
def test_mutated_text_only_raises_expr_error(expr, data):
    text = str(expr)
    position = data.draw(st.integers(0, len(text)))
    insert = data.draw(st.sampled_from(["[", "]", ",", "+", "*", "(", ")", "=", " ", "x", "1", "where", "-", "max="]))
    cut = data.draw(st.integers(0, 3))
    mutated = text[:position] + insert + text[position + cut :]
    try:
        parse_expression(mutated)
    except ExprError:
        pass


def test_parsed_form():
    expr = parse_expression("Y[n,f,h,w] += X[n,c,2*h+r,w+s] * W[f,c,r,s]")
    assert expr.inputs == ("X", "W")
    assert expr.axes == ("n", "f", "h", "w", "c", "r", "s")
    assert expr.reduction_axes == ("c", "r", "s")
    x_access = expr.accesses_of("X")[0]
    assert x_access.indices[2].terms == (("h", 2), ("r", 1))
    bound = expr.bind([(1, 3, 9, 6), (4, 3, 3, 3)], (1, 4, 4, 4))
    assert bound.extent == {"n": 1, "f": 4, "h": 4, "w": 4, "c": 3, "r": 3, "s": 3}


@pytest.mark.parametrize(
    "text, message",
    [
        ("C[m] = foo(A[m])", "unknown function 'foo'"),
        ("C[m] += A[m]", "combiner '+=' folds over reduction axes"),
        ("C[m] = A[m,k]", "combiner '=' cannot fold reduction axes (k)"),
        ("C[2*m] = A[m]", "output index '2*m' scales axis 'm'"),
        ("C[m] = A[m", "unexpected end of expression"),
        ("C[m] = max(A[m])", "function 'max' takes 2 argument(s), got 1"),
    ],
)
def test_rejections(text, message):
    with pytest.raises(ExprError, match=message.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*").replace("+", r"\+")):
        parse_expression(text)


def test_bind_rejections():
    expr = parse_expression("C[m,n] += A[m,k] * B[k,n]")
    with pytest.raises(ExprError, match="axis 'k' has extent 3 in A \\(dim 1\\) but 4 in B \\(dim 0\\)"):
        expr.bind([(2, 3), (4, 5)], (2, 5))
    with pytest.raises(ExprError, match="reads 2 tensor"):
        expr.bind([(2, 3)], (2, 5))
    pool = parse_expression("Y[h] max= X[2*h+r] where r in 3")
    with pytest.raises(ExprError, match=r"index '2\*h\+r' of X \(dim 0\) ranges over \[0, 8\]"):
        pool.bind([(8,)], (4,))
