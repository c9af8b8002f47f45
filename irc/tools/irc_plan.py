"""`irc-plan`: the compute-shift plan of one operator on one device (T10 §4.3.1).

    irc-plan --expr "C[m,n] += A[m,k] * B[k,n]" --shape m=32,k=5120,n=15360 \\
             --dtype f16 --device ipu-mk2 [--cost t10|seed003] [--json]
             [--pareto | --explain '<json plan>']

Prints the fastest plan that fits in seed 003's output format (``F_op`` on the axes in
order of first appearance in the inputs, then ``f_t_<tensor>_<axis>``), the padded
shape, the predicted time with its compute / shift / sync / reduction breakdown, and
the memory per core. ``--pareto`` prints the memory/time frontier; ``--explain``
scores a given plan (JSON as ``--json`` prints it) or names the constraint it breaks.
``--shape`` gives axis extents; tensor shapes follow from the expression. Every
failure is one diagnostic and exit status 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from dialects.te_expr import BoundExpr, ExprError, TensorExpr, parse_expression, walk_accesses

DTYPE_BYTES = {
    "f16": 2, "bf16": 2, "f32": 4, "f64": 8,
    "i8": 1, "i16": 2, "i32": 4, "i64": 8, "i1": 1,
}


class PlanToolError(Exception):
    """A problem with what the user asked for; printed as one diagnostic."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse exits 2 by default; irc tools exit 1
        self.print_usage(sys.stderr)
        print(f"irc-plan: error: {message}", file=sys.stderr)
        raise SystemExit(1)


def _arguments(argv):
    parser = _Parser(prog="irc-plan", description=__doc__.splitlines()[0])
    parser.add_argument("--expr", required=True, help='tensor expression, e.g. "C[m,n] += A[m,k] * B[k,n]"')
    parser.add_argument("--shape", required=True, help="axis extents, e.g. m=32,k=5120,n=15360")
    parser.add_argument("--dtype", default="f16", help=f"element type ({', '.join(DTYPE_BYTES)}; default f16)")
    parser.add_argument("--device", default="ipu-mk2", help="device name or .toml file (default ipu-mk2)")
    parser.add_argument("--cost", default="t10", help="cost model (t10 or seed003; default t10)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--pareto", action="store_true", help="print the memory/time Pareto frontier")
    group.add_argument("--explain", metavar="JSON", help="score this plan or name the constraint it breaks")
    return parser.parse_args(argv)


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------


def parse_expr(text: str) -> TensorExpr:
    try:
        return parse_expression(text)
    except ExprError as error:
        message = f"error: --expr: {error.message}"
        if error.column is not None:
            message += f"\n  {text}\n  {' ' * error.column}^"
        raise PlanToolError(message) from None


def parse_shape(text: str) -> dict[str, int]:
    extents: dict[str, int] = {}
    for item in text.split(","):
        item = item.strip()
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name or not name.isidentifier():
            raise PlanToolError(f"error: --shape: '{item}' is not axis=extent (e.g. m=32,k=5120,n=15360)")
        try:
            extent = int(value)
        except ValueError:
            raise PlanToolError(f"error: --shape: extent of axis '{name}' is '{value}', not an integer") from None
        if extent < 1:
            raise PlanToolError(f"error: --shape: extent of axis '{name}' must be positive, got {extent}")
        if name in extents:
            raise PlanToolError(f"error: --shape: axis '{name}' is given twice")
        extents[name] = extent
    return extents


