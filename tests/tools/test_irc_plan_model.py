"""irc-plan --model: the per-op report, its JSON, the baselines, --max-batch, the fit
error, fallback listing, --plot's missing-matplotlib message and a silent progress bar
when piped."""

import json
import subprocess
import sys

import numpy as np
import pytest
from xdsl.context import Context

from irc.compile import planned_model_cycles
from irc.devices import load_device
from irc.frontend.onnx_import import import_model
from irc.lowering.te_to_rtensor import PRELOADED_ATTR, RTensorPartition

from irc.planner.baselines_model import fastest_bound, roller_plan, vgm_plan
from irc.planner.model import ModelFitError, check_fits
from irc.lowering.model_from_ir import function_model, plan_function
from irc.planner.op_table import FrontierCache
from irc.runner import find_function, parse_module
from irc.tools.irc_plan import run
from irc.workloads.bert import bert_model
from irc.workloads.graphs import OPTConfig, build_opt_decoder

from tests.programs import FALLBACK, MLP3, mlp


def plan_tool(capsys, *args):
    status = run([str(a) for a in args])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return status, out, err


@pytest.fixture
def mlp_file(tmp_path):
    path = tmp_path / "mlp.mlir"
    path.write_text(MLP3)
    return path


def expected_decision(text, device="tiny16"):
    found = function_model(find_function(parse_module(text, "x.mlir"), None).function)
    return found.model, plan_function(found.model, FrontierCache(device))


def test_report_lists_every_op_and_the_totals(capsys, mlp_file):
    status, out, _ = plan_tool(capsys, "--model", mlp_file, "--device", "tiny16")
    assert status == 0
    model, decision = expected_decision(MLP3)
    lines = out.splitlines()
    assert lines[0].startswith("model main: 6 ops (2 distinct), 6144 B of weights, on tiny16 (16 cores")
    header = next(i for i, line in enumerate(lines) if line.split()[:3] == ["#", "op", "kind"])
    rows = lines[header + 1 : header + 7]
    shares = []
    for i, (row, op, chosen) in enumerate(zip(rows, model.ops, decision.ops)):
        fields = row.split()
        assert fields[:3] == [str(i), op.name, op.spec.kind]
        assert float(fields[3]) == pytest.approx(chosen.seconds * 1e6, abs=1e-3)
        assert f"F_op=[{','.join(map(str, chosen.active.op_factors))}]" in row
        assert ("idle W:" in row) == bool(op.weights)
        shares.append(float(fields[6].rstrip("%")))
    assert sum(shares) == pytest.approx(100, abs=0.5)
    total = next(line for line in lines if line.startswith("total: "))
    assert total.startswith(f"total: {decision.seconds * 1e6:.3f} us (execute ")
    assert any(line.startswith("memory per core: idle ") for line in lines)


def test_json_report_is_the_decision(capsys, mlp_file):
    status, out, _ = plan_tool(capsys, "--model", mlp_file, "--device", "tiny16", "--json")
    assert status == 0
    data = json.loads(out)
    model, decision = expected_decision(MLP3)
    assert data["report"] == "irc" and data["device"] == "tiny16"
    assert data["seconds"] == pytest.approx(decision.seconds)
    assert len(data["ops"]) == len(data["rows"]) == 6
    assert sum(op["share"] for op in data["ops"]) == pytest.approx(1.0)
    assert [r["name"] for r in data["rows"]] == [op.name for op in model.ops]
    assert data["per_op_seconds"] >= data["seconds"] * (1 - 1e-12)
    assert data["fallbacks"] == []


@pytest.mark.parametrize("name, function", [("vgm", vgm_plan), ("roller", roller_plan), ("fastest", fastest_bound)])
def test_baselines_in_the_same_cost_model(capsys, mlp_file, name, function):
    status, out, _ = plan_tool(capsys, "--model", mlp_file, "--device", "tiny16", "--baseline", name, "--json")
    assert status == 0
    data = json.loads(out)
    model, decision = expected_decision(MLP3)
    expected = function(model, "tiny16", "t10")
    assert data["report"] == name
    assert data["seconds"] == pytest.approx(expected.seconds)
    assert [r["seconds"] for r in data["rows"]] == pytest.approx([op.seconds for op in expected.ops])
    if name == "fastest":
        assert data["seconds"] <= decision.seconds
    status, text, _ = plan_tool(capsys, "--model", mlp_file, "--device", "tiny16", "--baseline", name)
    assert status == 0 and f"{name} baseline: " in text
    assert f"total: {expected.seconds * 1e6:.3f} us" in text


def test_model_that_does_not_fit_gives_bytes(capsys, tmp_path):
    path = tmp_path / "big.mlir"
    path.write_text(mlp([64, 64, 64, 64], tokens=8, relu=False))
    status, out, err = plan_tool(capsys, "--model", path, "--device", "tiny4")
    assert status == 1 and out == ""
    assert err.startswith("error: model 'main' does not fit on tiny4: its weights need 6144 bytes per core at rest")
    assert err.rstrip().endswith("(needed 6144 bytes per core, available 4096)")


