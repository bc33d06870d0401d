"""What an editor shows for a pipeline file: the real yaml-language-server, over LSP stdio.

The files name the schema as the samples do, by a relative path
(`# yaml-language-server: $schema=../schemas/pipeline.schema.json`), while the
schema's `$id` is absolute: both must hold for the server to load and apply it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragflow_config.cli import main
from ragflow_config.pipeline import default_registry

from ._lsp import YamlLanguageServer, server_missing

REPO = Path(__file__).parents[2]
SCHEMA_LINE = "# yaml-language-server: $schema=../schemas/pipeline.schema.json\n"

pytestmark = pytest.mark.skipif(server_missing() is not None, reason=str(server_missing()))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder laid out as the repository: schemas/ as `ragflow-config schema` writes it."""
    root = tmp_path_factory.mktemp("project")
    assert main(["schema", "--out", str(root / "schemas")]) == 0
    (root / "pipelines").mkdir()
    return root


@pytest.fixture(scope="module")
def server(project: Path) -> Iterator[YamlLanguageServer]:
    language_server = YamlLanguageServer(project)
    yield language_server
    language_server.close()


Diagnostic = tuple[int, int, str, str]


def diagnostics(
    server: YamlLanguageServer, project: Path, name: str, text: str
) -> list[Diagnostic]:
    """(line, column, message, source) of each diagnostic, 1-based as `validate` counts."""
    path = project / "pipelines" / name
    path.write_text(text, encoding="utf-8")
    return [
        (
            found["range"]["start"]["line"] + 1,
            found["range"]["start"]["character"] + 1,
            found["message"],
            found["source"],
        )
        for found in server.diagnostics(path)
    ]


PIPELINE = (
    SCHEMA_LINE
    + """\
version: 1
vector_stores:
  local: {type: qdrant, parameters: {location: ":memory:"}}
embeddings:
  model: {type: hashing}
knowledge_bases:
  - name: docs
    sources:
      - path: corpus
    parsers:
      - type: markdown
    chunker:
      type: approx_token
      parameters:
        chunk_size: 200
    embedding: model
    vector_store: local
    collection: docs
"""
)


@pytest.mark.parametrize("sample", sorted(p.name for p in (REPO / "pipelines").glob("*.yaml")))
def test_every_sample_pipeline_is_clean_in_the_editor(
    server: YamlLanguageServer, project: Path, sample: str
) -> None:
    text = (REPO / "pipelines" / sample).read_text(encoding="utf-8")
    assert text.startswith(SCHEMA_LINE)
    assert diagnostics(server, project, sample, text) == []


def test_a_misspelt_type_names_the_valid_types(server: YamlLanguageServer, project: Path) -> None:
    text = PIPELINE.replace("- type: markdown", "- type: docxx")
    valid = ", ".join(f'"{name}"' for name in default_registry().names("parser"))
    assert diagnostics(server, project, "type.yaml", text) == [
        (12, 15, f"Value is not accepted. Valid values: {valid}.", "yaml-schema: ParserBlock")
    ]


def test_an_unknown_parameter_is_named_with_the_type_whose_parameters_it_is_not(
    server: YamlLanguageServer, project: Path
) -> None:
    text = PIPELINE.replace("chunk_size: 200", "chunk_sz: 200")
    assert diagnostics(server, project, "parameter.yaml", text) == [
        (16, 9, "Property chunk_sz is not allowed.", "yaml-schema: approx_token chunker parameters")
    ]
    # The type selects the parameters: `heading`'s own key is unknown to approx_token.
    text = PIPELINE.replace("chunk_size: 200", "max_heading_level: 2")
    assert diagnostics(server, project, "other_type.yaml", text) == [
        (
            16,
            9,
            "Property max_heading_level is not allowed.",
            "yaml-schema: approx_token chunker parameters",
        )
    ]
    text = PIPELINE.replace("type: approx_token", "type: heading").replace(
        "chunk_size: 200", "max_heading_level: 2"
    )
    assert diagnostics(server, project, "heading.yaml", text) == []


def test_a_parameter_of_the_wrong_kind_is_reported_at_its_value(
    server: YamlLanguageServer, project: Path
) -> None:
    text = PIPELINE.replace("chunk_size: 200", "chunk_size: large")
    [(line, column, message, source)] = diagnostics(server, project, "kind.yaml", text)
    assert (line, column, source) == (16, 21, "yaml-schema: Chunk Size")
    assert message == 'Incorrect type. Expected "integer".'


def test_a_reference_to_the_environment_is_no_error_where_a_number_is_expected(
    server: YamlLanguageServer, project: Path
) -> None:
    # The editor sees the text before expansion; validate checks the value after it.
    text = PIPELINE.replace("chunk_size: 200", "chunk_size: ${CHUNK_SIZE:-200}")
    assert diagnostics(server, project, "reference.yaml", text) == []
