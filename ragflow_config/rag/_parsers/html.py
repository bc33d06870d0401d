"""HTML pages by content: the main text as Markdown, cut at its headings."""

from __future__ import annotations

import codecs
import contextlib
import re
from typing import Any, ClassVar, Literal

from pydantic import Field

from ..._component import ComponentParameters
from ..._document import Section
from ..._errors import ParserError
from ..._extras import require
from ...message import TextBlock
from .._headings import HEADINGS_KEY, split_by_headings
from ._main_content import article_html, marks_its_content
from ._tables import TABLE_FORMAT_DESCRIPTION, TableFormat, render_table
from .base import ParserBase

# Never content: code, styling, embedded objects, form controls. Not <form> itself: some
# sites (ASP.NET web forms) wrap the whole page in one (2 of the article benchmark's 181).
_NEVER = (
    "script, style, noscript, template, iframe, object, embed, svg, canvas, "
    "button, input, select, textarea, [hidden], [aria-hidden=true], "
    "a.headerlink, "  # the pilcrow links documentation generators put after headings
    ".mw-editsection"  # Wikipedia's "[edit]" after each heading
)
# Page furniture around the content: menus, banners, sidebars, footers, cookie notices.
_FURNITURE = (
    "nav, aside, header, footer, dialog, [role=navigation], [role=banner], "
    "[role=contentinfo], [role=complementary], [role=search], [role=dialog], "
    # Wikipedia's (MediaWiki's) navigation boxes, "Jump to navigation" links, category
    # lists and "Retrieved from" line, and the "skip to content" links of other sites.
    ".navbox, .vertical-navbox, #jump-to-nav, .mw-jump, .mw-jump-link, #catlinks, "
    ".printfooter, .skip-link, .skip-to-content"
)
_MAIN = ("main", "[role=main]", "article")
_HEADINGS = {f"h{level}": level for level in range(1, 7)}
_BLOCKS = {
    "address", "article", "blockquote", "body", "dd", "details", "div", "dl", "dt",
    "figcaption", "figure", "hr", "html", "li", "main", "ol", "p", "section", "summary",
    "ul",
}  # fmt: skip
# Where a page declares its encoding: <meta charset>, <meta http-equiv> or an XML declaration.
_DECLARED = re.compile(
    rb"""<meta[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)"""
    rb"""|<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9_.:-]+)""",
    re.IGNORECASE,
)
# As browsers do (WHATWG Encoding): these labels mean windows-1252.
_WINDOWS_1252 = {"iso-8859-1", "iso8859-1", "latin-1", "latin1", "ascii", "us-ascii"}
_SPACES = re.compile(r"[ \t\r\n\f\u00a0]+")
# Elements nested deeper than this are written as their text alone (three Python frames
# a level: 100 levels stay well inside the default recursion limit of 1000).
_MAX_DEPTH = 100
# A formula's TeX, as MediaWiki and others give it: the display-style wrapper is dropped.
_TEX_ANNOTATION = 'annotation[encoding="application/x-tex"]'
_DISPLAYSTYLE = re.compile(r"^\{\\displaystyle\s*(.*)\}$", re.DOTALL)
# A text line Markdown would read as a heading, a list item or a quote.
_MARKDOWN_START = re.compile(r"^(#{1,6}\s|[-+*]\s|>|\d+[.)]\s)")


