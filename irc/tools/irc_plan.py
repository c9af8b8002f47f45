"""`irc-plan`: compute-shift plans of one operator or of a whole model (T10 §4.3).

    irc-plan --expr "C[m,n] += A[m,k] * B[k,n]" --shape m=32,k=5120,n=15360 \\
             --dtype f16 --device ipu-mk2 [--cost t10|seed003|engdesign] [--json]
             [--pareto | --explain '<json plan>']
    irc-plan --model model.mlir|model.onnx|bert-tiny|bert-mini|bert-base|bert-large
             [--device D] [--cost C] [--json] [--baseline t10|vgm|roller|fastest|basic|static|dyn]
             [--max-batch] [--batch N] [--seq N] [--layers N] [--input-shape NAME=2x3]
             [--entry FUNC] [--plot pareto.png [--plot-op NAME]]

Prints the fastest plan that fits in seed 003's output format (``F_op`` on the axes in
order of first appearance in the inputs, then ``f_t_<tensor>_<axis>``), the padded
shape, the predicted time with its compute / shift / sync / reduction breakdown, and
the memory per core. ``--pareto`` prints the memory/time frontier; ``--explain``
scores a given plan (JSON as ``--json`` prints it) or names the constraint it breaks.
``--shape`` gives axis extents; tensor shapes follow from the expression.

``--model`` plans a whole model (T10 §4.3.2, Algorithm 1, as ``rtensor-partition``'s
``mode=model`` does; `irc.lowering.model_from_ir`) and prints per operator its plan,
time, idle/active memory per core and share of the total, then the totals; a te op the
planner cannot describe is listed as left to the host/vendor fallback. On a chip with
off-chip memory a model larger than SRAM is planned with ELK (seeds/004: ELK-Full, as
``rtensor-partition`` plans it). ``--baseline`` prints the same report for T10's own plan
(Algorithm 1 under its 90% utilisation floor), a PopART-style VGM, a Roller-style or the
"fastest plan, memory ignored" baseline (`irc.planner.baselines_model`), or, on a chip
with off-chip memory, ELK's Basic, Static or ELK-Dyn designs, all in the same cost model;
a baseline that cannot run the model is an error naming why.
``--max-batch`` finds the largest batch that fits: it needs a batch-parametric source,
an ONNX file with a symbolic dimension or a built-in model name. ``--plot`` draws an
operator's Pareto frontier and the model's memory/time curve (needs matplotlib). A
progress bar over operators is drawn on a terminal's stderr (never when piped).
On an NPU (``--device npu-edge|npu-server``, cost model ``igo``, IGO's) an operator or
each op of a model is priced by `irc.cost.igo` (`irc.tools.npu_plan`): a GEMM's forward
tiles, cycles and DRAM bytes, with ``--order`` its layer's backward dX/dW pair beside the
unfused one; ``--cores`` and ``--memory irc|scalesim`` choose the variant and memory model.
Every failure is one diagnostic and exit status 1.
"""

from __future__ import annotations

import io
import json
import os
import sys
import time

from xdsl.utils.exceptions import DiagnosticException

from irc.cost import DEFAULT_COST_MODEL, CostModelError, get_cost_model
from irc.devices import FAMILIES, DeviceError, family_of, load_device
from irc.diagnostics import ArgumentParser, as_diagnostic, exit_tool, json_nesting_error
from irc.dialects.te_expr import BoundExpr, ExprError, TensorExpr, parse_expression
from irc.lowering.model_from_ir import faster_offchip, plan_function
from irc.model_sources import BUILTIN_MODELS, ModelSourceError, model_source
from irc.output import OutputError, check_output, is_stream, write_atomically
from irc.plotting import has_matplotlib, pyplot
from irc.planner import (
    Plan,
    PlanError,
    SpecError,
    check_plan,
    format_plan_seed003,
    plan_from_json,
    plan_to_dict,
    search,
)
from irc.planner.baselines_model import fastest_bound, roller_plan, t10_plan, vgm_plan
from irc.planner.elk import plan_offchip
from irc.plans.from_te import op_spec_from_expr, reading_order
from irc.planner.model import ModelFitError, check_fits, max_batch
from irc.planner.op_table import FrontierCache
from irc.planner.preload import PreloadFitError
from irc.progress import Progress
from irc.tools.family_planner import FamilyPlanner, ModelRequest, OperatorRequest, PlanToolError, print_fallbacks

