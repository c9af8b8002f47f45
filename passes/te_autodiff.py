"""``te-autodiff``: append the backward pass of a `te` function (IGO §2.1, Eq. 1-2).

A forward function whose last result is a scalar loss (rank 0), or that takes explicit
output gradients (arguments marked ``irc.grad_of = i`` hold the gradient of result
``i``), gets the `te` ops of its backward pass appended and returns, after its own
results, the gradient of every argument it is differentiated with respect to (the
arguments marked ``irc.weight``, else every floating-point argument), each named
``d<name>``. Reverse mode over the function: each op's result gradient dY is the sum
of its consumers' contributions, and the op's gradient rule turns dY into the
gradients of its operands.

A gradient rule is looked up by what the op's tensor expression does (`RULES`, first
match wins; a plug-in adds rules through its ``IrcUniverse(gradient_rules=...)``):

* an indirect read (``E[I[i],j]``, a gather) scatters dY into the table (ONNX
  ScatterElements with ``reduction = add``, a `te.opaque` kernel);
* every other expression is differentiated from its body (`body_gradients`): for
  ``Y[o] += body(..., X[a], ...)`` the access ``X[a]`` receives
  ``dX[a] += dY[o] * d body / d X[a]`` over the same iteration space. A contraction
  ``Y[m,n] += X[m,k] * W[k,n]`` thus yields the pair of Eq. 1-2,
  ``dX[m,k] += dY[m,n] * W[k,n]`` and ``dW[k,n] += dY[m,n] * X[m,k]`` (which `igo-fuse`
  fuses), a bias read ``B[n]`` sums dY over m, a convolution's input read
  ``P[n,c,h+r,w+s]`` gives the transposed convolution, ``max=``/``min=`` (pooling,
  softmax's max) route dY to the elements equal to the result. An index the output
  side cannot write (a stride ``2*h+r``, a step or a reversal ``-i+9``) is written
  through a dilated copy (`_scatter`).

`te.opaque` ops are looked up by kind in `OPAQUE_RULES`. An op on the differentiable
path without a rule, a loss that depends on no argument through a differentiable path,
or a non-scalar last result without explicit gradients is a located error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache

from xdsl.context import Context
from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from irc.diagnostics import location_of
from irc.dialects.te import OpaqueOp, TensorOp
from irc.dialects.te_expr import (
    Access,
    AffineIndex,
    Binary,
    Call,
    Const,
    Expr,
    ExprError,
    IndirectIndex,
    TensorExpr,
    walk_accesses,
)
from irc.plugins import plugin_gradient_rules

GRAD_OF_ATTR = "irc.grad_of"
"""An argument attribute: this argument is the gradient of result ``i`` (an i64)."""
TARGET_ATTR = "irc.loss_target"
"""An argument attribute: the loss's target (labels), never differentiated."""
NAME_ATTR = "irc.name"
WEIGHT_ATTR = "irc.weight"


class GradientError(Exception):
    """An op (or function) that cannot be differentiated, and why."""

    def __init__(self, op: Operation | None, message: str):
        super().__init__(message)
        self.op = op
        self.message = message


# ---------------------------------------------------------------------------
# Symbolic derivative of a scalar body
# ---------------------------------------------------------------------------

ONE, ZERO = Const(1.0), Const(0.0)
_SQRT_HALF = 0.7071067811865476
_INV_SQRT_2PI = 0.3989422804014327
_TWO_OVER_SQRT_PI = 1.1283791670955126


class NoDerivative(Exception):
    """A function of the body with no derivative for an argument that needs one."""


def _mul(a: Expr, b: Expr) -> Expr:
    if a == ONE:
        return b
    if b == ONE:
        return a
    return Binary("*", a, b)


def _select(condition: Expr, then: Expr, otherwise: Expr) -> Expr:
    return Call("select", (condition, then, otherwise))


def _add(a: Expr | None, b: Expr) -> Expr:
    return b if a is None else Binary("+", a, b)


