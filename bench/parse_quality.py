"""What the parsers extract, scored against public gold text (issue 54), with time per document.

Web pages: the article-extraction benchmark (github.com/scrapinghub/article-extraction-benchmark,
MIT): 181 real pages (``html/<id>.html.gz``) and their gold article bodies
(``ground-truth.json``). Each page goes through ``HTMLParser.to_markdown`` and is scored
with the benchmark's own metric (its ``evaluate.py``): the 4-word shingles of the
extracted text against the gold's, true/false positives and negatives normalised per page,
precision and recall averaged over pages, F1 from the two averages. trafilatura, when
installed, runs on the same pages in the same run as the anchor.

PDFs: text similarity as py-pdf's benchmark (github.com/py-pdf/benchmarks) scores it,
``Levenshtein.ratio`` (rapidfuzz's ``fuzz.ratio / 100`` is the same Indel similarity)
between the gold text and the extracted pages joined by a newline, after the
post-processing py-pdf applies to every library (ligatures replaced, words hyphenated at a
line end joined, a page's leading or trailing page number dropped). Documents:

- ``GeoTopo-book``: py-pdf's gold ``read/extraction-ground-truth/GeoTopo-book.txt`` against
  ``009-pdflatex-geotopo/GeoTopo-komprimiert.pdf`` of github.com/py-pdf/sample-files (the
  same book as the ``GeoTopo.pdf`` py-pdf reads, its streams compressed);
- ``reportlab-*``: PDFs written here with reportlab from the Markdown tutorial in
  ``pipelines/corpus/tutorial/`` (justified paragraphs, so word spacing is stretched), the
  gold being the text written.

Each PDF is read by ``PDFParser`` (the project's parser) and, as anchors in the same run,
by pdfplumber's and pypdfium2's plain text extraction.

    python bench/parse_quality.py --articles DIR --pdfs --pdf-gold DIR

``--articles`` is a checkout of the article benchmark (it scores the web pages);
``--pdfs`` scores the PDFs, the reportlab ones and, with ``--pdf-gold``, a folder of
``<name>.pdf`` beside ``<name>.txt``. Neither data set is committed here (bench/README.md
says where they come from). CPU seconds are this process's; on a shared machine compare
CPU, wall time counts the waits for a core.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import re
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from rapidfuzz import fuzz

from ragflow_config.rag import HTMLParser, PDFParser

ROOT = Path(__file__).resolve().parent.parent
TUTORIAL = ROOT / "pipelines/corpus/tutorial"

# --- web pages -----------------------------------------------------------------------------

_WORD = re.compile(r"\w+")


def shingles(text: str, n: int = 4) -> Counter[tuple[str, ...]]:
    """The benchmark's unit: every run of ``n`` consecutive ``\\w+`` tokens (one shorter
    tuple when the text has fewer than ``n`` tokens)."""
    tokens = _WORD.findall(text)
    return Counter(tuple(tokens[i : i + n]) for i in range(max(1, len(tokens) - n + 1)))


def page_counts(gold: str, extracted: str) -> tuple[float, float, float]:
    """True positives, false positives and false negatives of one page, summing to 1."""
    want, got = shingles(gold), shingles(extracted)
    want.pop((), None)
    got.pop((), None)
    tp = sum((want & got).values())
    fp = sum((got - want).values())
    fn = sum((want - got).values())
    total = tp + fp + fn
    return (tp / total, fp / total, fn / total) if total else (0.0, 0.0, 0.0)


def f1_precision_recall(counts: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    def precision(tp: float, fp: float, fn: float) -> float:
        return 1.0 if fp == fn == 0 else (0.0 if tp == fp == 0 else tp / (tp + fp))

    def recall(tp: float, fp: float, fn: float) -> float:
        return 1.0 if fp == fn == 0 else (0.0 if tp == fn == 0 else tp / (tp + fn))

    p = statistics.mean(precision(*c) for c in counts if c[0] + c[1] > 0)
    r = statistics.mean(recall(*c) for c in counts if c[0] + c[2] > 0)
    return 2 * p * r / (p + r), p, r


def ours(html: str) -> str:
    text, _ = HTMLParser().to_markdown(html, "page.html")
    return text


def ours_by_markup(html: str) -> str:
    """HTMLParser as it chose content before trafilatura (issue 54): by the page's markup."""
    text, _ = HTMLParser(main_content="markup").to_markdown(html, "page.html")
    return text


def trafilatura_text(html: str) -> str:
    import trafilatura

    return trafilatura.extract(html) or ""


def articles(folder: Path) -> list[tuple[str, str]]:
    gold = json.loads((folder / "ground-truth.json").read_text(encoding="utf-8"))
    pages = []
    for key in sorted(gold):
        raw = gzip.decompress((folder / "html" / f"{key}.html.gz").read_bytes())
        pages.append((raw.decode("utf-8", errors="replace"), gold[key].get("articleBody", "")))
    return pages


def score_html(folder: Path) -> list[str]:
    pages = articles(folder)
    extractors: dict[str, Callable[[str], str]] = {
        "HTMLParser": ours,
        "HTMLParser, main_content: markup": ours_by_markup,
    }
    try:
        import trafilatura  # noqa: F401

        extractors["trafilatura (anchor)"] = trafilatura_text
    except ImportError:
        pass
    rows = []
    for name, extract in extractors.items():
        wall, cpu = time.perf_counter(), time.process_time()
        counts = [page_counts(gold, extract(html)) for html, gold in pages]
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        f1, p, r = f1_precision_recall(counts)
        rows.append(
            f"| {name} | {f1:.3f} | {p:.3f} | {r:.3f} "
            f"| {1000 * wall / len(pages):.1f} | {1000 * cpu / len(pages):.1f} |"
        )
    return [
        f"Article-extraction benchmark, {len(pages)} pages:",
        "",
        "| extractor | F1 | precision | recall | ms/page wall | ms/page CPU |",
        "|---|---|---|---|---|---|",
        *rows,
    ]


