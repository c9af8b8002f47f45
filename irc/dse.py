"""Design-space exploration of chips with off-chip memory (seeds/004 s6.4).

A sweep is the cross product of HBM bandwidths, exchange (link) bandwidths, topologies
(all-to-all, 2D mesh) and core counts; each point is a device derived from a base device
(``point_device``) on which one workload (``irc.workloads.llm``) is planned with the chosen
designs of ELK s6.1 (``irc.planner.elk``). The points differing only in their HBM
bandwidth form a *series* (``hbm_series``), planned in one task in increasing HBM order,
each point seeded with the previous one's decisions (``offchip_study``'s ``seeds``: a
plan chosen on a slower HBM runs at least as fast on a faster one, so no design's latency
grows with the HBM bandwidth along a series) and sharing its op tables (they do not
price the HBM). Series are independent, so they run through any
``concurrent.futures.Executor`` (a local process pool, or a Dask cluster's executor);
the CSV is rewritten (all at once, `irc.output.write_atomically`) with every finished
point as each series finishes, in point order, so a sweep that stops early keeps the
points it finished and the final CSV is the same whatever ran it.
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

from irc.cost import DEFAULT_COST_MODEL
from irc.devices import Device, family_of, load_device
from irc.devices.loader import MAX_CORES
from irc.devices.topology import allreduce_cycles
from irc.lowering.model_from_ir import ArgumentLoads
from irc.model_sources import ModelSourceError, model_source, te_text_model
from irc.output import write_atomically
from irc.plotting import pyplot
from irc.planner.elk import OffchipStudy, infer_layers, offchip_study, weight_bytes
from irc.plans.errors import PlanError
from irc.planner.model import ModelSpec, ModelSpecError
from irc.planner.op_table import FrontierCache
from irc.workloads.llm import MODELS, allreduce_bytes, decoder_te, dit_workload, llm_config

TOPOLOGIES = ("all-to-all", "mesh-2d")
COLUMNS = ("point", "hbm_gbps", "link_gbps", "topology", "cores", "design", "latency_ms", "of_ideal", "of_bound",
           "link_share", "loads_yield")


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
    worth per chip; the HBM bandwidth scales with the chips; a mesh's edge ports at the
    rate derived for the point, ``irc.devices.topology.edge_port_bytes_per_s``)."""
    if not isinstance(base, Device):
        raise DseError(f"device '{base.name}' is of the {family_of(base).name} family; irc-dse sweeps "
                       f"chips of the IPU kind with off-chip memory ([offchip]), such as ipu-pod4-hbm")
    if base.offchip is None:
        raise DseError(f"device '{base.name}': the base device of a sweep needs off-chip memory ([offchip])")
    per_chip = min(point.cores, base.cores_per_chip) if point.cores <= base.cores_per_chip else base.cores_per_chip
    mesh = mesh_shape(per_chip) if point.topology == "mesh-2d" else None
    # the edge ports' rate follows the point's HBM bandwidth and mesh (derived, as a file without it)
    offchip = dataclasses.replace(base.offchip, bytes_per_s=point.hbm_bytes_per_s, edge_port_bytes_per_s=None)
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
    """What every point plans: a built-in model (``irc.workloads.llm.workload`` arguments)
    or a model file (``model`` ending in .onnx or .mlir; ``batch`` sets its symbolic
    dimension), and the designs."""

    model: str = "llama2-13b"
    batch: int = 32
    seq: int = 2048
    chips: int | None = None   # tensor-parallel chips; None: 4 for a built-in model (ELK s5), 1 for a file
    layers: int | None = None
    factor: int = 1
    designs: tuple[str, ...] = ("basic", "static", "dyn", "full", "ideal")
    cost: str = DEFAULT_COST_MODEL
    max_displacement: int | None = None   # None: the paper's whole reorder tree (s4.4)


def chips_of(workload: Workload) -> int:
    """The chips ``workload`` is split over (its own, or 4 for a built-in model as ELK s5
    runs them, 1 for a model file)."""

    return workload.chips if workload.chips is not None else 4 if workload.model in MODELS else 1


def builtin_model(name: str, batch: int = 32, seq: int = 2048, chips: int = 4, layers: int | None = None,
                  factor: int = 1) -> tuple[ModelSpec, list[int | None], ArgumentLoads | None]:
    """(model, each op's layer, what its ops load from non-weight arguments or None:
    `irc.lowering.model_from_ir.ArgumentLoads`) of the built-in model ``name`` (``irc.workloads.llm.MODELS``): one chip's share
    under ``chips``-way tensor parallelism, ``layers`` deep (default: the model's), its
    widths divided by ``factor``. An LLM is its te program (`decoder_te`) planned as a
    .mlir file of it is (`irc.model_sources.te_text_model`), its layers found by their
    op signatures as a file's are; a ``ModelSpecError`` names a chip count its heads do
    not split over."""
    if name == "dit-xl":
        model, layer_of = dit_workload(batch, chips, layers, factor)
        return model, list(layer_of), None
    text = decoder_te(llm_config(name, factor), batch, seq, chips, layers)
    model, _, extra = te_text_model(text, name)
    return model, infer_layers(model), extra


