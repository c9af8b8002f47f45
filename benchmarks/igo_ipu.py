"""The ipu-mk2 sections of benchmarks/igo.py: IGO's gradient pairs on an inter-core chip,
fused under one compute-shift plan vs the two gradients planned apart
(irc.planner.igo_pair, irc's own extension; see benchmarks/igo.py)."""

from __future__ import annotations

import math

from irc.workloads.igo import workloads
from irc.devices import load_device
from irc.dialects.igo import GradPairOp
from irc.lowering.igo_to_npu import batch_axes
from irc.lowering.igo_fuse import IgoFuse
from irc.passes.te_autodiff import TeAutodiff
from irc.runner import make_context, parse_module


# ---------------------------------------------------------------------------
# The inter-core chip: a pair under one compute-shift plan (irc.planner.igo_pair)
# ---------------------------------------------------------------------------


def ipu_pairs(text: str):
    """The pairs of a workload fused for an inter-core chip, as planner specs (None for
    a pair no single plan describes), with a label: the forward GEMM."""
    from irc.lowering.igo_pair_partition import pair_spec_of
    from irc.planner import SpecError

    module = parse_module(text, "workload.mlir")
    TeAutodiff().apply(make_context(), module)
    IgoFuse(device="ipu-mk2").apply(make_context(), module)
    found = []
    for op in module.walk():
        if isinstance(op, GradPairOp):
            label = op.attributes["irc.gemm"].data
            extents = dict(op.bound_dx().extents)
            batch = math.prod(extents[a] for a in batch_axes(op))
            if batch > 1:
                label += f" x{batch}"
            try:
                found.append((label, pair_spec_of(op)))
            except SpecError:
                found.append((label, None))
    return found


def signature(pair) -> tuple:
    """Identical layers (another layer's names for the same shapes) share one search."""
    union = pair.union_spec()
    axes = union.axis_names
    return (union.extents, tuple(tuple(tuple(axes.index(a) for a in dim) for dim in t.dims) for t in union.tensors),
            union.tensor_bytes, pair.dx.kind, pair.dw.kind)


def ipu_section(names: list[str], batch: int, progress) -> tuple[list[str], dict]:
    from irc.planner.igo_pair import compare_pair

    device = load_device("ipu-mk2")
    built = workloads("server", batch)
    searched: dict = {}
    lines = [f"\nipu-mk2 ({device.cores} cores, t10 cost model), batch {batch}: each pair fused under one plan "
             "(its dY ring feeds both gradients) vs the two gradients' own plans; cycles are the operators' plus "
             "their inputs' arrival under the ARRIVAL MODEL (every input relayouted from an unknown layout, its "
             "whole partition: dY twice unfused, once fused; irc.planner.igo_pair.arrival_cycles); kernel gain: "
             "the operators' own time alone",
             f"{'model':<6}{'layer (forward GEMM)':<28}{'n':>3}{'unfused':>12}{'fused':>12}{'arrival gain':>13}"
             f"{'kernel gain':>12}  fused F_op"]
    data: dict = {}
    for name in names:
        rows: dict = {}
        for label, pair in ipu_pairs(built[name]):
            key = signature(pair) if pair is not None else ("none", label)
            if key not in rows:
                rows[key] = [label, pair, 0]
            rows[key][2] += 1
        totals = [0.0, 0.0, 0.0, 0.0]   # unfused, fused-or-unfused (what rtensor-partition keeps), kernel both
        undescribed = 0
        for key, (label, pair, count) in rows.items():
            progress.advance(f"ipu-mk2 {name} {label}")
            if pair is None:
                undescribed += count
                lines.append(f"{name:<6}{label:<28}{count:>3}{'no single plan (dX writes h+r or 2*h)':>45}")
                continue
            if key not in searched:
                searched[key] = compare_pair(pair, device, "t10")
            c = searched[key]
            kept = min(c.fused_cycles, c.unfused_cycles)
            totals[0] += count * c.unfused_cycles
            totals[1] += count * kept
            plan = "no fused plan fits" if c.fused is None else "x".join(map(str, c.fused.plan.op_factors))
            fused = f"{c.fused_cycles:>12,.0f}" if c.fused is not None else f"{'-':>12}"
            kernel = f"{c.kernel_gain:>12.3f}" if c.fused is not None else f"{'-':>12}"
            gain = f"{c.gain:>13.3f}" if c.fused is not None else f"{'-':>13}"
            lines.append(f"{name:<6}{label:<28}{count:>3}{c.unfused_cycles:>12,.0f}{fused}{gain}{kernel}  {plan}")
        if totals[0]:
            lines.append(f"{name:<6}{'total (fused where it wins)':<28}{'':>3}{totals[0]:>12,.0f}{totals[1]:>12,.0f}"
                         f"{totals[0] / totals[1]:>13.3f}   ({undescribed} pair(s) without a single plan excluded; "
                         "arrival model)")
        data[name] = {"unfused_cycles": totals[0], "kept_cycles": totals[1], "undescribed": undescribed}
    return lines, data


