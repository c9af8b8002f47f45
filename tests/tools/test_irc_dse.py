"""irc-dse: a small sweep locally and on a Dask LocalCluster (ELK s6.4), and its errors."""

import pytest

from irc.tools.irc_dse import run

SWEEP = ["--device", "tiny16-hbm", "--model", "llama2-13b", "--scale", "32", "--chips", "1", "--layers", "1",
         "--batch", "4", "--seq", "64", "--hbm", "16,32", "--link", "5.5", "--topology", "all-to-all,mesh-2d",
         "--cores", "16", "--designs", "basic,dyn"]


@pytest.mark.slow
def test_dask_cluster_sweep_equals_the_local_one(tmp_path, capsys):
    distributed = pytest.importorskip("distributed")  # the dist extra, installed by `make test`
    local, remote, png = tmp_path / "local.csv", tmp_path / "dask.csv", tmp_path / "sweep.png"
    assert run(SWEEP + ["--csv", str(local), "--png", str(png), "--workers", "1"]) == 0
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        assert run(SWEEP + ["--csv", str(remote), "--scheduler", cluster.scheduler_address]) == 0
    assert remote.read_text() == local.read_text()
    lines = local.read_text().splitlines()
    assert lines[0] == ("point,hbm_gbps,link_gbps,topology,cores,design,latency_ms,of_ideal,of_bound,link_share,"
                        "loads_yield")
    assert len(lines) == 1 + 4 * 2
    assert png.read_bytes()[:4] == b"\x89PNG"
    # more HBM bandwidth never hurts (Figure 19)
    rows = [line.split(",") for line in lines[1:]]
    latency = {(r[1], r[3], r[5]): float(r[6]) for r in rows}
    for topology in ("all-to-all", "mesh-2d"):
        assert latency[("32", topology, "dyn")] <= latency[("16", topology, "dyn")]


