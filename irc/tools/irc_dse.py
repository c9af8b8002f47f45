"""irc-dse: sweep HBM bandwidth, exchange bandwidth, topology and core count (ELK s6.4).

    irc-dse --model llama2-13b --hbm 2000,4000,8000 --link 5.5 --topology all-to-all,mesh-2d
        --cores 1472 --csv sweep.csv [--png sweep.png] [--scheduler tcp://host:8786]

Each point plans the workload on the base device (``--device``, default ipu-mk2-hbm) with
the point's bandwidths, topology and cores, for each design of ELK s6.1 (``irc.dse``).
Points run in a local process pool (``--workers``) or on a Dask cluster (``--scheduler``,
the ``dist`` extra); the CSV holds the finished points as they finish. ``--png`` (the
``plot`` extra) draws latency against HBM bandwidth. Every failure is one ``error:`` line
and exit status 1; a sweep that fails midway keeps the CSV of the points it finished.
"""

from __future__ import annotations

import sys
from concurrent.futures import ProcessPoolExecutor

from irc.diagnostics import ArgumentParser


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
    from irc.planner.elk import DESIGNS
    from irc.planner.llm import MODELS

    parser = ArgumentParser(prog="irc-dse", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama2-13b", choices=MODELS)
    parser.add_argument("--device", default="ipu-mk2-hbm", help="base device with off-chip memory")
    parser.add_argument("--hbm", default="4000", help="HBM bandwidths in GB/s, comma-separated")
    parser.add_argument("--link", default="5.5", help="per-core link bandwidths in GB/s, comma-separated")
    parser.add_argument("--topology", default="all-to-all", help="all-to-all and/or mesh-2d, comma-separated")
    parser.add_argument("--cores", default="1472", help="core counts, comma-separated")
    parser.add_argument("--designs", default=",".join(DESIGNS), help=f"of {', '.join(DESIGNS)}")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--chips", type=int, default=4, help="model-parallel chips sharing the model")
    parser.add_argument("--layers", type=int, default=None)
    parser.add_argument("--scale", type=int, default=1, help="divide the model's widths by this")
    parser.add_argument("--csv", required=True, help="output CSV")
    parser.add_argument("--png", help="output plot (needs matplotlib: the plot extra)")
    parser.add_argument("--workers", type=int, default=2, help="local worker processes")
    parser.add_argument("--scheduler", help="a Dask scheduler, tcp://host:port (needs the dist extra)")
    return parser.parse_args(argv)


def _executor(args):
    if not args.scheduler:
        return ProcessPoolExecutor(max_workers=max(1, args.workers)), None
    try:
        from distributed import Client
    except ImportError:
        raise DseToolError("--scheduler needs Dask's distributed (pip install 'irc[dist]')") from None
    try:
        client = Client(args.scheduler, timeout="5s")
    except (OSError, TimeoutError, ValueError) as error:
        raise DseToolError(f"cannot reach the Dask scheduler {args.scheduler}: "
                           f"{str(error).splitlines()[0] if str(error) else type(error).__name__}") from None
    return client.get_executor(), client


def run(argv=None) -> int:
    from irc.devices import DeviceError, load_device
    from irc.dse import DseError, Workload, plot, point_device, points, sweep
    from irc.progress import Progress

    args = _arguments(argv)
    designs = tuple(d for d in args.designs.split(",") if d)
    from irc.planner.elk import DESIGNS

    for design in designs:
        if design not in DESIGNS:
            print(f"irc-dse: error: --designs: unknown design {design!r}; known: {', '.join(DESIGNS)}", file=sys.stderr)
            return 1
    try:
        sweep_points = points(_floats(args.hbm, "--hbm"), _floats(args.link, "--link"),
                              [t for t in args.topology.split(",") if t], _ints(args.cores, "--cores"))
        base = load_device(args.device)
        point_device(base, sweep_points[0])
    except (DseError, DeviceError, DseToolError) as error:
        print(f"irc-dse: error: {error}", file=sys.stderr)
        return 1
    if args.png:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print("irc-dse: error: --png needs matplotlib (pip install 'irc[plot]')", file=sys.stderr)
            return 1
    workload = Workload(args.model, args.batch, args.seq, args.chips, args.layers, args.scale, designs)
    try:
        executor, client = _executor(args)
    except DseToolError as error:
        print(f"irc-dse: error: {error}", file=sys.stderr)
        return 1
    try:
        with Progress(len(sweep_points), "irc-dse") as bar:
            rows = sweep(args.device, workload, sweep_points, executor, args.csv, bar.advance)
    except Exception as error:  # a worker or the cluster failed: the finished points stay in the CSV
        print(f"irc-dse: error: the sweep stopped: {str(error).splitlines()[0] if str(error) else type(error).__name__} "
              f"(finished points kept in {args.csv})", file=sys.stderr)
        return 1
    finally:
        executor.shutdown(wait=False)
        if client is not None:
            client.close()
    if args.png:
        plot(rows, args.png)
    print(f"{len(sweep_points)} points, {len(rows)} rows -> {args.csv}" + (f", {args.png}" if args.png else ""))
    return 0


def main() -> None:
    sys.exit(run())


if __name__ == "__main__":
    main()
