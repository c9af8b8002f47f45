"""benchmarks/model_plan_scale.py on tiny sizes: part 1 plans a decoder larger than SRAM
the way rtensor-partition does (Algorithm 1 refuses it, ELK-Dyn plans it on a chip with
HBM, beside ELK's other designs), part 2 plans the narrower decoder with Algorithm 1 and
the baselines; both print their plan time and peak RSS against the targets and the JSON
carries them."""

import json
import math

import pytest

from benchmarks import model_plan_scale as scale


@pytest.mark.slow
def test_a_decoder_larger_than_sram_gets_an_elk_plan_and_the_narrow_one_algorithm1(tmp_path, capsys):
    out = tmp_path / "scale.json"
    assert scale.main(["--layers", "2", "--seq", "16", "--hidden", "256", "--heads", "2", "--ffn", "512",
                       "--device", "tiny16-hbm", "--fit-scale", "2", "--fit-device", "tiny16",
                       "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "does not fit on tiny16-hbm" in text and "-> ELK preload planning" in text
    assert text.count("within the < 60 s target") == 2 and text.count("MB target)") == 2
    assert "published planner times: T10" in text and "ELK" in text
    figures = json.loads(out.read_text())
    compiled, fitting = figures["as_compiled"], figures["fitting"]
    assert compiled["planner"] == "elk-dyn" and compiled["ops"] == 2 * 48 == len(compiled["ops_plans"])
    designs = compiled["designs"]
    assert designs["ideal"]["latency_ms"] <= compiled["latency_ms"] <= designs["basic"]["latency_ms"]
    assert fitting["planner"] == "algorithm1" and fitting["ops"] == 96
    plans = fitting["plans"]
    assert plans["fastest"]["seconds"] <= plans["irc"]["seconds"] * (1 + 1e-12)
    assert math.isclose(plans["irc"]["seconds"] * 1e3, fitting["latency_ms"])
    for part in (compiled, fitting):
        assert 0 < part["plan_seconds"] and 0 < part["peak_rss_mb"]


def test_a_model_that_fits_is_planned_by_algorithm1_in_part1(capsys):
    assert scale.main(["--model", "bert", "--layers", "1", "--batch", "1", "--seq", "16", "--hidden", "64",
                       "--heads", "2", "--ffn", "128", "--device", "tiny16"]) == 0
    text = capsys.readouterr().out
    assert "Algorithm 1:" in text and "plans chosen" in text and "[2]" not in text


def test_a_width_the_scale_does_not_divide_is_refused(capsys):
    assert scale.main(["--layers", "1", "--seq", "16", "--hidden", "96", "--heads", "3", "--ffn", "200",
                       "--device", "tiny16-hbm", "--fit-scale", "2", "--fit-device", "tiny16"]) == 1
    assert "--fit-scale 2 must divide" in capsys.readouterr().err
