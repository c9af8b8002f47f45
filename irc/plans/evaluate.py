"""Exact check and score of one plan: ``check_plan`` (T10 sections 4.2, 4.4, 5).

Plain Python over one plan; the search uses a numpy version of the same geometry
(``irc.planner.vector_score``) and asks this module for the final plans' full scores.

On a 2D-mesh chip a rotation's bytes are priced at the link its ring's routes load most
(``irc.devices.topology.exchange_bytes``: rings of cores numbered row-major, as
``irc.schedule`` numbers them, share the mesh's links), plus the longest route's hops:
a plan whose cut axes line up with the mesh's rows and columns (its last factor the
mesh's width) keeps every ring within a row or a column, one hop per step, as ELK maps
partitioned dimensions to mesh dimensions (seeds/004 s5). The search ranks candidates at
the all-to-all price, a lower bound, and prices the ones that bound cannot rule out with
the mesh's (``routed_cycles``), so its frontier is the mesh's.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np

from irc.cost import CostModel, OpWork, PlanGeometry, SubTask, get_cost_model
from irc.devices import Device, load_device
from irc.devices.topology import mesh_busiest, on_mesh
from irc.plans.constraints import PADDING_TOLERANCE, is_chain, minimum_cores
from irc.plans.errors import PlanError
from irc.plans.plan import MemoryBreakdown, Plan, PlanScore, ShiftLevel
from irc.plans.roles import compute_roles, tensor_dim_axes
from irc.plans.spec import OpSpec


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _check_shape(spec: OpSpec, plan: Plan, what: str = "operator") -> None:
    """That ``plan`` has one F_op and one f_t per axis of ``spec`` (an `OpSpec`, or any
    spec with `axis_names` and `tensors`, as a fused pair's) for each of its tensors."""
    axes = spec.axis_names
    if tuple(plan.axes) != axes:
        raise PlanError(f"plan axes {tuple(plan.axes)} differ from the {what}'s axes {axes}")
    if len(plan.op_factors) != len(axes) or any(
        not isinstance(f, int) or f < 1 for f in plan.op_factors
    ):
        raise PlanError(f"F_op must be {len(axes)} positive integers, got {list(plan.op_factors)}")
    names = {t.name for t in spec.tensors}
    for name in plan.temporal_factors:
        if name not in names:
            raise PlanError(f"temporal factors given for unknown tensor {name!r}")
    for tensor in spec.tensors:
        factors = plan.temporal_factors.get(tensor.name)
        if factors is None:
            raise PlanError(f"no temporal factors for tensor {tensor.name!r}")
        if len(factors) != len(axes) or any(not isinstance(f, int) or f < 1 for f in factors):
            raise PlanError(
                f"f_t of {tensor.name} must be {len(axes)} positive integers (one per op axis), got {list(factors)}"
            )
        for axis, factor in zip(axes, factors):
            if factor != 1 and not tensor.indexed_by(axis):
                raise PlanError(
                    f"f_t of {tensor.name} on axis {axis} is {factor}, but {tensor.name} is not indexed by {axis}"
                )


def resident_elements(tensors, axes, spans, plan: Plan) -> dict[str, int]:
    """Elements of each tensor's resident partition per core (T10 s4.1): its span on each
    axis (``spans``, per core) cut by its temporal factor; a compound dimension's terms
    overlap by (terms - 1)."""
    resident = {}
    for tensor in tensors:
        factors = plan.temporal_factors[tensor.name]
        elements = tensor.whole_elements
        for dim in tensor.dims:
            terms = [spans[axes.index(a)] // factors[axes.index(a)] for a in dim]
            elements *= sum(terms) - (len(terms) - 1)
        resident[tensor.name] = elements
    return resident


def check_plan(
    spec: OpSpec,
    plan: Plan,
    device: Device | str,
    cost: CostModel | str,
    *,
    min_utilization: float = 0.0,
    max_padding: float | None = None,
) -> PlanScore:
    """Check ``plan`` against every T10 constraint and return its score.

    Raises ``PlanError`` naming the first constraint that fails, with its numbers.
    ``min_utilization`` and ``max_padding`` are the search's optional pruning constraints
    (T10 s4.3.1); by default only the hard constraints are checked.
    """
    device = load_device(device)
    cost = get_cost_model(cost)
    _check_shape(spec, plan)
    axes = spec.axis_names
    op_factors = plan.op_factors
    tensors = spec.tensors
    cores = _checked_cores(spec, plan, device, min_utilization)
    # sharing: the cores holding the same sub-tensor differ only along axes not indexing it
    sharing = {
        t.name: math.prod(f for axis, f in zip(axes, op_factors) if not t.indexed_by(axis)) for t in tensors
    }
    _check_rotations(spec, plan, sharing)
    per_core, steps_per_axis, step_tiles, spans, padded = _step_geometry(spec, plan, max_padding)
    resident, held, memory = _memory(spec, plan, spans, steps_per_axis, device)
    levels = _shift_levels(spec, plan, resident, held)
    levels = _order_loops(levels, cost, device)
    shifted_bytes, events = _shifted(spec, plan, levels, device, resident, held)
    replicas = {t.name: sharing[t.name] // math.prod(plan.temporal_factors[t.name]) for t in tensors}
    work = _op_work(spec, plan, cores, sharing, replicas, (per_core, steps_per_axis, step_tiles), resident,
                    (shifted_bytes, events))
    breakdown = cost.op_time(device, work)
    breakdown = type(breakdown)(*(float(x) for x in (breakdown.compute, breakdown.shift, breakdown.sync, breakdown.reduction)))
    if not math.isfinite(breakdown.total):
        raise PlanError(f"cost model {cost.name} gives no finite time for this plan")
    return PlanScore(
        device=device.name,
        cost_model=cost.name,
        cores=cores,
        spatial_factors={
            t.name: tuple(f if t.indexed_by(axis) else 1 for axis, f in zip(axes, op_factors)) for t in tensors
        },
        sharing_cores=sharing,
        replicas=replicas,
        padded_extents=padded,
        steps_per_axis=tuple(steps_per_axis),
        step_tiles=tuple(step_tiles),
        steps=math.prod(steps_per_axis),
        loop_order=tuple(levels),
        memory=memory,
        cost=breakdown,
        seconds=breakdown.total / device.clock_hz,
    )


def _checked_cores(spec: OpSpec, plan: Plan, device: Device, min_utilization: float) -> int:
    """The plan's cores: F_op within every extent, the device's cores and the parallelism
    constraint's floor."""
    axes, extents, op_factors = spec.axis_names, spec.extents, plan.op_factors
    for axis, extent, factor in zip(axes, extents, op_factors):
        if factor > extent:
            raise PlanError(
                f"F_op on axis {axis} is {factor}, more than its extent {extent}: some cores would get no work"
            )
    cores = math.prod(op_factors)
    if cores > device.cores:
        raise PlanError(f"plan uses {cores} cores, device {device.name} has {device.cores}")
    floor = minimum_cores(spec, device, min_utilization)
    if cores < floor:
        raise PlanError(
            f"plan uses {cores} cores, fewer than the parallelism constraint's {floor} "
            f"(min_utilization={min_utilization:g})"
        )
    return cores


def _check_rotations(spec: OpSpec, plan: Plan, sharing: dict[str, int]) -> None:
    """Each tensor's temporal factors divide the cores sharing its partition, and on every
    axis the tensors' paces divide one another."""
    axes, tensors = spec.axis_names, spec.tensors
    for tensor in tensors:
        factors = plan.temporal_factors[tensor.name]
        total = math.prod(factors)
        if sharing[tensor.name] % total:
            raise PlanError(
                f"prod(f_t of {tensor.name})={total} does not divide the {sharing[tensor.name]} "
                f"cores sharing {tensor.name}'s partition"
            )
    for d, axis in enumerate(axes):
        paces = {t.name: plan.temporal_factors[t.name][d] for t in tensors if t.indexed_by(axis)}
        if not is_chain(paces.values()):
            listing = ", ".join(f"{name} has {pace}" for name, pace in paces.items())
            raise PlanError(
                f"temporal factors on axis {axis} must divide one another, but {listing}"
            )


def _step_geometry(spec: OpSpec, plan: Plan, max_padding: float | None):
    """Per axis: the extent per core, the temporal steps, the step tile and the span they
    cover, and the padded extent; padding must leave every fold unchanged (and within
    ``max_padding``)."""
    axes, extents, op_factors, tensors = spec.axis_names, spec.extents, plan.op_factors, spec.tensors
    per_core = [_ceil_div(extent, f) for extent, f in zip(extents, op_factors)]
    steps_per_axis = [max(plan.temporal_factors[t.name][d] for t in tensors) for d in range(len(axes))]
    for axis, extent, steps in zip(axes, per_core, steps_per_axis):
        if steps > extent:
            raise PlanError(
                f"axis {axis} is split into {steps} temporal partitions but has only {extent} elements per core"
            )
    step_tiles = [_ceil_div(extent, steps) for extent, steps in zip(per_core, steps_per_axis)]
    spans = [steps * tile for steps, tile in zip(steps_per_axis, step_tiles)]
    padded = tuple(f * span for f, span in zip(op_factors, spans))
    for axis, extent, factor, span in zip(axes, extents, op_factors, spans):
        if not spec.padding_admitted(axis, factor, span):
            raise PlanError(
                f"the plan pads reduction axis {axis} from {extent} to {factor * span}, and the padded "
                f"points would change the fold ({spec.combiner} over {axis}); choose F_op and f_t whose "
                f"product on {axis} divides {extent}"
            )
    if max_padding is not None:
        ratio = math.prod(p / e for p, e in zip(padded, extents))
        if ratio > max_padding * (1 + PADDING_TOLERANCE):
            raise PlanError(
                f"padded volume is {ratio:.4f}x the original, more than the padding constraint's {max_padding:.4f}x"
            )
    return per_core, steps_per_axis, step_tiles, spans, padded


def _memory(spec: OpSpec, plan: Plan, spans, steps_per_axis, device: Device):
    """Elements each core holds per tensor, bytes per element held (an output of partial
    sums in accumulators) and the memory per core, within the device's SRAM."""
    axes, op_factors, tensors = spec.axis_names, plan.op_factors, spec.tensors
    resident = resident_elements(tensors, axes, spans, plan)
    rotating = {t.name: any(f > 1 for f in plan.temporal_factors[t.name]) for t in tensors}
    # an output left with partial sums is held in accumulators (OpSpec.partial_bytes)
    held = {t.name: spec.bytes_of(t.name) for t in tensors}
    held[spec.output.name] = int(spec.output_bytes(op_factors, steps_per_axis))
    memory = MemoryBreakdown(
        partitions={name: held[name] * e for name, e in resident.items()},
        rotation_buffers={name: (held[name] * resident[name] if rotating[name] else 0) for name in resident},
        element_bytes=held,
    )
    if memory.total > device.sram_bytes:
        raise PlanError(
            f"memory per core is {memory.total} bytes, more than the {device.sram_bytes} bytes of SRAM "
            f"on {device.name}"
        )
    return resident, held, memory


def _shifted(spec: OpSpec, plan: Plan, levels: list[ShiftLevel], device: Device, resident: dict[str, int],
             held: dict[str, int]) -> tuple[float, int]:
    """Bytes every core shifts over the loop nest, and the shift events."""
    op_factors = plan.op_factors
    shifted_bytes = 0
    events = 0
    executions = 1
    mesh = on_mesh(device)
    for index, level in enumerate(levels):
        step_bytes = level.bytes_per_step
        if mesh:   # each tensor's ring on the mesh's links, moving by its digit's weight
            step_bytes = sum(
                _mesh_ring_bytes(device, op_factors, _free_axes(spec, op_factors, name),
                                 math.prod(plan.temporal_factors[name]), held[name] * resident[name],
                                 math.prod(later.steps + 1 for later in levels[index + 1:] if name in later.tensors),
                                 level.steps + 1)
                for name in level.tensors)
        shifted_bytes += executions * level.steps * step_bytes
        events += executions * level.steps * len(level.tensors)
        executions *= level.steps + 1
    return shifted_bytes, events


def _op_work(spec: OpSpec, plan: Plan, cores: int, sharing: dict, replicas: dict, geometry: tuple,
             resident: dict[str, int], shifts: tuple) -> OpWork:
    """What the cost model prices: the step's sub-task, the steps, shifts and reduction."""
    axes, tensors, b = spec.axis_names, spec.tensors, spec.dtype_bytes
    per_core, steps_per_axis, step_tiles = geometry
    shifted_bytes, events = shifts
    step_volume = math.prod(step_tiles)
    roles = {role: math.prod(step_tiles[i] for i in idx) for role, idx in compute_roles(spec).items()}
    output = spec.output
    out_step = math.prod(step_tiles[d] for d, axis in enumerate(axes) if output.indexed_by(axis))
    return OpWork(
        subtask=SubTask(spec.kind, b, step_volume, roles),
        steps=math.prod(steps_per_axis),
        shifted_bytes=shifted_bytes,
        shift_events=events,
        partial_copies=replicas[output.name],
        out_step_elems=out_step,
        out_resident_elems=resident[output.name],
        cores=cores,
        geometry=PlanGeometry(
            tensor_dim_axes(spec),
            np.asarray(per_core),
            np.asarray([plan.temporal_factors[t.name] for t in tensors]),
            np.asarray([sharing[t.name] for t in tensors]),
            tuple(t.whole_elements for t in tensors),
        ),
        partial_bytes=spec.partial_bytes,
    )


def routed_cycles(spec: OpSpec, op_factors: np.ndarray, temporal: np.ndarray, device: Device,
                  cost: CostModel) -> np.ndarray:
    """The cycles of candidate plans (``op_factors`` [N, D], ``temporal`` [N, V, D]) on a
    mesh, their rotations priced on the routes their rings take (``check_plan``). Never
    less than the all-to-all price (``irc.planner.vector_score``): every packet crosses at
    least one link, the one into its destination, so a ring's busiest link carries at
    least its bytes; the search uses that as the bound that keeps it exact."""
    found = np.empty(len(op_factors))
    names = [t.name for t in spec.tensors]
    for i in range(len(op_factors)):
        plan = Plan(spec.axis_names, tuple(int(f) for f in op_factors[i]),
                    {name: tuple(int(f) for f in temporal[i][v]) for v, name in enumerate(names)})
        found[i] = check_plan(spec, plan, device, cost).cost.total
    return found


def _free_axes(spec: OpSpec, op_factors, name: str) -> tuple[int, ...]:
    """The cut axes that do not index tensor ``name``: the cores along them share its
    sub-tensor and form its rings."""
    tensor = spec.tensor(name)
    return tuple(d for d, axis in enumerate(spec.axis_names) if op_factors[d] > 1 and not tensor.indexed_by(axis))


def ring_sources(op_factors, free: tuple[int, ...], ring: int, weight: int = 1, trips: int | None = None) -> np.ndarray:
    """Per core, the core it receives from when one digit of a tensor's ring position
    (of ``trips`` values and ``weight`` in the position, T10 s4.4; default: the whole
    ring) moves one further:
    cores numbered row-major over ``op_factors`` (first axis slowest), the ones sharing
    a sub-tensor numbered row-major over the ``free`` axes (``phi``), rings consecutive
    groups of ``ring`` in ``phi`` (``irc.schedule.placement``)."""
    grid = [int(f) for f in op_factors]
    cores = math.prod(grid)
    coords = np.array(np.unravel_index(np.arange(cores), grid)) if cores > 1 else np.zeros((len(grid), 1), int)
    phi = np.zeros(cores, dtype=np.int64)
    for d in free:
        phi = phi * grid[d] + coords[d]
    trips = ring // weight if trips is None else trips
    digit = (phi % ring) // weight % trips
    neighbour = phi + ((digit + 1) % trips - digit) * weight
    other = coords.copy()
    for d in reversed(free):
        other[d] = neighbour % grid[d]
        neighbour = neighbour // grid[d]
    return np.ravel_multi_index(tuple(other), grid) if cores > 1 else np.zeros(1, np.int64)


_MESH_RINGS: dict = {}
_MESH_RINGS_KEPT = 1 << 17
"""How many rings' loads ``_mesh_ring_bytes`` keeps: a model's op-table searches on a mesh
ask for ~20,000 distinct rings (DiT-XL), each asked ~10 times; a smaller memo cleared
when full re-routes most of them (~100 bytes an entry)."""


def _mesh_ring_bytes(device: Device, op_factors, free: tuple[int, ...], ring: int, nbytes: float,
                     weight: int = 1, trips: int | None = None) -> float:
    """One rotation step of a tensor's rings on a mesh, in bytes one core would send
    alone: its busiest link's share (per byte of the partition) and its longest route."""
    if ring <= 1:
        return float(nbytes)
    # what the routes depend on of the device: its mesh and cores per chip (hashing the whole
    # device on every call costs more than the lookup)
    key = (device.mesh, device.cores_per_chip, tuple(int(f) for f in op_factors), free, ring, weight, trips)
    if key not in _MESH_RINGS:
        sources = ring_sources(op_factors, free, ring, weight, trips)
        # many rings route alike (Llama2-70B's tables: 18,000 rings, 1,700 distinct routes)
        routes = (device.mesh, device.cores_per_chip, len(sources),
                  hashlib.blake2b(sources.tobytes(), digest_size=16).digest())
        found = _MESH_RINGS.get(routes)
        if found is None:
            busiest, hops = mesh_busiest(device, sources, 1.0)
            found = (busiest if busiest > 0 else 1.0, hops)
        if len(_MESH_RINGS) > _MESH_RINGS_KEPT:
            _MESH_RINGS.clear()
        _MESH_RINGS[key] = _MESH_RINGS[routes] = found
    load, hops = _MESH_RINGS[key]
    return float(nbytes) * load + hops * device.link_latency_cycles / device.shift_cycles_per_byte


def _shift_levels(spec: OpSpec, plan: Plan, resident: dict[str, int], held: dict[str, int]) -> list[ShiftLevel]:
    """Per axis, peel the temporal factors by their gcd (IPU_COST_FACTS s3): each distinct
    pace is one loop level whose shifted set is every tensor split at least that finely
    (``held``: bytes per element as each tensor is held, partial sums in accumulators)."""
    levels = []
    for d, axis in enumerate(spec.axis_names):
        remaining = {t.name: plan.temporal_factors[t.name][d] for t in spec.tensors}
        while any(v > 1 for v in remaining.values()):
            moving = [name for name, v in remaining.items() if v > 1]
            g = math.gcd(*(remaining[name] for name in moving))
            levels.append(
                ShiftLevel(axis, g - 1, tuple(moving), sum(held[name] * resident[name] for name in moving))
            )
            for name in moving:
                remaining[name] //= g
    return levels


def _order_loops(levels: list[ShiftLevel], cost: CostModel, device: Device) -> list[ShiftLevel]:
    """T10 s4.4: the smaller tensor's loop goes inside, as inner loops run more often.

    Generalised to "costlier shift step outside": a level run inside the others is
    repeated prod(outer steps + 1) times, and swapping two adjacent levels a, b changes
    the total by n_a * n_b * (c_b - c_a), so sorting by per-step cost c (shift time of its
    bytes plus its barriers) descending minimises the exchange time exactly.
    """

    def step_cost(level: ShiftLevel) -> float:
        return float(cost.shift_cycles(device, level.bytes_per_step)) + cost.sync_cycles(device) * len(level.tensors)

    return sorted(levels, key=step_cost, reverse=True)
