"""A model as the model-wide planner sees it (T10 s4.3): its operators (``ModelOp``: an
``OpSpec``, the inputs that are weights resting on chip, the earlier ops producing its
activations, the inputs it shares), the relayouts between them (``Edge``), the tensors
kept on chip across each op, and the errors of a model that is inconsistent or does not
fit. Planned by `irc.planner.model`; re-exported there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from irc.devices import Device
from irc.planner.relayout import dim_extents, tensor_elements
from irc.plans.errors import PlanError, SpecError
from irc.plans.pair import PairSpec
from irc.plans.plan import Plan
from irc.plans.spec import OpSpec


class ModelSpecError(SpecError):
    """A ``ModelSpec`` whose producer links or weight flags are inconsistent."""


class ModelFitError(PlanError):
    """The model cannot be placed on the device; ``needed`` and ``available`` in bytes per core."""

    def __init__(self, message: str, needed: int, available: int) -> None:
        super().__init__(message)
        self.needed = needed
        self.available = available


@dataclass(frozen=True)
class ModelOp:
    """One operator of a model: its ``OpSpec``, the names of its inputs that are weights
    (resting on chip between uses), and per activation input the index of the earlier op
    producing it (``producers``: input name -> op index). Inputs that are neither come
    from outside the model. ``window_reads`` names the produced inputs this op reads only
    a window of (a slice, or a padded view): their element counts differ from the
    producer's output, and their relayout moves the consumer's whole partition."""

    name: str
    spec: OpSpec
    weights: tuple[str, ...] = ()
    producers: Mapping[str, int] = field(default_factory=dict)
    window_reads: frozenset[str] = frozenset()
    moved_reads: frozenset[str] = frozenset()
    """Produced (or shared) inputs read through a pure data movement (a transpose, a merge
    or split of axes) that runs as the relayout itself: the consumer receives its whole
    partition, unless ``read_views`` maps its dims onto the source's."""
    read_views: Mapping[str, tuple[int | None, ...]] = field(default_factory=dict)
    """For a moved read that only permutes dims (a transpose; dims of extent 1 added or
    dropped): per plan dim of the input, the source's plan dim it is (None: extent 1), so
    the relayout moves only what the two layouts place on different cores."""
    shared_reads: Mapping[str, tuple[int, str]] = field(default_factory=dict)
    """Inputs from outside the model that another op (or this op under another name; by
    index, and its name for the tensor) also reads: the tensor is loaded once, into that
    op's layout, and relayouted from there (``irc.lowering.shift_to_device``). Where that
    op holds it as a weight (``ModelSpec.shares_weight``), the one copy is the weight at
    rest in that op's idle layout, and this op receives its whole partition from it (its
    setup, priced as such a relayout)."""
    produced_as: Mapping[str, str] = field(default_factory=dict)
    """For a produced input whose producer has several outputs (a fused gradient pair's
    dX or dW), the producer's name for it; otherwise it is the producer's output."""
    pair: PairSpec | None = None
    """A fused gradient pair (`irc.planner.igo_pair`): one operator computing a layer's
    dX and dW under one plan, whose ``spec`` is the pair's `PairSpec.union_spec` (dX its
    output, dW a second output) and whose active plans are the pair's frontier
    (`irc.planner.op_table.build_pair_table`). It has no weights at rest: its weight is
    loaded from the host into its active layout."""
    unfused_reads: Mapping[str, tuple[int, str]] = field(default_factory=dict)
    """For a fused pair: its weights another op holds at rest (by index, and its name for
    the tensor). Fused, the pair loads them from the host; run unfused (a point of
    `irc.planner.igo_choice`), its dX receives the whole partition from that op's idle
    copy, as the two te ops it becomes do (``unfused_edges``)."""

    @property
    def outputs(self) -> tuple[str, ...]:
        """The tensors this op writes (a fused pair's dX and dW, else its output)."""
        if self.pair is not None:
            return (self.pair.dx.output.name, self.pair.dw.output.name)
        return (self.spec.output.name,)


