"""Optical character recognition for scanned PDF pages and images, with RapidOCR.

RapidOCR runs PaddleOCR's PP-OCRv4 detection and recognition models (Chinese and
English, digits and Latin punctuation) on onnxruntime. The wheel of
``rapidocr-onnxruntime`` carries the three ONNX models, so nothing is downloaded
when it runs.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Literal

from ..._extras import require

if TYPE_CHECKING:
    from PIL.Image import Image

OcrMode = Literal["auto", "always", "never"]

OCR_MODULE = "rapidocr_onnxruntime"
OCR_EXTRA = "ocr"


def ocr_requires(mode: OcrMode) -> dict[str, str]:
    """The module OCR needs (module -> extra) when ``mode`` may run it."""
    return {} if mode == "never" else {OCR_MODULE: OCR_EXTRA}


@functools.cache
def _engine() -> Any:
    # Loading the three models takes about a second: once per process.
    rapidocr = require(OCR_MODULE, OCR_EXTRA)
    return rapidocr.RapidOCR()


def recognise(image: Image) -> str:
    """The text in ``image``, one recognised line per line, top to bottom; ``""`` if none."""
    # RapidOCR reads a PIL image's pixels as they are: a palette or two-channel image
    # must become RGB first.
    result, _ = _engine()(image.convert("RGB"))
    return "\n".join(text for _, text, _ in result or [])
