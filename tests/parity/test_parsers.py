"""Every parser against AgentScope 2.0.11's, on the same files, section by section.

Each case runs both parsers with the same arguments and compares every field
of every section except generated ids and time stamps. Where the README's
table "Where we differ from AgentScope, and why" lists a difference, the test
applies that row's rule to AgentScope's output (``README row: ...``) and then
still compares everything else exactly.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agentscope", reason="the parity extra (agentscope==2.0.11) is not installed")

import agentscope.rag as theirs
from parsers.conftest import build_docx, build_pptx, build_xlsx, fixture_path, image_bytes

import ragflow_config.rag as ours
from ragflow_config.rag import ParserError

from ._compare import plain, with_text

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")


async def both(parser: str, kwargs: dict[str, Any], file: bytes | str, filename: str) -> tuple:
    """(AgentScope's sections, ours), plain."""
    their_sections = await getattr(theirs, parser)(**kwargs).parse(file, filename)
    our_sections = await getattr(ours, parser)(**kwargs).parse(file, filename)
    return plain(their_sections), plain(our_sections)


# --- text and images: no difference at all ------------------------------------------------


@pytest.mark.parametrize(
    ("content", "filename"),
    [
        (b"# Cats\nCats sleep.\n\n## Dogs\nDogs bark.\n", "cats.md"),
        (b"<html><body><p>Hello <b>world</b></p></body></html>", "page.html"),
        (b"name,age\nAlice,25\n", "people.csv"),
        (b'{"a": [1, 2]}', "data.json"),
        ("Pre-decoded text, not a path", "note.txt"),
        ("", "empty.txt"),
        ("Grüße, 知识库\r\nline two\n".encode(), "unicode.txt"),
    ],
)
async def test_text(content: bytes | str, filename: str) -> None:
    their_sections, our_sections = await both("TextParser", {}, content, filename)
    assert our_sections == their_sections


async def test_text_from_a_path(tmp_path: Path) -> None:
    path = tmp_path / "cats.md"
    path.write_text("# Cats\nThey sleep.\n", encoding="utf-8")
    their_sections, our_sections = await both("TextParser", {}, str(path), "cats.md")
    assert our_sections == their_sections


@pytest.mark.parametrize("image_format", ["PNG", "JPEG", "GIF", "BMP", "WEBP"])
async def test_image(image_format: str, tmp_path: Path) -> None:
    data = image_bytes(image_format)
    their_sections, our_sections = await both("ImageParser", {}, data, f"picture.{image_format}")
    assert our_sections == their_sections
    path = tmp_path / "picture"
    path.write_bytes(data)
    their_sections, our_sections = await both("ImageParser", {}, str(path), "picture")
    assert our_sections == their_sections


async def test_image_that_does_not_decode() -> None:
    """README row: undecodable images. AgentScope labels any bytes image/jpeg."""
    [their_section] = await theirs.ImageParser().parse(b"not an image at all", "x.png")
    assert their_section.content.source.media_type == "image/jpeg"
    with pytest.raises(ParserError):
        await ours.ImageParser().parse(b"not an image at all", "x.png")


# --- PDF ----------------------------------------------------------------------------------

_TABLE_SYNTAX = {"|", "---"}


@pytest.mark.parametrize("name", ["report.pdf", "multilingual.pdf", "scanned.pdf"])
async def test_pdf(name: str) -> None:
    """README row: PDF text (layout text, tables in place as Markdown, blocks apart by a
    blank line): the words agree, in order. README row: PDF pages without text (no
    section; every section lists them in ``pages_without_text``)."""
    data = Path(fixture_path(name)).read_bytes()
    their_sections, our_sections = await both("PDFParser", {}, data, name)
    blank_pages = [s["metadata"]["page"] for s in their_sections if not s["content"]["text"]]
    expected = [s for s in their_sections if s["content"]["text"]]
    if blank_pages:
        expected = [
            {**s, "metadata": {**s["metadata"], "pages_without_text": blank_pages}}
            for s in expected
        ]
    words = [
        [w for w in s["content"]["text"].split() if w not in _TABLE_SYNTAX] for s in our_sections
    ]
    assert words == [s["content"]["text"].split() for s in expected]
    assert [with_text(s, "") for s in our_sections] == [with_text(s, "") for s in expected]


async def test_pdf_from_a_path() -> None:
    path = fixture_path("multilingual.pdf")
    their_sections, our_sections = await both("PDFParser", {}, path, "multilingual.pdf")
    assert our_sections == their_sections  # one text page: no difference applies


# --- PowerPoint ---------------------------------------------------------------------------


def rewrap(sections: list[dict[str, Any]], prefix: str | None, suffix: str | None) -> list:
    """README row: empty slides, slide wrappers. AgentScope's sections, rewritten by the
    rule here: no text section without text, each one wrapped whole in its slide's
    prefix and suffix."""
    result = []
    for section in sections:
        if section["content"]["type"] != "text":
            result.append(section)
            continue
        head = (prefix or "").format(index=section["metadata"]["slide"])
        inner = section["content"]["text"]
        if head and inner.startswith(head):
            inner = inner[len(head) :].removeprefix("\n")
        if suffix and inner.endswith(suffix):
            inner = inner[: -len(suffix)].removesuffix("\n")
        if inner.strip():
            parts = [p for p in (head, inner, suffix or "") if p]
            result.append(with_text(section, "\n".join(parts)))
    return result


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"separate_table": True},
        {"table_format": "json"},
        {"include_image": False},
        {"slide_prefix": None, "slide_suffix": None},
        {"slide_prefix": "--- slide {index} ---", "slide_suffix": None},
    ],
    ids=str,
)
async def test_pptx(kwargs: dict[str, Any]) -> None:
    their_sections, our_sections = await both("PPTParser", kwargs, build_pptx(), "deck.pptx")
    prefix = kwargs.get("slide_prefix", "<slide index={index}>")
    suffix = kwargs.get("slide_suffix", "</slide>")
    assert our_sections == rewrap(their_sections, prefix, suffix)


