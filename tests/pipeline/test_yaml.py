"""Reading pipeline files: the shape of the document, ``${VAR}`` references.

Syntax errors have their own table: test_syntax_errors.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ragflow_config import ConfigError
from ragflow_config.pipeline import Pipeline

from .conftest import Check


@pytest.mark.parametrize("name", ["empty.yaml", "comments_only.yaml"])
def test_an_empty_file_says_so(check: Check, name: str) -> None:
    assert check(name) == [
        f"{name}:1:1: the file is empty; expected a mapping with `version` and `knowledge_bases`"
    ]


def test_a_file_that_is_a_list_says_a_mapping_was_expected(check: Check) -> None:
    assert check("top_level_list.yaml") == [
        "top_level_list.yaml:1:1: expected a mapping with `version` and `knowledge_bases`, "
        "got a list"
    ]


def test_a_missing_file_is_an_issue_not_a_traceback(check: Check) -> None:
    [issue] = check("no_such_pipeline.yaml")
    assert issue.startswith("no_such_pipeline.yaml:1:1: cannot read: ")


def test_a_file_that_is_not_utf8_is_an_issue(check: Check, tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("version: 1\ndescription: caf\xe9\n".encode("latin-1"))
    [issue] = check(str(path))
    assert "latin1.yaml:1:1: not UTF-8 text" in issue


def test_an_unquoted_reference_in_a_flow_mapping_gets_a_hint_to_quote_it(
    check: Check, tmp_path: Path
) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(
        "version: 1\nvector_stores:\n  s: {type: qdrant, parameters: {path: ${STORE}}}\n"
    )
    [issue] = check(str(path))
    assert "flow.yaml:3:41: YAML syntax: the {...} that opens at line 3, column" in issue
    assert issue.endswith('; quote a ${VAR} inside a {...} mapping: path: "${VAR}"')


def test_merged_anchors_report_where_the_value_is_written(check: Check) -> None:
    # The second chunker merges the first (`<<: *chunking`); both errors point at line 12.
    assert check("merge_keys.yaml") == [
        "merge_keys.yaml:12:18: knowledge_bases[0].chunker.parameters.overlap: "
        "-3 is less than the minimum of 0",
        "merge_keys.yaml:12:18: knowledge_bases[1].chunker.parameters.overlap: "
        "-3 is less than the minimum of 0",
    ]


class TestEnvironmentReferences:
    @pytest.fixture(autouse=True)
    def environment(self, monkeypatch: pytest.MonkeyPatch, in_files: Path) -> None:
        for name in ("RAGFLOW_TEST_UNSET_BATCH", "RAGFLOW_TEST_KB", "RAGFLOW_TEST_CITY"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("RAGFLOW_TEST_DIMENSIONS", "96")
        monkeypatch.setenv("RAGFLOW_TEST_SHOP", "Chez Max")
        monkeypatch.setenv("RAGFLOW_TEST_COLLECTION", "notes_v2")

    def test_references_defaults_and_dollar_escapes_expand(self) -> None:
        spec = Pipeline.load("environment.yaml").spec
        [kb] = spec.knowledge_bases
        assert kb.name == "notes"  # ${RAGFLOW_TEST_KB:-notes}, unset
        assert kb.collection == "notes_v2"  # ${RAGFLOW_TEST_COLLECTION}
        assert kb.description == "Costs $5 at Chez Max, Lyon"  # $$, ${VAR}, ${VAR:-default}
        # $${...} is the literal text, not a reference.
        assert kb.sources[0].include == ["${NOT_A_REFERENCE}"]

    def test_a_whole_value_reference_takes_the_type_of_its_value(self) -> None:
        parameters = Pipeline.load("environment.yaml").spec.embeddings["hashing"].parameters
        assert parameters == {"dimensions": 96, "batch_size": 16}
        assert type(parameters["dimensions"]) is int
        assert type(parameters["batch_size"]) is int  # the default is typed too

    def test_an_empty_variable_takes_the_default(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("RAGFLOW_TEST_KB", "")
        assert Pipeline.load("environment.yaml").spec.knowledge_bases[0].name == "notes"

    def test_a_missing_variable_is_an_issue_at_its_line(
        self, monkeypatch: pytest.MonkeyPatch, check: Check
    ) -> None:
        monkeypatch.delenv("RAGFLOW_TEST_COLLECTION")
        monkeypatch.delenv("RAGFLOW_TEST_DIMENSIONS")
        # Said once each: the empty value does not also fail the schema.
        assert check("environment.yaml") == [
            "environment.yaml:11:19: embeddings.hashing.parameters.dimensions: environment "
            "variable RAGFLOW_TEST_DIMENSIONS is not set "
            "(write ${RAGFLOW_TEST_DIMENSIONS:-default} to give a default)",
            "environment.yaml:18:17: knowledge_bases[0].collection: environment variable "
            "RAGFLOW_TEST_COLLECTION is not set "
            "(write ${RAGFLOW_TEST_COLLECTION:-default} to give a default)",
        ]

    @pytest.mark.parametrize("value", ["[not closed", "*alias", "{a", "a: b: c", "!!binary x"])
    def test_a_value_that_is_not_a_yaml_scalar_stays_text(
        self, monkeypatch: pytest.MonkeyPatch, value: str
    ) -> None:
        monkeypatch.setenv("RAGFLOW_TEST_COLLECTION", value)
        assert Pipeline.load("environment.yaml").spec.knowledge_bases[0].collection == value

    def test_a_value_from_the_environment_is_not_echoed_in_messages(
        self, monkeypatch: pytest.MonkeyPatch, check: Check
    ) -> None:
        monkeypatch.setenv("RAGFLOW_TEST_SECRET", "hunter2-secret")
        issues = check("environment_secret_value.yaml")
        assert issues == [
            "environment_secret_value.yaml:7:17: vector_stores.memory.parameters.distance: "
            "'${RAGFLOW_TEST_SECRET}' is not one of ['cosine', 'dot', 'euclidean']",
            "environment_secret_value.yaml:14:32: knowledge_bases[0].parsers[0].parameters."
            "encoding: unknown text encoding '${RAGFLOW_TEST_SECRET}'",
        ]
        with pytest.raises(ConfigError) as raised:
            Pipeline.load("environment_secret_value.yaml")
        assert "hunter2" not in str(raised.value)
