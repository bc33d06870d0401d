"""Fuzzing the JSON API of a real `ragflow-config serve` with Schemathesis.

The schema is the server's own ``/openapi.json``; every operation in it is
called with what Schemathesis generates from it (valid requests and, in its
negative phases, invalid ones), against one server process for the module.
Each answer must be one the document promises: never a 500, a documented
status, a body that matches the documented schema, and every error is the
API's JSON ``{"error": {"message": ...}}``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the serve extra is not installed (pip install -e .[serve])")

import schemathesis
from hypothesis import example, given
from hypothesis import strategies as st
from schemathesis import Case, GenerationMode
from schemathesis.core.transport import Response
from schemathesis.schemas import APIOperation, BaseSchema
from schemathesis.specs.openapi.checks import positive_data_acceptance
from server._serving import TOKEN, ServerProcess, index, write_pipeline

from ragflow_config.server import ServeOptions
from ragflow_config.server._app import openapi_document

from ._profile import fuzzing

KNOWLEDGE_BASES = ("tutorial", "howto")
MAX_QUERY_CHARS = ServeOptions().max_query_chars
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One `serve` of the two-tenant corpus, with a token, for every example of the module."""
    folder = tmp_path_factory.mktemp("http-api")
    file = write_pipeline(folder)
    asyncio.run(index(file))
    with ServerProcess(str(file), env={"RAGFLOW_SERVE_TOKEN": TOKEN}) as process:
        yield process
        assert process.process.poll() is None, process.log
        assert "Traceback" not in process.log, process.log


@pytest.fixture(scope="module")
def api_schema(server: ServerProcess) -> BaseSchema:
    """The server's own ``/openapi.json``, as the running process serves it."""
    return schemathesis.openapi.from_url(server.url + "/openapi.json", headers=AUTH)


def error_bodies_are_json(ctx: Any, response: Response, case: Case) -> bool | None:
    """Every 4xx or 5xx answer is ``{"error": {"message": <text>}}``, and none is a 500."""
    assert response.status_code != 500, response.text
    if response.status_code < 400:
        return None
    content_type = response.headers.get("content-type", [""])[0]
    assert content_type.startswith("application/json"), (response.status_code, content_type)
    body = json.loads(response.content)
    assert isinstance(body, dict) and isinstance(body.get("error"), dict), body
    assert isinstance(body["error"].get("message"), str) and body["error"]["message"], body
    return True


def plain_searches_are_answered(ctx: Any, response: Response, case: Case) -> bool | None:
    """A schema-valid search with no filter, a short query and an integer top_k gets its hits."""
    body = case.body
    if not isinstance(body, dict) or case.path_parameters.get("name") not in KNOWLEDGE_BASES:
        return None
    plain = (
        body.get("filter") is None
        and len(body["query"]) <= MAX_QUERY_CHARS
        and not isinstance(body.get("top_k"), float)
    )
    if not plain:
        return None
    assert response.status_code == 200, (response.status_code, response.text)
    return True


# Every operation the document names (the static document is the served one's
# twin; the test below checks that the server holds each).
OPERATIONS = [
    (path, method)
    for path, item in openapi_document(ServeOptions()).get("paths", {}).items()
    for method in item
]


def test_the_served_document_names_these_operations(api_schema: BaseSchema) -> None:
    served = [(result.ok().path, result.ok().method) for result in api_schema.get_all_operations()]
    assert sorted(served) == sorted(OPERATIONS)


def cases(operation: APIOperation, mode: GenerationMode) -> st.SearchStrategy[Case]:
    """The operation's cases; a path naming a knowledge base names a served one two times in three.

    A generated name is almost never ``tutorial`` or ``howto``: without these,
    every search would stop at the 404 before its body is read.
    """
    strategies = [operation.as_strategy(generation_mode=mode)]
    if "{name}" in operation.path:
        strategies += [
            operation.as_strategy(generation_mode=mode, path_parameters={"name": served})
            for served in KNOWLEDGE_BASES
        ]
    # A query parameter the operation does not name is ignored, as HTTP APIs do;
    # Schemathesis counts one as invalid data the server should refuse.
    declared = {p.name for p in operation.query}
    return st.one_of(strategies).filter(lambda case: set(case.query or {}) <= declared)


# Requests that once got an answer the document did not promise, replayed first
# on every run: (path, method, mode) -> the Case's parts.
EXAMPLES: dict[tuple[str, str, GenerationMode], list[dict[str, Any]]] = {
    # 400 for an offset the schema allowed (no maximum was documented)
    ("/v1/knowledge-bases/{name}/documents", "get", GenerationMode.POSITIVE): [
        {"path_parameters": {"name": "tutorial"}, "query": {"offset": 2709595291847440}},
    ],
    # 400 for top_k 5.0, an integer by JSON Schema's definition
    ("/v1/knowledge-bases/{name}/search", "post", GenerationMode.POSITIVE): [
        {"path_parameters": {"name": "tutorial"}, "body": {"query": "file", "top_k": 5.0}},
    ],
}


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
@pytest.mark.parametrize(("path", "method"), OPERATIONS)
def test_every_answer_is_one_the_schema_documents(
    api_schema: BaseSchema, server: ServerProcess, path: str, method: str, mode: GenerationMode
) -> None:
    operation = api_schema[path][method]

    additional: list[Any] = [error_bodies_are_json]
    excluded: list[Any] = []
    if operation.path.endswith("/search") and mode is GenerationMode.POSITIVE:
        # The document answers 400 to a schema-valid body the JSON Schema cannot
        # refuse (a filter the stores cannot hold, a query over the limit,
        # top_k 2.0); Schemathesis's acceptance check would take each for a
        # bug. What it checked is checked here, for the bodies it can judge.
        excluded.append(positive_data_acceptance)
        additional.append(plain_searches_are_answered)

    def answer(case: Case) -> None:
        case.call_and_validate(headers=AUTH, additional_checks=additional, excluded_checks=excluded)

    for parts in EXAMPLES.get((path, method, mode), []):
        answer = example(case=operation.Case(**parts))(answer)
    fuzzing(given(case=cases(operation, mode))(answer))()
    assert server.process.poll() is None, server.log


def _plain_case(operation: APIOperation) -> Case:
    """A valid request to ``operation`` on the tutorial knowledge base."""
    parts: dict[str, Any] = {}
    if "{name}" in operation.path:
        parts["path_parameters"] = {"name": "tutorial"}
    if operation.method == "post":
        parts["body"] = {"query": "read a file"}
        parts["media_type"] = "application/json"
    return operation.Case(**parts)


@pytest.mark.parametrize(("path", "method"), OPERATIONS)
def test_a_refused_host_or_origin_is_a_documented_answer(
    api_schema: BaseSchema, path: str, method: str
) -> None:
    """The guards' 403 (DNS rebinding) is an answer every operation documents."""
    case = _plain_case(api_schema[path][method])
    for headers in ({"Host": "rebound.example"}, {"Origin": "http://rebound.example"}):
        response = case.call(headers={**AUTH, **headers})
        assert response.status_code == 403, response.text
        case.validate_response(response, additional_checks=[error_bodies_are_json])


def test_a_body_that_is_not_json_is_a_documented_answer(api_schema: BaseSchema) -> None:
    operation = api_schema["/v1/knowledge-bases/{name}/search"]["post"]
    case = _plain_case(operation)
    response = case.call(headers={**AUTH, "Content-Type": "text/plain"}, data=b"read a file")
    assert response.status_code == 415, response.text
    case.validate_response(response, additional_checks=[error_bodies_are_json])
