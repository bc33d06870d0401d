"""Optical character recognition for scanned PDF pages and images, with RapidOCR.

RapidOCR runs PaddleOCR's PP-OCRv4 detection and recognition models (Chinese and
English, digits and Latin punctuation) on onnxruntime. The wheel of
``rapidocr-onnxruntime`` carries the three ONNX models, so nothing is downloaded
when it runs.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any, Literal

from ..._extras import require

if TYPE_CHECKING:
    from PIL.Image import Image

OcrMode = Literal["auto", "always", "never"]

OCR_MODULE = "rapidocr_onnxruntime"
OCR_EXTRA = "ocr"

MIN_CONFIDENCE_DESCRIPTION = (
    "OCR lines recognised with less confidence (0-1) are dropped; what is left is "
    "indexed only if it holds a word of three or more letters."
)
# A real word: three letters or more (any script; a Chinese line is one run of letters).
# Photos give lines of symbols and stray letters ("★★★", "★K") with high confidence.
_WORD = re.compile(r"[^\W\d_]{3,}")


def ocr_requires(mode: OcrMode) -> dict[str, str]:
    """The module OCR needs (module -> extra) when ``mode`` may run it."""
    return {} if mode == "never" else {OCR_MODULE: OCR_EXTRA}


@functools.cache
def _engine() -> Any:
    # Loading the three models takes about a second: once per process.
    rapidocr = require(OCR_MODULE, OCR_EXTRA)
    return rapidocr.RapidOCR()


def recognise(image: Image, min_confidence: float) -> str:
    """The text in ``image``, one recognised line per line, top to bottom; ``""`` if none.

    Lines recognised with a confidence below ``min_confidence`` are left out, and so is
    everything when what is left holds no real word (``_WORD``): noise is not indexed.
    """
    # RapidOCR reads a PIL image's pixels as they are: a palette or two-channel image
    # must become RGB first.
    result, _ = _engine()(image.convert("RGB"))
    text = "\n".join(line for _, line, score in result or [] if score >= min_confidence)
    return text if _WORD.search(text) else ""
