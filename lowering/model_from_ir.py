"""From te IR to model-wide plans: one function of ``te.op``s as a `ModelSpec` (T10 s4.3.2).

`function_model` reads a function's live ``te.op``s in program order (an op whose
results nothing reads is erased before it runs, so it is not planned either:
`live_tensor_ops`):

- each op the te -> planner adapter (`irc.plans.from_te`) can describe becomes a
  `ModelOp` whose `OpSpec` uses the expression's own tensor and axis names;
- an input is a **weight** when it is a function argument carrying the unit argument
  attribute ``irc.weight`` (what the ONNX importer, `irc.frontend`, emits for
  initializers). Without marks there are no weights: nothing is guessed from an op's
  shape or operand position, so an unmarked program plans like one whose weights are
  streamed in with the activations;
- an input produced by an earlier planned op is an activation edge (``producers``),
  priced as a relayout when the two plans lay it out differently; when the two ends see
  different extents (a slice or strided window reading part of its input), the consumer
  receives its whole partition (``irc.planner.relayout``), as the device program does;
- a fused gradient pair (`igo.grad_pair` that `rtensor-partition` keeps fused) is one
  `ModelOp` (``ModelOp.pair``) in program order: the model-wide plan chooses its plan
  from the pair's frontier, counts its memory and what is kept on chip across it, and
  prices its edges, as for any op;
- an op the adapter cannot describe (`SpecError`: a gather ``E[I[i],j]``, a constant
  index ``X[i,0]``, one tensor read at two index patterns) is not planned: it stays a
  ``te.op`` for the host/vendor fallback and the reason is returned in ``fallbacks``.
  ``strict=True`` makes it an error instead.

`plan_function` runs Algorithm 1 (`irc.planner.model.plan_model`) and compares its
total with the per-operator plans (every op at `irc.planner.search`'s fastest plan,
weights resting in their active layout, no setup) priced in the same accounting
(`per_op_decision`); the per-operator plans win only when they fit in SRAM together
and are faster, so the model-wide decision is never slower than ``mode=op``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

from xdsl.dialects.func import FuncOp
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from irc.dialects import igo
from irc.dialects.rtensor import element_bytes
from irc.dialects.te import OpaqueOp, TensorOp
from irc.dialects.te_expr import BoundExpr, ExprError, IndirectIndex
from irc.lowering.igo_pair_partition import pair_spec_of
from irc.lowering.te_graph import (  # noqa: F401 (the graph's helpers, re-exported to the lowering's users)
    WEIGHT_ATTR,
    absorbed_movements,
    input_homes,
    is_layout_change,
    is_movement,
    is_weight,
    live_tensor_ops,
    operand_read,
    read_view,
    tensor_ops,
    through_movements,
)
from irc.plans.errors import PlanError, SpecError
from irc.plans.from_te import op_spec_from_expr
from irc.planner.elk import OffchipFitError, plan_offchip
from irc.planner.preload import OrderError, PreloadFitError
from irc.planner.preload_ops import own_inputs
from irc.planner.idle import IdlePlan, active_idle_plan, setup_cycles
from irc.planner.igo_choice import UnfusedPoint
from irc.planner.igo_pair import search_pair
from irc.planner.model import ModelFitError, ModelOp, ModelPlan, ModelSpec, kept_bytes, plan_model
from irc.planner.preload_packing import input_loads, loaded_inputs, resident_deficit
from irc.planner.resident_loads import held_bytes, load_waits
from irc.planner.mtia import EmbeddingOp, EmbeddingSpec, MtiaModel, StreamOp, StreamSpec
from irc.planner.op_table import FrontierCache
from irc.plans.plan import Plan
from irc.planner.relayout import relayout_cost, tensor_elements
from irc.planner.search import search
from irc.planner.serialize import plan_to_dict
from irc.plans.spec import OpSpec


class ModelIRError(Exception):
    """A te op of the function that no plan can be made for; ``op`` is the culprit."""

    def __init__(self, op: Operation, message: str) -> None:
        super().__init__(message)
        self.op = op
        self.message = message


def _element_bytes(op: TensorOp) -> int:
    return element_bytes(op.output.type.get_element_type())  # type: ignore[union-attr]


def describe(op: TensorOp):
    """``(bound, spec, None)`` for a te op the planner can describe, or ``(bound, None,
    why not)``; raises `ExprError` when its expression does not bind to its types."""
    bound = op.bound()
    try:
        sizes = {name: element_bytes(value.type.get_element_type())  # type: ignore[union-attr]
                 for name, value in zip(bound.expr.inputs, op.inputs)}
        spec = op_spec_from_expr(bound, _element_bytes(op), tensor_bytes=sizes)
    except (SpecError, VerifyException) as error:
        return bound, None, str(error)
    return bound, spec, None


def _op_label(op: TensorOp, index: int) -> str:
    hint = op.output.name_hint
    return f"%{hint}" if hint else f"op{index}"


@dataclass
class FunctionModel:
    """The plannable part of one function: ``model.ops[i]`` is ``ops[i]`` (bound as
    ``bounds[i]``); ``fallbacks`` maps each te.op left unplanned to the reason."""

    name: str
    model: ModelSpec | None
    ops: list[TensorOp] = field(default_factory=list)
    bounds: list[BoundExpr] = field(default_factory=list)
    fallbacks: dict[TensorOp, str] = field(default_factory=dict)
    movements: set[TensorOp] = field(default_factory=set)
    """The data movements that run as layout changes between the ops."""
    pairs: list[Operation] = field(default_factory=list)
    """The fused gradient pairs of the function (`igo.grad_pair`s), in order: model ops
    too (``ops[i]`` a pair, ``bounds[i]`` None, ``model.ops[i].pair`` its `PairSpec`)."""


def function_model(function: FuncOp, *, strict: bool = False, name: str | None = None,
                   pairs=frozenset()) -> FunctionModel:
    """The `ModelSpec` of `function`'s te ops (module docstring).

    ``pairs`` are the fused gradient pairs (`igo.grad_pair`s) `rtensor-partition` keeps
    fused: each is one model op (``ModelOp.pair``, its spec the pair's union spec, no
    weights at rest: its weight is loaded from the host), in program order among the te
    ops, so the model-wide plan trades its memory against theirs and prices what moves
    into and out of it like any op's edges. It never holds the one copy of an input it
    shares with te ops (`input_homes`: the device program loads that copy into a te op's
    layout, `irc.lowering.shift_to_device`).

    Raises `ModelIRError` for an expression that does not bind to its operand shapes,
    and (with ``strict``) for an op the planner cannot describe.
    """
    label = name or function.sym_name.data
    result = FunctionModel(label, None)
    ops = live_tensor_ops(function)  # dead ops never run: not planned
    fused = [op for op in function.walk() if op in pairs]
    result.pairs = fused
    described = {}
    for op in ops:
        try:
            described[op] = describe(op)
        except ExprError as error:
            raise ModelIRError(op, f"'{op.expression.text}': {error.message}") from None
    plannable = {op for op, (_, spec, _) in described.items() if spec is not None}
    in_order = [op for op in function.walk() if op in described or op in pairs]
    movements = absorbed_movements(in_order, plannable | set(fused))
    result.movements = movements
    for op in ops:
        text = op.expression.text
        _, spec, reason = described[op]
        if op in movements or reason is None:
            continue  # a movement runs as a layout change between its producer and its readers
        if strict:
            raise ModelIRError(op, f'"{text}": the planner cannot describe it: {reason}') from None
        result.fallbacks[op] = f"the planner cannot describe it ({reason})"
    kernels = [op for op in in_order if (op in plannable and op not in movements) or op in pairs]
    index_of = {op: i for i, op in enumerate(kernels)}
    homes = input_homes(kernels, set(kernels), movements, {op for op in kernels if op not in pairs})
    singles = {op for op in kernels if op not in pairs}   # a fused pair loads its weight itself,
    # but reads a weight's holder for the relayout only its unfused point pays (ModelOp.unfused_reads)
    homes.update(input_homes(kernels, set(kernels), movements, singles, weights=True))
    model_ops: list[ModelOp] = []
    for i, op in enumerate(kernels):
        pair = pair_spec_of(op) if op in pairs else None
        spec = pair.union_spec() if pair is not None else described[op][1]
        model_ops.append(_model_op(op, i, spec, pair, kernels, index_of, model_ops, described, movements, homes))
        result.ops.append(op)
        result.bounds.append(None if pair is not None else described[op][0])
    if model_ops:
        result.model = ModelSpec(label, tuple(model_ops))
    return result


def _model_op(op, i: int, spec, pair, kernels: list, index_of: dict, model_ops: list[ModelOp], described: dict,
              movements, homes: dict) -> ModelOp:
    """Kernel ``i`` as a `ModelOp`: its weights at rest and, for each operand another
    kernel writes (``producers``) or holds (a shared input's home, ``homes``), the edge:
    whether the two ends see different extents (a window), data movements on the way
    and what the reader sees through them. ``model_ops``: the kernels before ``i``."""
    weights, producers, windows, moved, views, shared, produced_as = [], {}, set(), set(), {}, {}, {}
    unfused = {}
    for position, value in enumerate(op.operands):
        bound, tensor = operand_read(op, position)
        origin, chain = through_movements(value, movements)
        if is_weight(origin) and (pair is not None or (op, position) not in homes):
            if pair is None:   # a fused pair has no idle plan: its weight is loaded from the host
                weights.append(tensor)
            elif (op, position) in homes:   # unfused, its dX receives it from the holder's idle copy
                home, home_position = homes[(op, position)]
                unfused[tensor] = (index_of[home], operand_read(home, home_position)[1])
            continue
        source = None
        if origin.owner in index_of:
            k = index_of[origin.owner]
            source_bound, source_tensor = _written(origin)
            producers[tensor] = k
            if source_tensor != model_ops[k].spec.output.name:
                produced_as[tensor] = source_tensor
            source = (k, source_tensor)
        elif (op, position) in homes:
            home, home_position = homes[(op, position)]
            source_bound, source_tensor = operand_read(home, home_position)
            source = (index_of[home], source_tensor)
            shared[tensor] = source
            chain = chain[len(through_movements(home.inputs[home_position], movements)[1]):]
        if source is not None:
            k = source[0]   # a shared input's home may read it after this op (through no movement)
            source_spec = spec if k == i else model_ops[k].spec if k < i else described[kernels[k]][1]
            if tensor_elements(source_spec, source[1]) != tensor_elements(spec, tensor):
                windows.add(tensor)
        if source is not None and chain:
            moved.add(tensor)
            view = read_view(chain, source_bound, source_tensor, bound, tensor)
            if view is not None:
                views[tensor] = view
    return ModelOp(_kernel_label(op, i), spec, tuple(weights), producers,
                   frozenset(windows - moved), frozenset(moved), views, shared, produced_as, pair, unfused)


def _written(value: SSAValue) -> tuple[BoundExpr, str]:
    """The bound expression writing ``value`` (a te op's output, or a fused pair's dX or
    dW) and the tensor it names it."""
    producer = value.owner
    if isinstance(producer, igo.GradPairOp):
        bound = producer.bound_dx() if value is producer.dx else producer.bound_dw()
    else:
        bound = producer.bound()
    return bound, bound.expr.output.tensor


def _kernel_label(op, index: int) -> str:
    if isinstance(op, TensorOp):
        return _op_label(op, index)
    hints = [r.name_hint for r in op.results if r.name_hint]
    return f"%{hints[0]}" if hints else f"pair{index}"


# ---------------------------------------------------------------------------
# Decisions
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class OpDecision:
    """One op's model-wide decision: its active plan (named, scored), the idle plan its
    weights rest in between uses (None without weights), and its costs: seconds of
    execution, setup and the relayout of its inputs, bytes per core at rest and active."""

    name: str
    active: Plan
    idle: IdlePlan | None
    setup_cycles: float
    active_seconds: float
    setup_seconds: float
    relayout_seconds: float
    idle_bytes: int
    active_bytes: int

    @property
    def seconds(self) -> float:
        return self.active_seconds + self.setup_seconds + self.relayout_seconds


@dataclass(frozen=True)
class ModelDecision:
    """The plans chosen for a model. ``source`` is "algorithm1" or "per-op";
    ``seconds`` totals active + setup + relayout time in the planner's accounting;
    ``per_op_seconds`` is the per-operator plans' total (inf when they do not fit
    together); ``model_plan`` is Algorithm 1's full result."""

    source: str
    seconds: float
    peak_bytes: int
    ops: tuple[OpDecision, ...]
    model_plan: ModelPlan
    per_op_seconds: float
    per_op_peak_bytes: int
    load_wait_seconds: float = 0.0   # included in ``seconds``: on a chip with HBM, the waits for its loads
    load_frontiers: tuple[int, ...] | None = None   # on a chip with HBM, where its loads are issued

    @property
    def idle_bytes(self) -> int:
        return sum(op.idle_bytes for op in self.ops)

    def to_dict(self) -> dict:
        total = self.seconds
        return {
            "model": self.model_plan.model,
            "device": self.model_plan.device,
            "cost_model": self.model_plan.cost_model,
            "source": self.source,
            "seconds": total,
            "active_seconds": sum(op.active_seconds for op in self.ops),
            "setup_seconds": sum(op.setup_seconds for op in self.ops),
            "relayout_seconds": sum(op.relayout_seconds for op in self.ops),
            "load_wait_seconds": self.load_wait_seconds,
            "idle_bytes": self.idle_bytes,
            "peak_bytes": self.peak_bytes,
            "sram_bytes": self.model_plan.sram_bytes,
            "algorithm1_seconds": self.model_plan.seconds,
            "per_op_seconds": self.per_op_seconds if math.isfinite(self.per_op_seconds) else None,
            "unique_signatures": self.model_plan.unique_signatures,
            "searches": self.model_plan.searches,
            "planning_seconds": self.model_plan.planning_seconds,
            "trajectory": [[m, t if math.isfinite(t) else None] for m, t in self.model_plan.trajectory],
            "ops": [
                {
                    "name": op.name,
                    "active_plan": plan_to_dict(op.active),
                    "idle_plan": op.idle.to_dict() if op.idle is not None else None,
                    "setup_cycles": op.setup_cycles,
                    "active_seconds": op.active_seconds,
                    "setup_seconds": op.setup_seconds,
                    "relayout_seconds": op.relayout_seconds,
                    "seconds": op.seconds,
                    "idle_bytes": op.idle_bytes,
                    "active_bytes": op.active_bytes,
                    "share": op.seconds / total if total > 0 else 0.0,
                }
                for op in self.ops
            ],
        }