def workload_model(workload: Workload) -> tuple:
    """(model, each op's layer or None to infer them, what its ops load from non-weight
    arguments (``ArgumentLoads``, as `rtensor-partition` prices them) or None, per op the bytes each chip all-reduces after it) of
    ``workload``: a built-in model by name, one chip's share of it split over the chips
    (``chips_of``; tensor parallelism, `irc.workloads.llm.allreduce_bytes`), or an .onnx
    or .mlir file planned whole on one chip (`irc.model_sources`: its arguments marked
    ``irc.weight`` are weights, the other arguments it reads are loaded from HBM too). A
    model with no weights to preload, or a file that cannot be read, is a ``DseError``
    naming ``--model``; a chip count the model cannot be split over one naming
    ``--chips``."""

    name, chips = workload.model, chips_of(workload)
    if name in MODELS:
        try:
            model, layer_of, extra = builtin_model(name, workload.batch, workload.seq, chips, workload.layers,
                                                   workload.factor)
        except ModelSpecError as error:   # a chip count the model's heads do not split over
            raise DseError(f"{'--chips' if 'chips' in str(error) else '--model'}: {error}") from None
        return model, layer_of, extra, allreduce_bytes(model, chips)
    if not name.endswith((".onnx", ".mlir")):
        raise DseError(f"--model: '{name}' is neither a built-in model ({', '.join(MODELS)}) nor an .onnx or "
                       f".mlir file")
    if chips != 1:
        raise DseError(f"--chips: a model file is planned whole on one chip (--chips 1); splitting it over "
                       f"{chips} chips is for the built-in models ({', '.join(MODELS)})")
    try:
        model, _, extra = model_source(name).build(workload.batch)
    except ModelSourceError as error:
        raise DseError(f"--model: {str(error).removeprefix('error: ')}") from None
    if sum(weight_bytes(op) for op in model.ops) <= 0:
        raise DseError(f"--model: {name} has no weights to preload (no ONNX initializer, no argument marked "
                       f"irc.weight read by an op the planner describes): nothing for ELK to schedule")
    return model, None, extra, None


def allreduce_exec_cycles(device: Device, allreduce: Sequence[float] | None, chips: int) -> list[float] | None:
    """Per op, the cycles of the all-reduce after it on ``device`` split over ``chips``
    (`irc.devices.topology.allreduce_cycles`); a device that is already a pool of chips,
    or has no inter-chip links, cannot be split further: a ``DseError`` naming ``--chips``."""
    if allreduce is None or chips <= 1:
        return None
    if device.chips > 1:
        raise DseError(f"--chips: device '{device.name}' is already a pool of {device.chips} chips; split a model "
                       f"over {chips} chips of a one-chip device (ipu-mk2-hbm), or give --chips 1")
    if device.offchip is None or not device.offchip.inter_chip_bytes_per_s:
        raise DseError(f"--chips: device '{device.name}' has no inter-chip links (offchip.inter_chip_bytes_per_s)")
    return [allreduce_cycles(device, nbytes, chips) for nbytes in allreduce]


def offchip_inputs(loads: ArgumentLoads | None) -> dict:
    """``offchip_study``'s arguments for a model's non-weight argument loads (none: {})."""
    return {} if loads is None else {"extra_hbm_bytes": loads.hbm_bytes, "input_loads": loads.own}


def hbm_series(sweep_points: Sequence[Point]) -> list[list[Point]]:
    """The points of a sweep grouped by all but their HBM bandwidth (link rate, topology,
    cores): each group in increasing HBM bandwidth (equal ones in point order), the groups
    in the order of their first points."""
    groups: dict[tuple, list[Point]] = {}
    for point in sweep_points:
        groups.setdefault((point.link_bytes_per_s, point.topology, point.cores), []).append(point)
    return [sorted(group, key=lambda point: (point.hbm_bytes_per_s, point.index)) for group in groups.values()]


def plan_point(base_device: str, workload: Workload, point: Point, seeds: dict | None = None,
               cache: FrontierCache | None = None) -> tuple[Device, OffchipStudy, FrontierCache]:
    """(device, study, cache) of one point: its designs and Ideal planned per token of a
    decode loop as the compiler plans it (`irc.planner.elk.offchip_study`), ``seeds`` the
    decisions of the same series at a slower HBM (or None), ``cache`` the op tables of
    another point of the series (they price the exchange, never the HBM; None: new)."""
    device = point_device(load_device(base_device), point)
    model, layer_of, loads, allreduce = workload_model(workload)
    if cache is None:
        cache = FrontierCache(device, workload.cost)
    cache.device = device
    try:
        study = offchip_study(model, cache, tuple(dict.fromkeys(workload.designs + ("ideal",))),
                              **offchip_inputs(loads), layer_of=layer_of, max_orders=None,
                              max_displacement=workload.max_displacement, loop=True,
                              extra_exec_cycles=allreduce_exec_cycles(device, allreduce, chips_of(workload)),
                              seeds=seeds)
    except PlanError as error:   # as a plain ValueError: a planner error's own arguments do not pickle back
        raise ValueError(str(error)) from None
    return device, study, cache


