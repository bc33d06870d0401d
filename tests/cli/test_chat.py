"""`ragflow-config chat`: an agent answering from the file's knowledge bases, against a local model server."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from model._server import ChatServer, completion, tool_call

from ragflow_config.cli import main
from ragflow_config.cli._chat_command import SYSTEM_PROMPT

from ._terminal import Terminal

PIPELINE = """\
version: 1
vector_stores:
  disk: {{type: qdrant, parameters: {{path: store}}}}
embeddings:
  model: {{type: hashing, parameters: {{dimensions: 256}}}}
chat_models:
  assistant: {{type: openai_compatible, parameters: {{base_url: "{url}", model: test-model}}}}
knowledge_bases:
  - name: pets
    description: Facts about pets.
    sources: [{{path: docs}}]
    embedding: model
    vector_store: disk
    collection: pets
middlewares:
  - {{type: rag, knowledge_bases: [pets], parameters: {{mode: {mode}, top_k: 1}}}}
"""


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as instance:
        yield instance


def project(folder: Path, url: str, mode: str) -> Path:
    (folder / "docs").mkdir()
    (folder / "docs" / "cats.md").write_text("Cats sleep twelve to sixteen hours a day.\n")
    (folder / "docs" / "dogs.md").write_text("Dogs bark at the postman every morning.\n")
    path = folder / "pipeline.yaml"
    path.write_text(PIPELINE.format(url=url, mode=mode), encoding="utf-8")
    assert main(["run", str(path), "--workers", "0"]) == 0
    return path


def test_static_mode_gives_the_model_the_hits_with_sources_and_prints_its_answer(
    tmp_path: Path, server: ChatServer, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = project(tmp_path, server.url, "static")
    server.replies.append(completion("Cats sleep 12 to 16 hours a day [cats.md]."))
    capsys.readouterr()

    assert main(["chat", str(pipeline), "-q", "How long do cats sleep?"]) == 0

    assert capsys.readouterr().out == "Cats sleep 12 to 16 hours a day [cats.md].\n"
    [request] = server.requests
    messages = request.body["messages"]
    assert messages[0] == {"role": "system", "content": SYSTEM_PROMPT}
    sent = json.dumps(messages)
    assert "(source: cats.md)" in sent and "Cats sleep twelve to sixteen hours" in sent


def test_agentic_mode_answers_through_the_search_tool(
    tmp_path: Path,
    server: ChatServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pipeline = project(tmp_path, server.url, "agentic")
    server.replies += [
        completion(
            tool_calls=[
                tool_call("call-1", "search_knowledge", {"query": "Dogs bark at the postman"})
            ]
        ),
        completion("Dogs bark at the postman [dogs.md]."),
    ]
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("Why do dogs bark?\n"))
    capsys.readouterr()

    assert main(["chat", str(pipeline)]) == 0  # the question comes from stdin

    assert capsys.readouterr().out == "Dogs bark at the postman [dogs.md].\n"
    first, second = server.requests
    assert [tool["function"]["name"] for tool in first.body["tools"]] == ["search_knowledge"]
    [answer] = [m for m in second.body["messages"] if m["role"] == "tool"]
    assert "(source: dogs.md)" in json.dumps(answer)


def test_a_file_without_a_chat_model_says_what_to_add(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = project(tmp_path, "http://127.0.0.1:9/v1", "static")
    text = pipeline.read_text().replace("chat_models:\n  assistant:", "x-unused:\n  assistant:")
    pipeline.write_text(text)
    assert main(["chat", str(pipeline), "-q", "anything"]) == 2  # the file
    assert "chat needs a model: add one to `chat_models`" in capsys.readouterr().err


def test_with_two_chat_models_model_picks_one_and_a_wrong_name_lists_them(
    tmp_path: Path, server: ChatServer, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = project(tmp_path, server.url, "static")
    backup = f'  backup: {{type: openai_compatible, parameters: {{base_url: "{server.url}", model: other}}}}\n'
    pipeline.write_text(
        pipeline.read_text().replace("knowledge_bases:", backup + "knowledge_bases:", 1)
    )
    server.replies.append(completion("From the backup model."))
    capsys.readouterr()

    assert main(["chat", str(pipeline), "--model", "backup", "-q", "Cats?"]) == 0
    assert capsys.readouterr().out == "From the backup model.\n"
    [request] = server.requests
    assert request.body["model"] == "other"

    assert main(["chat", str(pipeline), "-q", "Cats?"]) == 2
    assert capsys.readouterr().err == (
        f"error: {pipeline}: chat needs a model: pick one with --model (assistant, backup)\n"
    )
    assert main(["chat", str(pipeline), "--model", "nope", "-q", "Cats?"]) == 2
    assert capsys.readouterr().err == (
        f"error: {pipeline}: no chat model named 'nope' (defined: assistant, backup)\n"
    )
    pipeline.write_text(pipeline.read_text().replace("chat_models:", "x-unused:"))
    assert main(["chat", str(pipeline), "--model", "nope", "-q", "Cats?"]) == 2
    assert capsys.readouterr().err == (
        f"error: {pipeline}: no chat model named 'nope' (defined: none)\n"
    )


def test_a_file_without_middlewares_says_how_to_add_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = project(tmp_path, "http://127.0.0.1:9/v1", "static")
    text = pipeline.read_text()
    pipeline.write_text(text[: text.index("middlewares:")])
    capsys.readouterr()
    assert main(["chat", str(pipeline), "-q", "anything"]) == 2  # the file
    assert capsys.readouterr().err == (
        f"error: {pipeline}: chat answers through the file's `middlewares`; add one, "
        "e.g. {type: rag, knowledge_bases: [...], parameters: {mode: agentic}}\n"
    )


class _Pipe(io.StringIO):
    """Standard output as a program reading it through a pipe sees it: what was flushed."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def flush(self) -> None:
        self.seen.append(self.getvalue())


def test_on_a_terminal_chat_prompts_for_each_question_until_ctrl_d(
    tmp_path: Path,
    server: ChatServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pipeline = project(tmp_path, server.url, "static")
    server.replies += [
        completion("12 to 16 hours [cats.md]."),
        completion("The postman [dogs.md]."),
    ]
    typed = "How long do cats sleep?\n   \nWho do dogs bark at?\n"
    monkeypatch.setattr("sys.stdin", Terminal(typed))
    capsys.readouterr()

    assert main(["chat", str(pipeline)]) == 0

    assert capsys.readouterr().out == (
        "you> 12 to 16 hours [cats.md].\nyou> you> The postman [dogs.md].\nyou> "
    )
    first, second = (json.dumps(request.body["messages"]) for request in server.requests)
    assert "How long do cats sleep?" in first and "Who do dogs bark at?" not in first
    assert "Who do dogs bark at?" in second  # the blank line was no question


def test_each_answer_reaches_a_pipe_as_soon_as_it_is_given(
    tmp_path: Path, server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = project(tmp_path, server.url, "static")
    server.replies += [
        completion("12 to 16 hours [cats.md]."),
        completion("The postman [dogs.md]."),
    ]
    monkeypatch.setattr("sys.stdin", io.StringIO("How long do cats sleep?\nWho do dogs bark at?\n"))
    out = _Pipe()
    monkeypatch.setattr("sys.stdout", out)

    assert main(["chat", str(pipeline)]) == 0

    # A program asking through a pipe reads each answer before it sends the next question.
    first = "12 to 16 hours [cats.md].\n"
    assert out.seen[:2] == [first, first + "The postman [dogs.md].\n"]
