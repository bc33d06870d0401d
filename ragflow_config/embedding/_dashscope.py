"""DashScope (Alibaba Cloud Model Studio) embeddings, text and multimodal, through the
``dashscope`` SDK as AgentScope's model calls them."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field, SecretStr, field_validator

from .._component import ComponentParameters
from .._errors import EmbeddingError, UnsupportedInputError
from .._http import (
    KeyedEndpoint,
    Transient,
    excerpt,
    is_transient,
    redact,
    with_retries,
)
from ..credential import DashScopeCredential
from ..message import Base64Source, DataBlock, URLSource
from ._base import (
    EmbeddingResponse,
    EmbeddingUsage,
    check_vectors,
)
from ._card import EmbeddingModelCard
from ._remote import RemoteEmbeddingModel, RemoteParameters

if TYPE_CHECKING:
    from dashscope.api_entities.dashscope_response import DashScopeAPIResponse

DASHSCOPE_URL = "https://dashscope.aliyuncs.com/api/v1"
# What configs written for the OpenAI-compatible mode end in; its native root is beside it.
_COMPATIBLE_SUFFIX = "/compatible-mode/v1"
# Model names that the multimodal API serves (AgentScope's routing rule).
_MULTIMODAL_PREFIXES = (
    "multimodal-embedding-",
    "tongyi-embedding-vision-",
    "qwen3-vl-embedding",
    "qwen2.5-vl-embedding",
)


# The image types the newer multimodal models list, in AgentScope's order.
_IMAGES = ["image/jpeg", "image/png", "image/webp", "image/bmp", "image/tiff"]


@dataclass(frozen=True)
class _Limits:
    """What one multimodal request may hold, per DashScope's documentation."""

    elements: int = 20
    images: int = 1
    videos: int = 1


# NOTICE: the limits are AgentScope 2.0.11's, from agentscope/embedding/_dashscope/_model.py
# (https://github.com/agentscope-ai/agentscope, Apache License 2.0).
_LIMITS = {
    "qwen3-vl-embedding": _Limits(images=5),
    "qwen2.5-vl-embedding": _Limits(images=5),
    "tongyi-embedding-vision-plus": _Limits(images=64, videos=8),
    "tongyi-embedding-vision-flash": _Limits(images=64, videos=8),
    "multimodal-embedding-v1": _Limits(),
}


