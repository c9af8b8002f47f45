"""A layer's gradient pair as ONE compute-shift plan on an inter-core chip: the dY
partition rotating through the cores feeds both gradients (IGO's interleaving, MICRO'23
§4.2, carried to T10's rotating tensors, T10 §4.1-4.3).

No paper does this; the model below is irc's own. For a forward contraction
``Y = X · W`` the backward pass computes, over the forward's axes (a GEMM: m, n, k)::

    dX[m,k] += dY[m,n] * W[k,n]        dW[k,n] += dY[m,n] * X[m,k]

Unfused, each product is an operator of its own with its own T10 plan, so dY is laid
out, held and rotated twice. Fused, one ``F_op`` over the shared axes gives every core
one block of the iteration space of *both* products; each tensor's temporal factors
``f_t`` rotate it around the ring of the cores sharing its partition (dY's ring runs
along the axes that do not index it, k for a GEMM), and at every step a core computes
the dX sub-product and the dW sub-product of the dY tile it holds. dY rotates on one
ring instead of two; X and W stay or rotate as their own T10 constraints allow.

The model's assumptions (what `check_pair_plan` prices, what `irc.planner.igo_pair.search_pair` searches):

1. **Constraints** are T10's over the union of the five tensors (`union_spec`): one
   ``F_op``; each tensor's ``prod(f_t)`` divides the cores sharing its partition; on
   every axis the ``f_t`` of all tensors indexing it - of both products - divide one
   another, because they rotate in one loop nest; the steps on an axis are the largest
   ``f_t`` there (``T_d``), whose step tiles both products use; the five resident
   partitions plus one receive buffer per rotating tensor fit in a core's SRAM (dY's
   counted once). The search's pruning constraints (parallelism, padding; T10 §4.3.1)
   are the single-operator search's.
2. **Compute**: each step runs two sub-products, each priced by the cost model's step
   time for its own sub-task (``OpWork.subtask``: the dX product's m x n x k tile and the
   dW product's k x m x n tile, each with its fixed per-step overhead): fusing saves no
   compute and no launch overhead.
3. **Exchange**: the loop nest is T10's (levels peeled per axis by the gcd of the
   paces, costlier shift step outside, T10 §4.4), over the five tensors; each level
   shifts every tensor split at least that finely, and each tensor shifted once pays
   the cost model's barriers (a shift event), as in a single operator. What fusion saves
   is exactly dY's share: its bytes and its shift events counted once, not twice.
4. **Outputs**: each gradient pays its own output shuffle and partial-sum reduction
   (``OpWork.partial_copies``: dX's replicas are the cores splitting n, dW's those
   splitting m), in f32 accumulators for an f16 gradient, as the single-operator model
   prices them.
5. **Comparison with the unfused pair**: the two products' own fastest plans, found by
   two independent exact searches (`irc.planner.igo_pair.unfused_pair`). Like T10's operator search, both
   searches minimise the operators' own time; the comparison then adds what moving
   the inputs into each plan's layouts costs (`irc.planner.igo_pair.arrival_cycles`): at the operator level
   the producers' layouts are not known, so every input arrives as a relayout of its
   whole per-core partition (the worst case of `irc.planner.relayout`, T10 §4.3.2).
   The unfused pair receives dY twice (one layout per product), the fused plan once:
   on the inter-core chip this, not DRAM traffic, is what reading dY once saves. The
   outputs leave alike (each product already pays its output shuffle).

What is priced is what runs: `rtensor-to-shift` lowers a fused pair to one
`shift.kernel` of two products whose loop nest is this model's (``loop_order``) and
whose placement is T10's extended to tensors sharing their cores
(`irc.schedule.pair_kernel.build_fused_kernel`); its device program computes both products'
sub-tasks per step, shifts each rotating tensor once per level step and reduces each
gradient on its own, so the interpreter takes exactly ``check_pair_plan``'s cycles.

The cost model must price an operator as a sum of per-step compute, shifted bytes,
shift events and its output reduction (``t10``, ``seed003``): the fused time is
``op_time(dX product, the whole exchange) + op_time(dW product, no exchange)``. A model
that prices whole operators from their geometry (``engdesign``) cannot price a fused
pair and is refused.
"""


