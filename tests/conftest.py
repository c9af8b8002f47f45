"""Shared pytest set-up: hypothesis profiles sized for CI's 2 cores."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(  # derandomized: a CI run is reproducible, a failure stays found
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.register_profile(
    "dev", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
