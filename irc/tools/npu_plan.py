"""`irc-plan` on an NPU-family device (``--device npu-edge|npu-server --cost igo``):
the plans of `irc.cost.igo` (IGO, MICRO'23) for one operator or a whole model.

An operator with a GEMM view (``Y[m..,n..] += X[m..,k..] * W[k..,n..]``, axes both
inputs carry with the output making it a batch of GEMMs) gets the forward GEMM's tiles
searched on the NPU's scratchpad (what `te-to-npu` lowers it to), its cycles (compute,
stall) and DRAM bytes; with ``--order`` also its layer's backward pass, the dX/dW pair in
that tile order (``cost``: the cheapest of the unfused baseline and the fused orders,
never worse than unfused; ``paper``: IGO's Algorithm 1; or an order's name) beside the
unfused baseline. An operator without one (elementwise, normalisations, softmax) runs on
the NPU's vector unit and is priced by its DRAM traffic: its inputs read and its output
written once. A model's ops run one after another through DRAM; its time is their sum.
``--cores`` picks a core count the part comes in, ``--memory`` the memory model
(``irc`` or SCALE-Sim's, ``scalesim``)."""

from __future__ import annotations

import json
import math
import time

from irc.devices.npu import CHIP_FAMILY
from irc.planner.relayout import tensor_elements
from irc.cost.igo import FUSED_ORDERS, MEMORIES, ORDERS, Layer, ScratchpadError
from irc.planner.igo import cheapest, evaluate, paper_order
from irc.tools.family_planner import FamilyPlanner, ModelRequest, OperatorRequest, PlanToolError, print_fallbacks

COST = CHIP_FAMILY.cost_model
"""The cost model an NPU is planned with (`irc.cost.igo`)."""
ORDER_CHOICES = ("cost", "paper", "sequential", *FUSED_ORDERS)
"""``--order``: how each layer's backward pair is ordered (``sequential``: the unfused baseline)."""


def configure(args, device):
    """The NPU `args` ask for: ``--cores`` applied, the cost model ``igo`` (the default),
    ``--memory`` (``irc`` when unset) and ``--order`` known, Algorithm 1's direction
    unset."""
    if args.cost not in (None, COST):
        raise PlanToolError(f"error: device {device.name} is an NPU: plan it with --cost {COST} (the default on an "
                            f"NPU; cost model {args.cost!r} prices the IPU kind or MTIA)")
    if args.direction != "paper":
        raise PlanToolError(f"error: --direction is Algorithm 1's on an inter-core chip; {device.name} is an NPU")
    if args.memory is None:
        args.memory = "irc"
    if args.memory not in MEMORIES:
        raise PlanToolError(f"error: --memory: unknown memory model '{args.memory}'; known: {', '.join(MEMORIES)}")
    if args.order is not None and args.order not in ORDER_CHOICES:
        raise PlanToolError(f"error: --order: unknown order '{args.order}'; known: {', '.join(ORDER_CHOICES)}")
    if args.cores is not None:
        try:
            device = device.with_cores(args.cores)
        except ValueError as error:
            raise PlanToolError(f"error: --cores: {error}") from None
    return device, None


# ---------------------------------------------------------------------------
# Pricing
# ---------------------------------------------------------------------------


def gemm_of(spec) -> tuple[int, int, int, int] | None:
    """(batch, M, K, N) of an `OpSpec` that is a contraction of two inputs (the second
    the right-hand W: k folds, n the output's axes only W carries, m those only the
    first carries, batch those both carry), else None."""
    if spec.combiner != "+=" or len(spec.inputs) != 2 or not spec.reduction_axes:
        return None
    extent = dict(spec.axes)
    x, w = spec.inputs
    out = spec.output.axes
    batch = [a for a in out if x.indexed_by(a) and w.indexed_by(a)]
    n = [a for a in out if w.indexed_by(a) and a not in batch]
    m = [a for a in out if a not in batch and a not in n]
    k = list(spec.reduction_axes)
    if not all(w.indexed_by(a) for a in k) or any(not x.indexed_by(a) for a in m):
        return None
    size = lambda axes: math.prod(extent[a] for a in axes)  # noqa: E731
    return size(batch), size(m), size(k), size(n)


def _layer_error(name: str, device, error: ScratchpadError) -> PlanToolError:
    return PlanToolError(f"error: layer '{name}' does not fit {device.name}'s scratchpad: {error}")


