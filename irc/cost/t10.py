"""The ``t10`` cost model: measured IPU Mk2 costs from the T10/ELK artifact.

Every formula restates IPU_COST_FACTS.md (sections 2, 3 and 5), which records the
calibrated per-step costs of T10's planner (TensorExpression.py). The device supplies the
sync cost, the shift throughput and the multi-chip overhead; the per-kind kernel
constants are the IPU's own measured numbers and are kept literal here.

Documented deviations from the artifact:
- conv uses only the closed-form bound ``0.0495*Bc*ceil8(I)*ceil8(O)*h*w*kh*kw + 2030``
  (IPU_COST_FACTS s2, the "min(prediction, bound)" term); the fitted linear model tree
  needs a pinned, broken scikit-learn stack and 300 unpublished samples.
- pool's 55-point degree-3 NNLS model is unpublished; we fit ``a*ch*hw*win + b*ch*hw + c``
  to the 14 published samples of IPU_COST_FACTS s2 (relative least squares, within ~17%).
- ``other`` kinds are priced as elementwise ops.
"""

from __future__ import annotations

import numpy as np

from irc.cost.model import (
    ArrayLike,
    CostBreakdown,
    CostModelError,
    OpWork,
    SubTask,
    as_float_array,
)
from irc.devices import Device