# --- PDFs ----------------------------------------------------------------------------------

_LIGATURES = {"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "ft", "ﬆ": "st"}


def post_process(pages: list[str]) -> str:
    """py-pdf's post-processing of every library's pages (``text_extraction_post_processing``)."""
    done = []
    for number, text in enumerate(pages, start=1):
        for ligature, letters in _LIGATURES.items():
            text = text.replace(ligature, letters)
        lines = [line.rstrip() for line in text.split("\n")]
        for i in range(len(lines) - 1):
            if lines[i].endswith(("-", "\ufffe")):
                suffix = lines[i + 1].split(" ")[0]
                lines[i] = lines[i][:-1] + suffix
                lines[i + 1] = lines[i + 1][len(suffix) :]
        text = "\n".join(lines)
        label = str(number)
        if text.lstrip().startswith(label):
            text = text.lstrip()[len(label) :]
        if text.rstrip().endswith(label):
            text = text.rstrip()[: -len(label)]
        done.append(text)
    return "\n".join(done)


def parser_pages(path: Path) -> list[str]:
    sections = asyncio.run(PDFParser().parse(str(path), path.name))
    return [section.content.text for section in sections]  # type: ignore[union-attr]


def parser_pages_before(path: Path) -> list[str]:
    """PDFParser as it read every page before PDFium (issue 54): pdfplumber's lines."""
    texts, _ = PDFParser()._read_with_pdfplumber(path.read_bytes(), path.name)
    return [text for text in texts.values() if text]


def pdfplumber_pages(path: Path) -> list[str]:
    import pdfplumber

    with pdfplumber.open(path) as pdf:
        return [page.extract_text() or "" for page in pdf.pages]


def pdfium_pages(path: Path) -> list[str]:
    import pypdfium2

    pdf = pypdfium2.PdfDocument(path)
    try:
        return [pdf[i].get_textpage().get_text_range() for i in range(len(pdf))]
    finally:
        pdf.close()


def tutorial_pdfs(folder: Path) -> list[Path]:
    """One justified-text PDF per tutorial page, beside its gold text."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate

    style = getSampleStyleSheet()["BodyText"]
    style.alignment = 4  # justified: the spaces between words are stretched
    made = []
    for source in sorted(TUTORIAL.glob("*.md")):
        paragraphs = [
            " ".join(block.split())
            for block in source.read_text(encoding="utf-8").split("\n\n")
            if block.strip() and not block.lstrip().startswith(("```", "|", "#"))
        ]
        pdf = folder / f"reportlab-{source.stem}.pdf"
        SimpleDocTemplate(str(pdf), pagesize=A4).build(
            [Paragraph(_xml_escape(text), style) for text in paragraphs]
        )
        (folder / f"{pdf.stem}.txt").write_text("\n".join(paragraphs), encoding="utf-8")
        made.append(pdf)
    return made


def _xml_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def score_pdfs(groups: dict[str, list[Path]]) -> list[str]:
    """One row per group of documents and reader: the mean similarity, pages per second."""
    readers: dict[str, Callable[[Path], list[str]]] = {
        "PDFParser": parser_pages,
        "PDFParser before (pdfplumber's lines)": parser_pages_before,
        "pdfplumber extract_text (anchor)": pdfplumber_pages,
        "pypdfium2 get_text_range (anchor)": pdfium_pages,
    }
    rows = []
    for group, pdfs in groups.items():
        for name, read in readers.items():
            similarities, pages, wall, cpu = [], 0, 0.0, 0.0
            for pdf in pdfs:
                gold = pdf.with_suffix(".txt").read_text(encoding="utf-8")
                started, started_cpu = time.perf_counter(), time.process_time()
                texts = read(pdf)
                wall += time.perf_counter() - started
                cpu += time.process_time() - started_cpu
                similarities.append(fuzz.ratio(gold, post_process(texts)) / 100)
                pages += len(texts)
            rows.append(
                f"| {group} | {name} | {statistics.mean(similarities):.1%} | {pages} "
                f"| {wall / len(pdfs):.2f} | {cpu / len(pdfs):.2f} "
                f"| {pages / wall:.1f} | {pages / cpu:.1f} |"
            )
    return [
        "PDF text against gold text (py-pdf's similarity, the mean over a group's documents):",
        "",
        "| documents | reader | similarity | pages | s/document wall | s/document CPU "
        "| pages/s wall | pages/s CPU |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
    ]


def main() -> None:
    arguments = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    arguments.add_argument("--articles", type=Path, help="a checkout of the article benchmark")
    arguments.add_argument("--pdfs", action="store_true", help="score the PDFs")
    arguments.add_argument("--pdf-gold", type=Path, help="a folder of <name>.pdf and <name>.txt")
    options = arguments.parse_args()
    if options.articles:
        print("\n".join(score_html(options.articles)), end="\n\n", flush=True)
    if options.pdfs:
        with tempfile.TemporaryDirectory() as scratch:
            gold = sorted(options.pdf_gold.glob("*.pdf")) if options.pdf_gold else []
            groups = {pdf.stem: [pdf] for pdf in gold}
            made = tutorial_pdfs(Path(scratch))
            groups[f"reportlab, {len(made)} justified documents"] = made
            print("\n".join(score_pdfs(groups)))


if __name__ == "__main__":
    main()