# --- Word ---------------------------------------------------------------------------------

_HEADING = re.compile(r"^#+ ", re.MULTILINE)


def unformatted(text: str) -> str:
    """README row: Word tabs and line breaks (a tab is ``\\t``, a break ``\\n``, heading
    styles ``#`` headings; AgentScope drops the first two and has no headings)."""
    return _HEADING.sub("", text).replace("\t", "").replace("\n", "")


def is_table(section: dict[str, Any]) -> bool:
    return str(section["content"]["text"]).startswith(("| ", "<system-info>"))


def merge_text_runs(sections: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """README row: Word sections (only a picture or a separated table ends a text
    section; AgentScope also ends one at a drawing without a picture, a text box)."""
    merged: list[dict[str, Any]] = []
    for section in sections:
        previous = merged[-1] if merged else None
        if (
            previous is not None
            and section["content"]["type"] == previous["content"]["type"] == "text"
            and section["metadata"] == previous["metadata"]
            and not any(is_table(s) for s in (previous, section))
        ):
            joined = previous["content"]["text"] + "\n" + section["content"]["text"]
            merged[-1] = with_text(previous, joined)
        else:
            merged.append(section)
    return merged


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"separate_table": True}, {"table_format": "json"}, {"include_image": False}],
    ids=str,
)
async def test_docx(kwargs: dict[str, Any]) -> None:
    their_sections, our_sections = await both("WordParser", kwargs, build_docx(), "doc.docx")
    expected = merge_text_runs(their_sections)
    assert [with_text(s, unformatted(s["content"].get("text", ""))) for s in our_sections] == [
        with_text(s, unformatted(s["content"].get("text", ""))) for s in expected
    ]


# --- Excel --------------------------------------------------------------------------------

_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_LABEL = re.compile(r"^\[[A-Z]+\d+\] ?")
_MIDNIGHT = re.compile(r"^(\[[A-Z]+\d+\] )?(\d{4}-\d\d-\d\d) 00:00:00$")


def excel_value(cell: str) -> str:
    """README row: Excel cell values. A cell as it is shown here, from AgentScope's
    (pandas') string: a date without a time as ``2021-03-01``, booleans as Excel writes
    them, an empty cell without a coordinate label."""
    cell = _MIDNIGHT.sub(r"\1\2", cell)
    label = _LABEL.match(cell)
    value = cell[label.end() :] if label else cell
    if value in ("True", "False"):
        value = value.upper()
    return "" if not value else (label.group(0) if label else "") + value


