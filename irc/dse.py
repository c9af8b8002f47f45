"""Design-space exploration of chips with off-chip memory (seeds/004 s6.4).

A sweep is the cross product of HBM bandwidths, exchange (link) bandwidths, topologies
(all-to-all, 2D mesh) and core counts; each point is a device derived from a base device
(``point_device``) on which one workload (``irc.planner.llm``) is planned with the chosen
designs of ELK s6.1 (``irc.planner.elk``). Points are independent, so they run through any
``concurrent.futures.Executor`` (a local process pool, or a Dask cluster's executor);
the CSV is rewritten (all at once, `irc.output.write_atomically`) with every finished
point as each one finishes, in point order, so a sweep that stops early keeps the points
it finished and the final CSV is the same whatever ran it.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import itertools
import math
from concurrent.futures import Executor, as_completed
from dataclasses import dataclass
from typing import Callable, Sequence

from irc.devices import Device, load_device
from irc.devices.loader import MAX_CORES
from irc.output import write_atomically
from irc.planner.elk import elk_plan, preload_ops
from irc.planner.llm import workload as build
from irc.planner.op_table import FrontierCache

TOPOLOGIES = ("all-to-all", "mesh-2d")
COLUMNS = ("point", "hbm_gbps", "link_gbps", "topology", "cores", "design", "latency_ms", "of_ideal")


class DseError(ValueError):
    """A sweep that cannot be set up (a bad bandwidth, topology or core count)."""


class PointFailed(Exception):
    """A point of a sweep failed (its worker raised ``error``, or the cluster failed);
    the CSV holds the ``finished`` points that finished before it."""

    def __init__(self, point: "Point", error: BaseException, finished: int):
        super().__init__(point, error, finished)
        self.point, self.error, self.finished = point, error, finished

    def describe(self) -> str:
        point = self.point
        return (f"point {point.index} (HBM {point.hbm_bytes_per_s / 1e9:g} GB/s, links "
                f"{point.link_bytes_per_s / 1e9:g} GB/s, {point.topology}, {point.cores} cores)")


@dataclass(frozen=True)
class Point:
    index: int
    hbm_bytes_per_s: float
    link_bytes_per_s: float
    topology: str
    cores: int


def mesh_shape(cores: int) -> tuple[int, int]:
    """The most nearly square rows x cols with rows * cols = cores."""
    rows = max(r for r in range(1, math.isqrt(cores) + 1) if cores % r == 0)
    return rows, cores // rows


def point_device(base: Device, point: Point) -> Device:
    """``base`` with the point's HBM and link bandwidth, topology and cores (one chip's
    worth per chip; the HBM bandwidth scales with the chips)."""
    if not isinstance(base, Device):
        raise DseError(f"device '{base.name}' is of the {getattr(base, 'family', 'another')} family; irc-dse sweeps "
                       f"chips of the IPU kind with off-chip memory ([offchip]), such as ipu-pod4-hbm")
    if base.offchip is None:
        raise DseError(f"device '{base.name}': the base device of a sweep needs off-chip memory ([offchip])")
    per_chip = min(point.cores, base.cores_per_chip) if point.cores <= base.cores_per_chip else base.cores_per_chip
    mesh = mesh_shape(per_chip) if point.topology == "mesh-2d" else None
    offchip = dataclasses.replace(base.offchip, bytes_per_s=point.hbm_bytes_per_s)
    return dataclasses.replace(
        base, name=f"{base.name}@{point.index}", cores=point.cores, cores_per_chip=per_chip,
        link_bytes_per_s=point.link_bytes_per_s,
        shift_cycles_per_byte=base.shift_cycles_per_byte * base.link_bytes_per_s / point.link_bytes_per_s,
        topology=point.topology, mesh=mesh, offchip=offchip,
        link_latency_cycles=base.link_latency_cycles or (1.0 if mesh else 0.0),
    )


def points(hbm_gbps: Sequence[float], link_gbps: Sequence[float], topologies: Sequence[str],
           cores: Sequence[int]) -> list[Point]:
    """The sweep's points; a bad value is a ``DseError`` naming the field."""
    for name, values in (("--hbm", hbm_gbps), ("--link", link_gbps)):
        for value in values:
            if not (isinstance(value, (int, float)) and math.isfinite(value) and 0 < value <= 1e6):
                raise DseError(f"{name}: bandwidth must be a positive number of GB/s (at most 1e6), got {value!r}")
    for topology in topologies:
        if topology not in TOPOLOGIES:
            raise DseError(f"--topology: unknown topology {topology!r}; known: {', '.join(TOPOLOGIES)}")
    for count in cores:
        if not (isinstance(count, int) and 0 < count <= MAX_CORES):
            raise DseError(f"--cores: a core count must be a positive integer of at most {MAX_CORES}, got {count!r}")
    for name, values in (("--hbm", hbm_gbps), ("--link", link_gbps), ("--topology", topologies), ("--cores", cores)):
        if not values:
            raise DseError(f"{name}: give at least one value")
    return [Point(i, h * 1e9, l * 1e9, t, c)
            for i, (h, l, t, c) in enumerate(itertools.product(hbm_gbps, link_gbps, topologies, cores))]


