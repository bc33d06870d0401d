"""What the runner asks of an executor: parse, chunk (and maybe embed) one file somewhere else.

The runner keeps every decision (what changed, the fingerprint check, prune
and its guard, the report) and every store write; an executor only turns a
file's bytes into chunks, and vectors when the model is ``cpu_bound``, on
worker processes of this machine (``local``) or of a Ray cluster (``ray``).
So the same pipeline fills a collection with the same contents whichever
executor runs it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Protocol

from pydantic import Field

from .._component import Component, ComponentParameters
from ..embedding import EmbeddingModelBase, EmbeddingResponse
from ..rag import Chunk, KnowledgeBase
from ..rag._chunkers.base import ChunkerBase
from ..rag._parsers.base import ParserBase

#: A file's chunks, and the model's response (its vectors, and how many came from the
#: embedding cache) when the model embedded them beside the parsing.
Prepared = tuple[list[Chunk], EmbeddingResponse | None]


class IndexingComponents(Protocol):
    """What an executor runs of one knowledge base's indexing (the pipeline's ``IndexingPlan``).

    Declared here, below the pipeline that builds the plans, so that an
    executor never imports the pipeline.
    """

    @property
    def parsers(self) -> Sequence[ParserBase]:
        """The knowledge base's parsers, in the order they are tried."""
        ...

    @property
    def chunker(self) -> ChunkerBase:
        """The knowledge base's chunker."""
        ...

    @property
    def knowledge_base(self) -> KnowledgeBase:
        """The knowledge base, for its embedding model."""
        ...


def time_limit_reason(seconds: float) -> str:
    """Why a file failed when its parser ran out of time (one wording for both executors)."""
    return f"parsing took longer than {seconds:g} s (parse_timeout_seconds)"


class StartedExecutor(ABC):
    """An executor's workers during one run."""

    #: How many files the runner keeps in flight (read, waiting, or being written).
    files_in_flight: int
    #: True when ``prepare`` embeds with any model, not only a ``cpu_bound`` one.
    embeds_every_model: bool = False

    @abstractmethod
    async def prepare(
        self,
        parser: ParserBase,
        chunker: ChunkerBase,
        model: EmbeddingModelBase | None,
        data: bytes,
        filename: str,
        backlog: int | None = None,
    ) -> Prepared:
        """The file's chunks (and vectors when ``model`` is given), or a ``ParserError``.

        ``backlog`` is how many files are expected after this one (``None``: unknown).
        """

    @abstractmethod
    def shutdown(self) -> None:
        """Stop the workers; called once, when the run ends."""


class ExecutorBase(Component):
    """Where a run parses its files."""

    class Parameters(ComponentParameters):
        parse_timeout_seconds: float = Field(
            default=300,
            gt=0,
            description="A file whose parsing (and chunking, and embedding beside it) takes "
            "longer fails alone, reported as failed, so a pathological file cannot hang a run. "
            "Files parsed in the runner's own process (`--workers 0`, and a local run's first "
            "files while its parser processes start) are not timed: nothing can stop a parser "
            "there.",
        )

    parameters: Parameters

    @abstractmethod
    def start(
        self, plans: Sequence[IndexingComponents], workers: int | None
    ) -> StartedExecutor | None:
        """Workers for the parsers, chunkers and models of ``plans``; ``None`` parses in this process.

        ``workers`` is the runner's ``--workers`` (``None``: the executor's own choice).
        """
