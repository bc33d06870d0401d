"""The shared table renderer: escaping, trimming, padding, JSON that parses."""

from __future__ import annotations

import json

from ragflow_config.rag._parsers._tables import JSON_MARKER, render_table


def test_markdown_escapes_pipes_backslashes_and_line_breaks() -> None:
    # Every line ends with a newline, the last one too, as in AgentScope.
    rows = [["Name", "Note"], ["a|b", "c\\d\r\ne"]]
    assert render_table(rows, "markdown") == (
        "| Name | Note |\n| --- | --- |\n| a\\|b | c\\\\d e |\n"
    )


def test_empty_rows_and_columns_are_dropped_and_short_rows_padded() -> None:
    rows = [["", "", ""], ["h1", "", "h3"], ["x"], ["", " ", ""], ["y", "", "z", "extra"]]
    assert render_table(rows, "markdown") == (
        "| h1 | h3 |  |\n| --- | --- | --- |\n| x |  |  |\n| y | z | extra |\n"
    )


def test_a_table_without_text_renders_as_nothing() -> None:
    assert render_table([], "markdown") == ""
    assert render_table([["", " "], ["\n"]], "json") == ""


def test_json_is_one_array_after_the_marker() -> None:
    rows = [["Stadt", "Größe"], ["Köln", "1|2\nzwei"]]
    marker, body = render_table(rows, "json").split("\n", 1)
    assert marker == JSON_MARKER
    assert json.loads(body) == [["Stadt", "Größe"], ["Köln", "1|2\nzwei"]]
    assert "Größe" in body  # non-ASCII kept, not \u-escaped


def test_coordinates_label_non_empty_cells_after_trimming() -> None:
    rows = [["Name", "", "Age"], ["", "", ""], ["Ann", "", ""]]
    coordinates = [["A1", "B1", "C1"], ["A2", "B2", "C2"], ["A3", "B3", "C3"]]
    assert render_table(rows, "markdown", coordinates) == (
        "| [A1] Name | [C1] Age |\n| --- | --- |\n| [A3] Ann |  |\n"
    )
    body = render_table(rows, "json", coordinates).split("\n", 1)[1]
    assert json.loads(body) == [{"A1": "Name", "C1": "Age"}, {"A3": "Ann"}]
