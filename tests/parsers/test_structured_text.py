"""The structured text parsers: Markdown by heading, HTML by content, records, e-mail."""

from __future__ import annotations

import pytest

from ragflow_config.rag import (
    EmailParser,
    HTMLParser,
    MarkdownParser,
    ParserError,
    RecordsParser,
)

from .conftest import fixture_path, text_of

MARKDOWN = """\
Intro before any heading.

# Guide

## Install

Run `pip install tool`.

```sh
# a comment, not a heading
tool --version
```

Usage
-----

Call `tool run`.

# Reference

## Options

### --verbose

Prints more.
"""


async def test_markdown_sections_follow_headings_and_carry_their_path() -> None:
    sections = await MarkdownParser().parse(MARKDOWN.encode(), "guide.md")

    assert [(s.metadata["headings"], text_of(s).splitlines()[0]) for s in sections] == [
        ([], "Intro before any heading."),
        (["Guide", "Install"], "## Install"),
        (["Guide", "Usage"], "Usage"),  # a setext heading
        (["Reference", "Options", "--verbose"], "### --verbose"),
    ]
    assert "# a comment, not a heading\ntool --version" in text_of(sections[1])
    assert all(s.source == "guide.md" for s in sections)


async def test_markdown_cut_only_at_the_levels_asked_for() -> None:
    sections = await MarkdownParser(max_heading_level=1).parse(MARKDOWN.encode(), "guide.md")

    assert [s.metadata["headings"] for s in sections] == [[], ["Guide"], ["Reference"]]
    assert "## Install" in text_of(sections[1]) and "Usage\n-----" in text_of(sections[1])


PAGE = b"""<!doctype html>
<html><head><title>Cat care | Pets Inc</title>
<style>p { color: red }</style><script>trackVisitor("cats")</script></head>
<body>
<header><a href="/">Home</a> <a href="/shop">Shop</a></header>
<nav><ul><li>Dogs</li><li>Cats</li></ul></nav>
<main>
  <article>
    <header><h1>Cat care</h1><p>By the vet team</p></header>
    <p>Adult cats sleep <b>12 to 16 hours</b> a day.</p>
    <h2>Feeding</h2>
    <p>Feed twice a day.<br>Keep fresh water out.</p>
    <ul><li>Dry food</li><li>Wet <i>food</i></li></ul>
    <h3>Portions</h3>
    <table><tr><th>Weight</th><th>Grams</th></tr><tr><td>4 kg</td><td>60</td></tr></table>
    <form><input name="q"><button>Search</button></form>
  </article>
  <aside>Related: dog care</aside>
</main>
<footer>Copyright 2026 Pets Inc</footer>
<div hidden>Hidden promo</div>
</body></html>"""


async def test_html_keeps_the_content_and_drops_the_furniture() -> None:
    sections = await HTMLParser().parse(PAGE, "cats.html")
    text = "\n\n".join(text_of(s) for s in sections)

    for furniture in ("Home", "Shop", "Dogs", "trackVisitor", "color", "Related", "Copyright"):
        assert furniture not in text
    for gone in ("Search", "Hidden promo"):
        assert gone not in text
    assert [(s.metadata["headings"], text_of(s)) for s in sections] == [
        (["Cat care"], "# Cat care\n\nBy the vet team\n\nAdult cats sleep 12 to 16 hours a day."),
        (
            ["Cat care", "Feeding"],
            "## Feeding\n\nFeed twice a day.\nKeep fresh water out.\n\n- Dry food\n- Wet food",
        ),
        (
            ["Cat care", "Feeding", "Portions"],
            "### Portions\n\n| Weight | Grams |\n| --- | --- |\n| 4 kg | 60 |",
        ),
    ]
    assert all(s.metadata["title"] == "Cat care | Pets Inc" for s in sections)


async def test_html_furniture_is_kept_when_asked() -> None:
    sections = await HTMLParser(keep_furniture=True).parse(PAGE, "cats.html")
    text = "\n".join(text_of(s) for s in sections)
    assert "Related: dog care" in text and "Copyright 2026" in text
    assert "trackVisitor" not in text  # scripts are never content


async def test_html_text_that_looks_like_markdown_is_not_a_heading() -> None:
    page = b"<body><h1>Tags</h1><p># not a heading</p><p>plain</p></body>"
    sections = await HTMLParser().parse(page, "tags.html")
    assert [s.metadata["headings"] for s in sections] == [["Tags"]]


async def test_csv_rows_are_records_named_by_their_header() -> None:
    data = 'name,city,zip\nAlice,Paris,75001\nBob,,\n\nCara,"Lyon, France",69001\n'
    sections = await RecordsParser().parse(data.encode(), "people.csv")

    assert [(text_of(s), s.metadata) for s in sections] == [
        ("name: Alice\ncity: Paris\nzip: 75001", {"record": 1}),
        ("name: Bob", {"record": 2}),
        ("name: Cara\ncity: Lyon, France\nzip: 69001", {"record": 3}),
    ]


async def test_json_items_and_nested_fields() -> None:
    data = b'[{"id": 1, "tags": ["a", "b"], "address": {"city": "Oslo"}, "note": null}, "loose"]'
    sections = await RecordsParser(records_per_section=2).parse(data, "items.json")

    assert [(text_of(s), s.metadata) for s in sections] == [
        ("id: 1\ntags: a, b\naddress.city: Oslo\n\nloose", {"record": 1, "last_record": 2})
    ]