def _differentiable_nodes(body: Expr, is_differentiable: Callable[[Access], bool]) -> set[int]:
    """ids of the body's nodes whose value depends on a differentiable access."""
    found: set[int] = set()

    def visit(node) -> bool:
        if isinstance(node, Access):
            result = is_differentiable(node)
        elif isinstance(node, Const):
            result = False
        elif isinstance(node, Call):
            result = any([visit(a) for a in node.args])
        else:
            result = any([visit(node.lhs), visit(node.rhs)])
        if result:
            found.add(id(node))
        return result

    visit(body)
    return found


def body_gradients(
    body: Expr, upstream: Expr, is_differentiable: Callable[[Access], bool]
) -> list[tuple[Access, Expr]]:
    """Reverse mode over a scalar body: for each differentiable access (in body order,
    one entry per occurrence), the expression of d(loss)/d(access) given that
    d(loss)/d(body) is `upstream`. Raises `NoDerivative` for a function with no
    derivative on the path (``mod``'s divisor)."""
    live = _differentiable_nodes(body, is_differentiable)
    out: list[tuple[Access, Expr]] = []

    def visit(node: Expr, g: Expr) -> None:
        if id(node) not in live:
            return
        if isinstance(node, Access):
            out.append((node, g))
            return
        # generators: each operand's gradient is built after the operands before it are
        # visited, and a level of the body takes one Python frame
        operands = _binary_gradients(node, g) if isinstance(node, Binary) else _call_gradients(node, g, live)
        for operand, gradient in operands:
            visit(operand, gradient)

    visit(body, upstream)
    return out


def _binary_gradients(node: Binary, g: Expr):
    """Yield each operand of an arithmetic operator with the gradient flowing into it,
    given `g` flowing into the operator (comparisons are piecewise constant: none)."""
    a, b = node.lhs, node.rhs
    match node.op:
        case "+":
            yield a, g
            yield b, g
        case "-":
            yield a, g
            yield b, Call("neg", (g,))
        case "*":
            yield a, _mul(g, b)
            yield b, _mul(g, a)
        case "/":
            yield a, Binary("/", g, b)
            yield b, Call("neg", (Binary("/", _mul(g, a), Binary("*", b, b)),))


def _call_gradients(node: Call, g: Expr, live: set):
    """Yield each argument of a function call with the gradient flowing into it, given
    `g` flowing into the call; raise `NoDerivative` where a live argument has none."""
    f, args = node.function, node.args
    x = args[0]
    match f:
        case "relu":
            yield x, _select(Binary(">", x, ZERO), g, ZERO)
        case "exp":
            yield x, _mul(g, node)
        case "log":
            yield x, Binary("/", g, x)
        case "tanh":
            yield x, _mul(g, Binary("-", ONE, Binary("*", node, node)))
        case "sigmoid":
            yield x, _mul(g, Binary("*", node, Binary("-", ONE, node)))
        case "erf":
            gauss = Call("exp", (Call("neg", (Binary("*", x, x),)),))
            yield x, _mul(g, Binary("*", Const(_TWO_OVER_SQRT_PI), gauss))
        case "gelu":
            # d/dx x*Phi(x) = Phi(x) + x*phi(x)
            phi_cdf = Binary("*", Const(0.5), Binary("+", ONE, Call("erf", (Binary("*", x, Const(_SQRT_HALF)),))))
            density = Binary("*", Const(_INV_SQRT_2PI), Call("exp", (Binary("*", Binary("*", x, x), Const(-0.5)),)))
            yield x, _mul(g, Binary("+", phi_cdf, Binary("*", x, density)))
        case "sqrt":
            yield x, Binary("/", _mul(g, Const(0.5)), node)
        case "rsqrt":
            yield x, Binary("/", _mul(g, Binary("*", Const(-0.5), node)), x)
        case "neg":
            yield x, Call("neg", (g,))
        case "abs":
            yield x, _mul(g, Call("sign", (x,)))
        case "max" | "min":
            op = ">=" if f == "max" else "<="
            first = Binary(op, args[0], args[1])
            yield args[0], _select(first, g, ZERO)
            yield args[1], _select(first, ZERO, g)
        case "pow":
            a, b = args
            yield a, _mul(g, Binary("*", b, Call("pow", (a, Binary("-", b, ONE)))))
            yield b, _mul(g, Binary("*", Call("log", (a,)), node))
        case "mod" | "fmod":
            yield args[0], g
            if id(args[1]) in live:
                raise NoDerivative(f"'{f}' has no gradient for its divisor")
        case "select":
            yield args[1], _select(args[0], g, ZERO)
            yield args[2], _select(args[0], ZERO, g)
        case "cast":
            yield x, Call("cast", (g,))
        case _:  # floor ceil round sign, predicates, logic: piecewise constant
            pass