class DashScopeEmbeddingModel(RemoteEmbeddingModel):
    """DashScope's embedding models: text (``text-embedding-v4``) and multimodal
    (``qwen3-vl-embedding``, ``tongyi-embedding-vision-*``, ...), by model name.

    A multimodal model also embeds image ``DataBlock``s (base64 or URL) and
    video ones (URL only), in requests that keep to the model's limits on
    elements, images and videos. The API key is ``credential``, or else read
    from ``api_key_env`` (``DASHSCOPE_API_KEY``) when the model is built: a
    missing key raises :class:`~ragflow_config.credential.MissingSecretError`
    naming the variable, before any document is read. Outside mainland China,
    point ``base_url`` at ``https://dashscope-intl.aliyuncs.com/api/v1``.
    """

    class Parameters(RemoteParameters):
        base_url: str = Field(
            default=DASHSCOPE_URL,
            pattern=r"^https?://",
            description="The API root; a compatible-mode URL (.../compatible-mode/v1) is read "
            "as the root beside it (.../api/v1).",
        )
        api_key_env: str = Field(
            default="DASHSCOPE_API_KEY",
            description="Environment variable holding the DashScope API key.",
        )
        send_dimensions: bool = Field(
            default=True, description="Send `dimensions` in the request (`dimension`)."
        )
        batch_size: int = Field(
            default=10,
            ge=1,
            description="Texts per request (DashScope's text models take 10); a multimodal "
            "request holds at most the model's own limits.",
        )

        @field_validator("base_url")
        @classmethod
        def _native_root(cls, value: str) -> str:
            value = value.rstrip("/")
            if value.endswith(_COMPATIBLE_SUFFIX):
                return value.removesuffix(_COMPATIBLE_SUFFIX) + "/api/v1"
            return value

    parameters: Parameters
    requires: ClassVar[dict[str, str]] = {"dashscope": "dashscope"}
    # NOTICE: the cards' facts (names, labels, dimensions, context sizes, input types) are
    # AgentScope 2.0.11's, from agentscope/embedding/_dashscope/_models/*.yaml
    # (https://github.com/agentscope-ai/agentscope, Apache License 2.0).
    model_cards: ClassVar[tuple[EmbeddingModelCard, ...]] = (
        EmbeddingModelCard(
            name="text-embedding-v3",
            label="Text Embedding v3",
            dimensions=1024,
            supported_dimensions=[1024, 768, 512, 256, 128, 64],
            context_size=8192,
        ),
        EmbeddingModelCard(
            name="text-embedding-v4",
            label="Text Embedding v4",
            dimensions=1024,
            supported_dimensions=[2048, 1536, 1024, 768, 512, 256, 128, 64],
            context_size=8192,
        ),
        EmbeddingModelCard(
            name="multimodal-embedding-v1",
            label="Multimodal Embedding v1",
            input_types=["text/plain", "image/jpeg", "image/png", "image/bmp"],
            dimensions=1024,
            context_size=512,
        ),
        EmbeddingModelCard(
            name="qwen2.5-vl-embedding",
            label="Qwen2.5 VL Embedding",
            input_types=["text/plain", *_IMAGES, "video/mp4"],
            dimensions=1024,
            supported_dimensions=[2048, 1024, 768, 512],
            context_size=32000,
        ),
        EmbeddingModelCard(
            name="qwen3-vl-embedding",
            label="Qwen3 VL Embedding",
            input_types=["text/plain", *_IMAGES, "video/mp4"],
            dimensions=2560,
            supported_dimensions=[2560, 2048, 1536, 1024, 768, 512, 256],
            context_size=32000,
        ),
        EmbeddingModelCard(
            name="tongyi-embedding-vision-flash",
            label="Tongyi Embedding Vision Flash",
            input_types=["text/plain", *_IMAGES, "video/mp4", "video/mpeg"],
            dimensions=768,
            supported_dimensions=[768, 512, 256, 128, 64],
            context_size=1024,
        ),
        EmbeddingModelCard(
            name="tongyi-embedding-vision-plus",
            label="Tongyi Embedding Vision Plus",
            input_types=["text/plain", *_IMAGES, "video/mp4", "video/mpeg"],
            dimensions=1152,
            supported_dimensions=[1152, 1024, 512, 256, 128, 64],
            context_size=1024,
        ),
    )

    _endpoint: _DashScopeEndpoint

    def __init__(
        self,
        parameters: Parameters | None = None,
        *,
        credential: DashScopeCredential | None = None,
        **options: Any,
    ) -> None:
        super().__init__(parameters, **options)
        p = self.parameters
        self._endpoint = _DashScopeEndpoint.for_model(
            p, credential, DashScopeCredential, "DashScope embeddings"
        )
        self.supports_multimodal = self.multimodal_for(p)
        self._limits = _LIMITS.get(p.model, _Limits())

    @classmethod
    def multimodal_for(cls, parameters: ComponentParameters) -> bool:
        assert isinstance(parameters, cls.Parameters)
        return parameters.model.startswith(_MULTIMODAL_PREFIXES)

    def batch_accepts(self, batch: list[str | DataBlock], item: str | DataBlock) -> bool:
        if not self.supports_multimodal:
            return super().batch_accepts(batch, item)
        kinds = [_kind(element) for element in [*batch, item]]
        return (
            len(kinds) <= self._limits.elements
            and kinds.count("image") <= self._limits.images
            and kinds.count("video") <= self._limits.videos
        )

    async def _call_api(self, inputs: list[str | DataBlock]) -> EmbeddingResponse:
        if self.supports_multimodal:
            return await self._call_multimodal(inputs)
        return await self._call_text(inputs)

    async def _call_text(self, inputs: list[str | DataBlock]) -> EmbeddingResponse:
        texts = self._texts(inputs)
        import dashscope

        return await self._request(
            lambda **call: dashscope.TextEmbedding.call(input=texts, **call),
            expected=len(texts),
            index_key="text_index",
        )

    async def _call_multimodal(self, inputs: list[str | DataBlock]) -> EmbeddingResponse:
        contents = [{"text": item} if isinstance(item, str) else _content(item) for item in inputs]
        import dashscope

        return await self._request(
            lambda **call: dashscope.MultiModalEmbedding.call(input=contents, **call),
            expected=len(contents),
            index_key="index",
        )

    async def _request(self, send: Any, *, expected: int, index_key: str) -> EmbeddingResponse:
        p = self.parameters
        call: dict[str, Any] = {
            "model": p.model,
            "api_key": self._endpoint.api_key,
            "base_address": self._endpoint.base_url,
            "request_timeout": p.timeout,
        }
        if p.send_dimensions:
            call["dimension"] = p.dimensions
        started = time.perf_counter()
        response = await self._endpoint.call(
            lambda: send(**call), max_retries=p.max_retries, retry_delay=p.retry_delay
        )
        vectors = self._vectors(response, expected, index_key)
        return EmbeddingResponse(
            embeddings=vectors,
            usage=EmbeddingUsage(time=time.perf_counter() - started, tokens=_tokens(response)),
        )

    def _vectors(self, response: Any, expected: int, index_key: str) -> list[list[float]]:
        """The vectors in input order (by the index DashScope returns, else as listed)."""
        output = response.output if isinstance(response.output, dict) else {}
        items = output.get("embeddings")
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise EmbeddingError(f"{self.service}: unexpected response: no list of embeddings")
        places = [
            item.get(index_key) if isinstance(item.get(index_key), int) else position
            for position, item in enumerate(items)
        ]
        if sorted(places) != list(range(len(items))):
            raise EmbeddingError(
                f"{self.service}: the response's vectors have indexes {sorted(places)[:20]}"
            )
        ordered = sorted(enumerate(items), key=lambda pair: places[pair[0]])
        vectors = []
        for position, item in ordered:
            vector = item.get("embedding")
            if not isinstance(vector, list) or not all(isinstance(x, int | float) for x in vector):
                raise EmbeddingError(
                    f"{self.service}: unexpected response: embeddings.{position}.embedding "
                    "is not a list of numbers"
                )
            vectors.append(vector)
        check_vectors(vectors, expected, self.dimensions, service=self.service, model=self.model)
        return vectors

    @staticmethod
    def _format_data_block(block: DataBlock) -> dict[str, str]:
        """A data block as the multimodal API takes it (AgentScope's name for this step)."""
        return _content(block)


