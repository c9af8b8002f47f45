"""Named pipelines of irc-opt.

``inference{device=ipu-mk2 cost=t10 preload=full split=paper}``: te -> device for inference (DESIGN.md s1):
rtensor-partition (plan each operator, T10 s4.3), rtensor-check (the plans against the
target's constraints), rtensor-to-shift (rings, seed 003 s3.2), rotation-align (paces,
loop order, placement, T10 s4.2/s4.4), shift-to-device (SPMD instructions, T10 s4.4/s5),
preload-schedule on chips with off-chip memory (HBM loads ahead of use, ELK s4.2/s4.5)
and device-alloc (SRAM offsets and capacity, T10 s4.4). It runs as an xDSL
``PassPipeline``; ``pipeline(callback)`` lets a caller look at the module between passes.

``inference{device=npu-edge cores=2}``: te-to-npu, each forward GEMM an NPU program (IGO s2.2),
split over `cores` (0: the device file's count). ``inference{device=mtia-v1}``:
mtia-partition and te-to-mtia (seeds/001 s4: each operator a section-4 mapping, a T10
rotation plan or a SIMD stream on the PE grid).

``training{device=npu-server cores=4 order=cost}``: te-autodiff, igo-fuse, igo-to-npu and
te-to-npu (IGO s2.2, s4-5): the backward pass with each layer's gradient pair as an NPU
program, and the forward GEMMs and the first layers' lone weight gradients as NPU programs too.
On an inter-core chip (``training{device=ipu-mk2 cost=t10}``): te-autodiff, igo-fuse
(pairs without tile orders) and the inference pipeline, whose rtensor-partition gives
each pair one compute-shift plan where that beats the two gradients planned apart
(`irc.lowering.igo_pair_partition`).

Which passes a pipeline runs is the device's chip family's choice: its `ChipFamily` names
the function below that builds them from the pipeline's options (``inference``,
``training``), so a new family adds its pipelines without touching the pipelines here.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline, PassPipelineCallbackType
from xdsl.utils.exceptions import DiagnosticException

from irc.devices import FAMILIES, family_of, load_device
from irc.devices.loader import DeviceError
from irc.diagnostics import verify_dominance
from irc.lowering.igo_to_npu import IgoToNpu
from irc.lowering.rtensor_to_shift import RTensorToShift
from irc.lowering.shift_to_device import ShiftToDevice
from irc.lowering.te_to_mtia import TeToMtia
from irc.lowering.te_to_npu import TeToNpu
from irc.lowering.te_to_rtensor import RTensorPartition
from irc.passes.device_alloc import DeviceAlloc
from irc.lowering.igo_fuse import IgoFuse
from irc.passes.mtia_partition import MtiaPartition
from irc.passes.preload_schedule import PreloadSchedule
from irc.passes.rotation_align import RotationAlign
from irc.passes.rtensor_check import RTensorCheck
from irc.passes.te_autodiff import TeAutodiff


@dataclass(frozen=True)
class InferencePipeline(ModulePass):
    """``inference{device=... cost=...}``: te ops to the device family's program (an
    allocated device program on an inter-core chip)."""

    name = "inference"

    device: str = ""
    """A bundled device name or a .toml path; empty: the module's target, else ipu-mk2."""
    cost: str = ""
    """A cost model name; empty: the module's target's, else the family's default."""
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
        family, device_name = FAMILIES["ipu"], self.device
        if self.device:
            try:
                device = load_device(self.device)
                family, device_name = family_of(device), device.name
            except DeviceError:
                pass   # rtensor-partition reports it, at the device file's line
        if not family.inference:
            raise DiagnosticException(f"inference: {device_name} is of the {family.name} family, which has no "
                                      f"inference pipeline; {family.advice(device_name)}")
        return family.entry("inference")(self)

    def pipeline(self, callback: PassPipelineCallbackType | None = None) -> PassPipeline:
        """The passes as an xDSL ``PassPipeline``; ``callback(previous, module, next)`` runs
        before the first pass (``previous`` None), between two passes and after the last
        (``next`` None)."""
        return PassPipeline(tuple(self.passes()), callback)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        verify_dominance(op)  # a use before its definition would reach the planner as an internal error
        self.pipeline().apply(ctx, op)