# ---------------------------------------------------------------------------
# Emitting te ops
# ---------------------------------------------------------------------------


def _is_float(value: SSAValue) -> bool:
    return isinstance(value.type, TensorType) and isinstance(value.type.get_element_type(), AnyFloat)


def _shape(value: SSAValue) -> tuple[int, ...]:
    return tuple(value.type.get_shape())  # type: ignore[union-attr]


def _writable(index, extents: dict[str, int]) -> bool:
    """An output index the te language writes as is: a shift or sum of axes (``h+r``) or
    a row-major merge (``4*i+j`` with j in 4)."""
    if not isinstance(index, AffineIndex):
        return False
    if all(c == 1 for _, c in index.terms):
        return True
    ordered = sorted((t for t in index.terms if extents[t[0]] > 1), key=lambda t: t[1])
    expected = 1
    for axis, c in ordered:
        if c != expected:
            return False
        expected = c * extents[axis]
    return True


def _injective(indices: Sequence, extents: dict[str, int]) -> bool:
    for index in indices:
        if not isinstance(index, AffineIndex):
            return False
        moving = [(a, c) for a, c in index.terms if extents[a] > 1]
        if len(moving) > 1 and all(c == 1 for _, c in moving):
            return False  # a sum of axes (h+r): several points write one element
    return True


