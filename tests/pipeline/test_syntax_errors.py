"""YAML syntax errors in plain words: one small broken file per common mistake.

Each file in files/syntax/ holds one mistake; its message says where (the
line to change, not where ruamel gave up), what is wrong and what to write
instead, on one line and without the parser's words.
"""

from __future__ import annotations

import pytest

from .conftest import FILES, Check

# (file, line:column, message): the table of common mistakes.
MISTAKES = [
    # Indentation: the line is named, with the lines it falls between and the fix.
    (
        "key_indented_less.yaml",
        "8:8",
        "line 8 is indented 7 spaces, less than `chunk_size:` on line 7 (8) and more than "
        "`parameters:` on line 6 (6), so it lines up with neither; indent it 8 spaces to match "
        "`chunk_size:` on line 7, or 6 to match `parameters:` on line 6",
    ),
    (
        "syntax_indentation.yaml",
        "5:4",
        "line 5 is indented 3 spaces, less than `embedding:` on line 4 (4) and more than '-' on "
        "line 3 (2), so it lines up with neither; indent it 4 spaces to match `embedding:` on "
        "line 4, or 2 to match '-' on line 3",
    ),
    (
        "comments_between.yaml",
        "10:4",
        "line 10 is indented 3 spaces, less than `chunker:` on line 5 (4) and more than '-' on "
        "line 4 (2), so it lines up with neither; indent it 4 spaces to match `chunker:` on "
        "line 5, or 2 to match '-' on line 4",
    ),
    (
        "key_between_dash_and_key.yaml",
        "6:8",
        "line 6 is indented 7 spaces, less than `path:` on line 5 (8) and more than '-' on "
        "line 5 (6), so it lines up with neither; indent it 8 spaces to match `path:` on line 5, "
        "or 6 to match '-' on line 5",
    ),
    (
        "key_indented_more.yaml",
        "5:6",
        "line 5 is indented 5 spaces, more than `embedding:` on line 4 (4), so it reads as the "
        "rest of line 4's value; indent it to match `embedding:` on line 4 (4 spaces)",
    ),
    (
        "key_under_a_value.yaml",
        "7:7",
        "line 7 is indented 6 spaces, more than `embedding:` on line 6 (4), so it reads as the "
        "rest of line 6's value; indent it to match `embedding:` on line 6 (4 spaces)",
    ),
    (
        "key_at_the_dash.yaml",
        "4:3",
        "line 4 lines up with the '-' of the list item on line 3, but is no item: start it with "
        "'- ' for a new item, or indent it to go on with the item on line 3",
    ),
    (
        "key_after_a_list.yaml",
        "6:7",
        "line 6 lines up with the '-' of the list item on line 5, but is no item: start it with "
        "'- ' for a new item, or indent it to go on with the item on line 5",
    ),
    (
        "item_in_a_mapping.yaml",
        "5:5",
        "line 5 starts a list item ('-') where the mapping from line 3 expects a key",
    ),
    (
        "dash_without_space.yaml",
        "6:9",
        "line 6 is indented 8 spaces, more than `-path:` on line 5 (6), so it reads as the rest "
        "of line 5's value; indent it to match `-path:` on line 5 (6 spaces) (and a list item "
        "needs a space after its '-')",
    ),
    ("syntax_tab.yaml", "4:1", "a tab in the indentation: indent with spaces, not tabs"),
    (
        "tab_after_a_key.yaml",
        "4:16",
        "a tab where a value or key should start: use spaces, not tabs",
    ),
    # Colons.
    (
        "missing_colon.yaml",
        "4:5",
        "`embedding hashing` on line 4 has no ':' after its key: write `key: value`",
    ),
    (
        "no_space_after_colon.yaml",
        "4:5",
        "`embedding:hashing` on line 4 has no space after its ':'; a key is followed by ': ': "
        "write `embedding: hashing`",
    ),
    (
        "key_without_colon_above.yaml",
        "4:5",
        "`name notes` on line 3 has no ': ', so YAML reads line 4 as more of it; write line 3 "
        "as `key: value`",
    ),
    (
        "colon_in_a_value.yaml",
        "4:23",
        "a ': ' on line 4 where no key may start: quote a value that holds ': ', or put the key "
        "on a line of its own",
    ),
    # Quotes and brackets: where they open.
    (
        "unclosed_double_quote.yaml",
        "3:11",
        "the quoted string that starts here never ends (the file ends inside it): close its quote",
    ),
    (
        "unclosed_single_quote.yaml",
        "5:15",
        "the quoted string that starts here never ends (the file ends inside it): close its quote",
    ),
    (
        "text_after_a_quote.yaml",
        "3:19",
        "line 3 goes on after the quoted string that ends at column 17: quote the whole value, "
        "or start the rest on a line of its own",
    ),
    (
        "unclosed_bracket.yaml",
        "7:5",
        "the [...] that opens at line 6, column 18 is not closed where line 7 goes on: close it "
        "with ']', and quote a value that holds ', ' or ': '",
    ),
    (
        "syntax_unclosed_flow.yaml",
        "5:5",
        "the [...] that opens at line 4, column 14 is not closed where line 5 goes on: close it "
        "with ']', and quote a value that holds ', ' or ': '",
    ),
    (
        "unclosed_bracket_at_the_end.yaml",
        "5:33",
        "the [...] that opens here is never closed (the file ends inside it): close it with ']'",
    ),
    ("extra_bracket.yaml", "6:26", "a ']' on line 6 closes nothing that is open: remove it"),
    (
        "empty_flow_item.yaml",
        "6:26",
        "a ',' with no value before it: remove it, or write the value",
    ),
    # Characters YAML gives a meaning to.
    (
        "unquoted_glob.yaml",
        "6:18",
        "*.md reads as a reference to an anchor &.md, and none is defined above it: quote a "
        "value that starts with '*' (\"*.md\")",
    ),
    (
        "star_alone.yaml",
        "4:19",
        "'*' starts a YAML alias here: quote a value that starts with it",
    ),
    (
        "reserved_character.yaml",
        "4:18",
        "a value cannot start with '@', which YAML reserves: quote the value",
    ),
    (
        "windows_path.yaml",
        "5:19",
        "'\\d' is no escape YAML knows, in the double-quoted string at line 5, column 15: write "
        "a backslash as '\\\\', or use single quotes, where '\\' is plain",
    ),
    # The document as a whole.
    (
        "duplicate_key.yaml",
        "6:5",
        "the key 'collection' appears twice in the mapping that starts at line 3, column 5 "
        "(line 4 and line 6): a key may appear once in a mapping; keep one",
    ),
    (
        "two_documents.yaml",
        "2:1",
        "a second document starts on line 2 ('---'): a pipeline file holds one; remove the "
        "'---', or split the file",
    ),
]

# ruamel's own words, which none of the messages above may use.
JARGON = ("<block", "<stream", "expected <", "while scanning", "while parsing", "token", "scalar")


def path_of(name: str) -> str:
    return name if (FILES / name).exists() else f"syntax/{name}"


@pytest.mark.parametrize(("name", "where", "message"), MISTAKES)
def test_each_common_mistake_is_said_in_plain_words_at_the_line_to_change(
    check: Check, name: str, where: str, message: str
) -> None:
    path = path_of(name)
    assert check(path) == [f"{path}:{where}: YAML syntax: {message}"]
    assert not any(word in message for word in JARGON)


def test_every_broken_file_is_in_the_table() -> None:
    written = {path.name for path in (FILES / "syntax").glob("*.yaml")}
    assert written <= {name for name, _, _ in MISTAKES}


def test_a_duplicate_key_does_not_echo_its_values(check: Check) -> None:
    # ruamel's message quotes both values; either may be a secret.
    [issue] = check("syntax/duplicate_key.yaml")
    assert "notes_v2" not in issue