BASELINES = ("t10", "vgm", "roller", "fastest", "basic", "static", "dyn")
ELK_BASELINES = ("basic", "static", "dyn")
"""ELK's designs (seeds/004 s6.1) that stream weights from off-chip memory."""

MAX_EXTENT = 1 << 40
"""The largest axis extent or tensor dimension irc-plan accepts (int64 arithmetic stays exact)."""

DTYPE_BYTES = {
    "f16": 2, "bf16": 2, "f32": 4, "f64": 8,
    "i8": 1, "i16": 2, "i32": 4, "i64": 8, "i1": 1,
}


def _arguments(argv):
    parser = ArgumentParser(prog="irc-plan", description=__doc__.splitlines()[0])
    parser.add_argument("--expr", help='tensor expression, e.g. "C[m,n] += A[m,k] * B[k,n]"')
    parser.add_argument("--shape", help="axis extents, e.g. m=32,k=5120,n=15360 (with --expr)")
    model = parser.add_argument_group("whole models (--model)")
    model.add_argument(
        "--model", metavar="SOURCE",
        help=f"a .mlir file of te ops, an .onnx file, or a built-in model ({', '.join(BUILTIN_MODELS)}; "
             f"on an MTIA device also dlrm-small, dlrm-lc, dlrm-mc)",
    )
    model.add_argument("--entry", help="function of a .mlir model to plan (default: main or the only one)")
    model.add_argument("--baseline", choices=BASELINES, help="report a baseline instead of irc's plan")
    model.add_argument("--max-batch", action="store_true", help="find the largest batch that fits")
    model.add_argument("--batch", type=int, help="batch size (built-in models; an ONNX file's symbolic dims)")
    model.add_argument("--seq", type=int, help="sequence length of a built-in model")
    model.add_argument("--layers", type=int, help="number of layers of a built-in model")
    model.add_argument("--input-shape", action="append", metavar="NAME=2x3", help="fix an ONNX input's shape")
    model.add_argument("--direction", default="paper", choices=("paper", "artifact"),
                       help="Algorithm 1 as in the paper (grow idle memory) or as the T10 artifact (shrink)")
    model.add_argument("--plot", metavar="PNG", help="draw an op's Pareto frontier and the memory/time curve")
    model.add_argument("--plot-op", metavar="NAME", help="the op whose frontier --plot draws (default: the slowest)")
    parser.add_argument("--dtype", help=f"element type ({', '.join(DTYPE_BYTES)}; default f16)")
    parser.add_argument("--device", default="ipu-mk2", help="device name or .toml file (default ipu-mk2)")
    parser.add_argument("--cost", help="cost model (t10, seed003, engdesign or a plug-in's; mtia on an MTIA device; "
                                       "igo on an NPU; default t10, igo on an NPU)")
    npu = parser.add_argument_group("NPU devices (npu-edge, npu-server: IGO's cost model, igo)")
    npu.add_argument("--cores", type=int, help="cores of the NPU (one of the counts the part comes in)")
    npu.add_argument("--memory", help="memory model: irc (default) or scalesim (SCALE-Sim 3's buffers)")
    npu.add_argument("--order", help="also price each layer's backward dX/dW pair in this tile order: cost, paper, "
                                     "sequential, interleave, dx-major or dw-major")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--pareto", action="store_true", help="print the memory/time Pareto frontier")
    group.add_argument("--explain", metavar="JSON", help="score this plan or name the constraint it breaks")
    args = parser.parse_args(argv)
    if (args.expr is None) == (args.model is None):
        parser.error("give either --expr (one operator) or --model (a whole model)")
    if args.expr is not None and args.shape is None:
        parser.error("--expr needs --shape (axis extents, e.g. m=32,k=5120,n=15360)")
    _refuse_other_mode_options(parser, args)
    if args.expr is not None and args.dtype is None:
        args.dtype = "f16"
    return args