async def test_a_bad_json_lines_line_is_a_parser_error_naming_it() -> None:
    data = b'{"q": "one"}\n\n{"q": "two"\n'
    with pytest.raises(ParserError) as caught:
        await RecordsParser().parse(data, "log.jsonl")
    assert caught.value.filename == "log.jsonl"
    assert caught.value.cause.startswith("line 3 is not valid JSON")


async def test_json_lines_are_records() -> None:
    sections = await RecordsParser().parse(b'{"q": "one"}\n{"q": "two"}\n', "log.jsonl")
    assert [(text_of(s), s.metadata) for s in sections] == [
        ("q: one", {"record": 1}),
        ("q: two", {"record": 2}),
    ]


EMAIL = b"""\
From: Ana <ana@example.com>
To: ops@example.com
Subject: =?utf-8?q?Server_r=C3=A9boot?=
Date: Tue, 01 Dec 2026 10:00:00 +0000
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="b1"

--b1
Content-Type: multipart/alternative; boundary="b2"

--b2
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: quoted-printable

The server reboots at 22:00 tonight =E2=80=94 save your work.
--b2
Content-Type: text/html; charset=utf-8

<html><body><nav>Inbox</nav><p>The server <b>reboots</b> at 22:00.</p></body></html>
--b2--
--b1
Content-Type: application/pdf
Content-Disposition: attachment; filename="plan.pdf"

JVBERi0xLjQK
--b1--
"""


async def test_an_email_is_its_headers_and_its_plain_body() -> None:
    [section] = await EmailParser().parse(EMAIL, "reboot.eml")

    assert text_of(section) == (
        "Subject: Server réboot\n"
        "From: Ana <ana@example.com>\n"
        "To: ops@example.com\n"
        "Date: Tue, 01 Dec 2026 10:00:00 +0000\n"
        "\n"
        "The server reboots at 22:00 tonight — save your work."
    )
    assert section.metadata == {
        "subject": "Server réboot",
        "from": "Ana <ana@example.com>",
        "date": "Tue, 01 Dec 2026 10:00:00 +0000",
        "attachments": ["plan.pdf"],
    }


async def test_an_email_html_body_is_read_by_content() -> None:
    [section] = await EmailParser(prefer_html=True).parse(EMAIL, "reboot.eml")
    assert text_of(section).endswith("\n\nThe server reboots at 22:00.")


async def test_bytes_that_are_not_an_email_are_a_parser_error() -> None:
    with pytest.raises(ParserError) as caught:
        await EmailParser().parse(b"just some text\n", "note.eml")
    assert caught.value.filename == "note.eml"
    assert "not an e-mail message" in caught.value.cause


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b'<head><meta charset="iso-8859-1"></head><p>caf\xe9 \x93ok\x94</p>', "café “ok”"),
        (
            b'<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">'
            b"<p>\x93\xfa\x96\x7b</p>",
            "日本",
        ),
        (b'<?xml version="1.0" encoding="windows-1251"?><p>\xcf\xf0\xe8</p>', "При"),
        ("<p>café</p>".encode("utf-16"), "café"),
        (b"<p>caf\xc3\xa9, caf\xe9</p>", "café, caf\ufffd"),
    ],
    ids=["meta-charset-latin1", "http-equiv", "xml-declaration", "utf16-bom", "utf8-default"],
)
async def test_html_is_decoded_as_the_page_declares(data: bytes, expected: str) -> None:
    [section] = await HTMLParser().parse(data, "page.html")
    assert text_of(section) == expected


async def test_an_email_html_body_is_decoded_once_by_its_part_charset() -> None:
    message = (
        b"From: a@example.com\nSubject: Menu\nMIME-Version: 1.0\n"
        b"Content-Type: text/html; charset=iso-8859-1\n"
        b"Content-Transfer-Encoding: quoted-printable\n\n"
        b'<html><head><meta charset=3D"iso-8859-1"></head><body><p>Caf=E9 cr=E8me</p></body></html>\n'
    )
    [section] = await EmailParser().parse(message, "menu.eml")
    assert text_of(section).endswith("\n\nCafé crème")


async def test_a_wikipedia_formula_is_one_inline_tex_formula() -> None:
    path = fixture_path("wikipedia-hermitian-matrix.html")
    sections = await HTMLParser().parse(path, "hermitian.html")
    text = "\n\n".join(text_of(section) for section in sections)

    assert (
        "for all indices i and j:\n\n"
        "A{\\text{ Hermitian}}\\quad \\iff \\quad a_{ij}={\\overline {a_{ji}}}\n\n"
        "or in matrix form:"
    ) in text
    assert "the element in the i-th row and j-th column" in text  # inline, on its line
    assert "displaystyle" not in text
    assert "\n=\n" not in text  # no lone "=" line, which Markdown reads as a heading rule
    assert all(
        "\\" not in heading for s in sections for heading in s.metadata["headings"]
    )  # no formula fragment became a heading


async def test_wikipedia_navboxes_jump_links_and_edit_links_are_furniture() -> None:
    sections = await HTMLParser().parse(fixture_path("wikipedia-mozilla.html"), "mozilla.html")
    text = "\n\n".join(text_of(section) for section in sections)

    assert "Firefox is a web browser, and is Mozilla's flagship software product." in text
    assert "Jump to" not in text
    assert "Comparison of source code hosting facilities" not in text  # a navbox's link
    assert "Hidden categories" not in text and "Retrieved from" not in text
    assert "[edit]" not in text
    assert ["Mozilla", "Software", "Firefox"] in [s.metadata["headings"] for s in sections]
