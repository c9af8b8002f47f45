"""The ``mtia`` cost model: MTIA v1's PEs, memories, NoC and reduction network (seeds/001).

Pure functions of an ``irc.devices.mtia.MtiaDevice`` (every bandwidth, latency and rate
comes from the device file), numpy-broadcastable like every cost model. Two kinds of
plans are priced:

- **MTIA's own mapping** (section 4, ``mapping_cycles``): a matmul's m, n and k are split
  over a PE sub-grid in multiples of 64, 64 and 32; each PE streams 64-row chunks of A and
  of Bᵀ into circular buffers, multiplies 32x32x32 blocks on its DPE with 2x2 accumulator
  blocking (every block used twice), passes its partial sums over the reduction network to
  the next PE of its k chain, and the chain's last PE writes C. Reads of PEs in one row
  (A) or one column (Bᵀ) coalesce into one multicast read. DMA, MML and REDUCE run
  decoupled (producer/consumer through circular buffers), so the body is the slowest of
  the DPE (with the accumulator banks' turnaround between output tiles), the memory
  levels' bandwidth, the PE's fabric link, the local memory and the command issue rate;
  the pipeline's fill (the first k step's reads) and drain (the last tile's reduction
  chain and store) are added. The interpreter (``irc.interpreter.mtia``) times the same
  program event by event.
- **T10 rotation plans over the NoC** (``MtiaCostModel``, the ``CostModel`` protocol):
  the compute-shift plans of T10, with each PE's partitions loaded from their home level
  first and the output stored back, rotations over the NoC between PEs, and partial sums
  reduced over the reduction network. T10 executes load, compute-shift and store in bulk
  synchronous steps, so these terms add.

Helpers price the single events the interpreter times too: one multicast read
(``multicast_read_cycles``) and one reduction-network accumulation
(``reduction_chain_cycles``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from irc.cost.model import ArrayLike, CostBreakdown, CostModelError, OpWork, SubTask, as_float_array
from irc.devices.mtia import MtiaDevice

# Section 4: m, n and k are distributed in multiples of 64, 64 and 32 (2x2 accumulator
# blocking of 32x32 DPE blocks).
TILE_M = 64
TILE_N = 64
TILE_K = 32


def _ceil_div(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    return -(-np.asarray(a) // np.asarray(b))


def _ceil_to(a: ArrayLike, multiple: ArrayLike) -> np.ndarray:
    return _ceil_div(a, multiple) * np.asarray(multiple)


def require_mtia(device, model: str = "mtia"):
    """The device, if it is of the MTIA family; else a ``CostModelError`` naming both."""
    if not isinstance(device, MtiaDevice):
        raise CostModelError(
            f"cost model {model!r} prices MTIA-family devices (a PE grid with shared memories); "
            f"device {getattr(device, 'name', device)!r} is not one"
        )
    return device


# ---------------------------------------------------------------------------------------
# Single events
# ---------------------------------------------------------------------------------------


def dpe_block_cycles(device, dtype_bytes: int) -> float:
    """One 32x32x32 DPE block: 32 cycles in INT8, 64 in FP16 (section 3.1.2)."""
    m, k, n = device.dpe_block
    return m * k * n / device.macs_per_cycle_for(dtype_bytes)


def dpe_cycles(device, m, k, n, dtype_bytes: int, batch=1) -> ArrayLike:
    """A matmul of (m x k) by (k x n) on one PE's DPE: the operands padded to whole
    32x32x32 blocks, one block per ``dpe_block_cycles`` (fully pipelined)."""
    bm, bk, bn = device.dpe_block
    blocks = _ceil_div(m, bm) * _ceil_div(k, bk) * _ceil_div(n, bn)
    return as_float_array(batch) * blocks * dpe_block_cycles(device, dtype_bytes)


def stream_blocks(device, level: str, dtype_bytes: int, hops: int) -> int:
    """Blocks a circular buffer streaming from ``level`` holds: enough reads in flight to
    cover one read's issue, latency and hops while the MMLs of each k step (four 32x32x32
    blocks) consume one block, plus the block in use (section 3.3: the producer runs
    ahead as far as the buffer's space allows)."""
    step = 4 * dpe_block_cycles(device, dtype_bytes)
    read = device.dma_issue_cycles + device.level_latency_cycles(level) + device.noc_hop_cycles * hops
    return 2 + int(np.ceil(read / step))


def simd_cycles(device, elements, dtype_bytes: int) -> ArrayLike:
    """Elementwise work on one PE's SIMD engine: 32 FP16 lanes, INT8 at twice the rate,
    FP32 at half (Table I: SE 1.6 FP16 / 3.2 INT8 TOPS)."""
    lanes = device.simd_elements_per_cycle * 2 / max(1, dtype_bytes)
    return as_float_array(elements) / lanes


def edge_hops(device, rows: int, cols: int) -> int:
    """Grid hops from the memory crossbar at the grid's edge to the farthest PE of a
    ``rows`` x ``cols`` sub-grid placed against the west edge: the SRAM slices sit around
    the grid (section 3.4), so a sub-grid's last column is ``cols`` hops in, its last row
    at most half the grid down from the nearer of the north and south edges."""
    return int(cols + min(rows, device.grid_rows) // 2)


def read_transfer_cycles(device, nbytes, level: str, share=1.0) -> ArrayLike:
    """Cycles ``nbytes`` of one read take to stream into a PE once the first byte is
    there: the slower of the PE's fabric link and the level, which serves ``share`` bytes
    (this read's and the contending reads') per byte of this one."""
    nbytes = as_float_array(nbytes)
    return np.maximum(nbytes / device.noc_pe_bytes_per_cycle,
                      nbytes * as_float_array(share) / device.level_bytes_per_cycle(level))


def dma_arrival(device, issued: float, queue_free: float, nbytes: float, level: str, share: float = 1.0,
                hops: int = 1) -> float:
    """When a DMA read issued at cycle ``issued`` has brought its ``nbytes`` into the
    PE, through the PE's one DMA queue (free from ``queue_free``): the command's issue,
    the level's latency and the hops, then the transfer (``read_transfer_cycles``); a
    read behind another in the queue streams right after it. The interpreter times every
    DMA with this formula and ``multicast_read_cycles`` is its lone read."""
    xfer = float(read_transfer_cycles(device, nbytes, level, share))
    first = (issued + device.dma_issue_cycles + device.level_latency_cycles(level)
             + device.noc_hop_cycles * hops)
    return max(first + xfer, queue_free + xfer)


def multicast_read_cycles(device, nbytes, group, level: str, hops=1) -> ArrayLike:
    """One DMA read of ``nbytes`` from ``level`` ("sram" or "dram") delivered to ``group``
    PEs of one row or column (section 3.4): the command's issue, the level's latency, the
    hops to the farthest PE, then the bytes at the slower of the PE's link and the level
    (``dma_arrival`` of a read issued at cycle 0 into an empty queue). With multicast the
    level serves the bytes once for the whole group; without it (``multicast = "none"``)
    every PE's request is served separately."""
    share = 1.0 if device.has_multicast else as_float_array(group)
    return (device.dma_issue_cycles + device.level_latency_cycles(level)
            + device.noc_hop_cycles * as_float_array(hops) + read_transfer_cycles(device, nbytes, level, share))


def tile_turnaround_cycles(device, k_chain) -> float:
    """Cycles the accumulator banks stay busy after a 64x64 output tile's last MML: its
    partial sums leave over the reduction network (a chain of ``k_chain`` > 1 PEs) or into
    local memory (CB_C); the next tile's MMLs need the banks (four banks hold one tile
    under 2x2 blocking)."""
    tile = TILE_M * TILE_N * device.accumulator_bytes
    if k_chain > 1:
        return tile / device.reduction_link_bytes_per_cycle
    return tile / device.level_bytes_per_cycle("local")


def reduction_chain_cycles(device, nbytes, pes) -> ArrayLike:
    """Accumulating ``nbytes`` of partial sums over a reduction-network chain of ``pes``
    PEs (section 3.4): each hop costs its latency plus the bytes at the link rate, and the
    chain pipelines accumulator bank by bank, so after the first bank crosses all
    ``pes - 1`` hops the rest follow one bank time apart. One PE: nothing to reduce."""
    nbytes = as_float_array(nbytes)
    pes = as_float_array(pes)
    bank = float(device.dpe_block[0] * device.dpe_block[2] * device.accumulator_bytes)
    first = np.minimum(nbytes, bank)
    per_hop = device.reduction_hop_cycles + first / device.reduction_link_bytes_per_cycle
    rest = (nbytes - first) / device.reduction_link_bytes_per_cycle
    return np.where(pes <= 1, 0.0, (pes - 1) * per_hop + rest)


# ---------------------------------------------------------------------------------------
# MTIA's mapping (section 4)
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MappingWork:
    """What one section-4 mapping of a matmul implies, as the cost needs it.

    Per PE: ``batch``, ``m``, ``n``, ``k`` are its (padded) extents; ``a_passes`` is how
    often it reads its A slice (1 when each 64-row strip stays in local memory across the
    n loop, else once per 64-column chunk of Bᵀ), ``b_passes`` its Bᵀ slice (1 when the
    whole slice stays resident across the m loop, else once per 64-row chunk of A). ``a_group`` / ``b_group`` are the PEs sharing
    one read of A (a row) / Bᵀ (a column); ``k_chain`` the PEs of one reduction chain;
    ``pes`` the PEs used; ``hops`` the edge-to-farthest-PE distance. Homes are the memory
    levels ("sram", "dram") the tensors live in; element sizes in bytes."""

    batch: int
    m: int
    n: int
    k: int
    a_passes: int
    b_passes: int
    a_group: int
    b_group: int
    k_chain: int
    pes: int
    hops: int
    a_bytes: int
    b_bytes: int
    c_bytes: int
    homes: tuple[str, str, str]     # C, A, B


@dataclass(frozen=True)
class MappingBreakdown:
    """Cycles of a section-4 mapping: the overlapped body's terms (the body is the
    largest), the fill and drain around it, and the bytes each level serves."""

    compute: float          # DPE
    memory: float           # the memory levels' time (SRAM + LPDDR: one DMA queue), multicast counted once
    link: float             # one PE's fabric link (ingress + its share of C's egress)
    local: float            # one PE's local memory (DMA writes + DPE reads)
    reduction: float        # the DPE waiting for the banks between tiles (serial with compute)
    issue: float            # commands issued by a PE's cores (DMA, MML, REDUCE)
    fill: float             # the first read's latency
    drain: float            # the last tile's reduction chain and store
    level_bytes: dict       # level -> bytes it serves

    @property
    def body(self) -> float:
        return max(self.compute + self.reduction, self.memory, self.link, self.local, self.issue)

    @property
    def total(self) -> float:
        return self.fill + self.body + self.drain

    @property
    def bound(self) -> str:
        """Which term limits the body."""
        terms = {"compute": self.compute + self.reduction, "memory": self.memory, "link": self.link,
                 "local": self.local, "issue": self.issue}
        return max(terms, key=terms.get)


def mapping_cycles(device, work: MappingWork) -> MappingBreakdown:
    """Section 4's schedule (Figure 8) of one PE, overlapped as the circular buffers allow."""
    b_in = work.a_bytes
    tiles = work.batch * (work.m // TILE_M) * (work.n // TILE_N)
    compute = float(dpe_cycles(device, work.m, work.k, work.n, b_in, work.batch))
    a_read = work.batch * work.m * work.k * work.a_bytes * work.a_passes
    b_read = work.batch * work.n * work.k * work.b_bytes * work.b_passes
    tile_out = TILE_M * TILE_N * work.c_bytes
    # the last PE of each chain writes its tiles
    writers = work.pes // work.k_chain
    c_written = writers * tiles * tile_out
    a_groups = work.pes // (work.a_group if device.has_multicast else 1)
    b_groups = work.pes // (work.b_group if device.has_multicast else 1)
    level_bytes = {"sram": 0.0, "dram": 0.0}
    home_c, home_a, home_b = work.homes
    level_bytes[home_a] += a_groups * a_read
    level_bytes[home_b] += b_groups * b_read
    level_bytes[home_c] += c_written
    # one DMA queue per PE carries the reads from both levels in program order
    memory = sum(level_bytes[level] / device.level_bytes_per_cycle(level) for level in level_bytes)
    link = (a_read + b_read + tiles * tile_out) / device.noc_pe_bytes_per_cycle
    blocks = compute / dpe_block_cycles(device, b_in)
    bm, bk, bn = device.dpe_block
    local = (a_read + b_read + blocks * (bm * bk + bk * bn) * b_in) / device.level_bytes_per_cycle("local")
    acc_tile = TILE_M * TILE_N * device.accumulator_bytes
    # the banks of tile t are sent on before tile t+1's MMLs start (the DPE waits)
    reduction = (tiles - 1) * tile_turnaround_cycles(device, work.k_chain)
    # commands: a DMA per 64x32 chunk of A and of Bᵀ, four MMLs per k step, a REDUCE per tile
    dma_commands = a_read / (TILE_M * TILE_K * work.a_bytes) + b_read / (TILE_N * TILE_K * work.b_bytes)
    mml_commands = blocks
    issue = max(dma_commands, mml_commands + tiles) * device.dma_issue_cycles
    # the first k step waits for its A block and then its B block through the PE's one
    # DMA queue, each at the rate the queue drains (the slower of the link and the
    # levels' share)
    per_byte = max(1.0 / device.noc_pe_bytes_per_cycle, memory / max(a_read + b_read, 1))
    first_home = home_a if device.level_latency_cycles(home_a) >= device.level_latency_cycles(home_b) else home_b
    fill = (device.dma_issue_cycles + device.level_latency_cycles(first_home) + device.noc_hop_cycles * work.hops
            + (TILE_M * TILE_K * work.a_bytes + TILE_N * TILE_K * work.b_bytes) * per_byte)
    drain = float(reduction_chain_cycles(device, acc_tile, work.k_chain)) + device.level_latency_cycles(home_c) \
        + tile_out / device.noc_pe_bytes_per_cycle
    return MappingBreakdown(compute=compute, memory=memory, link=link, local=local, reduction=reduction,
                            issue=issue, fill=fill, drain=drain, level_bytes=level_bytes)


def stream_cycles(device, read_bytes: dict, write_bytes: dict, elements, dtype_bytes: int, pes: int) -> tuple:
    """A memory-bound operator spread data-parallel over ``pes`` PEs (elementwise,
    transpose, reductions, embedding lookups: section 6's "other operators"): every byte
    read and written once at its level's bandwidth, the work on the SIMD engines, the
    PE links carrying the bytes; overlapped, plus one read's latency. ``read_bytes`` /
    ``write_bytes``: level -> bytes. Returns (total cycles, the body's terms)."""
    levels = {}
    for source in (read_bytes, write_bytes):
        for level, nbytes in source.items():
            levels[level] = levels.get(level, 0.0) + float(nbytes)
    memory = max((nbytes / device.level_bytes_per_cycle(level) for level, nbytes in levels.items()), default=0.0)
    link = sum(levels.values()) / pes / device.noc_pe_bytes_per_cycle
    compute = float(simd_cycles(device, float(elements) / pes, dtype_bytes))
    latency = max((device.level_latency_cycles(level) for level in read_bytes), default=0)
    terms = {"memory": memory, "link": link, "compute": compute}
    return latency + device.dma_issue_cycles + max(terms.values()), terms


def gather_window(device, row_bytes: int, level: str, rate: float, simd: float, hops: int) -> int:
    """Rows the circular buffer of an embedding gather holds: enough reads in flight to
    cover one read's issue, latency, hops and transfer plus the pooling of a row while
    rows arrive one ``rate`` apart (section 7: with too few outstanding requests the
    latency is exposed), at most half a PE's local memory, at least two rows."""
    latency = (device.dma_issue_cycles + device.level_latency_cycles(level) + device.noc_hop_cycles * hops
               + float(read_transfer_cycles(device, row_bytes, level)))
    wanted = 1 + int(np.ceil((latency + simd) / max(rate, 1e-9)))
    return max(2, min(wanted, device.local_bytes // 2 // max(1, row_bytes)))


def gather_share(level: str, row_bytes: float, pooled_bytes: float, own_row_bytes: float) -> float:
    """Bytes the tables' level serves per byte of one PE's rows while the PEs gather: all
    PEs' rows (``row_bytes``), and the pooled rows written meanwhile when the tables share
    the SRAM with them."""
    return (row_bytes + (pooled_bytes if level == "sram" else 0.0)) / max(own_row_bytes, 1.0)


@dataclass(frozen=True)
class GatherWork:
    """One PE's share of an embedding gather (section 6's TBE on the PEs): ``rows`` table
    rows of ``row_bytes`` each pooled into ``samples`` output rows of ``sample_bytes``,
    after one read of its ``index_bytes`` of indices and offsets from SRAM; ``share`` is
    the bytes the tables' level serves per byte of this PE's rows (the PEs gathering at
    once), ``index_share`` the same for SRAM and the indices; ``window`` the rows its
    circular buffer holds."""

    rows: float
    row_bytes: int
    samples: int
    sample_bytes: int
    index_bytes: float
    level: str
    share: float
    index_share: float
    dim: int
    dtype_bytes: int
    window: int
    hops: int


def gather_pool_cycles(device, work: GatherWork) -> tuple[float, dict]:
    """The gather-and-pool program of one PE, in closed form (``irc.interpreter.mtia``
    runs it event by event): the indices arrive (``dma_arrival`` from SRAM); then one
    DMA command per row, issued ``dma_issue_cycles`` apart, each row streaming in behind
    the last; the SIMD engine adds each row into its bag's sum as it arrives, and frees
    its slot in the circular buffer; each sample's pooled row is written to SRAM once
    its last row is added. Rows arrive one ``rate`` apart (the slowest of the command
    issue, the row's transfer at the level's shared bandwidth, the SIMD add and the
    buffer's turnaround), so the last row is pooled ``(rows - 1) x rate + simd`` after
    the first arrives. Returns (cycles, terms)."""
    issue = float(device.dma_issue_cycles)
    xfer = float(read_transfer_cycles(device, work.row_bytes, work.level, work.share))
    simd = float(simd_cycles(device, work.dim, work.dtype_bytes))
    turnaround = (device.dma_issue_cycles + device.level_latency_cycles(work.level)
                  + device.noc_hop_cycles * work.hops + xfer + simd) / max(1, work.window)
    rate = max(issue, xfer, simd, turnaround)
    indices = dma_arrival(device, 0.0, 0.0, work.index_bytes, "sram", work.index_share, work.hops)
    if work.rows <= 0:
        return 0.0, {"issue": 0.0, "memory": 0.0, "compute": 0.0, "latency": 0.0}
    first = dma_arrival(device, indices, 0.0, work.row_bytes, work.level, work.share, work.hops)
    pooled = first + (work.rows - 1) * rate + simd
    drain = (device.dma_issue_cycles + device.level_latency_cycles("sram")
             + work.sample_bytes / device.noc_pe_bytes_per_cycle)
    total = pooled + drain
    terms = {"issue": work.rows * issue, "memory": work.rows * xfer, "compute": work.rows * simd,
             "latency": first + drain}
    return total, terms


# ---------------------------------------------------------------------------------------
# T10 plans over the NoC (the CostModel protocol)
# ---------------------------------------------------------------------------------------


class MtiaCostModel:
    """T10 compute-shift plans on an MTIA-family device: DPE compute, NoC rotations
    between PEs, partial sums over the reduction network, and the loads of each PE's
    partitions from (and the store of its output to) their home memory levels.

    ``homes``: per tensor of the operator (output first), "sram" or "dram"; every tensor
    in SRAM when absent (a registered cost model is built without arguments). ``sizes``:
    per tensor, its element size as loaded and stored (an INT8 matmul's INT32 or INT8
    output); the sub-task's element size for every tensor when absent."""

    name = "mtia"

    def __init__(self, homes: Sequence[str] | None = None, sizes: Sequence[int] | None = None):
        self.homes = tuple(homes) if homes is not None else None
        self.sizes = tuple(sizes) if sizes is not None else None

    def _home(self, v: int) -> str:
        return "sram" if self.homes is None or v >= len(self.homes) else self.homes[v]

    def _size(self, v: int, default: int) -> int:
        return default if self.sizes is None or v >= len(self.sizes) else self.sizes[v]

    def compute_cycles(self, device, task: SubTask) -> ArrayLike:
        """One step's sub-task on one PE: matmuls (and convolutions, as their MAC count)
        on the DPE in whole 32x32x32 blocks; everything else on the SIMD engine."""
        require_mtia(device)
        roles = task.roles
        if task.kind == "matmul":
            return dpe_cycles(device, roles["m"], roles["k"], roles["n"], task.dtype_bytes, roles["batch"])
        if task.kind == "conv":
            bm, bk, bn = device.dpe_block
            macs = _ceil_to(as_float_array(task.volume), bm * bk * bn)
            return macs / device.macs_per_cycle_for(task.dtype_bytes)
        return simd_cycles(device, task.volume, task.dtype_bytes)

    def shift_cycles(self, device, nbytes: ArrayLike) -> ArrayLike:
        """A rotation step: each PE sends ``nbytes`` to its ring neighbour over the NoC; a
        ring folded onto the mesh has neighbours at most two hops apart."""
        require_mtia(device)
        nbytes = as_float_array(nbytes)
        return np.where(nbytes > 0, 2 * device.noc_hop_cycles + nbytes / device.noc_pe_bytes_per_cycle, 0.0)

    def sync_cycles(self, device) -> float:
        require_mtia(device)
        return float(device.barrier_cycles)

    def op_time(self, device, work: OpWork) -> CostBreakdown:
        """compute = steps x the step's sub-task; shift = the partitions' loads from their
        home levels, the rotations and the output's store; sync = a barrier per shift
        event; reduction = partial sums over the reduction network."""
        require_mtia(device)
        b = work.subtask.dtype_bytes
        compute = as_float_array(work.steps) * self.compute_cycles(device, work.subtask)
        rotation = self.shift_cycles(device, as_float_array(work.shifted_bytes) / np.maximum(
            as_float_array(work.shift_events), 1)) * as_float_array(work.shift_events)
        sync = self.sync_cycles(device) * as_float_array(work.shift_events)
        load, store = self._load_store(device, work, b)
        copies = as_float_array(work.partial_copies)
        reduction = reduction_chain_cycles(device, as_float_array(work.out_resident_elems) * device.accumulator_bytes,
                                           copies)
        return CostBreakdown(compute=compute, shift=load + rotation + store, sync=sync, reduction=reduction)

    def _load_store(self, device, work: OpWork, b: int):
        """Each PE loads its partition of every input, replicas of one partition sharing
        a multicast read; the output's partitions (one per replica group) are stored."""
        cores = as_float_array(work.cores)
        geometry = work.geometry
        if geometry is None:
            # without the plan's geometry: the output partition only (a caller outside the
            # planner); inputs are assumed resident
            out = as_float_array(work.out_resident_elems) * self._size(0, b)
            store = out / device.noc_pe_bytes_per_cycle + device.level_latency_cycles(self._home(0))
            return np.zeros_like(store), store
        per_core = np.asarray(geometry.per_core)
        temporal = np.asarray(geometry.temporal)
        sharing = np.asarray(geometry.sharing)
        parts = temporal.prod(axis=-1)
        replicas = sharing // parts
        # the partition each PE holds, padded as the compute-shift program pads it: along
        # axis d the finest rotation's T_d steps of tau_d, of which a tensor split f_t ways
        # holds T_d / f_t
        steps = temporal.max(axis=-2)
        padded = _ceil_div(per_core, steps) * steps
        elements = []
        for v, dims in enumerate(geometry.tensor_dims):
            count = np.ones(per_core.shape[:-1])
            for dim in dims:
                terms = [padded[..., a] // temporal[..., v, a] for a in dim]
                count = count * (sum(terms) - (len(terms) - 1))
            elements.append(count)
        level_bytes = {"sram": 0.0, "dram": 0.0}
        ingress = 0.0
        latency = 0.0
        for v in range(1, len(elements)):
            per_pe = elements[v] * self._size(v, b)
            served = cores / (replicas[..., v] if device.has_multicast else 1)
            level_bytes[self._home(v)] = level_bytes[self._home(v)] + per_pe * served
            ingress = ingress + per_pe
            latency = np.maximum(latency, device.level_latency_cycles(self._home(v)))
        busiest = np.maximum(level_bytes["sram"] / device.level_bytes_per_cycle("sram"),
                             level_bytes["dram"] / device.level_bytes_per_cycle("dram"))
        load = latency + np.maximum(ingress / device.noc_pe_bytes_per_cycle, busiest)
        out_per_pe = elements[0] * self._size(0, b)
        writers = cores / np.maximum(replicas[..., 0], 1)
        store = device.level_latency_cycles(self._home(0)) + np.maximum(
            out_per_pe / device.noc_pe_bytes_per_cycle,
            out_per_pe * writers / device.level_bytes_per_cycle(self._home(0)))
        return load, store
