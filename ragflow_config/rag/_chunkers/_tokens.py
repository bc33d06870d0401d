"""Counting chunk sizes in an embedding model's own word pieces.

Shared by the ``token``, ``heading`` and ``recursive`` chunkers. The count is
the one the model sees: the tokenizer's word pieces plus its special tokens
([CLS] and [SEP] for MiniLM), so a chunk of ``chunk_size`` is never cut by a
model whose window is ``chunk_size``.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, model_validator

from ..._extras import require
from .base import ChunkerBase

if TYPE_CHECKING:
    from tokenizers import Tokenizer


class TokenParameters(ChunkerBase.Parameters):
    """Sizes in word pieces of a Hugging Face tokenizer (MiniLM's unless told otherwise)."""

    tokenizer_file: Path | None = Field(
        default=None,
        description="A Hugging Face tokenizer.json to count with; default: the `minilm` "
        "model's own (shipped with ragflow-config).",
    )
    chunk_size: int | None = Field(
        default=None,
        ge=4,
        description="Largest chunk in the tokenizer's word pieces, its special tokens "
        "included; default: the `minilm` model's window (256), so no chunk is truncated. "
        "Required with `tokenizer_file`.",
    )
    overlap: int = Field(
        default=0,
        ge=0,
        description="Word pieces neighbouring chunks may share; less than chunk_size.",
    )

    @model_validator(mode="after")
    def _sizes_agree(self) -> TokenParameters:
        if self.tokenizer_file is not None and self.chunk_size is None:
            raise ValueError(
                "chunk_size is required with tokenizer_file: set it to the model's window "
                "(its max_seq_length) or less"
            )
        if self.chunk_size is not None and self.overlap >= self.chunk_size:
            raise ValueError(
                f"overlap ({self.overlap}) must be less than chunk_size ({self.chunk_size})"
            )
        return self


class TokenCounter:
    """A tokenizer loaded on first use, and the content budget it leaves per chunk."""

    def __init__(self, parameters: TokenParameters) -> None:
        self.parameters = parameters
        self._lock = threading.Lock()
        self._loaded: tuple[Tokenizer, int] | None = None
        self._splitters: dict[tuple[str, int], Any] = {}

    # Chunkers travel to the runner's worker processes by pickle: what is loaded
    # (a lock, the tokenizer, Rust splitters) is loaded again there on first use.
    def __getstate__(self) -> dict[str, Any]:
        return {"parameters": self.parameters}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["parameters"])  # type: ignore[misc]

    def _load(self) -> tuple[Tokenizer, int]:
        with self._lock:
            if self._loaded is None:
                self._loaded = self._load_tokenizer()
            return self._loaded

    def _load_tokenizer(self) -> tuple[Tokenizer, int]:
        path = self.parameters.tokenizer_file
        if path is None:
            from ...embedding import MiniLMEmbeddingModel

            tokenizer = MiniLMEmbeddingModel.load_tokenizer()
            chunk_size = self.parameters.chunk_size or MiniLMEmbeddingModel.window
        else:
            tokenizers = require("tokenizers", "documents")
            try:
                tokenizer = tokenizers.Tokenizer.from_file(str(path))
            except Exception as exc:  # tokenizers raises its own Exception subclass
                raise ValueError(f"tokenizer_file {path}: cannot be loaded ({exc})") from exc
            tokenizer.no_truncation()
            tokenizer.no_padding()
            chunk_size = self.parameters.chunk_size or 0
        special = tokenizer.num_special_tokens_to_add(False)
        budget = chunk_size - special
        if budget <= self.parameters.overlap:
            raise ValueError(
                f"chunk_size {chunk_size} leaves {budget} word pieces after the tokenizer's "
                f"{special} special tokens: not more than overlap ({self.parameters.overlap})"
            )
        return tokenizer, budget

    @property
    def tokenizer(self) -> Tokenizer:
        return self._load()[0]

    @property
    def budget(self) -> int:
        """Word pieces of content a chunk may hold, special tokens left out."""
        return self._load()[1]

    def count(self, text: str) -> int:
        """Word pieces of ``text``, special tokens left out."""
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def splitter(self, kind: str, capacity: int | None = None) -> Any:
        """A semantic-text-splitter ``TextSplitter`` or ``MarkdownSplitter`` of this size."""
        capacity = capacity or self.budget
        splitter = self._splitters.get((kind, capacity))
        if splitter is None:
            module = require("semantic_text_splitter", "documents")
            cls = module.MarkdownSplitter if kind == "markdown" else module.TextSplitter
            overlap = min(self.parameters.overlap, capacity - 1)
            splitter = cls.from_huggingface_tokenizer(
                self.tokenizer, capacity, overlap=overlap, trim=True
            )
            self._splitters[(kind, capacity)] = splitter
        return splitter
