"""Lower bounds of the memory and time of every plan below a step prefix.

The search (``irc.planner.search``) walks a tree: a spatial plan, then its steps per axis
``T_d`` chosen axis by axis (``irc.planner.enumerate.StepPrefixes``); a complete prefix
is a *step group*, which fixes the step tiles, the padded spans and the compute
sub-task, and leaves open only how each tensor's temporal factors split those steps.
A prefix whose bounds an already found plan dominates (no more memory, strictly less
time) or whose memory bound exceeds the SRAM holds no plan of the Pareto frontier, and
the search drops it unexpanded. That is exact as long as the bounds are.

- **Carried steps** (exact). Each axis with ``T_d > 1`` needs a tensor at ``f_t = T_d``,
  and those steps multiply, per tensor, to a divisor of its sharing count: a prefix whose
  chosen steps no such assignment carries holds no plan, and gets infinite bounds
  (``PrefixBounds.carried``; about half the step groups of a strided 3x3 conv).
- **Memory** (cost-model free). Each tensor either does not rotate (its whole partition
  of the padded spans, once) or rotates (its partition split by its ``f_t``, twice: the
  resident slice and the receive buffer); the output at its accumulators' width where the
  chosen steps leave partial sums. A rotating tensor's partition is at least the
  step tiles' (every ``f_t`` divides ``T_d``) and at least the product of its largest
  span per dimension over the most it can be split, ``gcd(P, prod T_d)`` (its ``f_t``
  divide the steps and multiply to a divisor of its sharing count ``P``); it can rotate
  only when that is above 1; a compound dim (``2*h + r``) counts, beside its widest span,
  its summed spans less what its overlaps can take. On an axis whose steps are not chosen
  yet, the span is at least the per-core extent and the tile at least the extent over the
  largest admissible steps.
- **Time**, from the cost model (``irc.cost.model.BoundedCostModel``), given the
  prefix's *least work*: the sub-task and steps with one step on every open axis, the
  cores, and what no plan below goes under: ``steps - 1`` shift events (every step but
  the first follows a rotation: the loop levels' executions times steps telescope to
  ``prod T_d - 1``), each moving at least the least tensor slice, one partial copy, and
  the output's step tiles and slice. A step group gets ``time_lower_bound`` (its
  sub-task is exact), a shorter prefix ``refined_time_lower_bound``, which the model
  guarantees no choice of more steps goes below. A model without the first gets 0
  everywhere, without the second 0 on short prefixes: the search is then bounded by
  memory (and by group times) alone, still exact.
"""

from __future__ import annotations

import numpy as np

from irc.cost import CostModel, OpWork, SubTask
from irc.devices import Device
from irc.planner.enumerate import PlanSpace, StepPrefixes
from irc.plans.roles import compute_roles


def _defined_in(cls: type, name: str) -> type | None:
    for klass in cls.__mro__:
        if name in vars(klass):
            return klass
    return None


def cost_bound(cost: CostModel, name: str = "time_lower_bound"):
    """The cost model's bound ``name`` when it bounds the model's own ``op_time`` (defined
    by the class defining ``op_time``, or a subclass of it), else None."""
    bound = getattr(cost, name, None)
    if bound is None:
        return None
    bound_class = _defined_in(type(cost), name)
    time_class = _defined_in(type(cost), "op_time")
    if bound_class is None or time_class is None or not issubclass(bound_class, time_class):
        return None
    return bound


