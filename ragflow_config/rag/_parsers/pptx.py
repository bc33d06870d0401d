"""PowerPoint (.pptx) files, slide by slide, via python-pptx."""

from __future__ import annotations

import io
import logging
import string
from collections.abc import Iterator
from typing import Any, ClassVar

from pydantic import Field, field_validator

from ..._component import ComponentParameters
from ..._document import Section
from ..._extras import require
from ...message import DataBlock, TextBlock
from .._media_types import sniff_image
from ._content import damaged, expect_media_type
from ._tables import TABLE_FORMAT_DESCRIPTION, TableFormat, normalize_text, render_table
from .base import ParserBase

logger = logging.getLogger("ragflow_config.parsers")

PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"


class PPTParser(ParserBase):
    """PowerPoint presentations (.pptx; not legacy .ppt), slide by slide.

    The shapes of a slide are read in the slide's order, descending into groups
    so grouped text is kept. Each text frame becomes one block (its non-blank
    paragraphs joined with ``\\n``), each table one block in ``table_format``
    (see ``_tables``). A slide's blocks are joined with ``\\n`` and wrapped
    in ``slide_prefix`` / ``slide_suffix`` (``{index}`` is the slide number from
    1), one per line::

        <slide index=2>
        Quarterly numbers
        | Region | Q1 |
        | --- | --- |
        | North | 120 |

        Speaker notes:
        Mention the north first.
        </slide>

    The ``Speaker notes:`` block comes last and only with ``include_notes``.
    Text sections carry ``metadata={"slide": n}``.

    With ``include_image`` every picture becomes its own section,
    ``DataBlock.from_bytes(image, media_type, name=filename)`` with
    ``metadata={"slide": n, "media_type": ...}``, placed between the text that
    precedes and follows it; that text is split into separate sections, each
    wrapped in the prefix and suffix. ``separate_table`` does the same with
    tables (as text sections). A section is never only a prefix and suffix: a
    slide with no text gives no text section. Charts and SmartArt are not read.
    """

    supported_media_types: ClassVar[list[str]] = [PPTX]
    requires: ClassVar[dict[str, str]] = {"pptx": "rag"}

    class Parameters(ComponentParameters):
        include_image: bool = Field(
            default=True, description="Emit each picture as its own image section."
        )
        separate_table: bool = Field(
            default=False, description="Emit each table as its own text section."
        )
        table_format: TableFormat = Field(default="markdown", description=TABLE_FORMAT_DESCRIPTION)
        slide_prefix: str | None = Field(
            default="<slide index={index}>",
            description="Line written before a slide's text; `{index}` is the slide number.",
        )
        slide_suffix: str | None = Field(
            default="</slide>",
            description="Line written after a slide's text; `{index}` is the slide number.",
        )
        include_notes: bool = Field(
            default=False, description="Append each slide's speaker notes to its text."
        )

        @field_validator("slide_prefix", "slide_suffix")
        @classmethod
        def _only_index_placeholder(cls, template: str | None) -> str | None:
            if template is not None:
                _check_template(template)
            return template

    parameters: Parameters

    @classmethod
    def supported_extensions(cls) -> list[str]:
        return [".pptx"]

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        data = self.read_bytes(file, filename)
        expect_media_type(data, filename, "PowerPoint", self.supported_media_types)
        pptx = require("pptx", "rag")
        sections: list[Section] = []
        try:
            presentation = pptx.Presentation(io.BytesIO(data))
            for number, slide in enumerate(presentation.slides, start=1):
                sections.extend(self._slide_sections(slide, number, filename))
        except Exception as exc:  # python-pptx surfaces damage as KeyError, XMLSyntaxError, ...
            raise damaged(filename, "PowerPoint", exc) from exc
        return sections

    def _slide_sections(self, slide: Any, number: int, filename: str) -> list[Section]:
        from pptx.shapes.picture import Picture

        options = self.parameters
        sections: list[Section] = []
        blocks: list[str] = []

        def flush() -> None:
            if blocks:
                text = self._wrap("\n".join(blocks), number)
                sections.append(
                    Section(
                        content=TextBlock(text=text), source=filename, metadata={"slide": number}
                    )
                )
                blocks.clear()

        for shape in _leaf_shapes(slide.shapes):
            if options.include_image and isinstance(shape, Picture):
                picture = _picture_section(shape, number, filename)
                if picture is not None:
                    flush()
                    sections.append(picture)
            elif shape.has_table:
                rows = [[cell.text for cell in row.cells] for row in shape.table.rows]
                table = render_table(rows, options.table_format)
                if table and options.separate_table:
                    flush()
                    blocks.append(table)
                    flush()
                elif table:
                    blocks.append(table)
            elif shape.has_text_frame:
                text = _frame_text(shape.text_frame)
                if text:
                    blocks.append(text)
        if options.include_notes and slide.has_notes_slide:
            frame = slide.notes_slide.notes_text_frame
            notes = _frame_text(frame) if frame is not None else ""
            if notes:
                blocks.append("Speaker notes:\n" + notes)
        flush()
        return sections

    def _wrap(self, text: str, number: int) -> str:
        prefix, suffix = self.parameters.slide_prefix, self.parameters.slide_suffix
        lines = [
            prefix.format(index=number) if prefix else "",
            text,
            suffix.format(index=number) if suffix else "",
        ]
        return "\n".join(line for line in lines if line)


def _check_template(template: str) -> None:
    try:
        fields = [
            field for _, field, _, _ in string.Formatter().parse(template) if field is not None
        ]
    except ValueError as exc:
        raise ValueError(f"invalid template {template!r}: {exc}") from None
    for field in fields:
        if field != "index":
            raise ValueError(
                f"invalid template {template!r}: only the {{index}} placeholder is allowed, "
                f"not {{{field}}} (write {{{{ and }}}} for literal braces)"
            )
    try:
        template.format(index=1)
    except (KeyError, IndexError, ValueError) as exc:
        raise ValueError(f"invalid template {template!r}: {exc}") from None


def _leaf_shapes(shapes: Any) -> Iterator[Any]:
    from pptx.shapes.group import GroupShape

    for shape in shapes:
        if isinstance(shape, GroupShape):
            yield from _leaf_shapes(shape.shapes)
        else:
            yield shape


def _frame_text(frame: Any) -> str:
    lines = (normalize_text(paragraph.text) for paragraph in frame.paragraphs)
    return "\n".join(line for line in lines if line)


def _picture_section(shape: Any, number: int, filename: str) -> Section | None:
    try:
        image = shape.image
        blob: bytes = image.blob
    except Exception as exc:  # a linked (not embedded) picture or a broken relationship
        logger.warning("%s: slide %d: skipping picture %r: %s", filename, number, shape.name, exc)
        return None
    media_type = sniff_image(blob) or image.content_type
    return Section(
        content=DataBlock.from_bytes(blob, media_type, name=filename),
        source=filename,
        metadata={"slide": number, "media_type": media_type},
    )
