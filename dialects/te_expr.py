"""The tensor-expression language of the `te` dialect and its parsed form.

A tensor expression states one operator as a loop nest over named axes (T10 §3.2,
seed 003 §3.2), e.g. ``C[m,n] += A[m,k] * B[k,n]``: every point of the iteration
space evaluates the scalar body and combines it into the output element the output
access names. Axes that index the output are *spatial*; the others are *reduction*
axes, whose values the combiner (``+=`` sums, ``max=``/``min=`` keep the extreme)
folds together. ``=`` has no reduction axes. Output elements that no iteration point
writes keep the combiner's identity (0 for ``=`` and ``+=``), which is how padding is
stated (``P[h+1] = X[h]``).

`parse_expression` turns text into a `TensorExpr` (plain, frozen Python data) and
`TensorExpr.bind` infers axis extents from operand and result shapes, giving the
`BoundExpr` that passes, the planner and the interpreter use.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path

from lark import Lark, Token, v_args
from lark.visitors import Transformer_NonRecursive
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedInput

# The parsed form lives in te_tree; its names are re-exported here, where irc imports them.
from irc.dialects.te_tree import (  # noqa: F401
    BINARY_FUNCTIONS,
    BOOLEAN_FUNCTIONS,
    COMBINERS,
    COMPARISONS,
    CONVERTING_FUNCTIONS,
    FUNCTION_ARITY,
    OPERATOR_ROLES,
    PREDICATE_FUNCTIONS,
    ROUNDING_FUNCTIONS,
    UNARY_FUNCTIONS,
    Access,
    AffineIndex,
    Binary,
    Call,
    Const,
    Expr,
    ExprError,
    Index,
    IndirectIndex,
    children,
    expression_depth,
    expression_text,
    fold,
    walk_accesses,
    walk_nodes,
)


@dataclass(frozen=True)
class TensorExpr:
    """A parsed tensor expression, before extents are known."""

    output: Access
    combiner: str
    body: Expr
    bindings: tuple[tuple[str, int], ...] = ()
    """Extents fixed by ``where axis in N``. A dimension indexed by a bound axis
    alone may be larger than N: the access covers its first N elements (a slice,
    ``Y[i] = X[i] where i in 2`` reads X[0:2])."""

    @property
    def inputs(self) -> tuple[str, ...]:
        """Input tensor names in order of first appearance: the operand order."""
        return tuple(dict.fromkeys(a.tensor for a in walk_accesses(self.body)))

    @property
    def axes(self) -> tuple[str, ...]:
        """All axes: output axes first, then reduction axes in appearance order."""
        names = list(self.output.axes)
        for access in walk_accesses(self.body):
            names.extend(access.axes)
        names.extend(axis for axis, _ in self.bindings)
        return tuple(dict.fromkeys(names))

    @property
    def reduction_axes(self) -> tuple[str, ...]:
        spatial = set(self.output.axes)
        return tuple(a for a in self.axes if a not in spatial)

    def accesses_of(self, tensor: str) -> tuple[Access, ...]:
        return tuple(a for a in walk_accesses(self.body) if a.tensor == tensor)

    def __str__(self) -> str:
        text = f"{self.output} {self.combiner} {expression_text(self.body)}"
        if self.bindings:
            text += " where " + ", ".join(f"{a} in {n}" for a, n in self.bindings)
        return text

    def bind(
        self, input_shapes: list[tuple[int, ...]], output_shape: tuple[int, ...]
    ) -> BoundExpr:
        """Infer every axis extent from the operand and result shapes.

        Raises `ExprError` naming the culprit for a rank mismatch, an axis whose
        extents disagree, an axis with no extent, or an affine index that leaves
        its tensor's range. Cached per expression object by shapes (an op's verifier
        and every pass bind the same expression to the same shapes; hashing the
        expression itself would walk its whole tree): the result is shared, never
        mutated.
        """
        key = (tuple(tuple(s) for s in input_shapes), tuple(output_shape))
        cache = self.__dict__.get("_bound_by_shapes")
        if cache is None:
            cache = {}
            object.__setattr__(self, "_bound_by_shapes", cache)
        bound = cache.get(key)
        if bound is None:
            bound = cache[key] = self._bind(*key)
        return bound

    def _bind(
        self, input_shapes: tuple[tuple[int, ...], ...], output_shape: tuple[int, ...]
    ) -> BoundExpr:
        inputs = self.inputs
        if len(input_shapes) != len(inputs):
            names = ", ".join(inputs) if inputs else "no tensors"
            raise ExprError(
                f"expression reads {len(inputs)} tensor(s) ({names}) but the op has "
                f"{len(input_shapes)} operand(s)"
            )
        shapes = {self.output.tensor: tuple(output_shape)}
        for name, shape in zip(inputs, input_shapes):
            shapes[name] = tuple(shape)
        if self.output.tensor in inputs:
            raise ExprError(
                f"output tensor '{self.output.tensor}' is also read by the body"
            )
        all_accesses = (self.output, *walk_accesses(self.body))
        extents: dict[str, int] = {}
        origin: dict[str, str] = {}
        bound_axes = {axis for axis, _ in self.bindings}
        for axis, extent in self.bindings:
            if extent <= 0:
                raise ExprError(f"axis '{axis}' is bound to a non-positive extent {extent}")
            if axis in extents and extents[axis] != extent:
                raise ExprError(f"axis '{axis}' is bound twice ({extents[axis]} and {extent})")
            extents[axis], origin[axis] = extent, "the where clause"
        # The output's shape bounds every output axis and a where clause its axis: a
        # read of such an axis may take a window of a larger dimension (a slice, as
        # ELK/T10 write ``O[n] = A[n+0]``); other axes take the extent they index.
        bounded = set(bound_axes)
        for access in all_accesses:
            shape = shapes[access.tensor]
            if len(access.indices) != len(shape):
                raise ExprError(
                    f"tensor '{access.tensor}' is indexed with {len(access.indices)} "
                    f"indices but has rank {len(shape)}"
                )
            for dim, index in enumerate(access.indices):
                axis = index.simple_axis
                if axis is None:
                    continue
                where = f"{access.tensor} (dim {dim})"
                if axis in bounded and shape[dim] >= extents[axis]:
                    continue
                if axis in bounded:
                    raise ExprError(
                        f"{access.tensor}[...] reads axis '{axis}' over [0, {extents[axis] - 1}] "
                        f"({origin[axis]}) past the end of {where}, which has size {shape[dim]}"
                    )
                if axis in extents and extents[axis] != shape[dim]:
                    raise ExprError(
                        f"axis '{axis}' has extent {extents[axis]} in {origin[axis]} "
                        f"but {shape[dim]} in {where}"
                    )
                extents.setdefault(axis, shape[dim])
                origin.setdefault(axis, where)
                if access is self.output:
                    bounded.add(axis)
        for axis in self.axes:
            if axis not in extents:
                raise ExprError(
                    f"the extent of axis '{axis}' cannot be inferred; "
                    f"bind it with 'where {axis} in N'"
                )
        for access in all_accesses:
            shape = shapes[access.tensor]
            for dim, index in enumerate(access.indices):
                if index.simple_axis is not None or isinstance(index, IndirectIndex):
                    continue  # indirect indices are checked when evaluated
                low, high = index.value_range(extents)
                if low < 0 or high >= shape[dim]:
                    raise ExprError(
                        f"index '{index}' of {access.tensor} (dim {dim}) ranges over "
                        f"[{low}, {high}] but the dimension has size {shape[dim]}"
                    )
        for index in self.output.indices:
            _check_merge(index, extents)
        return BoundExpr(self, tuple((a, extents[a]) for a in self.axes), shapes)

    def bind_extents(self, given: dict[str, int]) -> BoundExpr:
        """The expression bound to axis extents instead of tensor shapes (as the T10
        benchmark states an operator): each tensor dimension is as large as its index
        reaches. Raises `ExprError` naming the axis or the index at fault."""
        extents = dict(self.bindings)
        for axis, extent in given.items():
            if axis not in self.axes:
                raise ExprError(f"axis '{axis}' does not occur in the expression (its axes: {', '.join(self.axes)})")
            if axis in extents and extents[axis] != extent:
                raise ExprError(f"axis '{axis}' is {extent} but the expression binds it to {extents[axis]}")
            extents[axis] = extent
        missing = [axis for axis in self.axes if axis not in extents]
        if missing:
            raise ExprError(
                f"no extent for axis {', '.join(repr(a) for a in missing)}; give every axis ({', '.join(self.axes)})"
            )
        shapes: dict[str, list[int]] = {}
        for access in (self.output, *walk_accesses(self.body)):
            dims = []
            for dim, index in enumerate(access.indices):
                if not isinstance(index, AffineIndex):
                    raise ExprError(f"the index {index} of {access.tensor} reads another tensor; its extent is unknown")
                low, high = index.value_range(extents)
                if low < 0:
                    raise ExprError(
                        f"index '{index}' of {access.tensor} (dim {dim}) reaches {low}; "
                        f"tensor shapes cannot be derived from the axis extents"
                    )
                dims.append(high + 1)
            previous = shapes.setdefault(access.tensor, dims)
            shapes[access.tensor] = [max(a, b) for a, b in zip(previous, dims)]
        return self.bind([tuple(shapes[name]) for name in self.inputs], tuple(shapes[self.output.tensor]))

    def check(self) -> None:
        """Checks that need no shapes: functions, combiner vs reduction axes."""
        for node in walk_nodes(self.body):
            if isinstance(node, Call):
                arity = FUNCTION_ARITY.get(node.function)
                if arity is None:
                    known = ", ".join(sorted(FUNCTION_ARITY))
                    raise ExprError(
                        f"unknown function '{node.function}' (known: {known})",
                        culprit=f"{node.function}(",
                    )
                if arity != len(node.args):
                    raise ExprError(
                        f"function '{node.function}' takes {arity} argument(s), "
                        f"got {len(node.args)}",
                        culprit=f"{node.function}(",
                    )
        reductions = self.reduction_axes
        if self.combiner != "=" and not reductions:
            raise ExprError(
                f"combiner '{self.combiner}' folds over reduction axes but the "
                f"expression has none; use '='"
            )
        if self.combiner == "=" and reductions:
            raise ExprError(
                f"combiner '=' cannot fold reduction axes ({', '.join(reductions)}); "
                f"use '+=', 'max=' or 'min='"
            )
        for index in self.output.indices:
            if isinstance(index, IndirectIndex):
                raise ExprError(
                    f"output index '{index}' reads a tensor; output indices must be affine",
                    culprit=str(index),
                )
            for axis, coeff in index.terms:
                if coeff != 1 and (len(index.terms) < 2 or coeff < 1):
                    raise ExprError(
                        f"output index '{index}' scales axis '{axis}'; output indices "
                        f"may only shift axes or merge them row-major (4*i+j)"
                    )
        bound = [axis for axis, _ in self.bindings]
        if len(set(bound)) != len(bound):
            raise ExprError("an axis is bound twice in the where clause")


def gather_parts(expr: TensorExpr) -> tuple[Access, Access] | None:
    """``(table read, index read)`` when ``expr`` is a gather ``Y[...] = E[..., I[...], ...]``:
    ``=`` of one read of a table some of whose dims are indexed by the values of one
    other tensor (read with affine indices, last among the inputs); else None."""
    body = expr.body
    if expr.combiner != "=" or not isinstance(body, Access) or len(expr.inputs) != 2:
        return None
    indirect = [i for i in body.indices if isinstance(i, IndirectIndex)]
    if not indirect:
        return None
    inner = {i.access.tensor for i in indirect}
    if len(inner) != 1 or inner == {body.tensor} or expr.inputs[-1] not in inner:
        return None
    if not all(isinstance(j, AffineIndex) for i in indirect for j in i.access.indices):
        return None
    if any(i.access != indirect[0].access for i in indirect):
        return None
    return body, indirect[0].access


def product_factors(expr: TensorExpr) -> list | None:
    """The factors (reads and constants), left to right, of a body that is a product of
    them only; None otherwise."""
    factors, stack = [], [expr.body]
    while stack:
        node = stack.pop()
        if isinstance(node, Binary) and node.op == "*":
            stack += [node.rhs, node.lhs]
        elif isinstance(node, (Access, Const)):
            factors.append(node)
        else:
            return None
    return factors


def product_reads(expr: TensorExpr):
    """(scale, [Access, Access]) when the body is c * X[...] * Y[...] with plain indices:
    each index one axis or a constant (``A[0,m,k]``, a slice of a size-1 batch): the
    contractions a systolic array computes (`device.mma`); None otherwise."""
    factors = product_factors(expr)
    if factors is None:
        return None
    reads = [f for f in factors if isinstance(f, Access)]
    plain = lambda i: i.simple_axis is not None or (isinstance(i, AffineIndex) and not i.terms)  # noqa: E731
    if len(reads) != 2 or not all(plain(i) for r in reads for i in r.indices):
        return None
    if not all(plain(i) for i in expr.output.indices):
        return None
    scale = math.prod(f.value for f in factors if isinstance(f, Const))
    return scale, reads


def _check_merge(index: AffineIndex, extents: dict[str, int]) -> None:
    """An output index that scales axes must merge them row-major: ordered by
    coefficient, the first is 1 and each next is the previous times the previous
    axis's extent (``4*i+j`` with j in 4), so every output element is written once."""
    if all(coeff == 1 for _, coeff in index.terms):
        return  # a shift (or a sum of axes, as in a transposed convolution)
    # An axis of extent 1 only takes the value 0: its coefficient does not matter.
    ordered = sorted((t for t in index.terms if extents[t[0]] > 1), key=lambda term: term[1])
    expected = 1
    for axis, coeff in ordered:
        if coeff != expected:
            raise ExprError(
                f"output index '{index}' is not a row-major merge: axis '{axis}' has "
                f"coefficient {coeff} where {expected} is needed"
            )
        expected = coeff * extents[axis]


