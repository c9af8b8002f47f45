"""A device description as data (DESIGN.md section 4).

A ``Device`` is everything the planner and the cost models need to know about a chip:
core count, per-core SRAM, the compute unit, and the exchange (link bandwidth, measured
shift throughput, barrier cost). Instances are loaded from TOML files by
``irc.devices.loader``; nothing in here is IPU-specific.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Device:
    """One inter-core connected chip (T10 section 2.1; seeds/003 "The Hardware")."""

    name: str
    description: str
    cores: int                      # cores usable by one operator
    cores_per_chip: int             # beyond this, exchange crosses chips
    sram_bytes: int                 # private scratchpad per core
    clock_hz: float
    systolic: tuple[int, int]       # (rows, cols) of the per-core matrix unit
    macs_per_cycle: int             # peak fp16 multiply-accumulates per cycle per core
    topology: str                   # "all-to-all" (only kind the planner costs today)
    link_bytes_per_s: float         # nominal per-core exchange bandwidth
    shift_cycles_per_byte: float    # measured shift throughput (IPU_COST_FACTS section 1)
    sync_cycles: int                # one barrier
    syncs_per_shift: int            # barriers paid per shifted tensor per step
    inter_chip_overhead: float      # multiplier on exchange when cores > cores_per_chip

    @property
    def link_cycles_per_byte(self) -> float:
        """Cycles to move one byte at the nominal link bandwidth."""
        return self.clock_hz / self.link_bytes_per_s

    @property
    def peak_macs_per_s(self) -> float:
        """Whole-chip peak multiply-accumulates per second (compute roofline)."""
        return self.cores * self.macs_per_cycle * self.clock_hz

    def seconds(self, cycles: float) -> float:
        return cycles / self.clock_hz
