"""The planner answers in bounded memory: spaces with no plan that fits (a 12288^3 f16
matmul, a 10-axis contraction) get a clean "no plan fits" with the least memory any
plan needs, from ``irc-plan`` run under an address-space limit of 1.5 GB (issue 13:
they used to take 6-8 GB or die with MemoryError)."""

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from irc.planner import OpSpec, PlanError, TensorSpec, search

LIMIT = 1536 * 2**20
IRC_PLAN = str(Path(sys.executable).parent / "irc-plan")


def _limited():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def run_limited(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([IRC_PLAN, *args], capture_output=True, text=True, preexec_fn=_limited, timeout=600)


@pytest.mark.slow
@pytest.mark.parametrize(
    "expr, shape, least",
    [
        # (the least plans split k: their f16 outputs hold f32 partial sums, 4 bytes each)
        ("C[m,n] += A[m,k] * B[k,n]", "m=12288,k=12288,n=12288", 884844),
        ("C[a,b,c,d,e] += A[a,b,c,f,g,h,i,j] * B[f,g,h,i,j,d,e]",
         ",".join(f"{axis}=16" for axis in "abcdefghij"), 8921088),
    ],
    ids=["matmul-12288", "contraction-10-axes"],
)
def test_no_plan_fits_answers_within_bounded_memory(expr, shape, least):
    done = run_limited("--expr", expr, "--shape", shape, "--dtype", "f16", "--device", "ipu-mk2")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr
    assert f"no plan fits: the least memory per core any plan needs is {least} bytes" in done.stderr
    assert done.stderr.startswith("error: ")


def test_least_memory_is_exact_on_a_small_space():
    """The "no plan fits" figure is the least memory of any plan (a memory-only search
    over what the bounds kept back), checked against scoring every plan."""
    from dataclasses import replace

    from irc.devices import load_device
    from irc.planner.enumerate import candidate_set
    from irc.planner.vector_score import candidate_memory

    spec = OpSpec(
        axes=(("b", 3), ("m", 12), ("k", 10), ("n", 6)),
        tensors=(TensorSpec("C", (("b",), ("m",), ("n",))), TensorSpec("A", (("b",), ("m",), ("k",))),
                 TensorSpec("B", (("b",), ("k",), ("n",)))),
        reduction_axes=("k",), kind="matmul",
    )
    for sram in (64, 128, 200):
        device = replace(load_device("tiny8"), sram_bytes=sram)
        least = int(candidate_memory(spec, candidate_set(spec, device, 0.0, 2.0)).min())
        assert least > sram
        with pytest.raises(PlanError, match=f"needs is {least} bytes"):
            search(spec, device, "t10", min_utilization=0.0, max_padding=2.0)
