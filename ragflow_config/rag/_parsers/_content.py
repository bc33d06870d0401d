"""Checking that a file is what its parser reads, and saying what it is when it is not."""

from __future__ import annotations

from collections.abc import Collection

from ..._errors import ParserError
from .._media_types import sniff

_OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ZIP_MAGIC = b"PK\x03\x04"
# A password-protected .docx/.pptx/.xlsx is an OLE2 container holding this stream.
_ENCRYPTED_PACKAGE = "EncryptedPackage".encode("utf-16-le")


def expect_media_type(data: bytes, filename: str, kind: str, media_types: Collection[str]) -> str:
    """The sniffed media type of ``data`` if it is one of ``media_types``.

    Raises :class:`ParserError` saying what the content is instead: a
    password-protected Office file, a damaged ZIP container, another format.
    """
    if is_encrypted_office_file(data):
        raise password_protected(filename, kind)
    media_type = sniff(data)
    if media_type is not None and media_type in media_types:
        return media_type
    if media_type is None and data.startswith(_ZIP_MAGIC):
        raise ParserError(filename, f"damaged {kind} file: truncated or corrupt ZIP container")
    raise wrong_content(filename, kind, data)


def wrong_content(filename: str, kind: str, data: bytes) -> ParserError:
    article = "an" if kind[:1] in "AEIOU" else "a"
    return ParserError(filename, f"not {article} {kind} file: the content is {describe(data)}")


def damaged(filename: str, kind: str, exc: BaseException) -> ParserError:
    """A library failed to read the file: report its own words as the cause."""
    detail = str(exc) or type(exc).__name__
    return ParserError(filename, f"damaged {kind} file (truncated or corrupt): {detail}")


def password_protected(filename: str, kind: str) -> ParserError:
    return ParserError(
        filename, f"the {kind} file is password-protected; save it without a password first"
    )


def is_encrypted_office_file(data: bytes) -> bool:
    return data.startswith(_OLE2_MAGIC) and _ENCRYPTED_PACKAGE in data


def describe(data: bytes) -> str:
    """What ``data`` looks like, in words, for an error message."""
    if not data:
        return "empty"
    if data.startswith(_OLE2_MAGIC):
        return "a legacy binary Office file (.doc, .xls or .ppt)"
    media_type = sniff(data)
    if media_type is not None:
        return media_type
    return "unrecognised binary data"
