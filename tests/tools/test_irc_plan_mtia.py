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


@pytest.mark.slow
def test_a_model(capsys):
    status, out, _ = plan_tool(capsys, "--model", "bert-tiny", "--layers", "1", "--seq", "64", *MTIA)
    assert status == 0
    assert "on mtia-v1 (8x8 PEs), cost model mtia" in out
    assert "stream over 64 PEs" in out and "total:" in out


@pytest.mark.parametrize("args, message", [
    ([*FC, "--device", "mtia-v1", "--cost", "t10"], "plan it with --cost mtia"),
    ([*FC, "--device", "tiny4", "--cost", "mtia"], "prices mtia-family devices; tiny4 is not one"),
    ([*FC, *MTIA, "--pareto"], "--pareto is an option of the ipu family's planner; mtia-v1 is of the mtia family"),
    ([*FC, "--device", "mtia-v1", "--cores", "2"], "--cores is an option of the npu family's planner"),
    (["--model", "bert-tiny", "--layers", "1", *MTIA, "--max-batch"], "--max-batch is an option of the ipu"),
])
def test_requests_it_cannot_serve_are_one_diagnostic(capsys, args, message):
    status, out, err = plan_tool(capsys, *args)
    assert status == 1
    assert message in err and err.startswith("error:")


def test_the_ipu_pipeline_refuses_an_mtia_target_by_name():
    from xdsl.dialects.builtin import ModuleOp

    from irc.target import TargetError, resolve_target

    with pytest.raises(TargetError, match="mtia family, which the te -> rtensor -> shift -> device pipeline"):
        resolve_target(ModuleOp([]), "mtia-v1", "mtia")


def test_a_built_in_dlrm_with_its_operator_breakdown(capsys):
    status, out, _ = plan_tool(capsys, "--model", "dlrm-lc", "--batch", "256", *MTIA)
    assert status == 0
    # 26 tables x 256 bags x 20, four samples per PE
    assert "lookups: 133120 lookups over 64 PEs (4 sample(s) each" in out and "tables in dram" in out
    breakdown = next(line for line in out.splitlines() if line.startswith("operator breakdown: "))
    shares = [float(part.split()[-1].rstrip("%")) for part in breakdown[len("operator breakdown: "):].split(", ")]
    assert {"EB", "FC", "Quantize", "Dequantize", "Concat", "BatchMatMul", "Others"} == {
        part.split()[0] for part in breakdown[len("operator breakdown: "):].split(", ")}
    assert sum(shares) == pytest.approx(100, abs=0.5)


EB_MLIR = """
func.func @main(%x: tensor<64x32xf32>, %w: tensor<32x64xf32> {irc.weight}, %table: tensor<1000x64xf32> {irc.weight},
                %idx: tensor<1280xi64>, %off: tensor<64xi64>, %s: tensor<64x10xf32>)
    -> (tensor<64x64xf32>, tensor<64x3xf32>, tensor<64x3xi64>) {
  %h = te.op "C[m,n] += A[m,k] * B[k,n]" (%x, %w) : (tensor<64x32xf32>, tensor<32x64xf32>) -> tensor<64x64xf32>
  %e = te.opaque "EmbeddingBag"(%table, %idx, %off) {mode = "sum"} : (tensor<1000x64xf32>, tensor<1280xi64>, tensor<64xi64>) -> tensor<64x64xf32>
  %y = te.op "Y[b,d] = X[b,d] + E[b,d]" (%h, %e) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %v, %i = te.opaque "TopK"(%s) {k = 3 : i64} : (tensor<64x10xf32>) -> (tensor<64x3xf32>, tensor<64x3xi64>)
  func.return %y, %v, %i : tensor<64x64xf32>, tensor<64x3xf32>, tensor<64x3xi64>
}
"""


def _eb_onnx(path):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="fc"),
             helper.make_node("TableBatchedEmbedding", ["tables", "idx", "off"], ["e"], name="tbe",
                              domain="irc.dlrm", rows=[600, 400]),
             helper.make_node("Concat", ["h", "e"], ["y"], name="join", axis=1)]
    graph = helper.make_graph(
        nodes, "eb",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 16]),
         helper.make_tensor_value_info("idx", TensorProto.INT64, [2 * 32 * 5]),
         helper.make_tensor_value_info("off", TensorProto.INT64, [2 * 32 + 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [32, 64 + 2 * 8])],
        [numpy_helper.from_array(rng.standard_normal((16, 64)).astype(np.float32), "w"),
         numpy_helper.from_array(rng.standard_normal((1000, 8)).astype(np.float32), "tables")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("irc.dlrm", 1)])
    onnx.save(model, path)


def test_a_model_plans_its_embedding_bags_and_lists_what_it_cannot(capsys, tmp_path):
    path = tmp_path / "eb.mlir"
    path.write_text(EB_MLIR)
    status, out, _ = plan_tool(capsys, "--model", str(path), *MTIA, "--json")
    assert status == 0
    data = json.loads(out)
    kinds = [op["kind"] for op in data["ops"]]
    assert kinds == ["matmul", "embedding", "elementwise"]
    bag = data["ops"][1]
    assert bag["name"] == "%e" and bag["lookups"] == 1280 and bag["homes"] == {"tables": "sram"}
    # priced by bytes moved: each PE's 20 rows of 256 B at its share of the SRAM's
    # 1000 B/cycle, i.e. all 1280 rows - and the 64 pooled rows of 256 B written into the
    # same SRAM meanwhile - at the SRAM's rate
    assert bag["terms"]["memory"] == pytest.approx((1280 + 64) * 256 / 1000)
    assert data["fallbacks"] == ['te.opaque "TopK": no tensor expression states it: a vendor kernel the host runs']
    status, out, _ = plan_tool(capsys, "--model", str(path), *MTIA)
    assert "lookups: 1280 lookups over 64 PEs (1 sample(s) each" in out and "tables in sram" in out
    assert 'left to the host/vendor fallback (1 te op(s) the planner cannot describe):' in out
    # the IPU kind's planner cannot price a lookup: it is listed, not dropped
    status, out, _ = plan_tool(capsys, "--model", str(path), "--device", "tiny16")
    assert status == 0
    assert 'te.opaque "EmbeddingBag": an embedding lookup' in out and 'te.opaque "TopK"' in out


def test_an_onnx_model_with_a_table_batched_embedding(capsys, tmp_path):
    path = tmp_path / "eb.onnx"
    _eb_onnx(str(path))
    status, out, _ = plan_tool(capsys, "--model", str(path), *MTIA, "--json")
    assert status == 0
    data = json.loads(out)
    embedding = [op for op in data["ops"] if op["kind"] == "embedding"]
    assert len(embedding) == 1 and embedding[0]["lookups"] == 2 * 32 * 5
    assert any(op["kind"] == "matmul" for op in data["ops"])
    assert data["fallbacks"] == []
    # the two tables' 1000 rows of 8 f32 are the weight the planner placed
    assert data["sram_weight_bytes"] == 16 * 64 * 4 + 1000 * 8 * 4
