"""`ragflow-config init` on a folder of real files: the file it writes is validated, run
and searched with no edit, reads every file with the parser made for it, and truncates
no chunk.

The folder holds what users have: Markdown and HTML pages of the Python documentation
(pipelines/), a PDF with a text layer (tests/fixtures), Word, PowerPoint and Excel files
written by the libraries that read them (as tests/parsers builds them), CSV, JSON, and a
PNG of three lines of a real scanned notice, which only OCR reads.
"""

from __future__ import annotations

import importlib.util
import io
import json
import shutil
from pathlib import Path

import pytest
import yaml
from parsers.conftest import build_docx, build_pptx, build_xlsx

from ragflow_config._extras import install_line
from ragflow_config.cli import _init_command, main
from ragflow_config.pipeline._init import MODELS, STORES

ROOT = Path(__file__).parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
EXIT_OK, EXIT_USAGE = 0, 2

# What each file of the mixed folder is read by; the PNG's text is the scan's second line.
READ_BY = {
    "guide/venv.md": "markdown",
    "guide/gui.html": "html",
    "multilingual.pdf": "pdf",
    "notes.docx": "docx",
    "slides.pptx": "pptx",
    "numbers.xlsx": "excel",
    "staff.csv": "records",
    "glossary.json": "records",
    "scan.png": "image",
}


def scan_band() -> bytes:
    """Three lines of the scanned customs notice, as a PNG at 150 dpi."""
    import pdfplumber

    with pdfplumber.open(FIXTURES / "scanned-notice.pdf") as pdf:
        page = pdf.pages[0].to_image(resolution=150).original
    buffer = io.BytesIO()
    page.crop((0, 240, page.width, 440)).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def mixed_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("mixed") / "docs"
    (folder / "guide").mkdir(parents=True)
    shutil.copy(ROOT / "pipelines/corpus/tutorial/venv.md", folder / "guide/venv.md")
    shutil.copy(ROOT / "pipelines/mixed/html/faq/gui.html", folder / "guide/gui.html")
    shutil.copy(FIXTURES / "multilingual.pdf", folder / "multilingual.pdf")
    (folder / "notes.docx").write_bytes(build_docx())
    (folder / "slides.pptx").write_bytes(build_pptx())
    (folder / "numbers.xlsx").write_bytes(build_xlsx())
    (folder / "staff.csv").write_text("name,role\nAda,engineer\nGrace,admiral\n")
    (folder / "glossary.json").write_text(
        json.dumps([{"term": "venv", "meaning": "a self-contained Python installation"}])
    )
    (folder / "scan.png").write_bytes(scan_band())
    return folder


def copy_of(folder: Path, tmp_path: Path) -> Path:
    """A project of its own: the folder, with the pipeline file to be written beside it."""
    project = tmp_path / "project"
    shutil.copytree(folder, project / "docs")
    return project


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def indexed(project: Path, capsys: pytest.CaptureFixture[str], *options: str) -> tuple[dict, dict]:
    """`init` with ``options``, then `validate` and `run --json`, as a user types them."""
    pipeline = project / "ragflow.yaml"
    code, out, _ = cli(capsys, "init", str(project / "docs"), "-o", str(pipeline), *options)
    assert code == EXIT_OK
    assert f"ragflow-config run {pipeline}" in out  # says what to run next
    code, out, err = cli(capsys, "validate", str(pipeline))
    assert (code, err) == (EXIT_OK, "")
    code, out, _ = cli(capsys, "run", str(pipeline), "--json")
    assert code == EXIT_OK
    [report] = json.loads(out)["knowledge_bases"]
    return yaml.safe_load(pipeline.read_text()), report


