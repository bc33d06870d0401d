"""Builds pipelines/mixed/ (HTML pages and glossary records) from Debian's python3.11-doc.

    apt-get download python3.11-doc && dpkg -x python3.11-doc_*.deb /tmp/pydoc
    python bench/mixed_corpus.py /tmp/pydoc/usr/share/doc/python3.11/html

The HTML pages are copied unchanged; the glossary page's terms and definitions
become one JSON Lines record each. See pipelines/mixed/SOURCES.md.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

PAGES = [
    "faq/gui",
    "faq/windows",
    "faq/installed",
    "faq/extending",
    "howto/curses",
    "howto/functional",
    "howto/pyporting",
]
TARGET = Path(__file__).parents[1] / "pipelines" / "mixed"


def main(html: Path) -> None:
    for page in PAGES:
        target = TARGET / "html" / f"{page}.html"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(html / f"{page}.html", target)
    tree = LexborHTMLParser((html / "glossary.html").read_bytes())
    records = []
    for term in tree.css("dl.glossary > dt"):
        definition = term.next
        while definition is not None and definition.tag != "dd":
            definition = definition.next
        if definition is None:
            continue
        for link in term.css("a.headerlink"):
            link.decompose()
        records.append(
            {
                "term": _clean(term.text(deep=True)),
                "definition": _clean(definition.text(deep=True, separator="")),
            }
        )
    target = TARGET / "records" / "glossary.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(f"{len(PAGES)} pages, {len(records)} glossary records")


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