@pytest.mark.slow
def test_unreachable_scheduler_is_one_line_and_keeps_the_csv(tmp_path, capsys):
    pytest.importorskip("distributed")
    out = tmp_path / "sweep.csv"
    out.write_text("point,hbm_gbps\n0,16\n")
    assert run(SWEEP + ["--csv", str(out), "--scheduler", "tcp://127.0.0.1:9"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: cannot reach the Dask scheduler tcp://127.0.0.1:9") and "\n" not in err
    assert out.read_text() == "point,hbm_gbps\n0,16\n"


@pytest.mark.parametrize("flag, value, message", [
    ("--hbm", "0", "--hbm: bandwidth must be a positive number of GB/s (at most 1e6), got 0.0"),
    ("--hbm", "fast", "--hbm: expected comma-separated numbers, got 'fast'"),
    ("--link", "-5", "--link: bandwidth must be a positive number of GB/s (at most 1e6), got -5.0"),
    ("--topology", "torus", "--topology: unknown topology 'torus'; known: all-to-all, mesh-2d"),
    ("--cores", "0", "--cores: a core count must be a positive integer of at most 1048576, got 0"),
    ("--hbm", ",", "--hbm: give at least one value"),
    ("--hbm", "1e300", "--hbm: bandwidth must be a positive number of GB/s (at most 1e6), got 1e+300"),
    ("--batch", "0", "--batch must be a positive integer, got 0"),
    ("--designs", "fast", "--designs: unknown design 'fast'; known: basic, static, dyn, full, ideal"),
    ("--device", "tiny16", "the base device of a sweep needs off-chip memory"),
])
def test_bad_sweep_names_the_field(tmp_path, capsys, flag, value, message):
    args = SWEEP + ["--csv", str(tmp_path / "x.csv")]
    args[args.index(flag) + 1] = value
    assert run(args) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"error: {message}" or (message in err and err.count("\n") == 0), err
    assert not (tmp_path / "x.csv").exists()


def test_a_point_that_fails_midway_keeps_the_finished_points(tmp_path, capsys):
    """A core count no plan fits stops the sweep at that point: one line naming the
    point and why, exit 1, and the CSV holds the points that finished before it."""
    out = tmp_path / "sweep.csv"
    args = SWEEP + ["--csv", str(out), "--workers", "1"]
    args[args.index("--cores") + 1] = "16,1"
    args[args.index("--topology") + 1] = "all-to-all"
    args[args.index("--hbm") + 1] = "16"
    assert run(args) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: the sweep stopped at point 1 (HBM 16 GB/s, links 5.5 GB/s, all-to-all, 1 cores): "
                          "op 7 (%l0_attn_scores) has no plan on tiny16-hbm@1: no plan fits"), err
    assert err.endswith(f"(the 1 finished point(s) are kept in {out})") and "\n" not in err
    lines = out.read_text().splitlines()
    assert lines[0].startswith("point,") and [line.split(",")[:6] for line in lines[1:]] == [
        ["0", "16", "5.5", "all-to-all", "16", "basic"], ["0", "16", "5.5", "all-to-all", "16", "dyn"]]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.csv"]  # no temporary or .partial left


def test_a_failure_before_any_point_finishes_leaves_the_csv_as_it_was(tmp_path, capsys):
    out = tmp_path / "sweep.csv"
    out.write_text("mine\n")
    args = SWEEP + ["--csv", str(out), "--workers", "1"]
    args[args.index("--cores") + 1] = "1"
    assert run(args) == 1
    assert f"no point finished; {out} is as it was" in capsys.readouterr().err
    assert out.read_text() == "mine\n"


def test_an_internal_failure_of_a_point_is_an_internal_error(tmp_path, capsys, monkeypatch):
    """A bug in a worker is irc's fault: one `error: internal error:` line asking for a
    report, never its class name."""
    from concurrent.futures import ThreadPoolExecutor

    from irc.diagnostics import guarded_main
    from irc.tools import irc_dse

    def broken(*args):
        raise KeyError("latency")

    monkeypatch.delenv("IRC_TRACEBACK", raising=False)
    monkeypatch.setattr("irc.dse.plan_point", broken)   # what each series' task runs per point
    monkeypatch.setattr(irc_dse, "_executor", lambda args, count: (ThreadPoolExecutor(1), None))
    assert guarded_main(lambda: run(SWEEP + ["--csv", str(tmp_path / "s.csv")])) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: internal error: 'latency' (please report it") and err.count("\n") == 1
    assert "KeyError" not in err


@pytest.mark.parametrize("flags, message", [
    (["--device", "{dev}", "--csv", "{dev}"], "--csv {dev} would overwrite the --device file; choose another path"),
    (["--csv", "{dir}"], "--csv {dir} is a directory; give a file name"),
    (["--csv", "{dir}/s.csv", "--png", "{dir}/s.csv"], "--csv and --png name the same file; choose two paths"),
    (["--device", "{dev}", "--csv", "{dir}/s.csv", "--png", "{dev}"], "--png {dev} would overwrite the --device file; choose another path"),
    (["--csv", "{dir}/missing/s.csv"], "--csv {dir}/missing/s.csv: directory {dir}/missing does not exist"),
])
def test_outputs_never_replace_the_device_file_and_are_checked_first(tmp_path, capsys, flags, message):
    """`--device hbm.toml --csv hbm.toml` wrote the CSV over the device file; `--csv adir`
    left `adir.partial`."""
    from pathlib import Path

    device = tmp_path / "hbm.toml"
    device.write_text((Path(__file__).resolve().parents[2] / "irc/devices/tiny16_hbm.toml").read_text())
    before = device.read_text()
    fill = {"dev": str(device), "dir": str(tmp_path)}
    args = list(SWEEP)
    for flag, value in zip(flags[::2], flags[1::2]):
        if flag in args:
            args[args.index(flag) + 1] = value.format(**fill)
        else:
            args += [flag, value.format(**fill)]
    assert run(args) == 1
    assert capsys.readouterr().err == f"error: {message.format(**fill)}\n"
    assert device.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hbm.toml"]


@pytest.mark.slow
def test_the_progress_bar_is_quiet_when_piped(tmp_path, capsys):
    import io

    from irc.progress import Progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    terminal, pipe = Terminal(), io.StringIO()
    for stream in (terminal, pipe):
        with Progress(2, "irc-dse", stream=stream) as bar:
            bar.advance("point 0")
            bar.advance("point 1")
    assert "irc-dse:" in terminal.getvalue() and "2/2" in terminal.getvalue()
    assert pipe.getvalue() == ""
    # irc-dse itself, its stderr captured (not a terminal): nothing but what it reports
    args = SWEEP + ["--csv", str(tmp_path / "s.csv"), "--workers", "1", "--hbm", "16", "--topology", "all-to-all"]
    assert run(args) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "\r" not in captured.out


def _llama_files(tmp_path):
    """A Llama decoder layer (`irc.workloads.graphs`) as an .onnx file and as the .mlir
    file of te ops it imports to (weights marked ``irc.weight``)."""
    import onnx

    from irc.frontend.onnx_import import import_model
    from irc.workloads.graphs import LlamaConfig, build_llama_layer

    model = build_llama_layer(LlamaConfig(batch=2, past=7, hidden=64, heads=2, intermediate=128, layers=1))
    onnx_path, mlir_path = tmp_path / "llama.onnx", tmp_path / "llama.mlir"
    onnx.save(model, str(onnx_path))
    mlir_path.write_text(str(import_model(model).module))
    return onnx_path, mlir_path


def test_a_model_file_sweeps_as_the_same_model_in_another_format(tmp_path):
    """`--model FILE` (issue 24, item 3): an ONNX decoder and the te program it imports
    to give the same rows (each point as a sweep's worker plans it); their weights and
    KV caches are what the designs preload."""
    from irc.dse import Point, Workload, evaluate

    point = Point(0, 16e9, 5.5e9, "all-to-all", 16)
    rows = [evaluate("tiny16-hbm", Workload(str(path), batch=2), point) for path in _llama_files(tmp_path)]
    assert rows[0] == rows[1] and len(rows[0]) == 5
    latency = {row["design"]: float(row["latency_ms"]) for row in rows[0]}
    assert latency["ideal"] <= latency["full"] <= latency["dyn"] <= latency["static"] <= latency["basic"]
    assert all(float(row["of_bound"]) >= 1 for row in rows[0])


@pytest.mark.parametrize("name, topology", [("llama2-70b", "all-to-all"), ("opt-30b", "mesh-2d")])
def test_a_built_in_model_sweeps_as_its_te_file(tmp_path, name, topology):
    """A built-in LLM (issue 24, item 3) and the te program its builder writes, given as
    a file: the same sweep rows (Llama2-70B/32 keeps GQA: 2 query heads over one KV head;
    OPT-30B/32 LayerNorm, biases, ReLU FFN), a layer and the LM head."""
    from irc.dse import Point, Workload, evaluate
    from irc.workloads.llm import decoder_te, llm_config

    path = tmp_path / f"{name}.mlir"
    path.write_text(decoder_te(llm_config(name, 32), 2, 32, chips=1, layers=1))
    point = Point(0, 4e9, 2e9, topology, 16)
    built_in = evaluate("tiny16-hbm", Workload(name, batch=2, seq=32, chips=1, layers=1, factor=32,
                                               max_displacement=1), point)
    from_file = evaluate("tiny16-hbm", Workload(str(path), batch=2, max_displacement=1), point)
    assert built_in == from_file and len(built_in) == 5


def _weightless_onnx(path):
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")], "weightless",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [8, 16]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [16, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 8])])
    import onnx

    onnx.save(helper.make_model(graph), str(path))


@pytest.mark.parametrize("case, message", [
    ("weightless", "--model: {path} has no weights to preload"),
    ("missing", "cannot read {path}: No such file"),
    ("unknown", "--model: 'gpt-17' is neither a built-in model"),
    ("chips", "--chips: llama2-13b: 40 heads, 40 KV heads and 3 chips do not divide"),
])
def test_a_bad_model_or_chip_count_names_the_option_and_keeps_the_csv(tmp_path, capsys, case, message):
    path = tmp_path / "model.onnx"
    if case == "weightless":
        _weightless_onnx(path)
    out = tmp_path / "sweep.csv"
    out.write_text("point,hbm_gbps\n0,16\n")
    args = SWEEP + ["--csv", str(out)]
    if case == "chips":
        args[args.index("--chips") + 1], args[args.index("--scale") + 1] = "3", "1"
    else:
        args[args.index("--model") + 1] = "gpt-17" if case == "unknown" else str(path)
    assert run(args) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --") and message.format(path=path) in err and err.count("\n") == 0, err
    assert out.read_text() == "point,hbm_gbps\n0,16\n"


def test_points_differing_only_in_hbm_form_one_series_in_increasing_hbm():
    from irc.dse import hbm_series, points

    found = hbm_series(points([64, 16, 32], [5.5, 2], ["all-to-all"], [16]))
    assert [[(p.index, p.hbm_bytes_per_s / 1e9, p.link_bytes_per_s / 1e9) for p in series] for series in found] == [
        [(2, 16, 5.5), (4, 32, 5.5), (0, 64, 5.5)], [(3, 16, 2), (5, 32, 2), (1, 64, 2)]]


def test_a_sweep_never_slows_a_design_with_more_hbm_where_points_planned_alone_do(tmp_path, monkeypatch):
    """A scaled-down Llama2-13B layer at 32 and 64 GB/s of HBM: planned alone (as irc-dse
    planned every point before issue 24), Static's search is slower at 64 (its inductive
    frontiers at each swept split pick loads that press the link while the ops shift);
    in a sweep the 64 GB/s point is seeded with the 32 GB/s point's plans, so no design
    is slower there, the designs still dominate at each point (Full <= Dyn <= Static <=
    Basic) and the rows stay in point order. (A worker thread: no process to start.)"""
    from concurrent.futures import ThreadPoolExecutor

    from irc.dse import Point, Workload, evaluate
    from irc.tools import irc_dse

    monkeypatch.setattr(irc_dse, "_executor", lambda args, count: (ThreadPoolExecutor(1), None))
    out = tmp_path / "sweep.csv"
    args = SWEEP + ["--csv", str(out)]
    for flag, value in (("--seq", "128"), ("--hbm", "64,32"), ("--topology", "all-to-all"),
                        ("--designs", "basic,static,dyn,full")):
        args[args.index(flag) + 1] = value
    assert run(args) == 0
    rows = [line.split(",") for line in out.read_text().splitlines()[1:]]
    assert [(r[0], r[1], r[5]) for r in rows] == [(p, h, d) for p, h in (("0", "64"), ("1", "32"))
                                                 for d in ("basic", "static", "dyn", "full")]
    latency = {(r[1], r[5]): float(r[6]) for r in rows}
    for design in ("basic", "static", "dyn", "full"):
        assert latency[("64", design)] <= latency[("32", design)], design
    for hbm in ("32", "64"):
        assert latency[(hbm, "full")] <= latency[(hbm, "dyn")] <= latency[(hbm, "static")] <= latency[(hbm, "basic")]
    # the faster point planned alone (the slower one has no seed in the sweep either)
    alone = evaluate("tiny16-hbm", Workload("llama2-13b", 4, 128, 1, 1, 32, ("static",)),
                     Point(0, 64e9, 5.5e9, "all-to-all", 16))
    assert float(alone[0]["latency_ms"]) > latency[("32", "static")]