def bind_with_extents(expr: TensorExpr, given: dict[str, int]) -> BoundExpr:
    """Tensor shapes from axis extents: each dimension is as large as its index reaches."""
    extents = dict(expr.bindings)
    for axis, extent in given.items():
        if axis not in expr.axes:
            raise PlanToolError(
                f"error: --shape: axis '{axis}' does not occur in the expression "
                f"(its axes: {', '.join(expr.axes)})"
            )
        if axis in extents and extents[axis] != extent:
            raise PlanToolError(
                f"error: --shape: axis '{axis}' is {extent} but the expression binds it to {extents[axis]}"
            )
        extents[axis] = extent
    missing = [axis for axis in expr.axes if axis not in extents]
    if missing:
        raise PlanToolError(
            f"error: --shape: no extent for axis {', '.join(repr(a) for a in missing)}; "
            f"give every axis ({', '.join(expr.axes)})"
        )
    shapes: dict[str, list[int]] = {}
    for access in (expr.output, *walk_accesses(expr.body)):
        dims = []
        for dim, index in enumerate(access.indices):
            try:
                low, high = index.value_range(extents)
            except AttributeError:
                raise PlanToolError(
                    f"error: --expr: the planner cannot describe the index {index} of {access.tensor}"
                ) from None
            if low < 0:
                raise PlanToolError(
                    f"error: --expr: index '{index}' of {access.tensor} (dim {dim}) reaches {low}; "
                    f"tensor shapes cannot be derived from the axis extents"
                )
            dims.append(high + 1)
        previous = shapes.setdefault(access.tensor, dims)
        shapes[access.tensor] = [max(a, b) for a, b in zip(previous, dims)]
    try:
        return expr.bind([tuple(shapes[name]) for name in expr.inputs], tuple(shapes[expr.output.tensor]))
    except ExprError as error:
        raise PlanToolError(f"error: --expr: {error.message}") from None


# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------


def _shape_text(shape) -> str:
    return "x".join(str(d) for d in shape) or "scalar"


def _plan_line(spec, plan) -> str:
    score = plan.score
    ft = "; ".join(
        f"{t.name}:" + ",".join(str(plan.temporal_factor(t.name, a)) for a in t.axes)
        for t in (*spec.inputs, spec.output)
    )
    return (
        f"{score.memory_per_core:>10} B  {score.seconds * 1e6:>12.3f} us  "
        f"F_op=[{', '.join(map(str, plan.op_factors))}]  f_t {ft}"
    )


def describe(spec, bound: BoundExpr, plan, device, dtype: str) -> str:
    from irc.planner import format_plan_seed003

    score = plan.score
    padded = dict(zip(plan.axes, score.padded_extents))
    lines = [
        f"operator: {bound.expr}  (kind {spec.kind}, {dtype})",
        f"device: {device.name} ({device.cores} cores, {device.sram_bytes} B SRAM per core); "
        f"cost model: {score.cost_model}",
        format_plan_seed003(spec, plan),
        "padded shape: " + ", ".join(f"{a}={padded[a]}" for a in plan.axes)
        + "  (" + ", ".join(f"{a}={e}" for a, e in spec.axes) + ")",
        f"cores used: {score.cores} of {device.cores}",
        f"predicted time: {score.seconds * 1e6:.3f} us ({score.cycles:.0f} cycles)",
    ]
    for part in ("compute", "shift", "sync", "reduction"):
        cycles = float(getattr(score.cost, part))
        lines.append(f"  {part:<9} {cycles:>14.0f} cycles  {cycles / device.clock_hz * 1e6:>10.3f} us")
    memory = score.memory
    parts = ", ".join(
        f"{name} {memory.partitions[name]}" + (f"+{memory.rotation_buffers[name]}" if memory.rotation_buffers[name] else "")
        for name in memory.partitions
    )
    lines.append(
        f"memory per core: {score.memory_per_core} B of {device.sram_bytes} B "
        f"(partition+rotation buffer: {parts})"
    )
    if score.loop_order:
        loops = ", ".join(f"{lv.axis}:{lv.steps + 1} steps ({'/'.join(lv.tensors)})" for lv in score.loop_order)
        lines.append(f"loop order (outermost first): {loops}")
    return "\n".join(lines)


