"""Sources stay inside the pipeline file's repository: a pipeline file from a pull request
must not become a way to index (and so to search) any file the indexing process can read."""

from __future__ import annotations

import logging
import os
import textwrap
from pathlib import Path

import pytest

from ragflow_config.pipeline import Pipeline, RunOptions, RunReport
from ragflow_config.pipeline._sources import discover
from ragflow_config.pipeline._validate import check_file, source_issues
from ragflow_config.sources import SourceOutsideError

SECRET = "OPENAI_API_KEY=sk-test-4f9a2c7e1b"
FOX = "# Foxes\n\nThe quick brown fox jumps over the lazy dog.\n"


def write_pipeline(path: Path, *sources: str) -> Path:
    """A pipeline file indexing ``sources`` (flow mappings) with hashing into local Qdrant."""
    path.parent.mkdir(parents=True, exist_ok=True)
    listed = "".join(f"\n      - {source}" for source in sources)
    path.write_text(
        textwrap.dedent("""\
        version: 1
        vector_stores:
          disk: {{type: qdrant, parameters: {{path: store}}}}
        embeddings:
          hashing: {{type: hashing, parameters: {{dimensions: 64}}}}
        knowledge_bases:
          - name: docs
            sources:{sources}
            embedding: hashing
            vector_store: disk
            collection: docs
        """).format(sources=listed),
        encoding="utf-8",
    )
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """``project/docs`` holding one document, and a secrets file beside the project."""
    (tmp_path / "project" / "docs").mkdir(parents=True)
    (tmp_path / "project" / "docs" / "fox.md").write_text(FOX, encoding="utf-8")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secrets.md").write_text(f"{SECRET}\n", encoding="utf-8")
    return tmp_path / "project"


def indexed(report: RunReport) -> dict[str, str]:
    [kb] = report.knowledge_bases
    return {change.path: change.action for change in kb.changes}


async def found_in(pipeline: Pipeline, query: str) -> list[str]:
    """The files whose chunks a search finds."""
    async with pipeline.build() as built:
        hits = await built.knowledge_base("docs").search([query], top_k=10)
    return sorted(hit.chunk.source for hit in hits)