def per_op_decision(model: ModelSpec, device, cost, plans: dict | None = None, cache: FrontierCache | None = None):
    """Every op at its fastest plan (what ``mode=op`` picks), weights resting in their
    active layout: (decisions, total seconds, peak bytes per core while any op runs).

    Priced as `irc.planner.model` prices a model: active cycles, no setup (idle = active),
    plus the relayout of every activation edge; peak memory counts every op's resting
    weights and the tensors kept on chip across the op (``ModelSpec.live_across``). `plans` caches searches by spec;
    with `cache`, an op's fastest plan is its signature's frontier's last plan, searched
    once for all identical operators (as the model-wide search does).
    """
    plans = {} if plans is None else plans
    clock = device.clock_hz
    chosen = []
    for op in model.ops:
        if op.spec not in plans:
            if cache is not None:
                plans[op.spec] = cache.named_plan(op.spec, cache.op_table(op).active[-1], op.pair)
            elif op.pair is not None:
                found, _ = search_pair(op.pair, device, cost)
                plans[op.spec] = Plan(found.plan.axes, found.plan.op_factors, found.plan.temporal_factors,
                                      found.score)
            else:
                plans[op.spec] = search(op.spec, device, cost).best
        best = plans[op.spec]
        chosen.append((best, active_idle_plan(op.spec, op.weights, best) if op.weights else None))
    relayout = [0.0] * len(model.ops)
    for edge in model.edges():
        relayout[edge.consumer] += relayout_cost(
            model.ops[edge.producer].spec, chosen[edge.producer][0], model.ops[edge.consumer].spec,
            chosen[edge.consumer][0], edge.tensor, device, cost, producer_tensor=edge.source,
            whole=edge.moved, view=edge.view,
        )[1]
    decisions = tuple(
        OpDecision(
            name=op.name, active=best, idle=idle, setup_cycles=0.0,
            active_seconds=best.cycles / clock, setup_seconds=0.0, relayout_seconds=relayout[i] / clock,
            idle_bytes=idle.cold_bytes if idle is not None else 0, active_bytes=best.memory_per_core,
        )
        for i, (op, (best, idle)) in enumerate(zip(model.ops, chosen))
    )
    idle = sum(d.idle_bytes for d in decisions)
    live = [sum(kept_bytes(model.ops[h].spec, decisions[h].active, t) for h, t in across)
            for across in model.live_across()]
    peak = max(idle + live[i] + d.active_bytes for i, d in enumerate(decisions))
    return decisions, sum(d.seconds for d in decisions), peak