OPERATOR_ONLY = ("shape", "dtype", "pareto", "explain")
MODEL_ONLY = ("entry", "baseline", "max_batch", "batch", "seq", "layers", "input_shape", "plot", "plot_op")


def _refuse_other_mode_options(parser, args) -> None:
    """An option of the other mode (--expr's with --model, or --model's with --expr) is a
    usage error rather than silently ignored: `--shape input_ids=1x8` with --model, as
    irc-translate spells it, would otherwise plan the model at its default shapes."""
    if args.model is not None:
        given = [name for name in OPERATOR_ONLY if getattr(args, name) not in (None, False)]
        if given:
            flag = "--" + given[0].replace("_", "-")
            hint = "; fix an ONNX input's shape with --input-shape NAME=DIMS" if given[0] == "shape" else ""
            parser.error(f"{flag} applies to --expr (one operator), not to --model{hint}")
    else:
        given = [name for name in MODEL_ONLY if getattr(args, name) not in (None, False)]
        if args.direction != "paper":
            given.append("direction")
        if given:
            parser.error(f"--{given[0].replace('_', '-')} applies to --model (a whole model), not to --expr")


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
        if extent > MAX_EXTENT:
            raise PlanToolError(f"error: --shape: extent of axis '{name}' is {extent}, more than the {MAX_EXTENT} "
                                f"elements irc plans along one axis")
        if name in extents:
            raise PlanToolError(f"error: --shape: axis '{name}' is given twice")
        extents[name] = extent
    return extents


def bind_with_extents(expr: TensorExpr, given: dict[str, int]) -> BoundExpr:
    """``--expr`` bound by ``--shape``'s axis extents (`TensorExpr.bind_extents`)."""
    try:
        bound = expr.bind_extents(given)
    except ExprError as error:
        where = "--shape" if "axis" in error.message and "index" not in error.message else "--expr"
        raise PlanToolError(f"error: {where}: {error.message}") from None
    for name, shape in bound.shapes.items():
        if any(d > MAX_EXTENT for d in shape):
            raise PlanToolError(
                f"error: --expr: tensor {name} would be {'x'.join(map(str, shape))}; a dimension of more than "
                f"{MAX_EXTENT} elements is beyond what irc plans"
            )
    return bound


PLAN_KEYS = ("axes", "op_factors", "temporal_factors")


def _check_plan_document(text: str) -> None:
    """``--explain``'s text is a JSON object holding a plan's keys (as ``--json`` prints
    it), nested at most `MAX_JSON_NESTING` deep."""
    too_deep = json_nesting_error(text, "--explain")
    if too_deep is not None:
        raise PlanToolError(f"error: {too_deep}")
    try:
        document = json.loads(text)
    except ValueError as error:
        raise PlanToolError(f"error: --explain: not a plan JSON document: {error}") from None
    if not isinstance(document, dict) or any(key not in document for key in PLAN_KEYS):
        raise PlanToolError(f"error: --explain: not a plan JSON document: a plan is a JSON object with "
                            f"{', '.join(PLAN_KEYS)} (as --json prints it)")


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
    return _guarded(run_model if args.model is not None else run_operator, args)


def _planner(args):
    """The device `args` name, its family's planner (`irc.tools.family_planner`), and the
    device and cost model that planner configured; the options of another family's
    planner, or a cost model that prices only another family, are one diagnostic."""
    try:
        device = load_device(args.device)
    except DeviceError as error:
        raise PlanToolError(f"error: {error}") from None
    family = family_of(device)
    if not family.planner:
        raise PlanToolError(f"error: device {device.name} is of the {family.name} family, which irc-plan does not "
                            f"plan; {family.advice(device.name)}, and run it with irc-run")
    for other in FAMILIES.values():
        if other is family or not other.planner:
            continue
        for flag in other.entry("planner").given_options(args):
            raise PlanToolError(f"error: {flag} is an option of the {other.name} family's planner; {device.name} "
                                f"is of the {family.name} family")
        if other.cost_model and args.cost == other.cost_model:
            raise PlanToolError(f"error: cost model '{args.cost}' prices {other.name}-family devices; "
                                f"{device.name} is not one")
    planner = family.entry("planner")
    try:
        device, cost = planner.configure(args, device)
    except CostModelError as error:
        raise PlanToolError(f"error: {error}") from None
    return planner, device, cost


