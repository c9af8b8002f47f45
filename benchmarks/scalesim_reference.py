"""Reference figures from the real SCALE-Sim (the `scalesim` package, 3.0.0) for irc's
``memory=scalesim`` model (irc.cost.igo_scalesim): each GEMM's DRAM reads of the ifmap and
filter buffers and writes of the ofmap buffer, and its compute cycles, as SCALE-Sim 3
reports them in its default estimate-bandwidth ("CALC") mode.

SCALE-Sim needs numpy < 2, so it runs in a virtual environment of its own, outside the
repository (this script imports nothing of irc):

    python3.11 -m venv /tmp/scalesim-venv
    /tmp/scalesim-venv/bin/pip install scalesim==3.0.0 'numpy<2'
    /tmp/scalesim-venv/bin/python benchmarks/scalesim_reference.py -o tests/data/scalesim/npu_gemms.json

The GEMMs (`GEMMS`) are the dX and dW GEMMs of layers of IGO's workloads at the paper's
batch sizes, on both NPUs of its Table 3 (45x45 PEs, 1 MB of scratchpad; 128x128, 8 MB),
output- and weight-stationary. SCALE-Sim's three buffers are each a third of the NPU's
scratchpad, in whole KB of f16 elements (SCALE-Sim counts words; irc.cost.igo_scalesim.
buffer_words is the same rule): 170 KB on the edge NPU, 1365 KB on the server NPU. In
SCALE-Sim's notation a GEMM is ifmap (M x K) times filter (K x N): dX = dY · Wᵀ is
(M, K, N) = (batch rows, layer N, layer K), dW = Xᵀ · dY is (layer K, batch rows,
layer N). ``--random n`` adds n random small GEMMs on small buffers (cross-checks of the
model's corner cases; tests/cost/test_igo_scalesim.py reads them from the file too).
Not run by the test suite: SCALE-Sim takes minutes for these GEMMs.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import sys
import tempfile
import time
from importlib.metadata import version

from scalesim.layout_utils import layouts
from scalesim.scale_config import scale_config
from scalesim.single_layer_sim import single_layer_sim
from scalesim.topology_utils import topologies

NPUS = {"npu-edge": {"rows": 45, "cols": 45, "kb": 170}, "npu-server": {"rows": 128, "cols": 128, "kb": 1365}}
"""IGO's Table 3 and each buffer's KB of f16 elements: spm_bytes_per_core // 3 // 2 // 1024."""

LAYERS = {
    "npu-edge": [("res conv3 3x3 (batch 4)", 3136, 1152, 128), ("bert-tiny FFN out (batch 4)", 512, 1200, 312)],
    "npu-server": [("res conv4 3x3 (batch 8)", 1568, 2304, 256), ("bert-large FFN out (batch 8)", 1024, 4096, 1024)],
}
"""(name, M, K, N) of each layer's forward GEMM X(M,K)·W(K,N), as irc/workloads/igo.py builds them."""


def gemms() -> list[dict]:
    """Every GEMM of `LAYERS`: dX and dW of each layer, on its NPU, in both dataflows."""
    found = []
    for npu, layers in LAYERS.items():
        for name, m, k, n in layers:
            for dataflow in ("os", "ws"):
                for gradient, shape in (("dX", (m, n, k)), ("dW", (k, m, n))):
                    found.append({"npu": npu, "layer": {"name": name, "M": m, "K": k, "N": n}, "gradient": gradient,
                                  "dataflow": dataflow, "gemm": dict(zip("MKN", shape)), **NPUS[npu]})
    return found


def random_gemms(count: int, seed: int) -> list[dict]:
    """Small GEMMs on small arrays and buffers, where SCALE-Sim's windows roll over often."""
    rng = random.Random(seed)
    found = []
    for _ in range(count):
        rows = rng.choice([2, 3, 4, 8])
        found.append({"npu": None, "gradient": None, "dataflow": rng.choice(["os", "ws"]), "rows": rows,
                      "cols": rng.choice([rows, 2, 5]), "kb": rng.choice([1, 2, 3]),
                      "gemm": {"M": rng.randint(1, 300), "K": rng.randint(1, 300), "N": rng.randint(1, 60)}})
    return found


def run(entry: dict) -> dict:
    """SCALE-Sim 3's figures for one GEMM (one layer, fresh buffers)."""
    gemm = entry["gemm"]
    with tempfile.TemporaryDirectory() as folder:
        topology = os.path.join(folder, "gemm.csv")
        with open(topology, "w") as handle:
            handle.write("Layer,M,N,K,\n")
            handle.write(f"gemm,{gemm['M']},{gemm['N']},{gemm['K']},\n")
        config = scale_config()
        kb = entry["kb"]
        config.update_from_list(["irc", entry["rows"], entry["cols"], kb, kb, kb, 0, 10000000, 20000000,
                                 entry["dataflow"], "CALC", [10]])
        topo = topologies()
        topo.load_arrays(topofile=topology, mnk_inputs=True)
        layer = single_layer_sim()
        with contextlib.redirect_stdout(io.StringIO()):
            layer.set_params(layer_id=0, config_obj=config, topology_obj=topo, layout_obj=layouts(), verbose=False)
            layer.run()
            details = layer.get_detail_report_items()
            compute = layer.get_compute_report_items()
    return {**entry, "ifmap_reads": int(details[11]), "filter_reads": int(details[14]),
            "ofmap_writes": int(details[17]), "compute_cycles": int(compute[1])}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", required=True, help="JSON file to write")
    parser.add_argument("--random", type=int, default=0, help="also this many random small GEMMs")
    parser.add_argument("--seed", type=int, default=25)
    args = parser.parse_args(argv)
    entries = gemms() + random_gemms(args.random, args.seed)
    results = []
    for number, entry in enumerate(entries, 1):
        started = time.perf_counter()
        results.append(run(entry))
        print(f"[{number}/{len(entries)}] {entry['npu'] or 'random'} {entry['gradient'] or ''} {entry['dataflow']} "
              f"{entry['gemm']}: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    document = {"generator": "benchmarks/scalesim_reference.py", "scalesim": version("scalesim"),
                "mode": "CALC (estimate bandwidth)", "gemms": results}
    with open(args.output, "w") as handle:
        json.dump(document, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
