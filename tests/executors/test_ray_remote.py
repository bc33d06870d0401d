"""A remote source on the Ray executor: objects of a real S3 server on loopback (moto,
behind a counting proxy) fill the collection the local executor fills, and an unchanged
re-run on Ray downloads nothing.

The run's driver fetches each object (streamed to a temporary file, read, removed) and
hands its bytes to a Ray task, as it does a local file's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sources._s3_server import S3Server
from sources.test_s3 import pipeline, s3  # noqa: F401 - s3 is the fixture of the bucket

from executors.test_ray import assert_same, contents, counts
from ragflow_config.pipeline import Pipeline, Registry

pytestmark = pytest.mark.usefixtures("ray_cluster")


def on(folder: Path, server: S3Server, execution: str) -> Pipeline:
    """test_s3's pipeline (a bucket's six Markdown objects) in ``folder``, on ``execution``."""
    folder.mkdir()
    path = pipeline(folder, server)
    path.write_text(path.read_text(encoding="utf-8") + f"execution: {execution}\n")
    return Pipeline.load(path, Registry.from_entry_points())


async def test_objects_of_a_bucket_index_on_ray_as_on_the_local_executor(
    tmp_path: Path,
    s3: S3Server,  # noqa: F811 - the fixture
) -> None:
    local = on(tmp_path / "local", s3, "{type: local}")
    assert counts(await local.run()) == {"add": 6}
    on_ray = on(tmp_path / "ray", s3, "{type: ray}")
    s3.requests.clear()
    assert counts(await on_ray.run()) == {"add": 6}
    assert s3.requests.object_gets() == 6
    assert_same(await contents(local), await contents(on_ray))

    s3.requests.clear()
    assert counts(await on_ray.run()) == {"unchanged": 6}
    assert s3.requests.object_gets() == 0