def run_operator(args) -> int:
    """One operator (``--expr``), planned by its device family's planner."""
    started = time.perf_counter()
    planner, device, cost = _planner(args)
    if args.dtype not in DTYPE_BYTES:
        raise PlanToolError(f"error: unknown --dtype '{args.dtype}'; known: {', '.join(DTYPE_BYTES)}")
    expr = parse_expr(args.expr)
    bound = bind_with_extents(expr, parse_shape(args.shape))
    try:
        spec = op_spec_from_expr(bound, DTYPE_BYTES[args.dtype], reading_order(bound))
    except SpecError as error:
        raise PlanToolError(f"error: the planner cannot describe '{expr}': {error}") from None
    return planner.plan_operator(args, OperatorRequest(spec, bound, device, cost, args.dtype, started))


def _ipu_configure(args, device):
    """The IPU kind's cost model: ``--cost`` (irc's default when unset), registered."""
    return device, get_cost_model(args.cost or DEFAULT_COST_MODEL)


def _ipu_operator(args, request: OperatorRequest) -> int:
    """An operator's best plan, its frontier, or an explained plan (T10 s4.3)."""
    spec, bound, device, cost, started = request.spec, request.bound, request.device, request.cost, request.started
    expr = bound.expr
    if args.explain is not None:
        _check_plan_document(args.explain)
        try:
            given = plan_from_json(args.explain)
        except PlanError as error:
            raise PlanToolError(f"error: --explain: {error}") from None
        except OverflowError:  # an infinite factor (JSON's Infinity)
            raise PlanToolError("error: --explain: not a plan JSON document: a factor is not a finite integer") from None
        given = given.in_axis_order(spec.axis_names)
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


# ---------------------------------------------------------------------------
# Whole models (--model)
# ---------------------------------------------------------------------------


def _guarded(function, args) -> int:
    """Run one --model request: a `PlanToolError` or planner error is one diagnostic."""
    try:
        return function(args)
    except (PlanToolError, ModelSourceError) as error:
        print(as_diagnostic(error.args[0]), file=sys.stderr)
        return 1
    except CostModelError as error:  # e.g. seed003 asked to price an elementwise op
        print(f"error: {error}; choose another --cost", file=sys.stderr)
        return 1
    except DiagnosticException as error:  # a program given to --model that does not verify
        text = str(error)
        print(as_diagnostic(text), file=sys.stderr)
        return 1


def _kib(nbytes: float) -> str:
    return f"{nbytes / 1024:.1f}"


def _factors(plan, spec, tensors) -> str:
    return " ".join(
        f"{t.name}:" + ",".join(str(plan.temporal_factor(t.name, a)) for a in t.axes) for t in tensors
    )


def _plan_text(spec, plan, idle=None) -> str:
    text = f"F_op=[{','.join(map(str, plan.op_factors))}] ft {_factors(plan, spec, (*spec.inputs, spec.output))}"
    if idle is not None and idle.weight_factors:
        axes = spec.axis_names
        parts = []
        for name, factors in idle.weight_factors.items():
            tensor = spec.tensor(name)
            parts.append(f"{name}:" + ",".join(str(factors[axes.index(a)]) for a in tensor.axes))
        text += " idle " + " ".join(parts)
    return text


def _report_rows(model, decision):
    """Per op: name, kind, plan text, seconds, idle bytes, active bytes, share."""
    total = decision.seconds
    for op, chosen in zip(model.ops, decision.ops):
        yield (chosen.name, op.spec.kind, _plan_text(op.spec, chosen.active, chosen.idle), chosen.seconds,
               chosen.idle_bytes, chosen.active_bytes, chosen.seconds / total if total > 0 else 0.0)


def _baseline_rows(model, baseline):
    total = baseline.seconds
    for op, chosen in zip(model.ops, baseline.ops):
        plan = "-" if chosen.plan is None else _plan_text(op.spec, chosen.plan.named_for(op.spec.tensors))
        yield (chosen.name, op.spec.kind, plan, chosen.seconds, chosen.vgm_bytes, chosen.active_bytes,
               chosen.seconds / total if total > 0 else 0.0)


