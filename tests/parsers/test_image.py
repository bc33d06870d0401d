"""ImageParser on images written by Pillow."""

from __future__ import annotations

import base64

import pytest

from ragflow_config.message import DataBlock
from ragflow_config.rag import ImageParser, ParserError

from .conftest import bytes_of, image_bytes


@pytest.mark.parametrize(
    ("image_format", "media_type"),
    [
        ("PNG", "image/png"),
        ("JPEG", "image/jpeg"),
        ("GIF", "image/gif"),
        ("BMP", "image/bmp"),
        ("WEBP", "image/webp"),
    ],
)
async def test_the_whole_image_is_one_data_section(image_format: str, media_type: str) -> None:
    data = image_bytes(image_format, size=(30, 20))
    sections = await ImageParser().parse(data, "picture")

    assert len(sections) == 1
    block = sections[0].content
    assert isinstance(block, DataBlock)
    assert block.media_type == media_type
    assert bytes_of(sections[0]) == data
    assert block.name == "picture"
    assert sections[0].metadata == {"media_type": media_type}
    assert sections[0].source == "picture"


async def test_the_media_type_comes_from_the_bytes_not_the_name() -> None:
    sections = await ImageParser().parse(image_bytes("JPEG"), "photo.png")
    assert sections[0].metadata["media_type"] == "image/jpeg"


async def test_a_png_whose_pixels_decode_despite_a_bad_checksum_is_kept() -> None:
    # The widely copied 1x1 PNG: its IDAT checksum is wrong, every viewer shows it.
    pixel = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNgAAIAAAUAAarVyFEAAAAASUVORK5CYII="
    )
    [section] = await ImageParser().parse(pixel, "pixel.png")
    assert bytes_of(section) == pixel
    assert section.metadata == {"media_type": "image/png"}


async def test_a_png_cut_inside_its_pixels_is_a_parser_error() -> None:
    data = image_bytes("PNG", size=(64, 64))
    with pytest.raises(ParserError, match=r"^cut\.png: damaged image/png file"):
        await ImageParser().parse(data[: len(data) // 2], "cut.png")


async def test_a_truncated_jpeg_is_a_parser_error() -> None:
    data = image_bytes("JPEG", size=(64, 64))
    with pytest.raises(ParserError, match=r"^cut\.jpg: damaged image/jpeg file") as caught:
        await ImageParser().parse(data[: len(data) - 40], "cut.jpg")
    assert "truncated" in caught.value.cause


@pytest.mark.parametrize(
    ("data", "looks_like"),
    [
        (b"just some text", "text/plain"),
        (image_bytes("TIFF"), "unrecognised binary data"),
        (b"", "empty"),
    ],
)
async def test_anything_else_is_not_a_supported_image(data: bytes, looks_like: str) -> None:
    with pytest.raises(ParserError) as caught:
        await ImageParser().parse(data, "x.png")
    assert str(caught.value) == f"x.png: not a supported image file: the content is {looks_like}"


async def test_bytes_that_only_start_like_an_image_are_rejected_by_pillow() -> None:
    with pytest.raises(ParserError, match=r"^fake\.bmp: damaged image/bmp file"):
        await ImageParser().parse(b"BM" + b"\x00" * 40, "fake.bmp")
