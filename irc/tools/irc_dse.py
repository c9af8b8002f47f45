"""irc-dse: sweep HBM bandwidth, exchange bandwidth, topology and core count (ELK s6.4).

    irc-dse --model llama2-13b|FILE.onnx|FILE.mlir --hbm 2000,4000,8000 --link 5.5
        --topology all-to-all,mesh-2d --cores 1472 --csv sweep.csv [--png sweep.png]
        [--scheduler tcp://host:8786]

``--model`` is a built-in model or a model file: an .onnx file (its initializers are the
weights) or a .mlir file of te ops (its arguments marked ``irc.weight`` are); the other
arguments a file's ops read are loaded from HBM too (a KV cache), identical layers are
found by their op signatures, and ``--batch`` sets an ONNX file's symbolic dimension.

Each point plans the workload on the base device (``--device``, default ipu-mk2-hbm) with
the point's bandwidths, topology and cores, for each design of ELK s6.1 (``irc.dse``); the
points differing only in HBM bandwidth run as one series, in increasing HBM order, each
seeded with the previous point's plans (no design gets slower with more HBM bandwidth).
Series run in a local process pool (``--workers``) or on a Dask cluster (``--scheduler``,
the ``dist`` extra); the CSV holds the finished points as their series finish. ``--png`` (the
``plot`` extra) draws latency against HBM bandwidth. Every failure is one ``error:`` line
and exit status 1; a sweep that fails midway keeps the CSV of the points it finished.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from concurrent.futures import BrokenExecutor, CancelledError, ProcessPoolExecutor

from irc.devices import DeviceError, load_device
from irc.diagnostics import ArgumentParser, as_diagnostic, exit_tool
from irc.dse import (
    DseError,
    PointFailed,
    Workload,
    allreduce_exec_cycles,
    chips_of,
    csv_text,
    hbm_series,
    plot,
    point_device,
    points,
    sweep,
    workload_model,
)
from irc.output import OutputError, check_output, is_stream, same_output, write_atomically
from irc.planner.elk import DESIGNS
from irc.plotting import has_matplotlib
from irc.progress import Progress
from irc.workloads.llm import MODELS


class DseToolError(Exception):
    """A problem with what the user asked for; printed as one ``error:`` line."""


def _floats(text: str, flag: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",") if v]
    except ValueError:
        raise DseToolError(f"{flag}: expected comma-separated numbers, got {text!r}") from None


def _ints(text: str, flag: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v]
    except ValueError:
        raise DseToolError(f"{flag}: expected comma-separated integers, got {text!r}") from None


def _arguments(argv):
    parser = ArgumentParser(prog="irc-dse", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama2-13b", metavar="MODEL",
                        help=f"a built-in model ({', '.join(MODELS)}) or an .onnx or .mlir file")
    parser.add_argument("--device", default="ipu-mk2-hbm", help="base device with off-chip memory")
    parser.add_argument("--hbm", default="4000", help="HBM bandwidths in GB/s, comma-separated")
    parser.add_argument("--link", default="5.5",
                        help="link bandwidths in GB/s, comma-separated: an all-to-all core's port, or each link of "
                             "a mesh (ipu-mk2-hbm-mesh's 30.6 carry 4 TB/s of HBM into its 32 x 46 mesh)")
    parser.add_argument("--topology", default="all-to-all", help="all-to-all and/or mesh-2d, comma-separated")
    parser.add_argument("--cores", default="1472", help="core counts, comma-separated")
    parser.add_argument("--designs", default=",".join(DESIGNS), help=f"of {', '.join(DESIGNS)}")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--chips", type=int, default=None,
                        help="tensor-parallel chips sharing a built-in model, all-reduces priced (default 4; "
                             "a model file: 1)")
    parser.add_argument("--layers", type=int, default=None)
    parser.add_argument("--scale", type=int, default=1, help="divide the model's widths by this")
    parser.add_argument("--csv", required=True, help="output CSV")
    parser.add_argument("--png", help="output plot (needs matplotlib: the plot extra)")
    parser.add_argument("--workers", type=int, default=2, help="local worker processes")
    parser.add_argument("--scheduler", help="a Dask scheduler, tcp://host:port (needs the dist extra)")
    return parser.parse_args(argv)


def _executor(args, count: int):
    if not args.scheduler:
        # workers forked from a clean server, not from this process: a fork inherits its
        # threads' state and objects whose finalizers may run in the worker (a Dask client)
        context = multiprocessing.get_context("forkserver")
        return ProcessPoolExecutor(max_workers=min(args.workers, count), mp_context=context), None
    try:
        from distributed import Client  # an optional extra ('.[dist]'): only --scheduler needs it
    except ImportError:
        raise DseToolError("--scheduler needs Dask's distributed (pip install 'irc[dist]')") from None
    try:
        client = Client(args.scheduler, timeout="5s")
    except (OSError, TimeoutError, ValueError) as error:
        reason = (str(error).strip().splitlines() or ["no answer"])[0]
        raise DseToolError(f"cannot reach the Dask scheduler {args.scheduler}: {reason}") from None
    return client.get_executor(), client


_SWEEP_FAILURES = (ValueError, OSError, TimeoutError, CancelledError, BrokenExecutor)
"""What a point's failure is when it is not irc's fault: a point no plan fits (the
planner's errors are ValueErrors), a worker process that died, a cluster gone away."""


def _check_outputs(args) -> None:
    """--csv and --png name new or regular files that are not the device file, nor each
    other; checked before anything runs."""
    read = [(args.device, "the --device file")] if os.path.isfile(args.device) else []
    check_output(args.csv, "--csv", read)
    if args.png:
        check_output(args.png, "--png", [*read, (args.csv, "the --csv file")])
        if same_output(args.png, args.csv):
            raise OutputError("--csv and --png name the same file; choose two paths")


def run(argv=None) -> int:
    args = _arguments(argv)
    designs = tuple(d for d in args.designs.split(",") if d)
    try:
        for design in designs:
            if design not in DESIGNS:
                raise DseToolError(f"--designs: unknown design {design!r}; known: {', '.join(DESIGNS)}")
        if not designs:
            raise DseToolError("--designs: give at least one design")
        for flag, value in (("--batch", args.batch), ("--seq", args.seq), ("--chips", 1 if args.chips is None else args.chips),
                            ("--scale", args.scale), ("--layers", args.layers or 1), ("--workers", args.workers)):
            if value < 1:
                raise DseToolError(f"{flag} must be a positive integer, got {value}")
        _check_outputs(args)
        sweep_points = points(_floats(args.hbm, "--hbm"), _floats(args.link, "--link"),
                              [t for t in args.topology.split(",") if t], _ints(args.cores, "--cores"))
        base = load_device(args.device)
        point_device(base, sweep_points[0])
        workload = Workload(args.model, args.batch, args.seq, args.chips, args.layers, args.scale, designs)
        # a model that cannot be built, has nothing to preload or cannot split: before any point
        allreduce_exec_cycles(point_device(base, sweep_points[0]), workload_model(workload)[3], chips_of(workload))
        if args.png:
            if not has_matplotlib():
                raise DseToolError("--png needs matplotlib (pip install 'irc[plot]')")
        executor, client = _executor(args, len(hbm_series(sweep_points)))   # a worker per series at most
    except (DseError, DeviceError, DseToolError, OutputError) as error:
        print(as_diagnostic(str(error)), file=sys.stderr)
        return 1
    stream = is_stream(args.csv)  # /dev/stdout, a FIFO: written once, when the sweep is done
    try:
        with Progress(len(sweep_points), "irc-dse") as bar:
            rows = sweep(args.device, workload, sweep_points, executor, None if stream else args.csv, bar.advance)
        if stream:
            write_atomically(args.csv, csv_text(rows))
    except PointFailed as failed:  # the finished points stay in the CSV
        cause = failed.error
        if not isinstance(cause, _SWEEP_FAILURES):
            raise cause from None  # irc's own fault: an internal error (exit_tool)
        message = (str(cause).strip().splitlines() or ["its worker process ended without a message"])[0]
        kept = (f"nothing was written to {args.csv}" if stream
                else f"the {failed.finished} finished point(s) are kept in {args.csv}" if failed.finished
                else f"no point finished; {args.csv} is as it was")
        print(f"error: the sweep stopped at {failed.describe()}: {message} ({kept})", file=sys.stderr)
        return 1
    except OSError as error:  # the CSV could not be written
        print(f"error: cannot write the --csv file {args.csv}: {error.strerror or error}", file=sys.stderr)
        return 1
    finally:
        executor.shutdown(wait=False)
        if client is not None:
            client.close()
    if args.png:
        try:
            plot(rows, args.png)
        except OSError as error:
            print(f"error: cannot write the --png file {args.png}: {error.strerror or error}", file=sys.stderr)
            return 1
    summary = f"{len(sweep_points)} points, {len(rows)} rows -> {args.csv}" + (f", {args.png}" if args.png else "")
    print(summary, file=sys.stderr if stream or (args.png and is_stream(args.png)) else sys.stdout)
    return 0


def main() -> None:
    exit_tool(run)


if __name__ == "__main__":
    main()
