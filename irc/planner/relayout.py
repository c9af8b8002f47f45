"""Relayout of an activation between the op that produces it and the op that consumes it.

A compute-shift plan leaves its output partitioned as its plan says; the next operator's
plan may want that tensor partitioned differently (T10 s5: "Once an operator finishes,
the program may rearrange the data on cores if necessary, before launching the next
one"). The relayout is priced as the bytes the worst core must receive over the exchange,
through the cost model's shift time, plus one shift event's barriers.

Layout of a tensor under a plan, per tensor dimension indexed by a single axis a: the
dimension is cut into ``blocks = F_op[a] * f_t[v][a]`` blocks of ``span_a / f_t[v][a]``
elements (span = padded per-core extent); every block tuple is held by ``replicas`` cores.

Bytes a consumer core must receive, with the best matching of consumer to producer cores:
- if, on every dim, the block sizes divide one another (nested blocks), the cores split
  into groups in which every consumer block overlaps every producer block by
  ``prod_d min(block_p, block_c)`` elements; when each group has at least as many producer
  cores as consumer cores, every consumer core finds that overlap locally and receives the
  rest of its partition; otherwise some core finds nothing and receives all of it;
- otherwise (misaligned blocks, a compound conv/pool dim, or the consumer seeing the tensor
  through a reshape), the worst core receives its whole partition (an upper bound).

On a 2D mesh a relayout between two block layouts is priced on the routes its pieces
take (``block_flows``, the busiest link and the longest route,
``irc.devices.topology.exchange_bytes``), as the chip runs it.

The ``t10`` cost model already charges every op a shift of its resident output (the
output shuffle, IPU_COST_FACTS s5); this relayout is the extra exchange a layout mismatch
costs on top, which the artifact does not model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from irc.cost import CostModel, DEFAULT_COST_MODEL, get_cost_model
from irc.devices import Device, load_device
from irc.devices.topology import exchange_bytes, on_mesh
from irc.plans.plan import Plan
from irc.plans.spec import OpSpec


@dataclass(frozen=True)
class TensorLayout:
    """A tensor as one plan places it: per dim (block count, block size), or None for a
    dim no single axis indexes; ``replicas`` cores hold each block tuple; ``elements`` per core."""

    dims: tuple[tuple[int, int] | None, ...]
    replicas: int
    elements: int
    dtype_bytes: int

    @property
    def bytes_per_core(self) -> int:
        return self.elements * self.dtype_bytes


def tensor_layout(spec: OpSpec, plan: Plan, tensor: str) -> TensorLayout:
    """The layout of ``tensor`` (an operand of ``spec``) under the scored ``plan``."""
    score = plan._scored()
    axes = spec.axis_names
    factors = plan.temporal_factors[tensor]
    dims = []
    for dim in spec.tensor(tensor).dims:
        if len(dim) != 1:
            dims.append(None)
            continue
        d = axes.index(dim[0])
        span = score.steps_per_axis[d] * score.step_tiles[d]
        dims.append((plan.op_factors[d] * factors[d], span // factors[d]))
    dims += [None] * len(spec.tensor(tensor).whole)   # held whole: no blocks to match
    elements = score.memory.elements(tensor)
    return TensorLayout(tuple(dims), score.replicas[tensor], elements, spec.bytes_of(tensor))


def relayout_elements(producer: TensorLayout, consumer: TensorLayout) -> int:
    """Elements the worst consumer core must receive (module docstring)."""
    if len(producer.dims) != len(consumer.dims) or None in producer.dims or None in consumer.dims:
        return consumer.elements
    overlap = 1
    producer_cores = producer.replicas
    consumer_cores = consumer.replicas
    for (_, size_p), (_, size_c) in zip(producer.dims, consumer.dims):
        if size_p % size_c == 0:        # consumer blocks nest inside producer blocks
            consumer_cores *= size_p // size_c
            overlap *= size_c
        elif size_c % size_p == 0:      # producer blocks nest inside consumer blocks
            producer_cores *= size_c // size_p
            overlap *= size_p
        else:
            return consumer.elements
    if consumer_cores > producer_cores:
        return consumer.elements
    return max(0, consumer.elements - overlap)


def relayout_cost(
    producer_spec: OpSpec,
    producer_plan: Plan,
    consumer_spec: OpSpec,
    consumer_plan: Plan,
    tensor: str,
    device: Device | str,
    cost: CostModel | str = DEFAULT_COST_MODEL,
    *,
    producer_tensor: str | None = None,
    whole: bool = False,
    view: tuple[int | None, ...] | None = None,
) -> tuple[int, float]:
    """(bytes per core received, cycles) to move the producer's tensor into the layout the
    consumer's plan wants for its input ``tensor``.

    ``producer_tensor`` names the tensor in the producer (default: its output; an input it
    shares with the consumer, loaded once). When the two ops see the tensor with different
    dimension extents (a reshape), or when ``whole`` (the consumer reads it through a data
    movement such as a merge of axes), the consumer's whole partition is received. A
    movement that only permutes dims (a transpose, dims of extent 1 added or dropped) gives
    ``view``, per plan dim of the consumer's tensor the producer's (None: extent 1): the
    layouts are then compared through it, so a transpose whose two layouts cut the same
    blocks moves nothing.
    """
    device = load_device(device)
    cost = get_cost_model(cost)
    producer_tensor = producer_tensor or producer_spec.output.name
    produced = tensor_layout(producer_spec, producer_plan, producer_tensor)
    consumed = tensor_layout(consumer_spec, consumer_plan, tensor)
    if view is not None:
        dims = tuple(produced.dims[j] if j is not None else (1, 1) for j in view)
        elements = relayout_elements(TensorLayout(dims, produced.replicas, produced.elements, produced.dtype_bytes),
                                     consumed)
    elif whole or dim_extents(producer_spec, producer_tensor) != dim_extents(consumer_spec, tensor):
        elements = consumed.elements
    else:
        elements = relayout_elements(produced, consumed)
    nbytes = elements * consumer_spec.bytes_of(tensor)
    if nbytes == 0:
        return 0, 0.0
    moved = nbytes
    if on_mesh(device) and view is None and not whole:
        flows = block_flows(producer_spec, producer_plan, producer_tensor, consumer_spec, consumer_plan, tensor)
        if flows is not None:   # on the mesh, the pieces' routes (the chip prices them so)
            moved = exchange_bytes(device, *flows)
    return nbytes, float(cost.shift_cycles(device, moved)) + float(cost.sync_cycles(device))


def _single_axis_dims(spec: OpSpec, plan: Plan, tensor: str) -> list[tuple[int, int]] | None:
    """Per dim of ``tensor`` under ``plan`` (not rotating) longer than one element, the
    axis indexing it and the span each core holds along it; None when some dim is not
    one axis or the tensor rotates."""
    score = plan._scored()
    if any(f > 1 for f in plan.temporal_factors[tensor]):
        return None
    found = spec.tensor(tensor)
    if found.whole:
        return None
    axes = spec.axis_names
    extents = dict(spec.axes)
    dims = []
    for dim in found.dims:
        if len(dim) != 1:
            return None
        if extents[dim[0]] == 1:
            continue   # one element: one block (as a dim indexed by a constant, which the spec drops)
        d = axes.index(dim[0])
        dims.append((d, score.steps_per_axis[d] * score.step_tiles[d]))
    return dims


def block_flows(producer_spec: OpSpec, producer_plan: Plan, producer_tensor: str, consumer_spec: OpSpec,
                consumer_plan: Plan, tensor: str):
    """Who sends what to whom when a tensor moves between two block layouts, as the lowering
    states it (``irc.lowering.relayout_pieces.block_pieces``): cores numbered row-major
    over each plan's ``F_op``; along every dim a consumer core's range either holds whole
    producer blocks (aligned) or lies inside one, and each piece, a block or the part of
    one the range takes, is read from the copy on the consumer core's own coordinates
    along the producer's other cut axes (an input loaded once: every copy is valid), or
    from the lowest core holding that block (an output: the other copies held partial
    sums). Returns
    (senders, piece bytes, receivers), one per core and piece, or None where the
    lowering states no pieces (a rotating layout, a dim of several axes, misaligned
    blocks): the relayout then keeps its all-to-all price."""
    produced = _single_axis_dims(producer_spec, producer_plan, producer_tensor)
    consumed = _single_axis_dims(consumer_spec, consumer_plan, tensor)
    if produced is None or consumed is None or len(produced) != len(consumed):
        return None
    pgrid = [int(f) for f in producer_plan.op_factors]
    qgrid = [int(f) for f in consumer_plan.op_factors]
    places = [math.prod(pgrid[d + 1:]) for d in range(len(pgrid))]
    cores = math.prod(qgrid)
    ids = np.arange(cores, dtype=np.int64)
    coords = np.array(np.unravel_index(ids, qgrid)) if cores > 1 else np.zeros((len(qgrid), 1), np.int64)
    counts, blocks, shape = [], [], []
    for (dp, size), (dq, tile) in zip(produced, consumed):
        origin = coords[dq] * tile
        if tile % size == 0 and not (origin % size).any():
            counts.append(tile // size)
            blocks.append((origin // size, 1))
            shape.append(size)
        elif ((origin // size) == ((origin + tile - 1) // size)).all():
            counts.append(1)
            blocks.append((origin // size, 0))
            shape.append(tile)
        else:
            return None
    count = math.prod(counts)
    pieces = np.arange(count, dtype=np.int64)
    digits = np.array(np.unravel_index(pieces, counts)) if count > 1 else np.zeros((len(counts), 1), np.int64)
    senders = np.zeros((cores, count), dtype=np.int64)
    for r, ((dp, _), (first, whole)) in enumerate(zip(produced, blocks)):
        block = first[:, None] + (digits[r][None, :] if whole else 0)
        senders += (block % pgrid[dp]) * places[dp]
    if producer_tensor != producer_spec.output.name:
        used = {dp for dp, _ in produced}
        for d, g in enumerate(pgrid):
            if g > 1 and d not in used:
                senders += ((ids // places[d]) % g)[:, None] * places[d]
    nbytes = math.prod(shape) * consumer_spec.bytes_of(tensor)
    return senders.reshape(-1), nbytes, np.repeat(ids, count)


def dim_extents(spec: OpSpec, tensor: str) -> tuple[int, ...]:
    """Extent of each dimension of ``tensor`` (compound dims: sum of terms minus overlap)."""
    extent = dict(spec.axes)
    found = spec.tensor(tensor)
    return tuple(sum(extent[a] for a in dim) - (len(dim) - 1) for dim in found.dims) + found.whole


def tensor_elements(spec: OpSpec, tensor: str) -> int:
    return math.prod(dim_extents(spec, tensor))
