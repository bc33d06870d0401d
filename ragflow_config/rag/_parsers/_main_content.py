"""Which part of a web page is its content: trafilatura's judgement on article pages.

Measured on the article-extraction benchmark's 181 real pages (bench/parse_quality.py,
bench/README.md), choosing by markup alone (the page's ``<main>``, ``<article>`` or
``<body>`` less its ``nav``/``aside``/``header``/``footer``) scores F1 0.825, precision
0.714: news and blog pages mark their related-article lists, share bars and comment
threads with nothing a selector can know. trafilatura scores each block by its text and
link density and its neighbours, and scores 0.960 there. Its output is simple HTML
(headings, paragraphs, lists, tables, code, quotes) that ``HTMLParser`` writes as Markdown
as it writes any page.

Pages whose generator marks where the content is are the exception, read by their markup,
whole. Documentation sites: their pages are all content, with short paragraphs, parameter
tables and code blocks that a boilerplate detector may drop. MediaWiki (Wikipedia): its
furniture has known classes (``HTMLParser`` removes them), and trafilatura drops infobox
values, "See also" lists and image captions there.
"""

from __future__ import annotations

import functools
import html
import re
from typing import Any

from ..._extras import require

_SPACES = re.compile(r"\s+")
# What such generators write in <meta name="generator">: Sphinx (through Docutils), MkDocs,
# Docusaurus, VitePress, rustdoc, pdoc, Doxygen, Javadoc, MediaWiki.
_MARKING_GENERATORS = re.compile(
    r"sphinx|docutils|mkdocs|docusaurus|vitepress|rustdoc|pdoc|doxygen|javadoc|mediawiki",
    re.IGNORECASE,
)
# The content containers of documentation themes that do not say their generator: Sphinx's
# basic themes, Read the Docs', Material for MkDocs', Docusaurus', and GitHub's rendered
# Markdown (READMEs, wikis).
_DOCUMENTATION_MARKUP = (
    ".sphinxsidebar, .wy-nav-content, .md-content, .theme-doc-markdown, .markdown-body"
)


def marks_its_content(tree: Any) -> bool:
    """True for a documentation site's or a wiki's page (``tree``: a selectolax Lexbor tree)."""
    for meta in tree.css('meta[name="generator" i]'):
        if _MARKING_GENERATORS.search(meta.attributes.get("content") or ""):
            return True
    return tree.css_first(_DOCUMENTATION_MARKUP) is not None


def article_html(tree: Any) -> str:
    """The main content of the page ``tree`` as simple HTML, ``""`` when trafilatura finds
    too little to trust (then the page is read by its markup).

    Comments under an article are left out (the benchmark's gold, and what a search
    should answer from, is the article); tables and inline formatting are kept. trafilatura
    leaves the article's title out (it is metadata to it): the page's one ``<h1>`` is put
    back on top, as the heading its sections come under.
    """
    trafilatura = require("trafilatura", "documents")
    found = trafilatura.extract(
        tree.html,
        output_format="html",
        fast=True,  # no second opinion from readability and jusText: as good here, less CPU
        include_comments=False,
        include_tables=True,
        include_formatting=True,
        include_links=False,
        include_images=False,
        config=_settings(),
    )
    text = _text(found) if found else ""
    if len(text) < _TOO_LITTLE:
        return ""
    headline = _one_headline(tree)
    if headline and headline not in text:
        return f"<h1>{html.escape(headline)}</h1>{found}"
    return str(found)


# Below trafilatura's own threshold for trusting an extraction (MIN_EXTRACTED_SIZE, in
# characters), it dumps the whole page's text as one flat block; the markup keeps the
# page's headings and lists instead.
_TOO_LITTLE = 250


@functools.cache
def _settings() -> Any:
    """trafilatura's settings with its flat whole-page rescue turned off (``_TOO_LITTLE``)."""
    settings = require("trafilatura.settings", "documents").use_config()
    settings.set("DEFAULT", "MIN_EXTRACTED_SIZE", "0")
    return settings


def _text(page: str) -> str:
    lexbor = require("selectolax.lexbor", "documents")
    return _SPACES.sub(" ", lexbor.LexborHTMLParser(page).body.text(deep=True)).strip()


def _one_headline(tree: Any) -> str:
    """The text of the page's only ``<h1>``, ``""`` without exactly one."""
    headlines = [
        text for node in tree.css("h1") if (text := _SPACES.sub(" ", node.text(deep=True)).strip())
    ]
    return headlines[0] if len(headlines) == 1 else ""
