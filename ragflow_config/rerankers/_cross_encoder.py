"""A cross-encoder from a local ONNX file: the query and each passage read together.

No cross-encoder ships on PyPI with its weights, so the user brings one: an export
such as ``cross-encoder/ms-marco-MiniLM-L-6-v2`` to ONNX (``optimum-cli export onnx``)
gives ``model.onnx`` and ``tokenizer.json``. Nothing is downloaded here.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field

from .._component import RELATIVE_PATH, ComponentParameters
from .._errors import RagflowError
from .._extras import require
from ._base import RerankerBase

if TYPE_CHECKING:
    from onnxruntime import InferenceSession
    from tokenizers import Encoding, Tokenizer

# The inputs a BERT-style export names; a model may take fewer (no token types).
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


class CrossEncoderError(RagflowError):
    """The cross-encoder's files are missing, unreadable or not a one-logit model."""


class CrossEncoderReranker(RerankerBase):
    """Scores each (query, passage) pair with a local ONNX cross-encoder, on the CPU.

    Pairs are tokenized as the model was trained (``[CLS] query [SEP] passage
    [SEP]`` for BERT-style tokenizers, by the tokenizer file's own template),
    cut to ``max_length`` word pieces, longest side first, as sentence-transformers'
    ``CrossEncoder`` does, and run ``batch_size`` at a time, each batch padded to
    its own longest pair. The score is the model's one logit, unchanged.
    """

    requires: ClassVar[dict[str, str]] = {"onnxruntime": "minilm", "tokenizers": "minilm"}

    class Parameters(ComponentParameters):
        model_path: Path = Field(
            description="The cross-encoder's `model.onnx`, relative to the pipeline file.",
            json_schema_extra=RELATIVE_PATH,
        )
        tokenizer_file: Path = Field(
            description="Its `tokenizer.json` (Hugging Face tokenizers format), relative to "
            "the pipeline file.",
            json_schema_extra=RELATIVE_PATH,
        )
        max_length: int = Field(
            default=512,
            ge=4,
            description="Word pieces per pair, special tokens included; the longer of query "
            "and passage is cut first. 512 for MiniLM and BERT models.",
        )
        batch_size: int = Field(default=32, ge=1, description="Pairs per ONNX session call.")
        threads: int | None = Field(
            default=None,
            ge=1,
            description="onnxruntime's threads per call; default: its own choice (every core).",
        )

    parameters: Parameters

    def __init__(self, parameters: Parameters | None = None, **options: Any) -> None:
        super().__init__(parameters, **options)
        self._load_lock = threading.Lock()
        self._runtime: tuple[Tokenizer, InferenceSession, list[str]] | None = None

    async def scores(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        return await asyncio.to_thread(self._score, query, list(passages))

    def _score(self, query: str, passages: list[str]) -> list[float]:
        tokenizer, session, inputs = self._load()
        size = self.parameters.batch_size
        scores: list[float] = []
        for start in range(0, len(passages), size):
            pairs = [(query, passage) for passage in passages[start : start + size]]
            feed = _feed(tokenizer.encode_batch(pairs), inputs)
            (logits,) = session.run(None, feed)
            if logits.ndim != 2 or logits.shape[1] != 1:
                raise CrossEncoderError(
                    f"{self.parameters.model_path}: the model gives logits of shape "
                    f"{list(logits.shape)}; a cross-encoder for reranking gives one per pair "
                    "([batch, 1])"
                )
            scores.extend(float(value) for value in logits[:, 0])
        return scores

    def _load(self) -> tuple[Tokenizer, InferenceSession, list[str]]:
        """The tokenizer, the session and the inputs it takes, loaded once per instance."""
        with self._load_lock:
            if self._runtime is None:
                tokenizer = self._load_tokenizer()
                session = self._load_session()
                names = [node.name for node in session.get_inputs()]
                unknown = [name for name in names if name not in _INPUTS]
                if unknown or "input_ids" not in names:
                    raise CrossEncoderError(
                        f"{self.parameters.model_path}: the model takes inputs {names}; a "
                        f"cross-encoder takes input_ids and optionally {', '.join(_INPUTS[1:])}"
                    )
                self._runtime = (tokenizer, session, names)
            return self._runtime

    def _load_tokenizer(self) -> Tokenizer:
        tokenizers = require("tokenizers", "minilm")
        path = self.parameters.tokenizer_file
        try:
            tokenizer = tokenizers.Tokenizer.from_file(str(path))
        except Exception as exc:  # tokenizers raises a bare Exception for a bad file
            raise CrossEncoderError(f"{path}: cannot load the tokenizer: {exc}") from exc
        # The file's own padding and truncation (often a fixed length) are replaced:
        # each batch is padded to its longest pair, and pairs are cut as trained.
        padding = tokenizer.padding or {}
        tokenizer.enable_truncation(max_length=self.parameters.max_length)
        tokenizer.enable_padding(
            pad_id=padding.get("pad_id", 0), pad_token=padding.get("pad_token", "[PAD]")
        )
        return tokenizer

    def _load_session(self) -> InferenceSession:
        ort = require("onnxruntime", "minilm")
        path = self.parameters.model_path
        options = ort.SessionOptions()
        if self.parameters.threads is not None:
            options.intra_op_num_threads = self.parameters.threads
        try:
            return ort.InferenceSession(
                str(path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime's errors share no public base class
            raise CrossEncoderError(f"{path}: cannot load the ONNX model: {exc}") from exc


def _feed(encodings: list[Encoding], inputs: list[str]) -> dict[str, Any]:
    """The session's inputs for one batch of encoded pairs, as int64 arrays."""
    import numpy as np

    columns = {
        "input_ids": [e.ids for e in encodings],
        "attention_mask": [e.attention_mask for e in encodings],
        "token_type_ids": [e.type_ids for e in encodings],
    }
    return {name: np.asarray(columns[name], dtype=np.int64) for name in inputs}