from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from irc.cost import CostModel, OpWork, SubTask, get_cost_model
from irc.cost.model import CostBreakdown, CostModelError
from irc.devices import Device, load_device
from irc.plans.constraints import PADDING_TOLERANCE, is_chain, minimum_cores
from irc.plans.errors import PlanError, SpecError
from irc.plans.evaluate import _check_shape, _order_loops, _shift_levels, resident_elements
from irc.plans.plan import MemoryBreakdown, Plan, ShiftLevel
from irc.plans.roles import compute_roles
from irc.plans.spec import OpSpec, TensorSpec


EXCHANGE_MODELS = ("t10", "seed003")
"""Cost models known to price an operator as compute + shift + sync + reduction terms
(assumption 5 of the module docstring); others are refused unless a plug-in's model
states ``prices_fused_pairs = True``."""

@dataclass(frozen=True)
class PairSpec:
    """A gradient pair for the planner: the dX product (output dX, inputs dY and W) and
    the dW product (output dW, inputs dY and X), both over the same axes in the same
    order (the forward's). `dy` names dY in both."""

    dx: OpSpec
    dw: OpSpec
    dy: str

    def __post_init__(self) -> None:
        if self.dx.axes != self.dw.axes:
            raise SpecError(
                f"the gradients do not range over the same axes: dX over "
                f"{', '.join(f'{a}={e}' for a, e in self.dx.axes)}, dW over "
                f"{', '.join(f'{a}={e}' for a, e in self.dw.axes)}"
            )
        for spec, which in ((self.dx, "dX"), (self.dw, "dW")):
            if spec.kind not in ("matmul", "conv") or spec.combiner != "+=" or len(spec.tensors) != 3:
                raise SpecError(f"the {which} product is not a contraction of two tensors (kind {spec.kind})")
            if self.dy not in [t.name for t in spec.inputs]:
                raise SpecError(f"the {which} product does not read dY ({self.dy})")
        if self.dx.tensor(self.dy).dims != self.dw.tensor(self.dy).dims:
            raise SpecError(f"the two products read {self.dy} at different indices")
        names = [t.name for t in self.tensors]
        if len(set(names)) != len(names):
            raise SpecError(f"the pair's tensors need distinct names, got {names}")

    @property
    def axis_names(self) -> tuple[str, ...]:
        return self.dx.axis_names

    @property
    def w(self) -> TensorSpec:
        return next(t for t in self.dx.inputs if t.name != self.dy)

    @property
    def x(self) -> TensorSpec:
        return next(t for t in self.dw.inputs if t.name != self.dy)

    @property
    def tensors(self) -> tuple[TensorSpec, ...]:
        """dX, dW, dY, W, X: the order of `union_spec` and of candidate arrays."""
        return (self.dx.output, self.dw.output, self.dx.tensor(self.dy), self.w, self.x)

    def union_spec(self) -> OpSpec:
        """The five tensors over the shared axes as one `OpSpec` (dX first): what the T10
        constraints and the plan space are stated on. It prices nothing by itself (the
        cost is the two products', `check_pair_plan`)."""
        return OpSpec(self.dx.axes, self.tensors, self.dx.reduction_axes, self.dx.kind,
                      self.dx.dtype_bytes, "+=")

    def component_plan(self, plan: Plan, which: str) -> Plan:
        """The plan of one product (``"dx"`` or ``"dw"``) under the fused plan: the same
        F_op, its three tensors' f_t (the product run as a kernel of its own, dY on its
        own ring: what fusing saves is measured against these two)."""
        spec = self.dx if which == "dx" else self.dw
        return Plan(plan.axes, plan.op_factors, {t.name: plan.temporal_factors[t.name] for t in spec.tensors})


def pair_spec(dx: OpSpec, dw: OpSpec, dy: str) -> PairSpec:
    """A `PairSpec` from the two products' own specs (as `irc.plans.from_te` builds
    them): the dW product's axes are put in the dX product's order."""
    order = dx.axis_names
    if sorted(order) != sorted(dw.axis_names):
        raise SpecError(
            f"the gradients do not range over the same axes: dX over {', '.join(order)}, "
            f"dW over {', '.join(dw.axis_names)}"
        )
    extents = dict(dw.axes)
    dw = OpSpec(tuple((a, extents[a]) for a in order), dw.tensors, dw.reduction_axes, dw.kind,
                dw.dtype_bytes, dw.combiner)
    return PairSpec(dx, dw, dy)