def _print_table(rows, idle_label: str) -> None:
    rows = list(rows)
    width = max([len(r[0]) for r in rows] + [2])
    print(f"{'#':>4}  {'op':<{width}}  {'kind':<11}  {'time us':>10}  {idle_label:>9}  {'active KiB':>10}  "
          f"{'share':>6}  plan")
    for i, (name, kind, plan, seconds, idle, active, share) in enumerate(rows):
        print(f"{i:>4}  {name:<{width}}  {kind:<11}  {seconds * 1e6:>10.3f}  {_kib(idle):>9}  {_kib(active):>10}  "
              f"{share * 100:>5.1f}%  {plan}")


def _row_dicts(rows):
    return [
        {"name": name, "kind": kind, "plan": plan, "seconds": seconds, "idle_bytes": int(idle),
         "active_bytes": int(active), "share": share}
        for name, kind, plan, seconds, idle, active, share in rows
    ]


def _progress(total: int, title: str):
    return Progress(total, title)


def run_model(args) -> int:
    """``irc-plan --model``: plan a whole model with its device family's planner."""
    started = time.perf_counter()
    planner, device, cost = _planner(args)
    _check_model_args(args)

    def source_of():
        return model_source(args.model, entry=args.entry, input_shapes=args.input_shape, layers=args.layers,
                            seq=args.seq)

    return planner.plan_model(args, ModelRequest(source_of, device, cost, _progress, started))


def _ipu_model(args, request: ModelRequest) -> int:
    """A model's plan on the IPU kind (T10 Algorithm 1, ELK on a chip with HBM, or a
    baseline), reported per op."""
    device, cost, started = request.device, request.cost, request.started
    source = request.source_of()
    cache = FrontierCache(device, cost)

    if args.max_batch:
        return _report_max_batch(args, source, device, cost, cache, started)

    model, fallbacks, loads = source.build(args.batch or 1)
    names = [op.name for op in model.ops]
    if args.plot_op is not None and args.plot_op not in names:
        raise PlanToolError(f"error: --plot-op: no op named '{args.plot_op}' (ops: {', '.join(dict.fromkeys(names))})")
    if args.baseline in ELK_BASELINES:
        return _report_elk(args, model, fallbacks, loads, device, cache, started, args.baseline)
    if args.baseline is not None:
        return _report_baseline(args, model, fallbacks, device, cost, cache, started)

    with _progress(len(model.ops), f"planning {model.name}") as bar:
        try:
            decision = plan_function(model, cache, direction=args.direction,
                                     progress=lambda done, total, label: bar.advance(label))
        except ModelFitError as error:
            if device.offchip is None:
                raise PlanToolError(
                    f"error: {error} (needed {error.needed} bytes per core, available {error.available})"
                ) from None
            decision = None
    if decision is None:   # larger than SRAM on a chip with HBM: ELK, as rtensor-partition plans it
        return _report_elk(args, model, fallbacks, loads, device, cache, started, "full")
    elk = faster_offchip(model, cache, decision.seconds, "full", "paper", loads)
    if elk is not None:   # within SRAM, but faster streaming its weights: as rtensor-partition plans it
        return _report_elk(args, model, fallbacks, loads, device, cache, started, "full",
                           (elk, f"faster than the {decision.seconds * 1e6:.3f} us of its plan within SRAM"))
    _report_decision(args, model, decision, fallbacks, device, cost, cache, started)
    if args.plot is not None:
        _plot(args, model, decision, device, cost)
    return 0


