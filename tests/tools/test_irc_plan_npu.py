"""irc-plan --device npu-edge|npu-server (cost model igo; issue 25, item 6): one operator
and a whole model priced by irc.cost.igo, the backward pair with --order, and the
requests it refuses with one diagnostic naming the option or the layer."""

import json
from pathlib import Path

import pytest

from irc.cost.igo import Layer
from irc.planner.igo import evaluate
from irc.devices import load_device
from irc.tools.irc_plan import run

FC = ["--expr", "C[m,n] += A[m,k] * B[k,n]", "--shape", "m=96,k=64,n=80"]
CRUMB = Path(__file__).resolve().parents[1] / "filecheck/passes/igo-to-npu/Inputs/npu_crumb.toml"


def plan_tool(capsys, *args):
    status = run(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and "internal error" not in err
    return status, out, err


@pytest.mark.parametrize("device,cores", [("npu-edge", None), ("npu-server", "4")])
def test_one_operator_is_the_igo_models_forward_gemm(capsys, device, cores):
    status, out, _ = plan_tool(capsys, *FC, "--device", device, *(["--cores", cores] if cores else []), "--json")
    assert status == 0
    data = json.loads(out)
    npu = load_device(device).with_cores(int(cores or 1))
    expected = evaluate(Layer(96, 64, 80, 2), npu, "forward")
    assert data["cost_model"] == "igo" and data["gemm"] == [96, 64, 80]
    assert data["cycles"] == pytest.approx(expected.cycles) and data["dram_bytes"] == expected.dram_bytes
    assert tuple(data["tiles"]) == (expected.tiling.tm, expected.tiling.tk, expected.tiling.tn)


def test_backward_pair_with_order_cost_is_never_worse_than_unfused(capsys):
    status, out, _ = plan_tool(capsys, *FC, "--device", "npu-edge", "--order", "cost", "--json")
    assert status == 0
    back = json.loads(out)["backward"]
    assert back["cycles"] <= back["unfused_cycles"]
    status, out, _ = plan_tool(capsys, *FC, "--device", "npu-edge", "--order", "sequential")
    assert status == 0 and "backward pair (dX, dW): order sequential" in out and "(+0.0% time saved)" in out


def test_a_model_op_by_op(capsys, tmp_path):
    model = tmp_path / "mlp.mlir"
    model.write_text("""func.func @main(%x: tensor<16x8xf32>, %w1: tensor<8x8xf32> {irc.weight}, %w2: tensor<4x8xf32> {irc.weight}) -> tensor<16x4xf32> {
  %h = te.op "Y[m,n] += X[m,k] * W[k,n]" (%x, %w1) : (tensor<16x8xf32>, tensor<8x8xf32>) -> tensor<16x8xf32>
  %g = te.op "Y[m,n] = relu(X[m,n])" (%h) : (tensor<16x8xf32>) -> tensor<16x8xf32>
  %y = te.op "Y[m,n] += X[m,k] * W[n,k]" (%g, %w2) : (tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<16x4xf32>
  func.return %y : tensor<16x4xf32>
}""")
    status, out, _ = plan_tool(capsys, "--model", str(model), "--device", "npu-server", "--json")
    assert status == 0
    data = json.loads(out)
    rows = data["rows"]
    assert [r["gemm"] for r in rows] == [[16, 8, 8], None, [16, 8, 4]]
    assert rows[1]["dram_bytes"] == 2 * 16 * 8 * 4   # relu reads and writes 16x8 f32 once
    assert data["cycles"] == pytest.approx(sum(r["cycles"] for r in rows))
    status, out, _ = plan_tool(capsys, "--model", "bert-tiny", "--layers", "1", "--device", "npu-edge")
    assert status == 0 and "cost model igo" in out and "2 x GEMM (128, 64, 128)" in out


@pytest.mark.parametrize("args, message", [
    (["--device", "npu-edge", "--cores", "2"], "error: --cores: npu-edge comes with 1 cores, not 2"),
    (["--device", "npu-server", "--cores", "16"], "error: --cores: npu-server comes with 1, 2, 4, 8 cores, not 16"),
    (["--device", "npu-edge", "--memory", "dram"], "error: --memory: unknown memory model 'dram'; known: irc, scalesim"),
    (["--device", "npu-edge", "--order", "fastest"], "error: --order: unknown order 'fastest'; known: cost, paper"),
    (["--device", "npu-edge", "--cost", "t10"], "error: device npu-edge is an NPU: plan it with --cost igo"),
    (["--device", "npu-edge", "--pareto"], "error: --pareto is an option of the ipu family's planner; npu-edge is of the npu family"),
    (["--device", "ipu-mk2", "--cores", "2"], "error: --cores is an option of the npu family's planner; ipu-mk2 is of the ipu family"),
    (["--device", "ipu-mk2", "--cost", "igo"], "error: cost model 'igo' prices npu-family devices; ipu-mk2 is not one"),
    (["--device", str(CRUMB), "--dtype", "f32"], "error: layer 'C' does not fit npu-crumb's scratchpad: one step "
                                                 "needs 12 bytes of scratchpad but 8 are available"),
])
def test_bad_npu_input_is_one_diagnostic(capsys, args, message):
    status, out, err = plan_tool(capsys, *FC, *args)
    assert status == 1 and out == ""
    assert message in err and err.count("error:") == 1, err