PACKING_TRIES = 4
"""How many times ``plan_function`` plans again, keeping more bytes free, before it gives up."""


def plan_function(
    model: ModelSpec,
    cache: FrontierCache,
    *,
    direction: str = "paper",
    progress: Callable[[int, int, str], None] | None = None,
    per_op_plans: dict | None = None,
    fusion_points: bool = False,
) -> ModelDecision:
    """Algorithm 1 over `model`, or the per-op plans when they fit and are faster.
    ``fusion_points``: Algorithm 1 may run a fused pair unfused (`irc.planner.igo_choice`).
    The plan's buffers must pack in a core by `device-alloc`'s placement
    (`irc.planner.preload_packing.resident_deficit`): where they do not, the model is
    planned again with the bytes the placement overflowed by kept free (issue 23, item 5;
    a fused pair's kernel holds its five tensors and both gradients; a plan with a pair
    at an unfused point is not checked: it is planned again as two operators).

    Raises `irc.planner.model.ModelFitError` (bytes needed and available) when the model
    does not fit, or its buffers do not pack after ``PACKING_TRIES`` tries."""
    reserve, device = 0, cache.device
    for _ in range(PACKING_TRIES):
        decision = _decide(model, cache, direction, progress, per_op_plans, fusion_points, reserve)
        if any(isinstance(op.active, UnfusedPoint) for op in decision.ops):
            return decision   # a pair at an unfused point is planned again as two operators (decide_fusion)
        deficit = resident_deficit(model, [(op.active, op.idle) for op in decision.ops], decision.load_frontiers,
                                   loaded_inputs(model, own_inputs(model)), device.sram_bytes)
        if deficit == 0:
            return decision
        reserve += deficit
    raise ModelFitError(
        f"model {model.name!r}: the buffers of its plans do not pack in a core of {device.name} by device-alloc's "
        f"placement, even with {reserve} bytes per core kept free", needed=device.sram_bytes + deficit,
        available=device.sram_bytes)