def price_gemm(name: str, batch: int, layer: Layer, device, memory: str, order: str | None) -> dict:
    """One GEMM operator (run `batch` times): its forward plan and, with `order`, its
    layer's backward pair in that order beside the unfused baseline."""
    try:
        forward = evaluate(layer, device, "forward", memory=memory)
    except ScratchpadError as error:
        raise _layer_error(name, device, error) from None
    row = {"name": name, "kind": "gemm", "batch": batch, "gemm": [layer.M, layer.K, layer.N],
           "tiles": list(_tiles(forward)), "cycles": batch * forward.cycles,
           "compute_cycles": batch * forward.compute_cycles, "stall_cycles": batch * forward.stall_cycles,
           "dram_bytes": batch * forward.dram_bytes}
    if order is not None:
        row["backward"] = price_pair(name, batch, layer, device, memory, order)
    return row


def price_pair(name: str, batch: int, layer: Layer, device, memory: str, order: str) -> dict:
    """A layer's backward dX/dW pair in `order` (``cost``: the cheapest of all, the
    unfused baseline included) and the unfused baseline's cost."""
    candidates = {"cost": ORDERS, "paper": (paper_order(layer),), "sequential": ("baseline",)}.get(order, (order,))
    try:
        costs = {o: evaluate(layer, device, o, memory=memory) for o in dict.fromkeys(("baseline", *candidates))}
    except ScratchpadError as error:
        raise _layer_error(name, device, error) from None
    chosen = cheapest(costs, candidates)
    cost, base = costs[chosen], costs["baseline"]
    return {"order": "sequential" if chosen == "baseline" else chosen, "tiles": list(_tiles(cost)),
            "cycles": batch * cost.cycles, "dram_bytes": batch * cost.dram_bytes,
            "spill_bytes": batch * cost.spill_bytes, "dy_read_bytes": batch * cost.read.get("dY", 0),
            "unfused_cycles": batch * base.cycles, "unfused_dram_bytes": batch * base.dram_bytes}


def price_stream(name: str, spec, device) -> dict:
    """An op without a GEMM view on the NPU's vector unit: its DRAM traffic."""
    nbytes = sum(spec.bytes_of(t.name) * tensor_elements(spec, t.name) for t in spec.tensors)
    cycles = device.dram_cycles(nbytes)
    return {"name": name, "kind": spec.kind, "batch": 1, "gemm": None, "tiles": None, "cycles": cycles,
            "compute_cycles": 0, "stall_cycles": cycles, "dram_bytes": nbytes}


def _tiles(cost) -> tuple[int, int, int]:
    tiling = cost.tiling
    return (tiling.tm, tiling.tk, tiling.tn) if tiling is not None else ()


def price_op(name: str, spec, device, memory: str, order: str | None) -> dict:
    gemm = gemm_of(spec)
    if gemm is None:
        return price_stream(name, spec, device)
    batch, m, k, n = gemm
    return price_gemm(name, batch, Layer(m, k, n, spec.dtype_bytes, name), device, memory, order)


# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------


def _device_line(device, memory: str) -> str:
    return (f"device: {device.name} ({device.cores} core{'s' if device.cores > 1 else ''} of {device.pe_rows}x"
            f"{device.pe_cols} PEs, {device.dataflow}, {device.spm_bytes} B SPM, "
            f"{device.dram_bytes_per_s / 1e9:g} GB/s DRAM); cost model {COST}, memory model {memory}")


def _us(cycles: float, device) -> float:
    return cycles / device.clock_hz * 1e6


def _backward_lines(row: dict, device) -> list[str]:
    back = row["backward"]
    gain = 1 - back["cycles"] / back["unfused_cycles"] if back["unfused_cycles"] else 0.0
    return [f"backward pair (dX, dW): order {back['order']}, tiles {back['tiles']}: "
            f"{back['cycles']:,.0f} cycles ({_us(back['cycles'], device):.3f} us), DRAM {back['dram_bytes']:,} B "
            f"(dY read {back['dy_read_bytes']:,} B, spilled {back['spill_bytes']:,} B); unfused "
            f"{back['unfused_cycles']:,.0f} cycles, DRAM {back['unfused_dram_bytes']:,} B ({gain * 100:+.1f}% "
            f"time saved)"]


