"""Named pipelines of irc-opt.

``inference{device=ipu-mk2 cost=t10 preload=full split=paper}``: te -> device for inference (DESIGN.md s1):
rtensor-partition (plan each operator, T10 s4.3), rtensor-check (the plans against the
target's constraints), rtensor-to-shift (rings, seed 003 s3.2), rotation-align (paces,
loop order, placement, T10 s4.2/s4.4), shift-to-device (SPMD instructions, T10 s4.4/s5),
preload-schedule on chips with off-chip memory (HBM loads ahead of use, ELK s4.2/s4.5)
and device-alloc (SRAM offsets and capacity, T10 s4.4). It runs as an xDSL
``PassPipeline``; ``pipeline(callback)`` lets a caller look at the module between passes.

``inference{device=npu-edge cores=2}``: te-to-npu, each forward GEMM an NPU program (IGO s2.2),
split over `cores` (0: the device file's count).

``training{device=npu-server cores=4 order=cost}``: te-autodiff, igo-fuse, igo-to-npu and
te-to-npu (IGO s2.2, s4-5): the backward pass with each layer's gradient pair as an NPU
program, and the forward GEMMs and the first layers' lone weight gradients as NPU programs too.
On an inter-core chip (``training{device=ipu-mk2 cost=t10}``): te-autodiff, igo-fuse
(pairs without tile orders) and the inference pipeline, whose rtensor-partition gives
each pair one compute-shift plan where that beats the two gradients planned apart
(`irc.lowering.igo_pair_partition`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline, PassPipelineCallbackType
from xdsl.utils.exceptions import DiagnosticException

from irc.devices import Device, load_device
from irc.devices.loader import DeviceError
from irc.devices.npu import NpuDevice
from irc.diagnostics import verify_dominance
from irc.lowering.igo_to_npu import IgoToNpu
from irc.lowering.rtensor_to_shift import RTensorToShift
from irc.lowering.shift_to_device import ShiftToDevice
from irc.lowering.te_to_npu import TeToNpu
from irc.lowering.te_to_rtensor import RTensorPartition
from irc.passes.device_alloc import DeviceAlloc
from irc.passes.igo_fuse import IgoFuse
from irc.passes.preload_schedule import PreloadSchedule
from irc.passes.rotation_align import RotationAlign
from irc.passes.rtensor_check import RTensorCheck
from irc.passes.te_autodiff import TeAutodiff


@dataclass(frozen=True)
class InferencePipeline(ModulePass):
    """``inference{device=... cost=...}``: te ops to an allocated device program."""

    name = "inference"

    device: str = ""
    """A bundled device name or a .toml path; empty: the module's target, else ipu-mk2."""
    cost: str = ""
    """A cost model name; empty: the module's target's, else t10."""
    preload: str = "full"
    """A model larger than SRAM on a chip with off-chip memory: ELK-Full or ELK-Dyn
    (``rtensor-partition``'s option)."""
    split: str = "paper"
    """ELK's SRAM split: the paper's cost-aware split or the artifact's."""
    min_utilization: float = 0.0
    """T10's parallelism floor (``rtensor-partition``'s option; 0.9 is T10's)."""
    cores: int = 0
    """An NPU's cores (``te-to-npu``'s option; 0: the device file's count); an inter-core
    chip's cores are its device file's, and this option is refused there."""

    def passes(self) -> list[ModulePass]:
        npu = _npu_passes(self)
        if npu is not None:
            return npu
        if self.cores:
            raise DiagnosticException(
                "inference: cores is an NPU's option (te-to-npu's); an inter-core chip has its device file's cores: "
                "leave it unset, or name a derived device file")
        return [
            RTensorPartition(device=self.device, cost=self.cost, preload=self.preload, split=self.split,
                             min_utilization=self.min_utilization),
            RTensorCheck(),
            RTensorToShift(),
            RotationAlign(),
            ShiftToDevice(),
            PreloadSchedule(if_offchip=True),
            DeviceAlloc(),
        ]

    def pipeline(self, callback: PassPipelineCallbackType | None = None) -> PassPipeline:
        """The passes as an xDSL ``PassPipeline``; ``callback(previous, module, next)`` runs
        before the first pass (``previous`` None), between two passes and after the last
        (``next`` None)."""
        return PassPipeline(tuple(self.passes()), callback)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        verify_dominance(op)  # a use before its definition would reach the planner as an internal error
        self.pipeline().apply(ctx, op)


