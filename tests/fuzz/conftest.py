"""Hypothesis profiles for the fuzzers: bounded in CI, long by hand.

``ci`` (the default) runs a fixed number of examples per target, derandomized,
so a CI run costs the same every time and fails the same way.
``long`` (``RAGFLOW_FUZZ=long python -m pytest tests/fuzz``) runs 10,000
examples per target with a fresh random seed, to find what ``ci`` has not.
An example that once failed is kept as an ``@example`` beside its fuzzer.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=60,
    derandomize=True,
    deadline=None,  # the machines are shared and noisy: no time is asserted
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
)
settings.register_profile(
    "long",
    max_examples=10_000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile(os.environ.get("RAGFLOW_FUZZ", "ci"))
