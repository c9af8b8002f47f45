"""The fuzzer's generators of issue 27 in CI (`tests/fuzz_devices.py`): special values
compared at te level and on a chip, and malformed device files of every family. Every
case must end as the numerics contract and the device schemas say: no te/device
mismatch, no malformed file accepted, no internal error. ``FUZZ_CASES=N`` runs more;
``benchmarks/fuzz.py --tools te-vs-device,device-files`` prints the figures."""

from __future__ import annotations

import os

import pytest

from tests.fuzzing import BAD_OUTCOMES, fuzz

CASES = {"te-vs-device": 16, "device-files": 40}
SEED = int(os.environ.get("FUZZ_SEED", "0"))


@pytest.mark.slow
@pytest.mark.parametrize("group", sorted(CASES))
def test_every_generated_case_ends_well(group):
    count = int(os.environ.get("FUZZ_CASES", CASES[group]))
    bad = []

    def report(case, outcome):
        if outcome.kind in BAD_OUTCOMES:
            bad.append(f"{outcome.kind}: {case.describe()}\n    " + "\n    ".join(outcome.stderr.splitlines()[-3:]))

    counts = fuzz([group], count, SEED, report=report)
    assert sum(counts[group].values()) == count
    assert not bad, f"{len(bad)} of {count} {group} cases ended badly:\n" + "\n".join(bad[:10])
    # the te-vs-device cases run and compare; every malformed file is refused
    assert counts[group]["ok" if group == "te-vs-device" else "diagnostic"] == count
