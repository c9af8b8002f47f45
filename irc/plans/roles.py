"""Which axes play which role in a kind's per-step cost formula.

The cost models price a sub-task from role extents (a matmul's m, k, n; a conv's batch,
channels, spatial and window sizes); see ``irc.cost.model``. This module reads the roles off
an ``OpSpec``'s index structure, so the planner works for any axis names and order.
"""

from __future__ import annotations

from irc.plans.errors import SpecError
from irc.plans.spec import OpSpec


def _in_compound_dim(tensor, axis: str) -> bool:
    return any(axis in dim and len(dim) > 1 for dim in tensor.dims)


def compute_roles(spec: OpSpec) -> dict[str, tuple[int, ...]]:
    """Role name -> indices of the op axes whose step tiles multiply into that role."""
    names = spec.axis_names
    index = {axis: i for i, axis in enumerate(names)}
    out = spec.output
    pick = lambda predicate: tuple(index[a] for a in names if predicate(a))  # noqa: E731
    if spec.kind == "matmul":
        if len(spec.tensors) != 3:
            raise SpecError(f"a matmul has one output and two inputs, got {len(spec.tensors)} tensors")
        a, b = spec.inputs
        return {
            "batch": pick(lambda x: out.indexed_by(x) and a.indexed_by(x) and b.indexed_by(x)),
            "m": pick(lambda x: out.indexed_by(x) and a.indexed_by(x) and not b.indexed_by(x)),
            "n": pick(lambda x: out.indexed_by(x) and b.indexed_by(x) and not a.indexed_by(x)),
            "k": pick(lambda x: not out.indexed_by(x)),
        }
    if spec.kind == "conv":
        if len(spec.tensors) != 3:
            raise SpecError(f"a conv has one output and two inputs, got {len(spec.tensors)} tensors")
        data, weight = spec.inputs
        return {
            "batch": pick(lambda x: out.indexed_by(x) and not weight.indexed_by(x) and not _in_compound_dim(data, x)),
            "out_channels": pick(lambda x: out.indexed_by(x) and weight.indexed_by(x)),
            "spatial": pick(lambda x: out.indexed_by(x) and _in_compound_dim(data, x)),
            "in_channels": pick(lambda x: not out.indexed_by(x) and not _in_compound_dim(data, x)),
            "window": pick(lambda x: not out.indexed_by(x) and _in_compound_dim(data, x)),
        }
    if spec.kind == "pool":
        data = spec.inputs[0]
        return {
            "channels": pick(lambda x: out.indexed_by(x) and not _in_compound_dim(data, x)),
            "spatial": pick(lambda x: out.indexed_by(x) and _in_compound_dim(data, x)),
            "window": pick(lambda x: not out.indexed_by(x)),
        }
    if spec.kind == "reduce":
        return {"out": pick(out.indexed_by)}
    if spec.kind == "gather":
        # IPU_COST_FACTS s2 gather: n_i the index tensor's tiles (the last input, as
        # irc.plans.from_te orders a gather's tensors), n_t every tile but the last axis'
        indices = spec.tensors[-1]
        last = names[-1]
        return {"index": pick(indices.indexed_by), "leading": pick(lambda x: x != last)}
    return {}


def tensor_dim_axes(spec: OpSpec) -> tuple[tuple[tuple[int, ...], ...], ...]:
    """Per tensor (output first), per dimension: indices of the op axes in its index
    (``irc.cost.PlanGeometry``; a compound dimension ``h+r`` lists both)."""
    names = spec.axis_names
    return tuple(tuple(tuple(names.index(a) for a in dim) for dim in t.dims) for t in spec.tensors)
