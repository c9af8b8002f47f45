"""The compute-shift kernel as data: its products, tensors' layouts, loop levels and
placement (`ShiftKernel`), and every per-core value as a function of the core id.

Geometry (``irc.plans.plan``): core ``c`` has grid coordinates ``c_d`` over ``F_op``;
along axis ``d`` it owns the padded range ``[c_d*T_d*tau_d, (c_d+1)*T_d*tau_d)`` and
computes ``T_d`` step tiles of ``tau_d``. Tensor ``v`` split by ``f_t[v][d]`` along ``d``
holds partitions of ``g_{v,d} = T_d / f_t[v][d]`` step tiles.

Partitions of a tensor dimension follow its affine index ``sum c_a * a + c0``: the
partition is the contiguous range the index covers over the partition's axis ranges
(origin ``c0 + sum min(c_a * low_a, c_a * high_a)``, extent ``sum |c_a| * (span_a - 1) + 1``).
So a constant index (``A[0,m,k]``, a broadcast ``B[0,0,d]``) is the one-element slice at
the constant, a shifted or where-bound window (``X[i+2] where i in 4``) starts at its
offset inside a larger dimension, and a row-major merged read (``A[0,o1,16*o2+o3]``)
holds the block of the flat dimension its axis ranges cover (with the elements between
the rows when o3 is split: they are loaded, never read). ``irc.plans.from_te``
describes each dimension to the planner with the same extent, so every resident
partition, shift and output reduction is priced exactly as it is held and moved.

How a kernel is built and checked: `irc.schedule.kernel` (one operator),
`irc.schedule.pair_kernel` (a gradient pair), `irc.schedule.loop_order` (the levels),
`irc.schedule.placement` (the start digits).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from irc.cost import CostModel, OpWork, PlanGeometry, SubTask
from irc.devices import Device
from irc.dialects.te_expr import AffineIndex, BoundExpr, IndirectIndex
from irc.plans import OpSpec, Plan
from irc.plans.roles import compute_roles, tensor_dim_axes


class AlignError(ValueError):
    """A plan whose rotations cannot be aligned into a compute-shift program."""


@dataclass(frozen=True)
class Level:
    """One loop of the nest: ``trips`` values of one digit of the step index on ``axis``.

    Between two trips every tensor in ``tensors`` shifts one partition along its ring.
    ``stride`` is the digit's weight in step tiles (1 for the finest level of an axis).
    """

    axis: str
    trips: int
    tensors: tuple[str, ...]
    stride: int
    bytes_per_step: int


@dataclass(frozen=True)
class TensorLayout:
    """How one tensor of the operator lives on the cores."""

    name: str
    is_output: bool
    indices: tuple[AffineIndex | IndirectIndex, ...]   # a gather's table: whole along its indirect dims
    temporal: tuple[int, ...]          # f_t per op axis
    ring_size: int                     # prod f_t: partitions per ring
    rings: int                         # replicas of each sub-tensor (P / prod f_t)
    sharing: int                       # cores sharing one sub-tensor (P)
    partition_shape: tuple[int, ...]   # elements of the resident partition, per dim
    window_shape: tuple[int, ...]      # elements one step's sub-task reads, per dim
    levels: tuple[int, ...]            # indices of the levels it rotates at (by axis, coarse first)
    dtype: np.dtype = np.dtype(np.float16)  # element type of its buffers (a comparison reads
                                            # f32 and writes i1: each tensor keeps its own)
    radix: tuple[int, ...] = ()        # its levels as digits of its ring position, most
                                       # significant first (the placement: ``radix_orders``)

    @property
    def rotating(self) -> bool:
        return self.ring_size > 1

    @property
    def partition_elements(self) -> int:
        return math.prod(self.partition_shape)


@dataclass(frozen=True)
class Product:
    """One computation of a kernel: a tensor expression bound to its shapes, the
    planner's view of it (its ``OpSpec``, axes in the kernel's order) and its output's
    element type. A kernel runs one sub-task of every product per step."""

    bound: BoundExpr
    spec: OpSpec
    dtype: np.dtype

    @property
    def output(self) -> str:
        return self.bound.expr.output.tensor

    @property
    def inputs(self) -> tuple[str, ...]:
        return tuple(self.bound.expr.inputs)


@dataclass
class ShiftKernel:
    """An aligned compute-shift program on one device: one operator, or several
    products over the same axes under one plan (a layer's gradient pair: the rings of
    the tensors they share feed all of them at every step)."""

    products: tuple[Product, ...]
    spec: OpSpec                       # every tensor of the kernel (one product's own spec,
                                       # or the union of several: ``product_union``)
    plan: Plan
    device: Device
    cost: CostModel
    axes: tuple[str, ...]
    extents: tuple[int, ...]
    grid: tuple[int, ...]              # F_op
    steps_per_axis: tuple[int, ...]    # T_d
    tiles: tuple[int, ...]             # tau_d
    levels: tuple[Level, ...]          # loop nest, outermost first
    start: np.ndarray                  # (levels, cores): initial digit of each level
    tensors: dict[str, TensorLayout]
    clamped: tuple[int, ...] = ()      # reduction axes of max=/min= whose last range is
                                       # moved back inside the extent instead of padded

    # -- the products ----------------------------------------------------------------------
    @property
    def bound(self) -> BoundExpr:
        """The first product's expression (a single operator's)."""
        return self.products[0].bound

    @property
    def dtype(self) -> np.dtype:
        """The first product's output element type (its accumulators' may be wider:
        ``holds_partial_sums``)."""
        return self.products[0].dtype

    @property
    def operand_names(self) -> tuple[str, ...]:
        """The tensors the products read, each once, in the order of first reading: the
        kernel's operands."""
        return tuple(dict.fromkeys(name for p in self.products for name in p.inputs))

    def bound_of(self, tensor: str) -> BoundExpr:
        """The expression of the first product reading or writing ``tensor``."""
        return next(p.bound for p in self.products if tensor == p.output or tensor in p.inputs)

    # -- sizes -------------------------------------------------------------------------
    @property
    def cores(self) -> int:
        return int(math.prod(self.grid))

    @property
    def steps(self) -> int:
        return int(math.prod(self.steps_per_axis))

    @property
    def dtype_bytes(self) -> int:
        return int(self.dtype.itemsize)

    @property
    def output(self) -> TensorLayout:
        return self.output_of(0)

    def output_of(self, product: int) -> TensorLayout:
        return self.tensors[self.products[product].output]

    @property
    def holds_partial_sums(self) -> bool:
        """Whether the output's buffers hold partial sums (``OpSpec.holds_partial_sums``):
        then they are accumulators (``output.dtype``, f32 for an f16 output) through the
        loop and the cross-core reduction, rounded to ``dtype`` once at the end."""
        return bool(self.products[0].spec.holds_partial_sums(self.grid, self.steps_per_axis))

    @property
    def inputs(self) -> list[TensorLayout]:
        return [self.tensors[name] for name in self.operand_names]

    def axis_index(self, axis: str) -> int:
        return self.axes.index(axis)

    def span(self, tensor: TensorLayout, d: int) -> int:
        """Step tiles along axis ``d`` in one partition of ``tensor`` (g_{v,d})."""
        return self.steps_per_axis[d] // tensor.temporal[d]

    # -- costs (the same functions the planner used) -------------------------------------
    @property
    def planned_cycles(self) -> float:
        """The planner's time for the kernel (its score: one operator's, or a gradient
        pair's, `irc.planner.igo_pair`)."""
        return float(self.plan.score.cycles)

    def subtask(self, product: int = 0) -> SubTask:
        spec = self.products[product].spec
        roles = {
            role: math.prod(self.tiles[i] for i in idx) for role, idx in compute_roles(spec).items()
        }
        return SubTask(spec.kind, spec.dtype_bytes, math.prod(self.tiles), roles)

    def op_work(self, product: int = 0) -> OpWork:
        """The planner's ``OpWork`` for this program's ``product`` (irc.plans.evaluate;
        of several products the first carries the whole exchange, the others only their
        compute and output, as `irc.planner.igo_pair` prices them)."""
        shifted = 0
        events = 0
        executions = 1
        for level in self.levels:
            shifted += executions * (level.trips - 1) * level.bytes_per_step
            events += executions * (level.trips - 1) * len(level.tensors)
            executions *= level.trips
        if product:
            shifted = events = 0
        spec = self.products[product].spec
        out = self.output_of(product)
        out_step = math.prod(
            self.tiles[d] for d, axis in enumerate(self.axes) if spec.output.indexed_by(axis)
        )
        geometry = None
        if len(self.products) == 1:
            geometry = PlanGeometry(
                tensor_dim_axes(self.spec),
                np.asarray([-(-e // f) for e, f in zip(self.extents, self.grid)]),
                np.asarray([self.tensors[t.name].temporal for t in self.spec.tensors]),
                np.asarray([self.tensors[t.name].sharing for t in self.spec.tensors]),
                tuple(t.whole_elements for t in self.spec.tensors),
            )
        return OpWork(
            subtask=self.subtask(product),
            steps=self.steps,
            shifted_bytes=shifted,
            shift_events=events,
            partial_copies=out.rings,
            out_step_elems=out_step,
            out_resident_elems=self.planner_resident(out),
            cores=self.cores,
            geometry=geometry,
            partial_bytes=spec.partial_bytes,
        )

    def shifted_bytes_beyond_plan(self) -> int:
        """Bytes all shifts move beyond what the planner counts: 0 whenever the planner
        sized every dimension by the range its index covers (``irc.plans.from_te``
        lists an axis once per unit of its coefficient, so strided windows ``2*h+r`` and
        merged reads ``16*o2+o3`` are exact). A hand-built ``OpSpec`` that sizes such a
        dimension as if unit-stride (IPU_COST_FACTS s4) leaves a positive difference."""
        extra = 0
        executions = 1
        for level in self.levels:
            per_step = sum(
                (self.tensors[n].partition_elements - self.planner_resident(self.tensors[n]))
                * self.tensors[n].dtype.itemsize
                for n in level.tensors
            )
            extra += executions * (level.trips - 1) * per_step
            executions *= level.trips
        return extra

    def planner_resident(self, tensor: TensorLayout) -> int:
        """Resident elements as the planner counts them (equal to the partition held
        for every spec ``irc.plans.from_te`` builds)."""
        if self.plan.score is not None:
            return self.plan.score.memory.elements(tensor.name)
        return tensor.partition_elements

    # -- per-core geometry -------------------------------------------------------------
    # Every per-core quantity is a function of the core id written with ``+``, ``*``,
    # ``//`` and ``%`` by constants only. Called with ``core = np.arange(cores)`` (the
    # default) it gives the table of every core; called with a symbolic core id (an affine
    # expression, as the lowering to SPMD device IR does) it gives the closed form the
    # program states, whose size does not grow with the number of cores.

    def closed_form(self) -> bool:
        """Whether every per-core value has the closed form ``core`` arguments give: a
        clamped reduction axis (``clamped``) must move back only its last core."""
        for d in self.clamped:
            span = self.steps_per_axis[d] * self.tiles[d]
            if self.grid[d] > 1 and self.extents[d] - span < (self.grid[d] - 2) * span:
                return False
        return True

    def _core(self, core):
        return np.arange(self.cores, dtype=np.int64) if core is None else core

    def core_coords(self, core=None) -> list:
        """Grid coordinate of the core along each axis (row-major over ``F_op``)."""
        core = self._core(core)
        coords, stride = [], self.cores
        for g in self.grid:
            stride //= g
            if g == 1:
                coords.append(0)
            else:
                value = core if stride == 1 else core // stride
                coords.append(value if stride * g == self.cores else value % g)
        return coords

    def step_index(self, digits) -> list:
        """Step-tile index j_d of the core along each axis, from one digit per level."""
        j: list = [0] * len(self.axes)
        for l, level in enumerate(self.levels):
            d = self.axis_index(level.axis)
            j[d] = j[d] + digits[l] * level.stride
        return j

    def _axis_ranges(self, tensor: TensorLayout, j, window: bool, core=None):
        """Per axis: start of the range and its length, for the partition held (or, with
        ``window``, for the step's sub-task)."""
        coords = self.core_coords(core)
        ranges = []
        for d in range(len(self.axes)):
            tile = self.tiles[d]
            g = self.span(tensor, d)
            span = self.steps_per_axis[d] * tile
            base = coords[d] * span
            if d in self.clamped and self.grid[d] > 1:
                if core is None:
                    base = np.minimum(base, self.extents[d] - span)
                else:
                    # min(base, extent - span) when only the last core along d moves back
                    # (``closed_form``): base minus the move, on that core alone
                    last = self.grid[d] - 1
                    base = base - (coords[d] // last) * (last * span - (self.extents[d] - span))
            if window:
                ranges.append((base + j[d] * tile, tile))
            else:
                ranges.append((base + (j[d] // g) * (g * tile) if g > 1 else base + j[d] * tile, g * tile))
        return ranges

    def _origins(self, tensor: TensorLayout, ranges) -> list:
        origin = []
        for index in tensor.indices:
            if isinstance(index, IndirectIndex):   # a gather's table dim: held whole
                origin.append(0)
                continue
            value = index.constant
            for axis, coeff in index.terms:
                low, length = ranges[self.axis_index(axis)]
                value = value + (coeff * low if coeff > 0 else coeff * low + coeff * (length - 1))
            origin.append(value)
        return origin

    def _table(self, values: list) -> np.ndarray:
        """(cores, len(values)) from per-core values (arrays or constants)."""
        if not values:
            return np.zeros((self.cores, 0), dtype=np.int64)
        return np.stack([np.broadcast_to(np.asarray(v, dtype=np.int64), (self.cores,)) for v in values], axis=1)

    def partition_origin(self, tensor: TensorLayout, digits, core=None):
        """Global element origin of the partition each core holds, per dim: a (cores, rank)
        table, or with a symbolic ``core`` one value per dim."""
        values = self._origins(tensor, self._axis_ranges(tensor, self.step_index(digits), False, core))
        return self._table(values) if core is None else values

    def window_offset(self, tensor: TensorLayout, digits, core=None):
        """Offset, inside the held partition, of the step's window (as ``partition_origin``):
        per index term, the step's tile within the partition, ``(j mod g) * tile``, in
        the direction of the term's coefficient (the core's base cancels out)."""
        j = self.step_index(digits)
        values = []
        for index in tensor.indices:
            value = 0
            for axis, coeff in getattr(index, "terms", ()):
                d = self.axis_index(axis)
                g, tile = self.span(tensor, d), self.tiles[d]
                inside = (j[d] % g) * tile if g > 1 else 0
                value = value + coeff * inside + (coeff * (tile - g * tile) if coeff < 0 else 0)
            values.append(value)
        return self._table(values) if core is None else values

    def _block_key(self, tensor: TensorLayout, core=None):
        """Which sub-tensor the core holds (its coordinates on the axes indexing it)."""
        coords = self.core_coords(core)
        key = 0
        for d in range(len(self.axes)):
            if self.spec.tensor(tensor.name).indexed_by(self.axes[d]):
                key = key * self.grid[d] + coords[d]
        return key

    def _partition_id(self, tensor: TensorLayout, digits):
        pid = 0
        for l in tensor.levels:
            pid = pid * self.levels[l].trips + digits[l]
        return pid

    def _ring_keys(self, tensor: TensorLayout, digits: np.ndarray) -> np.ndarray:
        """A key per core naming (sub-tensor, ring, partition held); unique iff aligned."""
        key = self._block_key(tensor) * tensor.rings + self._free_index(tensor) // tensor.ring_size
        return np.broadcast_to(key * tensor.ring_size + self._partition_id(tensor, digits), (self.cores,))

    def _free_index(self, tensor: TensorLayout, core=None):
        coords = self.core_coords(core)
        phi = 0
        for d in range(len(self.axes)):
            if not self.spec.tensor(tensor.name).indexed_by(self.axes[d]):
                phi = phi * self.grid[d] + coords[d]
        return phi

    def start_digits(self, core=None) -> list:
        """Initial digit of every level on the core (`irc.schedule.placement`)."""
        start: list = [0] * len(self.levels)
        counted = set()
        for tensor in self.tensors.values():
            if not tensor.levels:
                continue
            position = self._free_index(tensor, core)
            position = position % tensor.ring_size
            free = self._free_axes(tensor)
            for l in reversed(tensor.radix):  # least significant digit last in radix order
                trips = self.levels[l].trips
                # tensors shared by the same cores (equal free axes) give a level they
                # both rotate at one digit: the same one (``irc.schedule.loop_order.radix_orders``)
                if (free, l) not in counted:
                    counted.add((free, l))
                    start[l] = start[l] + position % trips
                position = position // trips
        return [value % level.trips for value, level in zip(start, self.levels)]

    def _free_axes(self, tensor: TensorLayout) -> frozenset[str]:
        return frozenset(a for a in self.axes if not self.spec.tensor(tensor.name).indexed_by(a))

    def digits_after(self, start, counters) -> list:
        """The digits once level ``l`` has advanced ``counters[l]`` times from ``start``."""
        return [(value + count) % level.trips if count % level.trips else value
                for value, count, level in zip(start, counters, self.levels)]

    def source(self, tensor: TensorLayout, level: int) -> np.ndarray:
        """(cores,) the core each core receives ``tensor``'s partition from when ``level``
        advances: the ring neighbour holding the partition one digit further."""
        keys = self._ring_keys(tensor, self.start)
        advanced = self.start.copy()
        advanced[level] = (advanced[level] + 1) % self.levels[level].trips
        wanted = self._ring_keys(tensor, advanced)
        order = np.argsort(keys)
        found = order[np.searchsorted(keys, wanted, sorter=order)]
        return found.astype(np.int64)

    def source_of(self, tensor: TensorLayout, level: int, core=None):
        """``source`` in closed form: the ring neighbour whose position in the ring has the
        level's digit one further (the other terms of the level's start digit are constant
        within a ring). Equal to ``source`` for every kernel whose placement is the one
        ``start_digits`` gives; the lowering checks that against ``source`` before using it."""
        core = self._core(core)
        coords = self.core_coords(core)
        phi = self._free_index(tensor, core)
        position = phi % tensor.ring_size
        weight = 1
        for l in reversed(tensor.radix):
            if l == level:
                break
            weight *= self.levels[l].trips
        trips = self.levels[level].trips
        digit = (position // weight) % trips if weight > 1 else position % trips
        # the neighbour's position: this digit one further, mod trips
        delta = ((digit + 1) % trips - digit) * weight
        return self.core_at_free_index(tensor, phi + delta, core)

    def core_at_free_index(self, tensor: TensorLayout, phi, core=None):
        """The core whose coordinates on the axes indexing ``tensor`` are the core's and
        whose free index (its number among the cores sharing the sub-tensor) is ``phi``."""
        core = self._core(core)
        coords = self.core_coords(core)
        free = [d for d in range(len(self.axes)) if not self.spec.tensor(tensor.name).indexed_by(self.axes[d])]
        other = list(coords)
        stride = 1
        for d in reversed(free):
            g = self.grid[d]
            if g > 1:
                value = phi if stride == 1 else phi // stride
                other[d] = value % g
            stride *= g
        result, place = 0, self.cores
        for d, g in enumerate(self.grid):
            place //= g
            result = result + other[d] * place
        return result

    def idle_partition(self, tensor: TensorLayout, idle: tuple[int, ...], core=None):
        """Where a weight rests between uses (T10 s4.3.2): under idle temporal factors
        ``idle`` (one per op axis, multiples of the active ones) each core keeps one of the
        ``M = prod(idle) / prod(active)`` slices of the partition it holds active at the
        placement: slice ``(phi // R) mod M`` of the ``rings`` cores holding that partition.
        Returns ``(shape, origins)``: the slice's shape and, per dim, its global origin
        (a table, or closed forms of a symbolic ``core``); None when a dim whose index
        is not a single axis would be cut (such weights rest in their active layout)."""
        multipliers = [i // t for i, t in zip(idle, tensor.temporal)]
        slices = math.prod(multipliers)
        if any(i % t for i, t in zip(idle, tensor.temporal)) or tensor.rings % slices:
            return None
        origin = self.partition_origin(tensor, self.start_digits(core), core)
        if core is None:
            origin = [origin[:, d] for d in range(origin.shape[1])]
        slice_index = (self._free_index(tensor, core) // tensor.ring_size) % slices if slices > 1 else 0
        digit: dict[int, object] = {}
        for d in reversed(range(len(self.axes))):   # mixed radix over the cut axes, last fastest
            if multipliers[d] > 1:
                digit[d] = slice_index % multipliers[d]
                slice_index = slice_index // multipliers[d]
        shape = list(tensor.partition_shape)
        for dim, index in enumerate(tensor.indices):
            cut = [self.axis_index(a) for a, _ in getattr(index, "terms", ()) if multipliers[self.axis_index(a)] > 1]
            if not cut:
                continue
            if index.simple_axis is None:
                return None
            d = cut[0]
            shape[dim] = -(-tensor.partition_shape[dim] // multipliers[d])
            origin[dim] = origin[dim] + digit[d] * shape[dim]
        values = self._table(origin) if core is None else origin
        return tuple(shape), values

    def ring_sources(self, core=None) -> dict[tuple[str, int], object]:
        """Per (rotating tensor, level): the core each core receives from when the level
        advances, as ``source_of`` in closed form of ``core`` (a core-id value) where that
        matches the ring's actual neighbour on every core (always, for placements
        ``rotation-align`` writes), else ``source``'s table. What the lowerings write
        into their shift instructions."""
        sources = {}
        for level_index, level in enumerate(self.levels):
            for name in level.tensors:
                layout = self.tensors[name]
                actual = self.source(layout, level_index)
                closed = np.broadcast_to(np.asarray(self.source_of(layout, level_index), dtype=np.int64),
                                         (self.cores,))
                exact = core is not None and (closed == actual).all()
                sources[(name, level_index)] = self.source_of(layout, level_index, core) if exact else actual
        return sources

    def walk(self, start) -> Iterator[tuple[str, object]]:
        """``schedule`` as a lowering walks it from the digits ``start``: ("compute",
        (step number, the digits then)) and ("shift", level)."""
        counters = [0] * len(self.levels)
        step = 0
        for event, value in self.schedule():
            if event == "compute":
                yield "compute", (step, self.digits_after(start, counters))
                step += 1
            else:
                counters[value] += 1
                yield "shift", value

    def replica_key(self, digits, core=None, product: int = 0):
        """Which partition of ``product``'s output the core holds after the loop: cores with
        equal keys hold partial copies of one partition (its ring number dropped)."""
        out = self.output_of(product)
        return self._block_key(out, core) * out.ring_size + self._partition_id(out, digits)

    def schedule(self) -> Iterator[tuple[str, object]]:
        """The loop nest unrolled: ("compute", (levels, cores) digits) and ("shift", level)."""
        counters = [0] * len(self.levels)

        def nest(depth: int):
            if depth == len(self.levels):
                offsets = np.array(counters, dtype=np.int64)[:, None]
                trips = np.array([lv.trips for lv in self.levels], dtype=np.int64)[:, None]
                yield "compute", (self.start + offsets) % trips if self.levels else self.start
                return
            for trip in range(self.levels[depth].trips):
                if trip:
                    counters[depth] += 1
                    yield "shift", depth
                yield from nest(depth + 1)

        yield from nest(0)

    def final_digits(self) -> np.ndarray:
        digits = self.start.copy()
        for event, value in self.schedule():
            if event == "shift":
                digits[value] = (digits[value] + 1) % self.levels[value].trips
        return digits

    def final_counters(self) -> list[int]:
        """How often each level has advanced when the loop nest ends."""
        counters = [0] * len(self.levels)
        for event, value in self.schedule():
            if event == "shift":
                counters[value] += 1
        return counters

    def replica_groups(self, product: int = 0) -> np.ndarray:
        """(groups, rings) core ids holding the same output partition after the loop; the
        first of each row keeps the reduced sum (the output's partial copies)."""
        return groups_of(np.broadcast_to(self.replica_key(self.final_digits(), None, product), (self.cores,)),
                         self.output_of(product).rings)


def accumulator_dtype(dtype) -> np.dtype:
    """Where partial sums of a ``dtype`` output accumulate (``OpSpec.partial_bytes``): f32
    for narrower floats, i32 (u32) for narrower integers, ``dtype`` itself otherwise."""
    dtype = np.dtype(dtype)
    if dtype.itemsize >= 4:
        return dtype
    if dtype.kind == "f":
        return np.dtype(np.float32)
    return np.dtype(np.uint32 if dtype.kind == "u" else np.int32)


def groups_of(keys: np.ndarray, replicas: int) -> np.ndarray:
    """(groups, replicas) core ids with equal ``keys``, lowest core first in each row."""
    order = np.lexsort((np.arange(len(keys)), keys))
    return order.reshape(-1, replicas).astype(np.int64)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)



__all__ = ["AlignError", "Level", "Product", "ShiftKernel", "TensorLayout", "accumulator_dtype", "groups_of"]