async def test_a_symlink_to_a_secrets_file_outside_is_skipped_and_never_searchable(
    project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    link = project / "docs" / "environ.md"
    link.symlink_to(project.parent / "outside" / "secrets.md")
    pipeline = Pipeline.load(write_pipeline(project / "pipeline.yaml", "{path: docs}"))

    with caplog.at_level(logging.WARNING, logger="ragflow_config.pipeline"):
        report = await pipeline.run(options=RunOptions(workers=0))

    assert indexed(report) == {"fox.md": "add"}
    assert not report.failed
    [warning] = [r.getMessage() for r in caplog.records if r.name == "ragflow_config.pipeline"]
    assert warning.startswith(f"skipped {link}: a symlink to ")
    assert "set `allow_outside: true` on the source" in warning
    assert "sk-test" not in caplog.text
    assert await found_in(pipeline, "OPENAI_API_KEY sk-test-4f9a2c7e1b") == ["fox.md"]


async def test_a_symlink_to_a_folder_outside_is_skipped(
    project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    link = project / "docs" / "elsewhere"
    link.symlink_to(project.parent / "outside", target_is_directory=True)
    pipeline = Pipeline.load(write_pipeline(project / "pipeline.yaml", "{path: docs}"))

    with caplog.at_level(logging.WARNING, logger="ragflow_config.pipeline"):
        report = await pipeline.run(options=RunOptions(workers=0))

    assert indexed(report) == {"fox.md": "add"}
    assert f"skipped {link}: a symlink to {project.parent / 'outside'}" in caplog.text


async def test_a_fifo_in_the_source_folder_is_never_opened(
    project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Opening a FIFO for reading blocks until a writer comes: were the runner to
    # open it, this test would hang, so passing proves it was never opened.
    fifo = project / "docs" / "pipe.md"
    os.mkfifo(fifo)
    pipeline = Pipeline.load(write_pipeline(project / "pipeline.yaml", "{path: docs}"))

    with caplog.at_level(logging.WARNING, logger="ragflow_config.pipeline"):
        report = await pipeline.run(options=RunOptions(workers=0))

    assert indexed(report) == {"fox.md": "add"}
    assert f"skipped {fifo}: not a regular file" in caplog.text


def test_a_file_swapped_after_discovery_for_a_fifo_or_a_link_outside_is_not_read(
    project: Path,
) -> None:
    pipeline = Pipeline.load(write_pipeline(project / "pipeline.yaml", "{path: docs}"))
    [kb] = pipeline.spec.knowledge_bases
    [fox] = discover(kb, project)
    assert fox.read() == FOX.encode()

    fox.absolute.unlink()
    fox.absolute.symlink_to(project.parent / "outside" / "secrets.md")
    with pytest.raises(OSError, match=r"now leads to .*secrets\.md, outside"):
        fox.read()

    fox.absolute.unlink()
    os.mkfifo(fox.absolute)
    with pytest.raises(OSError, match="no longer a regular file"):
        fox.read()


async def test_a_file_swapped_for_a_link_outside_during_a_run_fails_alone_and_keeps_its_version(
    project: Path,
) -> None:
    pipeline = Pipeline.load(write_pipeline(project / "pipeline.yaml", "{path: docs}"))
    await pipeline.run(options=RunOptions(workers=0))
    async with pipeline.build() as built:
        [stored] = await built.knowledge_base("docs").list_documents()
    fox = project / "docs" / "fox.md"

    def swap(kb: str, files: int) -> None:  # listed, not yet read: a checkout moving under a run
        fox.unlink()
        fox.symlink_to(project.parent / "outside" / "secrets.md")

    report = await pipeline.run(options=RunOptions(workers=0, files_found=swap))

    [change] = report.knowledge_bases[0].changes
    assert (change.action, change.path, change.document_id) == (
        "unreadable",
        "fox.md",
        stored.document_id,
    )
    assert change.reason.startswith("cannot read the file: it now leads to ")
    assert change.reason.endswith(f"secrets.md, outside {project.resolve()}")
    async with pipeline.build() as built:
        kb = built.knowledge_base("docs")
        assert await kb.list_documents() == [stored]  # the old version, untouched
        chunks = await kb.list_chunks(stored.document_id, limit=100)
    assert [chunk.content.text for chunk in chunks] == [FOX.strip()]


async def test_symlinks_within_the_tree_are_followed_once(project: Path) -> None:
    (project / "shared").mkdir()
    (project / "shared" / "owl.md").write_text("# Owls\n\nOwls hunt at night.\n", "utf-8")
    (project / "docs" / "alias.md").symlink_to(project / "docs" / "fox.md")
    (project / "docs" / "shared").symlink_to(project / "shared", target_is_directory=True)
    (project / "docs" / "loop").symlink_to(project / "docs", target_is_directory=True)
    pipeline = Pipeline.load(write_pipeline(project / "pipeline.yaml", "{path: docs}"))

    report = await pipeline.run(options=RunOptions(workers=0))

    assert indexed(report) == {"alias.md": "add", "fox.md": "add", "shared/owl.md": "add"}


@pytest.mark.parametrize(
    ("written", "message"),
    [
        (
            "{path: /etc, include: [passwd]}",
            "source path '/etc' is absolute; write it relative to the pipeline file, within "
            "{root}, or set `allow_outside: true` on the source to index it anyway",
        ),
        (
            "{path: ../outside}",
            "source path '../outside' leads to {outside}, outside {root}; set "
            "`allow_outside: true` on the source to index it anyway",
        ),
        (
            "{path: linked}",  # a folder inside, but a symlink to one outside
            "source path 'linked' leads to {outside}, outside {root}; set "
            "`allow_outside: true` on the source to index it anyway",
        ),
    ],
)
def test_validate_reports_a_source_path_leading_outside_at_its_line(
    project: Path, monkeypatch: pytest.MonkeyPatch, written: str, message: str
) -> None:
    (project / "linked").symlink_to(project.parent / "outside", target_is_directory=True)
    path = write_pipeline(project / "pipeline.yaml", "{path: docs}", written)
    monkeypatch.chdir(project)

    loaded, issues = check_file(path)

    assert loaded is None
    expected = message.format(root=project, outside=project.parent / "outside")
    assert [str(issue) for issue in issues] == [
        f"pipeline.yaml:10:16: knowledge_bases[0].sources[1].path: {expected}"
    ]


def test_discovery_refuses_a_source_folder_that_became_a_link_outside_after_validation(
    project: Path,
) -> None:
    pipeline = Pipeline.load(write_pipeline(project / "pipeline.yaml", "{path: docs}"))
    (project / "docs" / "fox.md").unlink()
    (project / "docs").rmdir()
    (project / "docs").symlink_to(project.parent / "outside", target_is_directory=True)

    with pytest.raises(SourceOutsideError, match=r"docs: source path 'docs' leads to .*outside"):
        list(discover(pipeline.spec.knowledge_bases[0], project))


async def test_the_repository_holding_the_pipeline_file_is_inside(project: Path) -> None:
    nested = write_pipeline(project / "pipelines" / "pipeline.yaml", "{path: ../docs}")
    assert check_file(nested)[1] != []  # no repository: only the file's own folder
    (project / ".git").mkdir()

    report = await Pipeline.load(nested).run(options=RunOptions(workers=0))

    assert indexed(report) == {"fox.md": "add"}


async def test_allow_outside_lets_a_trusted_file_reach_out_but_never_read_special_files(
    project: Path,
) -> None:
    outside = project.parent / "outside"
    os.mkfifo(outside / "pipe.md")
    (project / "docs" / "environ.md").symlink_to(outside / "secrets.md")
    path = write_pipeline(
        project / "pipeline.yaml",
        "{path: docs, allow_outside: true}",
        f"{{path: {outside}, allow_outside: true}}",
    )
    pipeline = Pipeline.load(path)

    report = await pipeline.run(options=RunOptions(workers=0))

    assert indexed(report) == {"environ.md": "add", "fox.md": "add", "secrets.md": "add"}
    assert await found_in(pipeline, "OPENAI_API_KEY") == ["environ.md", "fox.md", "secrets.md"]


def test_validate_counts_no_file_behind_a_link_outside_as_a_match(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "links").mkdir()
    (project / "links" / "secrets.md").symlink_to(project.parent / "outside" / "secrets.md")
    path = write_pipeline(project / "pipeline.yaml", "{path: links}")
    monkeypatch.chdir(project)

    loaded, issues = check_file(path)

    assert issues == [] and loaded is not None
    assert [str(issue) for issue in source_issues(loaded)] == [
        "pipeline.yaml:9:9: knowledge_bases[0].sources[0].include: no file in 'links' matches "
        "include ['**/*'] (patterns are gitignore-style: `*.md` matches at any depth)"
    ]
    # Lifting the confinement makes the link's target a match.
    allowed = write_pipeline(project / "allowed.yaml", "{path: links, allow_outside: true}")
    loaded, issues = check_file(allowed)
    assert issues == [] and loaded is not None
    assert source_issues(loaded) == []
