"""`max_file_bytes`: a huge file is skipped before it is read; the other files go on."""

from __future__ import annotations

from pathlib import Path

from ragflow_config.pipeline import Pipeline, RunOptions

from .test_run import GOOD, actions, documents, make_project


async def test_a_file_over_max_file_bytes_is_skipped_with_its_size(tmp_path: Path) -> None:
    path = make_project(tmp_path, broken=False)
    path.write_text(path.read_text() + "    max_file_bytes: 1000\n", encoding="utf-8")
    (tmp_path / "docs" / "huge.log.txt").write_text("a log line\n" * 100, encoding="utf-8")
    pipeline = Pipeline.load(path)

    report = await pipeline.run(options=RunOptions(workers=0))

    assert actions(report)["huge.log.txt"] == "unsupported"
    [kb] = report.knowledge_bases
    [reason] = [c.reason for c in kb.changes if c.path == "huge.log.txt"]
    assert reason == "1,100 bytes, more than max_file_bytes (1,000); raise it to index the file"
    assert sorted(await documents(pipeline)) == sorted(GOOD)
    assert not report.failed
