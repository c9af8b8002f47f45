"""A device description as data (DESIGN.md section 4).

A ``Device`` is everything the planner and the cost models need to know about a chip:
core count, per-core SRAM, the compute unit, and the exchange (link bandwidth, measured
shift throughput, barrier cost). Instances are loaded from TOML files by
``irc.devices.loader``; nothing in here is IPU-specific.

Two optional parts describe chips of ELK's kind (seeds/004 s2.1, s5 "Simulation
framework"): ``offchip``, an off-chip memory (HBM) whose controllers are nodes of the
exchange, and ``mesh``, a 2D-mesh exchange (each core linked to its 4 neighbours,
controllers on the mesh edges, dimension-order routing; the geometry is in
``irc.devices.topology``). A device without them is T10's all-on-chip IPU.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from irc.devices.family import ChipFamily
from irc.devices.schema import CHOICE, INTEGER, INTEGERS, MAX_NUMBER, MIN_POSITIVE, NAME, NUMBER, STRING, Field, Schema

MAX_CORES = 1 << 20
"""The most cores a device may have (as many as a device op may run on)."""

TOPOLOGIES = ("all-to-all", "mesh-2d")


def _positive(key: str, description: str, maximum: int = 1 << 40, **more) -> Field:
    return Field(key, INTEGER, description, minimum=1, maximum=maximum, **more)


def _count(key: str, description: str, **more) -> Field:
    return Field(key, INTEGER, description, minimum=0, maximum=1 << 40, **more)


def _rate(key: str, description: str, **more) -> Field:
    return Field(key, NUMBER, description, minimum=MIN_POSITIVE, maximum=MAX_NUMBER, **more)


SCHEMA = Schema("ipu", (
    Field("family", CHOICE, "the device family (absent: this one)", required=False, choices=("ipu",)),
    Field("name", NAME, "the device's name, as tools and #irc.target name it"),
    Field("description", STRING, "one line about the chip", required=False),
    _positive("cores.count", "cores usable by one operator (whole chips)", MAX_CORES),
    _positive("cores.per_chip", "cores of one chip; beyond them exchange crosses chips", MAX_CORES),
    _positive("cores.sram_bytes", "each core's private scratchpad, in bytes"),
    _rate("compute.clock_hz", "the clock, in Hz"),
    Field("compute.systolic", INTEGERS, "rows and columns of a core's matrix unit", minimum=1, maximum=1 << 20,
          length=(2, 2), shape="[rows, cols]"),
    _positive("compute.macs_per_cycle", "peak fp16 multiply-accumulates per cycle per core"),
    Field("interconnect.topology", CHOICE, "the exchange's shape", choices=TOPOLOGIES),
    _rate("interconnect.link_bytes_per_s", "nominal exchange bandwidth per core (per link on a mesh)"),
    _rate("interconnect.shift_cycles_per_byte", "measured shift throughput, cycles per byte"),
    _count("interconnect.sync_cycles", "cycles of one barrier"),
    _count("interconnect.syncs_per_shift", "barriers paid per shifted tensor per step"),
    _rate("interconnect.inter_chip_overhead", "multiplier on exchange when an op spans chips"),
    Field("interconnect.mesh", INTEGERS, "rows and columns of cores per chip (mesh-2d only)", required=False,
          minimum=1, maximum=MAX_CORES, length=(2, 2), shape="[rows, cols]"),
    Field("interconnect.link_latency_cycles", NUMBER, "cycles per hop (mesh) or per transfer", required=False,
          minimum=0, maximum=MAX_NUMBER),
    _positive("offchip.capacity_bytes", "off-chip memory (HBM) of all chips, in bytes", 1 << 50),
    _rate("offchip.bytes_per_s", "off-chip bandwidth of all chips, bytes per second"),
    _positive("offchip.controllers_per_chip", "HBM controllers of one chip (exchange nodes)", 1 << 16),
    _rate("offchip.inter_chip_bytes_per_s", "all inter-chip links together, bytes per second"),
    _rate("offchip.edge_port_bytes_per_s", "one link from an HBM controller to a mesh edge core, bytes per second "
          "(mesh-2d only; absent: the least rate at which each controller's ports carry its share of the HBM "
          "bandwidth, and at least interconnect.link_bytes_per_s)", required=False),
), optional_tables=("offchip",))
"""Every field of an IPU-kind device file (``ipu_mk2.toml``)."""

FLAT = {
    "cores": "cores.count", "cores_per_chip": "cores.per_chip", "sram_bytes": "cores.sram_bytes",
    "clock_hz": "compute.clock_hz", "systolic": "compute.systolic", "macs_per_cycle": "compute.macs_per_cycle",
    **{name: f"interconnect.{name}" for name in (
        "topology", "link_bytes_per_s", "shift_cycles_per_byte", "sync_cycles", "syncs_per_shift",
        "inter_chip_overhead", "mesh", "link_latency_cycles")},
}
"""A `Device` field's dotted key in a device file, where the two differ (an inline
``#irc.target`` description states the `Device` fields: `Device.fields`)."""


