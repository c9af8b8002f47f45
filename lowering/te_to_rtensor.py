"""`rtensor-partition`: give every `te.op` a compute-shift plan (T10 §4.3).

Rewrites each ``te.op`` into an ``rtensor.op`` whose ``F_op`` and operand/result
layouts (``!rtensor.tensor`` types) are its plan on the device under the cost model.
Data enters and leaves the chip through ``rtensor.relayout`` ops, so function
signatures keep builtin tensor types:

    %c = te.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) : (...) -> tensor<...>

becomes

    %a1 = rtensor.relayout %a : tensor<...> -> !rtensor.tensor<..., fs=[...], ft=[...]>
    %b1 = rtensor.relayout %b : ...
    %c1 = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a1, %b1) F_op = array<i64: ...> : ...
    %c  = rtensor.relayout %c1 : !rtensor.tensor<...> -> tensor<...>

A value produced by one ``rtensor.op`` and consumed by another goes straight from
one to the other when their layouts agree, and through one on-chip
``rtensor.relayout`` exactly where they differ (T10 §4.3.2's layout change between
operators, priced by `irc.planner.relayout` under the same cost model).

``mode=model`` (the default) is T10 §4.3.2's model-wide trade-off, per function: each
op's Pareto frontier (§4.3.1), for every op reading a weight (a function argument
marked ``irc.weight``) its idle plans and the setup cost of each active plan, and
Algorithm 1's greedy search over idle memory (`irc.lowering.model_from_ir`). Identical
operators share one frontier search. A weight-carrying ``rtensor.op`` records the
idle plan its weights rest in and the setup cycles as ``idle = #rtensor.idle<...>``.
A model whose weights cannot all rest in SRAM is an error giving the bytes needed
and available. ``mode=op`` plans each operator on its own (its fastest plan).

In both modes an op the planner cannot describe (a gather, a constant index, one
tensor read at two index patterns) stays a ``te.op`` for the host/vendor fallback,
with the reason in its ``irc.remark`` attribute; ``strict=true`` makes it an error.
An operator no plan fits is an error naming the op and the least memory per core any
plan needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import SimpleNamespace

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr, DictionaryAttr, FloatAttr, IntegerAttr, ModuleOp, StringAttr, TensorType, UnitAttr, f64,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import DiagnosticException

from irc.cost import CostModelError
from irc.diagnostics import location_of
from irc.dialects.rtensor import (
    IDLE_ATTR,
    IdlePlanAttr,
    RelayoutOp,
    RTensorOp,
    layout_types,
)
from irc.dialects.target import TARGET_ATTR
from irc.dialects.te import TensorOp
from irc.dialects.te_expr import AffineIndex, ExprError
from irc.lowering.igo_pair_partition import PartitionGradPair, decide_fusion, plan_pairs, unfuse
from irc.lowering.model_from_ir import (
    ModelIRError, argument_loads, describe, faster_offchip, function_model, plan_function,
)
from irc.lowering.rtensor_plan import relayout_onto
from irc.planner import PlanError, search
from irc.planner.elk import plan_offchip, planned_offchip
from irc.planner.model import ModelFitError
from irc.planner.op_table import FrontierCache
from irc.planner.preload import OrderError, PreloadFitError
from irc.planner.relayout_sharing import HELD_ATTR, SHARED_ATTR
from irc.progress import Progress
from irc.target import TargetError, cost_of, device_of, resolve_target

PLANNED_ATTR = "irc.planned_cycles"
"""On a function planned model-wide: the cycles the plan predicts for it (operators,
setups and relayouts), which the interpreted device program must take."""
PLANNED_PEAK_ATTR = "irc.planned_peak_bytes"
"""On a function planned model-wide within SRAM: the most bytes per core the plan holds
while any op runs (idle weights, the tensors kept across it, its buffers), which is what
`device-alloc` places; `preload-schedule` issues loads ahead only within it."""
PRELOADED_ATTR = "irc.preloaded"
"""On a function planned with ELK (its model exceeds SRAM): weights rest in HBM and each
is loaded into its preload-state (idle) layout for the op that reads it, not resident
throughout (`shift-to-device` reads it; `preload-schedule` then moves the loads earlier).
A dictionary: the design and SRAM split it was planned with and the plan's HBM busy,
exposed (not overlapped) load and interconnect contention cycles, which the interpreted
program reports beside its own, and the link share its preloads are paced to
(``link_share``, θ: `preload-schedule` puts it on every ``device.preload_async``)."""
PRELOAD_ATTR = "irc.preload"
"""On each op of a function planned with ELK (``rtensor.op``, ``shift.kernel``, then the
kernel's ``device.reduce``): ``{slot = i, frontier = q}``, its position in the plan's
preload order (s4.4) and the position of the first load that waits for it to finish (its
preload frontier, s4.2); `preload-schedule` issues the loads so."""
PRELOAD_DESIGNS = ("full", "dyn")
PRELOAD_SPLITS = ("paper", "artifact")

MODES = ("model", "op")
"""Planning modes: T10 §4.3.2's model-wide trade-off, or every operator on its own."""

REMARK_ATTR = "irc.remark"
"""String attribute on a te.op the pass left unplanned, saying why."""


def _error(op: Operation, message: str) -> DiagnosticException:
    return DiagnosticException(f"{location_of(op)}: error: '{op.name}' op {message}")


def fallback_remark(reason: str) -> StringAttr:
    return StringAttr(f"not planned: {reason}; left for the host/vendor fallback")


def memory_remark(planned, clock_hz: float) -> StringAttr | None:
    """Why an op of a model-wide plan runs slower than its fastest plan: memory
    (`irc.planner.model.PlannedOp.memory_bound`: both times and the bytes that forced it),
    or else the model's total (its neighbours' layouts: the relayouts into and out of it,
    its weights' setup). Every baseline runs each op on one of its plans, so these are the
    only ways a baseline's plan for an op can beat irc's, and the plan says which."""
    active, fastest = planned.active_seconds * clock_hz, planned.fastest_seconds * clock_hz
    if planned.memory_bound:
        return StringAttr(
            f"memory-bound: runs at {active:.0f} cycles where its fastest plan takes {fastest:.0f}; that plan "
            f"needs {planned.fastest_bytes} bytes per core and the idle weights and the tensors kept on chip "
            f"across it leave {planned.budget_bytes}")
    if planned.active_seconds > planned.fastest_seconds * (1 + 1e-9):
        return StringAttr(
            f"layout trade: runs at {active:.0f} cycles where its fastest plan takes {fastest:.0f}; with its "
            f"neighbours' layouts this plan costs the model less (relayouts into and out of it, its weights' setup)")
    return None


def plan_tensor_op(op: TensorOp, device, cost, cache: dict, strict: bool = True, min_utilization: float = 0.0):
    """The bound expression of `op` and its fastest fitting scored plan, or
    ``(None, reason)`` when the planner cannot describe the op and `strict` is off.

    Raises a located `DiagnosticException` when the expression does not bind, when no
    plan fits (naming the least memory per core any plan needs), and with `strict`
    when the planner cannot describe the op. `cache` maps `OpSpec`s to results: a
    model repeats its operators.
    """
    text = op.expression.text
    try:
        bound, spec, reason = describe(op)
    except ExprError as error:
        raise _error(op, f"'{text}': {error.message}") from None
    if reason is not None:
        if not strict:
            return None, f"the planner cannot describe it ({reason})"
        raise _error(op, f'"{text}": the planner cannot describe it: {reason}') from None
    if spec not in cache:
        try:
            cache[spec] = search(spec, device, cost, min_utilization=min_utilization).best
        except PlanError as error:
            cache[spec] = error
    found = cache[spec]
    if isinstance(found, PlanError):
        raise _error(op, f'"{text}" on {device.name}: {found}')
    return bound, found


def idle_attribute(bound, decision, device, cost) -> IdlePlanAttr | None:
    """The ``#rtensor.idle`` of one op's model-wide decision (None without weights)."""
    idle = decision.idle
    if idle is None or not idle.weight_factors:
        return None
    axes = list(decision.active.axes)
    temporal = {}
    for name, factors in idle.weight_factors.items():
        indices = bound.expr.accesses_of(name)[0].indices
        # a dim read at a constant or at another tensor's values (a gather's table) is not cut
        temporal[name] = [[factors[axes.index(a)] for a in (index.axes if isinstance(index, AffineIndex) else ())]
                          or [1] for index in indices]
    return IdlePlanAttr(temporal, idle.cold_bytes, math.ceil(decision.setup_cycles))


@dataclass
class PartitionTensorOp(RewritePattern):
    """One ``te.op`` -> relayouts onto the chip + ``rtensor.op`` + a relayout back."""

    device: object
    cost: object
    plans: dict[TensorOp, tuple] = field(default_factory=dict)
    """The bound expression and plan of each te.op, found before rewriting."""
    idle: dict[TensorOp, IdlePlanAttr] = field(default_factory=dict)
    """The idle plan of each weight-carrying te.op (model-wide planning)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TensorOp, rewriter: PatternRewriter) -> None:
        if op not in self.plans:
            return
        bound, plan = self.plans[op]
        result_type = op.output.type
        assert isinstance(result_type, TensorType)
        expr = bound.expr
        elements = {name: value.type.get_element_type() for name, value in zip(expr.inputs, op.inputs)}
        elements[expr.output.tensor] = result_type.get_element_type()
        layouts = layout_types(bound, plan, elements)
        inputs = [
            relayout_onto(value, layouts[name], op, rewriter)
            for name, value in zip(expr.inputs, op.inputs)
        ]
        attributes = dict(op.attributes)
        if op in self.idle:
            attributes[IDLE_ATTR] = self.idle[op]
        planned = RTensorOp(
            op.expression.text,
            inputs,
            layouts[expr.output.tensor],
            plan.op_factors,
            attributes=attributes,
        )
        planned.location = op.location   # diagnostics down to the device program point here
        back = RelayoutOp(planned.output, result_type)
        rewriter.replace(op, [planned, back], [back.result])


class EraseUnusedRelayout(RewritePattern):
    """A relayout nobody reads (left behind when its consumer took the rtensor value)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: RelayoutOp, rewriter: PatternRewriter) -> None:
        if not op.result.uses:
            rewriter.erase(op)


