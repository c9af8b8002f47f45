"""A chip run's report: its time by category, its events as a trace, and its SRAM use.

`irc.interpreter.chip.Chip.report` makes one; it is re-exported from
`irc.interpreter.chip`, where tools and tests import it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from irc.interpreter.offchip import offchip_lines, offchip_summary

CATEGORIES = ("compute", "shift", "sync", "reduction", "setup", "relayout", "host_io")


@dataclass
class Event:
    category: str
    name: str
    start: float
    cycles: float
    cores: int
    where: str
    links: dict | None = None   # a preload's: link -> bytes per cycle (one trace track per link)


@dataclass
class Report:
    """Chip time and its breakdown, peak SRAM per core and utilisation."""

    device: str
    cost_model: str
    clock_hz: float
    cycles: dict[str, float]
    peak_sram_bytes: int
    sram_bytes: int
    cores_used: int
    device_cores: int
    steps: int
    events: list[Event] = field(default_factory=list, repr=False)
    interpreter_peak_bytes: int = 0
    """The interpreter's own peak resident memory when the report was made (the host's,
    not the chip's)."""
    hbm_events: list[Event] = field(default_factory=list, repr=False)
    hbm_bytes: float = 0.0
    hbm_bytes_per_s: float = 0.0

    @classmethod
    def combine(cls, reports: list["Report"]) -> "Report":
        """One report over several chips a run used (one per target), times added."""
        if len(reports) == 1:
            return reports[0]
        first = reports[0]
        categories = dict.fromkeys(k for r in reports for k in r.cycles)
        return cls(
            device="+".join(dict.fromkeys(r.device for r in reports)),
            cost_model="+".join(dict.fromkeys(r.cost_model for r in reports)),
            clock_hz=first.clock_hz,
            cycles={k: sum(r.cycles.get(k, 0.0) for r in reports) for k in categories},
            peak_sram_bytes=max(r.peak_sram_bytes for r in reports),
            sram_bytes=max(r.sram_bytes for r in reports),
            cores_used=max(r.cores_used for r in reports),
            device_cores=max(r.device_cores for r in reports),
            steps=sum(r.steps for r in reports),
            events=[e for r in reports for e in r.events],
            interpreter_peak_bytes=max(r.interpreter_peak_bytes for r in reports),
            hbm_events=[e for r in reports for e in r.hbm_events], hbm_bytes=sum(r.hbm_bytes for r in reports),
            hbm_bytes_per_s=first.hbm_bytes_per_s,
        )

    @property
    def total_cycles(self) -> float:
        return float(sum(self.cycles.values()))

    @property
    def kernel_cycles(self) -> float:
        """The operators' compute-shift time: chip time without host I/O, the weights'
        setups and the on-chip relayouts between operators (what the planner predicts
        per operator)."""
        return self.model_cycles - self.cycles.get("relayout", 0.0) - self.cycles.get("setup", 0.0)

    @property
    def model_cycles(self) -> float:
        """Chip time without host I/O: the operators, the setups of their weights and the
        relayouts between them (what the model-wide planner predicts)."""
        return self.total_cycles - self.cycles.get("host_io", 0.0)

    @property
    def seconds(self) -> float:
        return self.total_cycles / self.clock_hz

    @property
    def compute_utilisation(self) -> float:
        total = self.total_cycles
        return self.cycles.get("compute", 0.0) / total if total else 0.0

    @property
    def core_utilisation(self) -> float:
        return self.cores_used / self.device_cores if self.device_cores else 0.0

    def as_dict(self) -> dict:
        return {
            "device": self.device,
            "cost_model": self.cost_model,
            "cycles": dict(self.cycles),
            "total_cycles": self.total_cycles,
            "kernel_cycles": self.kernel_cycles,
            "model_cycles": self.model_cycles,
            "seconds": self.seconds,
            "peak_sram_bytes": self.peak_sram_bytes,
            "sram_bytes": self.sram_bytes,
            "cores_used": self.cores_used,
            "device_cores": self.device_cores,
            "compute_utilisation": self.compute_utilisation,
            "core_utilisation": self.core_utilisation,
            "steps": self.steps,
            "interpreter_peak_bytes": self.interpreter_peak_bytes,
            **self._offchip_dict(),
        }

    def _offchip_dict(self) -> dict:
        if not self.hbm_events:
            return {}

        return {"offchip": offchip_summary(self)}

    def __str__(self) -> str:
        total = self.total_cycles or 1.0
        lines = [
            f"chip time on {self.device} ({self.cost_model} cost model): "
            f"{self.total_cycles:,.0f} cycles = {self.seconds * 1e3:.4f} ms",
        ]
        for name in CATEGORIES:
            value = self.cycles.get(name, 0.0)
            lines.append(f"  {name:<10} {value:>14,.0f} cycles  {100 * value / total:5.1f}%")
        lines.append(f"  kernels without host I/O: {self.kernel_cycles:,.0f} cycles")
        if self.cycles.get("relayout", 0.0) or self.cycles.get("setup", 0.0):
            lines.append(f"  kernels, setups and relayouts without host I/O: {self.model_cycles:,.0f} cycles")
        lines.append(
            f"peak SRAM per core: {self.peak_sram_bytes:,} of {self.sram_bytes:,} bytes "
            f"({100 * self.peak_sram_bytes / max(self.sram_bytes, 1):.1f}%)"
        )
        lines.append(
            f"utilisation: {self.cores_used} of {self.device_cores} cores, "
            f"compute {100 * self.compute_utilisation:.1f}% of chip time, {self.steps} compute steps"
        )
        if self.interpreter_peak_bytes:
            lines.append(f"interpreter peak memory: {self.interpreter_peak_bytes / 2**20:,.0f} MiB (host)")
        if self.hbm_events:
            lines += offchip_lines(self)
        return "\n".join(lines)

    def chrome_trace(self) -> dict:
        """Chrome/Perfetto trace: one track per category, microseconds."""
        tids = {name: i for i, name in enumerate(CATEGORIES + ("preload_wait", "contention", "hbm", "links"))}
        scale = 1e6 / self.clock_hz
        events = [
            {"name": "thread_name", "ph": "M", "pid": 0, "tid": tid, "args": {"name": name}}
            for name, tid in tids.items()
        ]
        events.append({"name": "process_name", "ph": "M", "pid": 0, "args": {"name": self.device}})
        for event in self.events + self.hbm_events:
            events.append({
                "name": event.name, "cat": event.category, "ph": "X", "pid": 0,
                "tid": tids[event.category], "ts": event.start * scale,
                "dur": event.cycles * scale,
                "args": {"cycles": event.cycles, "cores": event.cores, "at": event.where},
            })
        links: dict = {}   # one track per link a preload loads, busiest first within a preload
        for event in self.hbm_events:
            for link, rate in sorted((event.links or {}).items(), key=lambda item: -item[1]):
                name = "link " + " ".join(map(str, link))
                if name not in links:
                    links[name] = len(tids) + len(links)
                    events.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": links[name],
                                   "args": {"name": name}})
                events.append({
                    "name": f"{event.name} ({rate:.3g} B/cycle)", "cat": "links", "ph": "X", "pid": 0,
                    "tid": links[name], "ts": event.start * scale, "dur": event.cycles * scale,
                    "args": {"bytes_per_cycle": rate, "at": event.where},
                })
        return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": self.as_dict()}

    def write_trace(self, path: str) -> None:
        with open(path, "w") as stream:
            json.dump(self.chrome_trace(), stream)
