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

from irc.dialects.rtensor import RelayoutOp, RTensorOp
from irc.dialects.dtypes import numpy_dtype
from irc.interpreter.te_eval import evaluate


@register_impls
class RTensorFunctions(InterpreterFunctions):
    @impl(RTensorOp)
    def run_op(self, interpreter: Interpreter, op: RTensorOp, args: tuple[Any, ...]):
        out_dtype = numpy_dtype(op.output.type.get_element_type())  # type: ignore[union-attr]
        return (evaluate(op.bound(), [np.asarray(a) for a in args], out_dtype),)

    @impl(RelayoutOp)
    def run_relayout(self, interpreter: Interpreter, op: RelayoutOp, args: tuple[Any, ...]):
        return (args[0],)
