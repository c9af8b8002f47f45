"""benchmarks/models_table.py builds the models it says it builds: valid `ModelSpec`s whose
weights add up to the published parameter counts (2-byte elements), batch-parametric; and
its two paths, ONNX through the importer and OpSpecs, agree on a small model."""

import importlib.util
import sys
from pathlib import Path

import pytest

# benchmarks/ is not a package on the path (xDSL installs a top-level `benchmarks`),
# so benchmarks/models_table.py is run as a script and loaded here from its path.
_PATH = Path(__file__).parents[2] / "benchmarks" / "models_table.py"
_SPEC = importlib.util.spec_from_file_location("benchmark_models_table", _PATH)
table = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = table   # its worker processes find their task function by module name
_SPEC.loader.exec_module(table)
MODELS, format_row = table.MODELS, table.format_row

PARAMETERS = {
    # encoder/decoder weights the builders model (biases folded away), in millions
    "bert-base-s128": 12 * (4 * 768 * 768 + 2 * 768 * 3072 + 2 * 768) / 1e6,
    "bert-large-s128": 24 * (4 * 1024 * 1024 + 2 * 1024 * 4096 + 2 * 1024) / 1e6,
    "vit-base": 85.0 + (768 * 768 + 768 * 1000) / 1e6,
    "resnet-50": 25.5,
    "gpt2-small-s128": 85.0 + 50257 * 768 / 1e6,
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_builders_make_valid_batch_parametric_models(name):
    one, two = MODELS[name](1), MODELS[name](2)
    assert len(one.ops) == len(two.ops) > 50
    assert one.weight_bytes() == two.weight_bytes()          # weights do not grow with the batch
    assert sum(op.spec.iteration_volume for op in two.ops) > sum(op.spec.iteration_volume for op in one.ops)
    if name in PARAMETERS:
        assert one.weight_bytes() / 2 / 1e6 == pytest.approx(PARAMETERS[name], rel=0.03)
    assert any(op.producers for op in one.ops)


def test_a_row_prints_with_missing_baselines():
    row = {"model": "m", "batch": 4, "ops": 10, "host_ops": 2, "irc_ms": 1.5, "vgm_ms": None, "roller_ms": 3.0,
           "speedup_vgm": None, "speedup_roller": 2.0, "sram_used": 0.5, "host_io_share": 0.125,
           "compile_s": 1.0, "peak_rss_mb": 100, "baseline_wins": 0}
    text = format_row(row)
    assert text.split() == ["m", "4", "10[2]", "1.500", "n/a", "3.000", "n/a", "2.00", "0", "50.0%", "12.50%", "1.0",
                            "100"]


def test_baseline_wins_tell_trades_from_losses(capsys):
    """A win where irc's own fastest plan beats the baseline is a trade of the model-wide
    plan (memory when the op is memory-bound, else relayouts); one where it does not is a
    loss of irc's plan space, and the summary counts each."""
    from types import SimpleNamespace as NS

    model = NS(ops=[NS(name=n) for n in ("norm", "softmax", "bias", "gemm")])
    planned = [NS(fastest_seconds=f, memory_bound=m) for f, m in ((2e-6, True), (2e-6, False), (4.5e-6, False),
                                                                  (1e-6, False))]
    decision = NS(ops=[NS(seconds=s) for s in (5e-6, 5e-6, 5e-6, 1e-6)], model_plan=NS(ops=planned))
    vgm = NS(name="vgm", ops=[NS(seconds=s) for s in (3e-6, 3e-6, 4e-6, 2e-6)])
    wins = table.baseline_wins(model, decision, [vgm])
    assert wins["count"] == 3 and wins["traded"] == {"memory": 1, "relayouts": 1}
    assert wins["worst"][0] == "norm" and wins["worst"][1:3] == pytest.approx([5.0, 3.0])
    table.print_baseline_wins([{"model": "m", "batch": 1, "baseline_wins": 3, "traded_wins": wins["traded"],
                                "worst_op": wins["worst"]}])
    assert "3 op(s) (1 traded for memory, 1 for relayouts, 1 lost)" in capsys.readouterr().out


def small_resnet(batch):
    """A two-block ResNet stage (a strided block and a plain one) with its stem conv, both
    as the ONNX graph the table imports and as the OpSpecs of its cross-check."""
    from irc.workloads.graphs.graph import GraphBuilder
    from irc.workloads.graphs.resnet import _conv_bn, resnet_stage

    g = GraphBuilder("small_resnet", dtype="float16")
    x = g.input("pixel_values", g.elem, [batch, 3, 32, 32])
    x = _conv_bn(g, x, 3, 16, 3, 2, "conv1", True)
    x = resnet_stage(g, x, 16, 8, 2, 2, "layer1")
    g.output("out", x, [batch, 32, 8, 8])
    ops = [table._conv("stem", batch, 3, 16, 16, 3, stride=2)]
    channels, size = 16, 16
    for block, stride in enumerate((2, 1)):
        out = size // stride
        ops.append(table._conv(f"b{block}.conv1", batch, channels, 8, size, 1))
        ops.append(table._conv(f"b{block}.conv2", batch, 8, 8, out, 3, stride=stride))
        ops.append(table._conv(f"b{block}.conv3", batch, 8, 32, out, 1))
        if block == 0:
            ops.append(table._conv(f"b{block}.down", batch, channels, 32, out, 1, stride=stride))
        channels, size = 32, out
    return g.model(), table.ModelSpec("small-resnet", tuple(ops))


@pytest.mark.slow
def test_onnx_and_opspec_paths_agree_on_a_small_model():
    from irc.planner.op_table import FrontierCache

    onnx_model, direct = small_resnet(2)
    imported = table.ImportedModel("small-resnet", onnx_model)
    assert imported.fallbacks == 0
    cache = FrontierCache("ipu-mk2", "t10")
    check = table.cross_check(imported.spec, direct, cache)
    assert check["heavy_ops_agree"]
    assert check["heavy_time_ratio"] == pytest.approx(1.0, rel=1e-9)
    # the imported graph also holds the batch-norms, ReLUs and padding the OpSpecs fold away
    assert len(imported.spec.ops) > len(direct.ops)
    assert imported.edge_bytes == 2 * (2 * 3 * 32 * 32 + 2 * 32 * 8 * 8)


@pytest.mark.slow
def test_the_table_plans_what_the_importer_produced():
    """One row through the whole path: ONNX import, Algorithm 1, baselines, host I/O."""
    from irc.planner.op_table import FrontierCache

    onnx_model, direct = small_resnet(1)
    imported = table.ImportedModel("small-resnet", onnx_model)
    cache = FrontierCache("ipu-mk2", "t10")
    row = table.run_row("small-resnet", 1, imported, cache, 0.0, direct)
    assert row["ops"] == len(imported.spec.ops)
    assert row["heavy_ops_agree"]
    assert 0 < row["host_io_share"] < 1
    assert row["irc_ms"] > row["opspec_irc_ms"]   # the extra ops cost time
    assert row["conv_searches"] >= 4


@pytest.mark.slow
@pytest.mark.parametrize("name, device", [("bert-2-layers-f16", "ipu-mk2"), ("gpt2-lm-head", "tiny16"),
                                          ("resnet", "tiny16")])
def test_the_host_io_column_is_what_the_compiled_model_spends(name, device):
    """The table's host I/O (from the plan, without compiling) equals the interpreted
    ``report.cycles["host_io"]`` of the compiled model: weights into their idle layouts,
    inputs once into their readers' partitions, results from their producers'."""
    from xdsl.context import Context

    from irc.frontend import import_model
    from irc.lowering.model_from_ir import plan_function
    from irc.passes.pipelines import InferencePipeline
    from irc.planner.op_table import FrontierCache
    from irc.runner import run
    from tests.programs import every_builder, model_feeds

    model = every_builder()[name]()
    imported = table.ImportedModel(name, model)
    cache = FrontierCache(device, "t10")
    decision = plan_function(imported.spec, cache)
    estimate = table.host_io_seconds(decision, imported, cache.device) * cache.device.clock_hz
    compiled = import_model(model)
    module = compiled.module.clone()
    InferencePipeline(device=device).apply(Context(), module)
    _, report = run(module, {**model_feeds(compiled.module), **compiled.weights})
    assert estimate == pytest.approx(report.cycles["host_io"], rel=1e-9)
    assert table.host_io_bytes(decision, imported) >= decision.idle_bytes > 0


@pytest.mark.slow
def test_worker_processes_plan_the_rows_one_process_plans(monkeypatch):
    """``--jobs 2`` emits, in table order, the rows ``--jobs 1`` emits: batches doubling
    until the first that does not fit (the larger ones never planned)."""
    import argparse

    monkeypatch.setitem(table.ONNX_MODELS, "small-resnet", lambda batch: small_resnet(batch)[0])
    kept = ("batch", "fits", "ops", "irc_ms", "vgm_ms", "roller_ms", "peak_bytes", "idle_bytes", "host_io_ms")
    emitted = {}
    for jobs in (1, 2):
        rows = []
        args = argparse.Namespace(jobs=jobs, max_batch=64, device="tiny16", cost="t10", cross_check=False)
        table.plan_rows(["small-resnet"], args, rows.append)
        emitted[jobs] = [{key: row.get(key) for key in kept} for row in rows]
    assert emitted[1] == emitted[2]
    assert [row["batch"] for row in emitted[1]] == [1, 2, 4, 8, 16, 32, 64]
    assert [row["fits"] for row in emitted[1]] == [True] * 6 + [False]


@pytest.mark.parametrize("kind", ["bert", "vit"])
def test_weights_without_data_import_as_the_initializer_built_model(kind):
    """The table plans BERT and ViT built with their weights as graph inputs without data
    (marked as weights once imported): the same ModelSpec as with random initializers."""
    from irc.frontend import import_model
    from irc.lowering.model_from_ir import function_model
    from irc.runner import find_function

    def spec(weights_as_inputs: bool):
        if kind == "bert":
            config = table.BertConfig(1, 16, 32, 2, 64, layers=2, dtype="float16", weights_as_inputs=weights_as_inputs)
            model = table.build_bert_layer(config)
        else:
            config = table.ViTConfig(batch=1, image=32, patch=16, hidden=32, heads=2, mlp=64, layers=2,
                                     classes=10, dtype="float16", weights_as_inputs=weights_as_inputs)
            model = table.build_vit(config)
        imported = import_model(model, {})
        table.mark_weight_inputs(imported.module, model)
        return function_model(find_function(imported.module, None).function).model

    with_data, without = spec(False), spec(True)
    assert with_data.ops == without.ops and with_data.weight_bytes() == without.weight_bytes() > 0