def faster_offchip(model: ModelSpec, cache: FrontierCache, seconds: float, design: str = "full",
                   split: str = "paper", loads: "ArgumentLoads | None" = None):
    """ELK's ``design`` for ``model`` (`irc.planner.elk.plan_offchip`) on a chip with
    off-chip memory when it runs faster than ``seconds``, the model's plan within SRAM
    (its argument loads from HBM waited for); else None. A model that fits may still run
    faster streaming each weight into its op's execute layout than resting it in an idle
    layout and relayouting it (issue 23, item 2: no baseline, ELK's included, wins)."""
    if cache.device.offchip is None:
        return None
    try:
        elk = plan_offchip(model, cache, design, split, *(() if loads is None else (loads.hbm_bytes, loads.own)))
    except (OffchipFitError, OrderError, PreloadFitError):   # no ELK schedule: the plan within SRAM stands
        return None
    return elk if elk.latency_cycles / cache.device.clock_hz < seconds * (1 - 1e-9) else None


def _decide(model: ModelSpec, cache: FrontierCache, direction: str, progress, per_op_plans: dict | None,
            fusion_points: bool, reserve: int) -> ModelDecision:
    """``plan_function``'s decision with ``reserve`` bytes per core kept free."""
    device, cost = cache.device, cache.cost
    planned = plan_model(model, device, cost, direction=direction, cache=cache, progress=progress,
                         fusion_points=fusion_points, reserve=reserve)
    try:
        per_op, per_op_seconds, per_op_peak = per_op_decision(model, device, cost, per_op_plans, cache)
    except PlanError:
        per_op, per_op_seconds, per_op_peak = None, math.inf, device.sram_bytes + 1
    fits = per_op is not None and per_op_peak <= device.sram_bytes - reserve
    if not fits:
        per_op_seconds = math.inf
    if fits and per_op_seconds < planned.seconds:
        decision = ModelDecision("per-op", per_op_seconds, per_op_peak, per_op, planned, per_op_seconds, per_op_peak)
    else:
        decision = decision_of(model, planned, cache, per_op_seconds, per_op_peak)
    return with_load_waits(model, decision, device)


