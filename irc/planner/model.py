"""Model-wide planning: T10's inter-operator memory reconciliation (T10 s4.3.2, Algorithm 1).

Input: a ``ModelSpec``, a sequence of ``ModelOp`` (an ``OpSpec``, which inputs are weights
resting on chip between uses, and which inputs are produced by an earlier op, by index).
Every weight-carrying op gets an *idle* plan (how its weights rest: ``irc.planner.idle``)
and an *active* plan (how it executes: a point of its Pareto frontier, T10 s4.3.1); turning
idle into active costs a setup over the exchange. Activations flowing from a producer to a
consumer whose plan wants another layout pay a relayout (``irc.planner.relayout``).

Memory while op i executes, per core: the idle bytes of every op, its own included (T10
s4.3.2: "the remaining memory space after placing all operators is considered as the
active memory"; the device program keeps every weight in its idle layout for the whole
run and gathers the active partition into buffers of its own), the tensors kept on chip
across it (``ModelSpec.live_across``: the outputs of earlier ops read by it or later, and
the one copy of each input several ops share), each at the bytes its holder's plan
places on a core, and op i's active plan. So op i's active budget is ``SRAM - idle total
- live_i``, and its time is the fastest active plan within that budget compatible with
its idle plan, plus setup, plus the relayout of its inputs. Ops are chosen in program
order, so ``live_i`` uses the plans already chosen (a tensor held by a later op counts at
the most any of that op's plans places). This is exactly what the device program keeps
on a core (`irc.lowering.shift_to_device`), so `device-alloc` places what the plan admits.
(The T10 artifact counts ``idle total - idle_i``, as if the active partition grew around
the idle slice in place, and spreads resting activations evenly over all cores.)

Algorithm 1 (``direction="paper"``): start every op at its smallest idle plan (or, where
that plan pairs only with active plans too large for the op's budget, its smallest idle
size that lets it execute, searched without the utilisation floor if need be:
``_ModelProblem.start_rows``); repeatedly
record the end-to-end time with every op at its fastest fitting active plan, then grow the
idle plan of the op whose next idle plan saves the most of its time per extra idle byte
(-dT_S / dM_I), as long as every other op still fits; return the best recorded state.
``direction="artifact"`` walks the other way like the T10 artifact's
``search_optimal_global_config_heuristic`` (IPU_COST_FACTS s5): from the largest idle plans,
shrink the op losing the least time per byte saved. ``exhaustive_idle_search`` tries every
combination of idle sizes (small models only), the reference for both.

A fused gradient pair (``ModelOp.pair``, `irc.planner.igo_pair`: a layer's dX and dW under
one plan) is one operator like any other: its active plans are the pair's (memory, time)
frontier, traded against the other operators' memory, with no weights at rest; what it
reads and writes moves, and is kept on chip across other ops, as any op's tensors. With
``fusion_points`` its table also holds the pair run unfused (`irc.planner.igo_choice`),
so fused or unfused is chosen per pair and budget like any plan.

Operators with the same signature (identical layers) share one frontier search and one
idle/active table (``irc.planner.op_table.FrontierCache``).
"""

from __future__ import annotations

import bisect
import itertools
import math
import time
from typing import Callable, Sequence

import numpy as np

from irc.cost import CostModel, CostModelError, DEFAULT_COST_MODEL, get_cost_model
from irc.devices import Device, load_device
from irc.planner.enumerate import candidate_set
from irc.plans.errors import PlanError
from irc.planner.idle import IdlePlan
from irc.planner.igo_choice import UnfusedPoint, choice_table, named_point, point_relayout
from irc.planner.op_table import FrontierCache, OpTable
from irc.planner.layout_match import matched_tables
from irc.planner.model_result import ModelPlan, PlannedOp
from irc.planner.model_room import LaterRoom
from irc.planner.model_spec import (  # noqa: F401 (re-exported: the planner's model vocabulary)
    Edge, ModelFitError, ModelOp, ModelSpec, ModelSpecError, kept_bytes, resting_activation_bytes,
)
from irc.planner.relayout import tensor_elements
from irc.plans.spec import OpSpec
from irc.planner.vector_score import score_candidates

ProgressCallback = Callable[[int, int, str], None]