@dataclass(frozen=True)
class PairScore:
    """What a fused plan implies: the T10 geometry (as `PlanScore` states it for one
    operator, over the five tensors), memory, loop nest, and the time of each product
    (``dx``: its compute, the whole exchange and its output; ``dw``: its compute and its
    output)."""

    device: str
    cost_model: str
    cores: int
    sharing_cores: Mapping[str, int]
    replicas: Mapping[str, int]
    padded_extents: tuple[int, ...]
    steps_per_axis: tuple[int, ...]
    step_tiles: tuple[int, ...]
    steps: int
    loop_order: tuple[ShiftLevel, ...]
    memory: MemoryBreakdown
    dx: CostBreakdown
    dw: CostBreakdown
    seconds: float

    @property
    def memory_per_core(self) -> int:
        return self.memory.total

    @property
    def cycles(self) -> float:
        return float(self.dx.total) + float(self.dw.total)

    @property
    def shifted_bytes(self) -> int:
        total, executions = 0, 1
        for level in self.loop_order:
            total += executions * level.steps * level.bytes_per_step
            executions *= level.steps + 1
        return total


def _require_exchange_model(cost: CostModel) -> None:
    if cost.name in EXCHANGE_MODELS or getattr(cost, "prices_fused_pairs", False):
        return
    raise CostModelError(
        f"cost model {cost.name} cannot price a fused gradient pair: it must price an operator as "
        f"compute + shift + sync + reduction terms ({', '.join(EXCHANGE_MODELS)})"
    )


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _works(pair: PairSpec, step_tiles, steps, shifted_bytes, shift_events, replicas, resident, cores):
    """The two products' `OpWork`s under one geometry (arrays broadcast over candidates):
    the dX product carries the whole exchange, the dW product none (module docstring)."""
    works = []
    for spec, exchange in ((pair.dx, True), (pair.dw, False)):
        axes = spec.axis_names
        roles = {role: np.prod(np.take(step_tiles, list(idx), axis=-1), axis=-1) if idx else 1
                 for role, idx in compute_roles(spec).items()}
        out = spec.output
        out_step = np.prod(np.where([out.indexed_by(a) for a in axes], step_tiles, 1), axis=-1)
        zero = np.zeros_like(np.asarray(shifted_bytes, dtype=np.float64))
        works.append(OpWork(
            subtask=SubTask(spec.kind, spec.dtype_bytes, np.prod(step_tiles, axis=-1), roles),
            steps=steps,
            shifted_bytes=shifted_bytes if exchange else zero,
            shift_events=shift_events if exchange else zero,
            partial_copies=replicas[out.name],
            out_step_elems=out_step,
            out_resident_elems=resident[out.name],
            cores=cores,
            geometry=None,
            partial_bytes=spec.partial_bytes,
        ))
    return works


def _check_cores(union, op_factors, device: Device, min_utilization: float) -> int:
    """The cores a fused plan's F_op uses, checked: every core gets work, the device has
    them, and the parallelism constraint's floor holds."""
    for axis, extent, factor in zip(union.axis_names, union.extents, op_factors):
        if factor > extent:
            raise PlanError(f"F_op on axis {axis} is {factor}, more than its extent {extent}: some cores would get no work")
    cores = math.prod(op_factors)
    if cores > device.cores:
        raise PlanError(f"plan uses {cores} cores, device {device.name} has {device.cores}")
    floor = minimum_cores(union, device, min_utilization)
    if cores < floor:
        raise PlanError(f"plan uses {cores} cores, fewer than the parallelism constraint's {floor} "
                        f"(min_utilization={min_utilization:g})")
    return cores