def _json_plan(spec, plan) -> dict:
    from irc.planner import plan_to_dict

    data = plan_to_dict(plan)
    data["seed003"] = {"F_op": list(plan.op_factors)}
    for tensor in (*spec.inputs, spec.output):
        for axis in tensor.axes:
            data["seed003"][f"f_t_{tensor.name}_{axis}"] = plan.temporal_factor(tensor.name, axis)
    return data


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------


def run(argv=None) -> int:
    args = _arguments(argv)
    from irc.cost import CostModelError, get_cost_model
    from irc.devices import DeviceError, load_device
    from irc.planner import Plan, PlanError, SpecError, check_plan, plan_from_json, search
    from irc.planner.from_te import op_spec_from_expr, reading_order

    started = time.perf_counter()
    try:
        try:
            device = load_device(args.device)
            cost = get_cost_model(args.cost)
        except (DeviceError, CostModelError) as error:
            raise PlanToolError(f"error: {error}") from None
        if args.dtype not in DTYPE_BYTES:
            raise PlanToolError(f"error: unknown --dtype '{args.dtype}'; known: {', '.join(DTYPE_BYTES)}")
        expr = parse_expr(args.expr)
        bound = bind_with_extents(expr, parse_shape(args.shape))
        try:
            spec = op_spec_from_expr(bound, DTYPE_BYTES[args.dtype], reading_order(bound))
        except SpecError as error:
            raise PlanToolError(f"error: the planner cannot describe '{expr}': {error}") from None

        if args.explain is not None:
            try:
                given = plan_from_json(args.explain)
            except PlanError as error:
                raise PlanToolError(f"error: --explain: {error}") from None
            if sorted(given.axes) == sorted(spec.axis_names) and tuple(given.axes) != spec.axis_names:
                order = [given.axes.index(a) for a in spec.axis_names]
                given = Plan(
                    spec.axis_names,
                    tuple(given.op_factors[i] for i in order) if len(given.op_factors) == len(order) else given.op_factors,
                    {n: tuple(f[i] for i in order) if len(f) == len(order) else f for n, f in given.temporal_factors.items()},
                )
            try:
                score = check_plan(spec, given, device, cost)
            except PlanError as error:
                raise PlanToolError(f"error: --explain: the plan breaks a T10 constraint: {error}") from None
            plan = Plan(given.axes, given.op_factors, given.temporal_factors, score)
            if args.json:
                print(json.dumps(_json_plan(spec, plan), indent=2, sort_keys=True))
            else:
                print(describe(spec, bound, plan, device, args.dtype))
            return 0

        try:
            result = search(spec, device, cost)
        except PlanError as error:
            raise PlanToolError(
                f"error: '{expr}' cannot be placed on {device.name} under any plan: {error}"
            ) from None
        if args.pareto:
            if args.json:
                print(json.dumps([_json_plan(spec, p) for p in result.pareto], indent=2, sort_keys=True))
            else:
                print(f"Pareto frontier of {expr} on {device.name} ({result.plans_scored} plans scored):")
                print(f"{'memory/core':>12}  {'time':>15}  plan")
                for plan in result.pareto:
                    print(_plan_line(spec, plan))
            return 0
        if args.json:
            data = _json_plan(spec, result.best)
            data["search"] = {"plans_scored": result.plans_scored, "seconds": result.seconds}
            print(json.dumps(data, indent=2, sort_keys=True))
        else:
            print(describe(spec, bound, result.best, device, args.dtype))
            print(
                f"search: {result.plans_scored} plans scored in {result.seconds:.3f} s "
                f"(total {time.perf_counter() - started:.3f} s)"
            )
        return 0
    except PlanToolError as error:
        print(error.args[0], file=sys.stderr)
        return 1
    except (BrokenPipeError, KeyboardInterrupt):
        return 1
    except Exception as error:  # last resort: one line, never a traceback
        if os.environ.get("IRC_TRACEBACK"):
            raise
        print(f"error: {type(error).__name__}: {error} (set IRC_TRACEBACK=1 for details)", file=sys.stderr)
        return 1


def main() -> None:
    sys.exit(run())


if __name__ == "__main__":
    main()