def with_load_waits(model: ModelSpec, decision: ModelDecision, device) -> ModelDecision:
    """``decision`` on a chip with off-chip memory: its arguments start in HBM and each op
    waits for its loads, issued as far ahead as the plan's peak leaves room for them
    (`irc.planner.resident_loads`, `preload-schedule`'s rule over the plan's account),
    those waits added to its time (``load_wait_seconds``) and its peak the bytes the
    program holds then (a weight loaded after the peak op is not held beside it); on a
    chip without, ``decision`` as it is."""
    if device.offchip is None:
        return decision
    clock = device.clock_hz
    resting = [op.idle_bytes for op in decision.ops]
    live = [sum(kept_bytes(model.ops[h].spec, decision.ops[h].active, t) for h, t in across)
            for across in model.live_across()]
    account = [sum(resting) + kept + op.active_bytes for kept, op in zip(live, decision.ops)]
    waits = load_waits(device, model.ops, [(op.active, op.idle) for op in decision.ops],
                       [op.seconds * clock for op in decision.ops],
                       [(op.setup_seconds + op.relayout_seconds) * clock for op in decision.ops],
                       input_loads(model, loaded_inputs(model, own_inputs(model))), held_bytes(account, resting),
                       decision.peak_bytes)
    seconds = waits.cycles / clock
    return replace(decision, seconds=decision.seconds + seconds, load_wait_seconds=seconds,
                   peak_bytes=int(waits.peak_bytes), load_frontiers=waits.frontiers)