def device_and_cost_of(target):
    return device_of(target), cost_of(target)


def _functions(module: ModuleOp) -> list[Operation]:
    """Every function of the module (te ops outside any function are planned per block)."""
    return [op for op in module.walk() if isinstance(op, FuncOp)]


@dataclass(frozen=True)
class RTensorPartition(ModulePass):
    """Plan every te.op: ``rtensor-partition{device=ipu-mk2 cost=t10 mode=model strict=false}``."""

    name = "rtensor-partition"

    device: str = ""
    """A bundled device name or a .toml path; empty: the module's target, else ipu-mk2."""
    cost: str = ""
    """A cost model name; empty: the module's target's, else t10."""
    mode: str = "model"
    strict: bool = False
    preload: str = "full"
    """For a model larger than SRAM on a chip with off-chip memory: ELK-Full (s4.4's
    preload reordering over ELK-Dyn) or ELK-Dyn (s4.2-s4.3, preloads in execution order)."""
    split: str = "paper"
    """The SRAM split among the executing op and the preloaded ones: the paper's
    cost-aware split (s4.3) or the artifact's (IPU_COST_FACTS s6: the executing op only)."""
    min_utilization: float = 0.0
    """T10 s4.3.1's parallelism floor: the fewest cores a plan may use, as a fraction of
    those the op could use. 0 searches every core count; 0.9 is T10's (its artifact's)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.mode not in MODES:
            raise DiagnosticException(
                f"rtensor-partition: unknown mode={self.mode}; known modes: {', '.join(MODES)} "
                f"(model: T10 §4.3.2's model-wide planning; op: every operator on its own)"
            )
        if not 0.0 <= self.min_utilization <= 1.0:
            raise DiagnosticException(
                f"rtensor-partition: min_utilization={self.min_utilization:g} is not a fraction of the cores "
                f"(0 searches every core count; T10's floor is 0.9)"
            )
        if self.preload not in PRELOAD_DESIGNS or self.split not in PRELOAD_SPLITS:
            raise DiagnosticException(
                f"rtensor-partition: unknown preload={self.preload} or split={self.split}; known: preload="
                f"{'|'.join(PRELOAD_DESIGNS)} (ELK-Full, ELK-Dyn), split={'|'.join(PRELOAD_SPLITS)}"
            )
        try:
            target = resolve_target(op, self.device, self.cost)
            device, cost = device_and_cost_of(target)
        except TargetError as error:
            raise DiagnosticException(f"rtensor-partition: {error}") from None
        # Gradient pairs (igo-fuse on this chip) first: fused, or back to their two te.ops
        pairs = plan_pairs(op, device, cost)
        # Plan everything first, so that a failure is one diagnostic on untouched IR.
        if self.mode == "op":
            plans, idle, fallbacks = self._plan_each_op(op, device, cost)
            planned, preloaded = {}, set()
        else:
            plans, idle, fallbacks, planned, preloaded = self._plan_model(op, device, cost, pairs)
        op.attributes[TARGET_ATTR] = target
        for function, (cycles, peak) in planned.items():
            function.attributes[PLANNED_ATTR] = FloatAttr(float(cycles), f64)
            if peak is not None:
                function.attributes[PLANNED_PEAK_ATTR] = IntegerAttr(peak, 64)
        for te_op, reason in fallbacks.items():
            te_op.attributes[REMARK_ATTR] = fallback_remark(reason)
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [PartitionTensorOp(device, cost, plans, idle), PartitionGradPair(pairs), EraseUnusedRelayout()]
            ),
        ).rewrite_module(op)

    def _plan_each_op(self, module: ModuleOp, device, cost):
        return self._plan_each_op_list(
            [te_op for te_op in module.walk() if isinstance(te_op, TensorOp)], device, cost
        )

    def _plan_model(self, module: ModuleOp, device, cost, pairs=None):
        cache = FrontierCache(device, cost, min_utilization=self.min_utilization)
        searched: dict = {}
        plans, idle, fallbacks, planned = {}, {}, {}, {}
        preloaded = set()
        functions = _functions(module)
        covered = {te_op for f in functions for te_op in f.walk() if isinstance(te_op, TensorOp)}
        stray = [o for o in module.walk() if isinstance(o, TensorOp) and o not in covered]
        if stray:  # te ops outside any function: planned on their own
            p, _, f = self._plan_each_op_list(stray, device, cost)
            plans.update(p)
            fallbacks.update(f)
        for function in functions:
            try:
                found = function_model(function, strict=self.strict, pairs=pairs or {})
            except ModelIRError as error:
                raise _error(error.op, error.message) from None
            fallbacks.update(found.fallbacks)
            if found.model is None:
                continue
            total = len(found.model.ops)
            with Progress(total, f"rtensor-partition @{found.name}") as bar:
                try:
                    try:
                        decision = plan_function(
                            found.model, cache, per_op_plans=searched,
                            progress=lambda done, _total, label: bar.advance(label), fusion_points=bool(found.pairs),
                        )
                    except ModelFitError as error:
                        if not found.pairs:
                            raise
                        # a fused pair holds its five tensors at once: as two operators each
                        # the gradients may fit where the fused pairs do not
                        found = self._unfuse_pairs(function, found, pairs, error, device)
                        decision = plan_function(found.model, cache, per_op_plans=searched)
                except ModelFitError as error:
                    decision = self._plan_beyond_sram(found, cache, function, error)
                    preloaded.add(function)
                except CostModelError as error:
                    raise _error(function, str(error)) from None
            if found.pairs and function not in preloaded:  # fusion inside the model-wide plan (issue 25)
                before = found
                try:
                    function, found, decision = self._decide_fusion(function, found, decision, pairs, cache,
                                                                    searched)
                except ModelFitError as error:
                    # the plan with fusion points fit, but neither its choice realized as ops
                    # nor all fused nor all unfused does: planned as two operators each
                    found = self._unfuse_pairs(function, found, pairs, error, device)
                    try:
                        decision = plan_function(found.model, cache, per_op_plans=searched)
                    except ModelFitError as unfused:   # (as decide_fusion found) says what does not fit
                        decision = self._plan_beyond_sram(found, cache, function, unfused)
                        preloaded.add(function)
                if found is not before:   # a clone replaced the function (or its pairs were unfused)
                    for te_op in before.fallbacks:
                        fallbacks.pop(te_op, None)
                    fallbacks.update(found.fallbacks)
            if function not in preloaded and not found.pairs and device.offchip is not None:
                decision = self._faster_preloading(found, cache, function, decision, preloaded)
            planned[function] = (decision.seconds * device.clock_hz,
                                 None if function in preloaded else int(decision.peak_bytes))
            model_ops = decision.model_plan.ops if getattr(decision, "source", "") == "algorithm1" else None
            for k, (te_op, bound, chosen) in enumerate(zip(found.ops, found.bounds, decision.ops)):
                if te_op in found.pairs:   # a fused gradient pair: the model-wide plan's point of its frontier
                    pairs[te_op].plan = chosen.active
                    continue
                plans[te_op] = (bound, chosen.active)
                remark = None if model_ops is None else memory_remark(model_ops[k], device.clock_hz)
                if remark is not None:
                    te_op.attributes[REMARK_ATTR] = remark
                attr = idle_attribute(bound, chosen, device, cost)
                if attr is not None:
                    idle[te_op] = attr
        return plans, idle, fallbacks, planned, preloaded

    def _decide_fusion(self, function, found, decision, pairs, cache, searched):
        """`irc.lowering.igo_pair_partition.decide_fusion`: each pair fused or unfused as
        the model-wide plan's point for it says, never slower than all fused or all unfused."""
        def plan(clone, kept, points):
            model = function_model(clone, strict=self.strict, pairs=kept)
            return model, plan_function(model.model, cache, per_op_plans=searched, fusion_points=points)

        return decide_fusion(function, found, decision, pairs, plan, cache)

    def _unfuse_pairs(self, function, found, pairs, error, device):
        """Put ``found``'s fused pairs back as two te ops each, saying why, and model the
        function again (`irc.lowering.igo_pair_partition.unfuse`)."""
        for pair in found.pairs:
            del pairs[pair]
            unfuse(pair, f"run as two operators: the model-wide plan has no room for its fused pairs on "
                         f"{device.name} ({error})")
        try:
            return function_model(function, strict=self.strict, pairs=pairs)
        except ModelIRError as failure:
            raise _error(failure.op, failure.message) from None

    def _plan_beyond_sram(self, found, cache, function, error: ModelFitError):
        """``found``, which does not fit in SRAM (``error``), planned with ELK's preloading
        on a chip with off-chip memory; else the diagnostic naming what does not fit."""
        self._raise_unplaceable_op(found, cache)
        if cache.device.offchip is None:
            raise _error(function, self._fit_message(found, error, cache.device)) from None
        return self._plan_preloading(found, cache, function)

    def _faster_preloading(self, found, cache, function, decision, preloaded: set):
        """``decision`` (a plan within SRAM on a chip with off-chip memory), or ELK's plan
        where it runs faster (`irc.lowering.model_from_ir.faster_offchip`), the cycles of
        the plan within SRAM it beat in its ``irc.preloaded`` (``within_sram_cycles``)."""
        elk = faster_offchip(found.model, cache, decision.seconds, self.preload, self.split, argument_loads(found))
        if elk is None:
            return decision
        preloaded.add(function)
        planned = self._plan_preloading(found, cache, function, elk)
        function.attributes[PRELOADED_ATTR] = DictionaryAttr({   # what it beat, in the plan's own record
            **function.attributes[PRELOADED_ATTR].data,
            "within_sram_cycles": FloatAttr(decision.seconds * cache.device.clock_hz, f64)})
        return planned

    def _plan_preloading(self, found, cache, function, elk=None):
        """A model larger than the chip's SRAM on a chip with off-chip memory (or ``elk``,
        a faster plan for one within it): ELK's plans
        (seeds/004 s4.2-s4.4: each op's execute-state plan, the preload state its weights
        rest in while earlier ops run, the preload order and each op's frontier, recorded
        as ``irc.preload`` for ``preload-schedule``)."""
        try:
            if elk is None:
                loads = argument_loads(found)   # the own inputs are priced per execute layout
                elk = plan_offchip(found.model, cache, self.preload, self.split, loads.hbm_bytes, loads.own)
        except PreloadFitError as error:
            culprit = next((t for t, m in zip(found.ops, found.model.ops) if m.name == error.op), function)
            raise _error(culprit, str(error)) from None
        except OrderError as error:   # no preload order of the design fits the ops kept on chip together
            raise _error(function, f"@{found.name} cannot be planned on {cache.device.name}, even with "
                                   f"preloading: {error}") from None
        schedule = elk.plan.schedule
        slot = {k: t for t, k in enumerate(schedule.order)}
        for i, te_op in enumerate(found.ops):
            te_op.attributes[PRELOAD_ATTR] = DictionaryAttr({
                "slot": IntegerAttr(slot[i], 64), "frontier": IntegerAttr(int(schedule.frontier[i]), 64)})
            for name, inputs in ((HELD_ATTR, elk.held_inputs), (SHARED_ATTR, elk.shared_inputs)):
                if i in inputs:   # one relayout per tensor and layout (irc.planner.relayout_sharing)
                    te_op.attributes[name] = ArrayAttr([StringAttr(n) for n in inputs[i]])
        hbm, exposed, contention = planned_offchip(elk.plan)
        # ``yields``: contended loads yield the link to the ops (ELK's delay_comp=False)
        yields = {"yields": UnitAttr()} if elk.plan is not None and elk.plan.yields else {}
        function.attributes[PRELOADED_ATTR] = DictionaryAttr({
            "design": StringAttr(self.preload), "split": StringAttr(self.split),
            "hbm_cycles": FloatAttr(hbm, f64), "exposed_cycles": FloatAttr(exposed, f64),
            "contention_cycles": FloatAttr(contention, f64), "link_share": FloatAttr(elk.link_share, f64),
            **yields})
        return SimpleNamespace(seconds=elk.latency_cycles / cache.device.clock_hz, ops=elk.ops)

    def _plan_each_op_list(self, ops, device, cost):
        cache: dict = {}
        plans, fallbacks = {}, {}
        for te_op in ops:
            bound, found = plan_tensor_op(te_op, device, cost, cache, self.strict, self.min_utilization)
            if bound is None:
                fallbacks[te_op] = found
            else:
                plans[te_op] = (bound, found)
        return plans, {}, fallbacks

    @staticmethod
    def _raise_unplaceable_op(found, cache) -> None:
        """An op no plan fits even alone is that op's error (as in ``mode=op``)."""
        for te_op, model_op in zip(found.ops, found.model.ops):
            try:
                cache.op_table(model_op)
            except PlanError as error:
                what = "the fused gradient pair" if model_op.pair is not None else f'"{te_op.expression.text}"'
                raise _error(te_op, f'{what} on {cache.device.name}: {error}') from None

    @staticmethod
    def _fit_message(found, error, device) -> str:
        return f"@{found.name} cannot be planned model-wide: {error}"
