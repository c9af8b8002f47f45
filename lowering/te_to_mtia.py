"""``te-to-mtia``: planned te operators into `mtia` programs (seeds/001 sections 4 and 6).

Rewrites each ``te.op`` carrying an ``mtia.mapping`` (``mtia-partition``) into the
per-PE program of Figure 8, SPMD over its sub-grid:

- two ``mtia.cb_init``: circular buffers for A's slice (deep enough for a 64-row strip
  when the strip stays resident, else two 64x32 blocks) and B's (the whole slice when it
  stays resident, else two blocks);
- two ``mtia.dma``: each PE's slice of A and of B, origins as affine maps of the PE's
  (row, column), A multicast along the grid dimension its sharers lie on (rows when m
  runs along rows), B along the other; the read passes the plan implies;
- ``mtia.mml``: the DPE's 2x2-blocked products, stalling on missing blocks;
- ``mtia.reduce``: when k is split, chains of that many PEs west to east (k along the
  columns) or north to south (k along the rows);
- ``mtia.store``: the chain ends (every PE when k is not split) write their blocks of C.

The PE at (row, column) computes parts (m, n, k): with m along rows and k along the
columns, m = row, n = column floordiv F_k, k = column mod F_k (section 4's example:
columns 0, 2 and 1, 3 share A's k halves, so they share its reads).

A ``te.opaque`` embedding bag carrying ``mtia.embedding`` becomes section 6's TBE on the
PEs: a circular buffer of the plan's depth, ``mtia.gather`` of each PE's samples' rows,
``mtia.pool`` on its SIMD engine and ``mtia.store`` of the pooled rows (PE (r, c) owns
samples from ``(r * cols + c) * samples``). A ``te.op`` carrying ``mtia.stream`` becomes
``mtia.simd``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import FloatAttr, ModuleOp, f64
from xdsl.dialects.func import FuncOp
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import DiagnosticException

from irc.cost.mtia import TILE_K, TILE_M, TILE_N
from irc.dialects.device import core_id
from irc.dialects.dtypes import element_type, numpy_dtype
from irc.dialects.mtia import (
    AccumulatorType,
    CircularBufferInitOp,
    CircularBufferType,
    CombineOp,
    DmaOp,
    FreeOp,
    GatherOp,
    MatMulOp,
    PoolOp,
    PutOp,
    ReduceOp,
    ShiftOp,
    SimdOp,
    StepOp,
    StoreOp,
    TileOp,
    TileType,
    accumulator_element,
    element_bytes,
)
from irc.dialects.mtia import LoadOp as MtiaLoadOp
from irc.dialects.te import OpaqueOp, TensorOp
from irc.diagnostics import location_of
from irc.dialects.mtia_plans import (
    EMBEDDING_ATTR,
    MAPPING_ATTR,
    ROTATION_ATTR,
    STREAM_ATTR,
    EmbeddingAttr,
    MappingAttr,
    PlanAttr,
    RotationAttr,
    StreamAttr,
)
from irc.lowering.model_from_ir import describe
from irc.lowering.shift_to_device import identity_value
from irc.plans.errors import PlanError
from irc.planner.mtia import mtia_cost_model, plain_matmul
from irc.plans.plan import Plan
from irc.schedule.geometry import AlignError
from irc.schedule.kernel import build_shift_kernel
from irc.schedule.placement import initial_placement
from irc.schedule.spec import UnsupportedExpression
from irc.target import MtiaTargetError, require_mtia_target

PLANNED_ATTR = "irc.planned_cycles"


def matmul_form(op: TensorOp):
    """``(spec, b_transposed)`` when ``op`` is a 2-d matmul C[m,n] += A[m,k] * B[k,n] (or
    B[n,k]) with A read first (``irc.planner.mtia.plain_matmul``), else None."""
    try:
        _, spec, _ = describe(op)
    except Exception:  # an expression that does not bind: the verifier's business
        return None
    if spec is None:
        return None
    form = plain_matmul(spec)
    return None if form is None else (spec, not form)


def _plan(op, name: str, kind: type[PlanAttr]):
    """``op``'s plan of this kind (None without one); a plan written as anything but its
    attribute is an error at the op."""
    plan = op.attributes.get(name)
    if plan is None or isinstance(plan, kind):
        return plan
    raise DiagnosticException(f"{location_of(op)}: error: '{op.name}' op {name} must be a #{kind.name}<{{...}}> "
                              f"attribute (as mtia-partition writes it), got {plan}")


def _ints(attr) -> tuple[int, ...]:
    return tuple(int(v) for v in attr.get_values())


def pe_parts(rows_axis: str, k_along: str, fk: int):
    """(m, n, k) part of the PE at (d0, d1), as affine expressions."""
    d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
    if k_along == "cols":
        outer_r, outer_c, k = d0, d1 // fk, d1 % fk
    else:
        outer_r, outer_c, k = d0 // fk, d1, d0 % fk
    m, n = (outer_r, outer_c) if rows_axis == "m" else (outer_c, outer_r)
    return m, n, k


class LowerPlannedMatmul(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TensorOp, rewriter: PatternRewriter) -> None:
        plan = _plan(op, MAPPING_ATTR, MappingAttr)
        if plan is None:
            return
        form = matmul_form(op)
        if form is None:
            raise DiagnosticException(f"te-to-mtia: '{op.bound().expr}' carries an mtia.mapping but is not "
                                      f"C[m,n] += A[m,k] * B[k,n] (or B[n,k])")
        spec, transposed = form
        fields = plan.data
        grid = _ints(fields["grid"])
        _, fm, fn, fk = _ints(fields["splits"])
        _, pm, pn, pk = _ints(fields["per_pe"])
        rows_axis, k_along = fields["rows_axis"].data, fields["k_along"].data
        a_passes, b_passes = _ints(fields["passes"])
        homes = [h.data for h in fields["homes"].data]
        a_value, b_value = op.inputs
        a_elem = a_value.type.get_element_type()
        b_elem = b_value.type.get_element_type()
        m, n, k = pe_parts(rows_axis, k_along, fk)

        a_slice = CircularBufferType((pm, pk), a_elem)
        b_shape = (pn, pk) if transposed else (pk, pn)
        b_slice = CircularBufferType(b_shape, b_elem)
        a_depth, b_depth = _ints(fields["depths"])
        a_name, b_name = spec.inputs[0].name, spec.inputs[1].name
        cb_a = CircularBufferInitOp(a_name, 0, a_depth, grid, a_slice)
        cb_b = CircularBufferInitOp(b_name, 1, b_depth, grid, b_slice)
        cb_a.buffer.name_hint, cb_b.buffer.name_hint = f"cb_{a_name}", f"cb_{b_name}"
        a_line = "row" if rows_axis == "m" else "column"
        b_line = "column" if a_line == "row" else "row"
        dma_a = DmaOp(a_value, cb_a.buffer, AffineMap(2, 0, (m * pm, k * pk)), (TILE_M, TILE_K), a_line, homes[1],
                      a_passes)
        b_origin = (n * pn, k * pk) if transposed else (k * pk, n * pn)
        b_block = (TILE_N, TILE_K) if transposed else (TILE_K, TILE_N)
        dma_b = DmaOp(b_value, cb_b.buffer, AffineMap(2, 0, b_origin), b_block, b_line, homes[2], b_passes)
        acc_type = AccumulatorType((pm, pn), accumulator_element(a_elem))
        mml = MatMulOp(cb_a.buffer, cb_b.buffer, transposed, acc_type)
        mml.result.name_hint = f"{op.output.name_hint}_acc" if op.output.name_hint else "acc"
        new_ops = [cb_a, cb_b, dma_a, dma_b, mml]
        sums = mml.result
        if fk > 1:
            reduce = ReduceOp(sums, "west-east" if k_along == "cols" else "north-south", fk)
            new_ops.append(reduce)
            sums = reduce.result
            sums.name_hint = "sums"
        store = StoreOp(sums, AffineMap(2, 0, (m * pm, n * pn)), homes[0], op.output.type)
        new_ops.append(store)
        store.result.name_hint = op.output.name_hint
        _locate(new_ops, op)
        rewriter.replace(op, new_ops, [store.result])
        _add_planned(store, fields)


def _locate(new_ops, op) -> None:
    """The lowered ops keep the source op's location: a fault found running them points
    at the operator the user wrote."""
    for new in new_ops:
        new.location = op.location


def _add_planned(op, fields) -> None:
    """Add a lowered plan's predicted cycles to its function's ``irc.planned_cycles``
    (irc-run compares the interpreted time with it)."""
    function = op.parent_op()
    while function is not None and not isinstance(function, FuncOp):
        function = function.parent_op()
    if function is not None:
        planned = function.attributes.get(PLANNED_ATTR)
        before = float(planned.value.data) if isinstance(planned, FloatAttr) else 0.0
        function.attributes[PLANNED_ATTR] = FloatAttr(before + float(fields["planned_cycles"].value.data), f64)


class LowerPlannedEmbedding(RewritePattern):
    """A planned embedding bag into gather, pool and store (section 6's TBE)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: OpaqueOp, rewriter: PatternRewriter) -> None:
        plan = _plan(op, EMBEDDING_ATTR, EmbeddingAttr)
        if plan is None:
            return
        fields = plan.data
        table, indices, offsets = op.inputs
        (result,) = op.outputs
        rows, cols = _ints(fields["grid"])
        samples = int(fields["samples"].value.data)
        window = int(fields["window"].value.data)
        dim = table.type.get_shape()[1]
        element = table.type.get_element_type()
        if op.kind.data == "TableBatchedEmbedding":
            tables = _ints(op.attributes["rows"])
        else:
            tables = (table.type.get_shape()[0],)
        batch = result.type.get_shape()[0]
        name = table.name_hint or "table"
        buffer = CircularBufferInitOp(name, 0, window * dim * element_bytes(element), (rows, cols),
                                      CircularBufferType((window, dim), element))
        buffer.buffer.name_hint = f"rows_{name}"
        d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
        first = (d0 * cols + d1) * samples
        gather = GatherOp(table, indices, offsets, buffer.buffer, AffineMap(2, 0, (first,)), samples, tables,
                          fields["home"].data, batch)
        mode = op.attributes.get("mode")
        pool = PoolOp(buffer.buffer, mode.data if mode is not None else "sum",
                      AccumulatorType((samples, len(tables) * dim), accumulator_element(element)))
        pool.result.name_hint = f"{result.name_hint}_pooled" if result.name_hint else "pooled"
        store = StoreOp(pool.result, AffineMap(2, 0, (first, AffineExpr.constant(0))), "sram", result.type)
        store.result.name_hint = result.name_hint
        _locate([buffer, gather, pool, store], op)
        rewriter.replace(op, [buffer, gather, pool, store], [store.result])
        _add_planned(store, fields)


class LowerPlannedStream(RewritePattern):
    """A te.op planned to stream on the SIMD engines into ``mtia.simd``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TensorOp, rewriter: PatternRewriter) -> None:
        plan = _plan(op, STREAM_ATTR, StreamAttr)
        if plan is None:
            return
        fields = plan.data
        simd = SimdOp(op.expression, list(op.inputs), op.output.type, [h.data for h in fields["homes"].data],
                      int(fields["pes"].value.data))
        simd.output.name_hint = op.output.name_hint
        _locate([simd], op)
        rewriter.replace(op, [simd], [simd.output])
        _add_planned(simd, fields)


def rotation_kernel(op: TensorOp, fields, device):
    """The aligned compute-shift program (``irc.schedule.ShiftKernel``) of the T10 plan in
    ``mtia.rotation`` on the PE grid, priced by the ``mtia`` cost model as the planner
    priced it."""
    bound, spec, reason = describe(op)
    if spec is None:
        raise DiagnosticException(f"te-to-mtia: '{op.expression.text}' carries an mtia.rotation but the planner "
                                  f"cannot describe it: {reason}")
    temporal = fields["temporal"].data
    plan = Plan(spec.axis_names, _ints(fields["op_factors"]), {t.name: _ints(temporal[t.name]) for t in spec.tensors})
    homes = tuple(h.data for h in fields["homes"].data)
    cost = mtia_cost_model(spec, dict(zip((t.name for t in spec.tensors), homes)))
    dtypes = {name: numpy_dtype(value.type.get_element_type()) for name, value in zip(bound.expr.inputs, op.inputs)}
    try:
        kernel = build_shift_kernel(bound, plan, device, cost, numpy_dtype(op.output.type.get_element_type()),
                                    spec=spec, dtypes=dtypes)
    except (AlignError, PlanError, UnsupportedExpression) as error:
        raise DiagnosticException(f"te-to-mtia: the T10 plan of '{op.expression.text}' cannot be lowered: "
                                  f"{error}") from None
    return kernel, homes


class LowerPlannedRotation(RewritePattern):
    """A T10 plan on the PE grid into its SPMD program (T10 s4.4 on MTIA): local-memory
    tiles, the loads of each PE's partitions, the compute steps with the NoC shifts of
    the rotating tensors between them, the partial sums over the reduction network, the
    output's partitions written back."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TensorOp, rewriter: PatternRewriter) -> None:
        plan = _plan(op, ROTATION_ATTR, RotationAttr)
        if plan is None:
            return
        fields = plan.data
        try:
            _, device = require_mtia_target(op)
        except MtiaTargetError as error:
            raise DiagnosticException(f"te-to-mtia: {error}") from None
        kernel, homes = rotation_kernel(op, fields, device)
        ops = rotation_ops(kernel, op, homes)
        _locate(ops, op)
        put = next(o for o in ops if isinstance(o, PutOp))
        rewriter.replace(op, ops, [put.result])
        _add_planned(put, fields)


def rotation_ops(kernel, op: TensorOp, homes) -> list:
    """The mtia ops of an aligned ``kernel`` for ``op``, as ``shift-to-device`` emits a
    device program: every per-PE value a closed form of the PE's number where the
    placement is T10's, else a table."""
    expr = kernel.bound.expr
    names = [expr.output.tensor, *expr.inputs]
    home = dict(zip(names, homes))
    operands = dict(zip(expr.inputs, op.inputs))
    elements = {name: value.type.get_element_type() for name, value in operands.items()}
    elements[expr.output.tensor] = element_type(kernel.output.dtype)   # partial sums accumulate wider
    placed = np.array_equal(initial_placement(kernel), kernel.start) and kernel.closed_form()
    core = core_id() if placed else None
    start = kernel.start_digits(core) if placed else list(kernel.start)
    identity = identity_value(expr.combiner, kernel.dtype)
    ops: list = []
    tiles, receives = {}, {}
    offset = 0

    def alloc(name: str, layout, fill=None):
        nonlocal offset
        tile_type = TileType(layout.partition_shape, elements[layout.name])
        alloc_op = TileOp(name, kernel.cores, offset, tile_type, fill)
        alloc_op.tile.name_hint = name.replace(".", "_")
        offset += tile_type.bytes
        ops.append(alloc_op)
        return alloc_op.tile

    for name, layout in kernel.tensors.items():
        tiles[name] = alloc(name, layout, identity if name == expr.output.tensor else None)
        if layout.rotating:
            receives[name] = alloc(f"{name}.recv", layout)
    for layout in kernel.inputs:
        ops.append(MtiaLoadOp(operands[layout.name], tiles[layout.name], kernel.partition_origin(layout, start, core),
                              home[layout.name]))
    subtask = kernel.subtask()
    roles = {k: int(v) for k, v in subtask.roles.items()}
    sources = kernel.ring_sources(core)
    for event, value in kernel.walk(start):
        if event == "compute":
            step, digits = value
            windows = [kernel.window_offset(kernel.tensors[n], digits, core) for n in names]
            ops.append(StepOp(str(expr), tiles[expr.output.tensor], [tiles[n] for n in expr.inputs], kernel.tiles,
                              kernel.cores, windows, subtask.kind, roles, step,
                              subtask.dtype_bytes if subtask.dtype_bytes != kernel.output.dtype.itemsize else None))
        else:
            for name in kernel.levels[value].tensors:
                ops.append(ShiftOp(tiles[name], receives[name], sources[(name, value)]))
    out = kernel.output
    final = kernel.digits_after(start, kernel.final_counters())
    group = kernel.replica_key(final, core)
    if out.rings > 1:
        work = kernel.op_work()
        ops.append(CombineOp(tiles[out.name], group, out.rings, expr.combiner, subtask.kind, roles,
                             int(work.out_step_elems), int(work.out_resident_elems), kernel.cores))
    put = PutOp(tiles[out.name], kernel.partition_origin(out, final, core), group, home[out.name], op.output.type)
    put.result.name_hint = op.output.name_hint
    ops.append(put)
    for name in kernel.tensors:
        ops.append(FreeOp(tiles[name]))
        if name in receives:
            ops.append(FreeOp(receives[name]))
    return ops


@dataclass(frozen=True)
class TeToMtia(ModulePass):
    """Planned te operators into per-PE programs in the `mtia` dialect."""

    name = "te-to-mtia"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(GreedyRewritePatternApplier(
            [LowerPlannedMatmul(), LowerPlannedRotation(), LowerPlannedEmbedding(), LowerPlannedStream()]),
            apply_recursively=False).rewrite_module(op)
