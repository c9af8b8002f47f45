"""The parsed form of a tensor expression: its vocabulary, nodes, walks and text.

`irc.dialects.te_expr` parses text into these nodes and re-exports every name here;
they are plain, frozen Python data (no IR), so every part of irc may read them.
"""

from __future__ import annotations

from dataclasses import dataclass

COMBINERS = ("=", "+=", "max=", "min=")
"""Combiners; every one but ``=`` folds over the reduction axes."""

UNARY_FUNCTIONS = (
    "relu",
    "exp",
    "tanh",
    "gelu",
    "erf",
    "sqrt",
    "rsqrt",
    "neg",
    "sigmoid",
    "abs",
    "log",
)
BINARY_FUNCTIONS = ("max", "min", "pow", "mod", "fmod")
ROUNDING_FUNCTIONS = ("floor", "ceil", "round", "sign")
"""Float -> same float type: ``round`` rounds half to even (ONNX Round)."""
PREDICATE_FUNCTIONS = ("isnan", "isinf")
"""Any float -> i1."""
BOOLEAN_FUNCTIONS = {"not": 1, "and": 2, "or": 2, "xor": 2}
"""i1 operands -> i1."""
CONVERTING_FUNCTIONS = {"cast": 1, "select": 3}
"""``cast(x)`` converts x to the op's result element type (ONNX Cast: floats
truncate toward zero into integers, non-zero becomes true in i1); ``select(c, a, b)``
is `a` where `c` is non-zero, else `b` (ONNX Where)."""
FUNCTION_ARITY = {
    **{f: 1 for f in UNARY_FUNCTIONS + ROUNDING_FUNCTIONS + PREDICATE_FUNCTIONS},
    **{f: 2 for f in BINARY_FUNCTIONS},
    **BOOLEAN_FUNCTIONS,
    **CONVERTING_FUNCTIONS,
}
OPERATOR_ROLES: dict[str, tuple[str, ...]] = {
    "matmul": ("batch", "m", "k", "n"),
    "conv": ("batch", "in_channels", "out_channels", "spatial", "window"),
    "elementwise": (),
    "unary": (),
    "reduce": ("out",),
    "pool": ("channels", "spatial", "window"),
    "gather": ("index", "leading"),
    "other": (),
}
"""The operator kinds a cost model prices (``irc.cost.KINDS``) and the compute roles
each needs (tile extents by role: a matmul's batch, m, k and n; the others price by
the sub-task's volume alone, which needs no role)."""
COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
"""Comparison operators: operands of one element type, the result is i1 (0/1)."""


class ExprError(ValueError):
    """A malformed or inconsistent tensor expression.

    `column` is the 0-based offset in the expression text where the problem is,
    when it is known, so callers can point a diagnostic at it.
    """

    def __init__(self, message: str, column: int | None = None, culprit: str | None = None):
        super().__init__(message)
        self.message = message
        self.column = column
        self.culprit = culprit
        """Source text of the culprit, used to find a column when none is known."""


# ---------------------------------------------------------------------------
# Parsed form
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class AffineIndex:
    """``sum(coeff * axis) + constant``; terms keep source order, no zero coeffs."""

    terms: tuple[tuple[str, int], ...]
    constant: int = 0

    @property
    def axes(self) -> tuple[str, ...]:
        return tuple(axis for axis, _ in self.terms)

    @property
    def simple_axis(self) -> str | None:
        """The axis when the index is exactly one axis (``k``), else None."""
        if len(self.terms) == 1 and self.terms[0][1] == 1 and self.constant == 0:
            return self.terms[0][0]
        return None

    def value_range(self, extents: dict[str, int]) -> tuple[int, int]:
        low = high = self.constant
        for axis, coeff in self.terms:
            span = coeff * (extents[axis] - 1)
            low += min(0, span)
            high += max(0, span)
        return low, high

    def __str__(self) -> str:
        parts: list[str] = []
        for axis, coeff in self.terms:
            magnitude = abs(coeff)
            text = axis if magnitude == 1 else f"{magnitude}*{axis}"
            if not parts:
                parts.append(text if coeff > 0 else f"-{text}")
            else:
                parts.append(("+" if coeff > 0 else "-") + text)
        if self.constant or not parts:
            if not parts:
                parts.append(str(self.constant))
            else:
                parts.append(("+" if self.constant > 0 else "-") + str(abs(self.constant)))
        return "".join(parts)