def _refuse_ipu_options(pipeline: InferencePipeline, what: str, cost: str) -> None:
    """The inter-core pipeline's options (preload, split, min_utilization, a cost model
    other than ``cost``) and an NPU's cores, given for a device priced by ``cost``: one
    diagnostic."""
    if pipeline.cost not in ("", cost) or pipeline.preload != "full" or pipeline.split != "paper" \
            or pipeline.min_utilization:
        raise DiagnosticException(
            f"inference: {what}, priced by the {cost} model: cost (other than {cost}), preload, split "
            "and min_utilization are the inter-core pipeline's options; leave them unset"
        )


def ipu_inference(pipeline: InferencePipeline) -> list[ModulePass]:
    """The IPU kind (``irc.devices.device.CHIP_FAMILY``): plan, check, rotate, lower,
    preload and allocate (the module docstring's first pipeline)."""
    if pipeline.cores:
        raise DiagnosticException(
            "inference: cores is an NPU's option (te-to-npu's); an inter-core chip has its device file's cores: "
            "leave it unset, or name a derived device file")
    return [
        RTensorPartition(device=pipeline.device, cost=pipeline.cost, preload=pipeline.preload,
                         split=pipeline.split, min_utilization=pipeline.min_utilization),
        RTensorCheck(),
        RTensorToShift(),
        RotationAlign(),
        ShiftToDevice(),
        PreloadSchedule(if_offchip=True),
        DeviceAlloc(),
    ]


def npu_inference(pipeline: InferencePipeline) -> list[ModulePass]:
    """IGO's NPU (``irc.devices.npu.CHIP_FAMILY``): te-to-npu, each forward GEMM an NPU
    program, the rest host te."""
    _refuse_ipu_options(pipeline, f"{load_device(pipeline.device).name} is an NPU", "igo")
    return [TeToNpu(device=pipeline.device, cores=pipeline.cores)]


def mtia_inference(pipeline: InferencePipeline) -> list[ModulePass]:
    """MTIA (``irc.devices.mtia.CHIP_FAMILY``): mtia-partition (each operator's section-4
    mapping, T10 rotation plan or stream on the PE grid) and te-to-mtia."""
    _refuse_ipu_options(pipeline, f"{load_device(pipeline.device).name} is of the mtia family", "mtia")
    if pipeline.cores:
        raise DiagnosticException("inference: cores is an NPU's option (te-to-npu's); an MTIA device's PE grid is "
                                  "its device file's: leave it unset")
    return [MtiaPartition(device=pipeline.device), TeToMtia()]


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
        family = family_of(device)
        if not family.training:
            raise DiagnosticException(f"training: {device.name} is of the {family.name} family, which has no "
                                      f"training pipeline; {family.advice(device.name)}")
        return family.entry("training")(self, device)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        verify_dominance(op)
        PassPipeline(tuple(self.passes())).apply(ctx, op)


def ipu_training(pipeline: TrainingPipeline, device) -> list[ModulePass]:
    """An inter-core chip: te-autodiff, igo-fuse without tile orders, and the inference
    pipeline, whose planner gives each pair one rotation plan where that pays."""
    if pipeline.order != "cost" or pipeline.partition not in ("cost", "none") or pipeline.cores \
            or pipeline.baseline != "separate" or pipeline.memory != "irc":
        raise DiagnosticException(
            f"training: {device.name} is an inter-core chip: order, partition, cores, baseline and memory "
            "are an NPU's options (its pairs are planned by rtensor-partition); leave them unset"
        )
    return [TeAutodiff(wrt=pipeline.wrt), IgoFuse(device=pipeline.device),
            *InferencePipeline(device=pipeline.device, cost=pipeline.cost).passes()]


def npu_training(pipeline: TrainingPipeline, device) -> list[ModulePass]:
    """IGO's NPU: te-autodiff, igo-fuse with tile orders and partitions, igo-to-npu and
    te-to-npu."""
    if pipeline.cost not in ("", "igo"):
        raise DiagnosticException(f"training: an NPU program is priced by the igo model, not cost={pipeline.cost}")
    return [
        TeAutodiff(wrt=pipeline.wrt),
        IgoFuse(order=pipeline.order, partition=pipeline.partition, device=pipeline.device, cores=pipeline.cores,
                baseline=pipeline.baseline, memory=pipeline.memory),
        IgoToNpu(device=pipeline.device, cores=pipeline.cores, baseline=pipeline.baseline),
        TeToNpu(device=pipeline.device, cores=pipeline.cores),
    ]
