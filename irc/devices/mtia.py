"""An MTIA-family device: a grid of PEs reading shared memories (seeds/001, MTIA v1).

MTIA's PEs do not rotate tensors among themselves as an IPU's cores do: each PE streams
its operands from the on-chip SRAM or the off-chip LPDDR into its 128 KB local memory
(section 3.3), requests of PEs in one row or column coalesce into one multicast read
(section 3.4), and partial sums travel over a one-way reduction network, north to south
and west to east (section 3.4), from one PE's accumulators to the next.

``MtiaDevice`` holds that description as data, read from a TOML file with
``family = "mtia"`` (``mtia_v1.toml``). Fields the paper does not state (latencies, the
NoC and reduction-network link widths, the command issue cost) are ordinary named fields
whose assumed values are commented in the file. The cost model ``mtia``
(``irc.cost.mtia``) prices plans from these fields.

For T10 plans, which treat the chip as cores with a private scratchpad each, the class
also answers the planner's questions under the IPU kind's names: ``cores`` (the PEs),
``sram_bytes`` (a PE's *local* memory, not the shared on-chip SRAM), ``clock_hz``.
"""

from __future__ import annotations

from dataclasses import dataclass

from irc.devices.family import ChipFamily
from irc.devices.schema import (
    CHOICE, CHOICES, INTEGER, INTEGERS, MAX_NUMBER, MIN_POSITIVE, NAME, NUMBER, STRING, Field, Schema,
)

FAMILY = "mtia"
MULTICAST_KINDS = ("row-column", "none")
REDUCTION_DIRECTIONS = ("north-south", "west-east")
LEVELS = ("local", "sram", "dram")


