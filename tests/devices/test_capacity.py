"""Capacity checks for every memory level of every family (issue 27, item 4): what does
not fit a level is an error naming the level, the bytes needed and the capacity; on
mtia-v1 a 262144-cube matmul (three 128 GiB operands) was "planned" into 64 GiB of LPDDR."""

from __future__ import annotations

import dataclasses
import re

import pytest

from irc.devices import DEVICE_DIR, load_device
from irc.planner import PlanError, matmul_spec
from irc.planner.model import ModelOp, ModelSpec
from irc.planner.mtia import EmbeddingSpec, place_model, plan_embedding, plan_operator
from tests.fuzz_devices import MODEL, set_field
from tests.fuzzing import run_tool

MTIA = load_device("mtia-v1")
MATMUL = "C[m,n] += A[m,k] * B[k,n]"


def test_the_issues_matmul_does_not_fit_mtia_v1s_lpddr():
    outcome = run_tool("irc-plan", "--expr", MATMUL, "--shape", "m=262144,k=262144,n=262144", "--device", "mtia-v1",
                       "--cost", "mtia")
    assert outcome.kind == "diagnostic"
    assert "the operator's tensors need 412316860416 B of LPDDR (dram), more than mtia-v1's 68719476736 B" \
        in outcome.stderr
    assert run_tool("irc-plan", "--expr", MATMUL, "--shape", "m=65536,k=65536,n=65536", "--device", "mtia-v1",
                    "--cost", "mtia").kind == "ok"   # 24 GiB


def test_mtia_levels_sram_lpddr_and_local_memory():
    with pytest.raises(PlanError, match=r"need 167772160 B of on-chip SRAM \(sram\), more than mtia-v1's 134217728 B"):
        plan_operator(matmul_spec(4096, 8192, 4096), MTIA, homes={"C": "sram", "A": "sram", "B": "sram"})
    tables = EmbeddingSpec(batch=4, pooling=2, rows=1 << 37, dim=1, tables=1)
    with pytest.raises(PlanError, match=r"embedding tables need 137438953472 B of LPDDR \(dram\), more than"):
        plan_embedding(tables, MTIA)
    tiny_pe = dataclasses.replace(MTIA, local_bytes=4096)
    with pytest.raises(PlanError, match=r"local memory per PE \(local, 4096 B; the smallest needs \d+ B\)"):
        plan_operator(matmul_spec(256, 256, 256), tiny_pe, rotation=False)


def test_mtia_model_activations_must_fit_the_sram():
    spec = matmul_spec(8192, 8192, 8192)    # 128 MiB of activations per tensor
    model = ModelSpec("wide", (ModelOp("fc", spec, weights=("B",)),))
    with pytest.raises(PlanError, match=r"activations of wide need 268435456 B of on-chip SRAM \(sram\), more than"):
        place_model(model, MTIA)


def _npu_file(tmp_path, dram: int):
    text, _ = set_field((DEVICE_DIR / "npu_edge.toml").read_text(), "dram.bytes_per_core", str(dram))
    (tmp_path / "npu.toml").write_text(text)
    (tmp_path / "model.mlir").write_text(MODEL)


def test_npu_dram_capacity_in_the_training_pipeline(tmp_path):
    _npu_file(tmp_path, 1024)
    outcome = run_tool("irc-opt", "model.mlir", "-p", 'training{device="npu.toml"}', cwd=tmp_path)
    assert outcome.kind == "diagnostic"
    assert re.search(r"model.mlir:\d+:\d+: error: 'te.op' op the gradients of layer .* need 1536 B of DRAM, more "
                     r"than npu-edge's 1024 B", outcome.stderr), outcome.stderr


def test_npu_dram_capacity_in_the_lowering_and_the_interpreter(tmp_path):
    _npu_file(tmp_path, 1 << 20)
    assert run_tool("irc-opt", "model.mlir", "-p", 'te-autodiff,igo-fuse{device="npu.toml"}', "-o", "igo.mlir",
                    cwd=tmp_path).kind == "ok"
    _npu_file(tmp_path, 1024)
    lowered = run_tool("irc-opt", "igo.mlir", "-p", 'igo-to-npu{device="npu.toml"}', cwd=tmp_path)
    assert lowered.kind == "diagnostic" and "need 1536 B of DRAM, more than npu-edge's 1024 B" in lowered.stderr
    _npu_file(tmp_path, 1 << 20)
    assert run_tool("irc-opt", "igo.mlir", "-p", 'igo-to-npu{device="npu.toml"}', "-o", "npu.mlir",
                    cwd=tmp_path).kind == "ok"
    program = (tmp_path / "npu.mlir").read_text()
    assert "dram_bytes_per_core = 1048576" in program
    (tmp_path / "small.mlir").write_text(program.replace("dram_bytes_per_core = 1048576", "dram_bytes_per_core = 1024"))
    ran = run_tool("irc-run", "small.mlir", cwd=tmp_path)
    assert ran.kind == "diagnostic" and "need 1536 B of DRAM, more than npu-edge's 1024 B" in ran.stderr


def test_hbm_capacity_of_elk_plans(tmp_path):
    text = (DEVICE_DIR / "tiny16_hbm.toml").read_text()
    text, _ = set_field(text, "cores.sram_bytes", "8192")
    text, _ = set_field(text, "offchip.capacity_bytes", "1024")
    (tmp_path / "hbm.toml").write_text(text)
    weights = ", ".join(f'%w{i}: tensor<64x64xf32> {{irc.name = "w{i}", irc.weight}}' for i in range(6))
    body, previous = [], "%x"
    for i in range(6):
        body.append(f'  %h{i} = te.op "Y[m,n] += X[m,k] * W[k,n]" ({previous}, %w{i}) : '
                    f"(tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>")
        previous = f"%h{i}"
    (tmp_path / "deep.mlir").write_text(f'func.func @main(%x: tensor<64x64xf32> {{irc.name = "x"}}, {weights}) -> '
                                        f'(tensor<64x64xf32>) {{\n' + "\n".join(body)
                                        + f"\n  func.return {previous} : tensor<64x64xf32>\n}}\n")
    outcome = run_tool("irc-opt", "deep.mlir", "-p", 'rtensor-partition{device="hbm.toml"}', cwd=tmp_path)
    assert outcome.kind == "diagnostic"
    assert "the model's weights need 98304 B of off-chip memory (HBM), more than tiny16-hbm's 1024 B" in outcome.stderr