def decision_of(model: ModelSpec, planned: ModelPlan, cache: FrontierCache, per_op_seconds: float = math.inf,
                per_op_peak: int = 0) -> ModelDecision:
    """The decision lowering applies for a model-wide plan (`plan_function`'s, or one a
    caller fixed: `irc.planner.model.fixed_plan`)."""
    device, cost = cache.device, cache.cost
    decisions = []
    for op, chosen in zip(model.ops, planned.ops):
        idle = chosen.idle if op.weights else None
        setup = setup_cycles(idle, chosen.active, device, cost) if idle is not None else 0.0
        decisions.append(
            OpDecision(
                name=chosen.name, active=chosen.active, idle=idle, setup_cycles=float(setup or 0.0),
                active_seconds=chosen.active_seconds, setup_seconds=chosen.setup_seconds,
                relayout_seconds=chosen.relayout_seconds,
                idle_bytes=chosen.idle_bytes if op.weights else 0, active_bytes=chosen.active_bytes,
            )
        )
    return ModelDecision(
        "algorithm1", planned.seconds, planned.peak_bytes, tuple(decisions), planned, per_op_seconds, per_op_peak
    )


def spec_of(op: TensorOp) -> OpSpec:
    """The `OpSpec` of one te op (raises `SpecError`)."""
    return op_spec_from_expr(op.bound(), _element_bytes(op))


# ---------------------------------------------------------------------------
# te.opaque ops and the MTIA planner's model (seeds/001 section 6)
# ---------------------------------------------------------------------------

EMBEDDING_KINDS = ("EmbeddingBag", "TableBatchedEmbedding")
"""``te.opaque`` kinds the MTIA planner prices as its embedding kind (by bytes moved)."""


def _element_size(value: SSAValue) -> int:
    return element_bytes(value.type.get_element_type())  # type: ignore[union-attr]


