"""What an MTIA run took: per kernel, cycles by category and bytes per memory level.

`irc.interpreter.mtia` fills a `KernelRecord` per operator's program and reports them as
an `MtiaReport` (``irc-run --report``); both are re-exported from there.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Traffic:
    """Bytes moved per memory level (local: every PE's local memory summed)."""

    local: float = 0.0
    sram: float = 0.0
    dram: float = 0.0

    def add(self, level: str, nbytes: float) -> None:
        setattr(self, level, getattr(self, level) + float(nbytes))


@dataclass
class KernelRecord:
    """One operator's program: its timeline's categories (cycles) and traffic. ``engine``
    is the unit doing its arithmetic: the DPE (MML commands) or the SIMD engine (the
    pooling of an embedding bag, a streamed operator)."""

    name: str
    pes: int
    cycles: dict = field(default_factory=dict)
    traffic: Traffic = field(default_factory=Traffic)
    mml_commands: int = 0
    dma_commands: int = 0
    last_mml_end: float = 0.0
    engine: str = "DPE"
    kind: str = "matmul"
    steps: int = 0                     # a T10 plan's compute steps
    shifts: int = 0                    # and the NoC shifts between them

    @property
    def total(self) -> float:
        return float(sum(self.cycles.values()))


@dataclass
class MtiaReport:
    """What an MTIA run took: per kernel and in total, cycles by category and bytes per
    memory level (``irc-run --report``)."""

    device: str
    clock_hz: float
    pes: int
    kernels: list
    host_ops: list = field(default_factory=list)

    @property
    def total_cycles(self) -> float:
        return sum(k.total for k in self.kernels)

    kernel_cycles = total_cycles
    model_cycles = total_cycles

    @property
    def seconds(self) -> float:
        return self.total_cycles / self.clock_hz

    def traffic(self) -> Traffic:
        total = Traffic()
        for kernel in self.kernels:
            for level in ("local", "sram", "dram"):
                total.add(level, getattr(kernel.traffic, level))
        return total

    def categories(self) -> dict:
        merged: dict = {}
        for kernel in self.kernels:
            for name, cycles in kernel.cycles.items():
                merged[name] = merged.get(name, 0.0) + cycles
        return merged

    def chrome_trace(self) -> dict:
        events, start = [], 0.0
        for kernel in self.kernels:
            for name, cycles in kernel.cycles.items():
                events.append({"name": f"{kernel.name}:{name}", "ph": "X", "pid": 0, "tid": 0,
                               "ts": start / self.clock_hz * 1e6, "dur": cycles / self.clock_hz * 1e6})
                start += cycles
        return {"traceEvents": events}

    def __str__(self) -> str:
        total = self.total_cycles
        lines = [f"chip time on {self.device} (MTIA): {total:,.0f} cycles = {self.seconds * 1e6:.3f} us "
                 f"({len(self.kernels)} kernel(s))"]
        for name, cycles in self.categories().items():
            share = cycles / total * 100 if total else 0.0
            lines.append(f"  {name:<12} {cycles:>14,.0f} cycles  {share:5.1f}%")
        traffic = self.traffic()
        lines.append(f"traffic: local {traffic.local:,.0f} B, SRAM {traffic.sram:,.0f} B, LPDDR {traffic.dram:,.0f} B")
        for kernel in self.kernels:
            if kernel.kind == "rotation":
                commands = (f"{kernel.steps} compute step(s), {kernel.shifts} NoC shift(s) and "
                            f"{kernel.dma_commands} DMA commands per PE")
            elif kernel.engine == "DPE":
                commands = f"{kernel.mml_commands} MML and {kernel.dma_commands} DMA commands per PE"
            else:
                commands = f"{kernel.dma_commands} DMA commands per PE, SIMD"
            lines.append(f"  kernel {kernel.name}: {kernel.total:,.0f} cycles on {kernel.pes} PEs ({kernel.kind}); "
                         f"{commands}; SRAM {kernel.traffic.sram:,.0f} B, LPDDR {kernel.traffic.dram:,.0f} B, "
                         f"local {kernel.traffic.local:,.0f} B")
        if self.host_ops:
            lines.append(f"host: {len(self.host_ops)} op(s) run by the host, untimed (not in the chip time): "
                         + ", ".join(self.host_ops))
        return "\n".join(lines)