@dataclass
class Emitter:
    """Builds the backward ops, in order, before the function's return."""

    ops: list[Operation] = field(default_factory=list)
    names: int = 0

    def fresh(self, stem: str) -> str:
        self.names += 1
        return f"{stem}{self.names}"

    def emit(
        self,
        output: Access,
        body: Expr,
        reads: dict[str, SSAValue],
        result_type: Attribute,
        extents: dict[str, int],
        origin: Operation | None,
    ) -> SSAValue:
        """A te.op writing `body` at `output` over the iteration space `extents` (every
        axis in it counts, read or not); `reads` maps the body's tensor names to
        values. The combiner is ``+=`` when axes are folded or several points write one
        element, else ``=``; axes whose extent no access fixes get a ``where``."""
        extents = dict(extents)
        shapes = {name: _shape(v) for name, v in reads.items()}
        shapes[output.tensor] = tuple(result_type.get_shape())  # type: ignore[attr-defined]
        fixed, windowed = set(), set()
        for access in (output, *walk_accesses(body)):
            for dim, index in enumerate(access.indices):
                axis = index.simple_axis
                if axis is not None:
                    (fixed if shapes[access.tensor][dim] == extents[axis] else windowed).add(axis)
        fixed -= windowed
        folded = [a for a in extents if a not in output.axes]
        combiner = "+=" if folded else "="
        if not folded and not _injective(output.indices, extents):
            # Several points write one element but no axis is folded: a unit axis makes
            # the combiner a sum (the te language's `=` keeps one write).
            extents[self.fresh("z")] = 1
            combiner = "+="
        bindings = tuple((a, e) for a, e in extents.items() if a not in fixed)
        expr = TensorExpr(output, combiner, body, bindings)
        try:
            expr.check()
            op = TensorOp(expr, [reads[name] for name in expr.inputs], result_type)
            op.verify()
        except (ExprError, VerifyException) as error:
            message = getattr(error, "message", str(error))
            raise GradientError(origin, f"its gradient '{expr}' is not a valid te op: {message}") from None
        self.ops.append(op)
        return op.output

    def scatter(
        self,
        target: SSAValue,
        indices: tuple,
        body: Expr,
        reads: dict[str, SSAValue],
        extents: dict[str, int],
        origin: Operation | None,
    ) -> SSAValue:
        """A tensor shaped like `target` holding, at each point's `indices`, the sum of
        `body` over the points of `extents` that reach it (0 elsewhere)."""
        out_type = TensorType(target.type.get_element_type(), _shape(target))  # type: ignore[union-attr]
        if not all(isinstance(i, AffineIndex) for i in indices):
            raise GradientError(origin, f"cannot write a gradient at the indirect index {Access('d', indices)}")
        if all(_writable(i, extents) for i in indices):
            return self.emit(Access(self.fresh("D"), indices), body, reads, out_type, extents, origin)
        return self._scatter_dilated(target, indices, body, reads, extents, origin)

    def _scatter_dilated(self, target, indices, body, reads, extents, origin) -> SSAValue:
        """Write through a copy indexed by the index's axes alone: materialise
        ``U[axes] = sum body``, reverse the axes with negative coefficients, dilate those
        with coefficients above 1 (``D[c*a+t] = U[a]`` for t = 0), then scatter with unit
        coefficients (``dX[j+r] += D[j,r]``)."""
        element = target.type.get_element_type()  # type: ignore[union-attr]
        axes = list(dict.fromkeys(a for i in indices for a in i.axes))
        plain = lambda names: tuple(AffineIndex(((a, 1),)) for a in names)  # noqa: E731
        u_type = TensorType(element, [extents[a] for a in axes])
        value = self.emit(Access(self.fresh("U"), plain(axes)), body, reads, u_type, extents, origin)
        shift = [i.constant for i in indices]
        terms = [list(i.terms) for i in indices]
        sizes = {a: extents[a] for a in axes}  # the extent each axis of `value` is read with
        for axis in axes:
            used = [(d, c) for d, t in enumerate(terms) for a, c in t if a == axis]
            if len(used) != 1:
                continue  # an axis in several indices (a diagonal) keeps its coefficients
            ((dim, c),) = used
            if c < 0:
                # R[a'] = U[A-1-a']: c*a = -c*a' + c*(A-1)
                index = list(plain(axes))
                index[axes.index(axis)] = AffineIndex(((axis, -1),), extents[axis] - 1)
                value = self.emit(Access("R", plain(axes)), Access("U", tuple(index)), {"U": value},
                                  value.type, sizes, origin)
                shift[dim] += c * (extents[axis] - 1)
                c = -c
                terms[dim] = [(a, c if a == axis else k) for a, k in terms[dim]]
            if c > 1:
                # V[.., a, 0, ..] = U[.., a, ..]; D[.., c*a+t, ..] = V[.., a, t, ..]
                position = axes.index(axis)
                t = self.fresh("t")
                spread = [*axes[: position + 1], t, *axes[position + 1:]]
                v_index = list(plain(spread))
                v_index[position + 1] = AffineIndex((), 0)
                shape = list(_shape(value))
                v_type = TensorType(element, [*shape[: position + 1], c, *shape[position + 1:]])
                v = self.emit(Access("V", tuple(v_index)), Access("U", plain(axes)), {"U": value},
                              v_type, {**{a: shape[k] for k, a in enumerate(axes)}}, origin)
                d_index = list(plain(axes))
                d_index[position] = AffineIndex(((t, 1), (axis, c)))
                shape[position] *= c
                d_extents = {**{a: list(v_type.get_shape())[k] for k, a in enumerate(spread)}}
                value = self.emit(Access("D", tuple(d_index)), Access("V", plain(spread)), {"V": v},
                                  TensorType(element, shape), d_extents, origin)
                # the trailing c-1 zeros are never needed: read a window
                sizes[axis] = c * (extents[axis] - 1) + 1
                terms[dim] = [(a, 1 if a == axis else k) for a, k in terms[dim]]
        new_indices = tuple(AffineIndex(tuple(t), s) for t, s in zip(terms, shift))
        out_type = TensorType(element, _shape(target))
        return self.emit(Access(self.fresh("D"), new_indices), Access("U", plain(axes)), {"U": value},
                         out_type, sizes, origin)

    def add(self, values: list[SSAValue], origin: Operation | None) -> SSAValue:
        """The elementwise sum of gradient contributions."""
        values = list(values)
        while len(values) > 1:
            chunk, values = values[:8], values[8:]
            names = [chr(ord("A") + k) for k in range(len(chunk))]
            rank = len(_shape(chunk[0]))
            axes = tuple(AffineIndex(((f"i{d}", 1),)) for d in range(rank))
            body: Expr | None = None
            for name in names:
                body = _add(body, Access(name, axes))
            extents = {f"i{d}": s for d, s in enumerate(_shape(chunk[0]))}
            values.append(self.emit(Access("S", axes), body, dict(zip(names, chunk)),  # type: ignore[arg-type]
                                    chunk[0].type, extents, origin))
        return values[0]

    def zeros(self, like: SSAValue) -> SSAValue:
        rank = len(_shape(like))
        axes = tuple(AffineIndex(((f"i{d}", 1),)) for d in range(rank))
        extents = {f"i{d}": s for d, s in enumerate(_shape(like))}
        return self.emit(Access("Z", axes), ZERO, {}, like.type, extents, None)


