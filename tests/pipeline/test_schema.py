"""`ragflow-config schema`: the generated JSON Schemas and their freshness check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from ruamel.yaml import YAML

from ragflow_config.cli import main
from ragflow_config.pipeline import Registry

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


def test_every_component_block_is_a_one_of_discriminated_by_type(
    schemas: Path, registry: Registry
) -> None:
    defs = load(schemas / "pipeline.schema.json")["$defs"]
    for def_name, kind in BLOCK_KINDS.items():
        branches = defs[def_name]["oneOf"]
        consts = [branch["properties"]["type"]["const"] for branch in branches]
        assert consts == registry.names(kind), def_name  # type: ignore[arg-type]
        for branch in branches:
            assert branch["required"][0] == "type"
            assert branch["additionalProperties"] is False
            assert branch["properties"]["parameters"] == {
                "$ref": f"#/$defs/{kind}.{branch['properties']['type']['const']}"
            }


def test_descriptions_defaults_and_bounds_come_from_the_pydantic_fields(schemas: Path) -> None:
    pipeline = load(schemas / "pipeline.schema.json")
    standalone = load(schemas / "types" / "chunker.approx_token.schema.json")
    for parameters in (pipeline["$defs"]["chunker.approx_token"], standalone):
        chunk_size = parameters["properties"]["chunk_size"]
        assert chunk_size["default"] == 512
        assert chunk_size["minimum"] == 1
        assert chunk_size["type"] == "integer"
        assert chunk_size["description"].startswith("Largest chunk, in approximate tokens")
        assert parameters["properties"]["overlap"]["minimum"] == 0
        assert parameters["additionalProperties"] is False
        assert parameters["description"].startswith("Splits text into pieces")
    hashing = pipeline["$defs"]["embedding.hashing"]["properties"]["dimensions"]
    assert (hashing["default"], hashing["minimum"], hashing["maximum"]) == (256, 8, 8192)
    secret = pipeline["$defs"]["vector_store.qdrant"]["properties"]["api_key_env"]
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
