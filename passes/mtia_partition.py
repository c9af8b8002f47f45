"""``mtia-partition{device=mtia-v1 grid= splits= rows_axis= k_along= rotation=true}``: plan
every operator of the te level on an MTIA device (seeds/001 sections 4 and 6), as
``irc-plan --device mtia-v1 --cost mtia`` does (``irc.planner.mtia.plan_operator``):

- A ``te.op "C[m,n] += A[m,k] * B[k,n]"`` (or ``... * B[n,k]``, section 4's Bᵀ) gets
  MTIA's own mapping or a T10 rotation plan over the NoC, whichever is cheaper. A
  mapping is the ``mtia.mapping`` attribute: the sub-grid, the splits of (batch, m, n,
  k), each PE's padded extents, which axis runs along the grid's rows and along which
  grid dimension k is reduced, how often each slice is read, where each tensor lives,
  and the multicast groups of A and B (the columns (or rows) of PEs sharing one read).
  Options confine the mapping (``grid=4x4``, ``splits=1x4x2x2`` for batch x m x n x k,
  ``rows_axis=m``, ``k_along=cols``) and, when given, choose it; ``rotation=false``
  leaves T10 plans out.
- A rotation plan is ``mtia.rotation``: ``F_op``, each tensor's temporal factors and
  homes (T10 s4.1-4.2 on the PEs as cores, priced by ``irc.cost.mtia.MtiaCostModel``).
- A ``te.opaque "EmbeddingBag"`` / ``"TableBatchedEmbedding"`` gets its embedding plan
  (``mtia.embedding``: the tables' home, the PE grid, samples per PE, the gather's
  buffer depth; ``irc.planner.mtia.plan_embedding``).
- Any other ``te.op`` gets a rotation plan where that is cheaper, else ``mtia.stream``:
  it runs on the PEs' SIMD engines, its tensors at their homes (SRAM while they fit),
  priced by its operands' and result's sizes.
- What is left (a ``te.op`` gathering rows by the data, any other ``te.opaque``) stays
  for the host, with an ``irc.remark`` saying why.

Each plan records its predicted cycles (``planned_cycles``); the module gets the device
as its ``#irc.target``.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    f64,
    i64,
)
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from irc.cost.mtia import stream_cycles
from irc.diagnostics import location_of
from irc.dialects.mtia_plans import (
    EMBEDDING_ATTR,
    MAPPING_ATTR,
    ROTATION_ATTR,
    STREAM_ATTR,
    EmbeddingAttr,
    MappingAttr,
    RotationAttr,
    StreamAttr,
)
from irc.dialects.mtia import element_bytes, simd_traffic
from irc.dialects.te import OpaqueOp, TensorOp
from irc.lowering.model_from_ir import describe, embedding_spec, stream_spec
from irc.lowering.te_to_mtia import matmul_form
from irc.plans.errors import PlanError
from irc.planner.mtia import mapping_space, place_operator, plan_embedding, plan_operator, stream_homes
from irc.target import MtiaTargetError, mtia_device_of, set_mtia_target

REMARK_ATTR = "irc.remark"


def _pair(text: str, option: str, count: int) -> tuple[int, ...] | None:
    if not text:
        return None
    try:
        values = tuple(int(v) for v in text.split("x"))
    except ValueError:
        values = ()
    if len(values) != count or min(values) < 1:
        raise DiagnosticException(f"mtia-partition: {option}={text} must be {count} positive integers joined by 'x'")
    return values


def mapping_attr(mapping, spec) -> MappingAttr:
    groups = mapping.multicast_groups()
    a_line = "row" if mapping.rows_axis == "m" else "column"
    b_line = "column" if a_line == "row" else "row"

    def members(tensor: str, line: str) -> ArrayAttr:
        # the PEs of one group differ along one grid dimension: list that dimension's indices
        index = 1 if line == "row" else 0
        seen = []
        for group in groups[tensor]:
            key = tuple(sorted({pe[index] for pe in group}))
            if key not in seen:
                seen.append(key)
        return ArrayAttr([DenseArrayBase.from_list(i64, list(k)) for k in seen])

    return MappingAttr({
        "grid": DenseArrayBase.from_list(i64, list(mapping.grid)),
        "splits": DenseArrayBase.from_list(i64, list(mapping.splits)),
        "per_pe": DenseArrayBase.from_list(i64, list(mapping.per_pe)),
        "rows_axis": StringAttr(mapping.rows_axis),
        "k_along": StringAttr(mapping.k_along),
        "passes": DenseArrayBase.from_list(i64, [mapping.a_passes, mapping.b_passes]),
        "depths": DenseArrayBase.from_list(i64, list(mapping.depths)),
        "homes": ArrayAttr([StringAttr(h) for h in mapping.homes]),
        f"multicast_{a_line}_A": members("A", a_line),
        f"multicast_{b_line}_B": members("B", b_line),
        "planned_cycles": FloatAttr(float(mapping.cycles), f64),
    })


def rotation_attr(plan, spec) -> RotationAttr:
    """A T10 plan chosen on the PE grid as the ``mtia.rotation`` attribute: ``F_op``
    (``op_factors``, in the op's axis order), each tensor's temporal factors, the tensors'
    homes (output first) and the predicted cycles."""
    rotation = plan.rotation
    return RotationAttr({
        "op_factors": DenseArrayBase.from_list(i64, list(rotation.op_factors)),
        "temporal": DictionaryAttr({t.name: DenseArrayBase.from_list(i64, list(rotation.temporal_factors[t.name]))
                                    for t in spec.tensors}),
        "homes": ArrayAttr([StringAttr(plan.homes[t.name]) for t in spec.tensors]),
        "planned_cycles": FloatAttr(float(rotation.cycles), f64),
    })


@dataclass(frozen=True)
class MtiaPartition(ModulePass):
    """Plan te matmuls with section 4's mapping on an MTIA device."""

    name = "mtia-partition"

    device: str = "mtia-v1"
    grid: str = ""
    splits: str = ""
    rows_axis: str = ""
    k_along: str = ""
    rotation: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            target = set_mtia_target(op, self.device)
            device = mtia_device_of(target)
        except MtiaTargetError as error:
            raise DiagnosticException(f"mtia-partition: {error}") from None
        grid = _pair(self.grid, "grid", 2)
        splits = _pair(self.splits, "splits", 4)
        if self.rows_axis not in ("", "m", "n"):
            raise DiagnosticException(f"mtia-partition: rows_axis={self.rows_axis} must be m or n")
        if self.k_along not in ("", "cols", "rows"):
            raise DiagnosticException(f"mtia-partition: k_along={self.k_along} must be cols or rows")
        confined = bool(grid or splits or self.rows_axis or self.k_along)
        for te_op in list(op.walk()):
            if isinstance(te_op, TensorOp):
                if confined and matmul_form(te_op) is not None:
                    self._plan_matmul(te_op, device, grid, splits)
                else:
                    self._plan_operator(te_op, device)
            elif isinstance(te_op, OpaqueOp):
                self._plan_opaque(te_op, device)

    def _plan_operator(self, te_op: TensorOp, device) -> None:
        """The planner's choice for the op (``irc.planner.mtia.plan_operator``): MTIA's
        mapping, a T10 rotation plan or the SIMD stream, whichever is cheapest."""
        _, spec, _ = describe(te_op)
        if spec is None:
            self._plan_stream(te_op, device)
            return
        homes = place_operator(spec, device)
        try:
            plan = plan_operator(spec, device, homes=homes, rotation=self.rotation)
        except PlanError as error:
            raise DiagnosticException(f"{location_of(te_op)}: error: '{te_op.name}' op mtia-partition: "
                                      f"{error}") from None
        if plan.chosen == "rotation":
            te_op.attributes[ROTATION_ATTR] = rotation_attr(plan, spec)
        elif plan.mapping.rows_axis == "stream":
            self._plan_stream(te_op, device, tuple(homes[t.name] for t in spec.tensors))
        else:
            te_op.attributes[MAPPING_ATTR] = mapping_attr(plan.mapping, spec)

    def _plan_matmul(self, te_op: TensorOp, device, grid, splits) -> None:
        spec, _ = matmul_form(te_op)
        homes = place_operator(spec, device)
        try:
            space = mapping_space(spec, device, homes, grid)
        except PlanError as error:
            raise DiagnosticException(f"mtia-partition: {error}") from None
        chosen = [p for p in space
                  if (splits is None or p.splits == splits)
                  and (not self.rows_axis or p.rows_axis == self.rows_axis)
                  and (not self.k_along or p.k_along == self.k_along)]
        if not chosen:
            raise DiagnosticException(
                f"mtia-partition: no section-4 mapping of '{te_op.bound().expr}' fits "
                f"{device.name}'s local memory with grid={self.grid or 'any'} splits={self.splits or 'any'} "
                f"rows_axis={self.rows_axis or 'any'} k_along={self.k_along or 'any'}")
        best = min(chosen, key=lambda p: (p.cycles, p.pes))
        te_op.attributes[MAPPING_ATTR] = mapping_attr(best, spec)

    @staticmethod
    def _plan_stream(te_op: TensorOp, device, levels=None) -> None:
        spec = stream_spec(te_op)
        if spec is None:
            te_op.attributes[REMARK_ATTR] = StringAttr(
                "not planned: a gather inside a tensor expression reads rows chosen by the data (an "
                "EmbeddingBag runs them on the PEs); left for the host")
            return
        levels = levels or stream_homes(spec.input_bytes, spec.output_bytes, device)
        cycles = simd_planned_cycles(device, te_op, levels)
        te_op.attributes[STREAM_ATTR] = StreamAttr({
            "homes": ArrayAttr([StringAttr(h) for h in levels]),
            "pes": IntegerAttr(device.pes, i64),
            "planned_cycles": FloatAttr(float(cycles), f64),
        })

    @staticmethod
    def _plan_opaque(te_op, device) -> None:
        spec, reason = embedding_spec(te_op)
        if spec is None:
            te_op.attributes[REMARK_ATTR] = StringAttr(f"not planned: {reason}")
            return
        te_op.attributes[EMBEDDING_ATTR] = embedding_attr(plan_embedding(spec, device))


def embedding_attr(plan) -> EmbeddingAttr:
    """An ``irc.planner.mtia.EmbeddingPlan`` as the ``mtia.embedding`` attribute."""
    return EmbeddingAttr({
        "home": StringAttr(plan.home),
        "grid": DenseArrayBase.from_list(i64, list(plan.grid)),
        "samples": IntegerAttr(plan.samples_per_pe, i64),
        "window": IntegerAttr(plan.window, i64),
        "planned_cycles": FloatAttr(float(plan.cycles), f64),
    })


def simd_planned_cycles(device, op, levels) -> float:
    """An operator streamed on the PEs' SIMD engines (``irc.cost.mtia.stream_cycles``):
    its operands read whole from their levels and its result written whole
    (``irc.dialects.mtia.simd_traffic``), its iteration points on every PE's SIMD engine
    at the result's element size; the interpreter times ``mtia.simd`` with the same
    call."""
    read, write = simd_traffic(op.inputs, op.results[0], levels)
    out = op.results[0].type.get_element_type()
    cycles, _ = stream_cycles(device, read, write, op.bound().iteration_points, element_bytes(out), device.pes)
    return cycles