# ---------------------------------------------------------------------------
# Gradient rules
# ---------------------------------------------------------------------------

RuleFunction = Callable[[Emitter, Operation, "SSAValue | None", list[bool]], list["SSAValue | None"]]
"""``rule(emitter, op, dY, wanted) -> [d operand or None]``: dY is the gradient of the
op's (first) result, None when it is the seed 1 of a scalar loss; ``wanted[i]`` says
whether operand i needs its gradient."""


@dataclass(frozen=True)
class GradientRule:
    """A named gradient rule and the test that picks it (on the op, usually on what
    its tensor expression does)."""

    name: str
    matches: Callable[[Operation], bool]
    apply: RuleFunction


def _fresh_name(taken: set[str], stem: str) -> str:
    name, k = stem, 0
    while name in taken:
        k += 1
        name = f"{stem}{k}"
    taken.add(name)
    return name


def _upstream(expr: TensorExpr, dy: SSAValue | None, reads: dict[str, SSAValue], taken: set[str]) -> Expr:
    """The read of dY at the op's output index (the constant 1 for a loss seed)."""
    if dy is None:
        return ONE
    name = _fresh_name(taken, "G")
    reads[name] = dy
    return Access(name, expr.output.indices)


def expression_rule(emitter: Emitter, op: TensorOp, dy, wanted) -> list:
    """The gradient of any tensor expression from its body (see the module docstring)."""
    expr = op.parsed()
    bound = op.bound()
    extents = bound.extent
    operand_of = dict(zip(expr.inputs, op.inputs))
    wanted_names = {name for name, w in zip(expr.inputs, wanted) if w}
    taken = set(expr.inputs) | {expr.output.tensor}
    reads = dict(operand_of)
    upstream = _upstream(expr, dy, reads, taken)
    if expr.combiner in ("max=", "min="):
        # dY goes to the points whose body equals the result (every tie gets it).
        y_name = _fresh_name(taken, "Y")
        reads[y_name] = op.output
        upstream = _select(Binary("==", expr.body, Access(y_name, expr.output.indices)), upstream, ZERO)

    def differentiable(access: Access) -> bool:
        return access.tensor in wanted_names and not any(
            isinstance(i, IndirectIndex) for i in access.indices
        )

    try:
        pieces = body_gradients(expr.body, upstream, differentiable)
    except NoDerivative as error:
        raise GradientError(op, str(error)) from None
    grouped: dict[tuple[str, tuple], Expr] = {}
    for access, g in pieces:
        key = (access.tensor, access.indices)
        grouped[key] = _add(grouped.get(key), g)
    results: dict[str, list[SSAValue]] = {}
    for (tensor, indices), g in grouped.items():
        used = {a.tensor for a in walk_accesses(g)}
        value = emitter.scatter(operand_of[tensor], indices, g, {n: reads[n] for n in used}, extents, op)
        results.setdefault(tensor, []).append(value)
    out = []
    for name, w in zip(expr.inputs, wanted):
        contributions = results.get(name) if w else None
        out.append(emitter.add(contributions, op) if contributions else None)
    return out


