"""Which part of a web page HTMLParser reads: trafilatura's choice on article pages,
the markup on documentation sites and wikis (issue 54)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragflow_config.rag import HTMLParser

from .conftest import fixture_path, text_of

ROOT = Path(__file__).resolve().parent.parent.parent
BLOG_POST = fixture_path("ebb-org-blog-post.html")  # a real blog page: menus, a tag cloud


async def test_a_blog_post_is_its_article_without_the_menus_and_the_tag_cloud() -> None:
    sections = await HTMLParser().parse(BLOG_POST, "post.html")
    text = "\n\n".join(text_of(section) for section in sections)

    assert "The last 33 days have been unprecedentedly difficult" in text
    assert "a safe environment for victims of sexual assault" in text  # the last paragraph
    for furniture in ("Tag Cloud", "Pump.io Social Network", "Résumé", "- gplv3", "Previous:"):
        assert furniture not in text
    # trafilatura leaves the title out; it is put back as the heading above every section.
    assert text.startswith("# On Recent Controversial Events\n\n")
    assert all(s.metadata["headings"][:1] == ["On Recent Controversial Events"] for s in sections)


async def test_by_markup_the_same_page_keeps_what_no_tag_marks_as_furniture() -> None:
    text, _ = HTMLParser(main_content="markup").to_markdown(Path(BLOG_POST).read_bytes(), "post")
    assert "The last 33 days have been unprecedentedly difficult" in text
    assert "## Tag Cloud" in text and "- gplv3" in text


@pytest.mark.parametrize(
    "page",
    [
        "pipelines/mixed/html/howto/functional.html",  # Sphinx: <meta name="generator" Docutils>
        "pipelines/mixed/html/faq/windows.html",
        "tests/fixtures/wikipedia-hermitian-matrix.html",  # MediaWiki
    ],
)
async def test_documentation_and_wiki_pages_are_read_whole_by_their_markup(page: str) -> None:
    data = (ROOT / page).read_bytes()
    assert HTMLParser().to_markdown(data, page) == HTMLParser(main_content="markup").to_markdown(
        data, page
    )


async def test_a_page_too_short_for_trafilatura_is_read_by_markup_with_its_headings() -> None:
    # trafilatura would flatten it into one block ("Tags\n# not a heading\nplain").
    page = b"<body><h1>Tags</h1><h2>Plain</h2><p>A word.</p><ul><li>one</li></ul></body>"
    sections = await HTMLParser().parse(page, "tags.html")
    assert [(s.metadata["headings"], text_of(s)) for s in sections] == [
        (["Tags", "Plain"], "## Plain\n\nA word.\n\n- one")
    ]


async def test_a_line_after_a_line_break_is_not_read_as_markdown() -> None:
    page = b"<body><h1>Notes</h1><p>First line<br># not a heading<br>- not an item</p></body>"
    sections = await HTMLParser(main_content="markup").parse(page, "notes.html")
    assert [text_of(s) for s in sections] == [
        "# Notes\n\nFirst line\n\\# not a heading\n\\- not an item"
    ]


async def test_line_breaks_and_paragraphs_in_a_cell_are_spaces() -> None:
    page = (
        b"<table><tr><th>Step</th><th>What</th></tr>"
        b"<tr><td>1</td><td>Stop<br>the server<p>then wait</p></td></tr></table>"
    )
    [section] = await HTMLParser(main_content="markup").parse(page, "steps.html")
    assert text_of(section) == ("| Step | What |\n| --- | --- |\n| 1 | Stop the server then wait |")


async def test_a_page_wrapped_in_a_form_keeps_its_content() -> None:
    # ASP.NET web forms put the whole page in one <form>; its controls are still dropped.
    page = (
        b"<body><form action='/post'><main><h1>Notice</h1><p>The office closes at noon.</p>"
        b"<input name='q'><button>Search</button></main></form></body>"
    )
    text, _ = HTMLParser(main_content="markup").to_markdown(page, "notice.html")
    assert text == "# Notice\n\nThe office closes at noon."


def test_trafilatura_is_required_only_when_it_is_used() -> None:
    assert "trafilatura" in HTMLParser.requires_for(HTMLParser.Parameters())
    for settings in ({"main_content": "markup"}, {"keep_furniture": True}):
        assert "trafilatura" not in HTMLParser.requires_for(HTMLParser.Parameters(**settings))


async def test_a_formula_hidden_beside_its_picture_stays_in_the_article() -> None:
    # MediaWiki's markup, outside a wiki: the MathML in a display:none span, a picture beside.
    formula = (
        '<span class="math"><span style="display: none"><math alttext="E=mc^{2}">'
        "<mi>E</mi><mo>=</mo><mi>m</mi><msup><mi>c</mi><mn>2</mn></msup></math></span>"
        '<img src="e.svg" alt="E=mc^2"></span>'
    )
    before = "".join(
        f"<p>Paragraph {n} on how mass and energy are two faces of one quantity, as special "
        "relativity tells, and what follows from it for nuclear physics.</p>"
        for n in range(4)
    )
    page = (
        f"<html><body><nav><a href='/'>Home</a></nav><article><h1>Energy</h1>{before}"
        f"<p>Einstein wrote it as {formula} in 1905.</p></article></body></html>"
    )
    text, _ = HTMLParser().to_markdown(page.encode(), "energy.html")
    assert "Einstein wrote it as E=mc^{2} in 1905." in text