FLOAT_FUNCTIONS = frozenset(
    ("exp", "log", "tanh", "gelu", "erf", "sqrt", "rsqrt", "sigmoid", "floor", "ceil", "round")
)
"""Functions that only make sense on floats (relu, abs, neg, sign, max, min also
take integers)."""


def check_element_types(
    expr: TensorExpr,
    tensor_types: dict[str, object],
    result_type: object,
    bool_type: object,
    is_integer,
    is_float,
    constant_range=None,
) -> None:
    """Check the element-type rule of a tensor expression; raise `ExprError`.

    Types are opaque values compared with ``==`` (the dialect passes xDSL types).
    The rule: every operand of an arithmetic operator or of ``max``/``min``/``mod``
    has one element type, which is also the operator's type; the body's type is the
    result's. Where the expression converts, types may differ: a comparison's
    operands share a type and it yields i1; ``and``/``or``/``xor``/``not`` take and
    yield i1; ``isnan``/``isinf`` take a float and yield i1; ``select(c, a, b)``
    takes any `c`; ``cast(x)`` takes any `x` and yields the result type; the
    exponent of ``pow`` may have any numeric type; an indirect index reads an
    integer tensor. Constants take the type their context expects, and must lie in
    its range: ``constant_range(type)`` gives ``(low, high)`` or None (unbounded); in
    an integer type (i1 included) they must be integers.
    """

    rule = _ElementTypeRule(tensor_types, result_type, bool_type, is_integer, is_float, constant_range)
    rule.visit(expr.body, result_type, "the result")