def _has_gather(op: Operation) -> bool:
    return isinstance(op, TensorOp) and any(
        isinstance(i, IndirectIndex) for a in walk_accesses(op.parsed().body) for i in a.indices
    )


def gather_rule(emitter: Emitter, op: TensorOp, dy, wanted) -> list:
    """``Y[o] = E[..., I[q], ...]``: dY scattered back into the table, summing rows read
    more than once (ONNX ScatterElements, ``reduction = add``). The other indices of E
    must be the output's own axes."""
    expr = op.parsed()
    operand_of = dict(zip(expr.inputs, op.inputs))
    body = expr.body
    if not isinstance(body, Access) or expr.combiner != "=":
        raise GradientError(op, "a gather's gradient needs the body to be the indirect read alone")
    table = body.tensor
    indirect = [d for d, i in enumerate(body.indices) if isinstance(i, IndirectIndex)]
    if len(indirect) != 1 or any(
        d not in indirect and i.simple_axis is None for d, i in enumerate(body.indices)
    ):
        raise GradientError(op, "a gather's gradient needs one indirect index and plain axes elsewhere")
    out = []
    for name, w in zip(expr.inputs, wanted):
        if not w or name != table:
            out.append(None)
            continue
        out.append(_scatter_add(emitter, op, operand_of, body, indirect[0], dy, expr))
    return out


def _scatter_add(emitter: Emitter, op, operand_of, body: Access, dim: int, dy, expr) -> SSAValue:
    """dE = ScatterElements(zeros(E), idx, upd, axis=dim, reduction=add) where upd[..] is
    dY laid out like E with the indirect dimension replaced by the gathered positions
    (their axes merged row-major) and idx the index read broadcast to upd's shape."""
    extents = op.bound().extent
    table = operand_of[body.tensor]
    index_access = body.indices[dim].access
    q_axes = list(index_access.axes)
    q_extent = 1
    for a in q_axes:
        q_extent *= extents[a]
    merged = AffineIndex(tuple(zip(q_axes, _row_major(q_axes, extents))))
    plain = lambda a: AffineIndex(((a, 1),))  # noqa: E731
    upd_indices = tuple(merged if d == dim else plain(i.simple_axis) for d, i in enumerate(body.indices))
    upd_shape = [q_extent if d == dim else extents[i.simple_axis] for d, i in enumerate(body.indices)]
    element = table.type.get_element_type()
    reads = dict(operand_of)
    taken = set(expr.inputs) | {expr.output.tensor}
    upstream = _upstream(expr, dy, reads, taken)
    if dy is not None and upd_indices == expr.output.indices:
        upd = dy  # dY is already laid out as the updates
    else:
        upd_reads = {a.tensor: reads[a.tensor] for a in walk_accesses(upstream)}
        upd = emitter.emit(Access("U", upd_indices), upstream, upd_reads,
                           TensorType(element, upd_shape), extents, op)
    index_value = operand_of[index_access.tensor]
    idx = emitter.emit(Access("J", upd_indices), Access("I", index_access.indices), {"I": index_value},
                       TensorType(index_value.type.get_element_type(), upd_shape), extents, op)
    zeros = emitter.zeros(table)
    scatter = OpaqueOp("ScatterElements", [zeros, idx, upd], [table.type],
                       {"axis": IntegerAttr(dim, i64), "reduction": StringAttr("add")})
    emitter.ops.append(scatter)
    return scatter.outputs[0]


def _row_major(axes: list[str], extents: dict[str, int]) -> list[int]:
    coefficients, stride = [], 1
    for a in reversed(axes):
        coefficients.append(stride)
        stride *= extents[a]
    return list(reversed(coefficients))


RULES: list[GradientRule] = [
    GradientRule("gather", _has_gather, gather_rule),
    GradientRule("expression", lambda op: isinstance(op, TensorOp), expression_rule),
]
"""irc's own rules for `te.op`, in the order they are tried (the plug-ins' come first)."""

OPAQUE_RULES: dict[str, RuleFunction] = {}
"""Rules of `te.opaque` ops by kind."""


