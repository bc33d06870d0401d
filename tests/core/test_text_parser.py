"""TextParser: bytes vs str input, decoding rules and their errors."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest
from pydantic import ValidationError

from ragflow_config.rag import ApproxTokenChunker, ParserError, TextParser


async def parse_text(parser: TextParser, file: bytes | str, filename: str = "notes.txt") -> str:
    [section] = await parser.parse(file, filename)
    assert section.source == filename
    assert section.metadata == {}
    return section.content.text


async def test_bytes_are_decoded_with_the_configured_encoding() -> None:
    data = "café crème, señor".encode("latin-1")
    assert await parse_text(TextParser(encoding="latin-1"), data) == "café crème, señor"
    assert await parse_text(TextParser(), "café".encode()) == "café"


async def test_an_existing_path_is_read_with_the_configured_encoding(tmp_path: Path) -> None:
    path = tmp_path / "menu.txt"
    path.write_bytes("crème brûlée".encode("latin-1"))
    text = await parse_text(TextParser(encoding="latin-1"), str(path), "menu.txt")
    assert text == "crème brûlée"


async def test_a_string_that_is_not_an_existing_file_is_the_text_itself(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-file.txt")
    assert await parse_text(TextParser(), missing) == missing
    assert await parse_text(TextParser(), "# Cats\nCats sleep.") == "# Cats\nCats sleep."
    # A directory is not a file either.
    assert await parse_text(TextParser(), str(tmp_path)) == str(tmp_path)


async def test_undecodable_bytes_name_the_file_and_suggest_replace(tmp_path: Path) -> None:
    data = b"caf\xe9 au lait"  # latin-1, not UTF-8
    with pytest.raises(ParserError) as raised:
        await TextParser().parse(data, "orders.csv")
    message = str(raised.value)
    assert raised.value.filename == "orders.csv"
    assert message.startswith("orders.csv: ")
    assert "utf-8" in message and "byte 3" in message
    assert "errors: replace" in message

    path = tmp_path / "orders.csv"
    path.write_bytes(data)
    with pytest.raises(ParserError, match=r"^orders\.csv: .*errors: replace"):
        await TextParser().parse(str(path), "orders.csv")


async def test_errors_replace_and_ignore_keep_going() -> None:
    data = b"caf\xe9 au lait"
    assert await parse_text(TextParser(errors="replace"), data) == "caf\ufffd au lait"
    assert await parse_text(TextParser(errors="ignore"), data) == "caf au lait"


@pytest.mark.parametrize("encoding", ["utf-8", "UTF8", "utf_8"])
async def test_a_utf8_bom_is_stripped(tmp_path: Path, encoding: str) -> None:
    data = codecs.BOM_UTF8 + b"title,year\n"
    parser = TextParser(encoding=encoding)
    assert await parse_text(parser, data, "films.csv") == "title,year\n"
    path = tmp_path / "films.csv"
    path.write_bytes(data)
    assert await parse_text(parser, str(path), "films.csv") == "title,year\n"


@pytest.mark.parametrize("encoding", ["no-such-codec", "base64", "rot13", "hex"])
def test_parameters_reject_encodings_that_do_not_decode_text(encoding: str) -> None:
    with pytest.raises(ValidationError, match="encoding"):
        TextParser(encoding=encoding)


def test_parameters_reject_unknown_keys_and_values() -> None:
    with pytest.raises(ValidationError, match="encodng"):
        TextParser(encodng="utf-8")
    with pytest.raises(ValidationError, match="errors"):
        TextParser(errors="skip")
    schema = TextParser.Parameters.model_json_schema()
    assert schema["additionalProperties"] is False
    assert schema["properties"]["errors"]["enum"] == ["strict", "replace", "ignore"]


async def test_empty_input_is_one_empty_section_that_yields_no_chunk() -> None:
    sections = await TextParser().parse(b"", "empty.txt")
    assert [s.content.text for s in sections] == [""]
    assert await ApproxTokenChunker().chunk(sections) == []


def test_declared_media_types_and_extensions() -> None:
    assert TextParser.supported_media_types == [
        "text/plain",
        "text/markdown",
        "text/csv",
        "text/html",
        "text/x-rst",
        "application/json",
        "application/xml",
        "application/x-yaml",
        # Typed by their extension for the records, html and email parsers; before
        # that they were sniffed as text/plain, and `text` still reads them.
        "application/x-ndjson",
        "application/xhtml+xml",
        "message/rfc822",
    ]
    assert TextParser.supported_extensions() == [
        ".csv",
        ".eml",
        ".htm",
        ".html",
        ".json",
        ".jsonl",
        ".markdown",
        ".md",
        ".ndjson",
        ".rst",
        ".txt",
        ".xhtml",
        ".xml",
        ".yaml",
        ".yml",
    ]