@dataclass(frozen=True)
class Workload:
    """What every point plans: ``irc.planner.llm.workload`` arguments and the designs."""

    model: str = "llama2-13b"
    batch: int = 32
    seq: int = 2048
    chips: int = 4
    layers: int | None = None
    factor: int = 1
    designs: tuple[str, ...] = ("basic", "static", "dyn", "full", "ideal")
    cost: str = "t10"
    max_displacement: int | None = None   # None: the paper's whole reorder tree (s4.4)


def evaluate(base_device: str, workload: Workload, point: Point) -> list[dict]:
    """The CSV rows of one point (one per design); runs in a worker."""
    device = point_device(load_device(base_device), point)
    model, layer_of = build(workload.model, workload.batch, workload.seq, workload.chips, workload.layers,
                            workload.factor)
    cache = FrontierCache(device, workload.cost)
    ops = preload_ops(model, cache, layer_of)
    latency = {}
    for design in dict.fromkeys(workload.designs + ("ideal",)):
        decision = elk_plan(model, cache, design, ops=ops, max_displacement=workload.max_displacement)
        latency[design] = decision.latency_cycles / device.clock_hz * 1e3
    return [{
        "point": point.index, "hbm_gbps": f"{point.hbm_bytes_per_s / 1e9:g}",
        "link_gbps": f"{point.link_bytes_per_s / 1e9:g}", "topology": point.topology, "cores": point.cores,
        "design": design, "latency_ms": f"{latency[design]:.6g}",
        "of_ideal": f"{latency['ideal'] / latency[design]:.4f}",
    } for design in workload.designs]


def csv_text(rows: list[dict]) -> str:
    """The CSV of ``rows`` (a header, then one line per row)."""
    stream = io.StringIO(newline="")
    writer = csv.DictWriter(stream, COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return stream.getvalue()


def sweep(base_device: str, workload: Workload, sweep_points: Sequence[Point], executor: Executor,
          csv_path: str | None, advance: Callable[[str], None] | None = None) -> list[dict]:
    """Run every point on ``executor``; the CSV (``csv_path``; None: the caller writes
    it at the end) holds the finished points, in point order, after each one. A failed
    point cancels the points not yet started and raises `PointFailed`; the CSV keeps what
    finished (an existing CSV is left as it was when no point finished)."""
    rows: list[dict] = []
    futures = {executor.submit(evaluate, base_device, workload, point): point for point in sweep_points}
    finished = 0
    for future in as_completed(futures):
        point = futures[future]
        try:
            found = future.result()
        except BaseException as error:
            for other in futures:
                other.cancel()
            raise PointFailed(point, error, finished) from error
        finished += 1
        rows.extend(found)
        rows.sort(key=lambda row: (row["point"], workload.designs.index(row["design"])))
        if csv_path is not None:
            write_atomically(csv_path, csv_text(rows))
        if advance is not None:
            advance(f"point {point.index}")
    return rows


def plot(rows: list[dict], path: str) -> None:
    """Latency against HBM bandwidth, one line per design and topology (s6.4, Figure 19)."""
    import matplotlib  # an optional extra ('.[plot]'): only a plot needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # once the Agg backend is chosen

    figure, axis = plt.subplots(figsize=(6, 4))
    keys = sorted({(row["design"], row["topology"], row["link_gbps"], row["cores"]) for row in rows})
    for design, topology, link, cores in keys:
        mine = sorted((float(r["hbm_gbps"]), float(r["latency_ms"])) for r in rows
                      if (r["design"], r["topology"], r["link_gbps"], r["cores"]) == (design, topology, link, cores))
        axis.plot([x for x, _ in mine], [y for _, y in mine], marker="o",
                  label=f"{design}, {topology}, {link} GB/s links, {cores} cores")
    axis.set_xlabel("HBM bandwidth (GB/s)")
    axis.set_ylabel("per-token latency (ms)")
    axis.legend(fontsize=6)
    figure.tight_layout()
    image = io.BytesIO()
    figure.savefig(image, format="png", dpi=120)
    plt.close(figure)
    write_atomically(path, image.getvalue())