class HTMLParser(ParserBase):
    """HTML pages by their content, with the page furniture left out.

    Which part of the page is content: with ``main_content: trafilatura`` (the
    default), trafilatura's judgement of an article page's blocks, which leaves
    out menus, related-article lists, share bars and comments that carry no
    telling tag. A documentation site's page (Sphinx, MkDocs, Docusaurus,
    GitHub's rendered Markdown, other generators that name themselves) and a
    MediaWiki page are read by their markup, whole. By markup (``main_content:
    markup``, or when trafilatura finds nothing): the page's ``<main>`` (or
    ``role="main"``), else its only ``<article>``, else its ``<body>``, less
    menus, banners, sidebars and footers (``nav``, ``aside``, ``header``,
    ``footer`` and their ARIA roles); a header inside the content (an
    article's own title block) is kept. Scripts, styles, form controls and
    hidden elements are never content.

    The content is written as Markdown: headings as ``#`` lines, paragraphs
    apart by a blank line, list items as ``- `` lines, ``<pre>`` as fenced
    code, tables in ``table_format``, a MathML formula as its TeX on one line.
    That text is cut at its headings as the ``markdown`` parser cuts it: one
    section per heading with
    ``metadata={"headings": [...], "title": <the page's <title>>}``.
    Parsing uses selectolax (the Lexbor HTML5 engine), which never rejects
    markup. Bytes are decoded by their byte order mark, else as the page
    declares (``<meta charset>``, an XML declaration), else as UTF-8;
    undecodable bytes become U+FFFD.
    """

    supported_media_types: ClassVar[list[str]] = ["text/html", "application/xhtml+xml"]
    requires: ClassVar[dict[str, str]] = {"selectolax": "documents", "markdown_it": "documents"}

    class Parameters(ComponentParameters):
        keep_furniture: bool = Field(
            default=False,
            description="Read the whole body, menus, banners, sidebars and footers (nav, "
            "aside, header, footer) included, not only the main content.",
        )
        main_content: Literal["trafilatura", "markup"] = Field(
            default="trafilatura",
            description="How the main content of a page is found. trafilatura: by trafilatura's "
            "judgement of each block (F1 0.96 on the article-extraction benchmark), "
            "documentation sites' pages by their markup, whole. markup: the page's <main>, "
            "else its only <article>, else its <body>, less nav, aside, header and footer "
            "(F1 0.83 there, about a sixth of the CPU).",
        )
        max_heading_level: int = Field(
            default=6, ge=1, le=6, description="Cut before headings of this level or above."
        )
        table_format: TableFormat = Field(default="markdown", description=TABLE_FORMAT_DESCRIPTION)

    parameters: Parameters

    @classmethod
    def requires_for(cls, parameters: ComponentParameters) -> dict[str, str]:
        assert isinstance(parameters, cls.Parameters)
        found = dict(cls.requires)
        if parameters.main_content == "trafilatura" and not parameters.keep_furniture:
            found["trafilatura"] = "documents"
        return found

    @classmethod
    def supported_extensions(cls) -> list[str]:
        return [".htm", ".html", ".xhtml"]

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        data = self.read_bytes(file, filename)
        text, title = self.to_markdown(data, filename)
        metadata: dict[str, Any] = {"title": title} if title else {}
        return [
            Section(
                content=TextBlock(text=part.text),
                source=filename,
                metadata={HEADINGS_KEY: part.headings, **metadata},
            )
            for part in split_by_headings(text, self.parameters.max_heading_level)
        ]

    def to_markdown(self, data: bytes | str, filename: str) -> tuple[str, str]:
        """The page's content as Markdown, and its title (``""`` without one).

        ``data`` as ``str`` is taken as already decoded.
        """
        lexbor = require("selectolax.lexbor", "documents")
        try:
            tree = lexbor.LexborHTMLParser(data if isinstance(data, str) else decode(data))
        except Exception as exc:  # selectolax raises on input it cannot decode at all
            raise ParserError(filename, f"not readable as HTML: {exc}") from exc
        title_node = tree.css_first("title")
        title = _SPACES.sub(" ", title_node.text(deep=True)).strip() if title_node else ""
        for node in tree.css(_NEVER):
            node.decompose()
        _inline_formulas(tree)
        root = self._content(tree, lexbor)
        if root is None:
            return "", title
        writer = _Writer(self.parameters.table_format)
        writer.block(root)
        return writer.text(), title

    def _content(self, tree: Any, lexbor: Any) -> Any:
        """The element that holds the page's content (``None`` for a page without a body)."""
        if self.parameters.keep_furniture:
            return tree.body
        if (
            self.parameters.main_content == "trafilatura"
            and not marks_its_content(tree)
            and (found := article_html(tree))
        ):
            return lexbor.LexborHTMLParser(found).body
        root = _content_root(tree)
        if root is not None:
            for node in root.css(_FURNITURE):
                if node.mem_id != root.mem_id and (
                    node.tag not in ("header", "footer") or _outside_content(node, root)
                ):
                    node.decompose()
        return root