def point_rows(point: Point, device: Device, study: OffchipStudy, designs: Sequence[str]) -> list[dict]:
    """The CSV rows of one planned point (one per design). Latencies are per token of a
    decode loop (as benchmarks/elk.py reports them), ``of_bound`` each one's ratio to the
    overlap bound, ``link_share`` the share of a link its preloads are paced to (θ; 1:
    unpaced), ``loads_yield`` whether they yield a contended link to the operators (ELK's
    artifact's delay_comp=False) rather than the operators waiting."""
    cycles = {design: decision.latency_cycles for design, decision in study.decisions.items()}
    return [{
        "point": point.index, "hbm_gbps": f"{point.hbm_bytes_per_s / 1e9:g}",
        "link_gbps": f"{point.link_bytes_per_s / 1e9:g}", "topology": point.topology, "cores": point.cores,
        "design": design, "latency_ms": f"{cycles[design] / device.clock_hz * 1e3:.6g}",
        "of_ideal": f"{cycles['ideal'] / cycles[design]:.4f}", "of_bound": f"{cycles[design] / study.bound_cycles:.4f}",
        "link_share": f"{study.decisions[design].link_share:g}",
        "loads_yield": str(study.decisions[design].loads_yield).lower(),
    } for design in designs]


def evaluate(base_device: str, workload: Workload, point: Point) -> list[dict]:
    """The CSV rows of one point planned alone (``plan_point``, ``point_rows``)."""
    device, study, _ = plan_point(base_device, workload, point)
    return point_rows(point, device, study, workload.designs)


@dataclass
class SeriesRun:
    """What a series' task returns (``evaluate_series``): the rows of each point it
    finished, in its order, and the point that failed and why (None: none did)."""

    rows: list[list[dict]]
    failed: Point | None = None
    error: Exception | None = None


def evaluate_series(base_device: str, workload: Workload, series: Sequence[Point], seeded: bool = True) -> SeriesRun:
    """The rows of a series' points (``hbm_series``) planned in its order on shared op
    tables, each point (with ``seeded``) seeded with the previous one's decisions; runs in
    a worker. A point that fails ends the series, the rows before it kept."""
    rows: list[list[dict]] = []
    seeds, cache = None, None
    for point in series:
        try:
            device, study, cache = plan_point(base_device, workload, point, seeds if seeded else None, cache)
            rows.append(point_rows(point, device, study, workload.designs))
        except Exception as error:   # a point's failure is reported with the points before it
            return SeriesRun(rows, point, error)
        seeds = study.decisions
    return SeriesRun(rows)


def csv_text(rows: list[dict]) -> str:
    """The CSV of ``rows`` (a header, then one line per row)."""
    stream = io.StringIO(newline="")
    writer = csv.DictWriter(stream, COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return stream.getvalue()


def sweep(base_device: str, workload: Workload, sweep_points: Sequence[Point], executor: Executor,
          csv_path: str | None, advance: Callable[[str], None] | None = None, seeded: bool = True) -> list[dict]:
    """Run every series of points (``hbm_series``, ``evaluate_series``; ``seeded`` as
    there) on ``executor``; the CSV (``csv_path``; None: the caller writes it at the end)
    holds the finished points, in point order, after each series. A failed point cancels
    the series not yet started and raises `PointFailed`; the CSV keeps what finished
    (an existing CSV is left as it was when no point finished)."""
    rows: list[dict] = []
    futures = {executor.submit(evaluate_series, base_device, workload, series, seeded): series
               for series in hbm_series(sweep_points)}
    finished = 0
    for future in as_completed(futures):
        series = futures[future]
        try:
            run = future.result()
        except BaseException as error:   # the worker or the cluster failed: at the series' first point
            run = SeriesRun([], series[0], error)
        for point, found in zip(series, run.rows):
            finished += 1
            rows.extend(found)
            if advance is not None:
                advance(f"point {point.index}")
        rows.sort(key=lambda row: (row["point"], workload.designs.index(row["design"])))
        if csv_path is not None and run.rows:
            write_atomically(csv_path, csv_text(rows))
        if run.failed is not None:
            for other in futures:
                other.cancel()
            raise PointFailed(run.failed, run.error, finished) from run.error
    return rows


def plot(rows: list[dict], path: str) -> None:
    """Latency against HBM bandwidth, one line per design and topology (s6.4, Figure 19)."""
    plt = pyplot()

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