PRESSURE_CUTOFF = 1.5
"""The fused search under memory pressure looks for plans up to this many times the
unfused kernel time (exact below it; a slower fused plan is reported as such)."""


def ipu_pressure_section(names: list[str], batch: int, budgets_kb: list[float], progress) -> tuple[list[str], dict]:
    """Kernel-only time of each pair on ipu-mk2 with a per-core memory budget: its fused
    kernel vs its two products' kernels, no arrival model (the kernels' planned cycles,
    which the interpreted kernels take exactly: tests/schedule/test_fused_kernel.py).

    A budget stands for what model-wide planning leaves an operator when the model's
    weights rest on chip (T10 s4.3.2): the fused kernel gets all of it; each unfused
    product gets it less what stays on chip across it for the other product, spread
    over all cores (the least any layout holds): X, read later by the dW product, across
    the dX product; dX, the dX product's result, across the dW product."""
    import dataclasses

    from irc.planner import PlanError, search
    from irc.planner.igo_pair import search_pair
    from irc.planner.relayout import tensor_elements

    device = load_device("ipu-mk2")
    built = workloads("server", batch)
    lines = [f"\nipu-mk2 under memory pressure, batch {batch}: KERNEL-ONLY time (no arrival model) of each pair "
             "fused vs its two products' own plans, with a per-core budget (what resting weights leave); each "
             "unfused product gets the budget less what stays on chip across it for the other (X across dX's, "
             "dX across dW's); dY rings: prod f_t of dY in the fused plan / the dX plan / the dW plan",
             f"{'model':<6}{'layer (forward GEMM)':<28}{'n':>3}{'budget':>8}{'unfused':>12}{'fused':>12}"
             f"{'kernel gain':>12}  dY rings"]
    data: dict = {}
    searched: dict = {}
    for name in names:
        rows: dict = {}
        for label, pair in ipu_pairs(built[name]):
            if pair is not None:
                rows.setdefault(signature(pair), [label, pair, 0])[2] += 1
        data[name] = {}
        for kb in budgets_kb:
            budget = int(kb * 1024)
            chip = dataclasses.replace(device, name=f"ipu-mk2 {kb:g} KB", sram_bytes=budget)
            totals = [0.0, 0.0]   # unfused, kept (fused where its kernel is faster)
            wins = fits = 0
            for key, (label, pair, count) in rows.items():
                progress.advance(f"ipu-mk2 {name} {label} {kb:g} KB")
                union = pair.union_spec()
                spread = lambda tensor: -(-tensor_elements(union, tensor) * union.bytes_of(tensor) // chip.cores)  # noqa: E731
                if (key, kb) not in searched:
                    try:
                        dx = search(pair.dx, dataclasses.replace(chip, sram_bytes=budget - spread(pair.x.name)),
                                    "t10").best
                        dw = search(pair.dw, dataclasses.replace(chip, sram_bytes=budget - spread(pair.dx.output.name)),
                                    "t10").best
                    except PlanError:
                        searched[(key, kb)] = None
                    else:
                        unfused = dx.cycles + dw.cycles
                        try:
                            fused, _ = search_pair(pair, chip, "t10", below=PRESSURE_CUTOFF * unfused)
                        except PlanError:
                            fused = None
                        searched[(key, kb)] = (dx, dw, fused)
                found = searched[(key, kb)]
                if found is None:
                    lines.append(f"{name:<6}{label:<28}{count:>3}{kb:>6g}KB{'no unfused plan fits':>24}")
                    continue
                dx, dw, fused = found
                unfused = dx.cycles + dw.cycles
                rings = lambda plan: math.prod(plan.temporal_factors[pair.dy])  # noqa: E731
                totals[0] += count * unfused
                if fused is None:
                    totals[1] += count * unfused
                    lines.append(f"{name:<6}{label:<28}{count:>3}{kb:>6g}KB{unfused:>12,.0f}"
                                 f"{'> ' + format(PRESSURE_CUTOFF, 'g') + 'x':>12}{'< ' + format(1 / PRESSURE_CUTOFF, '.3f'):>12}"
                                 f"  - / {rings(dx)} / {rings(dw)}")
                    continue
                fits += 1
                wins += fused.cycles < unfused
                totals[1] += count * min(unfused, fused.cycles)
                lines.append(f"{name:<6}{label:<28}{count:>3}{kb:>6g}KB{unfused:>12,.0f}{fused.cycles:>12,.0f}"
                             f"{unfused / fused.cycles:>12.3f}  {rings(fused.plan)} / {rings(dx)} / {rings(dw)}")
            if totals[0]:
                lines.append(f"{name:<6}{'total (fused where it wins)':<28}{'':>3}{kb:>6g}KB{totals[0]:>12,.0f}"
                             f"{totals[1]:>12,.0f}{totals[0] / totals[1]:>12.3f}  (fused kernel faster for {wins} of "
                             f"{len(rows)} pair shapes)")
            data[name][f"{kb:g}"] = {"unfused_cycles": totals[0], "kept_cycles": totals[1], "wins": wins,
                                     "shapes": len(rows)}
    return lines, data
