"""The exchange's links, and where preload traffic from the HBM controllers goes over them.

ELK models the interconnect link by link (seeds/004 s4.3 "per-link transfer models", s5
"Simulation framework"): packets that share a link are served one after another, each at
the link's full bandwidth. Two topologies (s5, s6.1):

- ``all-to-all`` (IPU): every node (core or HBM controller) reaches every other directly;
  a transfer from a to b occupies a's egress port ``("out", a)`` and b's ingress port
  ``("in", b)``. A core's ports run at the device's link bandwidth; an HBM controller's
  egress at its share of the HBM bandwidth (the controllers are exchange nodes, s2.1).
- ``mesh-2d``: each core links to its 4 neighbours (one link per direction,
  ``("mesh", a, b)``); each chip's HBM controllers sit on the mesh's edges (ELK s5: "we
  attach HBM controllers to the edges of the mesh grid"), each feeding the free ports of
  whole edges (``controller_attachments``) through links at the edge-port rate
  (``edge_port_bytes_per_s``, a device field the paper does not state); a preload
  enters at the controller's edge core in its destination's row or column and travels
  straight in, so the edge ports share the traffic evenly (``controller_entry``);
  transfers take dimension-order routing (along the row first, then the column).

Nodes are ints: cores 0..cores-1, then controllers ``cores + k``. Every function here is a
pure function of a ``Device`` (cached per device), so the planner's delivery estimates and
the interpreter's contention model agree.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache

import numpy as np

from irc.devices.device import Device

Link = tuple  # ("in", node) | ("out", node) | ("mesh", from_core, to_core) | ("edge", controller, core)


def controller_node(device: Device, controller: int) -> int:
    return device.cores + controller


def chip_of(device: Device, node: int) -> int:
    if node >= device.cores:
        return (node - device.cores) // max(1, device.offchip.controllers_per_chip if device.offchip else 1)
    return node // device.cores_per_chip


def mesh_coords(device: Device, core: int) -> tuple[int, int]:
    """(row, col) of ``core`` in its chip's mesh."""
    rows, cols = device.mesh
    local = core % device.cores_per_chip
    return divmod(local, cols)


def _core_at(device: Device, chip: int, row: int, col: int) -> int:
    return chip * device.cores_per_chip + row * device.mesh[1] + col


def mesh_sides(rows: int, cols: int) -> list[tuple[str, list[tuple[int, int]]]]:
    """The mesh's four edges, each with its cores (row, col) in order: ``top`` and
    ``bottom`` rows, ``right`` and ``left`` columns (a corner core is on two edges: it has
    two free ports)."""
    return [("top", [(0, c) for c in range(cols)]), ("right", [(r, cols - 1) for r in range(rows)]),
            ("bottom", [(rows - 1, c) for c in range(cols)]), ("left", [(r, 0) for r in range(rows)])]


