"""Device family ``npu``: a systolic-array NPU with a software-managed scratchpad (SPM)
in front of DRAM (IGO §2.2, Table 3).

One or more cores, each an R x C systolic array, share one unified, double-buffered
SPM that holds any tensor's tiles (activations, weights, gradients, partial sums); DRAM
bandwidth and SPM size scale with the core count (§6.3). Files carry per-core values
and the core counts the part is sold with; ``with_cores`` gives the n-core variant.

Compute timing is SCALE-Sim's (the simulator IGO builds on): a GEMM of M x K by K x N
takes ``ceil(M/R) * ceil(N/C) * (K + R + C - 2)`` cycles output-stationary and
``ceil(K/R) * ceil(N/C) * (2R + C + M - 2)`` weight-stationary (folds do not overlap).
The dataflow is a field; absent, it is output-stationary, SCALE-Sim's default
configuration and the one in which a tile's partial sums stay in the array while the
reduction runs (what IGO's tile-by-tile accumulation of dX and dW assumes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

FAMILY = "npu"
DATAFLOWS = ("os", "ws")
"""Output-stationary, weight-stationary."""
DEFAULT_DATAFLOW = "os"


@dataclass(frozen=True)
class NpuDevice:
    """An NPU of IGO's Table 3 (or any like it)."""

    name: str
    description: str
    cores: int
    """Cores in this variant (each a systolic array; all share the SPM)."""
    core_counts: tuple[int, ...]
    """The core counts the part comes in (``with_cores`` accepts these)."""
    pe_rows: int
    pe_cols: int
    spm_bytes_per_core: int
    dram_bytes_per_s_per_core: float
    clock_hz: float
    dataflow: str = DEFAULT_DATAFLOW
    family: str = FAMILY

    @property
    def spm_bytes(self) -> int:
        """The whole scratchpad, shared by the cores."""
        return self.spm_bytes_per_core * self.cores

    @property
    def dram_bytes_per_s(self) -> float:
        return self.dram_bytes_per_s_per_core * self.cores

    @property
    def dram_bytes_per_cycle(self) -> float:
        return self.dram_bytes_per_s / self.clock_hz

    def with_cores(self, cores: int) -> NpuDevice:
        if cores not in self.core_counts:
            raise ValueError(
                f"{self.name} comes with {', '.join(map(str, self.core_counts))} cores, not {cores}"
            )
        return replace(self, cores=cores)

    def with_bandwidth(self, bytes_per_s_per_core: float) -> NpuDevice:
        return replace(self, dram_bytes_per_s_per_core=float(bytes_per_s_per_core))

    def gemm_cycles(self, m: int, k: int, n: int) -> int:
        """Cycles of an M x K by K x N GEMM on one core (SCALE-Sim's formulas)."""
        return gemm_cycles(m, k, n, self.pe_rows, self.pe_cols, self.dataflow)

    def dram_cycles(self, nbytes: float) -> float:
        return nbytes / self.dram_bytes_per_cycle


def gemm_cycles(m: int, k: int, n: int, rows: int, cols: int, dataflow: str) -> int:
    """SCALE-Sim's compute cycles of an M x K by K x N GEMM on a rows x cols array:
    output-stationary ``ceil(M/R) ceil(N/C) (K+R+C-2)``, weight-stationary
    ``ceil(K/R) ceil(N/C) (2R+C+M-2)``; 0 for an empty GEMM."""
    if min(m, k, n) <= 0:
        return 0
    if dataflow == "os":
        return math.ceil(m / rows) * math.ceil(n / cols) * (k + rows + cols - 2)
    if dataflow == "ws":
        return math.ceil(k / rows) * math.ceil(n / cols) * (2 * rows + cols + m - 2)
    raise ValueError(f"unknown dataflow '{dataflow}' (known: {', '.join(DATAFLOWS)})")


def device_from_fields(fields) -> NpuDevice:
    """The ``NpuDevice`` a parsed TOML file describes; ``fields`` is the loader's typed
    accessor, so a bad field is an error naming it (``spm.bytes_per_core``)."""
    rows, cols = fields.pair_of_positive_ints("compute.systolic")
    counts = fields._get("cores.counts", default=None)
    if counts is None:
        counts = [fields.positive_int("cores.count")]
    if not (isinstance(counts, list) and counts
            and all(isinstance(c, int) and not isinstance(c, bool) and c > 0 for c in counts)):
        raise fields._bad("cores.counts", "a non-empty list of positive integers", counts)
    cores = fields.positive_int("cores.count")
    if cores not in counts:
        raise fields._bad("cores.count", f"one of cores.counts {counts}", cores)
    dataflow = DEFAULT_DATAFLOW
    if fields._get("compute.dataflow", default=None) is not None:
        dataflow = fields.choice("compute.dataflow", DATAFLOWS)
    return NpuDevice(
        name=fields.string("name"),
        description=fields.string("description", default=""),
        cores=cores,
        core_counts=tuple(counts),
        pe_rows=rows,
        pe_cols=cols,
        spm_bytes_per_core=fields.positive_int("spm.bytes_per_core"),
        dram_bytes_per_s_per_core=fields.positive_number("dram.bytes_per_s_per_core"),
        clock_hz=fields.positive_number("compute.clock_hz"),
        dataflow=dataflow,
        family=fields.choice("family", (FAMILY,)),
    )


def device_from_values(values: dict) -> NpuDevice:
    """The ``NpuDevice`` of its fields by name (an ``irc.target``'s description);
    ``ValueError`` naming what is missing or unknown."""
    import dataclasses

    known = {f.name for f in dataclasses.fields(NpuDevice)}
    missing, unknown = sorted(known - set(values) - {"dataflow", "family"}), sorted(set(values) - known)
    if missing or unknown:
        raise ValueError(f"an NPU description lacks {', '.join(missing) or 'nothing'} and has unknown "
                         f"{', '.join(unknown) or 'nothing'}")
    fields = dict(values)
    fields["core_counts"] = tuple(fields["core_counts"])
    if fields.get("dataflow", DEFAULT_DATAFLOW) not in DATAFLOWS:
        raise ValueError(f"unknown dataflow '{fields['dataflow']}' (known: {', '.join(DATAFLOWS)})")
    return NpuDevice(**fields)
