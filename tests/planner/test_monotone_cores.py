"""More cores never make an operator slower.

Without T10's utilisation floor a plan may leave cores idle, so every plan of a device is
also a plan of a device with more cores of the same kind (the same cores per chip, so a
plan on one chip's cores pays no inter-chip overhead on either): an op's best time can
only fall as cores are added. With the floor it did not: on the four-chip ipu-pod4-hbm
an RMSNorm reduction was spread over 5,440 cores and took 20.2 us against 7.9 us on one
ipu-mk2."""

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from irc.devices import load_device
from irc.planner import PlanError, matmul_spec, search

from tests.planner.test_small_ops_exact import SMALL_OPS, small_spec


def best_cycles(spec, device) -> float:
    try:
        return search(spec, device, "t10").best.cycles
    except PlanError:
        return float("inf")


def with_cores(base: str, cores: int, sram: int | None):
    """``base`` with ``cores`` cores (and ``sram`` bytes each): several chips of the base's
    size when ``cores`` exceeds one chip's."""
    device = load_device(base)
    return replace(device, name=f"{base}x{cores}", cores=cores, sram_bytes=sram or device.sram_bytes)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(SMALL_OPS) + ["matmul"]),
    extents=st.tuples(st.integers(1, 8), st.integers(1, 8), st.integers(1, 16)),
    cores=st.tuples(st.sampled_from([2, 4, 6, 8, 12, 16]), st.sampled_from([4, 16, 24, 32, 64])),
    sram=st.sampled_from([None, 128, 512]),
)
def test_more_cores_of_the_same_kind_are_never_slower(name, extents, cores, sram):
    fewer, more = sorted(cores)
    spec = (matmul_spec(*extents) if name == "matmul"
            else small_spec(name, extents[: len(SMALL_OPS[name][1])], 2))
    small, large = with_cores("tiny16", fewer, sram), with_cores("tiny16", more, sram)
    assert best_cycles(spec, large) <= best_cycles(spec, small) * (1 + 1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("spec", [
    small_spec("rmsnorm-squares", (32, 5120), 2),
    small_spec("layernorm-mean", (1, 32, 128), 4),
    small_spec("softmax-max", (12, 128, 128), 2),
    matmul_spec(32, 2048, 256),
], ids=["rmsnorm", "layernorm-mean", "softmax-max", "matmul"])
def test_four_ipus_are_never_slower_than_one(spec):
    assert best_cycles(spec, "ipu-pod4-hbm") <= best_cycles(spec, "ipu-mk2") * (1 + 1e-12)
