"""`init s3://...` and `init https://...`: a pipeline file for a remote source, from a
sample of its listing, that validates and runs with no edit. The sources are real
servers on loopback (moto's S3 behind a counting proxy, a small website)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from sources._s3_server import S3Server
from sources._s3_server import served as s3_served
from sources._web_server import Site
from sources._web_server import served as web_served

from ragflow_config.pipeline._init import InitRefused, write_remote_pipeline

from .test_init import EXIT_OK, EXIT_USAGE, FIXTURES, cli

BUCKET = "team-docs"


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Server]:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    for server in s3_served():
        server.client.create_bucket(Bucket=BUCKET)
        objects = {
            "kb/guide/venv.md": b"# Virtual environments\n\nA venv isolates packages.\n",
            "kb/guide/tips.md": b"# Tips\n\nPin your dependencies.\n",
            "kb/report.pdf": (FIXTURES / "report.pdf").read_bytes(),
            # No extension: typed by its bytes, the one object init reads.
            "kb/CHANGES": b"Release notes: the crawler learnt sitemaps.\n",
        }
        for key, body in objects.items():
            server.client.put_object(Bucket=BUCKET, Key=key, Body=body)
        yield server


def test_init_of_a_bucket_writes_a_pipeline_that_runs_with_no_edit(
    tmp_path: Path, s3: S3Server, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = tmp_path / "ragflow.yaml"
    code, out, err = cli(
        capsys,
        "init",
        f"s3://{BUCKET}/kb",
        "--endpoint-url",
        s3.endpoint,
        "--model",
        "hashing",
        "--store",
        "qdrant",
        "-o",
        str(pipeline),
        "--json",
    )
    assert code == EXIT_OK, err
    said = json.loads(out)
    assert said["source"] == f"s3://{BUCKET}/kb" and said["files"] == 4
    assert "s3" in said["extras"] and {"markdown", "pdf", "text"} <= set(said["parsers"])
    assert s3.requests.object_gets() == 1  # the listing, and CHANGES to learn its type

    [kb] = yaml.safe_load(pipeline.read_text())["knowledge_bases"]
    [source] = kb["sources"]
    assert source["type"] == "s3"
    assert source["parameters"] == {"url": f"s3://{BUCKET}/kb", "endpoint_url": s3.endpoint}
    assert sorted(source["include"]) == ["**/*", "*.md", "*.pdf"]
    assert kb["name"] == "kb"

    assert cli(capsys, "validate", str(pipeline))[0] == EXIT_OK
    code, out, _ = cli(capsys, "run", str(pipeline), "--json", "--workers", "0")
    assert code == EXIT_OK
    [report] = json.loads(out)["knowledge_bases"]
    assert report["counts"]["add"] == 4


def test_init_of_a_sitemap_reads_pages_by_their_declared_type(tmp_path: Path) -> None:
    site = Site(
        pages={
            "/": "<html><body><h1>Home</h1><p>Welcome.</p></body></html>",
            "/guide/": "<html><body><h1>Guide</h1><p>Steps.</p></body></html>",
        },
        in_sitemap=["/", "/guide/"],
    )
    for _ in web_served(site):
        written = write_remote_pipeline(
            f"{site.base}/sitemap.xml",
            tmp_path / "ragflow.yaml",
            model="hashing",
            parameters={"allow_private_hosts": ["127.0.0.1"]},
        )
        [kb] = yaml.safe_load(written.file.read_text())["knowledge_bases"]
        [source] = kb["sources"]
        assert source["parameters"]["sitemap"] == f"{site.base}/sitemap.xml"
        assert [parser["type"] for parser in kb["parsers"]] == ["html"]
        assert source["include"] == ["**/*"]  # pages have no extension to select them by


def test_a_source_that_cannot_be_listed_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = Site(pages={"/": "<html><body>Home</body></html>"})
    for _ in web_served(site):
        pipeline = tmp_path / "ragflow.yaml"
        code, _, err = cli(capsys, "init", f"{site.base}/", "-o", str(pipeline))
        assert code == EXIT_USAGE
        assert "127.0.0.1 resolves to 127.0.0.1, not a public address" in err
        assert not pipeline.exists()
    with pytest.raises(InitRefused, match="ftp://x: init indexes a folder, an s3:// bucket"):
        write_remote_pipeline("ftp://x", tmp_path / "other.yaml")
    # Credentials in the URL: refused by the web block's pattern, and not repeated.
    with pytest.raises(InitRefused, match=r"^https://docs.example.com/: url: String should") as e:
        write_remote_pipeline("https://me:pw@docs.example.com/", tmp_path / "other.yaml")
    assert "pw" not in str(e.value)
