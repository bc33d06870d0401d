"""Corrupt documents for every binary parser: each fails alone, as a ParserError, in time.

Each fuzzer takes one valid test document and corrupts it: cut at an offset,
bits flipped, bytes overwritten, a run of bytes deleted or repeated. For the
ZIP-based formats (.docx, .pptx, .xlsx, .epub) the corruption may instead hit
one member's uncompressed content, written back into a sound archive, so the
damage gets past the ZIP checksums and reaches the XML readers. Whatever the
bytes, parsing either gives sections or raises :class:`ParserError` naming
the file and what is wrong: never a library's ``KeyError``, ``BadZipFile``,
``struct.error`` or ``RecursionError``, and never a hang.

Each parse runs under ``PARSE_LIMIT`` seconds, a bound far below the
pipeline's ``parse_timeout_seconds`` (300 by default): these documents are a
few KiB and parse in milliseconds. A parse still running at the limit fails
its example (``SIGALRM``, which stops Python code); one stuck in C, which
that cannot stop, ends the test process with a traceback of where
(``faulthandler``) rather than being waited on.

The settings are ``tests/fuzz/_profile.py``'s: 60 derandomized examples a
fuzzer in CI, 10,000 with ``RAGFLOW_FUZZ=long``. The inputs that once broke a
parser are kept as ``@example``s below their fuzzer.
"""

from __future__ import annotations

import asyncio
import faulthandler
import io
import signal
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from parsers.conftest import build_docx, build_pptx, build_xlsx, image_bytes
from parsers.test_epub import book
from parsers.test_structured_text import EMAIL

from ragflow_config._errors import ParserError
from ragflow_config.executors.base import ExecutorBase
from ragflow_config.rag import (
    EmailParser,
    EPUBParser,
    ExcelParser,
    HTMLParser,
    ImageParser,
    ParserBase,
    PDFParser,
    PPTParser,
    RecordsParser,
    WordParser,
)

from ._profile import fuzzing

FIXTURES = Path(__file__).parent.parent / "fixtures"

#: Seconds one parse of one corrupt document may take.
PARSE_LIMIT = 10.0
assert ExecutorBase.Parameters().parse_timeout_seconds > PARSE_LIMIT


# --- Corruptions ---------------------------------------------------------------------
# Offsets are taken modulo the length of the data they apply to, so every edit
# lands somewhere and an example means the same bytes on every run.


@dataclass(frozen=True)
class Truncate:
    at: int

    def apply(self, data: bytearray) -> None:
        del data[self.at % (len(data) + 1) :]


@dataclass(frozen=True)
class Flip:
    at: int
    mask: int  # 1..255: the bits to invert

    def apply(self, data: bytearray) -> None:
        if data:
            data[self.at % len(data)] ^= self.mask


@dataclass(frozen=True)
class Overwrite:
    at: int
    with_: bytes

    def apply(self, data: bytearray) -> None:
        if data:
            start = self.at % len(data)
            data[start : start + len(self.with_)] = self.with_


@dataclass(frozen=True)
class Delete:
    at: int
    length: int

    def apply(self, data: bytearray) -> None:
        if data:
            start = self.at % len(data)
            del data[start : start + self.length]


@dataclass(frozen=True)
class Duplicate:
    at: int
    length: int

    def apply(self, data: bytearray) -> None:
        if data:
            start = self.at % len(data)
            data[start:start] = data[start : start + self.length]


Edit = Truncate | Flip | Overwrite | Delete | Duplicate


@dataclass(frozen=True)
class Corruption:
    """``edits`` in order, on the whole file, or (``member`` set, ZIP formats only)
    on the uncompressed content of member number ``member`` (modulo their count)."""

    edits: tuple[Edit, ...]
    member: int | None = None

    def apply(self, document: bytes) -> bytes:
        if self.member is None:
            return _edited(document, self.edits)
        with zipfile.ZipFile(io.BytesIO(document)) as source:
            members = source.infolist()
            target = members[self.member % len(members)]
            out = io.BytesIO()
            with zipfile.ZipFile(out, "w") as archive:
                for info in members:
                    content = source.read(info)
                    if info is target:
                        content = _edited(content, self.edits)
                    archive.writestr(info, content)
        return out.getvalue()


def _edited(data: bytes, edits: tuple[Edit, ...]) -> bytes:
    buffer = bytearray(data)
    for edit in edits:
        edit.apply(buffer)
    return bytes(buffer)


_offsets = st.integers(min_value=0, max_value=2**20)
_lengths = st.integers(min_value=1, max_value=256)
_edits: st.SearchStrategy[Edit] = st.one_of(
    st.builds(Truncate, _offsets),
    st.builds(Flip, _offsets, st.integers(min_value=1, max_value=255)),
    st.builds(Overwrite, _offsets, st.binary(min_size=1, max_size=8)),
    st.builds(Delete, _offsets, _lengths),
    st.builds(Duplicate, _offsets, _lengths),
)


