"""`ragflow-config schema`: the generated JSON Schemas and their freshness check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from ruamel.yaml import YAML

from ragflow_config.cli import main
from ragflow_config.pipeline import Registry
from ragflow_config.pipeline._schema import pipeline_schema
from ragflow_config.pipeline._validate import check_file

from .conftest import FILES, REPO

BLOCK_KINDS = {
    "ParserBlock": "parser",
    "ChunkerBlock": "chunker",
    "EmbeddingBlock": "embedding",
    "VectorStoreBlock": "vector_store",
    "ChatModelBlock": "chat_model",
    "MiddlewareSpec": "middleware",
    "ExecutionBlock": "executor",
    "RerankerBlock": "reranker",
    "SourceSpec": "source",
}


@pytest.fixture
def schemas(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    folder = tmp_path / "schemas"
    assert main(["schema", "--out", str(folder)]) == 0
    capsys.readouterr()
    return folder


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def test_one_pipeline_schema_and_one_schema_per_registered_type(
    schemas: Path, registry: Registry
) -> None:
    expected = {"pipeline.schema.json"} | {
        f"types/{kind}.{name}.schema.json"
        for kind in BLOCK_KINDS.values()
        for name in registry.names(kind)  # type: ignore[arg-type]
    }
    written = {p.relative_to(schemas).as_posix() for p in schemas.rglob("*") if p.is_file()}
    assert written == expected
    assert "types/chunker.approx_token.schema.json" in written
    assert "types/embedding.hashing.schema.json" in written


def test_every_schema_is_valid_json_schema_2020_12(schemas: Path) -> None:
    for path in schemas.rglob("*.schema.json"):
        schema = load(path)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema", path
        Draft202012Validator.check_schema(schema)


def test_every_component_block_selects_its_parameters_by_type(
    schemas: Path, registry: Registry
) -> None:
    pipeline = load(schemas / "pipeline.schema.json")
    assert pipeline["$id"] == "https://ragflow-config.dev/schemas/pipeline.schema.json"
    defs = pipeline["$defs"]
    for def_name, kind in BLOCK_KINDS.items():
        block = defs[def_name]
        names = registry.names(kind)  # type: ignore[arg-type]
        assert block["properties"]["type"]["enum"] == names, def_name
        if kind != "source":  # a source's type defaults to local, the folder named by `path`
            assert block["required"][0] == "type"
        assert block["additionalProperties"] is False
        assert [rule["if"] for rule in block["allOf"]] == [
            {"properties": {"type": {"const": name}}, "required": ["type"]} for name in names
        ]
        assert [rule["then"]["properties"] for rule in block["allOf"]] == [
            {"parameters": {"$ref": f"#/$defs/{kind}.{name}"}} for name in names
        ]


def editor_message(schemas: Path, data: dict[str, Any]) -> tuple[list[str | int], str]:
    """Where the error that jsonschema ranks first points, and its message."""
    error = best_match(
        Draft202012Validator(load(schemas / "pipeline.schema.json")).iter_errors(data)
    )
    assert error is not None
    return list(error.absolute_path), error.message


def pipeline_with(**knowledge_base: Any) -> dict[str, Any]:
    return {
        "version": 1,
        "knowledge_bases": [
            {"name": "notes", "vector_store": "s", "collection": "c", **knowledge_base}
        ],
        "vector_stores": {"s": {"type": "qdrant"}},
    }


def test_a_misspelt_type_is_named_with_the_valid_ones(schemas: Path, registry: Registry) -> None:
    # The old `oneOf` said only "{'type': 'docxx'} is not valid under any of the given schemas".
    where, message = editor_message(
        schemas, pipeline_with(embedding="e", parsers=[{"type": "docxx"}])
    )
    assert where == ["knowledge_bases", 0, "parsers", 0, "type"]
    assert message == f"'docxx' is not one of {registry.names('parser')}"
    # The same inside a `str | block` union: the block's error, not the union's.
    where, message = editor_message(schemas, pipeline_with(embedding={"type": "hashng"}))
    assert where == ["knowledge_bases", 0, "embedding", "type"]
    assert message == f"'hashng' is not one of {registry.names('embedding')}"


def test_an_unknown_parameter_is_named_against_its_types_parameters(schemas: Path) -> None:
    chunker = {"type": "approx_token", "parameters": {"chunk_sz": 200}}
    where, message = editor_message(schemas, pipeline_with(embedding="e", chunker=chunker))
    assert where == ["knowledge_bases", 0, "chunker", "parameters"]
    assert message == "Additional properties are not allowed ('chunk_sz' was unexpected)"
    # The type selects the parameters: heading's own key is unknown to approx_token.
    chunker = {"type": "approx_token", "parameters": {"chunk_size": 200, "max_heading_level": 2}}
    _, message = editor_message(schemas, pipeline_with(embedding="e", chunker=chunker))
    assert message == "Additional properties are not allowed ('max_heading_level' was unexpected)"
    chunker = {"type": "approx_token", "parameters": {"chunk_size": "large"}}
    where, message = editor_message(schemas, pipeline_with(embedding="e", chunker=chunker))
    assert where == ["knowledge_bases", 0, "chunker", "parameters", "chunk_size"]
    assert message == "'large' is not of type 'integer'"


def test_descriptions_defaults_and_bounds_come_from_the_pydantic_fields(
    schemas: Path, registry: Registry
) -> None:
    strict = pipeline_schema(registry)  # what validate checks expanded values against
    written = load(schemas / "pipeline.schema.json")
    standalone = load(schemas / "types" / "chunker.approx_token.schema.json")
    for parameters in (strict["$defs"]["chunker.approx_token"],):
        assert parameters["properties"]["chunk_size"]["minimum"] == 1
        assert parameters["properties"]["overlap"]["minimum"] == 0
    for parameters in (written["$defs"]["chunker.approx_token"], standalone):
        chunk_size = parameters["properties"]["chunk_size"]
        assert chunk_size["default"] == 512
        # Written for editors: a `${VAR}` passes, any other value meets the field's rules.
        assert chunk_size["if"]["pattern"] == r"\$\{"
        assert chunk_size["else"] == {"minimum": 1, "type": "integer"}
        assert chunk_size["description"].startswith("Largest chunk, in approximate tokens")
        assert parameters["properties"]["overlap"]["else"]["minimum"] == 0
        assert parameters["additionalProperties"] is False
        assert parameters["description"].startswith("Splits text into pieces")
    hashing = strict["$defs"]["embedding.hashing"]["properties"]["dimensions"]
    assert (hashing["default"], hashing["minimum"], hashing["maximum"]) == (256, 8, 8192)
    secret = written["$defs"]["vector_store.qdrant"]["properties"]["api_key_env"]
    assert secret["default"] == "QDRANT_API_KEY"
    assert "Environment variable" in secret["description"]


def test_the_pipeline_schema_alone_validates_files_as_an_editor_would(schemas: Path) -> None:
    validator = Draft202012Validator(load(schemas / "pipeline.schema.json"))
    yaml = YAML(typ="safe", pure=True)
    assert list(validator.iter_errors(yaml.load(FILES / "valid.yaml"))) == []
    errors = list(validator.iter_errors(yaml.load(FILES / "bad_values.yaml")))
    assert errors, "bad_values.yaml must fail the schema"


def run_check(folder: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["schema", "--check", "--out", str(folder)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_check_passes_right_after_writing(
    schemas: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_check(schemas, capsys) == (0, f"schemas in {schemas} are up to date\n")


def test_check_fails_on_an_edited_file(schemas: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edited = schemas / "types" / "chunker.approx_token.schema.json"
    edited.write_text(edited.read_text().replace("512", "1024"), encoding="utf-8")
    code, output = run_check(schemas, capsys)
    assert code == 1
    assert f"{edited}: out of date" in output.splitlines()
    assert "schemas are stale: run `ragflow-config schema`" in output


def test_check_fails_on_a_deleted_file(schemas: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (schemas / "pipeline.schema.json").unlink()
    code, output = run_check(schemas, capsys)
    assert code == 1
    assert f"{schemas / 'pipeline.schema.json'}: missing" in output.splitlines()


def test_check_fails_on_a_stray_file_and_writing_removes_it(
    schemas: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stray = schemas / "types" / "parser.retired.schema.json"
    stray.write_text("{}", encoding="utf-8")
    code, output = run_check(schemas, capsys)
    assert code == 1
    assert f"{stray}: no longer generated" in output.splitlines()
    assert main(["schema", "--out", str(schemas)]) == 0
    assert not stray.exists()
    assert run_check(schemas, capsys)[0] == 0


def test_the_committed_schemas_are_fresh(capsys: pytest.CaptureFixture[str]) -> None:
    # A missing file is reported as stale, so CI fails rather than skips when one is not committed.
    code, output = run_check(REPO / "schemas", capsys)
    assert code == 0, f"the committed schemas are stale; run `ragflow-config schema`:\n{output}"


def test_the_schemas_for_editors_take_a_reference_where_validate_checks_its_value(
    schemas: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An editor sees `${VAR}` as written; validate sees the value it expands to.
    validator = Draft202012Validator(load(schemas / "pipeline.schema.json"))
    model = {"type": "openai_compatible", "parameters": {"model": "m"}}
    written = {
        "base_url": ("${API_URL:-https://api.example}", "ftp://host"),
        "timeout": ("${TIMEOUT}", "soon"),
        "dimensions": ("${DIMENSIONS:-256}", "many"),
    }
    for key, (reference, wrong) in written.items():
        for value, errors in ((reference, 0), (wrong, 1)):
            model["parameters"] = {"model": "m", "dimensions": 8, key: value}
            data = {**pipeline_with(embedding=model)}
            assert len(list(validator.iter_errors(data))) == errors, (key, value)
    standalone = load(schemas / "types" / "embedding.hashing.schema.json")
    assert not list(Draft202012Validator(standalone).iter_errors({"dimensions": "${D}"}))
    path = tmp_path / "pipeline.yaml"
    path.write_text(
        "version: 1\n"
        "embeddings:\n"
        "  model:\n"
        "    type: openai_compatible\n"
        "    parameters: {model: m, dimensions: 8, base_url: '${API_URL:-ftp://host}'}\n"
        "knowledge_bases:\n"
        "  - {name: a, embedding: model, vector_store: s, collection: c}\n"
        "vector_stores: {s: {type: qdrant}}\n",
        encoding="utf-8",
    )
    monkeypatch.delenv("API_URL", raising=False)
    _, issues = check_file(path)
    # The value as written (a variable may hold a secret), against the model's own pattern.
    assert [issue.message for issue in issues] == [
        "'${API_URL:-ftp://host}' does not match '^https?://'"
    ]
