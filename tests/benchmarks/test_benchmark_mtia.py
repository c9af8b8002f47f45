"""benchmarks/mtia.py prints its tables (run as a script; loaded here from its path)."""

import importlib.util
from pathlib import Path

from irc.devices import load_device

_PATH = Path(__file__).parents[2] / "benchmarks" / "mtia.py"
_SPEC = importlib.util.spec_from_file_location("benchmark_mtia", _PATH)
bench = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bench)


def test_the_embedding_and_other_operator_tables_print(capsys):
    device = load_device("mtia-v1")
    bench.tbe_bench(device, quick=True)
    bench.other_ops(device)
    out = capsys.readouterr().out
    assert "GB/s" in out and "% roof" in out
    for name in ("BatchMatMul", "Concat", "Transpose", "Tanh", "Quantize", "Dequantize"):
        assert name in out
    # every row's bandwidth fraction is a percentage no plan exceeds
    fractions = [float(cell[:-1]) for line in out.splitlines() for cell in line.split() if cell.endswith("%")
                 and cell[:-1].replace(".", "").isdigit()]
    assert fractions and all(0 < f <= 100.0 for f in fractions)
