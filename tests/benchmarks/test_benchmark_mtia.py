"""benchmarks/mtia.py prints its tables (run as a script; loaded here from its path)."""

import importlib.util
from pathlib import Path

import pytest

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


@pytest.mark.slow
def test_the_gemm_dlrm_and_executed_sections_print(capsys):
    device = load_device("mtia-v1")
    bench.gemm_bench(device, quick=True)
    bench.dlrm(device, quick=True)
    bench.executed_dlrm(device)
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith(("fp16", "int8"))]
    assert len(rows) == 2
    for row in rows:
        # x roof is a fraction of the roofline; mapping-only is never faster than the best
        assert 0 < float(row[4]) <= 1.0 and float(row[6]) >= 1.0
    # Table III next to each DLRM's planned breakdown, whose shares add up to 100%
    for config in ("dlrm-lc", "dlrm-mc"):
        assert f"-- {config}:" in out
    table = [line.split() for line in out.splitlines() if line.split()[:1] and line.split()[0] in bench.TABLE_III]
    assert len(table) == 2 * len(bench.TABLE_III)
    for model in (table[:len(bench.TABLE_III)], table[len(bench.TABLE_III):]):
        assert abs(sum(float(row[1][:-1]) for row in model) - 100.0) < 0.5
    # the executed batch: every operator on the PEs, as planned, with its breakdown
    executed = next(line for line in out.splitlines() if "kernels (" in line)
    assert "0 op(s) on the host" in executed and "(ratio 1.000)" in executed
    breakdown = next(line for line in out.splitlines() if "executed operator breakdown:" in line)
    shares = [float(part.split()[-1][:-1]) for part in breakdown.split(":", 1)[1].split(",")]
    assert abs(sum(shares) - 100.0) < 0.5 and "EB" in breakdown and "FC" in breakdown
