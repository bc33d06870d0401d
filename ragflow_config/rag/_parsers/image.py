"""Image files: the whole picture as one data section, checked with Pillow."""

from __future__ import annotations

import io
from typing import ClassVar

from pydantic import Field

from ..._component import ComponentParameters
from ..._document import Section
from ..._extras import require
from ...message import DataBlock, TextBlock
from .._media_types import sniff_image
from ._content import damaged, wrong_content
from ._ocr import MIN_CONFIDENCE_DESCRIPTION, OcrMode, ocr_requires, recognise
from .base import ParserBase

# Supported media types and the Pillow format that must decode each.
_PILLOW_FORMATS = {
    "image/png": "PNG",
    "image/jpeg": "JPEG",
    "image/gif": "GIF",
    "image/bmp": "BMP",
    "image/webp": "WEBP",
}


class ImageParser(ParserBase):
    """PNG, JPEG, GIF, BMP and WebP images: one section holding the whole image.

    The section is ``DataBlock.from_bytes(data, media_type, name=filename)`` with
    ``metadata={"media_type": ...}``, as in AgentScope. The media type comes from
    the file's bytes, never from its name, and Pillow must decode every pixel of
    the image in that format. A chunk checksum that does not match is no reason
    to refuse an image that decodes (viewers show it; AgentScope passes it on).
    Anything else — another format, a truncated or undecodable file — raises
    :class:`ParserError` (AgentScope passes it on, to fail at the embedding
    service). No captions.

    With ``ocr`` set to ``"auto"`` or ``"always"`` (an image has no text layer,
    so both read every image), the text that optical character recognition
    finds (see ``_ocr``) replaces the image: one text section of its lines, top
    to bottom, with ``metadata={"media_type": ..., "ocr": True}``, which a text
    embedding model can embed. Lines recognised with less than
    ``ocr_min_confidence`` are left out, and a result without a word of three
    or more letters (a photo's "★★★", "★K") counts as no text: such an image
    stays the data section above, which a text-only model skips with one
    report line ("OCR found no text in it"). The default, ``"never"``, is AgentScope's behaviour.
    """

    supported_media_types: ClassVar[list[str]] = list(_PILLOW_FORMATS)
    requires: ClassVar[dict[str, str]] = {"PIL.Image": "rag"}

    class Parameters(ComponentParameters):
        # At its default, a parameter added since keeps the fingerprint: an upgrade alone
        # re-indexes nothing (tests/incremental/test_upgrade_fingerprint.py).
        added_later: ClassVar[frozenset[str]] = frozenset({"ocr", "ocr_min_confidence"})

        ocr: OcrMode = Field(
            default="never",
            description="Optical character recognition (the `ocr` extra): with `auto` or "
            "`always` an image becomes the text found in it (images without text stay "
            "images); `never` keeps every image as an image, as AgentScope does.",
        )
        ocr_min_confidence: float = Field(
            default=0.5, ge=0, le=1, description=MIN_CONFIDENCE_DESCRIPTION
        )

    parameters: Parameters

    @classmethod
    def supported_extensions(cls) -> list[str]:
        return [".bmp", ".gif", ".jpeg", ".jpg", ".png", ".webp"]

    @classmethod
    def requires_for(cls, parameters: ComponentParameters) -> dict[str, str]:
        assert isinstance(parameters, cls.Parameters)
        return {**cls.requires, **ocr_requires(parameters.ocr)}

    @classmethod
    def only_data_for(cls, parameters: ComponentParameters) -> bool:
        assert isinstance(parameters, cls.Parameters)
        return parameters.ocr == "never"

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        data = self.read_bytes(file, filename)
        media_type = sniff_image(data)
        if media_type is None:
            raise wrong_content(filename, "supported image", data)
        image_module = require("PIL.Image", "rag")
        formats = [_PILLOW_FORMATS[media_type]]
        try:
            image = image_module.open(io.BytesIO(data), formats=formats)
            # load() decodes every pixel, so it notices truncated or corrupt data;
            # unlike verify() it does not refuse a PNG for a checksum alone.
            image.load()
        except Exception as exc:  # Pillow raises OSError, SyntaxError, ValueError, ...
            raise damaged(filename, media_type, exc) from exc
        with image:
            text = (
                recognise(image, self.parameters.ocr_min_confidence)
                if self.parameters.ocr != "never"
                else ""
            )
        if text:
            return [
                Section(
                    content=TextBlock(text=text),
                    source=filename,
                    metadata={"media_type": media_type, "ocr": True},
                )
            ]
        return [
            Section(
                content=DataBlock.from_bytes(data, media_type, name=filename),
                source=filename,
                metadata={"media_type": media_type},
            )
        ]
