"""The embedding model interface: batched, concurrent, order-preserving."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
import weakref
from abc import abstractmethod
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import InitVar, dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from .._component import Component, ComponentParameters
from .._errors import EmbeddingError, UnsupportedInputError
from .._foreign import converted
from ..message import DataBlock, TextBlock
from ..message._blocks import _new_id, _now
from ._cache import EmbeddingCacheBase
from ._card import EmbeddingModelCard

EmbeddingInput = str | TextBlock | DataBlock
logger = logging.getLogger("ragflow_config.embedding")


class _ReadByKey:
    """AgentScope's usage and response are dicts as well as objects: ``response["embeddings"]``
    reads a field here as there."""

    def __getitem__(self, key: str) -> Any:
        if key not in {f.name for f in fields(self)}:  # type: ignore[arg-type]  # mixed into dataclasses only
            raise KeyError(key)
        return getattr(self, key)


@dataclass
class EmbeddingUsage(_ReadByKey):
    """What a call cost: seconds at the model, and tokens when the service reports them.

    ``time`` is, as in AgentScope, the longest time one of the call's batches
    took (a batch's own ``usage.time`` when its ``_call_api`` reports one, else
    measured around it): batches run side by side, so it is not their sum.
    Vectors from the cache cost none.
    """

    time: float
    tokens: int | None = None
    type: Literal["embedding"] = "embedding"


@dataclass
class EmbeddingResponse(_ReadByKey):
    """The vectors for a call's inputs, in input order, with AgentScope's fields.

    ``source`` is ``"cache"`` when every vector came from the model's
    ``embedding_cache``, else ``"api"``; ``cache_hits`` and ``cache_misses`` count
    the inputs found in it and not (both 0 without a cache).
    """

    embeddings: list[list[float]]
    id: str = field(default_factory=_new_id)
    created_at: str = field(default_factory=_now)
    type: Literal["embedding"] = "embedding"
    usage: EmbeddingUsage | None = None
    source: Literal["cache", "api"] = "api"
    # Taken by the constructor, then plain attributes, not fields: AgentScope's tests
    # compare ``asdict(response)`` with its fields alone. Type checkers see fields.
    if TYPE_CHECKING:
        cache_hits: int = 0
        cache_misses: int = 0
    else:
        cache_hits: InitVar[int] = 0
        cache_misses: InitVar[int] = 0

        def __post_init__(self, cache_hits: int, cache_misses: int) -> None:
            self.cache_hits, self.cache_misses = cache_hits, cache_misses


class EmbeddingParameters(ComponentParameters):
    """Options every embedding model has."""

    batch_size: int = Field(default=32, ge=1, description="Inputs per model call.")
    max_concurrency: int = Field(default=4, ge=1, description="Batches in flight at once.")
    price_per_million_tokens: float | None = Field(
        default=None,
        ge=0,
        description="What a million input tokens cost, in the currency you count in: "
        "`plan --format markdown` estimates a run's cost from it. No price is built in.",
    )

    #: Settings that change how vectors are made (batching, threads, timeouts)
    #: or what they cost, never what they are. An embedding cache's key holds every
    #: other setting: a setting left out wrongly would serve one configuration's
    #: vectors to another.
    vector_neutral: ClassVar[frozenset[str]] = frozenset(
        {"batch_size", "max_concurrency", "price_per_million_tokens"}
    )

    def vector_settings(self) -> dict[str, Any]:
        """The settings that shape the vectors: all but ``vector_neutral`` ones."""
        return {
            name: value
            for name, value in self.fingerprint_settings().items()
            if name not in self.vector_neutral
        }

    def vector_settings_changed(self) -> dict[str, Any]:
        """The vector-shaping settings given a value other than their default.

        What a run's fingerprint adds to the model's name and dimensions: at
        their defaults these settings add nothing, so a knowledge base built
        before they were counted keeps its fingerprint. ``base_url`` is left
        out: moving a model to another server must not re-index (an embedding
        cache, which may outlive a pipeline, keys it in).
        """
        fields = type(self).model_fields
        return {
            name: value
            for name, value in self.vector_settings().items()
            if name not in {"model", "dimensions", "base_url"}
            and value != fields[name].get_default(call_default_factory=True)
        }


class EmbeddingModelBase(Component):
    """Turns texts (and, for multimodal models, data blocks) into vectors.

    Subclasses implement :meth:`embed_batch` for one batch and declare
    ``model`` and ``dimensions``. Calling the model splits the inputs into
    batches of ``batch_size`` and runs up to ``max_concurrency`` at once.
    A service that reports the tokens a batch cost overrides :meth:`_call_api`.
    """

    #: Whether ``DataBlock``s are embedded too; a provider whose models differ sets it per instance.
    supports_multimodal: bool = False
    #: True when the model computes in Python on the caller's thread (no I/O, no
    #: threads of its own), so one process can run only one batch at a time: a
    #: runner with parser processes then embeds there, beside the parsing.
    cpu_bound: ClassVar[bool] = False
    #: The provider's models, for :meth:`list_models`; none for a model of no provider.
    model_cards: ClassVar[tuple[EmbeddingModelCard, ...]] = ()
    Parameters: ClassVar[type[ComponentParameters]] = EmbeddingParameters
    parameters: EmbeddingParameters

    def __init__(
        self,
        parameters: ComponentParameters | None = None,
        *,
        embedding_cache: EmbeddingCacheBase | None = None,
        **options: Any,
    ) -> None:
        super().__init__(parameters, **options)
        self.embedding_cache = embedding_cache
        self._batchers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Batcher] = (
            weakref.WeakKeyDictionary()
        )

    def __getstate__(self) -> dict[str, Any]:
        # Batchers belong to this process's event loops; a copy sent to another process starts afresh.
        state = dict(self.__dict__)
        state["_batchers"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._batchers = weakref.WeakKeyDictionary()

    @property
    @abstractmethod
    def model(self) -> str:
        """The model's name, as recorded in a collection's fingerprint."""

    @property
    @abstractmethod
    def dimensions(self) -> int:
        """Length of every vector this model returns."""

    @property
    def batch_size(self) -> int:
        return self.parameters.batch_size

    @batch_size.setter
    def batch_size(self, size: int) -> None:
        """AgentScope's models take ``model.batch_size = n``; validated as the parameter is."""
        self.parameters = self.parameters.model_validate(
            self.parameters.model_dump() | {"batch_size": size}
        )

    @classmethod
    def list_models(cls) -> list[EmbeddingModelCard]:
        """The models of this provider that this class can call (AgentScope's method)."""
        return [card.model_copy(deep=True) for card in cls.model_cards]

    @classmethod
    def multimodal_for(cls, parameters: ComponentParameters) -> bool:
        """Whether a model of ``parameters`` embeds ``DataBlock``s: known without building
        it, so without its credentials (`validate` advises on it)."""
        return cls.supports_multimodal

    def can_embed(self, item: EmbeddingInput) -> bool:
        """Whether this model takes ``item``: text always, a ``DataBlock`` only if multimodal."""
        return self.supports_multimodal or not isinstance(item, DataBlock)

    def count_truncated(self, texts: Sequence[str]) -> int | None:
        """How many of ``texts`` are longer than the model reads of one text, so that
        their ends are not embedded; ``None`` when the model cannot tell (a service's
        window and tokenizer are its own)."""
        return None

    def batch_accepts(self, batch: list[str | DataBlock], item: str | DataBlock) -> bool:
        """Whether ``item`` may join ``batch`` in one request: up to ``batch_size`` inputs;
        a model whose service limits a request by content says so here."""
        return len(batch) < self.batch_size

    @abstractmethod
    async def embed_batch(self, batch: list[str | DataBlock]) -> list[list[float]]:
        """Embed one batch; return one vector per input, in order."""

    async def _call_api(self, inputs: list[str | DataBlock]) -> EmbeddingResponse:
        """One batch as a response: its vectors and, when the service reports them, its tokens.

        AgentScope's per-batch method, under its name, so that code written
        for AgentScope's models (its tests patch it) drives these batches.
        """
        return EmbeddingResponse(embeddings=await self.embed_batch(inputs))

    async def __call__(self, inputs: Sequence[EmbeddingInput]) -> EmbeddingResponse:
        # AgentScope's blocks (its KnowledgeBase calls this with them) convert losslessly.
        blocks = [converted(item, TextBlock, DataBlock) for item in inputs]
        items = [item.text if isinstance(item, TextBlock) else item for item in blocks]
        if not items:  # nothing sent: no time, no tokens (AgentScope reports the same)
            return EmbeddingResponse(embeddings=[], usage=EmbeddingUsage(time=0, tokens=0))
        if not all(map(self.can_embed, items)):
            raise UnsupportedInputError(f"{type(self).__name__} embeds text only; got a DataBlock")
        loop = asyncio.get_running_loop()
        batcher = self._batchers.get(loop)
        if batcher is None:  # one per event loop: a model may outlive an asyncio.run()
            batcher = self._batchers[loop] = _Batcher(self)
        if self.embedding_cache is None:
            embeddings, usage = await batcher.embed(items)
            return EmbeddingResponse(embeddings=embeddings, usage=usage)
        embeddings, usage, missed = await self._through_cache(self.embedding_cache, batcher, items)
        return EmbeddingResponse(
            embeddings=embeddings,
            source="api" if missed else "cache",
            usage=usage,
            cache_hits=len(items) - missed,
            cache_misses=missed,
        )

    def cache_identifier(self, item: str | DataBlock) -> dict[str, Any]:
        """What a cache keeps one input's vector under: the input and what shapes its vector."""
        content: Any = item
        if isinstance(item, DataBlock):
            content = item.model_dump(mode="json", include={"type", "source", "name"})
        return {
            "input": content,
            "model": self.model,
            "dimensions": self.dimensions,
            "class": f"{type(self).__module__}.{type(self).__qualname__}",
            "settings": self.parameters.vector_settings(),
        }

    async def _through_cache(
        self, cache: EmbeddingCacheBase, batcher: _Batcher, items: list[str | DataBlock]
    ) -> tuple[list[list[float]], EmbeddingUsage, int]:
        """Cached vectors, the rest from the model (then cached), what the model's
        share cost (nothing when there was none), and how many were not cached."""
        keys = [self.cache_identifier(item) for item in items]
        try:
            found = await cache.retrieve_many(keys)
        except OSError as exc:
            _warn_of_an_unusable_cache(exc)
            found = [None] * len(keys)
        vectors: list[list[float] | None] = [
            hit[0] if hit and len(hit) == 1 and len(hit[0]) == self.dimensions else None
            for hit in found
        ]
        missing = [index for index, vector in enumerate(vectors) if vector is None]
        usage = EmbeddingUsage(time=0, tokens=0)
        if missing:
            fresh, usage = await batcher.embed([items[index] for index in missing])
            for index, vector in zip(missing, fresh, strict=True):
                vectors[index] = vector
            try:
                await cache.store_many(
                    [([vector], keys[i]) for i, vector in zip(missing, fresh, strict=True)]
                )
            except OSError as exc:
                _warn_of_an_unusable_cache(exc)
        return [vector for vector in vectors if vector is not None], usage, len(missing)