def decode(data: bytes) -> str:
    """The page's text: by its byte order mark, else the encoding it declares, else UTF-8.

    Bytes that do not decode become U+FFFD, as a browser shows them.
    """
    for bom, encoding in (
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            return data.decode(encoding, errors="replace")
    encoding = "utf-8"
    declared = _DECLARED.search(data[:4096])
    if declared:
        label = (declared.group(1) or declared.group(2)).decode("ascii").lower()
        label = "cp1252" if label in _WINDOWS_1252 else label
        with contextlib.suppress(LookupError):  # an unknown label: UTF-8, as browsers do
            encoding = codecs.lookup(label).name
    return data.decode(encoding, errors="replace")


def _content_root(tree: Any) -> Any:
    for selector in _MAIN:
        found = tree.css(selector)
        if len(found) == 1:
            return found[0]
    return tree.body


def _outside_content(node: Any, root: Any) -> bool:
    """True for a header or footer of the page, not one inside an article or section."""
    parent = node.parent
    while parent is not None and parent.mem_id != root.mem_id:
        if parent.tag in ("article", "section", "main"):
            return False
        parent = parent.parent
    return root.tag not in ("article", "section")


class _Writer:
    """Walks the content tree and writes Markdown blocks."""

    def __init__(self, table_format: TableFormat, depth: int = 0) -> None:
        self.table_format = table_format
        self.depth = depth  # elements entered above the node being written
        self.blocks: list[str] = []
        self.inline: list[str] = []

    def text(self) -> str:
        self.flush()
        return "\n\n".join(self.blocks)

    def flush(self, prefix: str = "") -> None:
        lines = [_SPACES.sub(" ", line).strip() for line in "".join(self.inline).split("\n")]
        # Plain text that Markdown would otherwise read as structure, on any line (a <br>
        # starts one): the first line of a list item or quote is already behind its prefix.
        lines = [
            "\\" + line if _MARKDOWN_START.match(line) and (i or not prefix) else line
            for i, line in enumerate(line for line in lines if line)
        ]
        self.inline = []
        if lines:
            self.blocks.append(prefix + "\n".join(lines))

    def block(self, node: Any) -> None:
        if self.depth >= _MAX_DEPTH:
            # Deeper than any page's structure: its text only, so the walk cannot
            # recurse past Python's limit.
            self.inline.append(node.text(deep=True))
            return
        self.depth += 1
        try:
            for child in node.iter(include_text=True):
                self.node(child)
        finally:
            self.depth -= 1

    def node(self, node: Any) -> None:
        tag = node.tag
        if tag == "-text":
            self.inline.append(node.text_content or "")
        elif tag in _HEADINGS:
            self.flush()
            title = _SPACES.sub(" ", node.text(deep=True)).strip().rstrip("¶§").strip()
            if title:
                self.blocks.append("#" * _HEADINGS[tag] + " " + title)
        elif tag == "br":
            self.inline.append("\n")
        elif tag == "pre":
            self.flush()
            code = node.text(deep=True).strip("\n")
            if code.strip():
                self.blocks.append(f"```\n{code}\n```")
        elif tag == "table":
            self.flush()
            self.table(node)
        elif tag in ("ul", "ol"):
            self.flush()
            items = _Writer(self.table_format, self.depth)
            items.block(node)
            items.flush()
            if text := "\n".join(items.blocks):
                self.blocks.append(text)  # the items on consecutive lines, as one block
        elif tag == "li":
            self.flush()
            self.block(node)
            self.flush(prefix="- ")
        elif tag == "blockquote":
            self.flush()
            self.block(node)
            self.flush(prefix="> ")
        elif tag in _BLOCKS:
            self.flush()
            self.block(node)
            self.flush()
        elif tag is not None and not tag.startswith("-"):
            self.block(node)  # inline markup: its text joins the current paragraph

    def table(self, node: Any) -> None:
        rows = [[_cell_text(cell) for cell in _children(row, _CELLS)] for row in _rows(node)]
        rows = [row for row in rows if any(row)]
        if rows:
            width = max(len(row) for row in rows)
            table = render_table(
                [row + [""] * (width - len(row)) for row in rows], self.table_format
            )
            if table.strip():
                self.blocks.append(table.strip())


def _inline_formulas(tree: Any) -> None:
    """Each MathML formula made its one-line text, in place.

    Wrappers that hold nothing else are made visible: MediaWiki hides the MathML in a
    ``display: none`` element beside a fallback image, and trafilatura drops hidden
    elements, formula and all.
    """
    for math in tree.css("math"):
        text = math.text(deep=True).strip()
        wrapper = math.parent
        while wrapper is not None and wrapper.tag in ("span", "div"):
            if wrapper.text(deep=True).strip() != text:
                break
            if "style" in wrapper.attrs:
                del wrapper.attrs["style"]
            wrapper = wrapper.parent
        math.replace_with(f" {_formula(math)} ")


def _formula(math: Any) -> str:
    """A MathML formula as one line: its TeX annotation, else its ``alttext``, else the
    text of its elements run together (one token per element otherwise)."""
    annotation = math.css_first(_TEX_ANNOTATION)
    tex = annotation.text(deep=True) if annotation is not None else ""
    tex = tex or math.attributes.get("alttext") or ""
    if not tex.strip():
        return _SPACES.sub(" ", " ".join(math.text(deep=True, separator=" ").split()))
    tex = _SPACES.sub(" ", tex).strip()
    displayed = _DISPLAYSTYLE.match(tex)
    return displayed.group(1).strip() if displayed else tex


def _cell_text(cell: Any) -> str:
    """A table cell's text on one line, its line breaks and paragraphs apart by a space."""
    for node in cell.css(_CELL_BREAKS):
        node.insert_before(" ")
        node.insert_after(" ")
    return _SPACES.sub(" ", cell.text(deep=True)).strip()


_CELL_BREAKS = "br, p, div, li"
_ROW_GROUPS = ("thead", "tbody", "tfoot")
_CELLS = ("th", "td")


def _rows(table: Any) -> list[Any]:
    """The table's own rows, in order; a table nested in a cell keeps its rows to its cell's
    text (a search of every ``tr`` below would repeat them, and cost the cube of the depth)."""
    rows: list[Any] = []
    for child in table.iter():
        if child.tag == "tr":
            rows.append(child)
        elif child.tag in _ROW_GROUPS:
            rows.extend(_children(child, ("tr",)))
    return rows


def _children(node: Any, tags: tuple[str, ...]) -> list[Any]:
    return [child for child in node.iter() if child.tag in tags]
