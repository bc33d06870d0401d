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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # ray.init forks this process to start Ray's own processes and runs Python in each
    # child before exec. Forked while another library's gRPC threads are busy (a Milvus
    # Lite client's), children aborted or hung, and ray.init failed in 3 starts of 8
    # (none of 8 without them; it failed once in a loaded full run). So the tests that
    # start Ray run first, before any test has made a gRPC client. The sort is stable.
    items.sort(key=lambda item: "ray_cluster" not in getattr(item, "fixturenames", ()))


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[None]:
    # The workers import the test modules' components (by reference), and the
    # ragflow_config this process imports (a worktree's, under PYTHONPATH).
    path = os.pathsep.join(entry for entry in sys.path if entry)
    ray.init(
        address="local",  # a cluster of the tests' own, even beside a `ray start` one
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