def _ceil_div(a: ArrayLike, b: ArrayLike) -> ArrayLike:
    return -(-np.asarray(a) // np.asarray(b))


def _ceil_to(a: ArrayLike, multiple: int) -> ArrayLike:
    return _ceil_div(a, multiple) * multiple


def _float_ceil_to(a: ArrayLike, multiple: int) -> np.ndarray:
    """``_ceil_to(as_float_array(a), multiple)``; an integer array is rounded up as
    integers (exact, and far cheaper than a float floor division), then converted."""
    a = np.asarray(a)
    if a.dtype.kind in "iu":
        return as_float_array(_ceil_to(a, multiple))
    return _ceil_to(as_float_array(a), multiple)


def matmul_step_cycles(batch, m, k, n, dtype_bytes: int) -> ArrayLike:
    """IPU_COST_FACTS s2 matmul (5). Orientation: the larger of m, n is m unless both are
    <= 16, then the smaller is m. kb = ceil(k / (32 / b)) k-blocks for the AMP unit."""
    m = as_float_array(m)
    n = as_float_array(n)
    big, small = np.maximum(m, n), np.minimum(m, n)
    both_small = big <= 16
    m_oriented = np.where(both_small, small, big)
    n_oriented = np.where(both_small, big, small)
    kb = _ceil_div(as_float_array(k), 32 // dtype_bytes)
    n_blocks = _ceil_div(n_oriented, 16)
    per_matmul = (
        12 * dtype_bytes * _ceil_div(m_oriented, 6) * kb * n_blocks
        + 514 * kb * n_blocks
        + 113 * n_blocks
        + 173
    )
    return as_float_array(batch) * per_matmul


def elementwise_step_cycles(volume: ArrayLike) -> ArrayLike:
    """IPU_COST_FACTS s2 elementwise (2): Q <= 16432: min(8517, 0.75Q + 290) else 0.5Q + 300."""
    q = as_float_array(volume)
    return np.where(q <= 16432, np.minimum(8517.0, 0.75 * q + 290), 0.5 * q + 300)


def unary_step_cycles(volume: ArrayLike) -> ArrayLike:
    """IPU_COST_FACTS s2 unary (1): 0.5Q + 200."""
    return 0.5 * as_float_array(volume) + 200


_REDUCE_LADDER = np.array([1, 2, 4, 8, 12, 16, 24], dtype=np.float64)


def align_reduce_outputs(outputs: ArrayLike) -> ArrayLike:
    """Round the output count up the ladder 1, 2, 4, 8, 12, 16, 24, then to 48k (IPU_COST_FACTS s2)."""
    o = as_float_array(outputs)
    rung = _REDUCE_LADDER[np.minimum(np.searchsorted(_REDUCE_LADDER, o), len(_REDUCE_LADDER) - 1)]
    return np.where(o > 24, _ceil_to(o, 48), rung)


def reduce_step_cycles(outputs: ArrayLike, rows: ArrayLike) -> ArrayLike:
    """IPU_COST_FACTS s2 reduce (0): X = aligned(O) * R; X <= 480: min(295.25, 1.5X + 175)
    else 0.25X + 175."""
    x = align_reduce_outputs(outputs) * as_float_array(rows)
    return np.where(x <= 480, np.minimum(295.25, 1.5 * x + 175), 0.25 * x + 175)


def gather_step_cycles(index: ArrayLike, leading: ArrayLike) -> ArrayLike:
    """IPU_COST_FACTS s2 gather (6): 300 + ceil(n_t / n_i / 2) * n_i + n_i."""
    n_i = as_float_array(index)
    n_t = as_float_array(leading)
    return 300 + np.ceil(n_t / n_i / 2) * n_i + n_i


def conv_step_cycles(batch, in_channels, out_channels, spatial, window) -> ArrayLike:
    """IPU_COST_FACTS s2 conv (4), closed-form bound only (see module docstring)."""
    return (
        0.0495
        * as_float_array(batch)
        * _float_ceil_to(in_channels, 8)
        * _float_ceil_to(out_channels, 8)
        * as_float_array(spatial)
        * as_float_array(window)
        + 2030
    )


# The 14 published pool samples (ch, h*w, kh*kw, cycles), IPU_COST_FACTS s2.
_POOL_SAMPLES = np.array(
    [
        [4, 64, 9, 4185], [8, 144, 9, 8486], [8, 256, 9, 12854], [32, 64, 9, 15441],
        [4, 256, 25, 21772], [32, 144, 9, 26194], [16, 400, 9, 42528], [8, 1296, 9, 71195],
        [8, 1600, 9, 86318], [4, 1024, 49, 121130], [8, 3249, 9, 179941],
        [4, 16384, 9, 468225], [4, 16384, 25, 1227760], [4, 25600, 49, 3651326],
    ],
    dtype=np.float64,
)


def _fit_pool() -> np.ndarray:
    ch, hw, win, cycles = _POOL_SAMPLES.T
    features = np.stack([ch * hw * win, ch * hw, np.ones_like(ch)], axis=1)
    # relative least squares: every sample weighs the same whatever its size
    coefficients, *_ = np.linalg.lstsq(features / cycles[:, None], np.ones_like(cycles), rcond=None)
    return coefficients


POOL_COEFFICIENTS = _fit_pool()


def pool_step_cycles(channels, spatial, window) -> ArrayLike:
    """Pool (3): channels rounded up to a multiple of 4, then the 14-sample fit."""
    ch = _ceil_to(as_float_array(channels), 4)
    hw = as_float_array(spatial)
    a, b, c = POOL_COEFFICIENTS
    return a * ch * hw * as_float_array(window) + b * ch * hw + c


class T10CostModel:
    """IPU Mk2 costs measured by the T10 artifact (IPU_COST_FACTS sections 2, 3, 5)."""

    name = "t10"

    def compute_cycles(self, device: Device, task: SubTask) -> ArrayLike:
        roles = task.roles
        if task.kind == "matmul":
            return matmul_step_cycles(roles["batch"], roles["m"], roles["k"], roles["n"], task.dtype_bytes)
        if task.kind == "conv":
            return conv_step_cycles(
                roles["batch"], roles["in_channels"], roles["out_channels"], roles["spatial"], roles["window"]
            )
        if task.kind == "pool":
            return pool_step_cycles(roles["channels"], roles["spatial"], roles["window"])
        if task.kind == "reduce":
            outputs = as_float_array(roles["out"])
            return reduce_step_cycles(outputs, as_float_array(task.volume) / outputs)
        if task.kind == "gather":
            return gather_step_cycles(roles["index"], roles["leading"])
        if task.kind == "unary":
            return unary_step_cycles(task.volume)
        if task.kind in ("elementwise", "other"):
            return elementwise_step_cycles(task.volume)
        raise CostModelError(f"t10 cost model has no formula for kind {task.kind!r}")

    def shift_cycles(self, device: Device, nbytes: ArrayLike) -> ArrayLike:
        """IPU_COST_FACTS s3: shift_time(E) = 0.56 * (b/2) * E = 0.28 cycles per byte."""
        return device.shift_cycles_per_byte * as_float_array(nbytes)

    def sync_cycles(self, device: Device) -> float:
        """IPU_COST_FACTS s3: each shift event pays BUFFER_ITERS (2) barriers of 118 cycles."""
        return float(device.sync_cycles * device.syncs_per_shift)

    def output_cycles(self, device: Device, work: OpWork) -> ArrayLike:
        """IPU_COST_FACTS s5 output shuffle ``sh``; includes the partial-sum reduction.

        unary/elementwise/pool pay one barrier. Others, with R partial copies,
        O_s output step elements, O_r = O_s / R and e_0 resident output elements:
        R = 1: g = red = 0; R = 2: g = 2 syncs + shift(O_s / 2), red = elementwise(O_r);
        R > 2: g = R syncs + shift(O_s), red = reduce(O_r, R rows);
        sh = shift(e_0) + 6 syncs + g + red.

        The gathered partial sums ``g`` move in the accumulators' width
        (``work.partial_bytes``: f32 for an f16 ``+=`` output), the reduced, rounded
        output ``e_0`` in the output's own.
        """
        kind = work.subtask.kind
        sync = float(device.sync_cycles)
        b = work.subtask.dtype_bytes
        p = work.partial_element_bytes
        if kind in ("unary", "elementwise", "pool"):
            return np.zeros_like(as_float_array(work.steps)) + sync
        copies = as_float_array(work.partial_copies)
        shift = lambda elems: self.shift_cycles(device, as_float_array(elems) * b)  # noqa: E731
        if not (copies > 1).any():   # one copy everywhere (the planner's bounds): g = red = 0
            return shift(work.out_resident_elems) + 6 * sync + np.zeros_like(copies)
        out_step = as_float_array(work.out_step_elems)
        reduced = out_step / copies
        partials = lambda elems: self.shift_cycles(device, as_float_array(elems) * p)  # noqa: E731
        gather = np.where(
            copies <= 1, 0.0,
            np.where(copies == 2, 2 * sync + partials(out_step / 2), sync * copies + partials(out_step)),
        )
        reduce = np.where(
            copies <= 1,
            0.0,
            np.where(copies == 2, elementwise_step_cycles(reduced), reduce_step_cycles(reduced, copies)),
        )
        return shift(work.out_resident_elems) + 6 * sync + gather + reduce

    def time_lower_bound(self, device: Device, least: OpWork) -> ArrayLike:
        """``op_time`` of the least work itself: it grows with the shifted bytes, the shift
        events and the resident output, and one partial copy pays no gather and no
        reduction (``output_cycles``), so no plan of the group costs less."""
        return self.op_time(device, least).total

    def refined_time_lower_bound(self, device: Device, least: OpWork) -> ArrayLike:
        """``time_lower_bound`` with a compute term that splitting a step tile never
        lowers (the exchange terms depend on no tile). conv, pool, unary and elementwise
        step costs are sums of products of (rounded-up) tiles with positive coefficients
        plus a per-step constant, so ``steps * step`` itself; a matmul's orientation can
        flip when a tile is split, so the lesser of its two orientations; reduce:
        ``0.25 X + 175 <= step`` with ``X >= Q``; gather: ``ceil(n_t/n_i/2) n_i >= n_t/2``."""
        task = least.subtask
        steps = as_float_array(least.steps)
        roles = task.roles
        if task.kind == "matmul":
            batch, m, k, n = (as_float_array(roles[r]) for r in ("batch", "m", "k", "n"))
            kb = _ceil_div(k, 32 // task.dtype_bytes)

            def oriented(rows, cols):
                blocks = _ceil_div(cols, 16)
                return (12 * task.dtype_bytes * _ceil_div(rows, 6) * kb * blocks
                        + 514 * kb * blocks + 113 * blocks + 173)

            compute = steps * batch * np.minimum(oriented(m, n), oriented(n, m))
        elif task.kind == "reduce":
            compute = steps * (0.25 * as_float_array(task.volume) + 175)
        elif task.kind == "gather":
            compute = steps * (300 + as_float_array(roles["leading"]) / 2 + as_float_array(roles["index"]))
        else:
            compute = steps * self.compute_cycles(device, task)
        shift, sync, reduction = self._exchange(device, least)
        return compute + shift + sync + reduction

    def _exchange(self, device: Device, work: OpWork) -> tuple[ArrayLike, ArrayLike, ArrayLike]:
        """``op_time``'s shift, sync and reduction terms (the refined bound needs no
        compute term of ``op_time``'s)."""
        overhead = np.where(as_float_array(work.cores) > device.cores_per_chip, device.inter_chip_overhead, 1.0)
        shift = overhead * self.shift_cycles(device, work.shifted_bytes)
        sync = overhead * self.sync_cycles(device) * as_float_array(work.shift_events)
        reduction = overhead * self.output_cycles(device, work)
        return shift, sync, reduction

    def op_time(self, device: Device, work: OpWork) -> CostBreakdown:
        """IPU_COST_FACTS s3: compute = N * step; sync = 2*118*K; shift = shift_time(S);
        plus the output shuffle; exchange terms x1.25 beyond one chip."""
        compute = as_float_array(work.steps) * self.compute_cycles(device, work.subtask)
        shift, sync, reduction = self._exchange(device, work)
        return CostBreakdown(compute=compute, shift=shift, sync=sync, reduction=reduction)
