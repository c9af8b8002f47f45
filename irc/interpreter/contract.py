"""A compute step on every core at once: its local expression and its batched-BLAS product.

`local_expression` states one step's sub-task over step tiles with a leading core axis;
`contract` evaluates a two-read product of one as stacked ``np.matmul`` calls, grouping
cores whose operands hold equal data. Both are re-exported from `irc.interpreter.chip`.
"""

from __future__ import annotations

import math

import numpy as np

from irc.dialects.te_expr import (
    Access,
    AffineIndex,
    Binary,
    BoundExpr,
    IndirectIndex,
    TensorExpr,
    fold,
    product_reads,
)

CORE_AXIS = "__core__"


def local_expression(expr: TensorExpr, tiles: dict[str, int], cores: int,
                     held: dict[str, tuple[int, ...]] | None = None) -> BoundExpr:
    """The sub-task of one step on every core at once: ``expr`` over step tiles, with a
    leading core axis on every tensor and indices relative to each window's origin. A
    dim read at another tensor's values (a gather's table) is held whole: its size is
    the buffer's, from ``held`` (tensor -> buffer shape)."""

    def localise(access: Access) -> Access:
        indices = [AffineIndex(((CORE_AXIS, 1),), 0)]
        for index in access.indices:
            if isinstance(index, IndirectIndex):
                indices.append(IndirectIndex(localise(index.access)))
                continue
            constant = sum(-c * (tiles[a] - 1) for a, c in index.terms if c < 0)
            indices.append(AffineIndex(index.terms, constant))
        return Access(access.tensor, tuple(indices))

    def rewrite(node, operands):  # children first (`fold`), so any depth of body works
        if isinstance(node, Access):
            return localise(node)
        if isinstance(node, Binary):
            return Binary(node.op, *operands)
        if hasattr(node, "args"):
            return type(node)(node.function, tuple(operands))
        return node

    local = TensorExpr(
        localise(expr.output), expr.combiner, fold(expr.body, rewrite),
        ((CORE_AXIS, cores), *((a, tiles[a]) for a in expr.axes)),
    )

    def shape(access: Access):
        return tuple(
            cores if i == 0 else held[access.tensor][i - 1] if isinstance(index, IndirectIndex)
            else sum(abs(c) * (tiles[a] - 1) for a, c in index.terms) + 1
            for i, index in enumerate(access.indices)
        )

    inputs = [shape(local.accesses_of(name)[0]) for name in local.inputs]
    return local.bind(inputs, shape(local.output))


def _is_constant(index) -> bool:
    return isinstance(index, AffineIndex) and not index.terms


def _slice_constants(array: np.ndarray, access: Access) -> tuple[np.ndarray, list[str]]:
    """``array`` with its constant-indexed dimensions indexed away, and the axes of the rest."""
    if not any(_is_constant(i) for i in access.indices):
        return array, [i.simple_axis for i in access.indices]
    picked = tuple(i.constant if _is_constant(i) else slice(None) for i in access.indices)
    return array[picked], [i.simple_axis for i in access.indices if not _is_constant(i)]


def contract(bound: BoundExpr, arrays: dict[str, np.ndarray], work: np.dtype,
             classes: dict[str, np.ndarray] | None = None) -> np.ndarray | None:
    """A batched-BLAS evaluation of a two-read product (``np.matmul`` on stacked
    (batch, m, k) x (batch, k, n)); None when the expression is not one.

    Constant read indices select their slice first; an output dimension at a constant
    (index 0 of a window, as every local expression has) and output axes no input
    reads (the product repeats along them) are put back around the product."""
    expr = bound.expr
    found = product_reads(expr)
    if found is None or expr.combiner not in ("=", "+="):
        return None
    scale, (left, right) = found
    if left.tensor == right.tensor:
        return None
    if any(_is_constant(i) and i.constant != 0 for i in expr.output.indices):
        return None
    x, la = _slice_constants(arrays[left.tensor], left)
    y, ra = _slice_constants(arrays[right.tensor], right)
    written = [i.simple_axis for i in expr.output.indices if not _is_constant(i)]
    if len(set(la)) != len(la) or len(set(ra)) != len(ra) or len(set(written)) != len(written):
        return None
    ext = bound.extent
    spread = [a for a in written if a not in la and a not in ra]
    oa = [a for a in written if a not in spread]
    z = _contract_axes(x, y, la, ra, oa, spread, scale, bound, work, classes, left, right)
    if spread:
        z = z.reshape(z.shape + (1,) * len(spread)).transpose([(oa + spread).index(a) for a in written])
        z = np.broadcast_to(z, [ext[a] for a in written])
    constants = [d for d, i in enumerate(expr.output.indices) if _is_constant(i)]
    return np.expand_dims(z, tuple(constants)) if constants else z


