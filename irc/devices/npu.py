"""Device family ``npu``: a systolic-array NPU with a software-managed scratchpad (SPM)
in front of DRAM (IGO §2.2, Table 3).

One or more cores, each an R x C systolic array, share one unified, double-buffered
SPM that holds any tensor's tiles (activations, weights, gradients, partial sums); DRAM
bandwidth and SPM size scale with the core count (§6.3). Files carry per-core values
and the core counts the part is sold with; ``with_cores`` gives the n-core variant.

Compute timing is SCALE-Sim's (the simulator IGO builds on): a GEMM of M x K by K x N
takes ``ceil(M/R) * ceil(N/C) * (K + R + C - 2)`` cycles output-stationary and
``ceil(K/R) * ceil(N/C) * (2R + C + M - 2)`` weight-stationary (folds do not overlap).
The dataflow is a field; absent, it is output-stationary, SCALE-Sim's default
configuration and the one in which a tile's partial sums stay in the array while the
reduction runs (what IGO's tile-by-tile accumulation of dX and dW assumes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from irc.devices.family import ChipFamily
from irc.devices.schema import CHOICE, INTEGER, INTEGERS, MAX_NUMBER, MIN_POSITIVE, NAME, NUMBER, STRING, Field, Schema

FAMILY = "npu"
DATAFLOWS = ("os", "ws")
"""Output-stationary, weight-stationary."""
DEFAULT_DATAFLOW = "os"


@dataclass(frozen=True)
class NpuDevice:
    """An NPU of IGO's Table 3 (or any like it)."""

    name: str
    description: str
    cores: int
    """Cores in this variant (each a systolic array; all share the SPM)."""
    core_counts: tuple[int, ...]
    """The core counts the part comes in (``with_cores`` accepts these)."""
    pe_rows: int
    pe_cols: int
    spm_bytes_per_core: int
    dram_bytes_per_s_per_core: float
    clock_hz: float
    dataflow: str = DEFAULT_DATAFLOW
    family: str = FAMILY
    dram_bytes_per_core: int | None = None
    """DRAM capacity per core (None: not stated, nothing is checked against it)."""

    @property
    def dram_bytes(self) -> int | None:
        """The whole DRAM (it scales with the cores, as its bandwidth does)."""
        return None if self.dram_bytes_per_core is None else self.dram_bytes_per_core * self.cores

    @property
    def spm_bytes(self) -> int:
        """The whole scratchpad, shared by the cores."""
        return self.spm_bytes_per_core * self.cores

    @property
    def dram_bytes_per_s(self) -> float:
        return self.dram_bytes_per_s_per_core * self.cores

    @property
    def dram_bytes_per_cycle(self) -> float:
        return self.dram_bytes_per_s / self.clock_hz

    def with_cores(self, cores: int) -> NpuDevice:
        if cores not in self.core_counts:
            raise ValueError(
                f"{self.name} comes with {', '.join(map(str, self.core_counts))} cores, not {cores}"
            )
        return replace(self, cores=cores)

    def with_bandwidth(self, bytes_per_s_per_core: float) -> NpuDevice:
        return replace(self, dram_bytes_per_s_per_core=float(bytes_per_s_per_core))

    def gemm_cycles(self, m: int, k: int, n: int) -> int:
        """Cycles of an M x K by K x N GEMM on one core (SCALE-Sim's formulas)."""
        return gemm_cycles(m, k, n, self.pe_rows, self.pe_cols, self.dataflow)

    def dram_cycles(self, nbytes: float) -> float:
        return nbytes / self.dram_bytes_per_cycle


def gemm_cycles(m: int, k: int, n: int, rows: int, cols: int, dataflow: str) -> int:
    """SCALE-Sim's compute cycles of an M x K by K x N GEMM on a rows x cols array:
    output-stationary ``ceil(M/R) ceil(N/C) (K+R+C-2)``, weight-stationary
    ``ceil(K/R) ceil(N/C) (2R+C+M-2)``; 0 for an empty GEMM."""
    if min(m, k, n) <= 0:
        return 0
    if dataflow == "os":
        return math.ceil(m / rows) * math.ceil(n / cols) * (k + rows + cols - 2)
    if dataflow == "ws":
        return math.ceil(k / rows) * math.ceil(n / cols) * (2 * rows + cols + m - 2)
    raise ValueError(f"unknown dataflow '{dataflow}' (known: {', '.join(DATAFLOWS)})")


