"""What a run with off-chip memory did (ELK s6.3, Figure 18): HBM and exchange
utilisation, the exposed (not overlapped) load time, and the four-way breakdown of the
chip's time into preload only (the HBM loads while the cores wait), execute only,
overlapped preload and execution, and interconnect (execution or preload stopped by a
busy exchange: an operator waiting for the link its transfers share with preloads,
``contention`` events, ``irc.devices.topology.operator_contention``).

Pure functions of a ``Report``'s events: the chip's own timeline (``events``) and the
off-chip memory's (``hbm_events``)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import DictionaryAttr

from irc.devices.topology import multicast_link_bytes, replication


BREAKDOWN = ("preload", "execute", "overlapped", "interconnect")
EXCHANGE = ("shift", "sync", "reduction", "relayout")


def _merge(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[list[float]] = []
    for start, end in sorted(intervals):
        if end <= start:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(a, b) for a, b in merged]


def _overlap(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    total, i, j = 0.0, 0, 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0.0, end - start)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def _length(intervals: list[tuple[float, float]]) -> float:
    return sum(end - start for start, end in intervals)


def _without(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The parts of merged intervals ``a`` outside merged intervals ``b``."""
    left: list[tuple[float, float]] = []
    for start, end in a:
        for cut_start, cut_end in b:
            if cut_end <= start or cut_start >= end:
                continue
            if cut_start > start:
                left.append((start, cut_start))
            start = max(start, cut_end)
        if end > start:
            left.append((start, end))
    return left


def hbm_intervals(report) -> list[tuple[float, float]]:
    """When the off-chip memory was loading: its ``hbm`` events, less the host I/O its
    schedule pauses for (``Chip._host_io``)."""
    hbm = _merge([(e.start, e.start + e.cycles) for e in report.hbm_events if e.category == "hbm"])
    return _without(hbm, _merge([(e.start, e.start + e.cycles) for e in report.events if e.category == "host_io"]))


def breakdown(report) -> dict[str, float]:
    """Cycles of each of Figure 18's four categories (they add up to the chip time spent
    busy or waiting for the HBM; host I/O counts as execution)."""
    hbm = hbm_intervals(report)
    stalled = [(e.start, e.start + e.cycles) for e in report.events if e.category == "preload_wait"]
    contended = _merge([(e.start, e.start + e.cycles) for e in report.events if e.category == "contention"])
    busy = _merge([(e.start, e.start + e.cycles) for e in report.events
                   if e.category not in ("preload_wait", "contention")])
    overlapped = _overlap(busy, hbm)
    return {
        "preload": _length(_merge(stalled)),
        "execute": _length(busy) - overlapped,
        "overlapped": overlapped,
        "interconnect": _length(contended),
    }


def offchip_summary(report) -> dict:
    total = report.total_cycles
    seconds = total / report.clock_hz if report.clock_hz else 0.0
    hbm_busy = _length(hbm_intervals(report))
    exchange = sum(report.cycles.get(k, 0.0) for k in EXCHANGE)
    parts = breakdown(report)
    return {
        "preloads": sum(e.category == "hbm" for e in report.hbm_events),
        "hbm_bytes": report.hbm_bytes,
        "hbm_busy_cycles": hbm_busy,
        "hbm_utilisation": (report.hbm_bytes / report.hbm_bytes_per_s / seconds) if seconds and report.hbm_bytes_per_s else 0.0,
        "exchange_utilisation": exchange / total if total else 0.0,
        "exposed_load_cycles": report.cycles.get("preload_wait", 0.0),
        "breakdown": parts,
    }


def offchip_lines(report) -> list[str]:
    summary = offchip_summary(report)
    total = report.total_cycles or 1.0
    lines = [
        f"off-chip memory: {summary['preloads']} preloads, {summary['hbm_bytes']:,.0f} bytes, "
        f"HBM busy {summary['hbm_busy_cycles']:,.0f} cycles, HBM utilisation {100 * summary['hbm_utilisation']:.1f}%, "
        f"exchange utilisation {100 * summary['exchange_utilisation']:.1f}%",
        f"  exposed load time {summary['exposed_load_cycles']:,.0f} cycles "
        f"({100 * summary['exposed_load_cycles'] / total:.1f}% of chip time)",
        "  breakdown (ELK Figure 18): " + ", ".join(
            f"{name} {value:,.0f} ({100 * value / total:.1f}%)" for name, value in summary["breakdown"].items()),
    ]
    return lines


def preload_link_rates(device, bytes_per_core: float, cycles: float, hbm_bytes: float | None = None) -> dict:
    """Bytes per cycle a preload puts on each exchange link of a chip while it runs: every
    core receives ``bytes_per_core`` over ``cycles`` along the routes from the HBM
    controllers, the ``hbm_bytes`` read from HBM broadcast to the cores sharing them (None:
    no replicas; ``irc.devices.topology.multicast_link_bytes``)."""
    replicas = 1.0 if hbm_bytes is None else replication(device, bytes_per_core, hbm_bytes)
    return {link: load * bytes_per_core / cycles for link, load in multicast_link_bytes(device, replicas).items()}


@dataclass
class PreloadFlow:
    """A preload on the exchange: from ``start`` to ``end`` it puts ``rates`` (link -> bytes
    per cycle) on the links from the HBM controllers, ``pressure`` of the busiest one cores
    also exchange over (``irc.devices.topology.preload_pressure``); ``buffer`` is the
    preloaded buffer's id and ``event`` its ``hbm`` event."""

    start: float
    end: float
    rates: dict
    pressure: float = 0.0
    buffer: int | None = None
    event: object = None
    yields: bool = False
    """It yields the link to a contending operator (``device.preload_async``'s ``yields``)."""


def planned_lines(function, report) -> list[str]:
    """What the ELK plan of ``function`` (its ``irc.preloaded`` attribute, written by
    ``rtensor-partition``) predicted beside what the run did: HBM busy and exposed load
    cycles. Nothing for a function planned without preloading."""
    attr = function.attributes.get("irc.preloaded")
    if not isinstance(attr, DictionaryAttr) or not report.hbm_events:
        return []
    plan = dict(attr.data.items())
    summary = offchip_summary(report)
    hbm, exposed = float(plan["hbm_cycles"].value.data), float(plan["exposed_cycles"].value.data)
    share = plan.get("link_share")
    paced = f", preloads paced to {share.value.data:g} of a link" if share is not None and share.value.data < 1 else ""
    line = (f"ELK plan ({plan['design'].data}, {plan['split'].data} split{paced}): HBM busy {hbm:,.0f} cycles planned, "
            f"{summary['hbm_busy_cycles']:,.0f} interpreted; exposed load {exposed:,.0f} cycles planned, "
            f"{summary['exposed_load_cycles']:,.0f} interpreted")
    if "contention_cycles" in plan:
        line += (f"; interconnect {float(plan['contention_cycles'].value.data):,.0f} cycles planned, "
                 f"{summary['breakdown']['interconnect']:,.0f} interpreted")
    return [line]
