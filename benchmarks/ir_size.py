"""Device IR of a whole BERT-base: its size, and how long it takes to print and parse back.

Issue 10: device IR states per-core values as functions of the core id (SPMD), so a whole
model's device module grows with its ops, not ops x cores, and "a whole BERT-base device
module prints and re-parses in seconds". This builds BERT-base (12 encoder layers,
sequence 128, f16; ``irc.workloads.graphs``) as an ONNX graph, imports it (what
``irc-translate`` runs), compiles it with ``inference{device=ipu-mk2}`` and prints:

- the device module's bytes (and per op), and the share of ``array<i64: ...>`` bytes
  (per-core lists, which SPMD attributes replace);
- the time to print it and to parse it back as irc's tools do
  (``irc.runner.parse_module``: `LocatingParser`, which gives every op its
  file:line:col, then `verify_located`), against plain xDSL (``Parser`` +
  ``ModuleOp.verify``) on the same text in the same run: ``x xDSL`` is irc's overhead.

    PYTHONPATH=. python benchmarks/ir_size.py [--layers 12] [--seq 128] [--device ipu-mk2] [--repeat 3]

Times are the median of ``--repeat`` runs (wall clock: the machine's load shows in them;
the ratio is measured run against run).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time

from xdsl.context import Context
from xdsl.parser import Parser

from irc.frontend import import_model
from irc.passes.pipelines import InferencePipeline
from irc.runner import make_context, parse_module
from irc.workloads.graphs import BertConfig, build_bert_layer


def _timed(run) -> tuple[float, object]:
    started = time.perf_counter()
    value = run()
    return time.perf_counter() - started, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--device", default="ipu-mk2")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    build_s, model = _timed(lambda: build_bert_layer(BertConfig(batch=1, seq=args.seq, layers=args.layers,
                                                                dtype="float16")))
    import_s, imported = _timed(lambda: import_model(model))
    module = imported.module
    compile_s, _ = _timed(lambda: InferencePipeline(device=args.device).apply(Context(), module))
    ops = sum(1 for _ in module.walk())
    print(f"BERT-base, {args.layers} layers, sequence {args.seq}, f16, on {args.device}: "
          f"built in {build_s:.1f} s, imported in {import_s:.1f} s, compiled in {compile_s:.1f} s")

    prints, irc_parses, xdsl_parses = [], [], []
    text = ""
    parse_module(str(module), "bert.mlir")  # warm up (the te expressions' parse cache)
    for repeat in range(args.repeat):
        seconds, text = _timed(lambda: str(module))
        prints.append(seconds)
        runs = [(xdsl_parses, lambda: Parser(make_context(), text, "bert.mlir").parse_module().verify()),
                (irc_parses, lambda: parse_module(text, "bert.mlir"))]
        for times, run in runs[:: 1 if repeat % 2 else -1]:  # alternate which goes first
            times.append(_timed(run)[0])
    size = len(text.encode())
    lists = sum(len(m.group()) for m in re.finditer(r"array<i64[^>]*>", text))
    print(f"device IR: {size:,} bytes, {ops:,} ops ({size / ops:.0f} bytes per op), "
          f"array<i64> lists {lists / size * 100:.1f}% of the bytes")
    irc_s, xdsl_s = statistics.median(irc_parses), statistics.median(xdsl_parses)
    print(f"print: {statistics.median(prints):.2f} s")
    print(f"re-parse and verify: irc {irc_s:.2f} s, plain xDSL {xdsl_s:.2f} s (x xDSL {irc_s / xdsl_s:.2f}) "
          f"[median of {args.repeat}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