SCHEMA = Schema(FAMILY, (
    Field("family", CHOICE, "the device family", choices=(FAMILY,)),
    Field("name", NAME, "the device's name, as tools and #irc.target name it"),
    Field("description", STRING, "one line about the chip", required=False),
    Field("cores.count", INTEGER, "cores of this variant (one of cores.counts)", minimum=1, maximum=1 << 10),
    Field("cores.counts", INTEGERS, "the core counts the part comes in (default: cores.count)", required=False,
          minimum=1, maximum=1 << 10, length=(1, 64)),
    Field("compute.systolic", INTEGERS, "rows and columns of each core's systolic array", minimum=1,
          maximum=1 << 12, length=(2, 2), shape="[rows, cols]"),
    Field("compute.clock_hz", NUMBER, "the clock, in Hz", minimum=MIN_POSITIVE, maximum=MAX_NUMBER),
    Field("compute.dataflow", CHOICE, "os (output-stationary, the default) or ws (weight-stationary)",
          required=False, choices=DATAFLOWS),
    Field("spm.bytes_per_core", INTEGER, "scratchpad per core (shared by all), in bytes", minimum=1,
          maximum=1 << 40),
    Field("dram.bytes_per_s_per_core", NUMBER, "DRAM bandwidth per core, bytes per second", minimum=MIN_POSITIVE,
          maximum=MAX_NUMBER),
    Field("dram.bytes_per_core", INTEGER, "DRAM capacity per core (absent: not stated), in bytes", required=False,
          minimum=1, maximum=1 << 50),
))
"""Every field of an NPU-family device file (``npu_edge.toml``)."""

FLAT = {
    "cores": "cores.count", "core_counts": "cores.counts", "pe_rows": ("compute.systolic", 0),
    "pe_cols": ("compute.systolic", 1), "clock_hz": "compute.clock_hz", "dataflow": "compute.dataflow",
    "spm_bytes_per_core": "spm.bytes_per_core", "dram_bytes_per_s_per_core": "dram.bytes_per_s_per_core",
    "dram_bytes_per_core": "dram.bytes_per_core",
}
"""An `NpuDevice` field's dotted key in a device file (``(key, i)``: element i of a
list), as an inline ``#irc.target`` description states them."""


def device_from_fields(fields) -> NpuDevice:
    """The ``NpuDevice`` of a file's (or description's) fields, which the loader has
    checked against `SCHEMA`; the checks between fields are errors naming one of them."""
    get = fields.value
    cores = get("cores.count")
    counts = get("cores.counts") or [cores]
    if cores not in counts:
        raise fields.bad("cores.count", f"one of cores.counts {list(counts)}", cores)
    rows, cols = get("compute.systolic")
    return NpuDevice(
        name=get("name"),
        description=get("description", ""),
        cores=cores,
        core_counts=tuple(counts),
        pe_rows=rows,
        pe_cols=cols,
        spm_bytes_per_core=get("spm.bytes_per_core"),
        dram_bytes_per_s_per_core=float(get("dram.bytes_per_s_per_core")),
        clock_hz=float(get("compute.clock_hz")),
        dataflow=get("compute.dataflow", DEFAULT_DATAFLOW),
        family=get("family"),
        dram_bytes_per_core=get("dram.bytes_per_core"),
    )


CHIP_FAMILY = ChipFamily(
    name=FAMILY,
    device_type=NpuDevice,
    schema=SCHEMA,
    flat=FLAT,
    device_from_fields=device_from_fields,
    target_reader="irc.target:npu_device_of",
    compiled_with="compile a forward pass for it with irc-opt -p 'inference{{device={name}}}' (te-to-npu) or a "
                  "training step with irc-opt -p 'training{{device={name}}}' (te-autodiff, igo-fuse, igo-to-npu)",
    planner="irc.tools.npu_plan:PLANNER",
    inference="irc.passes.pipelines:npu_inference",
    training="irc.passes.pipelines:npu_training",
    cost_model="igo",
)
"""IGO's NPU (MICRO'23): priced by the ``igo`` cost model, compiled by ``te-to-npu`` and
``igo-to-npu``."""