def _fail(message, culprit=None):
    raise ExprError(f"element type mismatch: {message}", culprit=culprit)


@dataclass
class _ElementTypeRule:
    """`check_element_types`'s walk: each node's type given the type its context expects."""

    tensor_types: dict[str, object]
    result_type: object
    bool_type: object
    is_integer: object
    is_float: object
    constant_range: object

    def visit(self, node, expected, context):
        """The type of `node`, or None for a constant-only subtree; `expected` (or None)
        is the type `context` (its description, for messages) needs."""
        return self._rule(node)(node, expected, context)

    def _rule(self, node):
        """The method that types `node`. The methods recurse through ``self._rule(child)(...)``,
        not `visit`, so that a level of the body takes one Python frame (`MAX_DEPTH`)."""
        if isinstance(node, Const):
            return self.constant
        if isinstance(node, Access):
            return self.access
        if isinstance(node, Binary):
            return self.binary
        if node.function in BOOLEAN_FUNCTIONS or node.function in PREDICATE_FUNCTIONS:
            return self.logic
        return self.call

    def constant(self, node, expected, context):
        """A constant takes the expected type, and must lie in its range."""
        bounds = (self.constant_range(expected)
                  if self.constant_range is not None and expected is not None else None)
        if bounds is not None and not bounds[0] <= node.value <= bounds[1]:
            raise ExprError(
                f"the constant {node} is beyond the range of {expected} ([{_bound(bounds[0])}, "
                f"{_bound(bounds[1])}])", culprit=str(node))
        if (bounds is not None and (expected == self.bool_type or self.is_integer(expected))
                and not float(node.value).is_integer()):  # no silent truncation
            raise ExprError(
                f"the constant {node} is not an integer but takes the integer type {expected} here "
                f"(it would be truncated); write an integer, or compute in a float type", culprit=str(node))
        return expected

    def access(self, node, expected, context):
        """A read has its tensor's type; its indirect indices read integers."""
        for index in node.indices:
            if isinstance(index, IndirectIndex):
                index_type = self._rule(index.access)(index.access, None, "")
                if not self.is_integer(index_type):
                    _fail(
                        f"index tensor {index.access.tensor} is {index_type} but "
                        f"indirect indices must be integers",
                        str(index.access),
                    )
        type_ = self.tensor_types[node.tensor]
        if expected is not None and type_ != expected:
            _fail(f"{node.tensor} is {type_} but {context} is {expected}", str(node))
        return type_

    def binary(self, node, expected, context):
        """Operands share a type: the operator's, or (a comparison) it yields i1."""
        if node.op in COMPARISONS:
            if expected is not None and expected != self.bool_type:
                _fail(f"'{node.op}' yields {self.bool_type} but {context} is {expected}")
            lhs = self._rule(node.lhs)(node.lhs, None, "")
            rhs = self._rule(node.rhs)(node.rhs, lhs, f"the other operand of '{node.op}'")
            if lhs is None and rhs is not None:  # a constant compared with a tensor
                self._rule(node.lhs)(node.lhs, rhs, f"the other operand of '{node.op}'")
            return self.bool_type
        lhs = self._rule(node.lhs)(node.lhs, expected, context)
        if expected is None and lhs is not None:
            expected, context = lhs, f"the other operand of '{node.op}'"
        rhs = self._rule(node.rhs)(node.rhs, expected, context)
        if lhs is None and rhs is not None:  # constants before the first tensor
            self._rule(node.lhs)(node.lhs, rhs, f"the other operand of '{node.op}'")
        return lhs if lhs is not None else rhs

    def call(self, node, expected, context):
        """A function's type: the result's for ``cast``, else its (shared) operands' type."""
        function = node.function
        if function == "cast":
            if self._rule(node.args[0])(node.args[0], None, "") is None:  # a constant, converted to the result type
                self._rule(node.args[0])(node.args[0], self.result_type, "the result of 'cast'")
            if expected is not None and expected != self.result_type:
                _fail(f"'cast' yields {self.result_type} but {context} is {expected}")
            return self.result_type
        if function == "select":
            self._rule(node.args[0])(node.args[0], None, "")
            args = node.args[1:]
        elif function == "pow":
            self._rule(node.args[1])(node.args[1], None, "")
            args = node.args[:1]
        else:
            args = node.args
        type_ = None
        for position, arg in enumerate(args):
            arg_type = self._rule(arg)(arg, expected, context)
            if expected is None and arg_type is not None:
                expected, context = arg_type, f"the other operand of '{function}'"
                for earlier in args[:position]:  # constants before the first tensor
                    self._rule(earlier)(earlier, expected, context)
            type_ = type_ or arg_type
        if function in FLOAT_FUNCTIONS and type_ is not None and not self.is_float(type_):
            _fail(f"'{function}' takes a float but its operand is {type_}")
        return type_

    def logic(self, node, expected, context):
        """``and``/``or``/``xor``/``not`` take i1, ``isnan``/``isinf`` a float; all yield i1."""
        function = node.function
        if expected is not None and expected != self.bool_type:
            _fail(f"'{function}' yields {self.bool_type} but {context} is {expected}")
        for arg in node.args:
            if function in BOOLEAN_FUNCTIONS:
                self._rule(arg)(arg, self.bool_type, f"an operand of '{function}'")
            else:
                arg_type = self._rule(arg)(arg, None, "")
                if arg_type is not None and not self.is_float(arg_type):
                    _fail(f"'{function}' takes a float but its operand is {arg_type}")
        return self.bool_type


