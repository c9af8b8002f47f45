"""A gradient rule for te-autodiff: softsign ``Y = X / (1 + abs(X))`` gets the closed
form ``dX = dY / (1 + abs(X))^2`` instead of the derivative of its body."""

from irc.dialects.te import TensorOp
from irc.dialects.te_expr import Access, Binary, Call, Const
from irc.passes.te_autodiff import GradientRule


def _is_softsign(op) -> bool:
    if not isinstance(op, TensorOp) or len(op.inputs) != 1:
        return False
    expr = op.parsed()
    body = expr.body
    return (
        expr.combiner == "="
        and isinstance(body, Binary) and body.op == "/"
        and isinstance(body.lhs, Access) and body.lhs.indices == expr.output.indices
        and body.rhs == Binary("+", Const(1.0), Call("abs", (body.lhs,)))
    )


def _softsign_gradient(emitter, op, dy, wanted):
    if not wanted[0]:
        return [None]
    expr = op.parsed()
    x = expr.body.lhs
    scale = Binary("+", Const(1.0), Call("abs", (Access("X", x.indices),)))
    upstream = Access("G", expr.output.indices) if dy is not None else Const(1.0)
    body = Binary("/", upstream, Binary("*", scale, scale))
    reads = {"X": op.inputs[0], **({"G": dy} if dy is not None else {})}
    return [emitter.emit(Access("DS", x.indices), body, reads, op.inputs[0].type, op.bound().extent, op)]


SOFTSIGN = GradientRule("example-softsign", _is_softsign, _softsign_gradient)