def _contract_axes(x, y, la, ra, oa, spread, scale, bound, work, classes, left, right) -> np.ndarray:
    """The product over plain axes: ``oa`` the output axes the inputs read."""
    ext = bound.extent
    batch = [a for a in oa if a in la and a in ra]
    m = [a for a in oa if a in la and a not in ra]
    n = [a for a in oa if a in ra and a not in la]
    k = [a for a in la if a in ra and a not in oa]
    if (classes is not None and not only_sum(la, ra, oa) and batch == [CORE_AXIS]
            and x.ndim == len(la) and y.ndim == len(ra)):
        grouped = _grouped_contract(x, y, la, ra, oa, m, n, k, ext, classes[left.tensor],
                                    classes[right.tensor], work)
        if grouped is not None:
            return grouped * work.type(scale) if scale != 1 else grouped
    x = np.asarray(x, dtype=work)
    y = np.asarray(y, dtype=work)
    only_l = [a for a in la if a not in ra and a not in oa]
    only_r = [a for a in ra if a not in la and a not in oa]
    if only_l:
        x = x.sum(axis=tuple(la.index(a) for a in only_l))
        la = [a for a in la if a not in only_l]
    if only_r:
        y = y.sum(axis=tuple(ra.index(a) for a in only_r))
        ra = [a for a in ra if a not in only_r]
    size = lambda axes: int(math.prod(ext[a] for a in axes))  # noqa: E731
    x = x.transpose([la.index(a) for a in batch + m + k]).reshape(size(batch), size(m), size(k))
    y = y.transpose([ra.index(a) for a in batch + k + n]).reshape(size(batch), size(k), size(n))
    z = np.matmul(x, y).reshape([ext[a] for a in batch + m + n])
    z = z.transpose([(batch + m + n).index(a) for a in oa])
    unread = [a for a, _ in bound.extents if a not in la + ra + oa + spread and a not in only_l + only_r]
    factor = scale * math.prod(ext[a] for a in unread)
    return z * work.type(factor) if factor != 1 else z


def only_sum(la, ra, oa) -> bool:
    """True when an axis is read by one operand only and summed (pre-reduced first)."""
    return any(a not in oa and (a not in la or a not in ra) for a in la + ra)


def _components(cx: np.ndarray, cy: np.ndarray) -> np.ndarray:
    """Connected components of the bipartite graph core = edge (x class, y class)."""
    comp = cx.copy()
    while True:
        by_y = np.full(cy.max() + 1, np.iinfo(np.int64).max)
        np.minimum.at(by_y, cy, comp)
        new = by_y[cy]
        by_x = np.full(cx.max() + 1, np.iinfo(np.int64).max)
        np.minimum.at(by_x, cx, new)
        new = np.minimum(new, by_x[cx])
        if (new == comp).all():
            return comp
        comp = new


def _grouped_contract(x, y, la, ra, oa, m, n, k, ext, cx, cy, work):
    """Cores whose operand windows hold equal data (same content ids and offsets) share
    work: in each group of cores forming a complete grid of distinct left x right
    operands, one wide gemm (stacked lefts x concatenated rights) computes exactly their
    products, converting each distinct operand to the compute dtype once. None when the
    cores do not group (the batched path is used)."""
    cores = x.shape[0]
    comp = _components(cx, cy)
    labels, comp = np.unique(comp, return_inverse=True)
    if len(labels) > max(1, cores // 8):
        return None
    size = lambda axes: int(math.prod(ext[a] for a in axes))  # noqa: E731
    M, N, K = size(m), size(n), size(k)
    xl = x.transpose([0] + [la.index(a) for a in m + k]).reshape(cores, M, K)
    yl = y.transpose([0] + [ra.index(a) for a in k + n]).reshape(cores, K, N)
    out = np.empty((cores, M, N), dtype=work)
    order = np.argsort(comp, kind="stable")
    bounds = np.searchsorted(comp[order], np.arange(len(labels) + 1))
    for g in range(len(labels)):
        members = order[bounds[g]:bounds[g + 1]]
        ux, ix = np.unique(cx[members], return_inverse=True)
        uy, iy = np.unique(cy[members], return_inverse=True)
        if len(ux) * len(uy) != len(members):
            return None
        rep_x = members[np.unique(ix, return_index=True)[1]]
        rep_y = members[np.unique(iy, return_index=True)[1]]
        left = np.empty((len(rep_x), M, K), dtype=work)
        np.copyto(left, xl[rep_x], casting="unsafe")
        right = np.empty((K, len(rep_y), N), dtype=work)
        for j, core in enumerate(rep_y.tolist()):  # one cast-copy per distinct operand
            right[:, j, :] = yl[core]
        product = (left.reshape(-1, K) @ right.reshape(K, -1)).reshape(len(rep_x), M, len(rep_y), N)
        out[members] = product[ix.reshape(-1), :, iy.reshape(-1), :]
    z = out.reshape([cores] + [ext[a] for a in m + n])
    return z.transpose([([CORE_AXIS] + m + n).index(a) for a in oa])
