"""OCR accuracy on real scanned pages: the share of characters recognised correctly.

Reads ``pipelines/mixed/scans/customs-penalty-notice.pdf`` (pdfplumber's scanned
test PDF, three pages, no text layer) and compares what is recognised with the
hand-checked transcriptions in ``bench/ocr/page<n>.txt``:

    character accuracy = 1 - edit distance / reference length

on the texts with all white space removed (the pages are Chinese, where white
space carries nothing; a scan's spacing between Chinese and digits is
typography). The baseline, measured in the same run, is ``ocr: never``: the
text layer, which is empty. Each page is rendered at 100, 150 (what the PDF
parser uses) and 200 dpi; CPU seconds are this process's, beside wall time.

    nice python bench/ocr_accuracy.py
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pdfplumber

from ragflow_config.rag import PDFParser
from ragflow_config.rag._parsers._ocr import recognise

ROOT = Path(__file__).resolve().parent.parent
SCAN = ROOT / "pipelines/mixed/scans/customs-penalty-notice.pdf"
TRANSCRIPTIONS = ROOT / "bench/ocr"
RESOLUTIONS = (100, 150, 200)


def compact(text: str) -> str:
    return "".join(text.split())


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions), one row at a time."""
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i]
        for j, char_b in enumerate(b, start=1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b))
            )
        previous = current
    return previous[-1]


def accuracy(reference: str, recognised: str) -> float:
    reference, recognised = compact(reference), compact(recognised)
    return 1 - edit_distance(reference, recognised) / len(reference)


def references() -> list[str]:
    return [(TRANSCRIPTIONS / f"page{n}.txt").read_text(encoding="utf-8") for n in range(1, 4)]


def row(label: str, pages: list[str], wall: float, cpu: float) -> str:
    scores = [accuracy(ref, got) for ref, got in zip(references(), pages, strict=True)]
    total_ref = sum(len(compact(ref)) for ref in references())
    errors = sum(
        edit_distance(compact(ref), compact(got))
        for ref, got in zip(references(), pages, strict=True)
    )
    cells = " | ".join(f"{score:.1%}" for score in scores)
    return (
        f"| {label} | {cells} | {1 - errors / total_ref:.1%} ({errors} / {total_ref}) "
        f"| {wall / len(pages):.1f} | {cpu / len(pages):.1f} |"
    )


def parsed(ocr: str) -> tuple[list[str], float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    sections = asyncio.run(PDFParser(ocr=ocr).parse(str(SCAN), SCAN.name))  # type: ignore[arg-type]
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    by_page = {section.metadata["page"]: section.content.text for section in sections}  # type: ignore[union-attr]
    return [by_page.get(n, "") for n in range(1, 4)], wall, cpu


def rendered(resolution: int) -> tuple[list[str], float, float]:
    with pdfplumber.open(SCAN) as pdf:
        images = [page.to_image(resolution=resolution).original for page in pdf.pages]
    wall, cpu = time.perf_counter(), time.process_time()
    pages = [recognise(image, 0.0) for image in images]
    return pages, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    recognise(
        pdfplumber.open(SCAN).pages[0].to_image(resolution=30).original, 0.0
    )  # load the models
    print(
        "| run | page 1 | page 2 | page 3 | all (errors / characters) | wall s/page | CPU s/page |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    print(row("`ocr: never` (baseline: the text layer)", *parsed("never")))
    print(row("`ocr: auto` (the parser, 150 dpi)", *parsed("auto")))
    for resolution in RESOLUTIONS:
        print(row(f"rendered at {resolution} dpi", *rendered(resolution)))


if __name__ == "__main__":
    main()