def embedding_spec(op):
    """``(EmbeddingSpec, None)`` of a ``te.opaque "EmbeddingBag"`` / ``"TableBatchedEmbedding"``
    from its operand shapes (bags from the result, the pooling factor as lookups per bag,
    rows and dim from the table), or ``(None, why not)``."""
    kind = op.kind.data
    if kind not in EMBEDDING_KINDS:
        return None, "no tensor expression states it: a vendor kernel the host runs"
    shapes = [tuple(v.type.get_shape()) for v in op.inputs]  # type: ignore[union-attr]
    if len(shapes) != 3 or len(op.outputs) != 1 or len(shapes[0]) != 2 or len(shapes[1]) != 1 \
            or len(shapes[2]) != 1 or len(op.outputs[0].type.get_shape()) != 2:
        return None, f"a {kind} needs a 2-D table, 1-D indices and 1-D offsets and gives a 2-D result"
    (table_rows, dim), (lookups,), _ = shapes
    batch = op.outputs[0].type.get_shape()[0]
    if kind == "EmbeddingBag":
        tables, rows, total = 1, table_rows, table_rows
    else:
        rows_attr = op.attributes.get("rows")
        per_table = [int(r) for r in rows_attr.get_values()] if hasattr(rows_attr, "get_values") else []
        if not per_table or sum(per_table) != table_rows:
            return None, f"its rows attribute does not list the tables' rows (adding up to {table_rows})"
        tables, rows, total = len(per_table), max(per_table), table_rows
    if batch < 1 or lookups < 0:
        return None, "it pools no bag"
    spec = EmbeddingSpec(batch=batch, pooling=lookups / (tables * batch), rows=rows, dim=dim, tables=tables,
                         dtype_bytes=_element_size(op.inputs[0]), index_bytes=_element_size(op.inputs[1]),
                         out_bytes=_element_size(op.outputs[0]), total_rows=total)
    return spec, None


def opaque_fallbacks(function: FuncOp) -> dict[Operation, str]:
    """Every ``te.opaque`` op of ``function`` with why the T10 planner leaves it to the
    host (it has no tensor expression; embedding lookups are planned on MTIA devices)."""
    found = {}
    for op in function.walk():
        if isinstance(op, OpaqueOp):
            if op.kind.data in EMBEDDING_KINDS:
                found[op] = ("an embedding lookup: no tensor expression states it; planned on MTIA devices "
                             "(--device mtia-v1 --cost mtia), the host runs it here")
            else:
                found[op] = embedding_spec(op)[1]
    return found


def fallback_line(op: Operation, reason: str) -> str:
    """How a tool lists an op left to the host: its expression (or opaque kind) and why."""
    if isinstance(op, TensorOp):
        return f"{op.expression.text}: {reason}"
    return f'{op.name} "{op.kind.data}": {reason}'  # type: ignore[attr-defined]


def stream_spec(op: TensorOp):
    """The ``irc.planner.mtia.StreamSpec`` of a te op run on MTIA's SIMD engines by its
    sizes (operands and result whole), or None for a gather (``E[I[i],j]``: its reads
    depend on the data, so its bytes are not its table's size)."""
    expr = op.parsed()
    if any(isinstance(index, IndirectIndex) for name in expr.inputs for access in expr.accesses_of(name)
           for index in access.indices):
        return None
    sizes = [math.prod(v.type.get_shape()) * _element_size(v) for v in op.inputs]  # type: ignore[union-attr]
    out = math.prod(op.output.type.get_shape()) * _element_size(op.output)  # type: ignore[union-attr]
    return StreamSpec(tuple(sizes), out, op.bound().iteration_points, _element_size(op.output))