@lru_cache(maxsize=32)
def controller_attachments(device: Device) -> tuple[tuple[tuple[str, tuple[int, int]], ...], ...]:
    """Per HBM controller of one chip: the (edge, core) ports it feeds the mesh through.
    The edges are dealt out to the controllers in turn (one edge each with four
    controllers, opposite edges with two, each edge cut into equal runs when there are
    more than four): every edge core's free port on that edge is a link from the
    controller."""
    count = device.offchip.controllers_per_chip
    runs = -(-count // 4)
    parts = []
    for side, cores in mesh_sides(*device.mesh):
        parts += [(side, cores[k * len(cores) // runs:(k + 1) * len(cores) // runs]) for k in range(runs)]
    attached: list[list] = [[] for _ in range(count)]
    for index, (side, cores) in enumerate(parts):
        attached[index % count] += [(side, rc) for rc in cores]
    return tuple(tuple(a) for a in attached)


def controller_segments(device: Device) -> list[list[tuple[int, int]]]:
    """Per controller of one chip: the edge cores (row, col) it is attached to."""
    return [list(dict.fromkeys(rc for _, rc in attached)) for attached in controller_attachments(device)]


def controller_entry(device: Device, controller: int, row: int, col: int) -> tuple[int, int]:
    """Where controller ``controller``'s data for the core at (row, col) enters the mesh: the
    nearest of its edge cores in that core's column (on the top or bottom edge) or row
    (on the left or right edge), so the data travels straight in and each edge core
    feeds one line of cores (the mesh's edge ports share the HBM's traffic evenly); if
    none lines up (an edge cut among several controllers), its nearest edge core."""
    attached = controller_attachments(device)[controller]
    lined = [rc for side, rc in attached if (rc[1] == col if side in ("top", "bottom") else rc[0] == row)]
    return min(lined or [rc for _, rc in attached], key=lambda rc: (abs(rc[0] - row) + abs(rc[1] - col), rc))


def mesh_route(device: Device, src: int, dst: int) -> list[Link]:
    """Dimension-order route between two cores of one chip: along the row, then the column."""
    (r0, c0), (r1, c1) = mesh_coords(device, src), mesh_coords(device, dst)
    chip = src // device.cores_per_chip
    links: list[Link] = []
    r, c = r0, c0
    while c != c1:
        step = 1 if c1 > c else -1
        links.append(("mesh", _core_at(device, chip, r, c), _core_at(device, chip, r, c + step)))
        c += step
    while r != r1:
        step = 1 if r1 > r else -1
        links.append(("mesh", _core_at(device, chip, r, c), _core_at(device, chip, r + step, c)))
        r += step
    return links


def on_mesh(device) -> bool:
    """Whether ``device``'s exchange is a 2D mesh (a device family without an exchange
    topology, MTIA's PE grid, is priced all-to-all)."""
    return getattr(device, "topology", "all-to-all") == "mesh-2d" and getattr(device, "mesh", None) is not None


def route(device: Device, src: int, dst: int) -> list[Link]:
    """The links a transfer from node ``src`` to node ``dst`` occupies."""
    if not on_mesh(device):
        return [("out", src), ("in", dst)]
    if src >= device.cores:  # an HBM controller: enter at its edge core in dst's row or column
        controller = (src - device.cores) % device.offchip.controllers_per_chip
        chip = dst // device.cores_per_chip
        entry_core = _core_at(device, chip, *controller_entry(device, controller, *mesh_coords(device, dst)))
        return [("out", src), ("edge", src, entry_core)] + mesh_route(device, entry_core, dst)
    if chip_of(device, src) != chip_of(device, dst):
        return [("chip", chip_of(device, src), chip_of(device, dst))]
    return mesh_route(device, src, dst)


def link_bytes_per_s(device: Device, link: Link) -> float:
    """A link's bandwidth: a core's port or mesh link at the device's link rate, an HBM
    controller's egress at its share of the HBM bandwidth, a controller's link to a mesh
    edge core at the edge-port rate (``edge_port_bytes_per_s``)."""
    kind = link[0]
    if kind == "chip":
        return device.offchip.inter_chip_bytes_per_s / max(1, device.chips) if device.offchip else device.link_bytes_per_s
    if kind == "out" and link[1] >= device.cores:
        return controller_bytes_per_s(device)
    if kind == "edge":
        return edge_port_bytes_per_s(device)
    return device.link_bytes_per_s


@lru_cache(maxsize=32)
def edge_port_bytes_per_s(device: Device) -> float:
    """The rate of one link from an HBM controller to a mesh edge core: the device's
    ``offchip.edge_port_bytes_per_s``, or, when the file does not state it (ELK s5 puts the
    controllers on the mesh's edges and gives no rate for those ports), the least rate at
    which every controller's ports together carry its share of the HBM bandwidth (the
    HBM's bandwidth must reach the chip, s2.1, s6.1: the controller with the fewest edge
    cores sets it), and no less than a mesh link (a port is at least a link of the chip)."""
    if device.offchip is None:
        raise ValueError(f"device '{device.name}' has no off-chip memory")
    if device.offchip.edge_port_bytes_per_s is not None:
        return device.offchip.edge_port_bytes_per_s
    if device.mesh is None:
        return device.link_bytes_per_s
    fewest = min(len(cores) for cores in controller_segments(device))
    return max(device.link_bytes_per_s, controller_bytes_per_s(device) / fewest)


def controller_bytes_per_s(device: Device) -> float:
    """One HBM controller's bandwidth (the HBM's total over all controllers)."""
    if device.offchip is None:
        raise ValueError(f"device '{device.name}' has no off-chip memory")
    return device.offchip.bytes_per_s / device.hbm_controllers


@lru_cache(maxsize=32)
def preload_link_shares(device: Device) -> dict[Link, float]:
    """Bytes crossing each link of chip 0 when every core of the chip receives one byte
    from the HBM, evenly sliced over the chip's controllers (ELK s5: tensors are sliced
    evenly across HBM modules, each chip's partitions in its own HBM), each core's byte
    sent to it alone. Chips are alike."""
    return dict(zip(*_preload_table(device)[:2]))


@lru_cache(maxsize=32)
def _preload_table(device: Device):
    """Per link of chip 0 that preloads cross: the link, its bytes per byte to every core
    (``preload_link_shares``), the most of them any one core receives through it, its
    bandwidth, and whether exchange transfers between cores use it (``_core_side``)."""
    if device.offchip is None:
        raise ValueError(f"device '{device.name}' has no off-chip memory")
    count = device.offchip.controllers_per_chip
    share = 1.0 / count
    loads: Counter = Counter()
    most: Counter = Counter()
    for core in range(device.cores_per_chip):
        mine: Counter = Counter()
        for k in range(count):
            for link in route(device, controller_node(device, k), core):
                mine[link] += share
        for link, amount in mine.items():
            loads[link] += amount
            most[link] = max(most[link], amount)
    links = list(loads)
    return (links, np.array([loads[link] for link in links]), np.array([most[link] for link in links]),
            np.array([link_bytes_per_s(device, link) for link in links]),
            np.array([_core_side(device, link) for link in links], dtype=bool))


def hbm_cut_link_bytes_per_s(device: Device) -> float:
    """The least mesh link rate at which the exchange delivers the chip's HBM share into
    its interior: when every core receives its own bytes from the HBM (evenly over the
    controllers, ``preload_link_shares``), the most loaded mesh link (on ipu-mk2-hbm-mesh a
    row link out of the left or right edge column, carrying a quarter of 45 of its row's
    46 cores' bytes) carries its share of ``offchip.bytes_per_s`` (the rate the mesh devices
    state as ``interconnect.link_bytes_per_s``; ``benchmarks/elk_mesh.py`` scales it with
    the NoC bandwidth)."""
    if not on_mesh(device):
        raise ValueError(f"device '{device.name}' has no mesh (interconnect.topology \"mesh-2d\")")
    links, shares, _, _, _ = _preload_table(device)
    busiest = max(share for link, share in zip(links, shares) if link[0] == "mesh")
    return float(busiest) * device.offchip.bytes_per_s / device.cores_per_chip


def replication(device: Device, bytes_per_core: float, hbm_bytes: float) -> float:
    """How many cores receive each byte a preload reads from HBM on average (its bytes to
    every core over its distinct bytes; at least 1)."""
    delivered = bytes_per_core * device.cores
    return max(1.0, delivered / hbm_bytes) if hbm_bytes > 0 else 1.0


def multicast_link_bytes(device: Device, replicas: float = 1.0) -> dict[Link, float]:
    """Bytes crossing each link of chip 0 per byte a preload delivers to every core, when
    each byte read from HBM reaches ``replicas`` cores on average and is broadcast (ELK
    s2.2, Figure 3 (b): the HBM controllers broadcast shared data; s4.3: a chunk shared by
    4 cores is broadcast to them): a link carries its unicast bytes over the replicas, but
    at least what the one core receiving the most through it receives."""
    links, shares, most, _, _ = _preload_table(device)
    return dict(zip(links, _multicast(shares, most, replicas)))


def _multicast(shares, most, replicas: float):
    return np.maximum(shares / max(1.0, replicas), most)


def preload_seconds_per_byte(device: Device, replicas: float = 1.0) -> float:
    """Seconds the exchange needs to deliver one byte to every core from the HBM, at its
    most loaded link, each HBM byte broadcast to ``replicas`` cores (the exchange's side
    of a preload; the HBM's own side is ``bytes / offchip.bytes_per_s``)."""
    _, shares, most, rates, _ = _preload_table(device)
    return float((_multicast(shares, most, replicas) / rates).max())


def preload_seconds(device: Device, bytes_per_core: float, hbm_bytes: float) -> float:
    """A preload's duration (ELK s4.2): the larger of the HBM roofline (``hbm_bytes`` read
    once) and the exchange's delivery of ``bytes_per_core`` to every core (replicas
    broadcast, ``multicast_link_bytes``), plus one route's latency."""
    if device.offchip is None:
        raise ValueError(f"device '{device.name}' has no off-chip memory")
    if hbm_bytes <= 0 and bytes_per_core <= 0:
        return 0.0
    hops = 1 if device.mesh is None else 1 + (device.mesh[0] + device.mesh[1]) // 2
    latency = hops * device.link_latency_cycles / device.clock_hz
    per_byte = preload_seconds_per_byte(device, replication(device, bytes_per_core, hbm_bytes))
    return max(hbm_bytes / device.offchip.bytes_per_s, bytes_per_core * per_byte) + latency


def _mesh_flows(device: Device, sources, nbytes, destinations):
    """The flows of a mesh transfer within one chip, as (rows, cols, r0, c0, r1, c1, bytes)."""
    rows, cols = device.mesh
    per_chip = device.cores_per_chip
    src = np.asarray(sources, dtype=np.int64)
    dst = np.arange(len(src)) if destinations is None else np.asarray(destinations, dtype=np.int64)
    weights = np.broadcast_to(np.asarray(nbytes, dtype=np.float64), src.shape)
    keep = (src != dst) & (src // per_chip == dst // per_chip) & (dst < per_chip)
    src, dst, weights = src[keep] % per_chip, dst[keep] % per_chip, weights[keep]
    r0, c0 = np.divmod(src, cols)
    r1, c1 = np.divmod(dst, cols)
    return rows, cols, r0, c0, r1, c1, weights


def _mesh_tables(rows, cols, r0, c0, r1, c1, weights):
    """Per direction, the bytes on each link: along rows (east, west: [rows, cols + 1],
    entry c the link between columns c and c + 1), then along the destination's column
    (south, north: [cols, rows + 1]). Vectorised: per line, a flow adds its bytes to the
    line's links between its ends (difference arrays)."""
    def spread(shape, lines, begin, end, weight):
        # np.add.at's sums, in the same order (every +weight, then every -weight), by bincount
        cells = np.concatenate([lines * shape[1] + begin, lines * shape[1] + end])
        table = np.bincount(cells, np.concatenate([weight, -weight]), shape[0] * shape[1]).reshape(shape)
        return np.cumsum(table, axis=1)

    east, west = c1 > c0, c1 < c0
    south, north = r1 > r0, r1 < r0
    return (spread((rows, cols + 1), r0[east], c0[east], c1[east], weights[east]),
            spread((rows, cols + 1), r0[west], c1[west], c0[west], weights[west]),
            spread((cols, rows + 1), c1[south], r0[south], r1[south], weights[south]),
            spread((cols, rows + 1), c1[north], r1[north], r0[north], weights[north]))


def mesh_busiest(device: Device, sources, nbytes, destinations=None) -> tuple[float, int]:
    """``mesh_link_bytes``' busiest link's bytes and longest route's hops, without listing
    every link (what pricing a transfer needs)."""
    rows, cols, r0, c0, r1, c1, weights = _mesh_flows(device, sources, nbytes, destinations)
    if not len(r0):
        return 0.0, 0
    east, west, south, north = _mesh_tables(rows, cols, r0, c0, r1, c1, weights)
    busiest = max(float(east[:, :cols - 1].max(initial=0.0)), float(west[:, :cols - 1].max(initial=0.0)),
                  float(south[:, :rows - 1].max(initial=0.0)), float(north[:, :rows - 1].max(initial=0.0)))
    return busiest, int((np.abs(c1 - c0) + np.abs(r1 - r0)).max())


def mesh_link_bytes(device: Device, sources, nbytes, destinations=None) -> tuple[dict[Link, float], int]:
    """An exchange transfer on a 2D mesh where core ``c`` receives ``nbytes`` (one number,
    or one per core) from core ``sources[c]`` (``c`` itself: nothing moves; with
    ``destinations``, flow ``i`` goes from ``sources[i]`` to ``destinations[i]``): the bytes
    each link of the chip carries along the dimension-order routes (``mesh_route``, every
    packet of a link served in turn), and the longest route's hops. Transfers between
    chips (priced by the device's inter-chip overhead) are left out; chips are alike, so
    chip 0's links stand for all."""
    rows, cols, r0, c0, r1, c1, weights = _mesh_flows(device, sources, nbytes, destinations)
    if not len(r0):
        return {}, 0
    east, west, south, north = _mesh_tables(rows, cols, r0, c0, r1, c1, weights)
    loads: dict[Link, float] = {}
    for table, step in ((east, 1), (west, -1)):
        for r, c in zip(*np.nonzero(table[:, :cols] > 0)):
            a, b = (c, c + 1) if step > 0 else (c + 1, c)
            if b < cols:
                loads[("mesh", int(r * cols + a), int(r * cols + b))] = float(table[r, c])
    for table, step in ((south, 1), (north, -1)):
        for c, r in zip(*np.nonzero(table[:, :rows] > 0)):
            a, b = (r, r + 1) if step > 0 else (r + 1, r)
            if b < rows:
                loads[("mesh", int(a * cols + c), int(b * cols + c))] = float(table[c, r])
    hops = int((np.abs(c1 - c0) + np.abs(r1 - r0)).max())
    return loads, hops


def exchange_links(device: Device, sources, nbytes, destinations=None) -> dict[Link, float]:
    """The bytes each link of chip 0 carries in an exchange transfer (as
    ``mesh_link_bytes``): on an all-to-all exchange a flow occupies its source's egress
    and its destination's ingress port."""
    if on_mesh(device):
        return mesh_link_bytes(device, sources, nbytes, destinations)[0]
    src = np.asarray(sources, dtype=np.int64)
    dst = np.arange(len(src)) if destinations is None else np.asarray(destinations, dtype=np.int64)
    weights = np.broadcast_to(np.asarray(nbytes, dtype=np.float64), src.shape)
    keep = (src != dst) & (dst < device.cores_per_chip) & (src < device.cores_per_chip)
    loads: dict[Link, float] = {}
    for kind, nodes in (("out", src[keep]), ("in", dst[keep])):
        totals = np.bincount(nodes, weights=weights[keep], minlength=device.cores_per_chip)
        for node in np.flatnonzero(totals):
            loads[(kind, int(node))] = float(totals[node])
    return loads


def exchange_bytes(device: Device, sources, nbytes, destinations=None) -> float:
    """What an exchange transfer (core ``c`` receives ``nbytes`` from ``sources[c]``) costs,
    in bytes one core would send alone at the device's shift rate: on an all-to-all
    exchange each core's port carries its own bytes (the largest ``nbytes``); on a mesh
    the busiest link's bytes (links shared by several routes serve them in turn, ELK s5),
    plus the longest route's hop latency as the bytes that time would carry."""
    if not on_mesh(device):
        return float(np.max(nbytes)) if np.size(nbytes) else 0.0
    busiest, hops = mesh_busiest(device, sources, nbytes, destinations)
    if busiest <= 0:
        return 0.0
    return busiest + hops * device.link_latency_cycles / device.shift_cycles_per_byte


def _core_side(device: Device, link: Link) -> bool:
    """A link exchange transfers between cores can use (a core's port or a mesh link), not
    an HBM controller's egress or its attachment to the mesh edge."""
    kind = link[0]
    if kind in ("in", "out"):
        return link[1] < device.cores
    return kind == "mesh"


def preload_pressure_per_byte(device: Device, replicas: float = 1.0) -> float:
    """Cycles of link time a preload takes on the busiest link cores also exchange over,
    per byte it delivers to every core (``multicast_link_bytes`` over that link's rate):
    on an all-to-all exchange a core's ingress port, on a mesh the busiest mesh link."""
    _, shares, most, rates, core_side = _preload_table(device)
    if not core_side.any():
        return 0.0
    return float((_multicast(shares, most, replicas)[core_side] / rates[core_side]).max() * device.clock_hz)


def preload_pressure(device: Device, bytes_per_core: float, cycles: float, hbm_bytes: float | None = None) -> float:
    """The share of its busiest core-side link a preload of ``bytes_per_core`` to every core
    (of ``hbm_bytes`` distinct: replicas broadcast; None: no replicas) takes while it runs
    for ``cycles`` (at most 1: a preload never outruns its links, ``preload_seconds``)."""
    if cycles <= 0 or bytes_per_core <= 0:
        return 0.0
    replicas = 1.0 if hbm_bytes is None else replication(device, bytes_per_core, hbm_bytes)
    return min(1.0, bytes_per_core * preload_pressure_per_byte(device, replicas) / cycles)


LINK_SHARES = (1.0, 0.9, 0.7, 0.5)
"""The preload link shares (θ) ELK-Dyn and ELK-Full search (``paced_preload``): 1 (unpaced)
and the NoC load thresholds ELK's artifact tries (``LOAD_NOC_THRESHOLD``, 0.9, 0.7, 0.5)."""


def paced_preload(cycles: float, pressure: float, share: float = 1.0) -> tuple[float, float]:
    """A preload of ``cycles`` taking ``pressure`` of its busiest core-side link, paced to
    at most ``share`` of it (ELK's artifact's NoC load threshold θ: the load duration is
    max(HBM time, link time / θ)): where its pressure exceeds ``share`` it streams at
    ``share`` and lasts ``pressure / share`` times longer, the same link time, leaving the
    rest of the link to the operators' transfers meanwhile. Returns (cycles, pressure)."""
    if share >= 1.0 or pressure <= share:
        return cycles, pressure
    return cycles * pressure / share, share


def window_stretch(excess: float, profile) -> float:
    """How far an operator's window stretches when the exchange link it shares with
    preloads is oversubscribed (``operator_contention``): the least C >= 0 with
    C >= ``excess`` + the preload traffic that falls in the C extra cycles, where
    ``profile`` lists the (length, pressure) segments after the window, in the order the
    window grows into them (no preload beyond them). Within a segment the deficit shrinks
    by 1 - pressure per cycle; a saturating preload (pressure 1) must be waited out."""
    if excess <= 0:
        return 0.0
    stretched, deficit = 0.0, float(excess)
    for length, pressure in profile:
        if length <= 0:
            continue
        gain = 1.0 - pressure
        if gain > 0 and deficit <= gain * length:
            return stretched + deficit / gain
        deficit -= gain * length
        stretched += length
    return stretched + deficit


def _overlap(a: float, b: float, intervals) -> float:
    return sum(max(0.0, min(b, end) - max(a, start)) for start, end in intervals)


def _link_excess(busy, transfer_cycles: float, flows) -> float:
    """The link time the operator's transfers and the preloads' traffic in its ``busy``
    intervals need beyond the window's length."""
    nominal = sum(e - s for s, e in busy)
    return transfer_cycles - nominal + sum(p * _overlap(s, e, busy) for s, e, p in flows)


def preload_yield(busy, transfer_cycles: float, flows) -> tuple[int, float] | None:
    """ELK's artifact's other contention policy (``delay_comp=False``): the operator keeps
    its window and the preloads yield the link to its transfers instead of the operator
    waiting (``operator_contention``). The preload traffic that does not fit the window
    (its excess link time X) is carried after it: the last preload streaming in the
    window (``flows``: (start, end, pressure), serial in time) ends X / its pressure later,
    as its pace takes, and every preload after it starts and ends as much later (HBM
    loads are serial). Returns (that preload's index in ``flows``, the delay), or None
    when the window's demand fits it or no preload streams in it (the operator's own
    transfers overflow it: ``operator_contention`` then)."""
    busy = [(s, e) for s, e in busy if e > s]
    if not busy or transfer_cycles <= 0:
        return None
    streaming = [(s, e, p) for s, e, p in flows if e > s and p > 0]
    excess = _link_excess(busy, transfer_cycles, streaming)
    if excess <= 0:
        return None
    last = max((k for k, (s, e, p) in enumerate(flows) if e > s and p > 0 and _overlap(s, e, busy) > 0),
               default=None)
    return None if last is None else (last, excess / flows[last][2])


def operator_contention(busy, transfer_cycles: float, flows) -> float:
    """ELK's interconnect contention for one operator (seeds/004 s3.3, s4.3: "to estimate
    the contention overhead on each interconnect link, ELK divides total traffic by link
    bandwidth"; Figure 18's "interconnect" time). The operator runs in the ``busy``
    intervals ((start, end), nominal cycles E in all) and its exchange transfers (shifts,
    relayouts, the distribution phase) keep the busiest shared link busy for
    ``transfer_cycles`` of them; each preload in ``flows`` ((start, end, pressure), serial
    in time) takes ``pressure`` of that link while it runs. Preload traffic interleaves
    with the operator's into the link's idle time (s3.3), so nothing is lost while the
    link's demand in the window fits it; when it does not, the operator waits for the
    link: the HBM stream keeps its pace (stalling it would delay every later load) and
    the window grows by the excess, into which the running preloads keep streaming.
    Returns the extra cycles."""
    busy = [(s, e) for s, e in busy if e > s]
    if not busy or transfer_cycles <= 0:
        return 0.0
    end = max(e for _, e in busy)
    flows = sorted((f for f in flows if f[1] > f[0] and f[2] > 0), key=lambda f: f[0])
    excess = _link_excess(busy, transfer_cycles, flows)
    profile, at = [], end
    for s, e, p in flows:
        if e <= at:
            continue
        if s > at:
            profile.append((s - at, 0.0))
        profile.append((e - max(s, at), p))
        at = e
    return window_stretch(excess, profile)


def preloaded_contention(nominal: float, transfer_cycles: float, loads) -> float:
    """``operator_contention`` as ELK's scheduler estimates it for an executing op and the
    ops it preloads (s4.2, Figure 10: preload number p overlaps op i's execution with the
    preloads of the next p ops): their ``loads`` ((cycles, pressure), the latest in
    preload order first) stream back to back up to the op's end, and a longer window
    grows back into the earlier ones."""
    if transfer_cycles <= 0:
        return 0.0
    segments, covered, base = [], 0.0, 0.0
    for cycles, pressure in loads:
        if cycles <= 0:
            continue
        inside = min(cycles, max(0.0, nominal - covered))
        base += pressure * inside
        if cycles > inside:
            segments.append((cycles - inside, pressure))
        covered += cycles
    return window_stretch(transfer_cycles - nominal + base, segments)


def chip_link_bytes_per_s(device: Device) -> float:
    """One chip's share of the inter-chip links (``offchip.inter_chip_bytes_per_s`` is
    all of the device's chips' together: IPU-POD4's 640 GB/s, ipu-mk2-hbm's quarter)."""
    if device.offchip is None or not device.offchip.inter_chip_bytes_per_s:
        raise ValueError(f"device '{device.name}' has no inter-chip links (offchip.inter_chip_bytes_per_s)")
    return device.offchip.inter_chip_bytes_per_s / device.chips


def allreduce_cycles(device: Device, nbytes: float, chips: int) -> float:
    """Cycles of a ring all-reduce of ``nbytes`` of partial sums held by each of ``chips``
    chips (tensor parallelism, ELK s5 over IPU-POD4): 2 (chips - 1) steps (a
    reduce-scatter, then an all-gather), each chip sending nbytes / chips per step over its
    share of the inter-chip links (``chip_link_bytes_per_s``), each step closed by one
    barrier (``sync_cycles``). 0 on one chip."""
    if chips <= 1 or nbytes <= 0:
        return 0.0
    steps = 2 * (chips - 1)
    sent = steps * nbytes / chips
    return sent / chip_link_bytes_per_s(device) * device.clock_hz + steps * device.sync_cycles
