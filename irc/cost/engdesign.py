"""The ``engdesign`` cost model: the T10 benchmark's grader, restated.

The seed-003 problem is graded by the EngDesign benchmark (repository
AGI4Engineering/EngDesign, ``tasks/Yiqi_02/``): its evaluate module prices a plan with
``TensorExpression.evaluate_config`` (``t10_TensorExpression.py``), which adds a core term
from ``Compute.get_total_cycle_for_fused_op`` (``tsim_components/comp.py``) and three
network terms from ``NoC.get_total_cycles_from_expression`` (``tsim_components/noc.py``).
Its reference answer is 7,018 cycles. The terms, per core, in cycles:

- **core** (comp.py ``get_total_cycle_for_fused_op``): the larger of
  ``steps * 2*b*m*k*n / 512`` (``get_mm_compute_cycle_from_padded_tile``: the step's
  sub-matmul, *not* padded to the array, at 512 flops/cycle) and the per-step load and
  store traffic (``get_mm_load_store_cycles_from_padded_bkmn``): each operand tile moves
  once per 16 uses, ``load = (b*m*k*ceil(n/16) + b*k*n*ceil(m/16)) * bytes / 32`` for the two
  inputs, ``store = b*m*n*ceil(k/16) * bytes / 32`` for the output, 32 bytes/cycle. The
  traffic term is one step's, not multiplied by the steps.
- **broadcast** (noc.py): each input's partition of ``e_v`` elements (``e_v`` = prod over
  its dimensions of ``ceil(L'_d / f_t)``, ``TensorExpression.get_sub_op_var_sizes``) is sent
  ``prod(f_t of v) - 1`` more times: ``e_v * (prod f_t - 1) / 1.5``. Replicas (rings) cost
  nothing.
- **reduction** (noc.py): the output, split into ``n = prod(f_t of C)`` parts, pays 0
  (``n = 1``), ``e_C`` (``n = 2``) or ``e_C * (1 + (n-1)/n)`` elements, at 1.5 per cycle,
  times its ``rings = P / n`` (the contention of ``rings`` concurrent transfers). Partial
  sums left by F_op on a reduction axis are free when C is not rotated. The grader counts
  elements whatever their width, so the f32 partial sums of irc's numerics (README,
  "Numerics of the interpreter") cost here what the grader charges for them.
- **shift** (noc.py, loops from ``TensorExpression.get_shift_info``): per axis the
  temporal factors are peeled by their gcd into loops (as ``irc.plans.evaluate``); the
  loops are sorted by elements moved per step ``s`` (sum of the moving tensors' ``e_v``),
  largest first, ties in generation order (axes in the op's order, coarse pace first; the
  grader's axes are F_op's m, k, n, irc's order for ``C[m,n] += A[m,k] * B[k,n]``). Loop
  ``i`` (from 0) with ``t`` shifts runs ``X = prod(t + 1 of the loops before it)`` times and
  costs ``X * s * t * hops / 1.5 * (i + 1)``: the ``(i + 1)`` is the all-to-all contention of
  ``i + 1`` concurrent transfers; ``hops`` is 1 for the first two loops, else the ring count
  of the *tensor* whose index equals the generation index of the loop sorted two places
  earlier (the grader indexes its per-tensor ring counts by a loop index). When that index is not a tensor's,
  the grader raises and cannot price the plan: engdesign gives such plans infinite time,
  so the search never returns them.
- each network term is truncated to whole cycles (``int``); sync barriers are not priced
  (``SYNC_CYCLES`` enters only functions ``evaluate_config`` does not call).

The constants (512 flops/cycle, reuse 16, 32 bytes/cycle, no matmul start-up cycles, 1.5
elements/cycle, all-to-all contention) are the evaluate module's ``Compute``/``NoC``
arguments. That module is published only as bytecode (``__pycache__/evaluate.*.pyc``), so
they are recovered from the grader's published results: with them this model reproduces
``ai_time`` of all 16 valid plans in ``tasks/Yiqi_02/logs/*.jsonl`` exactly (e.g.
F_op=[2,32,23], all f_t 1: 13,400; F_op=[1,16,20], f_t_A_m=f_t_C_m=2: 111,274). The reuse
of A's ``m x k`` tile is pinned by those logs only to 16..31; 16, the array side, is used.

How the plan spaces differ, and why the search still returns the grader's optimum:
- The grader's own search (``get_all_spatial_configs``, ``get_all_temporal_configs``,
  ``update_spatial_dim_parts_if_valid``, ``valid_temporal_dim_var_parts``,
  ``get_util_threshold``, ``get_pad_threshold``) keeps plans using at least
  ``0.9 * min(Q/(Q + 2C), 3*max(L)/220)`` of the C cores (Q iteration points) and padding
  within ``1 / (0.9 * min(Q/(Q + C), 3*max(L)/220) * (3/7)**(1/18))`` (about 1.165x for
  seed 003), spatially and temporally apart. irc's defaults (``min_utilization`` 0.9 of
  min(C, Q) cores, ``max_padding`` 1/0.9 on the combined padding) are stricter, so irc's
  plan space is a subset of the grader's: its optimum is never below the grader's, and for
  seed 003 equals it (7,018: e.g. F_op=[2,244,3], f_t_A_k=3, which irc's space holds).
- Memory: the grader prices a submitted plan without checking SRAM (its logs price plans
  needing 1.7 MB per core); its reference search keeps plans within a per-core limit
  (``get_hot_cold_bytes_per_core``). irc always checks its own per-core bytes (partitions
  of the padded step tiles, plus a receive buffer per rotating tensor; never less than
  the grader's) against the device's SRAM, so ``--explain`` rejects such plans.
- Its evaluation of a submitted plan applies no utilisation or padding threshold (its
  logs price plans on 960 cores); nor does ``check_plan`` by default.
- F_op and f_t are the same objects (f_t divides the sharing count P; f_t on one axis
  divide one another; at most the per-core extent), so every irc plan is a grader plan.

Only matmuls (``kind == "matmul"``, batch axes allowed) are priced, as the grader's
problem is one; the terms need the plan's geometry (``OpWork.geometry``, filled in by
the planner), and a caller without it gets a ``CostModelError``.
"""

