"""The Hypothesis settings every fuzzer here runs under: bounded in CI, long by hand.

``fuzzing`` is a decorator (``@fuzzing`` under ``@given``). By default it runs
a fixed number of examples per target, derandomized, so a CI run costs the
same every time and fails the same way. ``RAGFLOW_FUZZ=long python -m pytest
tests/fuzz`` runs 10,000 examples per target with a fresh random seed, to
find what the short run has not. An example that once failed is kept as an
``@example`` beside its fuzzer. The profile is not loaded globally, so the
other Hypothesis tests of the suite keep their own settings.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

LONG = os.environ.get("RAGFLOW_FUZZ") == "long"

fuzzing = settings(
    max_examples=10_000 if LONG else 60,
    derandomize=not LONG,
    deadline=None,  # the machines are shared and noisy: no time is asserted
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
)