def check_pair_plan(pair: PairSpec, plan: Plan, device: Device | str, cost: CostModel | str, *,
                    min_utilization: float = 0.0, max_padding: float | None = None) -> PairScore:
    """Check a fused plan against the T10 constraints over the five tensors and price it
    (module docstring); raises `PlanError` naming the failed constraint."""
    device = load_device(device)
    cost = get_cost_model(cost)
    _require_exchange_model(cost)
    _check_shape(pair, plan, "pair")
    union = pair.union_spec()
    axes, extents, tensors = union.axis_names, union.extents, union.tensors
    op_factors = plan.op_factors
    cores = _check_cores(union, op_factors, device, min_utilization)
    sharing = {t.name: math.prod(f for a, f in zip(axes, op_factors) if not t.indexed_by(a)) for t in tensors}
    for t in tensors:
        total = math.prod(plan.temporal_factors[t.name])
        if sharing[t.name] % total:
            raise PlanError(f"prod(f_t of {t.name})={total} does not divide the {sharing[t.name]} cores "
                            f"sharing {t.name}'s partition")
    for d, axis in enumerate(axes):
        paces = {t.name: plan.temporal_factors[t.name][d] for t in tensors if t.indexed_by(axis)}
        if not is_chain(paces.values()):
            listing = ", ".join(f"{name} has {pace}" for name, pace in paces.items())
            raise PlanError(f"temporal factors on axis {axis} must divide one another (both products "
                            f"rotate in one loop nest), but {listing}")
    per_core = [_ceil_div(e, f) for e, f in zip(extents, op_factors)]
    steps_per_axis = [max(plan.temporal_factors[t.name][d] for t in tensors) for d in range(len(axes))]
    for axis, extent, steps in zip(axes, per_core, steps_per_axis):
        if steps > extent:
            raise PlanError(f"axis {axis} is split into {steps} temporal partitions but has only {extent} "
                            f"elements per core")
    step_tiles = [_ceil_div(e, s) for e, s in zip(per_core, steps_per_axis)]
    spans = [s * t for s, t in zip(steps_per_axis, step_tiles)]
    padded = tuple(f * s for f, s in zip(op_factors, spans))
    if max_padding is not None:
        ratio = math.prod(p / e for p, e in zip(padded, extents))
        if ratio > max_padding * (1 + PADDING_TOLERANCE):
            raise PlanError(f"padded volume is {ratio:.4f}x the original, more than the padding "
                            f"constraint's {max_padding:.4f}x")
    resident = resident_elements(tensors, axes, spans, plan)
    held = {t.name: union.bytes_of(t.name) for t in tensors}
    for spec in (pair.dx, pair.dw):   # a gradient left with partial sums is held in accumulators
        held[spec.output.name] = int(spec.output_bytes(op_factors, steps_per_axis))
    rotating = {t.name: any(f > 1 for f in plan.temporal_factors[t.name]) for t in tensors}
    memory = MemoryBreakdown(
        partitions={n: held[n] * e for n, e in resident.items()},
        rotation_buffers={n: held[n] * resident[n] if rotating[n] else 0 for n in resident},
        element_bytes=held,
    )
    if memory.total > device.sram_bytes:
        raise PlanError(f"memory per core is {memory.total} bytes, more than the {device.sram_bytes} bytes "
                        f"of SRAM on {device.name}")
    levels = _order_loops(_shift_levels(union, plan, resident, held), cost, device)
    shifted, events, executions = 0, 0, 1
    for level in levels:
        shifted += executions * level.steps * level.bytes_per_step
        events += executions * level.steps * len(level.tensors)
        executions *= level.steps + 1
    replicas = {t.name: sharing[t.name] // math.prod(plan.temporal_factors[t.name]) for t in tensors}
    steps = math.prod(steps_per_axis)
    dx_work, dw_work = _works(pair, np.asarray(step_tiles), steps, shifted, events, replicas, resident, cores)
    breakdowns = []
    for work in (dx_work, dw_work):
        b = cost.op_time(device, work)
        breakdowns.append(CostBreakdown(*(float(x) for x in (b.compute, b.shift, b.sync, b.reduction))))
    total = sum(b.total for b in breakdowns)
    if not math.isfinite(total):
        raise PlanError(f"cost model {cost.name} gives no finite time for this plan")
    return PairScore(
        device=device.name, cost_model=cost.name, cores=cores, sharing_cores=sharing, replicas=replicas,
        padded_extents=padded, steps_per_axis=tuple(steps_per_axis), step_tiles=tuple(step_tiles), steps=steps,
        loop_order=tuple(levels), memory=memory, dx=breakdowns[0], dw=breakdowns[1],
        seconds=total / device.clock_hz,
    )


__all__ = ["EXCHANGE_MODELS", "PairScore", "PairSpec", "check_pair_plan", "pair_spec"]
