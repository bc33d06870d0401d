"""An S3 source against a real S3 REST server on loopback (moto), through the command line:
what a run fetches is counted at the server.

Qdrant's local mode and the hashing model; the objects are written straight to the
server between runs, as another system writing the bucket would.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragflow_config.cli import main
from ragflow_config.sources import document_id

from ._runs import counts, run, write_pipeline
from ._s3_server import S3Server, served

BUCKET = "team-docs"
SOURCE = """\
      - type: s3
        parameters:
          url: s3://{bucket}/kb
          endpoint_url: {endpoint}
          region: us-east-1
          max_retries: 1
          timeout_seconds: 5
        include: ["*.md"]
"""
TOPICS = ["apples", "pears", "plums", "figs", "dates", "limes"]


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Server]:
    # Credentials from the environment, as the source takes them (moto accepts any).
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    for server in served():
        server.client.create_bucket(Bucket=BUCKET)
        for topic in TOPICS:
            put(server, f"{topic}.md", f"# {topic}\n\nNotes on {topic}, one fruit.\n")
        put(server, "skipped.txt", "not Markdown")
        server.client.put_object(Bucket=BUCKET, Key="kb-old/elsewhere.md", Body=b"not under kb/")
        yield server


def put(s3: S3Server, name: str, text: str) -> None:
    s3.client.put_object(Bucket=BUCKET, Key=f"kb/{name}", Body=text.encode())


def pipeline(tmp_path: Path, s3: S3Server) -> Path:
    return write_pipeline(tmp_path, SOURCE.format(bucket=BUCKET, endpoint=s3.endpoint))


def test_adds_edits_and_deletes_and_an_unchanged_run_fetches_nothing(
    tmp_path: Path, s3: S3Server, capsys: pytest.CaptureFixture[str]
) -> None:
    path = pipeline(tmp_path, s3)
    first = run(path, capsys)
    assert first["exit"] == 0 and counts(first) == {"add": 6}
    assert s3.requests.object_gets() == 6  # each selected object once; skipped.txt never
    [kb] = first["knowledge_bases"]
    ids = {change["path"]: change["document_id"] for change in kb["changes"]}
    # The identity is the object's URL, never where it was downloaded to.
    assert ids["apples.md"] == document_id("docs", f"s3://{BUCKET}/kb", "apples.md")

    s3.requests.clear()
    assert counts(run(path, capsys)) == {"unchanged": 6}
    assert counts(run(path, capsys, "plan")) == {"unchanged": 6}
    assert s3.requests.object_gets() == 0
    assert s3.requests.listings() == 2

    put(s3, "apples.md", "# apples\n\nApples are red, and now also green.\n")
    put(s3, "kiwis.md", "# kiwis\n\nKiwis are brown outside.\n")
    s3.client.delete_object(Bucket=BUCKET, Key="kb/pears.md")
    s3.requests.clear()
    planned = run(path, capsys, "plan")
    assert counts(planned) == {"add": 1, "update": 1, "delete": 1, "unchanged": 4}
    assert s3.requests.object_gets() == 2  # the changed and the new object only
    s3.requests.clear()
    third = run(path, capsys)
    assert counts(third) == {"add": 1, "update": 1, "delete": 1, "unchanged": 4}
    assert s3.requests.object_gets() == 2
    s3.requests.clear()
    assert counts(run(path, capsys)) == {"unchanged": 6}
    assert s3.requests.object_gets() == 0


def test_an_etag_change_with_the_same_bytes_embeds_nothing(
    tmp_path: Path, s3: S3Server, capsys: pytest.CaptureFixture[str]
) -> None:
    path = pipeline(tmp_path, s3)
    assert counts(run(path, capsys)) == {"add": 6}
    key = "kb/figs.md"
    before = s3.client.head_object(Bucket=BUCKET, Key=key)["ETag"]
    # The same bytes again as a multipart upload: S3 gives it another ETag.
    body = s3.client.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    upload = s3.client.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]
    part = s3.client.upload_part(Bucket=BUCKET, Key=key, UploadId=upload, PartNumber=1, Body=body)[
        "ETag"
    ]
    s3.client.complete_multipart_upload(
        Bucket=BUCKET,
        Key=key,
        UploadId=upload,
        MultipartUpload={"Parts": [{"ETag": part, "PartNumber": 1}]},
    )
    assert s3.client.head_object(Bucket=BUCKET, Key=key)["ETag"] != before

    s3.requests.clear()
    document = run(path, capsys)
    assert counts(document) == {"update": 1, "unchanged": 5}
    [kb] = document["knowledge_bases"]
    [update] = [change for change in kb["changes"] if change["action"] == "update"]
    size = len(body)
    assert update["reason"] == f"the source's version changed, its content did not; {size} bytes"
    assert kb["vectors"]["embedded"] == 0 and kb["vectors"]["reused"] == update["chunks"] > 0
    assert s3.requests.object_gets() == 1
    s3.requests.clear()
    assert counts(run(path, capsys)) == {"unchanged": 6}  # the new marker is stored
    assert s3.requests.object_gets() == 0


def test_a_listing_that_fails_on_its_second_page_deletes_nothing(
    tmp_path: Path, s3: S3Server, capsys: pytest.CaptureFixture[str]
) -> None:
    path = pipeline(tmp_path, s3)
    s3.requests.page_size = 2  # 8 keys under the prefix: four pages
    assert counts(run(path, capsys)) == {"add": 6}
    assert s3.requests.listings() == 4

    s3.requests.fail_after_first_page = True
    s3.requests.clear()
    for command in ("plan", "run"):
        document = run(path, capsys, command)
        assert document["exit"] == 1
        message = document["error"]["message"]
        assert f"source s3://{BUCKET}/kb: the listing failed" in message
        assert "503" in message and "nothing is pruned" in message
    assert s3.requests.object_gets() == 0

    s3.requests.fail_after_first_page = False
    assert counts(run(path, capsys)) == {"unchanged": 6}  # every document still there


def test_a_mass_deletion_is_refused_without_force(
    tmp_path: Path, s3: S3Server, capsys: pytest.CaptureFixture[str]
) -> None:
    path = pipeline(tmp_path, s3)
    assert counts(run(path, capsys)) == {"add": 6}
    for topic in TOPICS[:4]:
        s3.client.delete_object(Bucket=BUCKET, Key=f"kb/{topic}.md")
    refused = run(path, capsys)
    assert refused["exit"] == 1 and "max_delete_fraction" in refused["error"]["message"]
    assert counts(run(path, capsys, "run", "--force")) == {"delete": 4, "unchanged": 2}


def test_a_bucket_emptied_beside_a_larger_folder_is_refused_by_its_own_share(
    tmp_path: Path, s3: S3Server, capsys: pytest.CaptureFixture[str]
) -> None:
    """6 of 36 documents is within the knowledge base's 20 %, but all of the bucket's."""
    path = pipeline(tmp_path, s3)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(30):
        (corpus / f"note{i}.md").write_text(f"Local note {i}.\n", encoding="utf-8")
    text = path.read_text(encoding="utf-8")
    path.write_text(
        text.replace("    sources:\n", "    sources:\n      - {path: corpus}\n"), encoding="utf-8"
    )
    assert counts(run(path, capsys)) == {"add": 36}
    for topic in TOPICS:
        s3.client.delete_object(Bucket=BUCKET, Key=f"kb/{topic}.md")
    refused = run(path, capsys)
    assert refused["exit"] == 1
    assert (
        f"would delete 6 of the 6 documents of source s3://{BUCKET}/kb (100%"
        in refused["error"]["message"]
    )
    assert counts(run(path, capsys, "run", "--force")) == {"delete": 6, "unchanged": 30}


def test_the_plan_names_what_it_would_fetch_and_delete_with_sizes(
    tmp_path: Path, s3: S3Server, capsys: pytest.CaptureFixture[str]
) -> None:
    path = pipeline(tmp_path, s3)
    assert counts(run(path, capsys)) == {"add": 6}
    put(s3, "limes.md", "# limes\n\nLimes are sour.\n")
    s3.client.delete_object(Bucket=BUCKET, Key="kb/dates.md")
    assert main(["plan", str(path)]) == 0
    out = capsys.readouterr().out
    assert "  update      limes.md  (content changed; 25 bytes)" in out.splitlines()
    assert "  delete      dates.md  (source file is gone; 36 bytes)" in out.splitlines()


def test_an_s3_block_is_checked_at_its_lines(tmp_path: Path, s3: S3Server) -> None:
    from ragflow_config.pipeline._validate import check_file

    path = pipeline(tmp_path, s3)
    text = path.read_text(encoding="utf-8")
    path.write_text(
        text.replace("url: s3://", "url: https://").replace(
            "      - type: s3\n", "      - type: s3\n        path: corpus\n"
        ),
        encoding="utf-8",
    )
    _, issues = check_file(path)
    messages = [str(issue) for issue in issues]
    assert any(":10:9: " in m and "`path` is for local sources" in m for m in messages), messages
    assert any(":12:16: " in m and "url: 'https://" in m for m in messages), messages


def test_a_key_the_client_cannot_name_stops_the_listing_and_names_it(
    tmp_path: Path, s3: S3Server, capsys: pytest.CaptureFixture[str]
) -> None:
    """obstore refuses keys with `.` or `..` segments or empty ones (`a//b`), legal in S3:
    such a key is a listing error (nothing pruned), never a silently skipped object."""
    path = pipeline(tmp_path, s3)
    assert counts(run(path, capsys)) == {"add": 6}
    put(s3, "notes/../apples.md", "a key with a parent segment")
    document = run(path, capsys)
    assert document["exit"] == 1
    message = document["error"]["message"]
    assert f"source s3://{BUCKET}/kb: the listing failed" in message
    assert '"kb/notes/../apples.md"' in message and "nothing is pruned" in message


def test_objects_are_streamed_to_temporary_files_removed_once_read(
    tmp_path: Path,
    s3: S3Server,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[Path] = []
    make = tempfile.mkdtemp

    def recorded(*args: Any, **kwargs: Any) -> str:
        made.append(Path(make(*args, **kwargs)))
        return str(made[-1])

    monkeypatch.setattr(tempfile, "mkdtemp", recorded)
    assert counts(run(pipeline(tmp_path, s3), capsys)) == {"add": 6}
    assert len(made) == 6 and all(folder.name.startswith("ragflow-downloads-") for folder in made)
    assert not any(folder.exists() for folder in made)