def check_vectors(
    vectors: list[list[float]], expected: int, dimensions: int, *, service: str, model: str
) -> None:
    """Refuse a service's answer that is not one vector of ``dimensions`` per input sent."""
    if len(vectors) != expected:
        raise EmbeddingError(
            f"{service}: sent {expected} texts but the response holds {len(vectors)} vectors"
        )
    for vector in vectors:
        if len(vector) != dimensions:
            raise EmbeddingError(
                f"{service}: model {model!r} returned a vector of {len(vector)} dimensions, "
                f"but dimensions is {dimensions}"
            )


def _warn_of_an_unusable_cache(error: OSError) -> None:
    """A cache the disk refuses (full, read-only, gone) costs its hits, not the call:
    the vectors come from the model instead. Said once, not once per call."""
    global _warned_of_an_unusable_cache
    if not _warned_of_an_unusable_cache:
        _warned_of_an_unusable_cache = True
        logger.warning("embedding cache unusable, embedding without it: %s", error)


_warned_of_an_unusable_cache = False


@dataclass(eq=False)
class _BatchCost:
    """What one batch cost (its seconds, and tokens if the service reported them),
    and how many inputs shared it."""

    size: int
    time: float
    tokens: int | None


_Waiting = tuple[str | DataBlock, asyncio.Future[tuple[list[float], _BatchCost]]]


