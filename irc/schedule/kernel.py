"""The compute-shift program of one operator (or of products under one plan): rings,
paces, loop order, placement.

Spec: seed 003 s3.2 ("Aligning the rotations", "Alignment constraints", "Sub-operator
scheduling"), T10 s4.2 and s4.4 ("Sub-tensor placement"). ``build_shift_kernel`` turns a
bound tensor expression and a plan (``F_op`` and ``f_t``, scored by ``irc.planner``) into a
``ShiftKernel``, which every lower level reads: the ``shift`` dialect prints it, the
``device`` lowering emits its instructions, the interpreters execute it.

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

Padding a reduction axis is harmless when its padded points read zeros into a ``+=``
product (of zero-preserving functions of reads: ``cast(A[m,k]) * 0.5``); for
``max=``/``min=`` the last core's range on the axis is moved back inside the extent
instead (``ShiftKernel.clamped``: idempotent folds may repeat points); anything else is
refused (``_check_reduction_padding``). The planner reads the same rule
(``OpSpec.unpadded_axes``), so it only returns plans this lowering can pad.

Paces. Per axis, the temporal factors must form a divisibility chain (seed 003 s3.2). They
are peeled into *levels* (IPU_COST_FACTS s3): the coarsest level rotates every tensor split
on the axis, each finer one only the tensors split finer. A level is one digit of the step
index along its axis; a tensor with a smaller factor shifts only at the coarser levels,
i.e. every ``steps / f_t`` steps. Levels nest in the planner's loop order (T10 s4.4: the
costlier, bigger tensor's shift outside; the smaller tensor's inside, as it runs more).
A loop of ``n`` trips shifts its tensors ``n - 1`` times per execution and does not
rewind: the next execution continues from where the digit stands, so every execution
still visits all ``n`` values (this is what the cost model counts).

Placement (T10 s4.4). Each level ``l`` has a per-core start digit ``o_l(c)``. Cores that
share a sub-tensor of ``v`` differ only along the axes that do not index ``v`` (its
*free* axes); numbering them row-major gives ``phi_v(c)``, rings are consecutive groups of
``R_v = prod f_t[v]`` and ``q_v = phi_v mod R_v`` is the position in the ring, written in
the mixed radix of ``v``'s levels. ``o_l = sum over tensors u of level l of digit_l(q_u)
mod trips_l``. Within a ring of ``v`` the other tensors' terms are constant whenever their
free axes are disjoint from ``v``'s (true for any two-input operator), so the ring's
cores hold distinct partitions, and at every step core ``c`` holds exactly the partitions
its sub-task reads: they meet. ``build_shift_kernel`` verifies this bijection for every
ring and raises ``AlignError`` naming the axis and the factors when it fails.

Several products, one kernel (``build_fused_kernel``: a layer's gradient pair, irc's own
extension, `irc.planner.igo_pair`). Products over the same axes run under one plan: the
levels are peeled over all their tensors, every step computes one sub-task of each
product on the step tiles, and a tensor several products read (dY) rotates on one ring
for all of them. Tensors shared by the same cores (equal free axes, as dX and X, or dW
and W, of a pair) have equal ``phi``; where both rotate at one level their digits there
are made one (the levels both rotate at are the least significant of both radices,
``_radix_orders``) and counted once in ``o_l``, so each ring still holds distinct
partitions. A single operator is the one-product kernel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Iterator, Sequence

import numpy as np

from irc.cost import CostModel, DEFAULT_COST_MODEL, OpWork, PlanGeometry, SubTask, get_cost_model
from irc.devices import Device, load_device
from irc.dialects.te_expr import AffineIndex, BoundExpr, IndirectIndex
from irc.plans import OpSpec, Plan, PlanError, check_plan
from irc.plans.errors import SpecError
from irc.plans.from_te import fold_changing_axes
from irc.plans.pair import check_pair_plan, pair_spec
from irc.plans.roles import compute_roles, tensor_dim_axes
from irc.schedule.spec import UnsupportedExpression, op_spec_from_bound


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
                                       # significant first (the placement: ``_radix_orders``)

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
        """Initial digit of every level on the core (module docstring, "Placement")."""
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
                # both rotate at one digit: the same one (``_radix_orders``)
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


def _extent(index: AffineIndex | IndirectIndex, spans: dict[str, int], size: int) -> int:
    """Elements of a dim a range of its index covers (a gather's table dim: all ``size``)."""
    if isinstance(index, IndirectIndex):
        return size
    return sum(abs(c) * (spans[a] - 1) for a, c in index.terms) + 1


def _peel_levels(spec: OpSpec, plan: Plan) -> list[tuple[str, int, tuple[str, ...]]]:
    """Per axis, coarse to fine: (axis, trips, tensors) as IPU_COST_FACTS s3 peels them."""
    levels = []
    for d, axis in enumerate(spec.axis_names):
        remaining = {t.name: plan.temporal_factors[t.name][d] for t in spec.tensors}
        values = [v for v in remaining.values() if v > 1]
        for a in values:
            for b in values:
                if a % b and b % a:
                    listing = ", ".join(
                        f"{name} has f_t={remaining[name]}" for name in remaining if remaining[name] > 1
                    )
                    raise AlignError(
                        f"cannot align the rotations on axis {axis}: temporal factors must divide "
                        f"one another, but {listing}"
                    )
        while any(v > 1 for v in remaining.values()):
            moving = tuple(name for name, v in remaining.items() if v > 1)
            g = math.gcd(*(remaining[name] for name in moving))
            levels.append((axis, g, moving))
            for name in moving:
                remaining[name] //= g
    return levels


def _nested_levels(peeled, score) -> list[tuple[str, int, int, tuple[str, ...]]]:
    """The peeled levels with their strides, nested in the planner's loop order
    (``score.loop_order``, outermost first)."""
    by_axis: dict[str, list[tuple[int, tuple[str, ...]]]] = {}
    for axis, trips, moving in peeled:
        by_axis.setdefault(axis, []).append((trips, moving))
    level_list: list[tuple[str, int, int, tuple[str, ...]]] = []
    for axis, chain in by_axis.items():
        stride = math.prod(t for t, _ in chain)
        for trips, moving in chain:
            stride //= trips
            level_list.append((axis, trips, stride, moving))
    rank = {(lv.axis, lv.tensors): i for i, lv in enumerate(score.loop_order)}
    level_list.sort(key=lambda lv: rank[(lv[0], lv[3])])
    return level_list


def build_shift_kernel(
    bound: BoundExpr,
    plan: Plan,
    device: Device | str,
    cost: CostModel | str = DEFAULT_COST_MODEL,
    dtype=np.float16,
    spec: OpSpec | None = None,
    dtypes: dict[str, np.dtype] | None = None,
) -> ShiftKernel:
    """The aligned compute-shift program of ``bound`` under ``plan``.

    ``dtype`` is the output's element type; ``dtypes`` gives any tensor's own (by name;
    the rest default to ``dtype``): the inputs of a comparison or a cast differ from
    its output.

    Raises ``AlignError`` (paces that cannot be aligned, naming the axis and factors),
    ``PlanError`` (a plan violating a T10 constraint) or ``UnsupportedExpression``.
    """
    device = load_device(device)
    cost = get_cost_model(cost)
    product = _product(bound, dtype, dtypes, spec)
    spec = product.spec
    if tuple(plan.axes) != spec.axis_names:
        raise PlanError(f"plan axes {tuple(plan.axes)} differ from the operator's axes {spec.axis_names}")
    peeled = _peel_levels(spec, plan)   # AlignError first: it names the axis and factors
    score = check_plan(spec, plan.unscored(), device, cost)
    return _assemble((product,), spec, plan, score, device, cost, _nested_levels(peeled, score), None, dtypes)


def build_fused_kernel(
    bounds: Sequence[BoundExpr],
    plan: Plan,
    device: Device | str,
    cost: CostModel | str = DEFAULT_COST_MODEL,
    dtypes: dict[str, np.dtype] | None = None,
) -> ShiftKernel:
    """The aligned compute-shift program running the products ``bounds`` under one
    ``plan`` over their shared axes (the first product's axis order; ``dtypes`` by tensor
    name, outputs included, default f16): one loop nest whose every step computes a
    sub-task of each product, every tensor rotating on its own rings once for all the
    products reading it. The plan is scored as the products' planner prices them
    together (``_joint_score``: a layer's gradient pair, `irc.planner.igo_pair`), the loop
    nest is its loop order, the placement T10's (module docstring). Raises as
    ``build_shift_kernel``."""
    device = load_device(device)
    cost = get_cost_model(cost)
    products, union, score = _joint_score(bounds, plan, device, cost, dtypes)
    peeled = _peel_levels(union, plan)
    return _assemble(products, union, plan, score, device, cost, _nested_levels(peeled, score), None, dtypes)


def assemble_kernel(
    bound: BoundExpr,
    plan: Plan,
    device: Device | str,
    cost: CostModel | str,
    dtype,
    levels: list[tuple[str, int, int, tuple[str, ...]]],
    start: np.ndarray | None,
    *,
    spec: OpSpec | None = None,
    dtypes: dict[str, np.dtype] | None = None,
    score=None,
) -> ShiftKernel:
    """The kernel a plan and a *given* loop nest state: ``levels`` as (axis, trips, stride,
    rotating tensors), outermost first, and ``start`` the (levels, cores) start digits
    (``None``: T10's placement, ``initial_placement``). This is how a kernel is read back
    from a `shift.kernel` that `rotation-align` wrote: the plan's geometry is evaluated
    (``check_plan`` of the stated plan: sizes, replicas, memory; no search, no loop-order
    decision), the loops and placement are taken as the IR gives them, and the rings are
    checked to meet (``AlignError`` otherwise)."""
    device = load_device(device)
    cost = get_cost_model(cost)
    product = _product(bound, dtype, dtypes, spec)
    spec = product.spec
    if tuple(plan.axes) != spec.axis_names:
        raise PlanError(f"plan axes {tuple(plan.axes)} differ from the operator's axes {spec.axis_names}")
    score = score or check_plan(spec, plan.unscored(), device, cost)
    return _assemble((product,), spec, plan, score, device, cost, levels, start, dtypes)


def assemble_fused_kernel(
    bounds: Sequence[BoundExpr],
    plan: Plan,
    device: Device | str,
    cost: CostModel | str,
    levels: list[tuple[str, int, int, tuple[str, ...]]],
    start: np.ndarray | None,
    *,
    dtypes: dict[str, np.dtype] | None = None,
) -> ShiftKernel:
    """``assemble_kernel`` for the products of ``build_fused_kernel``: the kernel their
    plan and a given loop nest and placement state."""
    device = load_device(device)
    cost = get_cost_model(cost)
    products, union, score = _joint_score(bounds, plan, device, cost, dtypes)
    return _assemble(products, union, plan, score, device, cost, levels, start, dtypes)


def _product(bound: BoundExpr, dtype, dtypes, spec: OpSpec | None = None) -> Product:
    dtype = np.dtype((dtypes or {}).get(bound.expr.output.tensor, dtype))
    spec = spec or op_spec_from_bound(
        bound, dtype.itemsize, {name: np.dtype(d).itemsize for name, d in (dtypes or {}).items()})
    return Product(bound, spec, dtype)


def _joint_score(bounds, plan: Plan, device: Device, cost: CostModel, dtypes):
    """The products of a fused kernel (specs in the first product's axis order), the
    union of their tensors and the plan's score. A planner prices products together
    only as a layer's gradient pair (`irc.planner.igo_pair`: two contractions sharing
    one input, dY); anything else is ``UnsupportedExpression``."""
    dtypes = {name: np.dtype(d) for name, d in (dtypes or {}).items()}
    products = [_product(bound, dtypes.get(bound.expr.output.tensor, np.float16), dtypes) for bound in bounds]
    shared = set(products[0].inputs).intersection(*(p.inputs for p in products[1:])) if len(products) > 1 else set()
    if len(products) != 2 or len(shared) != 1:
        texts = "; ".join(f"'{p.bound.expr}'" for p in products)
        raise UnsupportedExpression(
            f"no cost model prices the products {texts} as one kernel: a fused kernel is a layer's gradient pair "
            f"(two contractions sharing one input, dY)"
        )
    try:
        pair = pair_spec(products[0].spec, products[1].spec, shared.pop())
    except SpecError as error:
        raise UnsupportedExpression(f"the products are not a gradient pair: {error}") from None
    if tuple(plan.axes) != pair.axis_names:
        raise PlanError(f"plan axes {tuple(plan.axes)} differ from the products' axes {pair.axis_names}")
    score = check_pair_plan(pair, plan.unscored(), device, cost)
    products = (replace(products[0], spec=pair.dx), replace(products[1], spec=pair.dw))
    return products, pair.union_spec(), score


def _radix_orders(spec: OpSpec, levels: tuple[Level, ...], own: dict[str, list[int]]) -> dict[str, tuple[int, ...]]:
    """Per tensor, its levels as the digits of its ring position, most significant first
    (module docstring, "Placement"). Tensors shared by the same cores (equal free axes:
    dX and X of a gradient pair) that rotate at one level must read that level's digit at
    one weight, so the digit is theirs in common: the levels more of them rotate at are
    the less significant ones; ties (every level of a tensor alone) in axis order, coarse
    first - T10's radix of one tensor."""
    axes = spec.axis_names
    classes: dict[frozenset, list[str]] = {}
    for t in spec.tensors:
        if own[t.name]:
            classes.setdefault(frozenset(a for a in axes if not t.indexed_by(a)), []).append(t.name)
    radix = {t.name: () for t in spec.tensors}
    for members in classes.values():
        count: dict[int, int] = {}
        for name in members:
            for l in own[name]:
                count[l] = count.get(l, 0) + 1
        order = sorted(count, key=lambda l: (count[l], axes.index(levels[l].axis), -levels[l].stride))
        for name in members:
            radix[name] = tuple(l for l in order if l in own[name])
    return radix


def _assemble(products: tuple[Product, ...], spec: OpSpec, plan: Plan, score, device: Device, cost: CostModel,
              levels, start, dtypes) -> ShiftKernel:
    """The kernel of ``products`` (tensors: ``spec``'s) under the scored ``plan`` with the
    loop nest ``levels`` and placement ``start`` (None: T10's)."""
    plan = Plan(plan.axes, plan.op_factors, dict(plan.temporal_factors), score)
    axes = spec.axis_names
    steps_per_axis = score.steps_per_axis
    tiles = score.step_tiles
    spans = tuple(t * tau for t, tau in zip(steps_per_axis, tiles))
    clamped = tuple(sorted({d for p in products
                            for d in _check_reduction_padding(p.bound, p.spec, score.padded_extents, spans)}))
    grid = tuple(plan.op_factors)
    cores = math.prod(grid)
    _check_levels(spec, plan, levels)
    partitions = score.memory.partitions
    levels = tuple(
        Level(axis, trips, tuple(moving), stride, sum(partitions[n] for n in moving))
        for axis, trips, stride, moving in levels
    )

    accesses, shapes, element = {}, {}, {}
    for p in products:
        expr = p.bound.expr
        partial = p.spec.holds_partial_sums(grid, steps_per_axis)
        accesses[expr.output.tensor] = expr.output
        shapes[expr.output.tensor] = p.bound.shapes[expr.output.tensor]
        element[expr.output.tensor] = accumulator_dtype(p.dtype) if partial else p.dtype
        for name in expr.inputs:
            accesses.setdefault(name, expr.accesses_of(name)[0])
            shapes.setdefault(name, p.bound.shapes[name])
            element.setdefault(name, np.dtype((dtypes or {}).get(name, p.dtype)))
    own_levels = {
        t.name: sorted((i for i, lv in enumerate(levels) if t.name in lv.tensors),
                       key=lambda i: (axes.index(levels[i].axis), -levels[i].stride))
        for t in spec.tensors
    }
    radix = _radix_orders(spec, levels, own_levels)
    outputs = {p.output for p in products}
    tensors: dict[str, TensorLayout] = {}
    for t in spec.tensors:
        temporal = tuple(plan.temporal_factors[t.name])
        spans_of = {a: (steps_per_axis[d] // temporal[d]) * tiles[d] for d, a in enumerate(axes)}
        indices = accesses[t.name].indices
        tensors[t.name] = TensorLayout(
            name=t.name,
            is_output=t.name in outputs,
            indices=indices,
            temporal=temporal,
            ring_size=math.prod(temporal),
            rings=score.replicas[t.name],
            sharing=score.sharing_cores[t.name],
            partition_shape=tuple(_extent(i, spans_of, n) for i, n in zip(indices, shapes[t.name])),
            window_shape=tuple(_extent(i, dict(zip(axes, tiles)), n) for i, n in zip(indices, shapes[t.name])),
            levels=tuple(own_levels[t.name]),
            dtype=element[t.name],
            radix=radix[t.name],
        )

    kernel = ShiftKernel(
        products=products, spec=spec, plan=plan, device=device, cost=cost, axes=axes,
        extents=spec.extents, grid=grid, steps_per_axis=steps_per_axis, tiles=tiles,
        levels=levels, start=np.zeros((len(levels), cores), dtype=np.int64), tensors=tensors,
        clamped=clamped,
    )
    if start is None:
        kernel.start = initial_placement(kernel)
    else:
        start = np.asarray(start, dtype=np.int64)
        if start.shape != (len(levels), cores):
            raise AlignError(f"start digits of shape {start.shape}, expected {(len(levels), cores)}")
        kernel.start = start
    check_alignment(kernel)
    return kernel


def _check_levels(spec: OpSpec, plan: Plan, levels) -> None:
    """A loop nest is the plan's: per axis, its levels' trips multiply to the steps along
    it, strides are the products of the finer levels' trips, and each level rotates
    exactly the tensors split finer than the coarser levels of its axis (the peeled
    levels of ``_peel_levels``, in any nesting order)."""
    wanted = sorted((axis, trips, tuple(sorted(moving))) for axis, trips, moving in _peel_levels(spec, plan))
    given = sorted((axis, trips, tuple(sorted(moving))) for axis, trips, _, moving in levels)
    if wanted != given:
        describe = lambda ls: "; ".join(f"axis {a} trips {t} rotating {', '.join(m)}" for a, t, m in ls) or "none"
        raise AlignError(
            f"the loops ({describe(given)}) do not match the rings' paces; expected levels: {describe(wanted)}"
        )
    for axis in {a for a, *_ in levels}:
        chain = sorted(((stride, trips) for a, trips, stride, _ in levels if a == axis))
        expected = 1
        for stride, trips in chain:
            if stride != expected:
                raise AlignError(f"the loops on axis {axis} have stride {stride} where {expected} is expected")
            expected *= trips


def _check_reduction_padding(
    bound: BoundExpr, spec: OpSpec, padded: tuple[int, ...], spans: tuple[int, ...]
) -> tuple[int, ...]:
    """Padded points of a reduction axis must not change the fold; returns the axes whose
    ranges are *clamped* instead of padded.

    The planner decides which reduction axes may be padded (``OpSpec.unpadded_axes``,
    `irc.plans.from_te.fold_changing_axes`) and only returns plans that
    ``OpSpec.padding_admitted`` (``check_plan`` refuses the others), so this reads the
    same rule:

    - an axis outside ``unpadded_axes`` (``+=`` of a product with a zero-preserving
      factor of a read of the axis, ``cast(A[m,k]) * 0.5``): the padded points read
      zeros (loads pad with zeros) and add nothing;
    - ``max=``/``min=``: the fold is idempotent, so the last core's range along the axis
      is moved back inside the extent (``[extent - span, extent)``): it repeats points
      its neighbour folds too, which changes nothing (needs span <= extent);
    - anything else (``+=`` of ``exp(X)``, a window of a larger dimension) is rejected
      with the axis and the extents.
    """
    unpadded = fold_changing_axes(bound)
    if spec.unpadded_axes != unpadded:  # a spec built by hand: the expression decides
        spec = replace(spec, unpadded_axes=unpadded)
    clamped = []
    for d, (axis, extent, size) in enumerate(zip(spec.axis_names, spec.extents, padded)):
        if size == extent or axis not in unpadded:
            continue
        if spec.padding_admitted(axis, size // spans[d], spans[d]):
            clamped.append(d)
            continue
        raise UnsupportedExpression(
            f"the plan pads reduction axis {axis} from {extent} to {size}, and the padded points "
            f"would change '{bound.expr}'; choose F_op and f_t whose product on {axis} divides {extent}"
        )
    return tuple(clamped)


def initial_placement(kernel: ShiftKernel) -> np.ndarray:
    """(levels, cores) start digit of every level on every core (module docstring,
    "Placement")."""
    if not kernel.levels:
        return np.zeros((0, kernel.cores), dtype=np.int64)
    return np.stack([np.broadcast_to(np.asarray(v, dtype=np.int64), (kernel.cores,))
                     for v in kernel.start_digits()]).astype(np.int64)


def check_alignment(kernel: ShiftKernel) -> None:
    """Every ring's cores hold distinct partitions (so each step's partitions meet)."""
    for tensor in kernel.tensors.values():
        if not tensor.levels:
            continue
        keys = kernel._ring_keys(tensor, kernel.start)
        if len(np.unique(keys)) == kernel.cores:
            continue
        free = {a for a in kernel.axes if not kernel.spec.tensor(tensor.name).indexed_by(a)}
        for l in tensor.levels:
            level = kernel.levels[l]
            d = kernel.axis_index(level.axis)
            for other in level.tensors:
                if other == tensor.name:
                    continue
                shared = free & {a for a in kernel.axes if not kernel.spec.tensor(other).indexed_by(a)}
                if shared:
                    raise AlignError(
                        f"cannot align the rotations on axis {level.axis}: {tensor.name} (f_t="
                        f"{tensor.temporal[d]}) and {other} (f_t={kernel.tensors[other].temporal[d]}) "
                        f"are both shared across axis {', '.join(sorted(shared))}, so no initial "
                        f"placement makes their partitions meet on every core"
                    )
        raise AlignError(
            f"cannot align the rotations of {tensor.name} (f_t={list(tensor.temporal)} on "
            f"{list(kernel.axes)}): two cores of one ring would hold the same partition"
        )


__all__ = [
    "AlignError",
    "Level",
    "Product",
    "ShiftKernel",
    "TensorLayout",
    "UnsupportedExpression",
    "assemble_fused_kernel",
    "assemble_kernel",
    "build_fused_kernel",
    "build_shift_kernel",
    "check_alignment",
    "initial_placement",
]