class _ModelProblem:
    """The tables, budgets and objective shared by the greedy and exhaustive searches."""

    def __init__(self, model: ModelSpec, cache: FrontierCache, progress: ProgressCallback | None,
                 layouts: bool = False, fusion_points: bool = False, reserve: int = 0) -> None:
        """``layouts``: add to each cheap op's table the plans matching its neighbours'
        layouts (`irc.planner.layout_match`), for the relayout-aware choice (``refine``).
        ``fusion_points``: a fused pair's table also holds the pair run unfused (`irc.planner.
        igo_choice`), fused or unfused chosen per pair and budget; ``reserve``: bytes kept free."""
        self.model = model
        self.fusion_points = fusion_points
        self.cache = cache
        self.device = cache.device
        self.cost = cache.cost
        self.sram = self.device.sram_bytes - reserve
        self.tables: list[OpTable] = []
        ids: dict[int, int] = {}
        self.signature_ids: list[int] = []
        total = len(model.ops)
        for i, op in enumerate(model.ops):
            try:
                table = cache.op_table(op)
            except PlanError as error:
                needed = (least_plan_bytes(op.spec, self.device, self.cost, error) if op.pair is None
                          else int(error.needed if error.needed is not None else self.sram + 1))
                raise ModelFitError(
                    f"op {i} ({op.name}) has no plan on {self.device.name}: {error}",
                    needed=needed, available=self.sram,
                ) from None
            except CostModelError as error:
                raise CostModelError(f"op {i} ({op.name}): {error}") from None
            self.tables.append(table)
            self.signature_ids.append(ids.setdefault(id(table), len(ids)))
            if progress is not None:
                progress(i + 1, total, op.name)
        canonical = lambda i, name: f"t{model.ops[i].spec.tensor_index(name)}"  # noqa: E731
        self.live = [[(holder, canonical(holder, name)) for holder, name in across] for across in model.live_across()]
        self._bytes: dict[int, dict[tuple[int, str], int]] = {}   # holder -> (plan, tensor) -> bytes
        self._live_tables: list[list | None] = [None] * len(model.ops)
        self._held_across: dict[int, list[int]] = {}   # holder -> the ops its tensors are kept across
        for i, across in enumerate(self.live):
            for holder in dict.fromkeys(h for h, _ in across):
                self._held_across.setdefault(holder, []).append(i)
        # relayout edges, with the tensors' canonical names (t0 = output, t1, ...)
        canonical = lambda i, name: f"t{model.ops[i].spec.tensor_index(name)}"  # noqa: E731
        self.edges = [
            Edge(e.consumer, canonical(e.consumer, e.tensor), e.producer, canonical(e.producer, e.source),
                 e.moved, e.view)
            for e in (*model.edges(), *(model.unfused_edges() if fusion_points else ()))
        ]
        if layouts:
            kinds = ["pair" if op.pair is not None else op.spec.kind for op in model.ops]
            self.tables = matched_tables(self.tables, kinds, self.edges, self.device, self.cost,
                                         cache.min_utilization)
        if fusion_points:   # after the layout matching, which reads fused plans' layouts only
            self.tables = [choice_table(op.pair, t, cache) if op.pair is not None else t
                           for op, t in zip(model.ops, self.tables)]
        self.least_hot = [t.least_hot() for t in self.tables]
        self._relayout: dict[tuple, tuple[int, float]] = {}
        self._edge_cycles: list[dict] = [{} for _ in self.edges]   # per edge: (consumer, producer plan) -> cycles
        self._live_lists: list | None = None   # _live_earlier
        self._lookup_lists: tuple[list, list] | None = None   # _table_lists
        self._start: list[int] | None = None
        self.room = LaterRoom(self)   # evaluate's picks leave later ops room (irc.planner.model_room)

    # ----------------------------------------------------------------- objective
    def held_bytes(self, holder: int, plan: int, tensor: str) -> int:
        """Bytes per core of ``tensor`` in plan ``plan`` of op ``holder`` (-1: the most any
        of its plans places)."""
        memo = self._bytes.setdefault(holder, {})
        key = (plan, tensor)
        if key not in memo:
            table = self.tables[holder]
            plans = table.active if plan < 0 else (table.active[plan],)
            memo[key] = max(kept_bytes(table.spec, p, tensor) for p in plans)
        return memo[key]

    def live_bytes(self, i: int, choice: Sequence[int]) -> int:
        """Bytes per core of the tensors kept on chip across op ``i`` under ``choice``."""
        tables = self._live_tables[i]
        if tables is None:   # per live tensor, its bytes under each of its holder's plans, the most last
            tables = self._live_tables[i] = [
                (h, [self.held_bytes(h, j, t) for j in range(len(self.tables[h].active))] + [self.held_bytes(h, -1, t)])
                for h, t in self.live[i]
            ]
        known = len(choice)
        return sum(held[choice[h]] if h < known else held[-1] for h, held in tables)

    def relayout(self, edge: "Edge", j_consumer: int, j_producer: int):
        tc, tp = self.tables[edge.consumer], self.tables[edge.producer]
        key = (id(tp), j_producer, id(tc), j_consumer, edge.tensor, edge.source, edge.moved, edge.view,
               edge.unfused_only)
        hit = self._relayout.get(key)
        if hit is None:
            hit = point_relayout(   # relayout_cost, from or into a pair's unfused point too
                tp.spec, tp.active[j_producer], tc.spec, tc.active[j_consumer], edge.tensor, self.device, self.cost,
                producer_tensor=edge.source, whole=edge.moved, view=edge.view, unfused_only=edge.unfused_only,
            )
            self._relayout[key] = hit
        return hit

    def evaluate(self, rows: Sequence[int]):
        """Total cycles with every op, in program order, at its fastest active plan
        fitting what the idle weights and the tensors kept across it leave, the chosen
        plan indices and the budgets; total is inf (and choice None) when some op fits no
        active plan (the budgets of the ops after it then assume their producers' largest
        plans). A pick that leaves a later op it keeps tensors across no room gives way to
        the fastest that does (`irc.planner.model_room`). Algorithm 1 calls this once per
        step over the whole model: the loop reads memoised tables only (``_live_earlier``,
        ``OpTable.best_lists``, the per-edge relayout cycles)."""
        free = self.sram - self.idle_total(rows)
        budgets: list[int] = []
        total = 0.0
        failed = False
        choice: list[int] = []
        bisect_right, room = bisect.bisect_right, self.room
        for i, (table, row, earlier, (hot, found)) in enumerate(
                zip(self.tables, rows, self._live_earlier(), self._table_lists()[0])):
            if earlier is None:
                live = self.live_bytes(i, choice)
            elif not earlier[0]:
                live = 0
            elif len(earlier[0]) == 1:   # one holder, all before op i: its chosen plan's bytes
                live = earlier[1][0][choice[earlier[0][0]]]
            else:   # every holder runs before op i: its chosen plan's bytes
                holders, held = earlier
                live = sum(map(list.__getitem__, held, map(choice.__getitem__, holders)))
            budget = free - live
            budgets.append(budget)
            # table.best_lists(budget), read from its memo in place
            hit = found[bisect_right(hot, budget)]
            times, picks = hit or table.best_lists(budget)
            if failed or picks[row] < 0:
                failed = True
                choice.append(-1)
                continue
            j = picks[row]
            if room.later[i] and not room.keeps_least(i, j):   # room left for later ops (model_room)
                j = room.pick(i, row, budget, rows, choice, free, j)
            total += times[row] if j == picks[row] else table.table[row, j]
            choice.append(j)
        budgets = np.array(budgets, dtype=np.float64)
        if failed:
            return math.inf, None, budgets
        for edge, memo in zip(self.edges, self._edge_cycles):
            key = (choice[edge.consumer], choice[edge.producer])
            cycles = memo.get(key)
            if cycles is None:
                cycles = memo[key] = self.relayout(edge, key[0], key[1])[1]
            total += cycles
        return total, choice, budgets

    def _live_earlier(self) -> list[tuple[list[int], list[list[int]]] | None]:
        """Per op ``i``: the holders of the tensors kept across it and their bytes per
        plan (``live_bytes``'s table), when every holder runs before op ``i`` (else None)."""
        if self._live_lists is None:
            self._live_lists = [self._live_entry(i) for i in range(len(self.tables))]
        return self._live_lists

    def _live_entry(self, i: int) -> tuple[list[int], list[list[int]]] | None:
        self.live_bytes(i, [])   # fills its table
        tables = self._live_tables[i]
        holders = [h for h, _ in tables]
        return (holders, [held for _, held in tables]) if all(h < i for h in holders) else None

    def _table_lists(self) -> tuple[list, list]:
        """Per op, its table's ``OpTable.lookup`` and ``OpTable.cold_list``, read by every
        step of Algorithm 1 (built again when ``_relax`` has swapped a table)."""
        if self._lookup_lists is None or len(self._lookup_lists[0]) != len(self.tables):
            self._lookup_lists = ([t.lookup() for t in self.tables], [t.cold_list() for t in self.tables])
        return self._lookup_lists

    def idle_total(self, rows: Sequence[int]) -> int:
        return int(sum(map(list.__getitem__, self._table_lists()[1], rows)))

    # ----------------------------------------------------------------- fit check
    def least_needed(self) -> int:
        """Bytes per core the tightest op needs with every op at its smallest idle plan
        and its smallest compatible active plan: what a failed fit reports."""
        rows = self.start_rows()
        _, _, budgets = self.evaluate(rows)
        return max(int(self.sram - budget + least[r]) for budget, least, r in zip(budgets, self.least_hot, rows))

    def _relax(self, i: int) -> None:
        """Op ``i``'s table searched without the utilisation floor (``start_rows``)."""
        op = self.model.ops[i]
        self.tables[i] = self.cache.op_table(op, relaxed=True)
        if self.fusion_points and op.pair is not None:
            self.tables[i] = choice_table(op.pair, self.tables[i], self.cache, relaxed=True)
        self._lookup_lists = None
        self.least_hot[i] = self.tables[i].least_hot()
        self.signature_ids[i] = self._signature_id(self.tables[i])
        # forget what op i's old table decided: its tensors' bytes, the live tables
        # listing them, the relayouts of its edges (one relax per op: not O(ops) each)
        self._bytes.pop(i, None)
        self.room = LaterRoom(self)
        self._relayout.clear()
        for edge, k in zip(self.edges, range(len(self.edges))):
            if i in (edge.consumer, edge.producer):
                self._edge_cycles[k] = {}
        for k in self._held_across.get(i, ()):
            self._live_tables[k] = None
            if self._live_lists is not None:
                self._live_lists[k] = self._live_entry(k)

    def _signature_id(self, table: OpTable) -> int:
        ids = {}
        for other, known in zip(self.tables, self.signature_ids):
            ids.setdefault(id(other), known)
        return ids.get(id(table), max(self.signature_ids, default=-1) + 1)

    def check_fits(self) -> list[int]:
        """Raise ``ModelFitError`` unless some idle state lets every op execute; return
        ``start_rows()``, the state Algorithm 1 starts from."""
        start = self.start_rows()
        least_idle = self.idle_total(start)
        if least_idle > self.sram:
            raise ModelFitError(
                f"model {self.model.name!r} does not fit on {self.device.name}: its weights need "
                f"{least_idle} bytes per core at rest even in their smallest idle plans "
                f"({least_idle * self.device.cores} bytes on {self.device.cores} cores), but a core has "
                f"{self.sram} bytes of SRAM ({self.sram * self.device.cores} bytes in all)",
                needed=least_idle, available=self.sram,
            )
        return start

    def start_rows(self) -> list[int]:
        """Algorithm 1's first state: every op at its smallest idle plan (T10 s4.3.2),
        except an op whose smallest idle plans pair only with active plans larger than
        what is left for it (memoised; it may relax op tables).

        An idle plan's bytes are slices of one active plan's partitions, so the smallest
        idle size may belong to a plan far larger than the op's smallest (BERT-large's
        FFN: 48 idle bytes per core less than the next size, but 483,008 active bytes
        instead of 46,208; GPT-2's LM head rests its weight in 52,512 bytes per core only
        beside a 467,392-byte active plan); such an op moves up to its smallest idle size
        whose compatible active plans fit its budget less that growth (`_grow_to_fit`).
        An op no idle size lets execute (else, once it is, the heaviest op at rest), or
        the weights at rest alone overflowing (the heaviest first), has its table
        searched again without the utilisation floor (`FrontierCache.table`,
        ``relaxed``), whose plans on fewer cores need less
        memory (a gather's table, held whole along its rows, spreads over only as many
        cores as its other dims allow). Each op relaxes at most once, so this ends; a
        model that fits at the smallest idle plans starts there, as in the paper. Raises
        ``ModelFitError`` naming the first op no idle size lets execute."""
        if self._start is not None:
            return list(self._start)
        relaxed: set[int] = set()
        can_relax = self.cache.min_utilization > 0
        while True:
            rows = [0] * len(self.tables)
            if self.idle_total(rows) > self.sram:
                # the weights at rest alone overflow: spread the heaviest further, if a
                # search without the floor can (else check_fits reports the overflow)
                heavy = sorted((i for i in range(len(rows)) if i not in relaxed),
                               key=lambda i: -int(self.tables[i].cold[0]))
                if not can_relax or not heavy:
                    return rows
                relaxed.add(heavy[0])
                self._relax(heavy[0])
                continue
            grown = self._grow_to_fit(rows)
            if isinstance(grown, list):
                self._start = list(grown)
                return grown
            i, budget = grown
            # relax op i itself, else the heaviest at rest (its idle bytes are op i's budget)
            unrelaxed = sorted((j for j in range(len(rows)) if j not in relaxed and j != i),
                               key=lambda j: -int(self.tables[j].cold[0]))
            pick = i if i not in relaxed else (unrelaxed[0] if unrelaxed else None)
            if can_relax and pick is not None:
                relaxed.add(pick)
                self._relax(pick)
                continue
            self._raise_no_room(i, rows, budget)

    def _grow_to_fit(self, rows: list[int]) -> list[int] | tuple[int, float]:
        """From ``rows``, move each op that cannot execute up to its smallest idle size
        whose compatible active plans fit its budget less the growth so far; each pass
        fixes every such op in program order against the budgets that growth leaves, rows
        only grow, so the passes end. Returns the rows, or ``(op, budget)`` for the first
        op no larger idle size lets execute."""
        while True:
            _, _, budgets = self.evaluate(rows)
            grown, moved = 0.0, False
            for i, (table, least) in enumerate(zip(self.tables, self.least_hot)):
                budget = budgets[i] - grown
                if least[rows[i]] <= budget:
                    continue
                here = float(table.cold[rows[i]])
                fits = [r for r in range(rows[i] + 1, len(table.cold)) if least[r] + table.cold[r] - here <= budget]
                if not fits:
                    if moved:
                        break          # re-evaluate with the growth so far before giving up on op i
                    return i, float(budgets[i])
                grown += float(table.cold[fits[0]]) - here
                rows[i] = fits[0]
                moved = True
            if not moved:
                return rows

    def _raise_no_room(self, i: int, rows: Sequence[int], budget: float) -> None:
        op, least, larger = self.model.ops[i], self.least_hot[i], len(self.tables[i].cold) > rows[i] + 1
        idle = self.idle_total(rows)
        live = int(self.sram - idle - budget)
        needed = idle + live + int(least[rows[i]])
        held = f"the idle weights ({idle} bytes, its own included) and the tensors kept on chip across it ({live} bytes)"
        room = (f"only {int(budget)} of the {self.sram} bytes of SRAM are left after {held}" if budget >= 0
                else f"{held} already take {int(-budget)} bytes more than the {self.sram} bytes of SRAM")
        raise ModelFitError(
            f"model {self.model.name!r} does not fit on {self.device.name}: op {i} ({op.name}) needs "
            f"{int(least[rows[i]])} bytes per core to execute, but {room}: {needed} bytes needed"
            + (" (no larger idle plan of it pairs with an active plan that fits)" if larger else ""),
            needed=needed, available=self.sram,
        )

    # ----------------------------------------------------------------- searches
    def greedy_paper(self):
        """Algorithm 1: grow idle memory from the smallest idle plans (module docstring;
        ``start_rows``: the smallest that let every op execute)."""
        rows = self.start_rows()
        best = (math.inf, list(rows))
        trajectory = []
        while True:
            total, _, budgets = self.evaluate(rows)
            trajectory.append((self.idle_total(rows), total))
            if total < best[0]:
                best = (total, list(rows))
            slack = np.array(
                [b - least[r] for b, least, r in zip(budgets, self.least_hot, rows)], dtype=np.float64
            )
            order = np.argsort(slack, kind="stable")
            first = int(order[0])
            second = slack[order[1]] if len(order) > 1 else math.inf
            pick = None            # (ratio, op, row)
            memo: dict[tuple, tuple[float, int] | None] = {}
            lookups, colds = self._table_lists()
            for i, (table, row, budget, (hot, lists), cold) in enumerate(
                    zip(self.tables, rows, budgets, lookups, colds)):
                if row + 1 >= len(cold):
                    continue
                # growing op i's idle plan shrinks every op's budget by as much, its own too
                cap = second if i == first else slack[first]
                key = (id(table), row, int(budget), cap)
                if key not in memo:
                    # table.best_lists(budget), read from its memo in place
                    hit = lists[bisect.bisect_right(hot, budget)]
                    now = (hit or table.best_lists(budget))[0][row]   # inf where the state leaves op i no plan
                    found = None
                    for r in range(row + 1, len(cold)):
                        grow = float(cold[r] - cold[row])
                        if grow > cap:
                            break                                  # cold ascends: larger rows grow more
                        hit = lists[bisect.bisect_right(hot, budget - grow)]
                        after = (hit or table.best_lists(budget - grow))[0][r]
                        saved = now - after if math.isfinite(after) else -math.inf   # no plan either way: no gain
                        if saved > 0 and (found is None or saved / grow > found[0]):
                            found = (saved / grow, r)
                    memo[key] = found
                hit = memo[key]
                if hit is not None and (pick is None or hit[0] > pick[0]):
                    pick = (hit[0], i, hit[1])
            if pick is None:
                break
            rows[pick[1]] = pick[2]
        return best, trajectory

    def greedy_artifact(self):
        """The T10 artifact's walk: from the largest idle plans, shrink the op losing the
        least time per byte saved (IPU_COST_FACTS s5 steps 1-5)."""
        rows = [len(t.cold) - 1 for t in self.tables]
        best = (math.inf, list(rows))
        trajectory = []
        big = 1e30
        while True:
            total, _, budgets = self.evaluate(rows)
            trajectory.append((self.idle_total(rows), total))
            if total < best[0]:
                best = (total, list(rows))
            pick = None            # (ratio, op)
            for i, (table, row, budget) in enumerate(zip(self.tables, rows, budgets)):
                if row == 0:
                    continue
                times = np.minimum(table.best_at(budget)[0], big)
                ratio = (times[row - 1] - times[row]) / (table.cold[row] - table.cold[row - 1])
                if ratio <= 0:
                    pick = (ratio, i)
                    break
                if pick is None or ratio < pick[0]:
                    pick = (ratio, i)
            if pick is None:
                break
            rows[pick[1]] -= 1
        return best, trajectory

    def exhaustive(self):
        """Every combination of idle sizes (product of the row counts)."""
        best = (math.inf, [0] * len(self.tables))
        trajectory = []
        for rows in itertools.product(*(range(len(t.cold)) for t in self.tables)):
            total, _, _ = self.evaluate(rows)
            trajectory.append((self.idle_total(rows), total))
            if total < best[0]:
                best = (total, list(rows))
        return best, trajectory

    # ----------------------------------------------------------------- relayout-aware choice
    def op_floors(self) -> list[float]:
        """Per op, cycles no load-compute-store planner (VGM, Roller:
        `irc.planner.baselines_model`) can beat: its fastest plan, plus loading at least
        each core's even share of its inputs and storing that of its output, each one
        shift and one barrier (inf for a fused gradient pair, which they do not plan)."""
        cores, floors = self.device.cores, []
        for op, table in zip(self.model.ops, self.tables):
            if op.pair is not None:
                floors.append(math.inf)
                continue
            spec = op.spec
            share = lambda t: -(-tensor_elements(spec, t.name) // cores) * spec.bytes_of(t.name)  # noqa: E731
            transfer = sum(float(self.cost.shift_cycles(self.device, nbytes)) + float(self.cost.sync_cycles(self.device))
                           for nbytes in (sum(share(t) for t in spec.inputs), share(spec.output)) if nbytes)
            floors.append(float(table.active_cycles.min()) + transfer)
        return floors

    def refine(self, rows: Sequence[int], choice: list[int]) -> list[int]:
        """``choice`` (each op's fastest active plan in its budget, ``evaluate``) improved
        by coordinate descent on the whole objective: an op moves to another active plan
        compatible with its idle row when that lowers its own active + setup cycles plus
        the relayouts of its edges, and every op its tensors are kept across still fits.
        ``evaluate`` picks each op alone, blind to the layouts of its neighbours; on a
        wide plan space (no utilisation floor) the fastest plan of one op can cost its
        neighbours more in relayouts than it saves. Each move lowers the total, so the
        result is never worse than ``choice``. No move makes an op (its active + setup
        cycles and the relayouts into it) slower than a load-compute-store planner could
        ever run it (``op_floors``) unless it already was, and no slower than it was: a
        trade between neighbours never leaves one op behind the baselines."""
        choice = list(choice)
        free = self.sram - self.idle_total(rows)
        incident: list[list[int]] = [[] for _ in self.tables]
        inbound: list[list[int]] = [[] for _ in self.tables]
        feeds: list[set[int]] = [set() for _ in self.tables]
        for k, edge in enumerate(self.edges):
            incident[edge.consumer].append(k)
            inbound[edge.consumer].append(k)
            if edge.producer != edge.consumer:
                incident[edge.producer].append(k)
                feeds[edge.producer].add(edge.consumer)
        floors = self.op_floors()

        def edge_cycles(k: int, picks: Sequence[int]) -> float:
            edge = self.edges[k]
            key = (picks[edge.consumer], picks[edge.producer])
            memo = self._edge_cycles[k]
            if key not in memo:
                memo[key] = self.relayout(edge, key[0], key[1])[1]
            return memo[key]

        def fits_later(i: int, picks: Sequence[int]) -> bool:
            # an op after i holds i's tensors at i's chosen plan (``evaluate``'s budgets)
            for k in self._held_across.get(i, ()):
                if k > i and self.live_bytes(k, picks[:k]) + self.tables[k].hot[picks[k]] > free:
                    return False
            return True

        def op_cycles(k: int, picks: Sequence[int]) -> float:
            return self.tables[k].table[rows[k], picks[k]] + sum(edge_cycles(e, picks) for e in inbound[k])

        def keeps_floors(i: int, trial: Sequence[int]) -> bool:
            for k in {i} | feeds[i]:
                after = op_cycles(k, trial)
                if after > floors[k] + 1e-9 and after > op_cycles(k, choice) + 1e-9:
                    return False
            return True

        for _ in range(4):   # passes; each move strictly lowers the total, few are needed
            moved = False
            for i, (table, row) in enumerate(zip(self.tables, rows)):
                if not incident[i]:
                    continue   # without relayouts, evaluate's pick is already the best
                budget = free - self.live_bytes(i, choice[:i])
                here = table.table[row, choice[i]] + sum(edge_cycles(k, choice) for k in incident[i])
                best = None
                for j in np.flatnonzero(np.isfinite(table.table[row]) & (table.hot <= budget)):
                    j = int(j)
                    if j == choice[i] or table.table[row, j] >= here:
                        continue
                    trial = choice[:i] + [j] + choice[i + 1:]
                    cost = table.table[row, j] + sum(edge_cycles(k, trial) for k in incident[i])
                    if cost < here - 1e-9 and (best is None or cost < best[0]) and fits_later(i, trial) \
                            and keeps_floors(i, trial):
                        best = (cost, j)
                if best is not None:
                    choice[i] = best[1]
                    moved = True
            if not moved:
                break
        return choice

    # ----------------------------------------------------------------- result
    def result(self, rows, direction: str, trajectory, started: float, refine: bool = True,
               choice=None) -> ModelPlan:
        """The plan of idle ``rows`` with each op at its best active plan (``evaluate``, then
        ``refine`` unless told not to), or at the active plans ``choice`` when given
        (``fixed_plan``)."""
        if choice is None:
            _, choice, _ = self.evaluate(rows)
            if choice is not None and refine:
                choice = self.refine(rows, choice)
        if choice is not None:   # each op's budget under the plans chosen before it (``evaluate``'s rule)
            free = self.sram - self.idle_total(rows)
            budgets = [free - self.live_bytes(i, choice[:i]) for i in range(len(choice))]
        if choice is None:
            raise ModelFitError(
                f"model {self.model.name!r}: no combination of idle plans lets every op execute on "
                f"{self.device.name}", needed=self.least_needed(), available=self.sram,
            )
        clock = self.device.clock_hz
        relayout_cycles = [0.0] * len(rows)
        relayout_bytes = [0] * len(rows)
        for edge in self.edges:
            nbytes, cycles = self.relayout(edge, choice[edge.consumer], choice[edge.producer])
            relayout_cycles[edge.consumer] += cycles
            relayout_bytes[edge.consumer] += nbytes
        idle_total = self.idle_total(rows)
        planned = []
        peak = 0
        for i, (op, table, row, j) in enumerate(zip(self.model.ops, self.tables, rows, choice)):
            active = (named_point(table.active[j], op.pair, self.cache) if isinstance(table.active[j], UnfusedPoint)
                      else self.cache.named_plan(op.spec, table.active[j], op.pair))
            idle = _named_idle(op.spec, table.idle[table.idle_index[row, j]])
            active_s = table.active_cycles[j] / clock
            setup_s = table.setup[row, j] / clock
            relayout_s = relayout_cycles[i] / clock
            seconds = active_s + setup_s + relayout_s
            peak = max(peak, idle_total + self.live_bytes(i, choice) + int(table.hot[j]))
            fastest = int(np.argmin(table.active_cycles))
            planned.append(
                PlannedOp(
                    name=op.name, signature=self.signature_ids[i], active=active, idle=idle,
                    active_seconds=active_s, setup_seconds=setup_s, relayout_seconds=relayout_s,
                    relayout_bytes=relayout_bytes[i], idle_bytes=int(table.cold[row]),
                    active_bytes=int(table.hot[j]), seconds=seconds, share=0.0,
                    budget_bytes=int(budgets[i]), fastest_seconds=table.active_cycles[fastest] / clock,
                    fastest_bytes=int(table.hot[fastest]),
                )
            )
        seconds = sum(p.seconds for p in planned)
        planned = [
            PlannedOp(**{**p.__dict__, "share": (p.seconds / seconds if seconds > 0 else 0.0)}) for p in planned
        ]
        return ModelPlan(
            model=self.model.name,
            device=self.device.name,
            cost_model=self.cost.name,
            direction=direction,
            ops=tuple(planned),
            seconds=seconds,
            idle_bytes=idle_total,
            peak_bytes=peak,
            sram_bytes=self.sram,
            trajectory=tuple((int(m), float(t) / clock) for m, t in trajectory),
            unique_signatures=len(set(self.signature_ids)),
            searches=self.cache.searches,
            planning_seconds=time.perf_counter() - started,
        )


def least_plan_bytes(spec: OpSpec, device: Device, cost: CostModel, error: PlanError | None = None) -> int:
    """The least memory per core any plan of ``spec`` takes (the search's own figure when
    ``error`` carries it, else over every partition, constraints aside)."""
    if error is not None and error.needed is not None:
        return int(error.needed)

    candidates = candidate_set(spec, device, 0.0, math.inf)
    if len(candidates) == 0:
        return int(sum(spec.bytes_of(t.name) * tensor_elements(spec, t.name) for t in spec.tensors))
    return int(score_candidates(spec, candidates, device, cost).memory.min())


def _named_idle(spec: OpSpec, idle: IdlePlan) -> IdlePlan:
    names = {f"t{i}": t.name for i, t in enumerate(spec.tensors)}
    return IdlePlan(
        idle.op_factors,
        {names[k]: v for k, v in idle.weight_factors.items()},
        {names[k]: v for k, v in idle.weight_bytes.items()},
    )


DIRECTIONS = ("paper", "artifact", "exhaustive")


def plan_model(
    model: ModelSpec,
    device: Device | str,
    cost: CostModel | str = DEFAULT_COST_MODEL,
    *,
    direction: str = "paper",
    cache: FrontierCache | None = None,
    progress: ProgressCallback | None = None,
    refine: bool = True,
    fusion_points: bool = False, reserve: int = 0,
) -> ModelPlan:
    """Plan ``model`` end to end (module docstring).

    ``direction``: "paper" (T10 Algorithm 1, the default), "artifact" (the T10 artifact's
    reverse walk) or "exhaustive" (every idle combination; small models only).
    ``cache``: a ``FrontierCache`` to reuse op tables across calls (it must be for the same
    device and cost model). ``progress(done, total, op_name)`` is called once per op planned.
    ``refine``: move ops to plans whose layouts cost their neighbours less
    (``_ModelProblem.refine``); off, each op keeps its fastest plan in its budget, as T10 does.
    ``fusion_points``: fused gradient pairs may run unfused, chosen per pair and budget
    (`irc.planner.igo_choice`; an op whose plan is an ``UnfusedPoint`` runs unfused).
    ``reserve``: bytes per core kept free (``_ModelProblem``). Raises ``ModelFitError``
    (bytes needed and available) when the model cannot fit."""
    started = time.perf_counter()
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {', '.join(DIRECTIONS)}, got {direction!r}")
    cache = _cache_for(cache, device, cost)
    problem = _ModelProblem(model, cache, progress, fusion_points=fusion_points, reserve=reserve)
    problem.check_fits()
    planned = _solve(problem, direction, started, refine)
    if planned is None:
        raise ModelFitError(
            f"model {model.name!r}: no explored combination of idle plans lets every op execute on "
            f"{cache.device.name}", needed=problem.least_needed(), available=problem.sram,
        )
    if refine:
        # the layout-matched candidates give the relayout-aware choice more to trade; its
        # descent is local, so the plan without them is kept where it is faster
        matched = _ModelProblem(model, cache, None, layouts=True, fusion_points=fusion_points, reserve=reserve)
        if any(a is not b for a, b in zip(matched.tables, problem.tables)):
            other = _solve(matched, direction, started, refine)
            if other is not None and other.seconds < planned.seconds:
                planned = other
    return planned


def _solve(problem: "_ModelProblem", direction: str, started: float, refine: bool) -> ModelPlan | None:
    """``problem`` planned by the search ``direction`` names (None: nothing fits)."""
    search = {"paper": problem.greedy_paper, "artifact": problem.greedy_artifact,
              "exhaustive": problem.exhaustive}[direction]
    (total, rows), trajectory = search()
    if not math.isfinite(total):
        return None
    return problem.result(rows, direction, trajectory, started, refine)


def fixed_plan(model: ModelSpec, device: Device | str, cost: CostModel | str, rows: Sequence[int],
               choice: Sequence[int], *, cache: FrontierCache | None = None) -> ModelPlan:
    """The model-wide plan with op i's idle plan row ``rows[i]`` and active plan
    ``choice[i]`` of its table (``table.table[rows[i], choice[i]]`` finite), priced and
    accounted as Algorithm 1's result is (its ``peak_bytes``: the most bytes per core while
    any op executes). What a caller checks a chosen plan against (memory accounting tests)."""
    cache = _cache_for(cache, device, cost)
    problem = _ModelProblem(model, cache, None)
    for i, (table, r, j) in enumerate(zip(problem.tables, rows, choice)):
        if not math.isfinite(table.table[r, j]):
            raise ValueError(f"op {i}: idle row {r} does not pair with active plan {j}")
    return problem.result(list(rows), "fixed", [], time.perf_counter(), list(choice))


def exhaustive_idle_search(
    model: ModelSpec, device: Device | str, cost: CostModel | str = DEFAULT_COST_MODEL, *,
    cache: FrontierCache | None = None,
) -> ModelPlan:
    """The best idle combination by trying all of them (the reference for Algorithm 1)."""
    return plan_model(model, device, cost, direction="exhaustive", cache=cache)


def _cache_for(cache: FrontierCache | None, device, cost) -> FrontierCache:
    if cache is None:
        return FrontierCache(device, cost)
    device, cost = load_device(device), get_cost_model(cost)
    if device != cache.device or cost.name != cache.cost.name:
        raise ValueError(f"the frontier cache is for {cache.device.name} / {cache.cost.name}, "
                         f"not {device.name} / {cost.name}")
    return cache


def check_fits(model: ModelSpec, device: Device | str, cost: CostModel | str = DEFAULT_COST_MODEL, *,
               cache: FrontierCache | None = None) -> None:
    """Raise ``ModelFitError`` unless the model fits with every op at its smallest idle plan."""
    problem = _ModelProblem(model, _cache_for(cache, device, cost), None)
    problem.check_fits()


def max_batch(build: Callable[[int], ModelSpec], device: Device | str, cost: CostModel | str = DEFAULT_COST_MODEL,
              *, limit: int = 4096, cache: FrontierCache | None = None,
              check: Callable[[int], None] | None = None) -> int:
    """The largest batch b <= ``limit`` for which ``check(b)`` (default: ``check_fits`` of
    ``build(b)``) raises no `PlanError` (such as ``ModelFitError``).

    Doubles the batch until it no longer fits (T10 s6.1), then bisects between the last
    fitting and the first failing size; assumes a larger batch never needs less memory.
    Raises what ``check`` raises when batch 1 does not fit."""
    cache = _cache_for(cache, device, cost)
    check = check or (lambda batch: check_fits(build(batch), cache.device, cache.cost, cache=cache))

    def fits(batch: int) -> bool:
        try:
            check(batch)
        except PlanError:
            return False
        return True

    if not fits(1):
        check(1)   # raises with the numbers
    good, bad = 1, None
    while bad is None:
        nxt = min(good * 2, limit)
        if nxt == good:
            return good
        if fits(nxt):
            good = nxt
        else:
            bad = nxt
    while bad - good > 1:
        middle = (good + bad) // 2
        if fits(middle):
            good = middle
        else:
            bad = middle
    return good