from __future__ import annotations

import numpy as np

from irc.cost.model import (
    ArrayLike,
    CostBreakdown,
    CostModelError,
    OpWork,
    PlanGeometry,
    SubTask,
    as_float_array,
)
from irc.devices import Device

# The grader's Compute and NoC arguments (see the module docstring for their source).
SYSTOLIC_FLOPS_PER_CYCLE = 512      # 2 * 16 * 16: a multiply-add is two flops
OPERAND_REUSE = 16                  # each operand tile moves once per 16 uses
LOAD_STORE_BYTES_PER_CYCLE = 32
NOC_ELEMENTS_PER_CYCLE = 1.5        # the NoC counts elements, whatever their size
GRADER_ELEMENT_BYTES = 2            # the grader's problems are f16: bytes -> elements


def _ceil_div(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    return -(-np.asarray(a) // np.asarray(b))


def matmul_core_cycles(batch, m, k, n, steps, dtype_bytes: int) -> ArrayLike:
    """comp.py ``get_total_cycle_for_fused_op`` for one matmul: max(steps x the step's
    systolic time, one step's input loads, one step's output stores)."""
    b, m, k, n = (as_float_array(x) for x in (batch, m, k, n))
    compute = (2 * (b * m * k * n) / SYSTOLIC_FLOPS_PER_CYCLE) * as_float_array(steps)
    # (m, n) orientation does not matter: both sums are symmetric in m and n
    load = (b * m * k * np.ceil(n / OPERAND_REUSE) + b * k * n * np.ceil(m / OPERAND_REUSE)) * dtype_bytes
    store = b * m * n * np.ceil(k / OPERAND_REUSE) * dtype_bytes
    return np.maximum(compute, np.maximum(load / LOAD_STORE_BYTES_PER_CYCLE, store / LOAD_STORE_BYTES_PER_CYCLE))


def noc_cycles(elements: ArrayLike, transfers: ArrayLike) -> ArrayLike:
    """noc.py ``num_cycle_of_access``: elements at 1.5 per cycle, slowed by ``transfers``
    concurrent transfers (all-to-all contention 1/transfers), in the grader's own order of
    operations so that its ``int`` truncation falls on the same side."""
    return as_float_array(elements) / NOC_ELEMENTS_PER_CYCLE / (1.0 / as_float_array(transfers))


def partition_elements(geometry: PlanGeometry) -> np.ndarray:
    """``e_v`` [..., V]: per tensor, prod over its dimensions of ceil(L'_d / f_t[v, d]); a
    compound dimension is the sum of its axes' terms minus (terms - 1)
    (``get_sub_op_var_sizes`` with ``shape_to_size``); dims held whole (a gather's table
    rows) multiply in."""
    per_core = np.asarray(geometry.per_core)
    temporal = np.asarray(geometry.temporal)
    columns = []
    for v, dims in enumerate(geometry.tensor_dims):
        elements = np.full(per_core.shape[:-1], geometry.whole[v] if geometry.whole else 1, dtype=np.int64)
        for dim in dims:
            terms = [_ceil_div(per_core[..., a], temporal[..., v, a]) for a in dim]
            elements = elements * (sum(terms) - (len(terms) - 1))
        columns.append(elements)
    return np.stack(columns, axis=-1)


def broadcast_cycles(elements: np.ndarray, parts: np.ndarray) -> np.ndarray:
    """noc.py: every input (tensors 1..) sends its partition prod(f_t) - 1 more times."""
    total = np.zeros(elements.shape[:-1])
    for v in range(1, elements.shape[-1]):
        total = total + noc_cycles(elements[..., v] * (parts[..., v] - 1), 1)
    return total


def reduction_cycles(out_elements: ArrayLike, out_parts: ArrayLike, out_rings: ArrayLike) -> ArrayLike:
    """noc.py: the output split into n parts moves 0, e_C or e_C (1 + (n-1)/n) elements,
    contended by its ring count."""
    e = as_float_array(out_elements)
    n = as_float_array(out_parts)
    moved = np.where(n <= 1, 0.0, np.where(n == 2, e, e * (1 + (n - 1) / n)))
    return noc_cycles(moved, out_rings)


def rotation_loops(temporal: np.ndarray, elements: np.ndarray):
    """The grader's shift loops (``get_shift_info``), one slot per (axis, tensor).

    A slot is a loop when its tensor is the first with that pace on the axis and the pace
    is above 1: it shifts ``pace / next coarser pace - 1`` times every tensor split at
    least that finely. Returns per slot [..., S]: shifts, elements moved per shift, whether
    it is a loop, and its generation index (axes in order, coarse pace first).
    """
    n_tensors, n_axes = temporal.shape[-2:]
    shifts, moved, is_loop, axis_of, pace_of = [], [], [], [], []
    for d in range(n_axes):
        paces = temporal[..., :, d]
        for v in range(n_tensors):
            pace = paces[..., v]
            coarser = np.where(paces < pace[..., None], paces, 1).max(axis=-1)
            first = np.ones(pace.shape, dtype=bool)
            for w in range(v):
                first &= paces[..., w] != pace
            loop = first & (pace > 1)
            shifts.append(np.where(loop, pace // coarser - 1, 0))
            moved.append((elements * (paces >= pace[..., None])).sum(axis=-1))
            is_loop.append(loop)
            axis_of.append(d)
            pace_of.append(pace)
    shifts, moved, is_loop, pace_of = (np.stack(x, axis=-1) for x in (shifts, moved, is_loop, pace_of))
    axis_of = np.asarray(axis_of)
    # generation index: loops on earlier axes, plus coarser loops on the same axis
    earlier = (axis_of[None, :] < axis_of[:, None]) | (
        (axis_of[None, :] == axis_of[:, None]) & (pace_of[..., None, :] < pace_of[..., :, None])
    )
    generation = (earlier & is_loop[..., None, :]).sum(axis=-1)
    return shifts, moved, is_loop, generation


def shift_cycles_of_loops(temporal: np.ndarray, elements: np.ndarray, rings: np.ndarray) -> np.ndarray:
    """noc.py: loops by elements moved, largest first (ties in generation order); loop i
    costs X * s * t * hops / 1.5 * (i + 1). Infinite where the grader's ``hops`` index is
    no tensor's (it raises there)."""
    shifts, moved, is_loop, generation = rotation_loops(temporal, elements)
    order = np.lexsort((generation, -moved, ~is_loop), axis=-1)
    shifts, moved, is_loop, generation = (
        np.take_along_axis(x, order, axis=-1) for x in (shifts, moved, is_loop, generation)
    )
    n_tensors = rings.shape[-1]
    total = np.zeros(moved.shape[:-1])
    runs = np.ones(moved.shape[:-1])
    unpriceable = np.zeros(moved.shape[:-1], dtype=bool)
    for i in range(moved.shape[-1]):
        hops = np.ones(moved.shape[:-1])
        if i >= 2:
            tensor = generation[..., i - 2]
            valid = tensor < n_tensors
            unpriceable |= is_loop[..., i] & ~valid
            hops = np.take_along_axis(rings, np.where(valid, tensor, 0)[..., None], axis=-1)[..., 0]
        cycles = noc_cycles(runs * moved[..., i] * shifts[..., i] * hops, i + 1)
        total = total + np.where(is_loop[..., i], cycles, 0.0)
        runs = runs * np.where(is_loop[..., i], shifts[..., i] + 1, 1)
    return np.where(unpriceable, np.inf, total)


class EngDesignCostModel:
    """The EngDesign benchmark grader's model of T10 plans (see the module docstring)."""

    name = "engdesign"
    # The grader prices a plan as a whole (max of compute and load/store, contended shift
    # loops): no per-instruction split exists to time a chip program with.
    times_instructions = False

    def compute_cycles(self, device: Device, task: SubTask) -> ArrayLike:
        """One step's systolic time, 2*b*m*k*n / 512 (``get_mm_compute_cycle_from_padded_tile``);
        ``op_time`` bounds the plan's total by its load/store traffic."""
        batch, m, k, n = self._matmul_roles(task)
        return 2 * (batch * m * k * n) / SYSTOLIC_FLOPS_PER_CYCLE

    def shift_cycles(self, device: Device, nbytes: ArrayLike) -> ArrayLike:
        """The grader's NoC rate (1.5 elements per cycle) for bytes of f16 elements."""
        return as_float_array(nbytes) / GRADER_ELEMENT_BYTES / NOC_ELEMENTS_PER_CYCLE

    def sync_cycles(self, device: Device) -> float:
        return 0.0

    def time_lower_bound(self, device: Device, least: OpWork) -> ArrayLike:
        """``op_time``'s core term (the network terms, which need the plan's geometry, are
        truncations of non-negative values)."""
        batch, m, k, n = self._matmul_roles(least.subtask)
        return matmul_core_cycles(batch, m, k, n, least.steps, least.subtask.dtype_bytes)

    def refined_time_lower_bound(self, device: Device, least: OpWork) -> ArrayLike:
        """The systolic term alone (steps times the step's volume never shrinks when a
        tile is split; the one-step load/store term does)."""
        batch, m, k, n = self._matmul_roles(least.subtask)
        return 2 * (batch * m * k * n) / SYSTOLIC_FLOPS_PER_CYCLE * as_float_array(least.steps)

    def op_time(self, device: Device, work: OpWork) -> CostBreakdown:
        """core = compute (with the load/store bound); shift = broadcast + rotation loops;
        reduction = the output's reduction; each network term truncated as the grader does."""
        batch, m, k, n = self._matmul_roles(work.subtask)
        geometry = work.geometry
        if geometry is None:
            raise CostModelError(
                "engdesign prices a plan tensor by tensor and needs its geometry "
                "(OpWork.geometry, filled in by the planner's search and check_plan)"
            )
        compute = matmul_core_cycles(batch, m, k, n, work.steps, work.subtask.dtype_bytes)
        temporal = np.asarray(geometry.temporal)
        elements = partition_elements(geometry)
        parts = temporal.prod(axis=-1)
        rings = np.asarray(geometry.sharing) // parts
        broadcast = np.floor(broadcast_cycles(elements, parts))
        rotation = np.floor(shift_cycles_of_loops(temporal, elements, rings))
        reduction = np.floor(reduction_cycles(elements[..., 0], parts[..., 0], rings[..., 0]))
        return CostBreakdown(
            compute=compute, shift=broadcast + rotation, sync=np.zeros_like(compute), reduction=reduction
        )

    @staticmethod
    def _matmul_roles(task: SubTask):
        if task.kind != "matmul":
            raise CostModelError(
                f"engdesign cost model prices only matmul operators (the grader's problem), not {task.kind!r}"
            )
        roles = task.roles
        return tuple(as_float_array(roles[r]) for r in ("batch", "m", "k", "n"))
