"""Interpreter implementations of the `igo` dialect: one `@impl` per op.

`igo.grad_pair` computes its two gradients with the te semantics of their expressions
(the tile order changes where data lives, never what is computed)."""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.interpreter import Interpreter, InterpreterFunctions, impl, register_impls

from irc.dialects.dtypes import numpy_dtype
from irc.dialects.igo import GradPairOp
from irc.interpreter.te_eval import evaluate


@register_impls
class IgoFunctions(InterpreterFunctions):
    @impl(GradPairOp)
    def run_grad_pair(self, interpreter: Interpreter, op: GradPairOp, args: tuple[Any, ...]):
        dy, w, x = (np.asarray(a) for a in args)
        values = {op.dy: dy, op.w: w, op.x: x}
        dx_in = [values[v] for v in op.operands_of(op.dx_expression.expr, op.w)]
        dw_in = [values[v] for v in op.operands_of(op.dw_expression.expr, op.x)]
        return (
            evaluate(op.bound_dx(), dx_in, numpy_dtype(op.dx.type.get_element_type())),
            evaluate(op.bound_dw(), dw_in, numpy_dtype(op.dw.type.get_element_type())),
        )
