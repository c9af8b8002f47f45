"""Compile a `te` program for a device and run it on the reference chip, in one call.

    from irc.compile import compile_and_run
    results, report = compile_and_run(open("examples/mlp.mlir").read(), device="tiny16")
    print(report)

The program goes through the ``inference`` pipeline (rtensor-partition, rtensor-check,
rtensor-to-shift, rotation-align, shift-to-device, device-alloc), runs at device level, and is checked
against the same program run at te level (numpy semantics). The report holds the chip
time breakdown, peak SRAM per core, utilisation, the planner's predicted kernel time and
the largest deviation from the te-level results.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

from irc.cost import DEFAULT_COST_MODEL
from irc.dialects.shift import KernelOp
from irc.interpreter.chip import Report
from irc.interpreter.offchip import planned_lines
from irc.lowering.te_to_rtensor import PLANNED_ATTR
from irc.passes.pipelines import InferencePipeline
from irc.runner import find_function, parse_module, random_inputs, run, run_function


@dataclass
class RunReport:
    """What one compiled run measured."""

    chip: Report
    planned_kernel_cycles: float      # sum over operators of the planner's predicted time
    max_abs_error: dict[str, float]   # per result, device level vs te level
    device_ir: str
    planned_model_cycles: float | None = None
    """The model-wide plan's prediction (operators, setups, relayouts; None for mode=op)."""
    module: ModuleOp | None = None
    """The compiled device program."""

    @property
    def interpreted_kernel_cycles(self) -> float:
        return self.chip.kernel_cycles

    @property
    def interpreted_model_cycles(self) -> float:
        return self.chip.model_cycles

    def __str__(self) -> str:
        ratio = self.interpreted_kernel_cycles / self.planned_kernel_cycles if self.planned_kernel_cycles else float("nan")
        errors = ", ".join(f"{k}: {v:.3g}" for k, v in self.max_abs_error.items())
        lines = [
            f"{self.chip}",
            f"planned kernel time {self.planned_kernel_cycles:,.0f} cycles, interpreted "
            f"{self.interpreted_kernel_cycles:,.0f} cycles (ratio {ratio:.4f})",
        ]
        if self.planned_model_cycles:
            whole = self.interpreted_model_cycles / self.planned_model_cycles
            io = self.chip.cycles.get("host_io", 0.0) / self.chip.total_cycles if self.chip.total_cycles else 0.0
            host_ops = self.device_ir.count("te.op ") + self.device_ir.count("te.opaque ")
            edges = "the model's inputs, weights and results" + (
                f", and the operands of {host_ops} op(s) left on the host" if host_ops else " only")
            lines.append(
                f"planned model time (kernels, setups, relayouts) {self.planned_model_cycles:,.0f} cycles, "
                f"interpreted {self.interpreted_model_cycles:,.0f} cycles (ratio {whole:.4f}); host I/O "
                f"{100 * io:.1f}% of chip time: {edges}"
            )


        if self.module is not None:
            for function in self.module.walk():
                if isinstance(function, FuncOp):
                    lines += planned_lines(function, self.chip)
        lines.append(f"max |device - te| per result: {errors}")
        return "\n".join(lines)


def planned_model_cycles(module: ModuleOp) -> float | None:
    """The model-wide plan's predicted cycles, summed over the functions `rtensor-partition`
    planned model-wide (their ``irc.planned_cycles``); None when none was."""
    values = [float(f.attributes[PLANNED_ATTR].value.data) for f in module.walk()
              if isinstance(f, FuncOp) and PLANNED_ATTR in f.attributes]
    return sum(values) if values else None


def compile_module(module: ModuleOp, device: str = "tiny16", cost: str = DEFAULT_COST_MODEL) -> tuple[ModuleOp, float]:
    """Lower ``module`` (te level) to an allocated device program in place; also return the
    planner's predicted kernel cycles summed over its operators (what `rotation-align`
    records on each kernel as ``planned_cycles``, read between the passes)."""
    planned = [0.0]

    def record(previous, module: ModuleOp, following) -> None:
        kernels = [op for op in module.walk() if isinstance(op, KernelOp) and op.planned_cycles is not None]
        if kernels:
            planned[0] = sum(float(op.planned_cycles.value.data) for op in kernels)

    InferencePipeline(device=device, cost=cost).pipeline(record).apply(Context(), module)
    return module, planned[0]


def compile_and_run(te_module_text_or_module, device: str = "tiny16", cost: str = DEFAULT_COST_MODEL,
                    inputs: dict[str, np.ndarray] | None = None, seed: int = 0):
    """Compile a te program for ``device`` and run it on the reference chip.

    Returns ``(results, report)``: results by name, and a ``RunReport`` (printable)."""
    if isinstance(te_module_text_or_module, str):
        module = parse_module(te_module_text_or_module, "<input>")
    else:
        module = te_module_text_or_module.clone()
    if inputs is None:
        inputs = random_inputs(find_function(module, None), seed)
    reference = run_function(module, inputs)
    compiled, planned = compile_module(module, device, cost)
    results, chip = run(compiled, inputs)
    errors = {
        name: float(np.max(np.abs(results[name].astype(np.float64) - reference[name].astype(np.float64))))
        if results[name].size else 0.0
        for name in results
    }
    return results, RunReport(chip, planned, errors, str(compiled), planned_model_cycles(compiled), compiled)
