"""The pipeline file's `execution` block: validated like any component, local by default."""

from __future__ import annotations

from pathlib import Path

from ragflow_config.executors import LocalExecutor
from ragflow_config.executors.ray import RayExecutor
from ragflow_config.pipeline import Pipeline, default_registry
from ragflow_config.pipeline._validate import check_file

PIPELINE = """\
version: 1
embeddings:
  model: {type: hashing}
vector_stores:
  store: {type: qdrant, parameters: {path: store}}
knowledge_bases:
  - name: docs
    embedding: model
    vector_store: store
    collection: docs
"""


def test_a_bad_execution_parameter_is_reported_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "pipeline.yaml"
    path.write_text(
        PIPELINE + "execution:\n  type: ray\n  parameters: {parse_timeout_seconds: 0}\n"
    )
    loaded, issues = check_file(path, default_registry())
    assert loaded is None
    [issue] = [str(issue) for issue in issues]
    assert "pipeline.yaml:13:39: execution.parameters.parse_timeout_seconds:" in issue


async def test_the_default_executor_is_local_and_a_block_picks_ray(tmp_path: Path) -> None:
    path = tmp_path / "pipeline.yaml"
    path.write_text(PIPELINE)
    async with Pipeline.load(path).build() as built:
        assert type(built.executor) is LocalExecutor
    path.write_text(PIPELINE + "execution: {type: ray, parameters: {address: auto}}\n")
    async with Pipeline.load(path).build() as built:
        assert isinstance(built.executor, RayExecutor)
        assert built.executor.parameters.address == "auto"