def corruptions(zip_members: bool = False) -> st.SearchStrategy[Corruption]:
    members = st.one_of(st.none(), st.integers(min_value=0, max_value=63))
    return st.builds(
        Corruption,
        st.lists(_edits, min_size=1, max_size=4).map(tuple),
        members if zip_members else st.none(),
    )


# --- The documents ---------------------------------------------------------------------


def _fixed_dates(document: bytes) -> bytes:
    """The ZIP written again with one date on every member, so its bytes are the same
    on every run (the libraries stamp members with the time of writing)."""
    with zipfile.ZipFile(io.BytesIO(document)) as source:
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as archive:
            for info in source.infolist():
                content = source.read(info)
                info.date_time = (2026, 1, 1, 0, 0, 0)
                archive.writestr(info, content)
    return out.getvalue()


_CSV = b"name,age,city\nAlice,25,Paris\nBj\xc3\xb6rn,31,Oslo\n"
_JSON = b'[{"name": "Alice", "address": {"city": "Paris"}, "tags": ["a", "b"]}, {"n": [1, [2]]}]'
_HTML = (
    b"<html><head><title>Menu</title></head><body><nav>Home</nav><main><h1>Lunch</h1>"
    b"<p>Soup <b>and</b> bread.</p><ul><li>one</li><li>two</li></ul>"
    b"<table><tr><th>Day</th><th>Dish</th></tr><tr><td>Mon</td><td>Fish</td></tr></table>"
    b"<pre>code</pre></main></body></html>"
)


@cache
def document(name: str) -> bytes:
    """The valid document each fuzzer corrupts, by its file name."""
    makers: dict[str, Callable[[], bytes]] = {
        "report.pdf": lambda: (FIXTURES / "report.pdf").read_bytes(),
        "workbook.xls": lambda: (FIXTURES / "workbook.xls").read_bytes(),
        "deck.pptx": lambda: _fixed_dates(build_pptx()),
        "report.docx": lambda: _fixed_dates(build_docx()),
        "book.xlsx": lambda: _fixed_dates(build_xlsx()),
        "pictures.xlsx": lambda: _fixed_dates(build_xlsx(with_image=True)),
        "photo.png": lambda: image_bytes("PNG"),
        "photo.jpg": lambda: image_bytes("JPEG"),
        "photo.gif": lambda: image_bytes("GIF"),
        "photo.bmp": lambda: image_bytes("BMP"),
        "photo.webp": lambda: image_bytes("WEBP"),
        "cats.epub": lambda: _fixed_dates(book()),
        "reboot.eml": lambda: EMAIL,
        "menu.html": lambda: _HTML,
        "people.csv": lambda: _CSV,
        "people.json": lambda: _JSON,
        "people.jsonl": lambda: b"\n".join(_JSON.strip(b"[]").split(b"}, {")),
    }
    return makers[name]()