def mtia_function_model(function: FuncOp, *, name: str | None = None):
    """``function`` as the MTIA planner's model (``irc.planner.mtia.MtiaModel``), in program
    order: the te ops ``function_model`` plans, the data movements it absorbs (on MTIA
    a transpose or reshape between operators is an operator of its own, streamed by the
    PEs: Table III's Transpose), te ops no ``OpSpec`` describes as streams by their sizes
    (``stream_spec``), and each ``te.opaque`` EmbeddingBag / TableBatchedEmbedding as the
    embedding kind (``embedding_spec``). Returns ``(model or None, fallbacks)``: every
    other op - a gather inside a te op, any other opaque kind - is a fallback with its
    reason, never dropped."""
    found = function_model(function, name=name)
    planned = dict(zip(found.ops, found.model.ops)) if found.model is not None else {}
    ops, fallbacks = [], {}
    for op in function.walk():
        if not isinstance(op, (TensorOp, OpaqueOp)):
            continue
        label = f"%{op.results[0].name_hint}" if op.results[0].name_hint else f"op{len(ops) + len(fallbacks)}"
        if isinstance(op, OpaqueOp):
            spec, reason = embedding_spec(op)
            if spec is None:
                fallbacks[op] = reason
            else:
                ops.append(EmbeddingOp(label, spec))
            continue
        if op in planned:
            ops.append(replace(planned[op], name=label))
            continue
        _, spec, reason = describe(op)
        if op not in found.fallbacks and spec is not None:
            ops.append(ModelOp(label, spec))
            continue
        stream = stream_spec(op)   # no OpSpec, but the SIMD engines stream it by its sizes
        if stream is not None:
            ops.append(StreamOp(label, stream))
        else:
            fallbacks[op] = found.fallbacks.get(op, f"the planner cannot describe it ({reason})")
    names = [o.name for o in ops]
    if len(set(names)) != len(names):  # labels as the tools print them: unique
        ops = [replace(o, name=f"{o.name}#{i}") for i, o in enumerate(ops)]
    if not ops:
        return None, fallbacks
    return MtiaModel(found.name, tuple(ops), {}), fallbacks


__all__ = [
    "FunctionModel",
    "ModelDecision",
    "ModelIRError",
    "OpDecision",
    "WEIGHT_ATTR",
    "embedding_spec",
    "fallback_line",
    "function_model",
    "mtia_function_model",
    "opaque_fallbacks",
    "is_weight",
    "ArgumentLoads",
    "argument_loads",
    "per_op_decision",
    "plan_function",
    "spec_of",
    "tensor_ops",
]


def argument_input_bytes(found: FunctionModel, apart: Sequence[Sequence[str]] | None = None) -> list[float]:
    """Per planned op of ``found``, the bytes it loads from the function's arguments that
    are not weights (a KV cache, the model's input): what its preload reads from HBM
    besides its weights on a chip with off-chip memory (an input several ops read is
    loaded once, by its first reader; ELK s2.2, s6.1). Less, per op, the inputs ``apart``
    names (`irc.planner.preload_ops.own_inputs`: loaded into the op's own layout, priced apart)."""
    movements = found.movements
    loaded: set = set()
    found_bytes = []
    for op, bound, model_op in zip(found.ops, found.bounds, found.model.ops):
        total = 0.0
        for tensor, value in zip(bound.expr.inputs, op.inputs):
            origin, _ = through_movements(value, movements)
            if tensor in model_op.weights or tensor in model_op.producers or not isinstance(origin, BlockArgument):
                continue
            if tensor in model_op.shared_reads and found.model.shares_weight(len(found_bytes), tensor):
                continue   # read from the weight's one copy, loaded with its holder's weights
            if origin in loaded:
                continue
            loaded.add(origin)
            if apart is not None and tensor in apart[len(found_bytes)]:
                continue
            total += tensor_elements(model_op.spec, tensor) * model_op.spec.bytes_of(tensor)
        found_bytes.append(total)
    return found_bytes


@dataclass(frozen=True)
class ArgumentLoads:
    """What a function's ops load from its arguments that are not weights, on a chip with
    off-chip memory, as ELK prices it (`irc.planner.elk.plan_offchip`'s ``extra_hbm_bytes``
    and ``input_loads``): per op the bytes its preload reads beside its weights
    (``hbm_bytes``), and the inputs it loads into its own execute layout (``own``)."""

    hbm_bytes: list[float]
    own: list[tuple[str, ...]]


def argument_loads(found: FunctionModel) -> ArgumentLoads:
    """``found``'s `ArgumentLoads`: the one account `rtensor-partition`, `irc-plan --model`
    and `irc-dse` plan with (the own inputs, `irc.planner.preload_ops.own_inputs`, are priced per
    execute layout and left out of the preload's bytes)."""
    own = own_inputs(found.model)
    return ArgumentLoads(argument_input_bytes(found, own), own)
