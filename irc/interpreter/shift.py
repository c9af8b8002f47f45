"""Interpreter implementation of the `shift` dialect: run a `shift.kernel` on the chip.

A kernel executes its loop nest exactly as stated (its loops' order and start digits,
checked for alignment): the instructions of ``irc.schedule.program`` run on a ``Chip`` of
the kernel's device, so the result and the timeline are those of the device program
`shift-to-device` would emit. Kernels without loops that need rotation are an error.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.interpreter import Interpreter, InterpreterFunctions, impl, register_impls

from irc.dialects.shift import KernelOp
from irc.interpreter.chip import Chip, ChipFault
from irc.interpreter.device import chip_of, where


@register_impls
class ShiftFunctions(InterpreterFunctions):
    @impl(KernelOp)
    def run_kernel(self, interpreter: Interpreter, op: KernelOp, args: tuple[Any, ...]):
        from irc.schedule.program import build_program, run_program
        from irc.schedule.shift_ir import KernelIRError, kernel_of

        try:
            kernel = kernel_of(op)
        except KernelIRError as error:
            raise ChipFault(f"{where(op)} {error}") from None
        chip = chip_of(interpreter, op.device.data, op.cost.data)
        inputs = {name: np.asarray(value) for name, value in zip(kernel.bound.expr.inputs, args)}
        return (run_program(build_program(kernel), inputs, chip, where(op)),)