# --- The check ---------------------------------------------------------------------------


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Fail the example when the block runs longer than ``seconds``.

    ``pytest.fail`` raises a ``BaseException``, which the parsers' ``except
    Exception`` cannot swallow and Hypothesis reports (and shrinks) as a failure.
    """

    def expired(signum: int, frame: Any) -> None:
        pytest.fail(f"parsing took longer than {seconds:g} s", pytrace=False)

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    # Python code stops at the alarm; a library stuck in C does not: end the process.
    faulthandler.dump_traceback_later(seconds * 3, exit=True)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        faulthandler.cancel_dump_traceback_later()
        signal.signal(signal.SIGALRM, previous)


def parses_or_fails_cleanly(parser: ParserBase, filename: str, corruption: Corruption) -> None:
    data = corruption.apply(document(filename))
    try:
        with time_limit(PARSE_LIMIT):
            sections = asyncio.run(parser.parse(data, filename))
    except ParserError as error:
        assert error.filename == filename
        assert str(error).startswith(f"{filename}: ")
        assert error.cause.strip(), "the error says nothing of what is wrong"
    else:
        assert isinstance(sections, list)
        assert all(section.source == filename for section in sections)


# --- The fuzzers -------------------------------------------------------------------------


@given(corruption=corruptions())
@fuzzing
def test_pdf(corruption: Corruption) -> None:
    parses_or_fails_cleanly(PDFParser(), "report.pdf", corruption)


@given(corruption=corruptions(zip_members=True))
@fuzzing
def test_pptx(corruption: Corruption) -> None:
    parses_or_fails_cleanly(PPTParser(include_notes=True), "deck.pptx", corruption)


@given(corruption=corruptions(zip_members=True))
@fuzzing
def test_docx(corruption: Corruption) -> None:
    parses_or_fails_cleanly(WordParser(), "report.docx", corruption)


@given(corruption=corruptions(zip_members=True))
@fuzzing
def test_xlsx(corruption: Corruption) -> None:
    parses_or_fails_cleanly(ExcelParser(), "book.xlsx", corruption)


@given(corruption=corruptions(zip_members=True))
@fuzzing
def test_xlsx_with_pictures(corruption: Corruption) -> None:
    parses_or_fails_cleanly(ExcelParser(include_image=True), "pictures.xlsx", corruption)


@given(corruption=corruptions())
@fuzzing
def test_xls(corruption: Corruption) -> None:
    parses_or_fails_cleanly(ExcelParser(), "workbook.xls", corruption)


@pytest.mark.parametrize(
    "filename", ["photo.png", "photo.jpg", "photo.gif", "photo.bmp", "photo.webp"]
)
@given(corruption=corruptions())
@fuzzing
def test_image(filename: str, corruption: Corruption) -> None:
    parses_or_fails_cleanly(ImageParser(), filename, corruption)


@given(corruption=corruptions(zip_members=True))
# zipfile's ValueError (a negative seek) reading a member of a damaged archive
@example(corruption=Corruption((Delete(0, 59),)))
# The long run: the package's XML declaration made to say encoding="ttf-8", ElementTree's
# LookupError
@example(corruption=Corruption((Flip(30, 1),), member=2))
@fuzzing
def test_epub(corruption: Corruption) -> None:
    parses_or_fails_cleanly(EPUBParser(), "cats.epub", corruption)


@given(corruption=corruptions())
# The email package's own errors: an IndexError in its header parser, an AttributeError
# ('Group' object has no attribute 'local_part'), a charset it does not know (LookupError,
# now read as UTF-8) or one with a NUL in its name (ValueError).
@example(corruption=Corruption((Delete(5, 190),)))
@example(corruption=Corruption((Overwrite(222166, b"\x00"),)))
@example(corruption=Corruption((Flip(222166, 1),)))
@fuzzing
def test_eml(corruption: Corruption) -> None:
    parses_or_fails_cleanly(EmailParser(), "reboot.eml", corruption)


@given(corruption=corruptions())
@fuzzing
def test_html(corruption: Corruption) -> None:
    parses_or_fails_cleanly(HTMLParser(), "menu.html", corruption)


@pytest.mark.parametrize("filename", ["people.csv", "people.json", "people.jsonl"])
@given(corruption=corruptions())
@fuzzing
def test_records(filename: str, corruption: Corruption) -> None:
    parses_or_fails_cleanly(RecordsParser(), filename, corruption)


# --- Pathological documents --------------------------------------------------------------
# Valid enough to parse, but shaped to exhaust a parser: each is read, or refused
# with a ParserError, within the limit.


@pytest.mark.parametrize(
    ("parser", "filename", "data"),
    [
        # The HTML writer recursed once per element: a RecursionError past ~330 levels.
        (HTMLParser(), "deep.html", b"<div>" * 5000 + b"deep text"),
        (HTMLParser(), "deep-list.html", b"<ul><li>" * 2000 + b"deep text"),
        # Each table rendered every row below it, nested tables' included: 3,000
        # nested tables (45 KB) took minutes.
        (HTMLParser(), "nested-tables.html", b"<table><tr><td>" * 3000 + b"deep text"),
        (EPUBParser(), "deep.epub", None),
        (EmailParser(), "deep.eml", None),
    ],
)
def test_deeply_nested_html_is_read(parser: ParserBase, filename: str, data: bytes | None) -> None:
    page = b"<html><body>" + b"<div>" * 5000 + b"deep text</body></html>"
    if filename.endswith(".epub"):
        data = _book_with_chapter(page)
    elif filename.endswith(".eml"):
        data = b"From: a@example.com\nSubject: deep\nContent-Type: text/html\n\n" + page
    assert data is not None
    with time_limit(PARSE_LIMIT):
        sections = asyncio.run(parser.parse(data, filename))
    assert "deep text" in "".join(str(section.content) for section in sections)


def _book_with_chapter(page: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(book())) as source:
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as archive:
            for info in source.infolist():
                content = source.read(info)
                archive.writestr(info, page if info.filename.endswith("b.xhtml") else content)
    return out.getvalue()


@pytest.mark.parametrize(
    ("filename", "data", "cause"),
    [
        # json's RecursionError leaked out.
        ("deep.json", b"[" * 5000, "nests arrays or objects too deeply"),
        ("deep.jsonl", b'{"a": 1}\n' + b"[" * 5000 + b"\n", "nests arrays or objects too deeply"),
        # Nested just within json's limit, the rendering of the record recursed past it.
        ("nested.json", b'{"a":' * 990 + b"[[1]]" + b"}" * 990, "nests arrays or objects"),
        # csv's Error for a field past its 128 KiB limit leaked out.
        ("big.csv", b'a,b\n"' + b"x" * 200_000 + b'",2\n', "not readable as CSV: field larger"),
    ],
)
def test_records_past_the_readers_limits_are_a_parser_error(
    filename: str, data: bytes, cause: str
) -> None:
    with pytest.raises(ParserError) as caught, time_limit(PARSE_LIMIT):
        asyncio.run(RecordsParser().parse(data, filename))
    assert caught.value.filename == filename
    assert cause in caught.value.cause
