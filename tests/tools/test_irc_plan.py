"""irc-plan: seed 003's output format, the frontier, --explain, and bad input as one
diagnostic with exit status 1."""

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from irc.planner import check_plan, matmul_spec, plan_from_json, search
from irc.tools.irc_plan import run

SEED003 = ["--expr", "C[m,n] += A[m,k] * B[k,n]", "--shape", "m=32,k=5120,n=15360", "--dtype", "f16", "--device", "ipu-mk2"]


def plan_tool(capsys, *args):
    status = run(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return status, out, err


@pytest.mark.parametrize("cost", ["t10", "seed003"])
def test_seed003_problem_in_its_output_format(capsys, cost):
    started = time.perf_counter()
    status, out, _ = plan_tool(capsys, *SEED003, "--cost", cost)
    elapsed = time.perf_counter() - started
    print(f"\nirc-plan seed 003 problem ({cost}): {elapsed:.3f} s in-process", file=sys.stderr)
    assert status == 0
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("F_op = "))
    names = [line.split(" = ")[0] for line in lines[start : start + 7]]
    assert names == ["F_op", "f_t_A_m", "f_t_A_k", "f_t_B_k", "f_t_B_n", "f_t_C_m", "f_t_C_n"]
    # the printed plan is the planner's best, in seed 003's (m, k, n) order
    best = search(matmul_spec(32, 5120, 15360), "ipu-mk2", cost).best
    assert lines[start] == f"F_op = [{', '.join(map(str, best.op_factors))}]"
    assert lines[start + 2] == f"f_t_A_k = {best.temporal_factor('A', 'k')}"
    padded = dict(zip("mkn", best.score.padded_extents))
    assert f"padded shape: m={padded['m']}, k={padded['k']}, n={padded['n']}" in out
    assert f"predicted time: {best.seconds * 1e6:.3f} us" in out
    for part in ("compute", "shift", "sync", "reduction"):
        assert re.search(rf"^  {part} +\d+ cycles", out, re.M), part
    assert f"memory per core: {best.memory_per_core} B of 638976 B" in out


@pytest.mark.slow
def test_seed003_problem_as_a_command(tmp_path):
    binary = Path(sys.executable).parent / "irc-plan"
    started = time.perf_counter()
    done = subprocess.run([str(binary), *SEED003, "--json"], capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    print(f"\nirc-plan seed 003 problem: {elapsed:.3f} s wall (process start-up included)", file=sys.stderr)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert set(data["seed003"]) == {"F_op", "f_t_A_m", "f_t_A_k", "f_t_B_k", "f_t_B_n", "f_t_C_m", "f_t_C_n"}
    assert data["axes"] == ["m", "k", "n"]
    # the JSON plan is a valid --explain input and re-scores to the same time
    score = check_plan(matmul_spec(32, 5120, 15360), plan_from_json(done.stdout), "ipu-mk2", "t10")
    assert score.seconds == pytest.approx(data["score"]["seconds"])


def test_pareto_frontier_trades_memory_for_time(capsys):
    status, out, _ = plan_tool(capsys, "--expr", "C[m,n] += A[m,k] * B[k,n]", "--shape", "m=64,k=256,n=128",
                               "--dtype", "f32", "--device", "tiny16", "--pareto", "--json")
    assert status == 0
    frontier = json.loads(out)
    memory = [p["score"]["memory_per_core"] for p in frontier]
    seconds = [p["score"]["seconds"] for p in frontier]
    assert len(frontier) >= 2
    assert memory == sorted(memory) and seconds == sorted(seconds, reverse=True)
    status, text, _ = plan_tool(capsys, "--expr", "C[m,n] += A[m,k] * B[k,n]", "--shape", "m=64,k=256,n=128",
                                "--dtype", "f32", "--device", "tiny16", "--pareto")
    assert status == 0 and len([l for l in text.splitlines() if "F_op=" in l]) == len(frontier)


def test_other_expressions_use_their_own_names(capsys):
    status, out, _ = plan_tool(capsys, "--expr", "Y[n,f,h,w] += X[n,c,h+r,w+s] * W[f,c,r,s]",
                               "--shape", "n=1,f=8,c=4,h=8,w=8,r=3,s=3", "--device", "tiny16")
    assert status == 0
    assert "kind conv" in out
    for name in ("f_t_X_n", "f_t_X_c", "f_t_X_h", "f_t_X_r", "f_t_W_f", "f_t_Y_w"):
        assert f"\n{name} = " in out


def test_explain_scores_a_plan_or_names_the_broken_constraint(capsys):
    legal = '{"axes":["m","k","n"],"op_factors":[1,4,368],"temporal_factors":{"A":[1,4,1],"B":[1,1,1],"C":[1,1,1]}}'
    status, out, _ = plan_tool(capsys, *SEED003, "--explain", legal)
    assert status == 0 and "F_op = [1, 4, 368]" in out and "f_t_A_k = 4" in out
    assert "loop order (outermost first): k:4 steps (A)" in out
    broken = legal.replace('"A":[1,4,1]', '"A":[1,3,1]')
    status, out, err = plan_tool(capsys, *SEED003, "--explain", broken)
    assert status == 1 and out == ""
    assert err.strip() == (
        "error: --explain: the plan breaks a T10 constraint: prod(f_t of A)=3 does not divide "
        "the 368 cores sharing A's partition"
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (["--shape", "m=32,k=5120"], "error: --shape: no extent for axis 'n'; give every axis (m, n, k)"),
        (["--shape", "m=32,k=5120,n=15360,z=3"], "error: --shape: axis 'z' does not occur in the expression"),
        (["--shape", "m=32,k=-1,n=4"], "error: --shape: extent of axis 'k' must be positive, got -1"),
        (["--shape", "m32,k=2"], "error: --shape: 'm32' is not axis=extent"),
        (["--device", "ipu-mk9"], "error: unknown device 'ipu-mk9'; known devices: ipu-mk2, "),
        (["--cost", "vgm"], "error: unknown cost model 'vgm'; known cost models: engdesign, igo, mtia, seed003, t10"),
        (["--dtype", "f8"], "error: unknown --dtype 'f8'; known: f16, bf16"),
        (["--device", "tiny4"], "cannot be placed on tiny4 under any plan: no plan fits: the least memory per core any plan needs is"),
        (["--explain", "{not json"], "error: --explain: not a plan JSON document"),
    ],
)
def test_bad_input_is_one_diagnostic(capsys, args, message):
    base = {"--expr": "C[m,n] += A[m,k] * B[k,n]", "--shape": "m=32,k=5120,n=15360"}
    for flag, value in zip(args[::2], args[1::2]):
        base[flag] = value
    status, out, err = plan_tool(capsys, *[x for kv in base.items() for x in kv])
    assert status == 1 and out == ""
    assert message in err and err.count("error:") == 1, err


def test_malformed_expression_points_at_the_column(capsys):
    status, _, err = plan_tool(capsys, "--expr", "C[m,n] += A[m,k * B[k,n]", "--shape", "m=1,k=1,n=1")
    assert status == 1
    assert err.splitlines() == [
        "error: --expr: malformed tensor expression: unexpected 'B'",
        "  C[m,n] += A[m,k * B[k,n]",
        "                    ^",
    ]


def test_missing_argument_exits_1(capsys):
    with pytest.raises(SystemExit) as caught:
        run(["--shape", "m=2"])
    assert caught.value.code == 1
    assert "give either --expr (one operator) or --model (a whole model)" in capsys.readouterr().err
