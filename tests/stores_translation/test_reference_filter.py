"""The filter every store translates (``flatten_filter``): what it refuses, and where.

A store turns the flattened pairs into its engine's filter; a pair that slipped
through (an empty or non-string key, a NaN, a list) would reach each engine in its
own way, so the refusal happens here, once, naming the key path at fault.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from ragflow_config.rag._stores.base import flatten_filter, matches_filter


def test_a_filter_flattens_to_key_paths_and_values() -> None:
    nested = {"org": {"team": "a", "unit": {"id": 7}}, "flag": True, "ratio": 0.5}
    assert flatten_filter(nested) == [
        (("org", "team"), "a"),
        (("org", "unit", "id"), 7),
        (("flag",), True),
        (("ratio",), 0.5),
    ]
    assert flatten_filter(None) == flatten_filter({}) == []


@pytest.mark.parametrize(
    ("metadata_filter", "problem"),
    [
        ({"org": {"unit": {}}}, "metadata_filter: empty mapping at 'org.unit'"),
        ({"": 1}, "metadata_filter: keys must be non-empty strings, got ''"),
        ({"org": {"": 1}}, "metadata_filter: keys must be non-empty strings, got ''"),
        ({1: "a"}, "metadata_filter: keys must be non-empty strings, got 1"),
        ({"org": {"n": math.nan}}, "metadata_filter: org.n is not a finite number"),
        ({"org": {"n": -math.inf}}, "metadata_filter: org.n is not a finite number"),
        (
            {"org": {"ids": [1, 2]}},
            "metadata_filter: org.ids must be a string, number or boolean, not list",
        ),
    ],
)
def test_a_filter_a_store_could_misread_is_refused_naming_the_path(
    metadata_filter: dict[Any, Any], problem: str
) -> None:
    with pytest.raises(ValueError) as refused:
        flatten_filter(metadata_filter)
    assert str(refused.value) == problem


@pytest.mark.parametrize(
    "metadata",
    [{}, {"org": "acme"}, {"org": {}}, {"org": {"tenant": "b"}}, {"tenant": "a"}],
)
def test_metadata_without_the_key_path_or_its_value_is_outside_the_filter(
    metadata: dict[str, Any],
) -> None:
    # The tenant-leak shape: a chunk that lacks the key must never match its filter.
    assert not matches_filter(metadata, {"org": {"tenant": "a"}})


def test_metadata_with_the_value_at_the_key_path_or_in_a_list_there_is_within() -> None:
    assert matches_filter({"org": {"tenant": "a"}, "x": 1}, {"org": {"tenant": "a"}})
    assert matches_filter({"org": {"tenant": ["b", "a"]}}, {"org": {"tenant": "a"}})
    assert not matches_filter({"n": True}, {"n": 1})  # a boolean is no number
    assert matches_filter({"n": 1.0}, {"n": 1})
