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


def device_from_fields(fields) -> MtiaDevice:
    """The ``MtiaDevice`` a parsed TOML file describes; ``fields`` is the loader's typed
    accessor, so a bad field is an error naming it (``pe.dpe_block``)."""
    block = fields._get("pe.dpe_block")
    if not (isinstance(block, list) and len(block) == 3
            and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in block)):
        raise fields._bad("pe.dpe_block", "a list of three positive integers [m, k, n]", block)
    directions = fields._get("reduction.directions")
    if not (isinstance(directions, list) and directions and all(d in REDUCTION_DIRECTIONS for d in directions)
            and len(set(directions)) == len(directions)):
        raise fields._bad("reduction.directions", f"a non-empty list of distinct {', '.join(REDUCTION_DIRECTIONS)}",
                          directions)
    device = MtiaDevice(
        name=fields.string("name"),
        description=fields.string("description", default=""),
        family=fields.choice("family", (FAMILY,)),
        grid_rows=fields.positive_int("grid.rows"),
        grid_cols=fields.positive_int("grid.cols"),
        clock_hz=fields.positive_number("grid.clock_hz"),
        local_bytes=fields.positive_int("pe.local_bytes"),
        local_bytes_per_s=fields.positive_number("pe.local_bytes_per_s"),
        dpe_block=(block[0], block[1], block[2]),
        dpe_block_cycles=fields.positive_int("pe.dpe_block_cycles"),
        fp16_macs_per_cycle=fields.positive_int("pe.fp16_macs_per_cycle"),
        accumulator_banks=fields.positive_int("pe.accumulator_banks"),
        accumulator_bytes=fields.positive_int("pe.accumulator_bytes"),
        simd_elements_per_cycle=fields.positive_int("pe.simd_elements_per_cycle"),
        vector_bytes_per_cycle=fields.positive_int("pe.vector_bytes_per_cycle"),
        dma_issue_cycles=fields.non_negative_int("pe.dma_issue_cycles"),
        onchip_bytes=fields.positive_int("sram.bytes"),
        onchip_bytes_per_s=fields.positive_number("sram.bytes_per_s"),
        onchip_latency_cycles=fields.non_negative_int("sram.latency_cycles"),
        dram_bytes=fields.positive_int("dram.bytes"),
        dram_bytes_per_s=fields.positive_number("dram.bytes_per_s"),
        dram_latency_cycles=fields.non_negative_int("dram.latency_cycles"),
        multicast=fields.choice("noc.multicast", MULTICAST_KINDS),
        noc_pe_bytes_per_cycle=fields.positive_int("noc.pe_link_bytes_per_cycle"),
        noc_hop_cycles=fields.non_negative_int("noc.hop_cycles"),
        barrier_cycles=fields.non_negative_int("noc.barrier_cycles"),
        reduction_directions=tuple(directions),
        reduction_link_bytes_per_cycle=fields.positive_int("reduction.link_bytes_per_cycle"),
        reduction_hop_cycles=fields.non_negative_int("reduction.hop_cycles"),
        host_bytes_per_s=fields.positive_number("host.bytes_per_s"),
    )
    m, k, n = device.dpe_block
    if (m * k * n) % device.dpe_block_cycles:
        raise fields._bad("pe.dpe_block_cycles", f"a divisor of the block's {m * k * n} MACs", device.dpe_block_cycles)
    if device.accumulator_banks < 4:
        # section 4's 2x2 accumulator blocking needs four banks
        raise fields._bad("pe.accumulator_banks", "at least 4 (section 4's 2x2 accumulator blocking)",
                          device.accumulator_banks)
    return device
