"""Interpreter implementations of the `rtensor` dialect: one `@impl` per op.

A plan decides where data lives and when it moves, never what is computed, so at this
level values are the global tensors: `rtensor.op` computes its te expression's
semantics and `rtensor.relayout` returns its operand unchanged. A partitioned program
therefore computes exactly what its te form does (the differential tests rely on it).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.interpreter import Interpreter, InterpreterFunctions, impl, register_impls

from irc.dialects.rtensor import GradPairOp, RelayoutOp, RTensorOp
from irc.dialects.dtypes import numpy_dtype
from irc.interpreter.te_eval import evaluate


@register_impls
class RTensorFunctions(InterpreterFunctions):
    @impl(RTensorOp)
    def run_op(self, interpreter: Interpreter, op: RTensorOp, args: tuple[Any, ...]):
        out_dtype = numpy_dtype(op.output.type.get_element_type())  # type: ignore[union-attr]
        return (evaluate(op.bound(), [np.asarray(a) for a in args], out_dtype),)

    @impl(GradPairOp)
    def run_grad_pair(self, interpreter: Interpreter, op: GradPairOp, args: tuple[Any, ...]):
        """Both gradients, each with its expression's te semantics (one plan or two, the
        numbers are the same)."""
        values = dict(zip((op.dy, op.w, op.x), (np.asarray(a) for a in args)))
        return (
            evaluate(op.bound_dx(), [values[v] for v in op.operands_of_dx()],
                     numpy_dtype(op.dx.type.get_element_type())),  # type: ignore[union-attr]
            evaluate(op.bound_dw(), [values[v] for v in op.operands_of_dw()],
                     numpy_dtype(op.dw.type.get_element_type())),  # type: ignore[union-attr]
        )

    @impl(RelayoutOp)
    def run_relayout(self, interpreter: Interpreter, op: RelayoutOp, args: tuple[Any, ...]):
        return (args[0],)
