"""Named pipelines of irc-opt.

``inference{device=ipu-mk2 cost=t10}``: te -> device for inference (DESIGN.md s1):
rtensor-partition (plan each operator, T10 s4.3), rtensor-to-shift (rings, seed 003 s3.2),
rotation-align (paces, loop order, placement, T10 s4.2/s4.4), shift-to-device (SPMD
instructions, T10 s4.4/s5) and device-alloc (SRAM offsets and capacity, T10 s4.4).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass


@dataclass(frozen=True)
class InferencePipeline(ModulePass):
    """``inference{device=... cost=...}``: te ops to an allocated device program."""

    name = "inference"

    device: str = "ipu-mk2"
    cost: str = "t10"

    def passes(self) -> list[ModulePass]:
        from irc.lowering.rtensor_to_shift import RTensorToShift
        from irc.lowering.shift_to_device import ShiftToDevice
        from irc.lowering.te_to_rtensor import RTensorPartition
        from irc.passes.device_alloc import DeviceAlloc
        from irc.passes.rotation_align import RotationAlign

        return [
            RTensorPartition(device=self.device, cost=self.cost),
            RTensorToShift(),
            RotationAlign(),
            ShiftToDevice(),
            DeviceAlloc(device=self.device),
        ]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for stage in self.passes():
            stage.apply(ctx, op)