class PrefixBounds:
    """Memory and time bounds of step prefixes for one plan space and cost model."""

    def __init__(self, space: PlanSpace, device: Device, cost: CostModel) -> None:
        self.space = space
        self.device = device
        self.spec = spec = space.spec
        axes = spec.axis_names
        self.roles = {role: list(idx) for role, idx in compute_roles(spec).items()}
        self.group_bound = cost_bound(cost, "time_lower_bound")
        self.prefix_bound = cost_bound(cost, "refined_time_lower_bound") if self.group_bound else None
        self.tensors = []
        for v, tensor in enumerate(spec.tensors):
            # per dim: its distinct axes and how often each is listed
            dims = []
            for dim in tensor.dims:
                index = list(dict.fromkeys(axes.index(a) for a in dim))
                dims.append((index, [sum(axes.index(a) == i for a in dim) for i in index]))
            own = [axes.index(a) for a in tensor.axes]
            # an axis in two dimensions of one tensor (X[i,i]) would count its f_t twice
            distinct = sum(len(index) for index, _ in dims) == len(own)
            self.tensors.append((spec.tensor_bytes[v], dims, own, distinct))
        self.output_axes = [axes.index(a) for a in spec.output.axes]
        # per spatial plan, gathered per prefix: its cores, and whether it splits a
        # reduction axis over cores (the output then holds partial sums whatever the
        # steps, ``OpSpec.holds_partial_sums``)
        self.cores = space.op_factors.prod(axis=1)
        self.sharing_of = np.ascontiguousarray(space.sharing.T)      # [V, S]
        self.per_core_of = np.ascontiguousarray(space.per_core.T)    # [D, S]
        self.max_steps_of = np.ascontiguousarray(space.max_steps.T)  # [D, S]
        self.least_open_of = -(-self.per_core_of // self.max_steps_of)  # an open axis' least tile
        self.reduction_columns = None
        if spec.combiner == "+=" and spec.reduction_axes:
            self.reduction_columns = [spec.axis_index(a) for a in spec.reduction_axes]
            self.split_by_cores = (space.op_factors[:, self.reduction_columns] > 1).any(axis=1)
        self.output_own_bytes = spec.bytes_of(spec.output.name)

    @staticmethod
    def _splits(sharing, own, steps_of, largest_of, open_split_of) -> np.ndarray:
        """The most one tensor's partition can be split: its ``f_t`` divide the axes'
        steps and multiply to a divisor of its sharing count, so their product divides
        gcd(P, prod T_d); on open axes at most P and at most the largest steps. Per axis
        ``a`` of the tensor's ``own``: ``steps_of[a]``, ``largest_of[a]`` and whether it
        is open with more than one admissible steps, ``open_split_of[a]``."""
        n = len(sharing)
        chosen_steps = np.ones(n, dtype=np.int64)               # steps are 1 on open axes
        largest = np.ones(n, dtype=np.int64)
        open_split = np.zeros(n, dtype=bool)
        for a in own:
            chosen_steps *= steps_of[a]
            largest *= largest_of[a]
            open_split |= open_split_of[a]
        # gcd(P, P * c) = P and gcd(P, 1) = 1: the (slow) gcd only where neither holds
        by_divisors = np.where(open_split, sharing, 1)
        rows = np.flatnonzero(~open_split & (chosen_steps > 1))
        if len(rows):
            by_divisors[rows] = np.gcd(sharing[rows], chosen_steps[rows])
        return np.minimum(by_divisors, largest)

    def memory(self, prefixes: StepPrefixes) -> np.ndarray:
        """Per prefix: bytes per core no plan below it goes under."""
        return self(prefixes, with_time=False)[0]

    def __call__(self, prefixes: StepPrefixes, with_time: bool = True,
                 check_carried: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """Per prefix: bytes per core and cycles no plan below it goes under (infinite on
        the prefixes no plan carries, unless ``check_carried`` is off: then the caller
        applies ``uncarried`` to the prefixes whose verdict it needs)."""
        space = self.space
        n = len(prefixes)
        plan = prefixes.plan
        # every per-axis quantity as [axes, prefixes]: each axis' row contiguous for the
        # per-tensor products below
        per_core = self.per_core_of[:, plan]
        chosen = space.axis_rank[:, None] < prefixes.depth[None, :]
        steps = np.ascontiguousarray(prefixes.steps.T)           # 1 on open axes
        largest = np.where(chosen, steps, self.max_steps_of[:, plan])
        tiles = -(-per_core // steps)                            # the per-core extent on open axes
        least_tiles = np.where(chosen, tiles, self.least_open_of[:, plan])
        # as floats (exact: small integers) for the products below
        spans_of = (steps * tiles).astype(np.float64)            # (open axes' steps are 1)
        tiles_of = least_tiles.astype(np.float64)
        open_split = ~chosen & (largest > 1)
        memory = np.zeros(n, dtype=np.float64)
        least_partition = np.full(n, np.inf)                     # bytes of the least tensor slice
        out_slice = None
        for v, (nbytes, dims, own, distinct) in enumerate(self.tensors):
            if v == 0:   # the output in accumulators where the steps so far leave partial sums
                nbytes = self._output_bytes(plan, steps)
            whole = np.ones(n, dtype=np.float64)
            sliced = np.ones(n, dtype=np.float64)
            widest = None                                        # = whole while every dim is one axis
            for index, counts in dims:
                if len(index) == 1 and counts[0] == 1:
                    whole *= spans_of[index[0]]
                    sliced *= tiles_of[index[0]]
                    if widest is not None:
                        widest *= spans_of[index[0]]
                    continue
                if widest is None:
                    widest = whole.copy()
                # a compound dim spans the sum of its terms (an axis listed c times, as a
                # strided window lists its output axis, counts c times) less the overlaps
                overlap = sum(counts) - 1
                summed = sum(c * spans_of[a] for a, c in zip(index, counts))
                whole *= summed - overlap
                sliced *= sum(c * tiles_of[a] for a, c in zip(index, counts)) - overlap
                # its partition span over its largest split F: at least its widest axis'
                # span over F, and its summed spans less what the overlaps can take, each
                # ``span/f - 1 >= span/F - 1`` with F at most the dim's largest steps
                reach = summed - overlap * largest[index].max(axis=0)
                widest *= np.maximum(spans_of[index].max(axis=0), reach)
            if widest is None:
                widest = whole
            splits = self._splits(self.sharing_of[v][plan], own, steps, largest, open_split)
            rotating = np.maximum(sliced, widest / splits) if distinct else sliced
            memory += nbytes * np.where(splits > 1, np.minimum(whole, 2 * rotating), whole)
            least_partition = np.minimum(least_partition, nbytes * sliced)
            if v == 0:
                out_slice = sliced
        cycles = self._time(prefixes, tiles, steps, least_tiles, least_partition, out_slice) if with_time else None
        if check_carried:
            uncarried = self.uncarried(prefixes)
            memory[uncarried] = np.inf
            if with_time:
                cycles[uncarried] = np.inf
        return memory, cycles

    def uncarried(self, prefixes: StepPrefixes, rows: np.ndarray | None = None) -> np.ndarray:
        """The prefixes (of ``rows``, default all) no plan carries (``carried``), as
        indices. The search pushes the children of carried prefixes only: a child whose
        new axis takes one step is carried as its parent is (elsewhere this only
        loosens), so only the others are checked."""
        space = self.space
        if rows is None:
            rows = np.arange(len(prefixes))
        if not space.n_axes or not len(rows):
            return rows[:0]
        depth = prefixes.depth[rows]
        last = space.axis_order[np.maximum(depth - 1, 0)]
        rows = rows[(depth > 0) & (prefixes.steps[rows, last] > 1)]
        if not len(rows):
            return rows
        return rows[~self.carried(prefixes.take(rows))]

    def _output_bytes(self, plan: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """``OpSpec.output_bytes`` of each prefix's plan and steps so far (``steps``:
        [axes, prefixes])."""
        if self.reduction_columns is None:
            partial = np.zeros(len(plan), dtype=bool)
        else:
            partial = self.split_by_cores[plan] | (steps[self.reduction_columns] > 1).any(axis=0)
        return np.where(partial, self.spec.partial_bytes, self.output_own_bytes)

    def carried(self, prefixes: StepPrefixes) -> np.ndarray:
        """Per prefix: whether some plan's temporal factors can carry its chosen steps.
        An axis' steps are the largest pace of the tensors indexing it, so each axis
        with ``T_d > 1`` has an *owner* with ``f_t = T_d``, and the owners' steps
        multiply, per tensor, to a divisor of its sharing count (they are factors of
        its ``prod(f_t)``). Conversely such an assignment is a plan of the group (the
        owners at ``T_d``, every other pace 1). So a prefix no assignment of its chosen
        axes fits holds no plan, and neither does any prefix below it: its bounds are
        infinite. Checked over the states (prefix, owners' products per tensor) axis by
        axis, merging equal states."""
        space = self.space
        n = len(prefixes)
        steps = prefixes.steps                                   # 1 on open axes
        # one axis with steps is always carried (its steps divide the sharing count of
        # one tensor indexing it, ``enumerate._axis_steps``): check the others only
        # stepping on several, first-fit owners are a witness when they fit; the state
        # walk decides only the prefixes they leave undecided
        several = np.flatnonzero((steps > 1).sum(axis=1) > 1)
        carried = np.ones(n, dtype=bool)
        if len(several):
            undecided = several[~self._first_fit_owners(prefixes.plan[several], steps[several])]
            if len(undecided):
                carried[undecided] = self._owner_states(prefixes.take(undecided))
        return carried

    def _first_fit_owners(self, plan: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Per prefix: whether owning each stepping axis by the first tensor indexing it
        whose owners' product stays a divisor of its sharing count owns them all (then
        that assignment carries the prefix; otherwise another one still may)."""
        space = self.space
        sharing = space.sharing[plan]                            # [n, V]
        product = np.ones_like(sharing)
        owned_all = np.ones(len(plan), dtype=bool)
        for d in range(space.n_axes):
            pending = steps[:, d] > 1
            if not pending.any():
                continue
            for v in space.members[d].tolist():
                owned = product[:, v] * steps[:, d]
                take = pending & (sharing[:, v] % owned == 0)
                product[:, v] = np.where(take, owned, product[:, v])
                pending &= ~take
            owned_all &= ~pending
        return owned_all

    def _owner_states(self, prefixes: StepPrefixes) -> np.ndarray:
        """``carried`` by the states (prefix, owners' products per tensor), axis by axis."""
        space = self.space
        n = len(prefixes)
        steps = prefixes.steps
        sharing = space.sharing[prefixes.plan]                   # [n, V]
        row = np.arange(n)
        product = np.ones((n, space.n_tensors), dtype=np.int64)
        for d in range(space.n_axes):
            pace = steps[row, d]
            need = pace > 1
            if not need.any():
                continue
            rows, products = [row[~need]], [product[~need]]
            for v in space.members[d].tolist():
                owner = product[need].copy()
                owner[:, v] *= pace[need]
                fits = sharing[row[need], v] % owner[:, v] == 0
                rows.append(row[need][fits])
                products.append(owner[fits])
            row, product = np.concatenate(rows), np.concatenate(products)
            if len(row) > 2 * n:                                 # merge equal states
                _, first = np.unique(np.column_stack([row, product]), axis=0, return_index=True)
                row, product = row[first], product[first]
        return np.bincount(row, minlength=n) > 0

    def _time(self, prefixes, tiles, steps, least_tiles, least_partition, out_slice) -> np.ndarray:
        """The time bounds; ``tiles``, ``steps``, ``least_tiles``: [axes, prefixes]."""
        n = len(prefixes)
        if self.group_bound is None or n == 0:
            return np.zeros(n)
        space = self.space
        spec = space.spec
        total_steps = steps.prod(axis=0)
        events = total_steps - 1
        # each step but the first follows a rotation of at least one tensor slice
        shifted = events * np.where(events > 0, least_partition, 0.0)
        out_step = least_tiles[self.output_axes].prod(axis=0)
        cores = self.cores[prefixes.plan]

        def least(rows: np.ndarray) -> OpWork:
            """The least work of the prefixes ``rows`` (each bound is evaluated only on the
            prefixes it applies to; all of them, unindexed, when it applies to every one)."""
            if len(rows) == n:
                rows = slice(None)
            at = tiles[:, rows]
            return OpWork(
                subtask=SubTask(
                    spec.kind, spec.dtype_bytes, at.prod(axis=0),
                    {role: at[idx].prod(axis=0) for role, idx in self.roles.items()},
                ),
                steps=total_steps[rows],
                shifted_bytes=shifted[rows],
                shift_events=events[rows],
                partial_copies=np.ones(at.shape[1]),
                out_step_elems=out_step[rows],
                out_resident_elems=out_slice[rows],
                cores=cores[rows],
            )

        complete = prefixes.depth == space.n_axes
        cycles = np.zeros(n)
        rows = np.flatnonzero(complete)
        if len(rows) == n:
            return _as_array(self.group_bound(self.device, least(rows)), n)
        if len(rows):
            cycles[rows] = _as_array(self.group_bound(self.device, least(rows)), len(rows))
        rows = np.flatnonzero(~complete)
        if self.prefix_bound is not None and len(rows):
            cycles[rows] = _as_array(self.prefix_bound(self.device, least(rows)), len(rows))
        return cycles


def _as_array(values, n: int) -> np.ndarray:
    values = np.broadcast_to(np.asarray(values, dtype=np.float64), (n,))
    return np.where(np.isnan(values), 0.0, values)
