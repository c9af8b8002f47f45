"""The interpreter implementations of every level irc executes, in one list.

`irc.runner` registers all of them, so a program runs the same way at `te`, `rtensor` or
`device` level (and `igo`, `npu`, `mtia`). The `shift` level is not executed: the runner
lowers it to the device program first (`irc.runner.device_program`), with the passes.
"""

from __future__ import annotations

from importlib import import_module

from xdsl.interpreter import InterpreterFunctions
from xdsl.interpreters.arith import ArithFunctions
from xdsl.interpreters.builtin import BuiltinFunctions
from xdsl.interpreters.func import FuncFunctions

from irc.interpreter.device import chips
from irc.interpreter.mtia import machines

# module:class of each level's InterpreterFunctions.
LEVELS = (
    "irc.interpreter.te:TeFunctions",
    "irc.interpreter.rtensor:RTensorFunctions",
    "irc.interpreter.device:DeviceFunctions",
    "irc.interpreter.igo:IgoFunctions",
    "irc.interpreter.mtia:MtiaFunctions",
    "irc.interpreter.npu:NpuFunctions",
)


def all_interpreter_functions() -> list[InterpreterFunctions]:
    functions: list[InterpreterFunctions] = [FuncFunctions(), ArithFunctions(), BuiltinFunctions()]
    for path in LEVELS:
        module_name, class_name = path.split(":")
        functions.append(getattr(import_module(module_name), class_name)())
    return functions


def chips_of(interpreter) -> list:
    """The ``Chip``s (``irc.interpreter.chip``) a finished run executed on, for its report."""
    return list(chips(interpreter).values()) + list(machines(interpreter).values())