@cache
def all_rules() -> tuple[GradientRule, ...]:
    """The plug-ins' rules (``IrcUniverse.gradient_rules``), then irc's."""
    extra = [factory() for _owner, factory in plugin_gradient_rules().values()]
    return (*extra, *RULES)


def rule_for(op: Operation) -> GradientRule | None:
    if isinstance(op, OpaqueOp):
        for rule in all_rules():
            if rule.matches(op):
                return rule
        function = OPAQUE_RULES.get(op.kind.data)
        return None if function is None else GradientRule(op.kind.data, lambda _: True, function)
    for rule in all_rules():
        if rule.matches(op):
            return rule
    return None


# ---------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------


def _arg_attr(function: FuncOp, index: int, name: str) -> Attribute | None:
    if function.arg_attrs is None:
        return None
    return function.arg_attrs.data[index].data.get(name)


def _arg_name(function: FuncOp, index: int) -> str:
    name = _arg_attr(function, index, NAME_ATTR)
    return name.data if isinstance(name, StringAttr) else f"arg{index}"


def differentiate(function: FuncOp, wrt: str = "auto") -> None:
    """Append `function`'s backward pass (see the module docstring)."""
    block = function.body.block
    ret = block.last_op
    if not isinstance(ret, ReturnOp):
        raise GradientError(function, "the function does not end in func.return")
    results = list(ret.arguments)
    args = list(block.args)
    seeds, seed_args = _seeds(function, ret, results, args)
    targets = _targets(function, args, seed_args, wrt)
    emitter = Emitter()
    grads = _backward(block, ret, results, seeds, {args[k] for k in targets}, emitter)
    reached = [k for k in targets if args[k] in grads]
    if not reached:
        loss_op = results[max(seeds)].owner
        where = loss_op if isinstance(loss_op, Operation) else ret
        names = ", ".join(_arg_name(function, k) for k in targets)
        raise GradientError(where, f"the loss has no differentiable path to any of {names}")
    new_results = []
    for k in targets:
        if args[k] in grads:
            new_results.append(emitter.add(list(grads[args[k]]), None))  # type: ignore[arg-type]
        else:
            new_results.append(emitter.zeros(args[k]))
    _append_results(function, ret, emitter, targets, new_results)


def _seeds(function: FuncOp, ret: ReturnOp, results: list, args: list) -> tuple[dict, set[int]]:
    """The gradient flowing into each differentiated result (an argument marked
    ``GRAD_OF_ATTR``, or None for a scalar loss), and the arguments that carry them."""
    seeds: dict[int, SSAValue | None] = {}
    seed_args: set[int] = set()
    for k in range(len(args)):
        marker = _arg_attr(function, k, GRAD_OF_ATTR)
        if marker is None:
            continue
        if not isinstance(marker, IntegerAttr) or not 0 <= marker.value.data < len(results):
            raise GradientError(function, f"argument {k}: {GRAD_OF_ATTR} must name a result index in [0, {len(results)})")
        i = marker.value.data
        if args[k].type != results[i].type:
            raise GradientError(function, f"argument {k} is the gradient of result {i} but its type {args[k].type} is not the result's {results[i].type}")
        seeds[i] = args[k]
        seed_args.add(k)
    if not seeds:
        if not results:
            raise GradientError(function, "the function returns nothing to differentiate")
        loss = results[-1]
        if not _is_float(loss) or _shape(loss) != ():
            raise GradientError(
                ret,
                f"the last result ({loss.type}) is not a scalar loss and no argument carries "
                f"{GRAD_OF_ATTR}: reduce it to a rank-0 float loss (irc-translate --loss mse|xent) "
                f"or pass its gradient as an argument marked {GRAD_OF_ATTR} = {len(results) - 1}",
            )
        seeds[len(results) - 1] = None
    return seeds, seed_args


def _targets(function: FuncOp, args: list, seed_args: set[int], wrt: str) -> list[int]:
    """The float arguments to differentiate with respect to: the weights (``wrt=weights``,
    or ``auto`` when some are marked), else every float argument carrying no seed and no ``TARGET_ATTR``."""
    weights = [k for k in range(len(args)) if _arg_attr(function, k, WEIGHT_ATTR) is not None]
    if wrt == "weights" or (wrt == "auto" and weights):
        targets = weights
    else:
        targets = [
            k for k in range(len(args))
            if k not in seed_args and _is_float(args[k]) and _arg_attr(function, k, TARGET_ATTR) is None
        ]
    targets = [k for k in targets if _is_float(args[k])]
    if not targets:
        raise GradientError(function, "no floating-point argument to differentiate with respect to")
    return targets