def _bound(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else f"{value:.8g}"


@dataclass(frozen=True)
class BoundExpr:
    """A `TensorExpr` with every axis extent known."""

    expr: TensorExpr
    extents: tuple[tuple[str, int], ...]
    shapes: dict[str, tuple[int, ...]] = field(compare=False)

    @property
    def extent(self) -> dict[str, int]:
        return dict(self.extents)

    @property
    def reduction_axes(self) -> tuple[str, ...]:
        return self.expr.reduction_axes

    @property
    def iteration_points(self) -> int:
        return math.prod(e for _, e in self.extents)


# ---------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------


@cache
def _parser() -> Lark:
    grammar = (Path(__file__).with_name("te.lark")).read_text()
    return Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=True)


@v_args(inline=True)
class _ToTensorExpr(Transformer_NonRecursive):
    def statement(self, output, combiner, body, bindings=None):
        return TensorExpr(output, str(combiner), body, tuple(bindings or ()))

    def where_clause(self, *bindings):
        return list(bindings)

    def binding(self, name, extent):
        return (str(name), int(extent))

    def access(self, tensor, *indices):
        if indices == (None,):
            indices = ()
        return Access(str(tensor), tuple(indices))

    def index(self, first, *rest):
        terms: dict[str, int] = {}
        constant = 0

        def add(term, sign):
            nonlocal constant
            axis, coeff = term
            if axis is None:
                constant += sign * coeff
            else:
                terms[axis] = terms.get(axis, 0) + sign * coeff

        add(first, 1)
        for op, term in zip(rest[::2], rest[1::2]):
            add(term, 1 if op == "+" else -1)
        return AffineIndex(tuple((a, c) for a, c in terms.items() if c != 0), constant)

    def indirect_index(self, access):
        return IndirectIndex(access)

    def signed_term(self, sign, term):
        axis, coeff = term
        return (axis, -coeff if sign is not None else coeff)

    def axis_term(self, name):
        return (str(name), 1)

    def scaled_axis_term(self, coeff, name):
        return (str(name), int(coeff))

    def axis_scaled_term(self, name, coeff):
        return (str(name), int(coeff))

    def const_term(self, value):
        return (None, int(value))

    def binary(self, lhs, op, rhs):
        return Binary(str(op), lhs, rhs)

    def negate(self, _sign, operand):
        if isinstance(operand, Const):
            return Const(-operand.value)
        return Call("neg", (operand,))

    def number(self, token):
        return Const(float(token))

    def call(self, name, *args):
        return Call(str(name), tuple(args))