def _kind(item: str | DataBlock) -> str:
    if isinstance(item, str):
        return "text"
    media_type = item.source.media_type
    return "image" if media_type.startswith("image/") else "video"


def _content(block: DataBlock) -> dict[str, str]:
    """``{"image": data URI or URL}`` or ``{"video": URL}``; anything else is refused."""
    source = block.source
    media_type = source.media_type
    if media_type.startswith("image/"):
        if isinstance(source, Base64Source):
            return {"image": f"data:{media_type};base64,{source.data}"}
        if isinstance(source, URLSource):
            return {"image": str(source.url)}
    if media_type.startswith("video/"):
        if isinstance(source, URLSource):
            return {"video": str(source.url)}
        raise UnsupportedInputError(
            f"DashScope embeds a video from a URL only, not from {type(source).__name__}"
        )
    raise UnsupportedInputError(
        f"DashScope embeds text, image/* and video/* data; got {media_type!r}"
    )


def _tokens(response: Any) -> int | None:
    """Tokens DashScope counted: ``total_tokens`` for text, input plus image tokens otherwise."""
    usage = response.usage if isinstance(response.usage, dict) else {}
    if isinstance(usage.get("total_tokens"), int):
        return int(usage["total_tokens"])
    counted = [usage.get(key) for key in ("input_tokens", "image_tokens")]
    if any(isinstance(value, int) for value in counted):
        return sum(value for value in counted if isinstance(value, int))
    return None


class _DashScopeEndpoint(KeyedEndpoint):
    """DashScope's native API through its SDK: synchronous calls run in a thread, retried
    while the failure is transient, every failure worded with the service."""

    @property
    def api_key(self) -> str:
        # for_model refuses to build without one: DashScopeCredential requires its key.
        return (self._api_key or SecretStr("")).get_secret_value()

    async def call(
        self, send: Any, *, max_retries: int, retry_delay: float
    ) -> DashScopeAPIResponse:
        import requests  # the SDK's HTTP client

        async def attempt() -> DashScopeAPIResponse:
            try:
                response = await asyncio.to_thread(send)
            except requests.Timeout:
                raise Transient(f"no answer within {self._timeout:g} s (timeout)") from None
            except requests.RequestException as exc:
                raise Transient(redact(f"{type(exc).__name__}: {exc}", self.secrets)) from None
            status = int(response.status_code)
            if status == 200:
                return response
            message = excerpt({"message": response.message}, str(response.code or ""), self.secrets)
            problem = f"HTTP {status}: {response.code}: {message}"
            if not is_transient(status):
                raise EmbeddingError(f"{self.service}: {problem}")
            raise Transient(problem)

        return await with_retries(
            attempt,
            service=self.service,
            error=EmbeddingError,
            max_retries=max_retries,
            backoff=retry_delay,
        )

    async def aclose(self) -> None:
        """Nothing to close: the SDK opens a connection per request."""
