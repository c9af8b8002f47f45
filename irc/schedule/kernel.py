"""The compute-shift program of one operator (or of products under one plan): rings,
paces, loop order, placement.

Spec: seed 003 s3.2 ("Aligning the rotations", "Alignment constraints", "Sub-operator
scheduling"), T10 s4.2 and s4.4 ("Sub-tensor placement"). ``build_shift_kernel`` turns a
bound tensor expression and a plan (``F_op`` and ``f_t``, scored by ``irc.planner``) into a
``ShiftKernel``, which every lower level reads: the ``shift`` dialect prints it, the
``device`` lowering emits its instructions, the interpreters execute it.

Padding a reduction axis is harmless when its padded points read zeros into a ``+=``
product (of zero-preserving functions of reads: ``cast(A[m,k]) * 0.5``); for
``max=``/``min=`` the last core's range on the axis is moved back inside the extent
instead (``ShiftKernel.clamped``: idempotent folds may repeat points); anything else is
refused (``_check_reduction_padding``). The planner reads the same rule
(``OpSpec.unpadded_axes``), so it only returns plans this lowering can pad.

The kernel as data is `irc.schedule.geometry`'s; its loop nest `irc.schedule.loop_order`'s;
its placement `irc.schedule.placement`'s; a gradient pair's kernel `irc.schedule.pair_kernel`'s.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from irc.cost import CostModel, DEFAULT_COST_MODEL, get_cost_model
from irc.devices import Device, load_device
from irc.dialects.te_expr import AffineIndex, BoundExpr, IndirectIndex
from irc.plans import OpSpec, Plan, PlanError, check_plan
from irc.plans.from_te import fold_changing_axes
from irc.schedule.geometry import AlignError, Level, Product, ShiftKernel, TensorLayout, accumulator_dtype
from irc.schedule.loop_order import check_levels, nested_levels, peel_levels, radix_orders
from irc.schedule.placement import check_alignment, initial_placement
from irc.schedule.spec import UnsupportedExpression, op_spec_from_bound


def _extent(index: AffineIndex | IndirectIndex, spans: dict[str, int], size: int) -> int:
    """Elements of a dim a range of its index covers (a gather's table dim: all ``size``)."""
    if isinstance(index, IndirectIndex):
        return size
    return sum(abs(c) * (spans[a] - 1) for a, c in index.terms) + 1


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
    product = product_of(bound, dtype, dtypes, spec)
    spec = product.spec
    if tuple(plan.axes) != spec.axis_names:
        raise PlanError(f"plan axes {tuple(plan.axes)} differ from the operator's axes {spec.axis_names}")
    peeled = peel_levels(spec, plan)   # AlignError first: it names the axis and factors
    score = check_plan(spec, plan.unscored(), device, cost)
    return assemble((product,), spec, plan, score, device, cost, nested_levels(peeled, score), None, dtypes)


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
    product = product_of(bound, dtype, dtypes, spec)
    spec = product.spec
    if tuple(plan.axes) != spec.axis_names:
        raise PlanError(f"plan axes {tuple(plan.axes)} differ from the operator's axes {spec.axis_names}")
    score = score or check_plan(spec, plan.unscored(), device, cost)
    return assemble((product,), spec, plan, score, device, cost, levels, start, dtypes)


def product_of(bound: BoundExpr, dtype, dtypes, spec: OpSpec | None = None) -> Product:
    dtype = np.dtype((dtypes or {}).get(bound.expr.output.tensor, dtype))
    spec = spec or op_spec_from_bound(
        bound, dtype.itemsize, {name: np.dtype(d).itemsize for name, d in (dtypes or {}).items()})
    return Product(bound, spec, dtype)


def assemble(products: tuple[Product, ...], spec: OpSpec, plan: Plan, score, device: Device, cost: CostModel,
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
    check_levels(spec, plan, levels)
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
    radix = radix_orders(spec, levels, own_levels)
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



__all__ = ["assemble", "assemble_kernel", "build_shift_kernel", "product_of"]