MAX_DEPTH = 500
"""Deepest tree a body may have (``a + b + ... `` of n terms is n deep, ``relu(relu(x))``
3). Parsing, printing, walking and evaluating bodies are iterative; what still recurses
on a body (structural equality and hashing of the parsed form, the element-type rule)
takes one Python frame per level, which this bound keeps well inside Python's limit."""
MAX_LENGTH = 100_000
"""Longest expression text irc parses (a longer one is many ops' worth)."""
MAX_INDIRECTION = 8
"""Deepest nesting of indirect indices (``E[I[J[k]]]`` is 2)."""


EXACT_INTEGERS = 2**53
"""Numbers in a body are f64 values: integers are exact up to this magnitude."""


def _check_number(token: Token) -> None:
    """A number of the body is a finite f64 and, written as an integer, exactly that
    integer (``1e400`` would be inf, ``9007199254740993`` would round)."""
    value = float(token)
    column = token.column - 1 if token.column is not None else None
    if not math.isfinite(value):
        raise ExprError(f"the number {_shown_number(token)} is beyond the range of f64", column)
    if token.isdigit() and int(token) != int(value):
        raise ExprError(f"the integer {_shown_number(token)} is not exact as a te number (an f64: integers are "
                        f"exact up to 2**53); read it from a tensor", column)


