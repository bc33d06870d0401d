"""validate's schema check gives jsonschema's errors for every file, valid or not.

``schema_errors`` asks jsonschema_rs first and imports jsonschema only for a
file that jsonschema_rs does not call valid, so the one way it could change
what `validate` says is jsonschema_rs calling valid what jsonschema does not.
The files are the mutants of ``pipelines/`` that test_pipeline_files makes,
read as `validate` reads them, and the seeds with a JSON value (or a value
YAML gives and JSON has no type for) put in place of any of their values.
"""

from __future__ import annotations

import copy
import datetime
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from ragflow_config.pipeline import Registry
from ragflow_config.pipeline._schema import pipeline_schema
from ragflow_config.pipeline._schema_errors import schema_errors
from ragflow_config.pipeline._yaml import load_yaml

from ._profile import fuzzing
from .test_pipeline_files import SEEDS, mutants

SCHEMA = pipeline_schema(Registry.from_entry_points())  # every installed type
JSONSCHEMA = Draft202012Validator(SCHEMA)


def _loaded(name: str, text: str) -> Any:
    """A seed's data as `validate` reads it: from a file (a seed need not be one in pipelines/)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_text(text, encoding="utf-8")
        return load_yaml(path, name)[0]


DATA = {name: _loaded(name, text) for name, text in SEEDS.items()}


def outcome(errors: Any) -> list[tuple[str, str]] | str:
    """The errors as (path, message), or the exception that stopped the check."""
    try:
        return [(str(list(error.absolute_path)), error.message) for error in errors]
    except Exception as exc:  # jsonschema's own (a non-string key): both must raise it
        return type(exc).__name__


def assert_agree(data: Any) -> None:
    assert outcome(schema_errors(SCHEMA, data)) == outcome(JSONSCHEMA.iter_errors(data))


@given(text=mutants(list(SEEDS.values())))
@example(text=SEEDS["local.yaml"].replace("name: python-docs", 'name: "python-docs\\n"'))
@example(text=SEEDS["local.yaml"].replace("top_k: 3", "top_k: 2024-01-01"))
@example(text=SEEDS["local.yaml"].replace("top_k: 3", "top_k: .nan"))
@example(text=SEEDS["local.yaml"].replace("top_k: 3", "top_k: !!binary aGVsbG8="))
@fuzzing
def test_a_mutated_file_gets_jsonschema_s_errors(tmp_path: Path, text: str) -> None:
    path = tmp_path / "case.yaml"
    path.write_text(text, encoding="utf-8", newline="")
    data, _, _ = load_yaml(path, "case.yaml")
    assert_agree(data)


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(["", "a\n", "local", "qdrant", "minilm", "rag", "x-a", "https://h", "0"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=6,
)
NOT_JSON = st.sampled_from([datetime.date(2024, 1, 1), b"bytes", {1: "a"}, float("nan")])


def places(node: Any) -> list[tuple[Any, Any]]:
    """Every (container, key or index) of ``node``'s tree."""
    found = []
    items = node.items() if isinstance(node, dict) else enumerate(node)
    for key, value in items:
        found.append((node, key))
        if isinstance(value, (dict, list)):
            found += places(value)
    return found


@given(seed=st.sampled_from(sorted(DATA)), data=st.data(), value=JSON | NOT_JSON)
@fuzzing
def test_a_file_with_any_value_anywhere_gets_jsonschema_s_errors(
    seed: str, data: st.DataObject, value: Any
) -> None:
    document = copy.deepcopy(DATA[seed])
    container, key = data.draw(st.sampled_from(places(document)))
    container[key] = value
    assert_agree(document)


@pytest.mark.parametrize("seed", sorted(DATA))
def test_the_valid_files_have_no_errors(seed: str) -> None:
    assert list(schema_errors(SCHEMA, DATA[seed])) == []