@dataclass(frozen=True)
class ModelSpec:
    """A model as an ordered sequence of operators (execution order)."""

    name: str
    ops: tuple[ModelOp, ...]

    def __post_init__(self) -> None:
        if not self.ops:
            raise ModelSpecError(f"model {self.name!r} has no operators")
        for i, op in enumerate(self.ops):
            inputs = {t.name for t in op.spec.inputs}
            for w in op.weights:
                if w not in inputs:
                    raise ModelSpecError(f"op {i} ({op.name}): weight {w!r} is not an input; inputs are {sorted(inputs)}")
            for tensor, producer in op.producers.items():
                if tensor not in inputs:
                    raise ModelSpecError(
                        f"op {i} ({op.name}): produced tensor {tensor!r} is not an input; inputs are {sorted(inputs)}"
                    )
                if tensor in op.weights:
                    raise ModelSpecError(f"op {i} ({op.name}): {tensor!r} is both a weight and produced by op {producer}")
                if not (isinstance(producer, int) and 0 <= producer < i):
                    raise ModelSpecError(
                        f"op {i} ({op.name}): {tensor!r} must be produced by an earlier op (index 0..{i - 1}), "
                        f"got {producer!r}"
                    )
                source = self.ops[producer].spec
                name = self.source_of(i, tensor)
                if name not in self.ops[producer].outputs:
                    raise ModelSpecError(
                        f"op {i} ({op.name}): {tensor!r} is produced as {name!r}, which op {producer} "
                        f"({self.ops[producer].name}) does not write; it writes {list(self.ops[producer].outputs)}"
                    )
                produced = tensor_elements(source, name)
                consumed = tensor_elements(op.spec, tensor)
                if produced != consumed and tensor not in op.window_reads | op.moved_reads:
                    raise ModelSpecError(
                        f"op {i} ({op.name}) reads {tensor!r} with {consumed} elements "
                        f"{dim_extents(op.spec, tensor)}, but op {producer} ({self.ops[producer].name}) "
                        f"produces {produced} elements {dim_extents(source, name)}"
                    )
            for tensor in op.produced_as:
                if tensor not in op.producers:
                    raise ModelSpecError(f"op {i} ({op.name}): {tensor!r} has a producer's name but no producer")
            if op.pair is not None:
                if op.spec != op.pair.union_spec():
                    raise ModelSpecError(f"op {i} ({op.name}): a fused pair's spec must be its pair's union spec")
                if op.weights:
                    raise ModelSpecError(f"op {i} ({op.name}): a fused pair has no weights at rest, got {list(op.weights)}")
            for tensor, (home, name) in op.shared_reads.items():
                if tensor not in inputs or tensor in op.weights or tensor in op.producers:
                    raise ModelSpecError(
                        f"op {i} ({op.name}): shared input {tensor!r} must be an input that is neither a weight "
                        f"nor produced; inputs are {sorted(inputs)}"
                    )
                if not (isinstance(home, int) and 0 <= home < len(self.ops)) or (home, name) == (i, tensor) or \
                        name not in {t.name for t in self.ops[home].spec.inputs}:
                    raise ModelSpecError(
                        f"op {i} ({op.name}): shared input {tensor!r} must name another op's input, got {(home, name)!r}"
                    )

    def shares_weight(self, i: int, tensor: str) -> bool:
        """Whether op ``i``'s shared input ``tensor`` is a weight another op holds at rest
        (``ModelOp.shared_reads``): its one copy rests in that op's idle layout for the
        whole run, counted with the idle weights, never as a tensor kept across ops."""
        home, name = self.ops[i].shared_reads[tensor]
        return name in self.ops[home].weights

    def weight_bytes(self) -> int:
        """Bytes of all weights of the model (whole chip)."""
        return sum(op.spec.bytes_of(w) * tensor_elements(op.spec, w) for op in self.ops for w in op.weights)

    def consumers(self) -> dict[int, list[int]]:
        """Producer index -> indices of the ops reading its output."""
        readers: dict[int, list[int]] = {}
        for i, op in enumerate(self.ops):
            for producer in op.producers.values():
                readers.setdefault(producer, []).append(i)
        return readers

    def source_of(self, i: int, tensor: str) -> str:
        """The name the producer of op ``i``'s produced input ``tensor`` gives it."""
        op = self.ops[i]
        return op.produced_as.get(tensor, self.ops[op.producers[tensor]].spec.output.name)

    def readers_of_outputs(self) -> dict[tuple[int, str], list[int]]:
        """(producer index, its output) -> indices of the ops reading it."""
        readers: dict[tuple[int, str], list[int]] = {}
        for i, op in enumerate(self.ops):
            for tensor, producer in op.producers.items():
                readers.setdefault((producer, self.source_of(i, tensor)), []).append(i)
        return readers

    def edges(self) -> list["Edge"]:
        """Every relayout the model may pay: activations from their producer, and inputs
        shared with another op from that op's layout."""
        found = []
        for i, op in enumerate(self.ops):
            for tensor, producer in op.producers.items():
                found.append(Edge(i, tensor, producer, self.source_of(i, tensor),
                                  tensor in op.moved_reads, op.read_views.get(tensor)))
            for tensor, (home, name) in op.shared_reads.items():
                if self.shares_weight(i, tensor):   # from the idle layout: the whole partition moves
                    found.append(Edge(i, tensor, home, name, True, None))
                else:
                    found.append(Edge(i, tensor, home, name, tensor in op.moved_reads, op.read_views.get(tensor)))
        return found

    def unfused_edges(self) -> list["Edge"]:
        """The relayouts only a fused pair's unfused point pays (``ModelOp.unfused_reads``):
        its weights from their holders' idle layouts, the whole partition moved."""
        return [Edge(i, tensor, home, name, True, None, unfused_only=True)
                for i, op in enumerate(self.ops) for tensor, (home, name) in op.unfused_reads.items()]

    def shared_spans(self, weights: bool = False) -> list[tuple[int, int, set[int], int, str]]:
        """Per input shared by several ops: (first reader, last reader, readers, the op
        whose layout the copy has, its name there): the one copy on chip lives from the
        first reader to the last. ``weights``: the shared weights instead (their copy rests
        in the holder's idle layout: ``shares_weight``)."""
        groups: dict[tuple[int, str], set[int]] = {}
        for i, op in enumerate(self.ops):
            for tensor, (home, name) in op.shared_reads.items():
                if self.shares_weight(i, tensor) == weights:
                    groups.setdefault((home, name), {home}).add(i)
        return [(min(readers), max(readers), readers, home, name) for (home, name), readers in groups.items()]

    def live_across(self) -> list[list[tuple[int, str]]]:
        """Per op: the tensors on chip while it runs besides its own plan's, as (the op
        whose layout holds it, its name there): every output other ops read, from its
        producer to its last reader (the reader copies it into its own layout, the source
        stays until that reader is done), and the copy of every shared input, from its
        first reader to its last."""
        live: list[list[tuple[int, str]]] = [[] for _ in self.ops]
        for (producer, name), readers in self.readers_of_outputs().items():
            for i in range(producer + 1, max(readers) + 1):
                live[i].append((producer, name))
        for first, last, _, home, name in self.shared_spans():
            for i in range(first, last + 1):
                live[i].append((home, name))
        return live