def _npu_passes(pipeline: InferencePipeline) -> list[ModulePass] | None:
    """``inference{device=npu-...}``: te-to-npu (each forward GEMM an NPU program, the
    rest host te); None for a device of another family. The IPU pipeline's options
    (preload, split, min_utilization, a cost model other than igo) are refused."""
    if not pipeline.device:
        return None
    try:
        device = load_device(pipeline.device)
    except DeviceError:
        return None   # rtensor-partition reports it, at the device file's line
    if not isinstance(device, NpuDevice):
        return None
    if pipeline.cost not in ("", "igo") or pipeline.preload != "full" or pipeline.split != "paper" \
            or pipeline.min_utilization:
        raise DiagnosticException(
            f"inference: {device.name} is an NPU, priced by the igo model: cost (other than igo), preload, split "
            "and min_utilization are the inter-core pipeline's options; leave them unset"
        )
    return [TeToNpu(device=pipeline.device, cores=pipeline.cores)]


@dataclass(frozen=True)
class TrainingPipeline(ModulePass):
    """``training{device=npu-edge cores=0 order=cost partition=cost wrt=auto cost= baseline=separate
    memory=irc}``: a forward te function to its backward pass with each layer's gradient
    pair fused (IGO §4-5): te-autodiff, then igo-fuse with the tile order and partition
    chosen per layer on the NPU `device` (`cores` 0: the device file's count; `memory`: the
    memory model they are priced on), then igo-to-npu, each fused pair lowered to the NPU
    program that runs it (§2.2; `baseline`: what a ``sequential`` pair keeps between its
    GEMMs), then te-to-npu, every other GEMM (the forward pass's, a lone dW) likewise. On an inter-core `device` (IPU kind) igo-fuse fuses the pairs without orders
    and the inference pipeline (`cost`: its cost model, empty for t10) plans and lowers the
    backward pass to the device program; `order`, `partition`, `cores`, `baseline` and
    `memory` are the NPU's and must stay unset."""

    name = "training"

    device: str = "npu-edge"
    cores: int = 0
    order: str = "cost"
    partition: str = "cost"
    wrt: str = "auto"
    cost: str = ""
    baseline: str = "separate"
    memory: str = "irc"

    def passes(self) -> list[ModulePass]:
        try:
            device = load_device(self.device)
        except DeviceError as error:
            raise DiagnosticException(f"training: {error}") from None
        if isinstance(device, Device):   # an inter-core chip: one rotation plan per pair
            if self.order != "cost" or self.partition not in ("cost", "none") or self.cores \
                    or self.baseline != "separate" or self.memory != "irc":
                raise DiagnosticException(
                    f"training: {device.name} is an inter-core chip: order, partition, cores, baseline and memory "
                    "are an NPU's options (its pairs are planned by rtensor-partition); leave them unset"
                )
            return [TeAutodiff(wrt=self.wrt), IgoFuse(device=self.device),
                    *InferencePipeline(device=self.device, cost=self.cost).passes()]
        if self.cost not in ("", "igo"):
            raise DiagnosticException(f"training: an NPU program is priced by the igo model, not cost={self.cost}")
        return [
            TeAutodiff(wrt=self.wrt),
            IgoFuse(order=self.order, partition=self.partition, device=self.device, cores=self.cores,
                    baseline=self.baseline, memory=self.memory),
            IgoToNpu(device=self.device, cores=self.cores, baseline=self.baseline),
            TeToNpu(device=self.device, cores=self.cores),
        ]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        verify_dominance(op)
        PassPipeline(tuple(self.passes())).apply(ctx, op)
