"""Interpreter implementation of the `shift` dialect: run a `shift.kernel` on the chip.

A kernel executes its loop nest exactly as stated (its loops' order and start digits,
checked for alignment) by running the device instructions `shift-to-device` emits for it
with the `device` level's implementations, on the chip of the module's target: one
executor for both levels, so results and timeline are those of the device program.
Kernels without loops that need rotation are an error.
"""

from __future__ import annotations

from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.interpreter import Interpreter, InterpreterFunctions, impl, register_impls
from xdsl.interpreters.func import FuncFunctions
from xdsl.ir import Block, Region
from xdsl.utils.exceptions import DiagnosticException

from irc.dialects.shift import KernelOp
from irc.dialects.target import TARGET_ATTR
from irc.interpreter.chip import ChipFault
from irc.interpreter.device import CHIPS_KEY, DeviceFunctions, chips, where
from irc.lowering.target import TargetError, require_target


@register_impls
class ShiftFunctions(InterpreterFunctions):
    @impl(KernelOp)
    def run_kernel(self, interpreter: Interpreter, op: KernelOp, args: tuple[Any, ...]):
        from irc.lowering.shift_ir import KernelIRError, kernel_of
        from irc.lowering.shift_to_device import device_ops
        from irc.passes.device_alloc import DeviceAlloc

        try:
            kernel = kernel_of(op)
            target = require_target(op)
        except (KernelIRError, TargetError) as error:
            raise ChipFault(f"{where(op)} {error}") from None
        block = Block(arg_types=[value.type for value in op.inputs])
        ops, stores, _ = device_ops(kernel, op, "", inputs=block.args)
        block.add_ops([*ops, ReturnOp(*(store.result for store in stores))])
        function = FuncOp("kernel", ([value.type for value in op.inputs], [value.type for value in op.outputs]),
                          Region(block))
        module = ModuleOp([function])
        module.attributes[TARGET_ATTR] = target
        try:
            DeviceAlloc().apply(Context(), module)
        except DiagnosticException as error:
            raise ChipFault(f"{where(op)} {error}") from None
        device = Interpreter(module)
        device.register_implementations(FuncFunctions())
        device.register_implementations(DeviceFunctions())
        device.set_data(DeviceFunctions, CHIPS_KEY, chips(interpreter))  # the same chip, one timeline
        return device.call_op(function, args)
