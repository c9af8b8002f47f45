"""Reliability figures of the four tools under the issue-13 fuzzer (`tests/fuzzing.py`).

    .venv/bin/python benchmarks/fuzz.py [--cases 10000] [--seed 0] [--tools irc-opt,irc-run]
                                        [--jobs 2] [--show 5] [--log bad.txt]

Runs ``--cases`` mutated inputs per tool, each in a forked child with a time limit and
a memory cap, and prints per tool the cases tried and the count of each outcome class:
ok, diagnostic (exit 1 with an `error:` line), masked (an exception class name, empty
message or format placeholder in place of a message), internal error, traceback,
timeout, OOM, unclean (another exit status, no `error:` line), wrong success (exit 0 on
a case that must be refused). The last column is the
share of cases that ended in one of the bad classes (the issue's goal: 0). ``--show``
prints that many bad cases per class (command line, mutation, first stderr lines);
``--log`` writes every bad case with its input files to a directory for reproduction.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests/ (the fuzzer) and benchmarks/ (xdsl ships a package of that name)

from tests.fuzzing import BAD_OUTCOMES, EXTRA_GENERATORS, OUTCOMES, TOOLS, fuzz  # noqa: E402
from irc.progress import Progress  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200, help="cases per tool (default 200)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tools", default=",".join((*TOOLS, *EXTRA_GENERATORS)),
                        help=f"tools and generator groups (default all: {', '.join((*TOOLS, *EXTRA_GENERATORS))})")
    parser.add_argument("--jobs", type=int, default=2, help="cases run at once")
    parser.add_argument("--show", type=int, default=3, help="bad cases shown per tool and class")
    parser.add_argument("--log", help="directory to write every bad case into (argv, files, stderr)")
    args = parser.parse_args()
    tools = [t for t in args.tools.split(",") if t]
    bad: dict[tuple[str, str], list] = defaultdict(list)
    seconds: Counter = Counter()
    started = time.perf_counter()
    logged = 0
    with Progress(args.cases * len(tools), "fuzzing") as bar:
        def report(case, outcome):
            nonlocal logged
            group = case.group or case.tool
            seconds[group] += outcome.seconds
            bar.advance(group)
            if outcome.kind in BAD_OUTCOMES:
                bad[group, outcome.kind].append((case, outcome))
                if args.log:
                    directory = Path(args.log, f"{logged:05d}-{case.tool}-{outcome.kind.replace(' ', '_')}")
                    directory.mkdir(parents=True, exist_ok=True)
                    for name, data in case.files.items():
                        (directory / name.replace("/", "_")).write_bytes(data)
                    (directory / "argv").write_text(case.describe() + "\n")
                    (directory / "stderr").write_text(outcome.stderr)
                    logged += 1

        counts = fuzz(tools, args.cases, args.seed, args.jobs, report)
    width = max(len(o) for o in OUTCOMES)
    print(f"fuzzer: {args.cases} cases per tool, seed {args.seed}, {time.perf_counter() - started:.0f} s")
    print(f"{'tool':<14}{'cases':>7}" + "".join(f"{o:>{max(width, 9) + 1}}" for o in OUTCOMES) + f"{'bad share':>11}")
    for tool in tools:
        row = counts[tool]
        total = sum(row.values())
        share = sum(row[o] for o in BAD_OUTCOMES) / total if total else 0.0
        print(f"{tool:<14}{total:>7}" + "".join(f"{row[o]:>{max(width, 9) + 1}}" for o in OUTCOMES)
              + f"{share:>11.4f}")
    print("mean seconds per case: " + ", ".join(
        f"{tool} {seconds[tool] / max(1, sum(counts[tool].values())):.3f}" for tool in tools))
    for (tool, kind), found in sorted(bad.items()):
        for case, outcome in found[: args.show]:
            print(f"\n[{tool}: {kind}] {case.describe()}")
            print("  " + "\n  ".join(outcome.stderr.strip().splitlines()[-4:]))


if __name__ == "__main__":
    main()