def test_fallback_ops_are_listed(capsys, tmp_path):
    path = tmp_path / "fallback.mlir"
    path.write_text(FALLBACK)
    status, out, _ = plan_tool(capsys, "--model", path, "--device", "tiny16")
    assert status == 0
    assert "left to the host/vendor fallback (2 te op(s) the planner cannot describe):" in out
    assert "  G[i,j] = E[I[i],j] * 2: the planner cannot describe it (dimension 0 of E" in out


@pytest.mark.slow
def test_max_batch_of_a_builtin_model(capsys):
    status, out, _ = plan_tool(capsys, "--model", "bert-tiny", "--seq", "16", "--device", "tiny16", "--max-batch", "--json")
    assert status == 0
    best = json.loads(out)["max_batch"]
    assert best >= 1
    check_fits(bert_model(2, best, 16, 128, 2, 512), "tiny16")
    with pytest.raises(ModelFitError):
        check_fits(bert_model(2, best + 1, 16, 128, 2, 512), "tiny16")


def test_max_batch_of_an_onnx_model_with_a_symbolic_batch(capsys, tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((32, 32)).astype(np.float32), f"w{i}") for i in range(2)]
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("MatMul", ["r", "w1"], ["y"])]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 32])], inits)
    path = tmp_path / "mlp.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    status, out, _ = plan_tool(capsys, "--model", path, "--device", "tiny4", "--max-batch", "--json")
    assert status == 0
    best = json.loads(out)["max_batch"]
    status, out, _ = plan_tool(capsys, "--model", path, "--device", "tiny4", "--batch", best, "--json")
    assert status == 0 and json.loads(out)["model"] == "mlp"
    status, _, err = plan_tool(capsys, "--model", path, "--device", "tiny4", "--batch", best + 1)
    assert status == 1 and "does not fit on tiny4" in err


def _onnx_chain(path, width, layers, inputs_shape):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((width, width)).astype(np.float32), f"w{i}")
             for i in range(layers)]
    names = ["x"] + [f"h{i}" for i in range(layers - 1)] + ["y"]
    nodes = [helper.make_node("MatMul", [names[i], f"w{i}"], [names[i + 1]]) for i in range(layers)]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, inputs_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_max_batch_on_a_chip_with_hbm_is_what_batch_plans(capsys, tmp_path):
    """On a chip with off-chip memory a model larger than SRAM is planned with ELK (as
    --batch does); --max-batch used to test only the SRAM fit and say such a model does
    not fit even at batch 1."""
    pytest.importorskip("onnx")
    path = _onnx_chain(tmp_path / "chain.onnx", 256, 4, ["N", 256])   # 1 MiB of weights: tiny16-hbm's SRAM
    status, out, err = plan_tool(capsys, "--model", path, "--device", "tiny16-hbm", "--max-batch", "--json")
    assert status == 0, err
    best = json.loads(out)["max_batch"]
    assert best >= 1
    status, out, _ = plan_tool(capsys, "--model", path, "--device", "tiny16-hbm", "--batch", best)
    assert status == 0 and "per run" in out   # ELK's plan
    status, _, err = plan_tool(capsys, "--model", path, "--device", "tiny16-hbm", "--batch", best + 1)
    assert status == 1 and "cannot run" in err, err


def test_input_shape_fixes_a_dimension_symbol(capsys, tmp_path):
    """`--input-shape seq=8` fixes that symbol; the others take the batch (it used to be
    dropped: every symbol took the batch), and an import failure says what they took."""
    pytest.importorskip("onnx")
    path = _onnx_chain(tmp_path / "chain.onnx", 8, 1, ["batch", "seq", 8])

    def rows(*flags):
        status, out, err = plan_tool(capsys, "--model", path, "--device", "tiny16", "--json", *flags)
        assert status == 0, err
        return json.loads(out)["rows"]

    assert rows("--input-shape", "seq=4", "--batch", "2") == rows("--input-shape", "x=2x4x8")
    assert rows("--input-shape", "seq=4", "--batch", "2") != rows("--batch", "2")
    bad = _onnx_chain(tmp_path / "bad.onnx", 8, 1, ["batch", 7])   # 7 columns meet an 8-row weight
    status, _, err = plan_tool(capsys, "--model", bad, "--device", "tiny16", "--batch", "3")
    assert status == 1 and "(imported with batch = 3)" in err, err


def test_max_batch_needs_a_batch_parametric_source(capsys, mlp_file):
    status, _, err = plan_tool(capsys, "--model", mlp_file, "--max-batch")
    assert status == 1
    assert "has fixed shapes, so its batch cannot be varied; --max-batch needs a batch-parametric source" in err
    assert "bert-base" in err


