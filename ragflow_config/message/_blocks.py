"""Content blocks: the text and binary data that flow through parsing, chunking and search."""

from __future__ import annotations

import base64
import uuid
from datetime import datetime
from typing import Annotated, Literal

from pydantic import AnyUrl, BaseModel, Field


def _new_id() -> str:
    return uuid.uuid4().hex


def _now() -> str:
    """A creation time as AgentScope writes it: ISO 8601, local time, no zone."""
    return datetime.now().isoformat()


class TextBlock(BaseModel):
    """A piece of text."""

    type: Literal["text"] = "text"
    text: str
    id: str = Field(default_factory=_new_id)
    created_at: str = Field(default_factory=_now)
    finished_at: str | None = None


class Base64Source(BaseModel):
    """Binary content carried inline as base64 text."""

    type: Literal["base64"] = "base64"
    data: str
    media_type: str

    def to_bytes(self) -> bytes:
        return base64.b64decode(self.data)


class URLSource(BaseModel):
    """Binary content that lives at a URL."""

    type: Literal["url"] = "url"
    url: AnyUrl
    media_type: str


class DataBlock(BaseModel):
    """Binary content (an image, audio, video) with its IANA media type."""

    type: Literal["data"] = "data"
    source: Annotated[Base64Source | URLSource, Field(discriminator="type")]
    name: str | None = None
    id: str = Field(default_factory=_new_id)
    created_at: str = Field(default_factory=_now)
    finished_at: str | None = None

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str, name: str | None = None) -> DataBlock:
        encoded = base64.b64encode(data).decode("ascii")
        return cls(source=Base64Source(data=encoded, media_type=media_type), name=name)

    @property
    def media_type(self) -> str:
        return self.source.media_type


ContentBlock = Annotated[TextBlock | DataBlock, Field(discriminator="type")]