def describe_operator(row: dict, expr: str, dtype: str, device, memory: str) -> str:
    lines = [f"operator: {expr}  ({dtype})", _device_line(device, memory)]
    if row["gemm"] is None:
        lines.append(f"no GEMM view: on the vector unit, DRAM-bound: {row['dram_bytes']:,} B, "
                     f"{row['cycles']:,.0f} cycles ({_us(row['cycles'], device):.3f} us)")
        return "\n".join(lines)
    m, k, n = row["gemm"]
    batch = f"{row['batch']} x " if row["batch"] > 1 else ""
    lines += [
        f"forward GEMM: {batch}(M, K, N) = ({m}, {k}, {n}), tiles (tm, tk, tn) = {tuple(row['tiles'])}",
        f"predicted time: {_us(row['cycles'], device):.3f} us ({row['cycles']:,.0f} cycles: compute "
        f"{row['compute_cycles']:,.0f}, stall {row['stall_cycles']:,.0f})",
        f"DRAM traffic: {row['dram_bytes']:,} B",
    ]
    if "backward" in row:
        lines += _backward_lines(row, device)
    return "\n".join(lines)


def run_operator(args, request: OperatorRequest) -> int:
    """One operator (``--expr``) on an NPU."""
    spec, device, started = request.spec, request.device, request.started
    row = price_op(spec.output.name, spec, device, args.memory, args.order)
    if args.json:
        print(json.dumps({"device": device.name, "cost_model": COST, "memory": args.memory, **row,
                          "seconds": row["cycles"] / device.clock_hz}, indent=2, sort_keys=True, default=float))
        return 0
    print(describe_operator(row, str(request.bound.expr), request.dtype, device, args.memory))
    print(f"planned in {time.perf_counter() - started:.3f} s")
    return 0


def run_model(args, request: ModelRequest) -> int:
    """A whole model (``--model``) on an NPU: per op its plan, one after another."""
    device, progress, started = request.device, request.progress, request.started
    model, fallbacks, _ = request.source_of().build(args.batch or 1)
    rows = []
    with progress(len(model.ops), f"planning {model.name}") as bar:
        for op in model.ops:
            rows.append(price_op(op.name, op.spec, device, args.memory, args.order))
            bar.advance(op.name)
    total = sum(r["cycles"] for r in rows)
    backward = sum(r["backward"]["cycles"] for r in rows if "backward" in r)
    unfused = sum(r["backward"]["unfused_cycles"] for r in rows if "backward" in r)
    if args.json:
        print(json.dumps({"model": model.name, "device": device.name, "cost_model": COST, "memory": args.memory,
                          "cycles": total, "seconds": total / device.clock_hz, "rows": rows,
                          "backward_cycles": backward, "unfused_backward_cycles": unfused, "fallbacks": fallbacks,
                          "wall_seconds": time.perf_counter() - started}, indent=2, sort_keys=True, default=float))
        return 0
    print(f"model {model.name}: {len(model.ops)} ops, {model.weight_bytes()} B of weights")
    print(_device_line(device, args.memory))
    width = max([len(r["name"]) for r in rows] + [2])
    print(f"{'#':>4}  {'op':<{width}}  {'kind':<11}  {'time us':>10}  {'DRAM KiB':>10}  {'share':>6}  plan")
    for i, r in enumerate(rows):
        plan = "vector unit (DRAM-bound)" if r["gemm"] is None else (
            f"{r['batch']} x " * (r["batch"] > 1) + f"GEMM {tuple(r['gemm'])} tiles {tuple(r['tiles'])}")
        if "backward" in r:
            plan += f"; backward {r['backward']['order']} {_us(r['backward']['cycles'], device):.3f} us"
        print(f"{i:>4}  {r['name']:<{width}}  {r['kind']:<11}  {_us(r['cycles'], device):>10.3f}  "
              f"{r['dram_bytes'] / 1024:>10.1f}  {100 * r['cycles'] / total if total else 0:>5.1f}%  {plan}")
    print(f"total: {_us(total, device):.3f} us forward ({total:,.0f} cycles)")
    if args.order is not None:
        print(f"backward pairs ({args.order}): {_us(backward, device):.3f} us, unfused {_us(unfused, device):.3f} us "
              f"({(1 - backward / unfused) * 100 if unfused else 0:+.1f}% time saved)")
    print_fallbacks(fallbacks, "the host")
    print(f"planned in {time.perf_counter() - started:.2f} s")
    return 0


PLANNER = FamilyPlanner(options=("cores", "memory", "order"), configure=configure, plan_operator=run_operator,
                        plan_model=run_model)
"""irc-plan's planner of the npu family (``irc.devices.npu.CHIP_FAMILY``)."""
