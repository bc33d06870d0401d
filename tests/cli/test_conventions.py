"""The conventions every command keeps (issue 36, item 9): `--json` everywhere, one
envelope for results and errors, `types KIND`, a plan's wording, and the message of a
local store that a running `serve` holds (in test_check_env). `-v`/`-q` after the
command are in test_global_flags.

Run through `main` in this process, on real stores.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from ragflow_config.cli import main
from ragflow_config.cli._main import build_parser
from ragflow_config.pipeline import Pipeline

from .test_kb_commands import output_of, project

COMMANDS = next(
    action.choices
    for action in build_parser()._actions
    if isinstance(getattr(action, "choices", None), dict)
)
# The commands that read a pipeline file, with what they need besides it.
WITH_A_FILE = {
    name: [
        "x"
        for action in parser._actions
        if not action.option_strings and action.required and action.dest not in ("file", "files")
    ]
    + [
        word
        for action in parser._actions
        if action.required and action.option_strings
        for word in (action.option_strings[0], "x")
    ]
    for name, parser in COMMANDS.items()
    if any(action.dest in ("file", "files") for action in parser._actions)
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_takes_json(command: str) -> None:
    options = {option for action in COMMANDS[command]._actions for option in action.option_strings}
    assert "--json" in options


@pytest.mark.parametrize("command", sorted(set(WITH_A_FILE) - {"validate"}))
def test_every_command_reports_a_missing_file_as_one_json_error(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.yaml"
    assert main([command, str(missing), *WITH_A_FILE[command], "--json"]) == 2
    out, err = output_of(capsys)
    document = json.loads(out)
    assert list(document) == ["error"]
    assert document["error"]["message"] == "the pipeline file is invalid"
    [issue] = document["error"]["issues"]
    assert issue["message"].startswith("cannot read") and "missing.yaml" in issue["file"]
    assert "error" not in err


def test_validate_json_is_an_object_for_a_valid_file_and_an_invalid_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    valid = project(tmp_path)
    missing = tmp_path / "missing.yaml"
    assert main(["validate", str(valid), str(missing), "--json"]) == 2
    document = json.loads(output_of(capsys)[0])
    assert [
        (f["file"].endswith(name), f["valid"])
        for f, name in zip(document["files"], ["pipeline.yaml", "missing.yaml"], strict=True)
    ] == [
        (True, True),
        (True, False),
    ]
    [issue] = document["issues"]
    assert issue["file"].endswith("missing.yaml")


def test_search_json_is_what_the_http_api_answers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("starlette", reason="the serve extra is not installed")
    from ragflow_config.server import ServeOptions
    from ragflow_config.server._app import create_app
    from ragflow_config.server._service import KnowledgeService

    pipeline = project(tmp_path)
    assert main(["run", str(pipeline), "--workers", "0"]) == 0
    output_of(capsys)
    assert main(["search", str(pipeline), "notes", "apples", "--top-k", "3", "--json"]) == 0
    printed = json.loads(output_of(capsys)[0])

    async def over_http() -> object:
        async with KnowledgeService(Pipeline.load(pipeline), None) as service:
            app = create_app(service, ServeOptions())
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport, base_url="http://127.0.0.1"
            ) as client:
                answer = await client.post(
                    "/v1/knowledge-bases/notes/search", json={"query": "apples", "top_k": 3}
                )
                assert answer.status_code == 200, answer.text
                return answer.json()

    assert printed == asyncio.run(over_http())
    assert len(printed["hits"]) == 3


def test_list_delete_and_reset_print_objects_and_refusals_as_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = project(tmp_path)
    assert main(["run", str(pipeline), "--workers", "0"]) == 0
    output_of(capsys)
    assert main(["list", str(pipeline), "notes", "--json"]) == 0
    listed = json.loads(output_of(capsys)[0])
    assert listed["knowledge_base"] == "notes" and listed["total"] == len(listed["documents"]) == 6
    first = listed["documents"][0]["document_id"]

    assert main(["delete", str(pipeline), "notes", first, "--json"]) == 0
    assert json.loads(output_of(capsys)[0]) == {"knowledge_base": "notes", "deleted": first}
    assert main(["delete", str(pipeline), "notes", first, "--json"]) == 1  # gone now
    out, err = output_of(capsys)
    assert json.loads(out) == {
        "error": {"message": f"nothing deleted: notes has no document {first}"}
    }
    assert err == ""

    assert main(["reset", str(pipeline), "notes", "--json"]) == 2  # no terminal, no --yes
    assert "pass --yes to confirm" in json.loads(output_of(capsys)[0])["error"]["message"]
    assert main(["reset", str(pipeline), "notes", "--yes", "--json"]) == 0
    assert json.loads(output_of(capsys)[0]) == {
        "knowledge_base": "notes",
        "collection_dropped": True,
    }


def test_types_kind_lists_one_kind_and_an_unknown_one_names_the_kinds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["types", "chunker"]) == 0
    lines = output_of(capsys)[0].splitlines()
    assert [line for line in lines if not line.startswith(" ")] == ["chunker:"]
    assert any(line.startswith("  approx_token ") for line in lines)

    assert main(["types", "vector-stores", "--json"]) == 0  # a plural and a dash are taken
    kinds = json.loads(output_of(capsys)[0])
    assert list(kinds) == ["vector_store"] and "qdrant" in kinds["vector_store"]

    assert main(["types", "parsr"]) == 2
    out, err = output_of(capsys)
    assert out == ""
    assert err == (
        "error: unknown kind 'parsr'; the kinds are: parser, chunker, embedding, "
        "vector_store, chat_model, middleware, executor, reranker, source\n"
    )


def test_schema_json_lists_what_it_wrote_and_what_is_stale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "schemas"
    assert main(["schema", "--out", str(out), "--json"]) == 0
    written = json.loads(output_of(capsys)[0])
    assert written["folder"] == str(out)
    assert str(out / "pipeline.schema.json") in written["written"]
    assert all(Path(path).is_file() for path in written["written"])
    assert main(["schema", "--out", str(out), "--check", "--json"]) == 0
    assert json.loads(output_of(capsys)[0]) == {"folder": str(out), "stale": []}
    (out / "pipeline.schema.json").write_text("{}", encoding="utf-8")
    assert main(["schema", "--out", str(out), "--check", "--json"]) == 1
    [stale] = json.loads(output_of(capsys)[0])["stale"]
    assert stale == f"{out / 'pipeline.schema.json'}: out of date"


def test_a_plan_says_what_it_would_write_and_a_run_what_it_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = project(tmp_path)
    assert main(["plan", str(pipeline)]) == 0
    planned = output_of(capsys)[0]
    assert "would write 6 chunks" in planned and "written" not in planned
    assert main(["run", str(pipeline), "--workers", "0"]) == 0
    assert "; 6 chunks written" in output_of(capsys)[0]


def test_chat_json_prints_one_object_per_question(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from model._server import ChatServer, completion

    from .test_chat import project as chat_project

    with ChatServer() as server:
        pipeline = chat_project(tmp_path, server.url, "static")
        server.replies.append(completion("Twelve to sixteen hours [cats.md]."))
        output_of(capsys)
        assert main(["chat", str(pipeline), "-q", "How long do cats sleep?", "--json"]) == 0
    assert json.loads(output_of(capsys)[0]) == {
        "question": "How long do cats sleep?",
        "answer": "Twelve to sixteen hours [cats.md].",
    }


def test_serve_json_announces_where_it_listens_on_stdout(tmp_path: Path) -> None:
    pytest.importorskip("uvicorn", reason="the serve extra is not installed")
    pipeline = project(tmp_path)
    assert main(["run", str(pipeline), "--workers", "0", "-q"]) == 0
    process = subprocess.Popen(
        [sys.executable, "-m", "ragflow_config.cli", "serve", str(pipeline), "--json", "--port=0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        lines = []
        while not lines or lines[-1] != "}\n":  # one pretty-printed object, flushed at once
            line = process.stdout.readline()
            assert line, process.stderr.read() if process.stderr else ""
            lines.append(line)
        serving = json.loads("".join(lines))["serving"]
        assert serving["knowledge_bases"] == ["notes"]
        assert serving["mcp"] == serving["url"] + "/mcp"
        assert httpx.get(f"{serving['url']}/healthz").json() == {"status": "ok"}
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0
    assert "serving notes on" not in err  # the line goes to stdout as JSON instead


def test_serve_json_with_stdio_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", str(project(tmp_path)), "--stdio", "--json"]) == 2
    assert "stdout speaks MCP" in json.loads(output_of(capsys)[0])["error"]["message"]


def test_a_command_line_argparse_refuses_is_a_json_error_under_json(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["search", "pipeline.yaml", "kb", "tea", "--top-k", "0", "--json"])
    assert exited.value.code == 2
    out, err = output_of(capsys)
    assert json.loads(out) == {
        "error": {
            "message": "ragflow-config search: argument --top-k: top_k must be from 1 to 50, not 0"
        }
    }
    assert err == ""
    with pytest.raises(SystemExit):  # without --json: argparse's usage and error on stderr
        main(["search", "pipeline.yaml", "kb", "tea", "--top-k", "0"])
    out, err = output_of(capsys)
    assert out == "" and err.endswith(
        "error: argument --top-k: top_k must be from 1 to 50, not 0\n"
    )


def test_ctrl_c_under_json_is_a_json_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = project(tmp_path)

    def ctrl_c(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(Pipeline, "build", ctrl_c)
    assert main(["list", str(pipeline), "notes", "--json"]) == 130
    assert json.loads(output_of(capsys)[0]) == {"error": {"message": "interrupted"}}
    assert main(["list", str(pipeline), "notes"]) == 130
    assert output_of(capsys) == ("", "")


def test_reset_json_asks_on_stderr_and_keeps_stdout_one_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ._terminal import Terminal

    pipeline = project(tmp_path)
    assert main(["run", str(pipeline), "--workers", "0"]) == 0
    output_of(capsys)
    monkeypatch.setattr("sys.stdin", Terminal("n\n"))
    assert main(["reset", str(pipeline), "notes", "--json"]) == 1
    out, err = output_of(capsys)
    assert json.loads(out) == {"error": {"message": "nothing deleted"}}
    assert err == "Delete every document of notes (collection 'notes')? [y/N] "
    monkeypatch.setattr("sys.stdin", Terminal("y\n"))
    assert main(["reset", str(pipeline), "notes", "--json"]) == 0
    out, err = output_of(capsys)
    assert json.loads(out) == {"knowledge_base": "notes", "collection_dropped": True}
