"""PPTParser on presentations built with python-pptx."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from ragflow_config.message import DataBlock, TextBlock
from ragflow_config.rag import PPTParser, Section

from .conftest import bytes_of, image_bytes, text_of, texts

TABLE = "| Region | Q1 |\n| --- | --- |\n| North | 120 |\n"  # a table's lines all end in \\n


def texts_and_metadata(sections: list[Section]) -> list[tuple[str, dict[str, Any]]]:
    """Text sections as their text, image sections as their media type."""
    return [
        (
            section.content.text
            if isinstance(section.content, TextBlock)
            else section.content.media_type,
            section.metadata,
        )
        for section in sections
    ]


async def test_slides_in_order_with_pictures_between_wrapped_text(pptx_bytes: bytes) -> None:
    sections = await PPTParser().parse(pptx_bytes, "deck.pptx")

    assert texts_and_metadata(sections) == [
        (f"<slide index=1>\nQuarterly numbers\n{TABLE}\n</slide>", {"slide": 1}),
        ("image/png", {"slide": 1, "media_type": "image/png"}),
        (
            "<slide index=1>\nAfter the picture\nsecond line\nGrouped one\nGrouped two\n</slide>",
            {"slide": 1},
        ),
        # Slide 2 is empty and slide 3 holds only a picture: no wrapper-only sections.
        ("image/jpeg", {"slide": 3, "media_type": "image/jpeg"}),
    ]
    assert {section.source for section in sections} == {"deck.pptx"}


async def test_pictures_keep_their_exact_bytes(pptx_bytes: bytes) -> None:
    sections = await PPTParser().parse(pptx_bytes, "deck.pptx")
    pictures = [section for section in sections if isinstance(section.content, DataBlock)]
    assert [bytes_of(picture) for picture in pictures] == [image_bytes(), image_bytes("JPEG")]
    blocks = [section.content for section in pictures if isinstance(section.content, DataBlock)]
    assert {block.name for block in blocks} == {"deck.pptx"}


async def test_notes_custom_prefix_and_no_pictures(pptx_bytes: bytes) -> None:
    parser = PPTParser(
        include_image=False, include_notes=True, slide_prefix="## Slide {index}", slide_suffix=None
    )
    sections = await parser.parse(pptx_bytes, "deck.pptx")

    assert texts_and_metadata(sections) == [
        (
            f"## Slide 1\nQuarterly numbers\n{TABLE}\nAfter the picture\nsecond line\n"
            "Grouped one\nGrouped two\nSpeaker notes:\nMention the north first.",
            {"slide": 1},
        )
    ]


async def test_separate_tables_get_their_own_wrapped_sections(pptx_bytes: bytes) -> None:
    parser = PPTParser(separate_table=True, include_image=False, slide_suffix="</s{index}>")
    sections = await parser.parse(pptx_bytes, "deck.pptx")

    assert texts(sections) == [
        "<slide index=1>\nQuarterly numbers\n</s1>",
        f"<slide index=1>\n{TABLE}\n</s1>",
        "<slide index=1>\nAfter the picture\nsecond line\nGrouped one\nGrouped two\n</s1>",
    ]


async def test_json_tables(pptx_bytes: bytes) -> None:
    parser = PPTParser(table_format="json", include_image=False, slide_prefix=None, slide_suffix="")
    sections = await parser.parse(pptx_bytes, "deck.pptx")
    assert text_of(sections[0]).startswith(
        "Quarterly numbers\n<system-info>A table loaded as a JSON array:</system-info>\n"
        '[["Region", "Q1"], ["North", "120"]]\nAfter the picture'
    )


def test_reference_constructor_and_template_escapes() -> None:
    parser = PPTParser(
        include_image=True, table_format="markdown", slide_prefix="{{slide}} {index:02d}"
    )
    assert parser.parameters.slide_prefix == "{{slide}} {index:02d}"


@pytest.mark.parametrize(
    "template", ["<slide page={page}>", "{0}", "{}", "{index", "{index.real}", "{index:q}"]
)
def test_templates_may_only_use_index(template: str) -> None:
    with pytest.raises(ValidationError, match="invalid template"):
        PPTParser(slide_prefix=template)
    with pytest.raises(ValidationError, match="invalid template"):
        PPTParser.Parameters(slide_suffix=template)


def test_unknown_table_format_is_rejected() -> None:
    with pytest.raises(ValidationError):
        PPTParser(table_format="csv")
