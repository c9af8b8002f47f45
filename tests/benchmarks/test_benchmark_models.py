"""benchmarks/models_table.py builds the models it says it builds: valid `ModelSpec`s whose
weights add up to the published parameter counts (2-byte elements), batch-parametric."""

import importlib.util
from pathlib import Path

import pytest

# benchmarks/models_table.py shares its name with the benchmarks/models/ package of ONNX
# builders, so it is run as a script and loaded here from its path.
_PATH = Path(__file__).parents[2] / "benchmarks" / "models_table.py"
_SPEC = importlib.util.spec_from_file_location("benchmark_models_table", _PATH)
table = importlib.util.module_from_spec(_SPEC)
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
    row = {"model": "m", "batch": 4, "ops": 10, "irc_ms": 1.5, "vgm_ms": None, "roller_ms": 3.0,
           "speedup_vgm": None, "speedup_roller": 2.0, "sram_used": 0.5, "compile_s": 1.0, "peak_rss_mb": 100}
    text = format_row(row)
    assert text.split() == ["m", "4", "10", "1.500", "n/a", "3.000", "n/a", "2.00", "50.0%", "1.0", "100"]
