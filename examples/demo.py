"""`make demo`: the whole compiler on two programs, each result checked.

1. examples/mlp.mlir (matmul + bias + relu + matmul, written in `te`) is compiled
   through the `inference` pipeline for the 1,472-core IPU Mk2, executed on the
   reference chip and compared with the same program at `te` level; the interpreted
   whole-model time equals the model-wide plan's (activations stay on chip, host I/O
   only at the model's edges).
2. A BERT-base encoder layer, built as ONNX by irc/workloads/graphs/bert.py, is imported
   with the ONNX frontend, compiled for the IPU Mk2, executed on the reference chip
   and compared with onnx's own ReferenceEvaluator.
3. The model-wide plan of that layer (T10 Algorithm 1) against the VGM baseline.
4. A training step: one BERT-tiny encoder layer (batch 4, 128 tokens) compiled by the
   `training` pipeline for npu-edge twice, the baseline (dX then dW) and IGO (tile
   order and partition chosen by the cost model), each run on the NPU interpreter:
   measured DRAM traffic and cycles, both programs' gradients checked against the
   te-level unfused backward pass, each kernel's cost against irc.cost.igo's prediction.
5. A model larger than the chip's SRAM on a chip with HBM (ELK, seeds/004): one decoding
   step of a scaled-down Llama2-13B layer stack on tiny16-hbm, ELK-Full against Basic and
   Ideal; and a 4-layer MLP that does not fit, compiled with preloads, run on the
   reference chip and checked against the te program.
6. One batch of a small DLRM (irc.dlrm) on Meta's MTIA v1, every operator on the PEs as
   irc-plan plans it: FC layers (two of them INT8, accumulating in INT32) with MTIA's own
   mapping or a T10 plan, the embedding bags gathered and pooled, quantization,
   concatenation and interaction on the SIMD engines; compared with the whole model at te
   level, its executed operator breakdown printed next to the MTIA paper's Table III, and
   the planned breakdown of an LC-like DLRM batch.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the repository's benchmarks/ (xdsl ships a package of that name)

from irc.compile import compile_and_run  # noqa: E402
from irc.runner import find_function, parse_module, random_inputs  # noqa: E402

DEVICE = "ipu-mk2"
TRAINING_TOKENS = 128


def _check(name: str, got: np.ndarray, want: np.ndarray, tolerance: float) -> bool:
    error = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
    scale = max(1.0, float(np.max(np.abs(want))))
    ok = error <= tolerance * scale
    print(f"  check {name}: max |irc - reference| = {error:.2e} (scale {scale:.3g}) -> "
          + ("OK" if ok else "MISMATCH"))
    return ok


def mlp() -> bool:
    print(f"== 1. examples/mlp.mlir on {DEVICE} (te -> rtensor -> shift -> device)")
    path = ROOT / "examples" / "mlp.mlir"
    module = parse_module(path.read_text(), str(path))
    inputs = random_inputs(find_function(module, "main"), seed=0)
    results, report = compile_and_run(module, device=DEVICE, inputs=inputs)
    x, w1, b1, w2 = (inputs[n] for n in ("x", "w1", "b1", "w2"))
    reference = np.maximum(x @ w1 + b1, 0) @ w2
    print(_indent(str(report)))
    return _check("y vs numpy", results["y"], reference, 1e-4)


def bert() -> bool:
    from onnx.reference import ReferenceEvaluator

    from irc.frontend.onnx_import import import_model
    from irc.workloads.graphs import BertConfig, build_bert_layer

    config = BertConfig(batch=1, seq=128)
    print(f"\n== 2. BERT-base encoder layer from ONNX (batch {config.batch}, seq {config.seq}) on {DEVICE}")
    started = time.perf_counter()
    model = build_bert_layer(config)
    imported = import_model(model)
    ops = sum(1 for op in imported.module.walk() if op.name.startswith("te."))
    print(f"  imported {ops} te ops, {len(imported.weights)} weight tensors "
          f"({sum(w.nbytes for w in imported.weights.values()) / 2**20:.1f} MiB)")
    rng = np.random.default_rng(0)
    mask = np.ones((config.batch, config.seq), np.int64)
    mask[:, -16:] = 0  # padded tokens
    feeds = {"hidden_states": rng.standard_normal((config.batch, config.seq, config.hidden)).astype(np.float32),
             "attention_mask": mask}
    results, report = compile_and_run(imported.module, device=DEVICE, inputs={**feeds, **imported.weights})
    print(_indent(str(report)))
    (want,) = ReferenceEvaluator(model).run(None, feeds)
    print(f"  compile + run + checks: {time.perf_counter() - started:.1f} s")
    return _check("last_hidden_state vs onnx.reference", results["last_hidden_state"], want, 1e-3)


def model_wide() -> bool:
    from irc.planner.baselines_model import vgm_plan
    from irc.workloads.bert import bert_model
    from irc.planner.model import ModelFitError, plan_model

    print(f"\n== 3. Model-wide plan of a BERT-base layer on {DEVICE} (T10 Algorithm 1 vs VGM)")
    for batch in (1, 8):
        model = bert_model(layers=1, batch=batch, seq=128, hidden=768, heads=12, ffn=3072)
        plan = plan_model(model, DEVICE, "t10")
        try:
            vgm = vgm_plan(model, DEVICE, "t10").seconds
            speedup = f"{vgm / plan.seconds:.2f}x faster than VGM ({vgm * 1e3:.3f} ms)"
        except ModelFitError as error:
            speedup = f"VGM does not fit ({error})"
        print(f"  batch {batch}: {plan.seconds * 1e3:.3f} ms "
              f"(active {plan.active_seconds * 1e3:.3f}, setup {plan.setup_seconds * 1e3:.3f}, "
              f"relayout {plan.relayout_seconds * 1e3:.3f}), idle weights {plan.idle_bytes / 1024:.0f} KiB/core; "
              + speedup)
    return True


def training() -> bool:
    from irc.workloads.igo import bert_tiny
    from irc.planner.igo import evaluate
    from irc.dialects.igo import GradPairOp
    from irc.dialects.npu import KernelOp, MatmulOp
    from irc.lowering.igo_to_npu import COST_ORDER, plan_of
    from irc.target import npu_device_of
    from irc.passes.pipelines import TrainingPipeline
    from irc.passes.te_autodiff import TeAutodiff
    from irc.runner import make_context, run

    print("\n== 4. Training step: a BERT-tiny layer's backward pass on npu-edge (training pipeline, run)")
    started = time.perf_counter()
    text = bert_tiny(4, tokens=TRAINING_TOKENS, layers=1)
    reference = parse_module(text, "bert-tiny.mlir")
    TeAutodiff().apply(make_context(), reference)
    signature = find_function(reference, "main")
    rng = np.random.default_rng(0)
    inputs = {name: (rng.standard_normal(tuple(t.get_shape())) * 0.1).astype(np.float32)
              for name, t in zip(signature.arg_names, signature.function.function_type.inputs)}
    want, _ = run(reference, inputs)
    ok = True
    measured = {}
    for label, order, partition in (("baseline (dX then dW)", "sequential", "none"),
                                    ("IGO (order and partition by cost)", "cost", "cost")):
        module = parse_module(text, "bert-tiny.mlir")
        TrainingPipeline(device="npu-edge", order=order, partition=partition).apply(make_context(), module)
        got, report = run(module, inputs)
        kernels = [op for op in module.walk() if isinstance(op, KernelOp)]
        device = npu_device_of(module.attributes["irc.target"])
        # what the cost model predicted for each lowered pair is what the program took (the
        # report lists every NPU program in order: the pairs' kernels and te-to-npu's matmuls)
        programs = [op for op in module.walk() if isinstance(op, (KernelOp, MatmulOp))]
        for kernel, executed in zip(programs, report.kernels):
            if not isinstance(kernel, KernelOp):
                continue
            layer, tiling, _, _ = plan_of(kernel, device)
            scheme = kernel.attributes.get("partition")
            predicted = evaluate(layer, device, COST_ORDER.get(kernel.order.data, kernel.order.data),
                                 scheme.data if scheme else None,
                                 int(kernel.attributes["parts"].value.data) if scheme else None, tiling)
            ok &= predicted.dram_bytes == executed.dram_bytes and abs(predicted.cycles - executed.cycles) < 1e-6
        measured[label] = report
        orders = ", ".join(sorted({k.order.data for k in kernels}))
        batched = sum(1 for op in module.walk() if isinstance(op, GradPairOp))
        print(f"  {label}: {len(kernels)} NPU kernels (orders {orders}; {batched} batched attention pairs, a GEMM "
              f"per head, stay igo): {report.total_cycles / 1e3:,.1f} kcycles "
              f"(stall {report.stall_cycles / 1e3:,.1f}), DRAM {report.dram_bytes / 2**20:.2f} MiB "
              f"(dY read {report.read['dY'] / 2**20:.2f} MiB)")
        ok &= all(_close(got[name], want[name]) for name in want)
    base, igo = measured.values()
    print(f"  IGO vs baseline, measured on the interpreter: time {_change(igo.total_cycles, base.total_cycles)}, "
          f"DRAM {_change(igo.dram_bytes, base.dram_bytes)}, dY traffic {_change(igo.read['dY'], base.read['dY'])}")
    print("  (the baseline is the paper's: dX and dW as two operators, each loading dY from DRAM; the fused\n"
          "   order reads dY once but, its two gradients' tiles sharing the SPM, moves more of W, X and the partial\n"
          "   sums, so DRAM drops less than dY traffic, and time, the DMAs overlapping the array, less still:\n"
          "   benchmarks/igo.py measures the paper's workloads and says why its figures differ from the paper's)")
    print(f"  checks: {len(want) - 1} weight gradients and the loss of both programs vs the te-level unfused program, "
          f"each kernel's DRAM bytes and cycles vs irc.cost.igo's prediction: {'OK' if ok else 'MISMATCH'} "
          f"({time.perf_counter() - started:.1f} s)")
    return ok


def _close(got: np.ndarray, want: np.ndarray) -> bool:
    return bool(np.allclose(got, want, rtol=1e-4, atol=1e-4 * max(1.0, float(np.max(np.abs(want))))))


def _change(new: float, old: float) -> str:
    return f"{100 * (new - old) / old:+.1f}%"


def offchip() -> bool:
    from irc.dse import builtin_model
    from irc.planner.elk import elk_plan, preload_ops, weight_bytes
    from irc.planner.op_table import FrontierCache

    device = "tiny16-hbm"
    print(f"\n== 5. Larger than SRAM, preloaded from HBM on {device} (ELK)")
    model, layer_of, _ = builtin_model("llama2-13b", batch=4, seq=64, chips=1, layers=8, factor=32)
    cache = FrontierCache(device, "t10")
    total = sum(weight_bytes(op) for op in model.ops)
    sram = cache.device.sram_bytes * cache.device.cores
    print(f"  Llama2-13B/32, 8 layers, batch 4, KV cache of 64 tokens: {total / 2**20:.1f} MiB of weights and "
          f"KV cache, {sram / 2**20:.1f} MiB of SRAM")
    ops = preload_ops(model, cache, layer_of)
    clock = cache.device.clock_hz
    latency = {d: elk_plan(model, cache, d, ops=ops, max_displacement=1).latency_cycles / clock * 1e3
               for d in ("basic", "full", "ideal")}
    print(f"  per-token latency: ELK-Full {latency['full']:.3f} ms, Basic {latency['basic']:.3f} ms "
          f"({latency['basic'] / latency['full']:.2f}x slower), Ideal {latency['ideal']:.3f} ms "
          f"(ELK-Full at {100 * latency['ideal'] / latency['full']:.1f}% of Ideal)")
    ok = total > sram and latency["ideal"] <= latency["full"] <= latency["basic"]
    lines = [f'  %h{i} = te.op "H[m,n] += X[m,k] * W[k,n]" ({"%x" if i == 0 else f"%r{i - 1}"}, %w{i}) : '
             f'(tensor<16x256xf32>, tensor<256x256xf32>) -> tensor<16x256xf32>\n'
             f'  %r{i} = te.op "R[m,n] = relu(H[m,n])" (%h{i}) : (tensor<16x256xf32>) -> tensor<16x256xf32>'
             for i in range(4)]
    weights = ", ".join(f'%w{i}: tensor<256x256xf32> {{irc.name = "w{i}", irc.weight}}' for i in range(4))
    text = (f'func.func @main(%x: tensor<16x256xf32> {{irc.name = "x"}}, {weights}) -> (tensor<16x256xf32> '
            f'{{irc.name = "y"}}) {{\n' + "\n".join(lines) + "\n  func.return %r3 : tensor<16x256xf32>\n}\n")
    rng = np.random.default_rng(0)
    inputs = {"x": rng.standard_normal((16, 256)).astype(np.float32)}
    for i in range(4):
        inputs[f"w{i}"] = (rng.standard_normal((256, 256)) / 16).astype(np.float32)
    results, report = compile_and_run(text, device, inputs=inputs)
    error = max(report.max_abs_error.values())
    print(f"  4 x 256 KiB MLP weights (1 MiB of SRAM) compiled with preload-schedule, run: max |device - te| = {error:.2e}")
    print(_indent("\n".join(str(report.chip).splitlines()[-3:])))
    return ok and error < 1e-4


def dlrm_on_mtia() -> bool:
    from xdsl.context import Context

    from irc.workloads.dlrm import LC, SMALL, dlrm_inputs, dlrm_mtia_model, dlrm_te, dlrm_te_classes
    from irc.passes.mtia_partition import MtiaPartition
    from irc.lowering.te_to_mtia import TeToMtia
    from irc.planner.mtia import plan_model
    from irc.runner import run

    print(f"\n== 6. One {SMALL.name} batch ({SMALL.batch} samples) on mtia-v1 (te -> mtia)")
    int8 = ("bot1", "top0")
    text = dlrm_te(SMALL, int8)
    inputs = dlrm_inputs(SMALL, int8)
    reference, _ = run(parse_module(text, "dlrm.mlir"), inputs)
    module = parse_module(text, "dlrm.mlir")
    MtiaPartition(device="mtia-v1").apply(Context(), module)
    TeToMtia().apply(Context(), module)
    results, report = run(module, inputs)
    # the report's totals (its per-kernel lines are `irc-run --report`'s)
    print(_indent("\n".join(line for line in str(report).splitlines() if not line.startswith("  kernel "))))
    ok = _check("probabilities vs te level", results["result0"], reference["result0"], 1e-5)
    classes = dlrm_te_classes(SMALL, int8)
    executed: dict = {}
    for kernel in report.kernels:
        executed[classes.get(kernel.name, "Others")] = executed.get(classes.get(kernel.name, "Others"), 0.0) \
            + kernel.total / report.total_cycles
    table_iii = "FC 42.1%, EB 31.2%, Others 7.6%, Transpose 8.5%, BatchMatMul 3.3%, Dequantize 2.9%, Concat 2.9%, " \
                "Quantize 1.6%"
    print("  executed operator breakdown of this batch: " + _shares(executed))
    print(f"  (Table III, a medium-complexity DLRM at batch 64: {table_iii})")
    model = dlrm_mtia_model(LC)
    plan = plan_model(model, "mtia-v1")
    shares: dict = {}
    for name, op in plan.ops:
        shares[model.categories[name]] = shares.get(model.categories[name], 0.0) + op.seconds / plan.seconds
    print(f"  {LC.name} batch {LC.batch} planned on mtia-v1: {plan.seconds * 1e6:.1f} us per batch; planned "
          f"operator breakdown: " + _shares(shares))
    return ok


def _shares(shares: dict) -> str:
    return ", ".join(f"{name} {share * 100:.1f}%" for name, share in sorted(shares.items(), key=lambda x: -x[1]))


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def main() -> int:
    checks = [mlp(), bert(), model_wide(), training(), offchip(), dlrm_on_mtia()]
    print("\nall checks passed" if all(checks) else "\nSOME CHECKS FAILED")
    return 0 if all(checks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
