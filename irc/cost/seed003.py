"""The ``seed003`` cost model: the T10 benchmark problem's simpler statement.

seeds/003 ("The Hardware", "The Execution Plan"): each core has a systolic array; a
sub-matmul whose shape is not a multiple of the array shape is padded to it; cores shift
data at 5.5 GB/s; total time = per-core computation time + inter-core communication time.

Choices the seed leaves open, fixed here and documented:
- padding: m and k are padded to multiples of the array rows, n to multiples of its
  columns (for the IPU's 16x16 array: every dimension to a multiple of 16);
- throughput: the padded multiply-accumulates run at ``device.macs_per_cycle`` (the IPU
  Mk2's 250 TFLOPS fp16, T10 Table 3 = 64 MACs/cycle/core);
- communication is bytes / link bandwidth, with no barrier cost; a plan that leaves R
  partial-sum copies of the output pays a reduce-scatter of (R-1)/R of the resident output,
  in the accumulators' width (f32 partial sums of an f16 output: the numerics every level
  shares; the additions themselves are not modelled, as the seed only prices matmuls);
- conv is priced as its implicit GEMM (m = batch*spatial, k = in_channels*window,
  n = out_channels); other kinds raise ``CostModelError``.
"""

from __future__ import annotations

import numpy as np

from irc.cost.model import ArrayLike, CostBreakdown, CostModelError, OpWork, SubTask, as_float_array
from irc.devices import Device


def _ceil_to(a: ArrayLike, multiple: int) -> ArrayLike:
    a = as_float_array(a)
    return np.ceil(a / multiple) * multiple


def padded_matmul_cycles(device: Device, batch, m, k, n) -> ArrayLike:
    """seeds/003: the sub-matmul padded to the systolic array shape, at peak MAC rate."""
    rows, cols = device.systolic
    macs = as_float_array(batch) * _ceil_to(m, rows) * _ceil_to(k, rows) * _ceil_to(n, cols)
    return macs / device.macs_per_cycle


class Seed003CostModel:
    """Compute (padded systolic matmul) + communication (bytes at link bandwidth)."""

    name = "seed003"

    def compute_cycles(self, device: Device, task: SubTask) -> ArrayLike:
        roles = task.roles
        if task.kind == "matmul":
            return padded_matmul_cycles(device, roles["batch"], roles["m"], roles["k"], roles["n"])
        if task.kind == "conv":
            return padded_matmul_cycles(
                device,
                1,
                as_float_array(roles["batch"]) * as_float_array(roles["spatial"]),
                as_float_array(roles["in_channels"]) * as_float_array(roles["window"]),
                roles["out_channels"],
            )
        raise CostModelError(
            f"seed003 cost model prices only matmul and conv operators, not {task.kind!r}"
        )

    def shift_cycles(self, device: Device, nbytes: ArrayLike) -> ArrayLike:
        """seeds/003: each core reaches another core's memory at 5.5 GB/s."""
        return as_float_array(nbytes) * device.link_cycles_per_byte

    def sync_cycles(self, device: Device) -> float:
        return 0.0

    def time_lower_bound(self, device: Device, least: OpWork) -> ArrayLike:
        """``op_time`` of the least work: communication grows with the shifted bytes and
        the resident output, and one partial copy needs no reduce-scatter."""
        return self.op_time(device, least).total

    def refined_time_lower_bound(self, device: Device, least: OpWork) -> ArrayLike:
        """The same: padded tiles times steps never shrink when a tile is split
        (k * ceil16(t') >= ceil16(t) when k * t' >= t), and communication depends on no
        tile."""
        return self.time_lower_bound(device, least)

    def op_time(self, device: Device, work: OpWork) -> CostBreakdown:
        compute = as_float_array(work.steps) * self.compute_cycles(device, work.subtask)
        shift = self.shift_cycles(device, work.shifted_bytes)
        copies = as_float_array(work.partial_copies)
        # the partial sums move in the accumulators' width (f32 for an f16 output)
        reduce_bytes = (copies - 1) / copies * as_float_array(work.out_resident_elems) * work.partial_element_bytes
        reduction = self.shift_cycles(device, reduce_bytes)
        sync = np.zeros_like(shift)
        return CostBreakdown(compute=compute, shift=shift, sync=sync, reduction=reduction)