def _backward(block, ret: ReturnOp, results: list, seeds: dict, sources: set[SSAValue],
              emitter: Emitter) -> dict[SSAValue, list[SSAValue | None]]:
    """The reverse sweep: every op on a path from ``sources`` to a seeded result, last op
    first, emits its gradient rule's ops; returns each value's gradient contributions."""
    # Values that depend on a target through float values: the ones that need gradients.
    needs: set[SSAValue] = set(sources)
    for op in block.ops:
        if any(o in needs for o in op.operands):
            needs.update(r for r in op.results if _is_float(r))
    grads: dict[SSAValue, list[SSAValue | None]] = {}
    for i, seed in seeds.items():
        grads.setdefault(results[i], []).append(seed)
    for op in reversed(list(block.ops)):
        if op is ret or not any(r in grads for r in op.results):
            continue
        wanted = [o in needs and _is_float(o) for o in op.operands]
        if not any(wanted):
            continue
        rule = rule_for(op)
        if rule is None:
            kind = f' "{op.kind.data}"' if isinstance(op, OpaqueOp) else ""
            raise GradientError(op, f"'{op.name}'{kind} has no gradient rule, but the loss depends on its operands")
        if len(op.results) != 1:
            raise GradientError(op, f"gradient rule '{rule.name}' takes ops with one result")
        contributions = grads[op.results[0]]
        if None in contributions:
            if len(contributions) > 1:  # the loss also feeds another op
                raise GradientError(op, "the scalar loss is also read by another op; return a copy")
            dy = None
        else:
            dy = emitter.add(contributions, op)  # type: ignore[arg-type]
        for operand, grad in zip(op.operands, rule.apply(emitter, op, dy, wanted)):
            if grad is not None:
                grads.setdefault(operand, []).append(grad)
    return grads


def _append_results(function: FuncOp, ret: ReturnOp, emitter: Emitter, targets: list[int],
                    new_results: list[SSAValue]) -> None:
    """Insert the emitted ops before the return and return the gradients after the
    results, named ``d<argument>``, in the function's signature too."""
    results = list(ret.arguments)
    rewriter = Rewriter()
    rewriter.insert_op(emitter.ops, InsertPoint.before(ret))
    new_ret = ReturnOp(*results, *new_results)
    new_ret.location = ret.location
    rewriter.replace_op(ret, new_ret)
    names = [DictionaryAttr({NAME_ATTR: StringAttr("d" + _arg_name(function, k))}) for k in targets]
    res_attrs = list(function.res_attrs.data) if function.res_attrs is not None else [
        DictionaryAttr({}) for _ in results
    ]
    function.res_attrs = ArrayAttr([*res_attrs, *names])
    function.function_type = FunctionType.from_lists(
        list(function.function_type.inputs), [*function.function_type.outputs, *(v.type for v in new_results)]
    )


@dataclass(frozen=True)
class TeAutodiff(ModulePass):
    """``te-autodiff{wrt=auto}``: append the backward te ops of every function.

    `wrt`: ``auto`` (the ``irc.weight`` arguments, else every float argument),
    ``weights`` or ``all`` (every float argument but the explicit output gradients and
    the loss's targets, marked ``irc.loss_target``)."""

    name = "te-autodiff"

    wrt: str = "auto"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.wrt not in ("auto", "weights", "all"):
            raise DiagnosticException(f"te-autodiff: unknown wrt={self.wrt}; known: auto, weights, all")
        for function in [f for f in op.walk() if isinstance(f, FuncOp) and f.body.blocks]:
            try:
                differentiate(function, self.wrt)
            except GradientError as error:
                where = error.op or function
                raise DiagnosticException(
                    f"{location_of(where)}: error: '{where.name}' op {error.message}"
                ) from None