def _shown_number(token: str) -> str:
    return token if len(token) <= 40 else f"{token[:20]}...{token[-10:]} ({len(token)} digits)"


def parse_expression(text: str) -> TensorExpr:
    """Parse and check the shape-free rules of a tensor expression.

    Raises `ExprError` with the column of the problem when the text does not parse.
    The parsed form is immutable, so a text parsed before is answered from a bounded
    cache (a model's identical layers repeat their expressions; errors are not cached).
    """
    return _parse_cached(text)


@lru_cache(maxsize=4096)
def _parse_cached(text: str) -> TensorExpr:
    if len(text) > MAX_LENGTH:
        raise ExprError(f"the expression is {len(text)} characters long; irc takes at most {MAX_LENGTH}: "
                        f"split it into several ops")
    depth = 0
    for column, character in enumerate(text):
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(character, 0)
        if depth > MAX_DEPTH:  # cheap: no need to parse it to know it is too deep
            raise ExprError(f"the expression nests brackets more than {MAX_DEPTH} deep", column)
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as error:
        column = max(error.column - 1, 0) if error.column not in (None, -1) else None
        if isinstance(error, UnexpectedCharacters):
            what = f"unexpected character {text[error.pos_in_stream]!r}"
        elif getattr(error, "token", None) is not None and error.token.type == "$END":
            what = "unexpected end of expression"
            column = len(text)
        else:
            token = getattr(error, "token", None)
            what = f"unexpected {str(token)!r}" if token is not None else "syntax error"
        raise ExprError(f"malformed tensor expression: {what}", column) from None
    except LarkError as error:  # pragma: no cover - lark internal
        raise ExprError(f"malformed tensor expression: {error}") from None
    for subtree in tree.iter_subtrees():  # iterative, as bodies may be deep
        for token in subtree.children:
            if isinstance(token, Token) and token.type == "NUMBER":
                _check_number(token)
    expr = _ToTensorExpr().transform(tree)
    depth = expression_depth(expr.body)
    if depth > MAX_DEPTH:
        raise ExprError(
            f"the expression's body is {depth} levels deep (a chain of n operators is n deep); irc takes "
            f"at most {MAX_DEPTH}: split it into several ops"
        )
    for access in (expr.output, *walk_accesses(expr.body)):
        indirection = fold(access, lambda node, inner: 1 + max(inner, default=-1))
        if indirection > MAX_INDIRECTION:
            raise ExprError(f"indirect indices nest {indirection} deep; irc takes at most {MAX_INDIRECTION}")
    try:
        expr.check()
    except ExprError as error:
        if error.column is None and error.culprit and error.culprit in text:
            error.column = text.index(error.culprit)
        raise
    return expr


__all__ = [
    "Access",
    "AffineIndex",
    "Binary",
    "BoundExpr",
    "Call",
    "Const",
    "COMPARISONS",
    "Expr",
    "ExprError",
    "IndirectIndex",
    "check_element_types",
    "gather_parts",
    "TensorExpr",
    "children",
    "expression_depth",
    "expression_text",
    "fold",
    "parse_expression",
    "walk_accesses",
    "walk_nodes",
]
