"""Interpreter implementations of the `te` dialect: one `@impl` per op."""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.interpreter import InterpretationError, Interpreter, InterpreterFunctions, impl, register_impls

from irc.dialects.te import OpaqueOp, TensorOp
from irc.dialects.dtypes import numpy_dtype
from irc.diagnostics import location_of
from irc.interpreter.kernels import run_kernel
from irc.interpreter.te_eval import evaluate


@register_impls
class TeFunctions(InterpreterFunctions):
    @impl(TensorOp)
    def run_op(self, interpreter: Interpreter, op: TensorOp, args: tuple[Any, ...]):
        out_dtype = numpy_dtype(op.output.type.get_element_type())
        try:
            return (evaluate(op.bound(), [np.asarray(a) for a in args], out_dtype),)
        except InterpretationError as error:  # e.g. a gather's index outside its table
            raise InterpretationError(f"{location_of(op)}: error: '{op.name}' op {error}") from None

    @impl(OpaqueOp)
    def run_opaque(self, interpreter: Interpreter, op: OpaqueOp, args: tuple[Any, ...]):
        return tuple(run_kernel(op, [np.asarray(a) for a in args]))