def test_init_gives_a_file_that_validates_runs_and_searches_with_no_edit(
    mixed_files: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = copy_of(mixed_files, tmp_path)
    spec, report = indexed(project, capsys, "--model", "hashing")

    [kb] = spec["knowledge_bases"]
    parsers = [parser["type"] for parser in kb["parsers"]]
    # Each file is read by the parser made for its type, and nothing falls to `text`.
    assert sorted(parsers) == sorted(set(READ_BY.values()))
    assert {change["path"]: change["action"] for change in report["changes"]} == {
        path: "add" for path in READ_BY
    }
    assert all(change["chunks"] > 0 for change in report["changes"])
    assert report["counts"]["failed"] == report["counts"]["skipped"] == 0

    # The image became its text, which a text-only model embeds: found by a word of it.
    code, out, _ = cli(
        capsys, "search", str(project / "ragflow.yaml"), kb["name"], "2301914001", "--json"
    )
    assert code == EXIT_OK
    hits = json.loads(out)
    hits = hits["hits"] if isinstance(hits, dict) else hits
    assert hits[0]["chunk"]["source"] == "scan.png"
    code, out, _ = cli(
        capsys, "search", str(project / "ragflow.yaml"), kb["name"], "virtual environment venv"
    )
    assert code == EXIT_OK and "guide/venv.md" in out


@pytest.mark.slow
def test_with_minilm_no_chunk_is_truncated(
    mixed_files: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = copy_of(mixed_files, tmp_path)
    spec, report = indexed(project, capsys)  # the defaults: MiniLM, Qdrant on disk
    assert spec["embeddings"]["model"]["type"] == "minilm"
    assert report["chunks_written"] > len(READ_BY)
    assert report["chunks_truncated"] == 0
    # The same files cut by the sample's old chunker are truncated, as the run reports.
    [kb] = spec["knowledge_bases"]
    kb["chunker"] = {"type": "approx_token", "parameters": {"chunk_size": 256, "overlap": 32}}
    kb["collection"] = "old_chunker"
    (project / "old.yaml").write_text(yaml.safe_dump(spec))
    code, out, _ = cli(capsys, "run", str(project / "old.yaml"), "--json")
    assert code == EXIT_OK
    assert json.loads(out)["knowledge_bases"][0]["chunks_truncated"] > 0


def test_the_parsers_the_ocr_and_the_extras_follow_the_files(
    mixed_files: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = copy_of(mixed_files, tmp_path)
    shutil.copy(FIXTURES / "report.pdf", project / "docs" / "report.pdf")  # page 2: a picture
    (project / "docs" / "readme.txt").write_text("Plain text, read by the text parser.\n")
    (project / "docs" / "data.bin").write_bytes(b"\x00\x01\x02binary")
    assert cli(capsys, "init", str(project / "docs"), "-o", str(project / "a.yaml"))[0] == 0
    text = (project / "a.yaml").read_text()
    [kb] = yaml.safe_load(text)["knowledge_bases"]
    parsers = {parser["type"]: parser.get("parameters", {}) for parser in kb["parsers"]}
    order = list(parsers)
    # Structured parsers before `text`, which reads Markdown, HTML, CSV and JSON as well.
    assert order[-1] == "text"
    assert parsers["pdf"] == {"ocr": "auto"}  # report.pdf has a page without text
    assert parsers["image"] == {"ocr": "auto"}  # the model embeds text only
    for office in ("docx", "pptx", "excel"):
        assert parsers[office] == {"include_image": False}
    assert kb["chunker"] == {
        "type": "heading",
        "parameters": {"chunk_size": 256, "overlap": 32},
    }
    assert "data.bin" not in json.dumps(kb["sources"]) and "# left out: 1 file(s)" in text
    assert text.startswith(
        "# yaml-language-server: $schema=.ragflow/schemas/pipeline.schema.json\n"
    )
    assert (project / ".ragflow/schemas/pipeline.schema.json").is_file()
    assert f"#   {install_line({'documents', 'minilm', 'ocr', 'qdrant-edge', 'rag'})}\n" in text
    assert "    # evaluation:\n    #   queries: queries.yaml" in text

    # Without scans or images, no OCR: its extra is the heaviest.
    for name in ("report.pdf", "scan.png"):
        (project / "docs" / name).unlink()
    assert cli(capsys, "init", str(project / "docs"), "-o", str(project / "b.yaml"))[0] == 0
    text = (project / "b.yaml").read_text()
    [kb] = yaml.safe_load(text)["knowledge_bases"]
    assert {"type": "pdf"} in kb["parsers"] and "ocr:" not in text
    assert f"#   {install_line({'documents', 'minilm', 'qdrant-edge', 'rag'})}\n" in text


def test_plain_text_gets_the_recursive_chunker_and_no_parser_it_does_not_need(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("One note.\n")
    assert cli(capsys, "init", str(tmp_path / "notes"), "-o", str(tmp_path / "p.yaml"))[0] == 0
    [kb] = yaml.safe_load((tmp_path / "p.yaml").read_text())["knowledge_bases"]
    assert kb["parsers"] == [{"type": "text"}]
    assert kb["chunker"]["type"] == "recursive"
    assert kb["sources"] == [{"path": "notes", "include": ["*.txt"]}]


def test_init_never_overwrites_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n")
    existing = tmp_path / "ragflow.yaml"
    existing.write_text("mine\n")
    code, out, err = cli(capsys, "init", str(tmp_path / "docs"), "-o", str(existing))
    assert code == EXIT_USAGE and out == ""
    assert err == (
        f"error: {existing} exists; init never overwrites a file unless --force: move it, "
        "name another with --output, or pass --force to replace it\n"
    )
    assert existing.read_text() == "mine\n"


def test_the_advice_to_init_again_is_a_command_that_works(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 52, trap 7: "install the rag extra and init again" looped, as a second init was
    # refused. The advice is now the exact command, with --force, and it runs.
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(FIXTURES / "multilingual.pdf", docs / "multilingual.pdf")
    output = tmp_path / "kb.yaml"
    real_find_spec = importlib.util.find_spec
    with monkeypatch.context() as without_pdfplumber:
        without_pdfplumber.setattr(
            importlib.util,
            "find_spec",
            lambda name, *a: None if name == "pdfplumber" else real_find_spec(name, *a),
        )
        code, out, _ = cli(capsys, "init", str(docs), "--model", "hashing", "-o", str(output))
    assert code == 0
    [advice] = [line for line in out.splitlines() if "PDFs not checked" in line]
    again = (
        f"ragflow-config init {docs} --store qdrant-edge --model hashing --output {output} --force"
    )
    assert advice == (
        f"  PDFs not checked for scanned pages: {install_line({'rag'})}, then {again}"
    )
    code, out, _ = cli(capsys, *again.split()[1:])
    assert code == 0 and out.startswith(f"wrote {output}:") and "PDFs not checked" not in out


def test_a_folder_with_nothing_to_index_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty").mkdir()
    code, _, err = cli(capsys, "init", str(tmp_path / "empty"), "-o", str(tmp_path / "p.yaml"))
    assert code == EXIT_USAGE and "no file a parser reads (the folder is empty)" in err
    assert not (tmp_path / "p.yaml").exists()
    code, _, err = cli(capsys, "init", str(tmp_path / "absent"), "-o", str(tmp_path / "p.yaml"))
    assert code == EXIT_USAGE and "no such folder" in err


def test_the_current_folder_by_default_without_indexing_the_file_itself(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.yaml").write_text("key: value\n")
    monkeypatch.chdir(tmp_path)
    assert cli(capsys, "init")[0] == EXIT_OK
    [kb] = yaml.safe_load((tmp_path / "ragflow.yaml").read_text())["knowledge_bases"]
    assert kb["sources"] == [{"path": ".", "include": ["*.yaml"], "exclude": ["/ragflow.yaml"]}]
    code, out, _ = cli(capsys, "run", "ragflow.yaml", "--json")
    assert code == EXIT_OK
    [report] = json.loads(out)["knowledge_bases"]
    assert [change["path"] for change in report["changes"]] == ["a.yaml"]


@pytest.mark.parametrize("store", STORES)
@pytest.mark.parametrize("model", MODELS)
def test_every_store_and_model_validates_and_keeps_secrets_in_the_environment(
    store: str, model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n")
    pipeline = tmp_path / "p.yaml"
    args = ("init", str(tmp_path / "docs"), "-o", str(pipeline), "--store", store)
    assert cli(capsys, *args, "--model", model)[0] == EXIT_OK
    assert cli(capsys, "validate", str(pipeline))[0] == EXIT_OK
    text = pipeline.read_text()
    assert "api_key:" not in text and "dsn:" not in text and "token:" not in text


def test_the_command_line_offers_what_init_knows() -> None:
    assert _init_command.STORE_CHOICES == STORES
    assert _init_command.MODEL_CHOICES == MODELS


def test_a_folder_outside_the_files_folder_is_allowed_explicitly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a" / "docs").mkdir(parents=True)
    (tmp_path / "a" / "docs" / "a.md").write_text("# A\n\nText.\n")
    pipeline = tmp_path / "b" / "p.yaml"
    assert cli(capsys, "init", str(tmp_path / "a" / "docs"), "-o", str(pipeline))[0] == EXIT_OK
    [kb] = yaml.safe_load(pipeline.read_text())["knowledge_bases"]
    assert kb["sources"] == [{"path": "../a/docs", "include": ["*.md"], "allow_outside": True}]
    assert cli(capsys, "validate", str(pipeline))[0] == EXIT_OK


def test_a_file_without_a_known_extension_is_typed_by_its_content(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "memo").write_bytes(build_docx())  # a Word file, named without .docx
    (tmp_path / "docs" / "README").write_text("Plain text.\n")
    (tmp_path / "docs" / "data.bin").write_bytes(b"\x00\x01binary")
    pipeline = tmp_path / "p.yaml"
    assert cli(capsys, "init", str(tmp_path / "docs"), "-o", str(pipeline))[0] == EXIT_OK
    [kb] = yaml.safe_load(pipeline.read_text())["knowledge_bases"]
    assert [parser["type"] for parser in kb["parsers"]] == ["docx", "text"]
    assert kb["sources"][0]["include"] == ["/README", "/memo"]
    code, out, _ = cli(capsys, "run", str(pipeline), "--json")
    assert code == EXIT_OK
    [report] = json.loads(out)["knowledge_bases"]
    assert {c["path"]: c["action"] for c in report["changes"]} == {"README": "add", "memo": "add"}


@pytest.mark.parametrize("store", ["milvus-lite", "pgvector"])
def test_the_other_stores_run_and_search_with_no_edit(
    store: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if store == "pgvector":  # the file names the variable; the value is the environment's
        monkeypatch.setenv("PGVECTOR_DSN", request.getfixturevalue("pgvector_dsn"))
    folder = tmp_path / "init_other_store"
    folder.mkdir()
    shutil.copy(ROOT / "pipelines/corpus/tutorial/venv.md", folder / "venv.md")
    pipeline = tmp_path / "p.yaml"
    args = ("init", str(folder), "-o", str(pipeline), "--store", store, "--model", "hashing")
    assert cli(capsys, *args)[0] == EXIT_OK
    assert cli(capsys, "validate", str(pipeline))[0] == EXIT_OK
    code, out, _ = cli(capsys, "run", str(pipeline))
    assert code == EXIT_OK and "did add 1," in out
    code, out, _ = cli(capsys, "search", str(pipeline), folder.name, "virtual environment")
    assert code == EXIT_OK and "venv.md" in out
    assert cli(capsys, "reset", str(pipeline), folder.name, "--yes")[0] == EXIT_OK


def test_json_says_what_was_written_and_what_to_run_next(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n")
    (tmp_path / "docs" / "b.bin").write_bytes(b"\x00binary")
    pipeline = tmp_path / "p.yaml"
    code, out, _ = cli(capsys, "init", str(tmp_path / "docs"), "-o", str(pipeline), "--json")
    assert code == EXIT_OK
    document = json.loads(out)
    assert document["file"] == str(pipeline) and document["knowledge_base"] == "docs"
    assert (document["files"], document["parsers"]) == (2, ["markdown"])
    assert document["left_out"] == {"unknown": 1}
    assert document["next"] == [
        install_line(set(document["extras"])),
        f"ragflow-config validate {pipeline}",
        f"ragflow-config run {pipeline}",
        f'ragflow-config search {pipeline} docs "your question"',
    ]
    code, out, _ = cli(capsys, "init", str(tmp_path / "docs"), "-o", str(pipeline), "--json")
    assert (
        code == EXIT_USAGE and "init never overwrites a file" in json.loads(out)["error"]["message"]
    )


@pytest.mark.parametrize("model", ["openai", "ollama"])
def test_a_remote_model_finds_its_server_and_key_in_the_environment(
    model: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The file names variables only; the local fake servers answer where they point."""
    if model == "openai":
        server = request.getfixturevalue("embedding_server")
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    else:
        server = request.getfixturevalue("ollama_server")
        server.vector_length = 768  # nomic-embed-text's
        monkeypatch.setenv("OLLAMA_HOST", server.host)
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / "pipelines/corpus/tutorial/venv.md", tmp_path / "docs" / "venv.md")
    pipeline = tmp_path / "p.yaml"
    assert (
        cli(capsys, "init", str(tmp_path / "docs"), "-o", str(pipeline), "--model", model)[0] == 0
    )
    assert "sk-from-the-environment" not in pipeline.read_text()
    code, out, _ = cli(capsys, "run", str(pipeline))
    assert code == EXIT_OK and "did add 1," in out
    assert server.requests  # the chunks went to the server the environment names
    code, out, _ = cli(capsys, "search", str(pipeline), "docs", "virtual environment")
    assert code == EXIT_OK and "venv.md" in out
