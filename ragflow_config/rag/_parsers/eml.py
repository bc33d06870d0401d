"""E-mail messages (.eml): the headers a reader looks at, then the body text."""

from __future__ import annotations

import email
import email.policy
from email.message import EmailMessage, MIMEPart
from typing import Any, ClassVar

from pydantic import Field

from ..._component import ComponentParameters
from ..._document import Section
from ..._errors import ParserError
from ...message import TextBlock
from ._content import damaged
from .base import ParserBase
from .html import HTMLParser

_HEADERS = ("Subject", "From", "To", "Cc", "Date")


class EmailParser(ParserBase):
    """An RFC 822 message (.eml) as one section.

    The text is the ``Subject``, ``From``, ``To``, ``Cc`` and ``Date`` headers
    (those present) as ``Name: value`` lines, a blank line, then the body: its
    plain-text part, else its HTML part read as the ``html`` parser reads a
    page. Attachments are not read; their file names are listed in
    ``metadata["attachments"]``. ``metadata`` also holds ``subject``, ``from``
    and ``date``. Parsing uses the standard library's ``email`` package;
    encoded headers and bodies (quoted-printable, base64, any charset) are decoded;
    a text part in a charset Python does not know is read as UTF-8. A message
    the ``email`` package cannot read raises :class:`ParserError`.
    """

    supported_media_types: ClassVar[list[str]] = ["message/rfc822"]
    requires: ClassVar[dict[str, str]] = {"selectolax": "documents", "markdown_it": "documents"}

    class Parameters(ComponentParameters):
        prefer_html: bool = Field(
            default=False,
            description="Read the HTML part of a message that has both, not its plain text.",
        )

    parameters: Parameters

    @classmethod
    def supported_extensions(cls) -> list[str]:
        return [".eml"]

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        data = self.read_bytes(file, filename)
        try:
            message = email.message_from_bytes(data, policy=email.policy.default)
            assert isinstance(message, EmailMessage)
            return [self._section(message, filename)]
        except ParserError:
            raise
        except Exception as exc:  # the email package trips on some malformed headers
            raise damaged(filename, "e-mail", exc) from exc

    def _section(self, message: EmailMessage, filename: str) -> Section:
        if not any(message.get(name) for name in ("From", "Subject", "Date", "Message-ID")):
            raise ParserError(filename, "not an e-mail message: no From, Subject or Date header")
        order = ("html", "plain") if self.parameters.prefer_html else ("plain", "html")
        body = ""
        part = message.get_body(preferencelist=order)
        if part is not None:
            content = _content(part)
            if part.get_content_subtype() == "html":
                # Decoded by its charset. By markup: a message is all content, and
                # trafilatura could take a short one's lines for boilerplate.
                content, _ = HTMLParser(main_content="markup").to_markdown(content, filename)
            body = str(content).replace("\r\n", "\n").strip()
        header_lines = [f"{name}: {message[name]}" for name in _HEADERS if message.get(name)]
        text = "\n".join(header_lines) + ("\n\n" + body if body else "")
        attachments = [
            attachment.get_filename() or "(unnamed)" for attachment in message.iter_attachments()
        ]
        metadata = {
            key: str(message[name])
            for key, name in (("subject", "Subject"), ("from", "From"), ("date", "Date"))
            if message.get(name)
        }
        if attachments:
            metadata["attachments"] = attachments  # type: ignore[assignment]
        return Section(content=TextBlock(text=text), source=filename, metadata=metadata)


def _content(part: MIMEPart) -> Any:
    """The part's decoded content; text in a charset Python does not know is read as UTF-8."""
    try:
        return part.get_content()
    except (LookupError, ValueError):  # unknown charset, or one with a NUL in its name
        if part.get_content_maintype() != "text":
            raise
        payload = part.get_payload(decode=True)
        assert isinstance(payload, bytes)
        return payload.decode("utf-8", errors="replace")
