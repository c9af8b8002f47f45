"""Plans for an MTIA-family device: MTIA's own mapping (seeds/001 section 4), T10
rotation plans over the NoC where they are cheaper, and where each tensor lives.

**MTIA's mapping of a matmul** (``mapping_space``): the op's m, n and k are split over a
PE sub-grid in multiples of 64, 64 and 32. One of m and n runs along the grid's rows,
the other along its columns, and k is split into chains of adjacent PEs along the
columns (partial sums flow west to east) or along the rows (north to south), the
directions of the reduction network. Every PE then computes a different block of C and
reads its A strip and Bᵀ slice; PEs in one row read the same A block and PEs in one
column the same Bᵀ block (or the other way round), so those reads are multicast. In the
section 4 example (512x1024x256 on 4x4) m runs along the 4 rows and the columns carry
(n: 2) x (k: 2), k innermost: columns 0 and 2 (and 1 and 3) share A's reads, every
column shares Bᵀ's. A batch axis splits the grid into side-by-side sub-grids. Per PE,
the A strip stays resident across the n loop and the Bᵀ slice across the m loop when
local memory holds them (else they are streamed and re-read); each such choice is one
plan. Operators that are not matmuls run data-parallel over every PE at the memory
levels' bandwidth (``stream``).

**T10 rotation plans** are searched on the PEs as cores (``irc.planner.search``) under
``irc.cost.mtia.MtiaCostModel``, with the same homes; the cheaper of the best mapping and
the best rotation plan is the operator's plan.

**Placement** (``place_operator``, ``place_model``): a PE's local memory holds only the
slices of the running op; tensors live in the on-chip SRAM while it has room (the
activations first: they are produced and consumed on chip, section 5's "best-effort
approach to keep producer-consumer data in on-chip memory"), the weights that do not fit
in LPDDR, the largest first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

from irc.cost.mtia import (
    TILE_K,
    TILE_M,
    TILE_N,
    MappingBreakdown,
    MappingWork,
    MtiaCostModel,
    GatherWork,
    edge_hops,
    gather_pool_cycles,
    gather_share,
    gather_window,
    mapping_cycles,
    read_transfer_cycles,
    simd_cycles,
    require_mtia,
    stream_blocks,
    stream_cycles,
)
from irc.devices import load_device
from irc.plans.errors import PlanError
from irc.plans.plan import Plan
from irc.planner.relayout import tensor_elements
from irc.plans.roles import compute_roles
from irc.planner.search import search
from irc.plans.spec import OpSpec


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _ceil_to(a: int, multiple: int) -> int:
    return _ceil_div(a, multiple) * multiple


@dataclass(frozen=True)
class MtiaMapping:
    """One section-4 mapping (or, ``rows_axis == "stream"``, a data-parallel operator).

    ``splits``: (batch, m, n, k) parts; ``grid``: the (rows, cols) of one batch group's
    sub-grid; ``per_pe``: the padded (batch, m, n, k) one PE computes; ``rows_axis``: "m"
    or "n" (the axis along the grid's rows); ``k_along``: "cols" (chains west to east) or
    "rows" (north to south); ``a_passes``/``b_passes``: reads of the A / Bᵀ slice."""

    rows_axis: str
    k_along: str
    splits: tuple[int, int, int, int]
    grid: tuple[int, int]
    per_pe: tuple[int, int, int, int]
    a_passes: int
    b_passes: int
    local_bytes: int
    homes: tuple[str, ...]
    cost: MappingBreakdown
    depths: tuple[int, int] = (0, 0)     # bytes of the A and B circular buffers

    @property
    def pes(self) -> int:
        return self.splits[0] * self.grid[0] * self.grid[1]

    @property
    def cycles(self) -> float:
        return self.cost.total

    def position(self, m_part: int, n_part: int, k_part: int) -> tuple[int, int]:
        """(row, column) in the sub-grid of the PE computing parts (m, n, k), k innermost
        along its grid dimension."""
        _, fm, fn, fk = self.splits
        outer_rows = m_part if self.rows_axis == "m" else n_part
        outer_cols = n_part if self.rows_axis == "m" else m_part
        if self.k_along == "cols":
            return outer_rows, outer_cols * fk + k_part
        return outer_rows * fk + k_part, outer_cols

    def multicast_groups(self) -> dict[str, list[list[tuple[int, int]]]]:
        """The PEs sharing each read: tensor ("A", "B") -> groups of (row, col), one group
        per block of that tensor (section 4's Figure 7)."""
        _, fm, fn, fk = self.splits
        groups: dict[str, list[list[tuple[int, int]]]] = {"A": [], "B": []}
        for m in range(fm):
            for k in range(fk):
                groups["A"].append([self.position(m, n, k) for n in range(fn)])
        for n in range(fn):
            for k in range(fk):
                groups["B"].append([self.position(m, n, k) for m in range(fm)])
        return groups

    def describe(self) -> str:
        if self.rows_axis == "stream":
            return f"stream over {self.pes} PEs"
        b, fm, fn, fk = self.splits
        pb, pm, pn, pk = self.per_pe
        chain = "west-east" if self.k_along == "cols" else "north-south"
        resident = f"A read {self.a_passes}x, B read {self.b_passes}x"
        return (f"{self.grid[0]}x{self.grid[1]} sub-grid" + (f" x{b} batch groups" if b > 1 else "")
                + f": {self.rows_axis} on rows, m/{fm} n/{fn} k/{fk} (k chains {chain}); "
                + f"per PE m={pm} n={pn} k={pk}" + (f" batch={pb}" if pb > 1 else "") + f"; {resident}")


@dataclass(frozen=True)
class MtiaOpPlan:
    """An operator's plan on an MTIA device: the best section-4 mapping (``mapping``),
    the best T10 rotation plan (``rotation``, None when not searched or none fits), the
    one chosen (``chosen``: "mapping" or "rotation"), and where its tensors live."""

    spec: OpSpec
    device: str
    homes: Mapping[str, str]
    mapping: MtiaMapping | None
    rotation: Plan | None
    chosen: str
    cycles: float
    seconds: float
    mappings_scored: int = 0

    def describe(self) -> str:
        if self.chosen == "rotation":
            plan = self.rotation
            return f"T10 rotation F_op=[{','.join(map(str, plan.op_factors))}] on {plan.score.cores} PEs"
        return self.mapping.describe()


# ---------------------------------------------------------------------------------------
# Placement
# ---------------------------------------------------------------------------------------


def tensor_bytes(spec: OpSpec, name: str) -> int:
    return spec.bytes_of(name) * tensor_elements(spec, name)


LEVEL_NAMES = {"local": "local memory per PE", "sram": "on-chip SRAM", "dram": "LPDDR"}


def check_levels(device, needs: Mapping[str, float], what: str) -> None:
    """A ``PlanError`` naming the first memory level (``local``, ``sram``, ``dram``) whose
    bytes in ``needs`` exceed its capacity: what needs them, how many, and how many the
    level holds."""
    for level, need in needs.items():
        capacity = device.level_capacity(level)
        if need > capacity:
            raise PlanError(f"{what} need {int(need)} B of {LEVEL_NAMES[level]} ({level}), more than "
                            f"{device.name}'s {capacity} B")


def level_bytes(spec: OpSpec, homes: Mapping[str, str]) -> dict[str, int]:
    """Bytes of ``spec``'s tensors in each level they live in (a tensor read twice counts once)."""
    needs: dict[str, int] = {}
    for tensor in spec.tensors:
        needs[homes[tensor.name]] = needs.get(homes[tensor.name], 0) + tensor_bytes(spec, tensor.name)
    return needs


def place_operator(spec: OpSpec, device, weights: tuple[str, ...] = ()) -> dict[str, str]:
    """Each tensor's home for one operator run alone: SRAM while the op's tensors fit,
    else the inputs (weights first, then the largest) move to LPDDR."""
    device = require_mtia(load_device(device), "mtia placement")
    homes = {t.name: "sram" for t in spec.tensors}
    used = sum(tensor_bytes(spec, t.name) for t in spec.tensors)
    order = sorted(spec.inputs, key=lambda t: (t.name not in weights, -tensor_bytes(spec, t.name)))
    for tensor in order:
        if used <= device.onchip_bytes:
            break
        homes[tensor.name] = "dram"
        used -= tensor_bytes(spec, tensor.name)
    if used > device.onchip_bytes:
        homes[spec.output.name] = "dram"
    check_levels(device, level_bytes(spec, homes), "the operator's tensors")
    return homes


# ---------------------------------------------------------------------------------------
# MTIA's mapping (section 4)
# ---------------------------------------------------------------------------------------


def _role_extent(spec: OpSpec, indices: tuple[int, ...]) -> int:
    return math.prod(spec.extents[i] for i in indices)


def matmul_extents(spec: OpSpec) -> tuple[int, int, int, int]:
    """(batch, m, n, k) of a matmul: each role's axes multiplied together."""
    roles = compute_roles(spec)
    return tuple(_role_extent(spec, roles[r]) for r in ("batch", "m", "n", "k"))  # type: ignore[return-value]


def buffer_depths(device, pk: int, pn: int, a_b: int, b_b: int, a_resident: bool, b_resident: bool,
                  homes, hops: int) -> tuple[int, int]:
    """Bytes of the A and B circular buffers of one PE: A's 64-row strip plus room to
    prefetch the next strip's first blocks while the last ones are used (or, streaming,
    the 64x32 blocks in flight that cover a read's latency: ``stream_blocks``), Bᵀ's whole
    slice (or its blocks in flight)."""
    a_blocks = stream_blocks(device, homes[1], a_b, hops)
    a = (TILE_M * pk + (a_blocks - 1) * TILE_M * TILE_K) * a_b if a_resident else a_blocks * TILE_M * TILE_K * a_b
    b = pn * pk * b_b if b_resident else stream_blocks(device, homes[2], a_b, hops) * TILE_N * TILE_K * b_b
    return a, b


def mapping_space(spec: OpSpec, device, homes: Mapping[str, str],
                  grid: tuple[int, int] | None = None) -> list[MtiaMapping]:
    """Every section-4 mapping of the matmul ``spec`` that fits the grid (or the
    ``grid`` = (rows, cols) sub-grid it is confined to) and local memory."""
    device = require_mtia(load_device(device), "mtia mapping")
    if spec.kind != "matmul":
        raise PlanError(f"MTIA's section-4 mapping is for matmuls, not {spec.kind!r} operators")
    batch, m, n, k = matmul_extents(spec)
    c_name, a_name, b_name = spec.output.name, spec.inputs[0].name, spec.inputs[1].name
    a_b, b_b, c_b = spec.bytes_of(a_name), spec.bytes_of(b_name), spec.bytes_of(c_name)
    home_tuple = (homes[c_name], homes[a_name], homes[b_name])
    rows_total, cols_total = grid if grid is not None else (device.grid_rows, device.grid_cols)
    if rows_total > device.grid_rows or cols_total > device.grid_cols or min(rows_total, cols_total) < 1:
        raise PlanError(f"sub-grid {rows_total}x{cols_total} does not fit {device.name}'s "
                        f"{device.grid_rows}x{device.grid_cols} PEs")
    directions = device.reduction_directions
    found: list[MtiaMapping] = []
    for rows_axis in ("m", "n"):
        for k_along in ("cols", "rows"):
            if (k_along == "cols" and "west-east" not in directions) or (
                    k_along == "rows" and "north-south" not in directions):
                continue
            for fk in range(1, min(_ceil_div(k, TILE_K), max(rows_total, cols_total)) + 1):
                for fm in range(1, min(_ceil_div(m, TILE_M), max(rows_total, cols_total)) + 1):
                    for fn in range(1, min(_ceil_div(n, TILE_N), max(rows_total, cols_total)) + 1):
                        outer_r, outer_c = (fm, fn) if rows_axis == "m" else (fn, fm)
                        grid = (outer_r, outer_c * fk) if k_along == "cols" else (outer_r * fk, outer_c)
                        if grid[0] > rows_total or grid[1] > cols_total:
                            continue
                        if rows_axis == "n" and fk == 1 and fm == 1 and fn == 1:
                            continue  # the same single PE as rows_axis "m"
                        for fb in range(1, batch + 1):
                            if fb > 1 and not (fb * grid[0] <= rows_total or fb * grid[1] <= cols_total):
                                break
                            if fb > 1 and batch % fb and _ceil_div(batch, fb) == _ceil_div(batch, fb - 1):
                                continue
                            found.extend(_mappings_of(device, (fb, fm, fn, fk), grid, rows_axis, k_along,
                                                      (batch, m, n, k), (a_b, b_b, c_b), home_tuple))
    return found


def _mappings_of(device, splits, grid, rows_axis, k_along, extents, sizes, homes) -> list[MtiaMapping]:
    fb, fm, fn, fk = splits
    batch, m, n, k = extents
    a_b, b_b, c_b = sizes
    pb = _ceil_div(batch, fb)
    pm = _ceil_to(_ceil_div(m, fm), TILE_M)
    pn = _ceil_to(_ceil_div(n, fn), TILE_N)
    pk = _ceil_to(_ceil_div(k, fk), TILE_K)
    out = []
    rows, cols = grid
    hops = edge_hops(device, rows, cols)
    for a_resident in (True, False):
        for b_resident in (True, False):
            depths = buffer_depths(device, pk, pn, a_b, b_b, a_resident, b_resident, homes, hops)
            # and two 64x64 output tiles (CB_C)
            need = sum(depths) + 2 * TILE_M * TILE_N * c_b
            if need > device.local_bytes:
                continue
            a_passes = 1 if a_resident else pn // TILE_N
            b_passes = 1 if b_resident else pm // TILE_M
            work = MappingWork(
                batch=pb, m=pm, n=pn, k=pk, a_passes=a_passes, b_passes=b_passes,
                a_group=fn, b_group=fm, k_chain=fk, pes=fb * rows * cols,
                hops=hops, a_bytes=a_b, b_bytes=b_b, c_bytes=c_b, homes=homes)
            out.append(MtiaMapping(rows_axis, k_along, splits, grid, (pb, pm, pn, pk), a_passes, b_passes,
                                   need, homes, mapping_cycles(device, work), depths))
    return out


def least_local_bytes(spec: OpSpec, device, homes: Mapping[str, str]) -> int:
    """The local memory the smallest section-4 mapping of the matmul ``spec`` needs per PE:
    A and Bᵀ streamed in the blocks that cover a read's latency, and two 64x64 tiles of C."""
    c_name, a_name, b_name = spec.output.name, spec.inputs[0].name, spec.inputs[1].name
    a_b, b_b, c_b = spec.bytes_of(a_name), spec.bytes_of(b_name), spec.bytes_of(c_name)
    home_tuple = (homes[c_name], homes[a_name], homes[b_name])
    depths = buffer_depths(device, TILE_K, TILE_N, a_b, b_b, False, False, home_tuple, edge_hops(device, 1, 1))
    return sum(depths) + 2 * TILE_M * TILE_N * c_b


def stream_mapping(spec: OpSpec, device, homes: Mapping[str, str]) -> MtiaMapping:
    """A non-matmul operator run data-parallel over every PE: its tensors read and
    written once at their levels' bandwidth, its iteration points on the SIMD engines."""
    device = require_mtia(load_device(device), "mtia stream")
    read: dict[str, float] = {}
    for tensor in spec.inputs:
        level = homes[tensor.name]
        read[level] = read.get(level, 0.0) + tensor_bytes(spec, tensor.name)
    write = {homes[spec.output.name]: float(tensor_bytes(spec, spec.output.name))}
    cycles, terms = stream_cycles(device, read, write, spec.iteration_volume, spec.dtype_bytes, device.pes)
    level_bytes = {"sram": 0.0, "dram": 0.0}
    for source in (read, write):
        for level, nbytes in source.items():
            level_bytes[level] += nbytes
    body_fill = cycles - max(terms.values())
    cost = MappingBreakdown(compute=terms["compute"], memory=terms["memory"], link=terms["link"], local=0.0,
                            reduction=0.0, issue=0.0, fill=body_fill, drain=0.0, level_bytes=level_bytes)
    return MtiaMapping("stream", "-", (1, 1, 1, 1), (device.grid_rows, device.grid_cols), (1, 1, 1, 1),
                       1, 1, 0, tuple(homes[t.name] for t in spec.tensors), cost)


@dataclass(frozen=True)
class StreamSpec:
    """An operator run data-parallel on the PEs' SIMD engines, known only by its sizes (a
    te op no ``OpSpec`` describes, e.g. a flatten whose output index merges axes): the
    bytes of each input and of the output (read and written whole), its iteration points
    and the element size the SIMD engines compute at."""

    input_bytes: tuple[int, ...]
    output_bytes: int
    points: int
    dtype_bytes: int
    kind: str = "stream"


@dataclass(frozen=True)
class StreamOp:
    """A ``StreamSpec`` operator of a model (``MtiaModel``)."""

    name: str
    spec: StreamSpec
    category: str = "Others"


def stream_homes(input_bytes, output_bytes: int, device) -> tuple[str, ...]:
    """Homes of a streamed operator's tensors (output first): SRAM while they fit,
    else the largest inputs in LPDDR."""
    homes = ["sram"] * (1 + len(input_bytes))
    used = output_bytes + sum(input_bytes)
    for i in sorted(range(len(input_bytes)), key=lambda i: -input_bytes[i]):
        if used <= device.onchip_bytes:
            break
        homes[1 + i] = "dram"
        used -= input_bytes[i]
    if used > device.onchip_bytes:
        homes[0] = "dram"
    return tuple(homes)


def plan_stream(spec: StreamSpec, device, homes: tuple[str, ...] | None = None) -> MtiaOpPlan:
    """A ``StreamSpec`` on every PE's SIMD engine (``irc.cost.mtia.stream_cycles``)."""
    device = require_mtia(load_device(device), "mtia stream")
    homes = homes or stream_homes(spec.input_bytes, spec.output_bytes, device)
    needs: dict[str, int] = {}
    for level, nbytes in zip(homes, (spec.output_bytes, *spec.input_bytes)):
        needs[level] = needs.get(level, 0) + nbytes
    check_levels(device, needs, "the operator's tensors")
    read: dict = {}
    for level, nbytes in zip(homes[1:], spec.input_bytes):
        read[level] = read.get(level, 0.0) + nbytes
    write = {homes[0]: float(spec.output_bytes)}
    cycles, terms = stream_cycles(device, read, write, spec.points, spec.dtype_bytes, device.pes)
    level_bytes = {"sram": 0.0, "dram": 0.0}
    for source in (read, write):
        for level, nbytes in source.items():
            level_bytes[level] += nbytes
    cost = MappingBreakdown(compute=terms["compute"], memory=terms["memory"], link=terms["link"], local=0.0,
                            reduction=0.0, issue=0.0, fill=cycles - max(terms.values()), drain=0.0,
                            level_bytes=level_bytes)
    mapping = MtiaMapping("stream", "-", (1, 1, 1, 1), (device.grid_rows, device.grid_cols), (1, 1, 1, 1),
                          1, 1, 0, tuple(homes), cost)
    names = {"Y": homes[0], **{f"X{i}": h for i, h in enumerate(homes[1:])}}
    return MtiaOpPlan(spec, device.name, names, mapping, None, "mapping", cycles, cycles / device.clock_hz, 1)


# ---------------------------------------------------------------------------------------
# One operator
# ---------------------------------------------------------------------------------------


def plain_matmul(spec: OpSpec) -> bool | None:
    """Whether ``spec`` is the 2-d matmul section 4 maps, ``C[m,n] += A[m,k] * B[k,n]``
    with A read first: False for B stored as Bᵀ (``B[n,k]``), True for ``B[k,n]``; None
    for anything else (a batch axis, merged or windowed dims, ...). Only these get a
    section-4 mapping: te-to-mtia lowers no other."""
    if spec.kind != "matmul" or len(spec.axes) != 3 or len(spec.inputs) != 2 or len(spec.reduction_axes) != 1:
        return None
    c, a, b = spec.tensors
    if any(len(dim) != 1 for t in spec.tensors for dim in t.dims) or len(c.dims) != 2:
        return None
    m, n = c.dims[0][0], c.dims[1][0]
    (k,) = spec.reduction_axes
    if a.dims != ((m,), (k,)):
        return None
    if b.dims == ((k,), (n,)):
        return True
    if b.dims == ((n,), (k,)):
        return False
    return None


def mtia_cost_model(spec: OpSpec, homes: Mapping[str, str]) -> MtiaCostModel:
    """The ``mtia`` cost model for T10 plans of ``spec`` with its tensors at ``homes``,
    each moved at its own element size."""
    return MtiaCostModel(tuple(homes[t.name] for t in spec.tensors), tuple(spec.bytes_of(t.name) for t in spec.tensors))


def plan_operator(spec: OpSpec, device, *, homes: Mapping[str, str] | None = None,
                  weights: tuple[str, ...] = (), rotation: bool = True,
                  grid: tuple[int, int] | None = None) -> MtiaOpPlan:
    """The operator's plan on an MTIA device: the best section-4 mapping (a 2-d matmul,
    ``plain_matmul``) or the data-parallel stream on the SIMD engines (anything else,
    batched matmuls included), against the best T10 rotation plan over the NoC when
    ``rotation``; the cheaper one is chosen. Each of them is what ``te-to-mtia`` lowers. ``grid`` confines the mapping
    to a (rows, cols) sub-grid (section 4's example uses 4x4). Raises ``PlanError`` when
    neither exists."""
    device = require_mtia(load_device(device), "mtia planning")
    homes = dict(homes) if homes is not None else place_operator(spec, device, weights)
    check_levels(device, level_bytes(spec, homes), "the operator's tensors")
    scored = 0
    if plain_matmul(spec) is not None:
        space = mapping_space(spec, device, homes, grid)
        scored = len(space)
        mapping = min(space, key=lambda p: (p.cycles, p.pes)) if space else None
    else:
        mapping = stream_mapping(spec, device, homes)
        scored = 1
    t10 = None
    if rotation:
        try:
            t10 = search(spec, device, mtia_cost_model(spec, homes)).best
        except PlanError:
            t10 = None
    if mapping is None and t10 is None:
        least = least_local_bytes(spec, device, homes) if plain_matmul(spec) is not None else None
        raise PlanError(
            f"no plan on {device.name}: no section-4 mapping fits its {LEVEL_NAMES['local']} (local, "
            f"{device.local_bytes} B" + (f"; the smallest needs {least} B" if least is not None else "") + ")"
            + (" and no T10 rotation plan fits either" if rotation else " (rotation plans not allowed)"))
    if t10 is not None and (mapping is None or t10.cycles < mapping.cycles):
        chosen, cycles = "rotation", t10.cycles
    else:
        chosen, cycles = "mapping", mapping.cycles
    return MtiaOpPlan(spec, device.name, homes, mapping, t10, chosen, cycles, cycles / device.clock_hz, scored)


# ---------------------------------------------------------------------------------------
# Embedding tables: a planner kind of their own (memory-bound)
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EmbeddingSpec:
    """Embedding-bag lookups of one operator (an EmbeddingBag, or a TableBatchedEmbedding
    of ``tables`` tables): ``batch`` bags per table of ``pooling`` rows each (the mean, when
    bags differ) from tables of ``rows`` rows of ``dim`` elements (``dtype_bytes`` each;
    section 6's TBE tables are INT8), ``index_bytes`` per index; ``total_rows``, when
    given, is the rows of all tables together (tables of different sizes; else ``tables
    x rows``). Memory-bound: priced by bytes moved."""

    batch: int
    pooling: float
    rows: int
    dim: int
    tables: int = 1
    dtype_bytes: int = 1
    index_bytes: int = 8
    out_bytes: int = 4
    total_rows: int = 0
    kind: str = "embedding"

    @property
    def lookups(self) -> int:
        return int(round(self.tables * self.batch * self.pooling))

    @property
    def row_bytes(self) -> int:
        return self.dim * self.dtype_bytes

    @property
    def table_bytes(self) -> int:
        return (self.total_rows or self.tables * self.rows) * self.row_bytes

    @property
    def moved_bytes(self) -> int:
        """Bytes an ideal kernel moves: the rows looked up, the indices, the pooled output."""
        return self.lookups * (self.row_bytes + self.index_bytes) + self.tables * self.batch * self.dim * self.out_bytes

    @property
    def iteration_volume(self) -> int:
        return self.lookups * self.dim


@dataclass(frozen=True)
class EmbeddingPlan:
    """Lookups spread over the PEs, tables in ``home``: each of ``pes`` PEs (a ``grid`` of
    rows x cols, row-major) pools ``samples_per_pe`` consecutive samples (every table's
    bag of each), gathering their rows through a circular buffer of ``window`` rows
    (``irc.cost.mtia.gather_pool_cycles``); ``te-to-mtia`` lowers exactly this."""

    spec: EmbeddingSpec
    home: str
    cycles: float
    seconds: float
    terms: Mapping[str, float]
    bound: str
    pes: int
    grid: tuple[int, int] = (1, 1)
    samples_per_pe: int = 1
    window: int = 2

    chosen = "embedding"

    @property
    def homes(self) -> dict:
        return {"tables": self.home}

    def describe(self) -> str:
        return (f"{self.spec.lookups} lookups over {self.pes} PEs ({self.samples_per_pe} sample(s) each, "
                f"{self.window}-row buffers), tables in {self.home} ({self.bound}-bound)")


def embedding_layout(batch: int, device) -> tuple[int, int, tuple[int, int]]:
    """(samples per PE, PEs used, their grid): the batch split evenly over the PEs, in
    consecutive samples, the used PEs filling the grid's rows from the north-west."""
    per_pe = -(-batch // device.pes)
    pes = -(-batch // per_pe)
    cols = min(pes, device.grid_cols)
    return per_pe, pes, (-(-pes // cols), cols)


def gather_work(device, *, rows: float, row_bytes: int, samples: int, sample_bytes: int, index_bytes: float,
                level: str, share: float, index_share: float, dim: int, dtype_bytes: int, grid,
                window: int | None = None) -> GatherWork:
    """One PE's ``GatherWork``; without ``window``, the buffer depth ``gather_window`` picks."""
    hops = edge_hops(device, grid[0], grid[1])
    if window is None:
        xfer = float(read_transfer_cycles(device, row_bytes, level, share))
        simd = float(simd_cycles(device, dim, dtype_bytes))
        window = gather_window(device, row_bytes, level, max(device.dma_issue_cycles, xfer, simd), simd, hops)
    return GatherWork(rows=rows, row_bytes=row_bytes, samples=samples, sample_bytes=sample_bytes,
                      index_bytes=index_bytes, level=level, share=share, index_share=index_share, dim=dim,
                      dtype_bytes=dtype_bytes, window=window, hops=hops)


def plan_embedding(spec: EmbeddingSpec, device, home: str | None = None, cached: bool = False) -> EmbeddingPlan:
    """The lookups of ``spec`` spread over the PEs by samples (``embedding_layout``), the
    tables in ``home`` (SRAM when they fit, else LPDDR, when not given); each PE's time is
    ``gather_pool_cycles`` with its share of the lookups (the pooling factor's mean).
    ``cached``: the SRAM holds only the rows looked up, as a cache would (section 3.4),
    so only they need to fit it; else the home must hold the whole tables."""
    device = require_mtia(load_device(device), "mtia planning")
    if home is None:
        home = "sram" if spec.table_bytes <= device.onchip_bytes else "dram"
    held = min(spec.table_bytes, spec.lookups * spec.row_bytes) if cached and home == "sram" else spec.table_bytes
    check_levels(device, {home: held}, "the rows looked up" if held < spec.table_bytes else "the embedding tables")
    per_pe, pes, grid = embedding_layout(spec.batch, device)
    rows = per_pe * spec.tables * spec.pooling
    bags = per_pe * spec.tables
    sample_bytes = spec.tables * spec.dim * spec.out_bytes
    work = gather_work(device, rows=rows, row_bytes=spec.row_bytes, samples=per_pe, sample_bytes=sample_bytes,
                       index_bytes=(rows + bags + 1) * spec.index_bytes, level=home,
                       share=gather_share(home, pes * rows * spec.row_bytes, spec.batch * sample_bytes,
                                          rows * spec.row_bytes),
                       index_share=pes, dim=spec.dim, dtype_bytes=spec.dtype_bytes, grid=grid)
    cycles, terms = gather_pool_cycles(device, work)
    return EmbeddingPlan(spec, home, cycles, cycles / device.clock_hz, terms, max(terms, key=terms.get), pes,
                         grid, per_pe, work.window)


def embedding_roofline_seconds(spec: EmbeddingSpec, device, home: str) -> float:
    """The bytes an ideal kernel moves, each at its level's bandwidth: the rows looked up
    from the tables' level; the indices and the pooled rows (activations) from and into
    SRAM, at the same time when the tables are in LPDDR."""
    device = require_mtia(load_device(device), "mtia planning")
    rows = spec.lookups * spec.row_bytes / device.level_bytes_per_cycle(home)
    activations = (spec.moved_bytes - spec.lookups * spec.row_bytes) / device.level_bytes_per_cycle("sram")
    cycles = rows + activations if home == "sram" else max(rows, activations)
    return cycles / device.clock_hz


@dataclass(frozen=True)
class EmbeddingOp:
    """An embedding operator of a model (``MtiaModel``): its tables are weights."""

    name: str
    spec: EmbeddingSpec
    category: str = "EB"


@dataclass(frozen=True)
class MtiaModel:
    """A model for MTIA planning: ``ModelOp``s (tensor expressions) and ``EmbeddingOp``s
    in execution order; ``categories`` names each op's operator class (Table III's FC, EB,
    Concat, Transpose, Quantize, Dequantize, BatchMatMul, Others) by op name."""

    name: str
    ops: tuple
    categories: Mapping[str, str] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------
# A model
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MtiaModelPlan:
    """A model's plan on an MTIA device: per op its plan, and where every weight lives."""

    model: str
    device: str
    ops: tuple[tuple[str, MtiaOpPlan], ...]
    weight_homes: Mapping[str, str]
    sram_weight_bytes: int
    dram_weight_bytes: int
    activation_bytes: int
    seconds: float = field(default=0.0)

    def share(self, i: int) -> float:
        return self.ops[i][1].seconds / self.seconds if self.seconds > 0 else 0.0


def place_model(model, device) -> dict[tuple[int, str], str]:
    """Homes of every (op index, weight) of a ``ModelSpec`` or ``MtiaModel`` (an embedding
    op's weight is its tables, named "tables"): the activations are budgeted
    in SRAM first (the largest two live at once: a producer's output and its consumer's);
    weights then fill what is left, those read most per byte of SRAM first (all reads
    count once: the ops run once per batch), the rest go to LPDDR; a ``PlanError`` when
    they exceed it too."""
    device = require_mtia(load_device(device), "mtia placement")
    outputs = [tensor_bytes(op.spec, op.spec.output.name) if isinstance(op.spec, OpSpec)
               else op.spec.output_bytes if isinstance(op.spec, StreamSpec)
               else op.spec.tables * op.spec.batch * op.spec.dim * op.spec.out_bytes for op in model.ops]
    largest = sorted(outputs, reverse=True)[:2]
    # what lives in SRAM besides the weights: the two largest outputs, or one op's own
    # activations (its inputs from outside the model included) if more
    activations = max([sum(largest), *(_activation_bytes(op) for op in model.ops)])
    check_levels(device, {"sram": activations}, f"the activations of {getattr(model, 'name', 'the model')}")
    free = device.onchip_bytes - activations
    weights = [(i, w, tensor_bytes(op.spec, w)) for i, op in enumerate(model.ops) if isinstance(op.spec, OpSpec)
               for w in op.weights]
    weights += [(i, "tables", op.spec.table_bytes) for i, op in enumerate(model.ops)
                if isinstance(op.spec, EmbeddingSpec)]
    homes: dict[tuple[int, str], str] = {}
    in_dram = 0
    for i, name, nbytes in sorted(weights, key=lambda x: x[2]):
        if nbytes <= free:
            homes[(i, name)] = "sram"
            free -= nbytes
        else:
            homes[(i, name)] = "dram"
            in_dram += nbytes
    if in_dram > device.dram_bytes:
        raise PlanError(f"the weights SRAM cannot hold need {in_dram} B of LPDDR, more than {device.name}'s "
                        f"{device.dram_bytes} B")
    return homes


def _activation_bytes(op) -> int:
    """The bytes of one model op's tensors other than its weights (they live in SRAM)."""
    spec = op.spec
    if isinstance(spec, StreamSpec):
        return spec.output_bytes + sum(spec.input_bytes)
    if isinstance(spec, EmbeddingSpec):
        indices = (spec.lookups + spec.tables * spec.batch + 1) * spec.index_bytes
        return spec.tables * spec.batch * spec.dim * spec.out_bytes + indices
    return sum(tensor_bytes(spec, t.name) for t in spec.tensors if t.name not in op.weights)


def plan_model(model, device, *, rotation: bool = True, progress=None) -> MtiaModelPlan:
    """Every op of a ``ModelSpec`` planned with its tensors' homes (``place_model``);
    activations live in SRAM, inputs from outside the model too."""
    device = require_mtia(load_device(device), "mtia planning")
    weight_homes = place_model(model, device)
    planned = []
    cache: dict = {}
    for i, op in enumerate(model.ops):
        if isinstance(op.spec, EmbeddingSpec):
            key = (op.spec, weight_homes[(i, "tables")])
            if key not in cache:
                cache[key] = plan_embedding(op.spec, device, weight_homes[(i, "tables")])
            planned.append((op.name, cache[key]))
            if progress is not None:
                progress(i + 1, len(model.ops), op.name)
            continue
        if isinstance(op.spec, StreamSpec):
            if op.spec not in cache:
                cache[op.spec] = plan_stream(op.spec, device)
            planned.append((op.name, cache[op.spec]))
            if progress is not None:
                progress(i + 1, len(model.ops), op.name)
            continue
        homes = {t.name: weight_homes.get((i, t.name), "sram") for t in op.spec.tensors}
        key = (op.spec, tuple(sorted(homes.items())))
        if key not in cache:
            cache[key] = plan_operator(op.spec, device, homes=homes, rotation=rotation)
        planned.append((op.name, cache[key]))
        if progress is not None:
            progress(i + 1, len(model.ops), op.name)
    def weight_bytes(i: int, name: str) -> int:
        spec = model.ops[i].spec
        return spec.table_bytes if isinstance(spec, EmbeddingSpec) else tensor_bytes(spec, name)

    sram = sum(weight_bytes(i, w) for (i, w), h in weight_homes.items() if h == "sram")
    dram = sum(weight_bytes(i, w) for (i, w), h in weight_homes.items() if h == "dram")
    activations = sum(tensor_bytes(op.spec, op.spec.output.name) for op in model.ops if isinstance(op.spec, OpSpec))
    total = sum(p.seconds for _, p in planned)
    return MtiaModelPlan(model.name, device.name, tuple(planned), {f"{i}:{w}": h for (i, w), h in weight_homes.items()},
                         sram, dram, activations, total)