def _check_model_args(args) -> None:
    """Positive sizes, and a writable --plot path with matplotlib installed."""
    for flag in ("batch", "seq", "layers"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            raise PlanToolError(f"error: --{flag.replace('_', '-')} must be positive, got {value}")
    if args.plot is not None:
        _check_plot_path(args)
        if not has_matplotlib():
            raise PlanToolError("error: --plot needs matplotlib, which is not installed: pip install matplotlib")


def _report_max_batch(args, source, device, cost, cache, started) -> int:
    """``--max-batch``: the largest batch of the model whose model-wide plan fits."""
    if not source.batched:
        raise PlanToolError(f"error: --max-batch: {source.why_not_batched}")
    check = None if device.offchip is None else _offchip_check(source, cache)
    try:
        best = max_batch(lambda b: source.build(b)[0], device, cost, cache=cache, check=check)
    except (ModelFitError, PreloadFitError) as error:
        raise PlanToolError(f"error: {source.name} does not fit even at batch 1: {error}") from None
    seconds = time.perf_counter() - started
    if args.json:
        print(json.dumps({"model": source.name, "device": device.name, "cost_model": cost.name,
                          "max_batch": best, "seconds": seconds}, indent=2, sort_keys=True))
    else:
        print(f"largest batch of {source.name} that fits on {device.name}: {best} "
              f"(batch {best + 1} does not; {seconds:.1f} s)")
    return 0


def _offchip_check(source, cache):
    """On a chip with off-chip memory a batch fits as ``--batch`` plans it: in SRAM
    (Algorithm 1), or else with ELK-Full streaming the weights from HBM; raises
    `PreloadFitError` (or `ModelFitError`) when neither can run it."""
    def check(batch: int) -> None:
        model, _, loads = source.build(batch)
        try:
            check_fits(model, cache.device, cache.cost, cache=cache)
        except ModelFitError:
            plan_offchip(model, cache, "full", "paper", *(() if loads is None else (loads.hbm_bytes, loads.own)))

    return check


def _report_decision(args, model, decision, fallbacks, device, cost, cache, started) -> None:
    """Print the model-wide decision: as JSON, or its table, totals and memory."""
    rows = list(_report_rows(model, decision))
    seconds = time.perf_counter() - started
    if args.json:
        data = decision.to_dict()
        data.update(report="irc", rows=_row_dicts(rows), fallbacks=fallbacks, wall_seconds=seconds)
        print(json.dumps(data, indent=2, sort_keys=True, default=float))
    else:
        print(f"model {model.name}: {len(model.ops)} ops ({decision.model_plan.unique_signatures} distinct), "
              f"{model.weight_bytes()} B of weights, on {device.name} ({device.cores} cores, "
              f"{device.sram_bytes} B SRAM per core), cost model {cost.name}")
        print(f"irc plan: T10 Algorithm 1 ({args.direction})"
              + (", per-op fastest plans (they fit together and are faster)" if decision.source == "per-op" else ""))
        _print_table(rows, "idle KiB")
        active = sum(o.active_seconds for o in decision.ops)
        setup = sum(o.setup_seconds for o in decision.ops)
        relayout = sum(o.relayout_seconds for o in decision.ops)
        waits = decision.load_wait_seconds   # on a chip with HBM: the loads of its arguments waited for
        print(f"total: {decision.seconds * 1e6:.3f} us (execute {active * 1e6:.3f}, setup {setup * 1e6:.3f}, "
              f"relayout {relayout * 1e6:.3f}" + (f", waiting for HBM {waits * 1e6:.3f}" if waits else "") + ")")
        print(f"memory per core: idle {decision.idle_bytes} B, peak {decision.peak_bytes} B of {device.sram_bytes} B")
        print_fallbacks(fallbacks)
        print(f"planned in {seconds:.2f} s ({cache.searches} frontier searches)")


def _report_baseline(args, model, fallbacks, device, cost, cache, started) -> int:
    function = {"t10": t10_plan, "vgm": vgm_plan, "roller": roller_plan, "fastest": fastest_bound}[args.baseline]
    with _progress(1, f"{args.baseline} baseline") as bar:
        try:
            baseline = function(model, device, cost, cache=cache)
        except ModelFitError as error:
            raise PlanToolError(
                f"error: --baseline {args.baseline}: the baseline cannot run {model.name} on {device.name}: {error} "
                f"(needs {error.needed} bytes per core, {error.available} available)"
            ) from None
        bar.advance(args.baseline)
    rows = list(_baseline_rows(model, baseline))
    seconds = time.perf_counter() - started
    if args.json:
        data = baseline.to_dict()
        data.update(report=args.baseline, device=device.name, cost_model=cost.name, rows=_row_dicts(rows),
                    fallbacks=fallbacks, wall_seconds=seconds)
        print(json.dumps(data, indent=2, sort_keys=True, default=float))
        return 0
    describe_baseline = {
        "t10": "T10's own plan: Algorithm 1 under its 90% utilisation floor, each op at its fastest plan in its budget",
        "vgm": "PopART-style virtual global memory: load-compute-store, no rotation",
        "roller": "Roller-style: VGM load-compute-store, one systolic-aligned tile per op",
        "fastest": "every op at its fastest plan, memory of the other ops ignored (a lower bound)",
    }[args.baseline]
    print(f"model {model.name}: {len(model.ops)} ops on {device.name}, cost model {cost.name}")
    print(f"{args.baseline} baseline: {describe_baseline}")
    if args.baseline == "t10":
        _print_table(rows, "idle KiB")
        print(f"total: {baseline.seconds * 1e6:.3f} us (relayout {baseline.transfer_seconds * 1e6:.3f})")
    else:
        _print_table(rows, "VGM KiB")
        print(f"total: {baseline.seconds * 1e6:.3f} us (VGM load/store {baseline.transfer_seconds * 1e6:.3f})")
    print_fallbacks(fallbacks)
    print(f"planned in {seconds:.2f} s")
    return 0


ELK_DESIGNS = {
    "full": "ELK-Full: preloads overlapped with execution, preload order searched (seeds/004 s4.2-s4.4)",
    "dyn": "ELK-Dyn: preloads overlapped with execution, in execution order (seeds/004 s4.2-s4.3)",
    "static": "Static: one execution space for every op, preloads in the rest (seeds/004 s6.1)",
    "basic": "Basic: each op's weights loaded from HBM just before it runs (seeds/004 s6.1)",
}


def _report_elk(args, model, fallbacks, loads, device, cache, started, design: str, picked=None) -> int:
    """A model on a chip with off-chip memory under one of ELK's designs: per op its
    execute-state plan, its preload state (the idle layout its weights arrive in), its
    share of the latency (the time from the previous op's end to its own, stalls for its
    loads included) and its bytes per core. ``picked``: (the plan, why irc chose it) for
    a model within SRAM that ELK runs faster."""
    if device.offchip is None:
        raise PlanToolError(
            f"error: --baseline {design}: ELK's designs stream weights from off-chip memory and {device.name} "
            f"has none; choose a device with HBM (e.g. ipu-mk2-hbm, ipu-pod4-hbm) or one of "
            f"{', '.join(b for b in BASELINES if b not in ELK_BASELINES)}"
        )
    with _progress(1, f"ELK {design}") as bar:
        try:
            # the non-weight arguments priced as rtensor-partition prices them (ArgumentLoads)
            elk = picked[0] if picked is not None else \
                plan_offchip(model, cache, design, "paper", *(() if loads is None else (loads.hbm_bytes, loads.own)))
        except PreloadFitError as error:
            raise PlanToolError(f"error: {ELK_DESIGNS[design].split(':')[0]} cannot run {model.name} on "
                                f"{device.name}: {error}") from None
        bar.advance(design)
    clock = device.clock_hz
    _, _, _, exec_end = elk.plan.timeline()
    ends = [0.0] + [float(e) for e in exec_end]
    latency = elk.latency_cycles / clock
    rows = []
    for i, (op, chosen) in enumerate(zip(model.ops, elk.ops)):
        table = elk.tables[i] if elk.tables is not None else cache.table(op.spec, op.weights)   # the plan's indices
        seconds = (ends[i + 1] - ends[i]) / clock
        rows.append((chosen.name, op.spec.kind, _plan_text(op.spec, chosen.active, chosen.idle), seconds,
                     float(table.cold[elk.plan.preload_plan[i]]), float(table.hot[elk.plan.exec_plan[i]]),
                     seconds / latency if latency > 0 else 0.0))
    seconds = time.perf_counter() - started
    report = "irc" if design == "full" else design
    if args.json:
        print(json.dumps({"report": report, "design": design, "model": model.name, "device": device.name,
                          **({"why": picked[1]} if picked is not None else {}),
                          "cost_model": cache.cost.name, "seconds": latency, "orders_tried": elk.orders_tried,
                          "link_share": elk.link_share, "loads_yield": elk.loads_yield,
                          "rows": _row_dicts(rows), "fallbacks": fallbacks, "wall_seconds": seconds},
                         indent=2, sort_keys=True, default=float))
        return 0
    print(f"model {model.name}: {len(model.ops)} ops, {model.weight_bytes()} B of weights, on {device.name} "
          f"({device.cores} cores, {device.sram_bytes} B SRAM per core, off-chip memory), cost model {cache.cost.name}")
    print(("irc plan: " if design == "full" else f"{design} baseline: ") + ELK_DESIGNS[design]
          + ((f" ({picked[1]})" if picked is not None else " (the model does not fit in SRAM)")
             if design == "full" else ""))
    _print_table(rows, "preload KiB")
    paced = f"; preloads paced to {elk.link_share:g} of a link" if elk.link_share < 1 else ""
    paced += "; preloads yield a contended link to the operators" if elk.loads_yield else ""
    print(f"total: {latency * 1e6:.3f} us per run" + (f" ({elk.orders_tried} preload orders tried{paced})"
                                                       if design == "full" else f" ({paced[2:]})" if paced else ""))
    print_fallbacks(fallbacks)
    print(f"planned in {seconds:.2f} s ({cache.searches} frontier searches)")
    return 0


def _plot(args, model, decision, device, cost) -> None:
    """Two panels: the chosen op's (memory, time) Pareto frontier, and the model's
    (idle memory, end-to-end time) curve of the states Algorithm 1 explored."""
    plt = pyplot()


    names = [op.name for op in model.ops]
    if args.plot_op is not None:
        index = names.index(args.plot_op)
    else:
        index = max(range(len(decision.ops)), key=lambda i: decision.ops[i].seconds)
    spec = model.ops[index].spec
    frontier = search(spec, device, cost).pareto
    chosen = decision.ops[index].active
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    left.step([p.memory_per_core / 1024 for p in frontier], [p.seconds * 1e6 for p in frontier], where="post", marker="o")
    left.plot([chosen.memory_per_core / 1024], [chosen.seconds * 1e6], "r*", markersize=14, label="chosen")
    left.set(xlabel="memory per core (KiB)", ylabel="time (us)", title=f"Pareto frontier of {names[index]} ({spec.kind})")
    left.legend()
    points = sorted((m, t) for m, t in decision.model_plan.trajectory if t == t and t != float("inf"))
    right.plot([m / 1024 for m, _ in points], [t * 1e6 for _, t in points], ".-")
    right.axvline(device.sram_bytes / 1024, color="grey", linestyle=":", label="SRAM per core")
    right.set(xlabel="idle memory per core (KiB)", ylabel="model time (us)", title=f"{model.name}: memory/time")
    right.legend()
    figure.tight_layout()
    image = io.BytesIO()
    figure.savefig(image, format="png")
    plt.close(figure)
    try:
        write_atomically(args.plot, image.getvalue())
    except OSError as error:
        raise PlanToolError(f"error: cannot write the --plot file {args.plot}: {error.strerror or error}") from None
    print(f"wrote {args.plot}", file=sys.stderr if is_stream(args.plot) else sys.stdout)


def _check_plot_path(args) -> None:
    """``--plot`` names a new or regular file that is none of the inputs (the model, the
    device file), checked before any planning."""
    inputs = [(args.model, "the --model file")]
    if args.device.endswith(".toml") or os.sep in args.device:
        inputs.append((args.device, "the --device file"))
    try:
        check_output(args.plot, "--plot", inputs)
    except OutputError as error:
        raise PlanToolError(f"error: {error}") from None


def main() -> None:
    exit_tool(run)


if __name__ == "__main__":
    main()


PLANNER = FamilyPlanner(
    options=("baseline", "max_batch", "pareto", "explain", "plot", "plot_op"),
    configure=_ipu_configure,
    plan_operator=_ipu_operator,
    plan_model=_ipu_model,
)
"""irc-plan's planner of the IPU kind (``irc.devices.device.CHIP_FAMILY``)."""
