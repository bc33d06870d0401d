"""What a folder holds, as the runner will see it: each file's media type, found as
``run`` finds it (by extension, else by content), and which PDFs have scanned pages."""

from __future__ import annotations

import importlib.util
import os
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from ...rag._media_types import SNIFF_BYTES, by_extension, detect
from .._spec import KnowledgeBaseSpec

# Pages of one PDF looked at for a text layer: a scanned document shows it on its first
# pages, and a long text PDF need not be read whole.
PDF_PAGES_CHECKED = 10
PDF = "application/pdf"
ZIP = b"PK\x03\x04"
# Larger files a run leaves out by default; not read whole to be typed.
MAX_FILE_BYTES: int = KnowledgeBaseSpec.model_fields["max_file_bytes"].default


@dataclass
class FolderSurvey:
    """The files of a folder by media type, with the include patterns that select them."""

    folder: Path
    #: Files per media type; ``None`` for those of no type the project knows.
    counts: Counter[str | None] = field(default_factory=Counter)
    #: The include patterns (``*.md``) that select the files of each media type.
    patterns: dict[str | None, set[str]] = field(default_factory=dict)
    #: An example file of each media type, relative to the folder.
    examples: dict[str | None, str] = field(default_factory=dict)
    #: PDFs with a page without a text layer (scanned), relative to the folder.
    scanned_pdfs: list[str] = field(default_factory=list)
    #: Whether PDFs could be checked for scanned pages (pdfplumber, the `rag` extra).
    pdfs_checked: bool = True

    @property
    def files(self) -> int:
        return sum(self.counts.values())


def survey(folder: Path, leave_out: Collection[Path] = ()) -> FolderSurvey:
    """Every file under ``folder`` that a run would read: hidden ones are skipped, as
    ``run`` skips them, and so are the paths in ``leave_out`` (the file being written)."""
    found = FolderSurvey(folder)
    can_read_pdfs = importlib.util.find_spec("pdfplumber") is not None
    left_out = {path.resolve() for path in leave_out}
    for directory, subdirectories, files in os.walk(folder):
        subdirectories[:] = sorted(name for name in subdirectories if not name.startswith("."))
        for name in sorted(files):
            path = Path(directory, name)
            if name.startswith(".") or not path.is_file() or path.resolve() in left_out:
                continue
            relative = path.relative_to(folder).as_posix()
            media_type = _media_type(path)
            found.counts[media_type] += 1
            found.examples.setdefault(media_type, relative)
            # A file typed by its content alone is selected by its own path.
            pattern = f"*{path.suffix}" if by_extension(name) else f"/{relative}"
            found.patterns.setdefault(media_type, set()).add(pattern)
            if media_type == PDF:
                if not can_read_pdfs:
                    found.pdfs_checked = False
                elif _has_scanned_page(path):
                    found.scanned_pdfs.append(relative)
    return found


def _media_type(path: Path) -> str | None:
    """The type ``run`` gives the file: by its name when it can, else by its first bytes."""
    known = by_extension(path.name)
    if known:
        return known
    with open(path, "rb") as file:
        # One byte past what sniffing reads, so a character cut at its end is not taken for
        # binary content, as in a run, which reads the whole file.
        head = file.read(SNIFF_BYTES + 1)
    if head.startswith(ZIP) and path.stat().st_size <= MAX_FILE_BYTES:
        head = path.read_bytes()  # an Office file's parts are listed at the end of the ZIP
    return detect(path.name, head)


def _has_scanned_page(path: Path) -> bool:
    """Whether one of the PDF's first pages has no character: a picture of text, which only
    OCR reads. A PDF that does not open is no scan: the run reports it as it is."""
    import pdfplumber

    try:
        with pdfplumber.open(path) as pdf:
            for page in pdf.pages[:PDF_PAGES_CHECKED]:
                if not page.chars:
                    return True
                page.close()
    except Exception:  # pdfminer reports damage and encryption with many exception types
        return False
    return False
