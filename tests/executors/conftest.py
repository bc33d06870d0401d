"""A real local Ray cluster, started once for the executor tests and stopped after them."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

ray = pytest.importorskip("ray")


def _import_the_runner() -> bool:
    import ragflow_config.executors.local  # noqa: F401

    return True


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[None]:
    # The workers import the test modules' components (by reference), and the
    # ragflow_config this process imports (a worktree's, under PYTHONPATH).
    path = os.pathsep.join(entry for entry in sys.path if entry)
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": path}},
    )
    try:
        # Both workers import the runner's modules before the first timed task.
        warm = ray.remote(_import_the_runner)
        assert ray.get([warm.remote() for _ in range(2)])
        yield
    finally:
        ray.shutdown()