class _Batcher:
    """Shares a model's batches between concurrent calls, within ``max_concurrency``.

    Inputs queue up; each free slot takes the next ``batch_size`` of them,
    whichever calls they came from. Many small documents indexed at once
    therefore fill whole batches, and the model never runs more batches at
    once than it allows. A batch that fails fails the inputs in it, and the
    call that sees the failure withdraws its inputs still waiting.
    """

    def __init__(self, model: EmbeddingModelBase) -> None:
        self._model = model
        self._waiting: deque[_Waiting] = deque()
        self._running = 0
        self._tasks: set[asyncio.Task[None]] = set()

    async def embed(self, items: list[str | DataBlock]) -> tuple[list[list[float]], EmbeddingUsage]:
        """The items' vectors, and what they cost: the longest of their batches' times,
        and the tokens when the service reported them.

        Tokens are known only when every batch the items went in held none
        but them: the service reports a batch's tokens, not each input's.
        """
        loop = asyncio.get_running_loop()
        futures: list[asyncio.Future[tuple[list[float], _BatchCost]]] = [
            loop.create_future() for _ in items
        ]
        self._waiting.extend(zip(items, futures, strict=True))
        self._start_batches()
        try:
            results = await asyncio.gather(*futures)
        except BaseException:
            for future in futures:
                future.cancel()
            raise
        batches = Counter(batch for _, batch in results)
        known = [
            batch.tokens
            for batch, mine in batches.items()
            if mine == batch.size and batch.tokens is not None
        ]
        tokens = sum(known) if len(known) == len(batches) else None
        usage = EmbeddingUsage(time=max(batch.time for batch in batches), tokens=tokens)
        return [vector for vector, _ in results], usage

    def _start_batches(self) -> None:
        limit = self._model.parameters.max_concurrency
        while self._running < limit and self._waiting:
            batch: list[_Waiting] = []
            items: list[str | DataBlock] = []  # the batch's inputs, for batch_accepts
            while self._waiting:
                item, future = self._waiting[0]
                if future.done():  # its call gave up
                    self._waiting.popleft()
                    continue
                # A first input always goes, whatever the model's limits say of it alone.
                if items and not self._model.batch_accepts(items, item):
                    break
                batch.append(self._waiting.popleft())
                items.append(item)
            if batch:
                self._running += 1
                task = asyncio.ensure_future(self._run(batch))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _run(self, batch: list[_Waiting]) -> None:
        try:
            started = time.perf_counter()
            response = await self._model._call_api([item for item, _ in batch])
            vectors = response.embeddings
            usage = response.usage or EmbeddingUsage(time=time.perf_counter() - started)
            cost = _BatchCost(len(batch), usage.time, usage.tokens)
            if len(vectors) != len(batch):
                raise RuntimeError(
                    f"{type(self._model).__name__} returned {len(vectors)} vectors "
                    f"for {len(batch)} inputs"
                )
        except BaseException as exc:
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
        else:
            for (_, future), vector in zip(batch, vectors, strict=True):
                if not future.done():
                    future.set_result((vector, cost))
        finally:
            self._running -= 1
            self._start_batches()


def vectors_digest(model: EmbeddingModelBase) -> str:
    """A short digest of what makes ``model``'s vectors: its kind, name, dimensions and
    the vector-shaping settings given other than their default.

    Vectors of equal digests are comparable: a query embedded by one model can
    be searched among another's. A plugin's model may have parameters of its
    own kind, which only its name and dimensions describe.
    """
    described: list[Any] = [type(model).__name__, model.model, model.dimensions]
    parameters = model.parameters
    if isinstance(parameters, EmbeddingParameters) and (
        shaping := parameters.vector_settings_changed()
    ):
        described.append(shaping)
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()[:16]
