"""irc-dse: a small sweep locally and on a Dask LocalCluster (ELK s6.4), and its errors."""

import pytest

from irc.tools.irc_dse import run

SWEEP = ["--device", "tiny16-hbm", "--model", "llama2-13b", "--scale", "32", "--chips", "1", "--layers", "2",
         "--batch", "4", "--seq", "64", "--hbm", "16,32", "--link", "5.5", "--topology", "all-to-all,mesh-2d",
         "--cores", "16", "--designs", "basic,dyn"]


def test_dask_cluster_sweep_equals_the_local_one(tmp_path, capsys):
    distributed = pytest.importorskip("distributed")  # the dist extra, installed by `make test`
    local, remote, png = tmp_path / "local.csv", tmp_path / "dask.csv", tmp_path / "sweep.png"
    assert run(SWEEP + ["--csv", str(local), "--png", str(png), "--workers", "1"]) == 0
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        assert run(SWEEP + ["--csv", str(remote), "--scheduler", cluster.scheduler_address]) == 0
    assert remote.read_text() == local.read_text()
    lines = local.read_text().splitlines()
    assert lines[0] == "point,hbm_gbps,link_gbps,topology,cores,design,latency_ms,of_ideal"
    assert len(lines) == 1 + 4 * 2
    assert png.read_bytes()[:4] == b"\x89PNG"
    # more HBM bandwidth never hurts (Figure 19)
    rows = [line.split(",") for line in lines[1:]]
    latency = {(r[1], r[3], r[5]): float(r[6]) for r in rows}
    for topology in ("all-to-all", "mesh-2d"):
        assert latency[("32", topology, "dyn")] <= latency[("16", topology, "dyn")]


def test_unreachable_scheduler_is_one_line_and_keeps_the_csv(tmp_path, capsys):
    pytest.importorskip("distributed")
    out = tmp_path / "sweep.csv"
    out.write_text("point,hbm_gbps\n0,16\n")
    assert run(SWEEP + ["--csv", str(out), "--scheduler", "tcp://127.0.0.1:9"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("irc-dse: error: cannot reach the Dask scheduler tcp://127.0.0.1:9") and "\n" not in err
    assert out.read_text() == "point,hbm_gbps\n0,16\n"


@pytest.mark.parametrize("flag, value, message", [
    ("--hbm", "0", "--hbm: bandwidth must be a positive number of GB/s, got 0.0"),
    ("--hbm", "fast", "--hbm: expected comma-separated numbers, got 'fast'"),
    ("--link", "-5", "--link: bandwidth must be a positive number of GB/s, got -5.0"),
    ("--topology", "torus", "--topology: unknown topology 'torus'; known: all-to-all, mesh-2d"),
    ("--cores", "0", "--cores: a core count must be a positive integer, got 0"),
    ("--device", "tiny16", "the base device of a sweep needs off-chip memory"),
])
def test_bad_sweep_names_the_field(tmp_path, capsys, flag, value, message):
    args = SWEEP + ["--csv", str(tmp_path / "x.csv")]
    args[args.index(flag) + 1] = value
    assert run(args) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"irc-dse: error: {message}" or (message in err and err.count("\n") == 0), err
    assert not (tmp_path / "x.csv").exists()


def test_a_sweep_that_fails_midway_keeps_its_finished_points(tmp_path, capsys):
    # one worker runs the points in order: 16 cores plan, 2 cores hold no plan of the qkv op
    out = tmp_path / "sweep.csv"
    args = SWEEP + ["--csv", str(out), "--workers", "1"]
    for flag, value in (("--cores", "16,2"), ("--topology", "all-to-all"), ("--hbm", "16")):
        args[args.index(flag) + 1] = value
    assert run(args) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("irc-dse: error: the sweep stopped: ") and "\n" not in err, err
    assert f"finished points kept in {out}" in err
    lines = out.read_text().splitlines()
    assert lines[0] == "point,hbm_gbps,link_gbps,topology,cores,design,latency_ms,of_ideal"
    assert [line.split(",")[4] for line in lines[1:]] == ["16", "16"]      # basic and dyn of the first point


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
    assert "irc-dse [" in terminal.getvalue() and "2/2" in terminal.getvalue()
    assert pipe.getvalue() == ""
    # irc-dse itself, its stderr captured (not a terminal): nothing but what it reports
    args = SWEEP + ["--csv", str(tmp_path / "s.csv"), "--workers", "1", "--hbm", "16", "--topology", "all-to-all"]
    assert run(args) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "\r" not in captured.out
