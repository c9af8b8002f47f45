"""irc-plan --device mtia-v1 --cost mtia: one operator, a whole model, and the requests it
refuses with one diagnostic."""

import json

import pytest

from irc.planner import matmul_spec
from irc.planner.mtia import plan_operator
from irc.tools.irc_plan import run

FC = ["--expr", "C[m,n] += A[m,k] * B[k,n]", "--shape", "m=512,k=1024,n=256", "--dtype", "i8"]
MTIA = ["--device", "mtia-v1", "--cost", "mtia"]


def plan_tool(capsys, *args):
    status = run(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return status, out, err


def test_one_operator(capsys):
    status, out, _ = plan_tool(capsys, *FC, *MTIA)
    assert status == 0
    expected = plan_operator(matmul_spec(512, 1024, 256, dtype_bytes=1), "mtia-v1")
    assert f"predicted time: {expected.seconds * 1e6:.3f} us" in out
    assert "MTIA mapping: " in out and "T10 rotation: F_op=" in out
    assert "multicast A:" in out and "multicast B:" in out
    assert "homes: C sram, A sram, B sram" in out


def test_one_operator_as_json(capsys):
    status, out, _ = plan_tool(capsys, *FC, *MTIA, "--json")
    assert status == 0
    data = json.loads(out)
    assert data["chosen"] in ("mapping", "rotation")
    assert data["mapping"]["kind"] == "section-4"
    splits = data["mapping"]["splits"]
    assert splits["m"] * data["mapping"]["per_pe"]["m"] >= 512


def test_a_model(capsys):
    status, out, _ = plan_tool(capsys, "--model", "bert-tiny", "--layers", "1", "--seq", "64", *MTIA)
    assert status == 0
    assert "on mtia-v1 (8x8 PEs), cost model mtia" in out
    assert "stream over 64 PEs" in out and "total:" in out


@pytest.mark.parametrize("args, message", [
    ([*FC, "--device", "mtia-v1"], "plan it with --cost mtia"),
    ([*FC, "--device", "tiny4", "--cost", "mtia"], "prices MTIA-family devices"),
    ([*FC, *MTIA, "--pareto"], "--pareto and --explain"),
    (["--model", "bert-tiny", "--layers", "1", *MTIA, "--max-batch"], "--max-batch"),
])
def test_requests_it_cannot_serve_are_one_diagnostic(capsys, args, message):
    status, out, err = plan_tool(capsys, *args)
    assert status == 1
    assert message in err and err.startswith("error:")


def test_the_ipu_pipeline_refuses_an_mtia_target_by_name():
    from xdsl.dialects.builtin import ModuleOp

    from irc.lowering.target import TargetError, resolve_target

    with pytest.raises(TargetError, match="mtia family, which the te -> rtensor -> shift -> device pipeline"):
        resolve_target(ModuleOp([]), "mtia-v1", "mtia")


def test_a_built_in_dlrm_with_its_operator_breakdown(capsys):
    status, out, _ = plan_tool(capsys, "--model", "dlrm-lc", "--batch", "256", *MTIA)
    assert status == 0
    assert "lookups: 133120 lookups over 64 PEs, tables in dram" in out      # 26 tables x 256 bags x 20
    breakdown = next(line for line in out.splitlines() if line.startswith("operator breakdown: "))
    shares = [float(part.split()[-1].rstrip("%")) for part in breakdown[len("operator breakdown: "):].split(", ")]
    assert {"EB", "FC", "Quantize", "Dequantize", "Concat", "BatchMatMul", "Others"} == {
        part.split()[0] for part in breakdown[len("operator breakdown: "):].split(", ")}
    assert sum(shares) == pytest.approx(100, abs=0.5)