@dataclass(frozen=True)
class OffChipMemory:
    """Off-chip memory attached to the exchange (ELK s2.1, Figure 1): HBM controllers are
    exchange nodes that coalesce the cores' requests and send the data to the cores over
    the same links the cores use between themselves."""

    capacity_bytes: int             # all chips together
    bytes_per_s: float              # all chips together (IPU-POD4 with HBM3E: 16 TB/s)
    controllers_per_chip: int       # one per HBM stack; each serves bytes_per_s / controllers
    inter_chip_bytes_per_s: float   # all inter-chip links together (IPU-POD4: 640 GB/s)
    # On a mesh, one controller-to-edge-core link (ELK s5 attaches the controllers to the
    # mesh's edges but gives no rate for those ports); None: derived so the controllers'
    # ports together carry the HBM's bandwidth (``irc.devices.topology.edge_port_bytes_per_s``)
    edge_port_bytes_per_s: float | None = None


@dataclass(frozen=True)
class Device:
    """One inter-core connected chip (T10 section 2.1; seeds/003 "The Hardware")."""

    name: str
    description: str
    cores: int                      # cores usable by one operator
    cores_per_chip: int             # beyond this, exchange crosses chips
    sram_bytes: int                 # private scratchpad per core
    clock_hz: float
    systolic: tuple[int, int]       # (rows, cols) of the per-core matrix unit
    macs_per_cycle: int             # peak fp16 multiply-accumulates per cycle per core
    topology: str                   # "all-to-all" (only kind the planner costs today)
    link_bytes_per_s: float         # nominal per-core exchange bandwidth
    shift_cycles_per_byte: float    # measured shift throughput (IPU_COST_FACTS section 1)
    sync_cycles: int                # one barrier
    syncs_per_shift: int            # barriers paid per shifted tensor per step
    inter_chip_overhead: float      # multiplier on exchange when cores > cores_per_chip
    mesh: tuple[int, int] | None = None   # (rows, cols) per chip when topology is "mesh-2d"
    link_latency_cycles: float = 0.0      # per hop (mesh) or per transfer (all-to-all)
    offchip: OffChipMemory | None = None  # HBM, when the chip has any (ELK)

    @property
    def chips(self) -> int:
        return -(-self.cores // self.cores_per_chip)

    @property
    def hbm_controllers(self) -> int:
        """HBM controllers of all chips (0 without off-chip memory)."""
        return 0 if self.offchip is None else self.offchip.controllers_per_chip * self.chips

    def fields(self) -> dict[str, object]:
        """The description as flat fields (``offchip.bytes_per_s``), None ones left out:
        what ``#irc.target`` carries; ``irc.devices.device_from_fields`` reads it back,
        checked as a device file is."""
        flat: dict[str, object] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            if dataclasses.is_dataclass(value):
                for inner in dataclasses.fields(value):
                    if getattr(value, inner.name) is not None:
                        flat[f"{f.name}.{inner.name}"] = getattr(value, inner.name)
            else:
                flat[f.name] = value
        return flat

    @property
    def link_cycles_per_byte(self) -> float:
        """Cycles to move one byte at the nominal link bandwidth."""
        return self.clock_hz / self.link_bytes_per_s

    @property
    def peak_macs_per_s(self) -> float:
        """Whole-chip peak multiply-accumulates per second (compute roofline)."""
        return self.cores * self.macs_per_cycle * self.clock_hz

    def seconds(self, cycles: float) -> float:
        return cycles / self.clock_hz


def device_from_fields(fields) -> Device:
    """A `Device` from a file's (or description's) fields, which the loader has checked
    against `SCHEMA`; the checks between fields are errors naming one of them."""
    get = fields.value
    per_chip = get("cores.per_chip")
    topology = get("interconnect.topology")
    mesh = None
    if topology == "mesh-2d":
        if not fields.has("interconnect.mesh"):
            raise fields.error("interconnect.mesh", "missing field 'interconnect.mesh' (a mesh-2d topology's "
                                                     "[rows, cols])")
        mesh = tuple(get("interconnect.mesh"))
        if mesh[0] * mesh[1] != per_chip:
            raise fields.bad("interconnect.mesh", f"[rows, cols] with rows * cols = cores.per_chip ({per_chip})", list(mesh))
    elif fields.has("interconnect.mesh"):
        raise fields.bad("interconnect.mesh", 'absent unless interconnect.topology is "mesh-2d"', get("interconnect.mesh"))
    offchip = None
    if fields.has("offchip"):
        offchip = OffChipMemory(
            capacity_bytes=get("offchip.capacity_bytes"),
            bytes_per_s=float(get("offchip.bytes_per_s")),
            controllers_per_chip=get("offchip.controllers_per_chip"),
            inter_chip_bytes_per_s=float(get("offchip.inter_chip_bytes_per_s")),
            edge_port_bytes_per_s=(float(get("offchip.edge_port_bytes_per_s"))
                                   if fields.has("offchip.edge_port_bytes_per_s") else None),
        )
        if mesh is None and offchip.edge_port_bytes_per_s is not None:
            raise fields.bad("offchip.edge_port_bytes_per_s", 'absent unless interconnect.topology is "mesh-2d" '
                             "(the HBM controllers of an all-to-all exchange are nodes on it)",
                             offchip.edge_port_bytes_per_s)
        if mesh is not None:   # each controller sits on its own segment of the mesh's edge
            edge = mesh[0] * mesh[1] if min(mesh) <= 2 else 2 * (mesh[0] + mesh[1]) - 4
            if offchip.controllers_per_chip > edge:
                raise fields.bad("offchip.controllers_per_chip",
                                 f"at most the {edge} cores on the edge of the {mesh[0]}x{mesh[1]} mesh",
                                 offchip.controllers_per_chip)
    count = get("cores.count")
    if count % per_chip:
        raise fields.bad("cores.count", f"a multiple of cores.per_chip ({per_chip}): whole chips", count)
    rows, cols = get("compute.systolic")
    return Device(
        name=get("name"),
        description=get("description", ""),
        cores=count,
        cores_per_chip=per_chip,
        sram_bytes=get("cores.sram_bytes"),
        clock_hz=float(get("compute.clock_hz")),
        systolic=(rows, cols),
        macs_per_cycle=get("compute.macs_per_cycle"),
        topology=topology,
        link_bytes_per_s=float(get("interconnect.link_bytes_per_s")),
        shift_cycles_per_byte=float(get("interconnect.shift_cycles_per_byte")),
        sync_cycles=get("interconnect.sync_cycles"),
        syncs_per_shift=get("interconnect.syncs_per_shift"),
        inter_chip_overhead=float(get("interconnect.inter_chip_overhead")),
        mesh=mesh,
        link_latency_cycles=float(get("interconnect.link_latency_cycles", 0.0)),
        offchip=offchip,
    )


CHIP_FAMILY = ChipFamily(
    name="ipu",
    device_type=Device,
    schema=SCHEMA,
    flat=FLAT,
    device_from_fields=device_from_fields,
    target_reader="irc.target:check_ipu_target",
    compiled_with="compile it with irc-opt -p 'inference{{device={name}}}' (te -> rtensor -> shift -> device)",
    planner="irc.tools.irc_plan:PLANNER",
    inference="irc.passes.pipelines:ipu_inference",
    training="irc.passes.pipelines:ipu_training",
)
"""The IPU kind (T10's inter-core chips, ELK's with HBM or a mesh): a file with no
``family``, or ``family = "ipu"``."""