@dataclass(frozen=True)
class IndirectIndex:
    """An index read from another tensor: ``I[i]`` in ``E[I[i],j]`` (ONNX Gather).

    The index tensor must have an integer element type and is itself read with
    affine indices; its value must lie in the indexed dimension at run time (the
    evaluator checks). It is not affine, so it fixes no axis extent and has no
    static range; it has no `terms`/`constant` so affine-only consumers notice it.
    """

    access: Access

    @property
    def axes(self) -> tuple[str, ...]:
        return self.access.axes

    @property
    def simple_axis(self) -> None:
        return None

    def __str__(self) -> str:
        return str(self.access)


Index = AffineIndex | IndirectIndex


@dataclass(frozen=True)
class Access:
    """``tensor[index, ...]``: a read in the body or the output write."""

    tensor: str
    indices: tuple[Index, ...]

    @property
    def axes(self) -> tuple[str, ...]:
        """Axes in first-appearance order over all indices."""
        return tuple(dict.fromkeys(a for index in self.indices for a in index.axes))

    def __str__(self) -> str:
        return expression_text(self)


@dataclass(frozen=True)
class Const:
    value: float

    def __str__(self) -> str:
        if float(self.value).is_integer() and abs(self.value) < 1e15:
            return str(int(self.value))
        return repr(float(self.value))


@dataclass(frozen=True)
class Call:
    function: str
    args: tuple[Expr, ...]

    def __str__(self) -> str:
        return expression_text(self)


@dataclass(frozen=True)
class Binary:
    op: str  # one of + - * / or a comparison (< <= > >= == !=)
    lhs: Expr
    rhs: Expr

    def __str__(self) -> str:
        return expression_text(self)


Expr = Access | Const | Call | Binary

_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, **{op: 0 for op in COMPARISONS}}


def children(node) -> tuple:
    """The sub-expressions of a body node, left to right: a call's arguments, an
    operator's operands, the reads of an access's indirect indices."""
    if isinstance(node, Binary):
        return (node.lhs, node.rhs)
    if isinstance(node, Call):
        return node.args
    if isinstance(node, Access):
        return tuple(index.access for index in node.indices if isinstance(index, IndirectIndex))
    return ()


def fold(expr: Expr, visit):
    """``visit(node, values)`` for every node, children first, where ``values`` are
    what ``visit`` returned for ``children(node)``; returns the root's value. Iterative:
    no depth of expression exhausts Python's stack (every consumer of deep bodies
    should fold or `walk_nodes` rather than recurse)."""
    values: list = []
    stack: list[tuple[object, bool]] = [(expr, False)]
    while stack:
        node, ready = stack.pop()
        kids = children(node)
        if ready:
            count = len(kids)
            args = values[len(values) - count:] if count else []
            if count:
                del values[len(values) - count:]
            values.append(visit(node, args))
        else:
            stack.append((node, True))
            stack.extend((kid, False) for kid in reversed(kids))
    return values[0]


def _node_text(node, texts: list[str]) -> str:
    # Parenthesise only where precedence or left-associativity needs it, so that
    # printing is a fixed point of parse -> print.
    if isinstance(node, Binary):
        operands = []
        for is_rhs, (operand, text) in enumerate(zip((node.lhs, node.rhs), texts)):
            if isinstance(operand, Binary):
                mine, parent = _PRECEDENCE[operand.op], _PRECEDENCE[node.op]
                if mine < parent or (is_rhs and mine == parent):
                    text = f"({text})"
            elif isinstance(operand, Const) and operand.value < 0:
                text = f"({text})"
            operands.append(text)
        return f"{operands[0]} {node.op} {operands[1]}"
    if isinstance(node, Call):
        return f"{node.function}({', '.join(texts)})"
    if isinstance(node, Access):
        inner = iter(texts)
        indices = [next(inner) if isinstance(i, IndirectIndex) else str(i) for i in node.indices]
        return f"{node.tensor}[{','.join(indices)}]"
    return str(node)


def expression_text(expr: Expr) -> str:
    """The text of a body (iteratively, whatever its depth)."""
    return fold(expr, _node_text)


def expression_depth(expr: Expr) -> int:
    """Levels of the body's tree (a leaf is 1; ``a + b + c`` is 3)."""
    return fold(expr, lambda node, depths: 1 + max(depths, default=0))


def walk_nodes(expr: Expr):
    """Yield every node of a body, parents before children, left to right; an access
    comes before the accesses of its indirect indices. Iterative."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))


def walk_accesses(expr: Expr):
    """Yield every `Access` of a body, left to right; an access comes before the
    accesses of its indirect indices (``E[I[i],j]`` yields E, then I)."""
    return (node for node in walk_nodes(expr) if isinstance(node, Access))