@dataclass(frozen=True)
class Edge:
    """One relayout of the model: ``consumer``'s input ``tensor`` from ``producer``'s
    tensor ``source`` (its output, or an input it shares), through a data movement
    (``moved``) whose dim map, when known, is ``view``."""

    consumer: int
    tensor: str
    producer: int
    source: str
    moved: bool = False
    view: tuple[int | None, ...] | None = None
    unfused_only: bool = False   # paid only by a fused pair's unfused point (``unfused_edges``)


def resting_activation_bytes(model: ModelSpec, device: Device) -> list[int]:
    """Per op position: bytes per core of activations produced earlier and read later but
    not by this op (and of inputs shared by ops before and after it), spread evenly over
    all cores: how the baselines' virtual global memory holds them (the model-wide plan
    counts what a core really holds, ``ModelSpec.live_across``)."""
    resting = [0] * len(model.ops)
    for (producer, name), readers in model.readers_of_outputs().items():
        spec = model.ops[producer].spec
        per_core = -(-spec.bytes_of(name) * tensor_elements(spec, name) // device.cores)
        for i in range(producer + 1, max(readers)):
            if i not in readers:
                resting[i] += per_core
    for first, last, readers, home, name in model.shared_spans():
        spec = model.ops[home].spec
        nbytes = spec.bytes_of(name) * tensor_elements(spec, name)
        for i in range(first + 1, last):
            if i not in readers:
                resting[i] += -(-nbytes // device.cores)
    return resting


def kept_bytes(spec: OpSpec, plan: Plan, tensor: str) -> int:
    """Bytes per core of ``tensor`` kept on chip after its holder's plan ``plan`` ran (an
    output, or an input loaded once for several ops): its partition at its own element
    size. An output accumulated wider (f32 partial sums of an f16 output) is rounded in
    place by its reduction, so what stays is the rounded partition (`device-alloc` sees
    the buffer shrink at the ``device.reduce``)."""
    return plan._scored().memory.elements(tensor) * spec.bytes_of(tensor)