def test_bad_requests_are_one_line(capsys, mlp_file):
    for args in [(), ("--model", mlp_file, "--expr", "C[i] = A[i]")]:
        with pytest.raises(SystemExit) as caught:
            run([str(a) for a in args])
        assert caught.value.code == 1
        assert capsys.readouterr().err.startswith("error: give either --expr (one operator) or --model (a whole model)")
    for args, message in [
        (("--model", "gpt-7"), "'gpt-7' is neither a .mlir or .onnx file nor a built-in model"),
        (("--model", "missing.mlir"), "cannot read missing.mlir"),
        (("--model", "bert-tiny", "--seq", "0"), "--seq must be positive"),
    ]:
        status, _, err = plan_tool(capsys, *args)
        assert status == 1 and message in err, (args, err)


def test_options_of_the_other_mode_are_refused_not_ignored(capsys, mlp_file, tmp_path):
    """irc-translate's `--shape input_ids=1x8` given to irc-plan --model used to be
    ignored (the model planned at its default shapes), as were --expr's options with
    --model, --model's with --expr, and a built-in model's --seq/--layers with a file."""
    for args, message in [
        (("--model", mlp_file, "--shape", "x=2x8"), "--shape applies to --expr (one operator), not to --model; "
                                                     "fix an ONNX input's shape with --input-shape NAME=DIMS"),
        (("--model", mlp_file, "--pareto"), "--pareto applies to --expr"),
        (("--model", mlp_file, "--dtype", "f32"), "--dtype applies to --expr"),
        (("--expr", "C[i] = A[i]", "--shape", "i=4", "--batch", "2"), "--batch applies to --model"),
        (("--expr", "C[i] = A[i]", "--shape", "i=4", "--input-shape", "x=2"), "--input-shape applies to --model"),
        (("--expr", "C[i] = A[i]", "--shape", "i=4", "--direction", "artifact"), "--direction applies to --model"),
    ]:
        with pytest.raises(SystemExit) as caught:
            run([str(a) for a in args])
        assert caught.value.code == 1
        err = capsys.readouterr().err
        assert message in err and err.count("error:") == 1, (args, err)
    for args, message in [
        (("--model", mlp_file, "--seq", "4"), "--seq sets the size of a built-in model"),
        (("--model", mlp_file, "--input-shape", "x=2x32"), "is not an .onnx file"),
        (("--model", "bert-tiny", "--input-shape", "x=2"), "bert-tiny is a built-in model"),
    ]:
        status, _, err = plan_tool(capsys, *args)
        assert status == 1 and message in err, (args, err)


def test_onnx_shape_errors_name_the_input_shape_flag(capsys, tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])])
    path = tmp_path / "relu.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    status, _, err = plan_tool(capsys, "--model", path, "--input-shape", "z=2")
    assert status == 1 and "--input-shape names 'z', which is not a graph input" in err, err


@pytest.mark.slow
def test_plot_without_matplotlib_says_how_to_get_it(capsys, mlp_file, tmp_path):
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        status, _, err = plan_tool(capsys, "--model", mlp_file, "--device", "tiny16", "--plot", tmp_path / "p.png")
        assert status == 1
        assert err.strip() == "error: --plot needs matplotlib, which is not installed: pip install matplotlib"
    else:
        status, out, _ = plan_tool(capsys, "--model", mlp_file, "--device", "tiny16", "--plot", tmp_path / "p.png")
        assert status == 0 and (tmp_path / "p.png").stat().st_size > 0


@pytest.mark.slow
def test_progress_bar_is_silent_when_piped(mlp_file):
    done = subprocess.run(
        [sys.executable, "-m", "irc.tools.irc_plan", "--model", str(mlp_file), "--device", "tiny16"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith("model main: 6 ops")


def test_elk_plan_is_rtensor_partitions(tmp_path, capsys):
    """On a chip with HBM, ``irc-plan --model`` reports the time ``rtensor-partition``
    plans for the same .mlir file (``irc.planned_cycles``): the attention mask, an
    argument that is not a weight, is priced as its own load into its reader's execute
    layout by both (`irc.lowering.model_from_ir.argument_loads`; priced inside the
    weight's load, irc-plan said 90,125.2 cycles where the compiler planned 90,138.0)."""
    config = OPTConfig(batch=1, seq=8, hidden=128, heads=4, ffn=512, vocab=64, positions=64, layers=1)
    text = str(import_model(build_opt_decoder(config)).module)
    path = tmp_path / "opt.mlir"
    path.write_text(text)
    module = parse_module(text, str(path))
    RTensorPartition(device="tiny16-hbm").apply(Context(), module)
    assert PRELOADED_ATTR in find_function(module, None).function.attributes   # planned with ELK
    status, out, _ = plan_tool(capsys, "--model", path, "--device", "tiny16-hbm", "--json")
    assert status == 0
    reported = json.loads(out)["seconds"] * load_device("tiny16-hbm").clock_hz
    assert reported == pytest.approx(planned_model_cycles(module), rel=1e-9)
