"""Generate a deterministic benchmark corpus from the paragraphs of ``pipelines/corpus/``.

    python bench/make_corpus.py /tmp/ragflow-bench/corpus-2000 --files 2000
    python bench/make_corpus.py /tmp/ragflow-bench/corpus-8000 --files 2000 --scale 4

``--files`` text and Markdown files (sizes drawn from a log-normal around
4 KB, capped at 96 KB: mostly short notes, a few long guides), of which
``--office-share`` are instead Word, Excel and PowerPoint files written with
python-docx, openpyxl and python-pptx. ``--scale k`` makes ``k`` times as many
files of the same mix. The same arguments always give the same texts (the seed
fixes every choice; office files also get fixed timestamps). Files land in
folders of 100, like a real documentation tree. A finished corpus is marked by
a ``.complete`` file (hidden, so the runner never indexes it) and is reused.
"""

from __future__ import annotations

import argparse
import datetime
import io
import json
import math
import random
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "pipelines" / "corpus"
FIXED_TIME = datetime.datetime(2024, 1, 1, 12, 0, 0)
FILES_PER_FOLDER = 100
MEDIAN_BYTES = 4_000
MAX_BYTES = 96_000


def paragraphs() -> list[str]:
    """Every blank-line-separated block of the sample corpus, in a stable order."""
    found: list[str] = []
    for path in sorted(SOURCE.rglob("*")):
        if path.is_file() and path.suffix in {".md", ".rst", ".txt"}:
            text = path.read_text(encoding="utf-8")
            found.extend(block.strip() for block in re.split(r"\n\s*\n", text) if block.strip())
    if not found:
        sys.exit(f"no paragraphs found under {SOURCE}")
    return found


def _target_size(rng: random.Random) -> int:
    return min(MAX_BYTES, max(200, int(rng.lognormvariate(math.log(MEDIAN_BYTES), 1.0))))


def _text(rng: random.Random, pool: list[str], size: int) -> list[str]:
    chosen: list[str] = []
    total = 0
    while total < size:
        block = rng.choice(pool)
        chosen.append(block)
        total += len(block) + 2
    return chosen


def _markdown(rng: random.Random, pool: list[str]) -> bytes:
    blocks = _text(rng, pool, _target_size(rng))
    title = " ".join(blocks[0].split()[:6]).strip("#* ")
    return ("# " + title + "\n\n" + "\n\n".join(blocks) + "\n").encode("utf-8")


def _plain(rng: random.Random, pool: list[str]) -> bytes:
    return ("\n\n".join(_text(rng, pool, _target_size(rng))) + "\n").encode("utf-8")


def _words(rng: random.Random, pool: list[str], count: int) -> str:
    words = rng.choice(pool).split()
    start = rng.randrange(max(1, len(words) - count))
    return " ".join(words[start : start + count])


def _docx(rng: random.Random, pool: list[str]) -> bytes:
    import docx

    document = docx.Document()
    document.core_properties.created = FIXED_TIME
    document.core_properties.modified = FIXED_TIME
    document.add_heading(_words(rng, pool, 6), level=1)
    for block in _text(rng, pool, _target_size(rng)):
        document.add_paragraph(block)
    rows, columns = rng.randint(3, 8), rng.randint(2, 4)
    table = document.add_table(rows=rows, cols=columns)
    for row in table.rows:
        for cell in row.cells:
            cell.text = _words(rng, pool, 3)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _xlsx(rng: random.Random, pool: list[str]) -> bytes:
    import openpyxl

    workbook = openpyxl.Workbook()
    workbook.properties.created = FIXED_TIME
    workbook.properties.modified = FIXED_TIME
    for index in range(rng.randint(1, 3)):
        sheet = workbook.active if index == 0 else workbook.create_sheet()
        sheet.title = f"Sheet {index + 1}"
        sheet.append(["Item", "Description", "Count", "Price"])
        for row in range(rng.randint(10, 80)):
            sheet.append(
                [
                    f"item-{row}",
                    _words(rng, pool, 8),
                    rng.randint(0, 500),
                    round(rng.uniform(1, 100), 2),
                ]
            )
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def _pptx(rng: random.Random, pool: list[str]) -> bytes:
    import pptx

    deck = pptx.Presentation()
    deck.core_properties.created = FIXED_TIME
    deck.core_properties.modified = FIXED_TIME
    layout = deck.slide_layouts[1]  # title and content
    for _ in range(rng.randint(3, 12)):
        slide = deck.slides.add_slide(layout)
        slide.shapes.title.text = _words(rng, pool, 5)
        body = slide.placeholders[1].text_frame
        body.text = _words(rng, pool, 12)
        for _ in range(rng.randint(1, 4)):
            body.add_paragraph().text = _words(rng, pool, 12)
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


KINDS: dict[str, Callable[[random.Random, list[str]], bytes]] = {
    ".md": _markdown,
    ".txt": _plain,
    ".docx": _docx,
    ".xlsx": _xlsx,
    ".pptx": _pptx,
}


def make_corpus(
    folder: Path, files: int, scale: int = 1, office_share: float = 0.06, seed: int = 7
) -> dict[str, int]:
    """Write the corpus (unless a finished one with these arguments is there); return its counts."""
    arguments = {"files": files, "scale": scale, "office_share": office_share, "seed": seed}
    marker = folder / ".complete"
    if marker.exists() and json.loads(marker.read_text())["arguments"] == arguments:
        return json.loads(marker.read_text())["counts"]
    if folder.exists() and any(folder.iterdir()):
        sys.exit(f"{folder} exists and is not a corpus made with {arguments}; remove it first")
    pool = paragraphs()
    rng = random.Random(seed)
    counts = {kind: 0 for kind in KINDS}
    for number in range(files * scale):
        if rng.random() < office_share:
            kind = rng.choice([".docx", ".xlsx", ".pptx"])
        else:
            kind = ".md" if rng.random() < 0.7 else ".txt"
        path = folder / f"part-{number // FILES_PER_FOLDER:04d}" / f"doc-{number:06d}{kind}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(KINDS[kind](rng, pool))
        counts[kind] += 1
    marker.write_text(json.dumps({"arguments": arguments, "counts": counts}))
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("folder", type=Path)
    parser.add_argument("--files", type=int, default=2000, help="files at scale 1")
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--office-share", type=float, default=0.06)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    counts = make_corpus(args.folder, args.files, args.scale, args.office_share, args.seed)
    size = sum(p.stat().st_size for p in args.folder.rglob("*") if p.is_file())
    print(f"{args.folder}: {sum(counts.values())} files, {size / 1e6:.1f} MB, {counts}")


if __name__ == "__main__":
    main()