@dataclass(frozen=True)
class MtiaDevice:
    """One MTIA-family chip (seeds/001 section 3, Table I). Bandwidths in bytes per
    second, latencies in cycles of ``clock_hz``."""

    name: str
    description: str
    family: str
    grid_rows: int
    grid_cols: int
    clock_hz: float
    local_bytes: int                    # per PE
    local_bytes_per_s: float            # per PE
    dpe_block: tuple[int, int, int]     # (m, k, n) of one DPE operation
    dpe_block_cycles: int               # one INT8 block
    fp16_macs_per_cycle: int
    accumulator_banks: int
    accumulator_bytes: int              # INT32 / FP32 partial sums
    simd_elements_per_cycle: int        # SIMD engine, FP16 (INT8 at twice the rate)
    vector_bytes_per_cycle: int         # RISC-V vector unit
    dma_issue_cycles: int               # assumed
    onchip_bytes: int                   # the shared on-chip SRAM (whole chip)
    onchip_bytes_per_s: float
    onchip_latency_cycles: int          # assumed
    dram_bytes: int
    dram_bytes_per_s: float
    dram_latency_cycles: int            # assumed
    multicast: str                      # "row-column" or "none"
    noc_pe_bytes_per_cycle: int         # assumed: one PE's fabric interface
    noc_hop_cycles: int                 # assumed
    barrier_cycles: int                 # assumed
    reduction_directions: tuple[str, ...]
    reduction_link_bytes_per_cycle: int  # assumed
    reduction_hop_cycles: int           # assumed
    host_bytes_per_s: float

    # -- derived quantities ------------------------------------------------------------

    @property
    def pes(self) -> int:
        return self.grid_rows * self.grid_cols

    @property
    def int8_macs_per_cycle(self) -> int:
        """Section 3.1.2: a 32x32x32 INT8 block in 32 cycles is 1024 MACs per cycle."""
        m, k, n = self.dpe_block
        return m * k * n // self.dpe_block_cycles

    def macs_per_cycle_for(self, dtype_bytes: int) -> int:
        """DPE multiply-accumulates per cycle for elements of ``dtype_bytes`` bytes: INT8
        at the full rate, FP16/BF16 at 512; wider types run as FP16 pairs (no FP32 DPE)."""
        if dtype_bytes <= 1:
            return self.int8_macs_per_cycle
        if dtype_bytes == 2:
            return self.fp16_macs_per_cycle
        return max(1, self.fp16_macs_per_cycle * 2 // dtype_bytes)

    def level_bytes_per_cycle(self, level: str) -> float:
        """Bandwidth of a memory level in bytes per cycle: one PE's local memory, or the
        whole chip's SRAM / LPDDR."""
        per_s = {"local": self.local_bytes_per_s, "sram": self.onchip_bytes_per_s, "dram": self.dram_bytes_per_s}
        return per_s[level] / self.clock_hz

    def level_latency_cycles(self, level: str) -> int:
        return {"local": 0, "sram": self.onchip_latency_cycles, "dram": self.dram_latency_cycles}[level]

    def level_capacity(self, level: str) -> int:
        return {"local": self.local_bytes, "sram": self.onchip_bytes, "dram": self.dram_bytes}[level]

    @property
    def has_multicast(self) -> bool:
        return self.multicast == "row-column"

    # -- the T10 planner's view: PEs as cores with a private scratchpad -----------------

    @property
    def cores(self) -> int:
        return self.pes

    @property
    def cores_per_chip(self) -> int:
        return self.pes

    @property
    def sram_bytes(self) -> int:
        """The T10 planner's per-core scratchpad: a PE's local memory. (The shared on-chip
        SRAM is ``onchip_bytes``.)"""
        return self.local_bytes

    @property
    def peak_macs_per_s(self) -> float:
        """Whole-chip FP16 DPE peak (Table I: 51.2 TFLOPS as MACs; the table's 102.4/51.2
        TOPS round 64 x 1024 x 2 x 0.8 GHz = 104.9 down)."""
        return self.pes * self.fp16_macs_per_cycle * self.clock_hz

    def peak_macs_per_s_for(self, dtype_bytes: int) -> float:
        return self.pes * self.macs_per_cycle_for(dtype_bytes) * self.clock_hz

    def seconds(self, cycles: float) -> float:
        return cycles / self.clock_hz


def _positive(key: str, description: str, maximum: int = 1 << 40, **more) -> Field:
    return Field(key, INTEGER, description, minimum=1, maximum=maximum, **more)


def _cycles(key: str, description: str) -> Field:
    return Field(key, INTEGER, description, minimum=0, maximum=1 << 40)


def _rate(key: str, description: str) -> Field:
    return Field(key, NUMBER, description, minimum=MIN_POSITIVE, maximum=MAX_NUMBER)


SCHEMA = Schema(FAMILY, (
    Field("family", CHOICE, "the device family", choices=(FAMILY,)),
    Field("name", NAME, "the device's name, as tools and #irc.target name it"),
    Field("description", STRING, "one line about the chip", required=False),
    _positive("grid.rows", "rows of the PE grid", 1 << 10),
    _positive("grid.cols", "columns of the PE grid", 1 << 10),
    _rate("grid.clock_hz", "the clock, in Hz"),
    _positive("pe.local_bytes", "each PE's local memory, in bytes"),
    _rate("pe.local_bytes_per_s", "each PE's local memory bandwidth, bytes per second"),
    Field("pe.dpe_block", INTEGERS, "the (m, k, n) of one DPE operation", minimum=1, maximum=1 << 12,
          length=(3, 3), shape="[m, k, n]"),
    _positive("pe.dpe_block_cycles", "cycles of one INT8 DPE block"),
    _positive("pe.fp16_macs_per_cycle", "FP16 multiply-accumulates per cycle of one DPE"),
    Field("pe.accumulator_banks", INTEGER, "accumulator banks of the reduction engine (section 4's 2x2 "
          "blocking needs four)", minimum=4, maximum=1 << 10),
    _positive("pe.accumulator_bytes", "bytes of one partial sum (INT32 / FP32)", 16),
    _positive("pe.simd_elements_per_cycle", "SIMD engine lanes (FP16)"),
    _positive("pe.vector_bytes_per_cycle", "RISC-V vector register width, in bytes"),
    _cycles("pe.dma_issue_cycles", "cycles to issue one DMA or MML command"),
    _positive("sram.bytes", "the shared on-chip SRAM (whole chip), in bytes", 1 << 50),
    _rate("sram.bytes_per_s", "on-chip SRAM bandwidth, bytes per second"),
    _cycles("sram.latency_cycles", "cycles from a request to the SRAM to its data"),
    _positive("dram.bytes", "the off-chip LPDDR, in bytes", 1 << 50),
    _rate("dram.bytes_per_s", "LPDDR bandwidth, bytes per second"),
    _cycles("dram.latency_cycles", "cycles from a request to the LPDDR to its data"),
    Field("noc.multicast", CHOICE, "whether reads of PEs in one row or column coalesce", choices=MULTICAST_KINDS),
    _positive("noc.pe_link_bytes_per_cycle", "a PE's fabric interface, bytes per cycle"),
    _cycles("noc.hop_cycles", "router cycles per grid hop"),
    _cycles("noc.barrier_cycles", "cycles of a barrier of a sub-grid's PEs"),
    Field("reduction.directions", CHOICES, "the reduction network's directions", choices=REDUCTION_DIRECTIONS,
          length=(1, len(REDUCTION_DIRECTIONS))),
    _positive("reduction.link_bytes_per_cycle", "a reduction link's width, bytes per cycle"),
    _cycles("reduction.hop_cycles", "cycles of one reduction hop, accumulation included"),
    _rate("host.bytes_per_s", "host link bandwidth, bytes per second"),
))
"""Every field of an MTIA-family device file (``mtia_v1.toml``)."""

FLAT = {
    "grid_rows": "grid.rows", "grid_cols": "grid.cols", "clock_hz": "grid.clock_hz",
    **{name: f"pe.{name}" for name in (
        "local_bytes", "local_bytes_per_s", "dpe_block", "dpe_block_cycles", "fp16_macs_per_cycle",
        "accumulator_banks", "accumulator_bytes", "simd_elements_per_cycle", "vector_bytes_per_cycle",
        "dma_issue_cycles")},
    "onchip_bytes": "sram.bytes", "onchip_bytes_per_s": "sram.bytes_per_s", "onchip_latency_cycles": "sram.latency_cycles",
    "dram_bytes": "dram.bytes", "dram_bytes_per_s": "dram.bytes_per_s", "dram_latency_cycles": "dram.latency_cycles",
    "multicast": "noc.multicast", "noc_pe_bytes_per_cycle": "noc.pe_link_bytes_per_cycle",
    "noc_hop_cycles": "noc.hop_cycles", "barrier_cycles": "noc.barrier_cycles",
    "reduction_directions": "reduction.directions", "reduction_link_bytes_per_cycle": "reduction.link_bytes_per_cycle",
    "reduction_hop_cycles": "reduction.hop_cycles", "host_bytes_per_s": "host.bytes_per_s",
}
"""An `MtiaDevice` field's dotted key in a device file (an inline ``#irc.target``
description states the dataclass's fields; the directions as one comma-separated
string)."""


def device_from_fields(fields) -> MtiaDevice:
    """The ``MtiaDevice`` of a file's (or description's) fields, which the loader has
    checked against `SCHEMA`; the checks between fields are errors naming one of them."""
    get = fields.value
    directions = get("reduction.directions")
    device = MtiaDevice(
        name=get("name"),
        description=get("description", ""),
        family=get("family"),
        grid_rows=get("grid.rows"),
        grid_cols=get("grid.cols"),
        clock_hz=float(get("grid.clock_hz")),
        local_bytes=get("pe.local_bytes"),
        local_bytes_per_s=float(get("pe.local_bytes_per_s")),
        dpe_block=tuple(get("pe.dpe_block")),
        dpe_block_cycles=get("pe.dpe_block_cycles"),
        fp16_macs_per_cycle=get("pe.fp16_macs_per_cycle"),
        accumulator_banks=get("pe.accumulator_banks"),
        accumulator_bytes=get("pe.accumulator_bytes"),
        simd_elements_per_cycle=get("pe.simd_elements_per_cycle"),
        vector_bytes_per_cycle=get("pe.vector_bytes_per_cycle"),
        dma_issue_cycles=get("pe.dma_issue_cycles"),
        onchip_bytes=get("sram.bytes"),
        onchip_bytes_per_s=float(get("sram.bytes_per_s")),
        onchip_latency_cycles=get("sram.latency_cycles"),
        dram_bytes=get("dram.bytes"),
        dram_bytes_per_s=float(get("dram.bytes_per_s")),
        dram_latency_cycles=get("dram.latency_cycles"),
        multicast=get("noc.multicast"),
        noc_pe_bytes_per_cycle=get("noc.pe_link_bytes_per_cycle"),
        noc_hop_cycles=get("noc.hop_cycles"),
        barrier_cycles=get("noc.barrier_cycles"),
        reduction_directions=tuple(directions),
        reduction_link_bytes_per_cycle=get("reduction.link_bytes_per_cycle"),
        reduction_hop_cycles=get("reduction.hop_cycles"),
        host_bytes_per_s=float(get("host.bytes_per_s")),
    )
    m, k, n = device.dpe_block
    if (m * k * n) % device.dpe_block_cycles:
        raise fields.bad("pe.dpe_block_cycles", f"a divisor of the block's {m * k * n} MACs", device.dpe_block_cycles)
    return device


CHIP_FAMILY = ChipFamily(
    name=FAMILY,
    device_type=MtiaDevice,
    schema=SCHEMA,
    flat=FLAT,
    device_from_fields=device_from_fields,
    target_reader="irc.target:mtia_device_of",
    compiled_with="compile it with irc-opt -p 'inference{{device={name}}}' (mtia-partition, te-to-mtia) or plan "
                  "it with irc-plan --device {name}",
    planner="irc.tools.mtia_plan:PLANNER",
    inference="irc.passes.pipelines:mtia_inference",
    cost_model="mtia",
)
"""MTIA (seeds/001): planned by its own mappings (`irc.planner.mtia`), compiled by
``mtia-partition`` and ``te-to-mtia``."""