def table_of(text: str) -> tuple[list[str], list[list[str]]]:
    """(the lines that are not table rows, the table's cells) of one rendered sheet text."""
    other: list[str] = []
    rows: list[list[str]] = []
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if line.startswith("| ") and not line.startswith("| ---"):
            rows.append([c.strip() for c in _CELL_SPLIT.split(line)[1:-1]])
        elif line.startswith("["):
            parsed = json.loads(line)
            if parsed and isinstance(parsed[0], list):  # one array of rows
                rows.extend(parsed)
            else:  # AgentScope: one row per line
                rows.append(parsed)
        elif not line.startswith("| ---") and (line or index < len(lines) - 1):
            other.append(line)
    return other, rows


def without_empty_lines_and_columns(rows: list[list[str]]) -> list[list[str]]:
    """README row: Excel cell values (rows and columns with no value are dropped)."""
    rows = [[excel_value(c) for c in row] for row in rows]
    rows = [row for row in rows if any(row)]
    width = max((len(row) for row in rows), default=0)
    rows = [row + [""] * (width - len(row)) for row in rows]
    keep = [i for i in range(width) if any(row[i] for row in rows)]
    return [[row[i] for i in keep] for row in rows]


def sheet_blocks(text: str) -> list[tuple[list[str], list[list[str]]]]:
    blocks = re.split(r"\n(?=Sheet: )", text)
    return [table_of(block) for block in blocks]


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"separate_sheet": True},
        {"separate_sheet": True, "include_cell_coordinates": True},
        {"separate_sheet": True, "table_format": "json"},
        {"include_sheet_names": False, "separate_sheet": True},
        {"separate_sheet": True, "include_image": True},
    ],
    ids=str,
)
async def test_xlsx(kwargs: dict[str, Any]) -> None:
    data = build_xlsx(with_image=True)
    their_sections, our_sections = await both("ExcelParser", kwargs, data, "book.xlsx")
    assert_same_sheets(their_sections, our_sections, kwargs)


async def test_xls() -> None:
    data = Path(fixture_path("workbook.xls")).read_bytes()
    kwargs = {"separate_sheet": True}
    their_sections, our_sections = await both("ExcelParser", kwargs, data, "book.xls")
    assert_same_sheets(their_sections, our_sections, kwargs)


def assert_same_sheets(their_sections: list, our_sections: list, kwargs: dict[str, Any]) -> None:
    assert len(our_sections) == len(their_sections)
    for their, our in zip(their_sections, our_sections, strict=True):
        if their["content"]["type"] == "data":
            # README row: Excel pictures (metadata also names the anchor cell).
            assert "cell" in our["metadata"]
            our = {**our, "metadata": {k: v for k, v in our["metadata"].items() if k != "cell"}}
            assert our == their
            continue
        if not kwargs.get("separate_sheet"):
            # README row: merged Excel sheets ({"sheets": [names]} where AgentScope has {}).
            assert their["metadata"] == {}
            our = {**our, "metadata": {}}
        assert with_text(our, "") == with_text(their, "")
        our_blocks = sheet_blocks(our["content"]["text"])
        # README row: table cell line breaks (a space where AgentScope writes <br>).
        their_blocks = sheet_blocks(their["content"]["text"].replace("<br>", " "))
        assert [lines for lines, _ in our_blocks] == [lines for lines, _ in their_blocks]
        assert [rows for _, rows in our_blocks] == [
            without_empty_lines_and_columns(rows) for _, rows in their_blocks
        ]


@pytest.mark.parametrize(
    "parser", ["TextParser", "PDFParser", "PPTParser", "WordParser", "ExcelParser", "ImageParser"]
)
def test_supported_types(parser: str) -> None:
    """The same media types and extensions, in the same order. README row: text parser
    types (it also reads JSON Lines, XHTML and e-mail, listed after AgentScope's)."""
    their_cls, our_cls = getattr(theirs, parser), getattr(ours, parser)
    their_types, our_types = their_cls.supported_media_types, list(our_cls.supported_media_types)
    their_extensions, our_extensions = (
        their_cls.supported_extensions(),
        our_cls.supported_extensions(),
    )
    if parser == "TextParser":
        assert our_types[: len(their_types)] == their_types
        assert set(our_types[len(their_types) :]) <= {
            "application/x-ndjson",
            "application/xhtml+xml",
            "message/rfc822",
        }
        assert set(their_extensions) <= set(our_extensions)
        assert set(our_extensions) - set(their_extensions) <= {
            ".jsonl",
            ".ndjson",
            ".xhtml",
            ".eml",
        }
        assert sorted(our_extensions) == list(our_extensions)
    else:
        assert our_types == their_types
        assert list(our_extensions) == their_extensions
