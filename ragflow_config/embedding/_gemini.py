"""Google Gemini's embedding models, text and multimodal, through the ``google-genai`` SDK's
native API as AgentScope's model calls them."""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import httpx
from pydantic import Field, SecretStr, ValidationError, field_validator

from .._component import ComponentParameters
from .._errors import EmbeddingError, UnsupportedInputError
from .._http import (
    KeyedEndpoint,
    PerLoop,
    Transient,
    excerpt,
    is_transient,
    redact,
    retry_after,
    unexpected_response,
    with_retries,
)
from ..credential import GeminiCredential
from ..message import Base64Source, DataBlock
from ._base import EmbeddingResponse, EmbeddingUsage, check_vectors
from ._card import EmbeddingModelCard
from ._remote import RemoteEmbeddingModel, RemoteParameters

if TYPE_CHECKING:
    from google.genai import types

GEMINI_URL = "https://generativelanguage.googleapis.com"
# What configs written for the OpenAI-compatible API end in; the native root is its host.
_COMPATIBLE_SUFFIX = "/v1beta/openai"
# Model names that embed more than text (AgentScope's routing rule).
_MULTIMODAL_PREFIXES = ("gemini-embedding-2",)


@dataclass(frozen=True)
class _Limits:
    """What one multimodal request may hold, per Gemini's documentation."""

    elements: int = 20
    images: int = 6
    videos: int = 1
    audios: int = 1
    pdfs: int = 1


# NOTICE: the limits are AgentScope 2.0.11's, from agentscope/embedding/_gemini/_model.py
# (https://github.com/agentscope-ai/agentscope, Apache License 2.0).
_LIMITS = _Limits()


class GeminiEmbeddingModel(RemoteEmbeddingModel):
    """Gemini's embedding models: text (``gemini-embedding-001``) and multimodal
    (``gemini-embedding-2``), by model name.

    A multimodal model also embeds base64 image, video, audio and PDF
    ``DataBlock``s, each input its own ``Content``, in requests that keep to
    Gemini's limits (20 inputs, 6 images, 1 video, 1 audio, 1 PDF). The API key
    is ``credential``, or else read from ``api_key_env`` (``GEMINI_API_KEY``)
    when the model is built; a missing key raises
    :class:`~ragflow_config.credential.MissingSecretError` naming the variable.
    """

    class Parameters(RemoteParameters):
        base_url: str = Field(
            default=GEMINI_URL,
            pattern=r"^https?://",
            description="The API root; an OpenAI-compatible URL (.../v1beta/openai) is read "
            "as the native root of the same host.",
        )
        api_key_env: str = Field(
            default="GEMINI_API_KEY", description="Environment variable holding the Gemini API key."
        )
        send_dimensions: bool = Field(
            default=True,
            description="Send `dimensions` in the request (`output_dimensionality`).",
        )
        task_type: str | None = Field(
            default=None,
            description="What the text model's vectors are for (`task_type`, e.g. "
            "RETRIEVAL_DOCUMENT); gemini-embedding-2 takes prompt prefixes instead.",
        )
        batch_size: int = Field(
            default=100,
            ge=1,
            description="Texts per request; a multimodal request holds at most Gemini's limits.",
        )

        @field_validator("base_url")
        @classmethod
        def _native_root(cls, value: str) -> str:
            return value.rstrip("/").removesuffix(_COMPATIBLE_SUFFIX)

    parameters: Parameters
    requires: ClassVar[dict[str, str]] = {"google.genai": "gemini"}
    # NOTICE: the cards' facts (names, labels, dimensions, context sizes, input types) are
    # AgentScope 2.0.11's, from agentscope/embedding/_gemini/_models/*.yaml
    # (https://github.com/agentscope-ai/agentscope, Apache License 2.0).
    model_cards: ClassVar[tuple[EmbeddingModelCard, ...]] = (
        EmbeddingModelCard(
            name="gemini-embedding-001",
            label="Gemini Embedding 001",
            dimensions=3072,
            supported_dimensions=[3072, 1536, 768, 512, 256, 128],
            context_size=2048,
        ),
        EmbeddingModelCard(
            name="gemini-embedding-2",
            label="Gemini Embedding 2",
            input_types=[
                "text/plain",
                "image/png",
                "image/jpeg",
                "video/mp4",
                "audio/mpeg",
                "audio/wav",
                "application/pdf",
            ],
            dimensions=3072,
            supported_dimensions=[3072, 1536, 768],
            context_size=8192,
        ),
    )

    _endpoint: _GeminiEndpoint

    def __init__(
        self,
        parameters: Parameters | None = None,
        *,
        credential: GeminiCredential | None = None,
        **options: Any,
    ) -> None:
        super().__init__(parameters, **options)
        self._endpoint = _GeminiEndpoint.for_model(
            self.parameters, credential, GeminiCredential, "Gemini embeddings"
        )
        self.supports_multimodal = self.multimodal_for(self.parameters)

    @classmethod
    def multimodal_for(cls, parameters: ComponentParameters) -> bool:
        assert isinstance(parameters, cls.Parameters)
        return parameters.model.startswith(_MULTIMODAL_PREFIXES)

    def batch_accepts(self, batch: list[str | DataBlock], item: str | DataBlock) -> bool:
        if not self.supports_multimodal:
            return super().batch_accepts(batch, item)
        kinds = [_kind(element) for element in [*batch, item]]
        return (
            len(kinds) <= _LIMITS.elements
            and kinds.count("image") <= _LIMITS.images
            and kinds.count("video") <= _LIMITS.videos
            and kinds.count("audio") <= _LIMITS.audios
            and kinds.count("pdf") <= _LIMITS.pdfs
        )

    async def _call_api(self, inputs: list[str | DataBlock]) -> EmbeddingResponse:
        if self.supports_multimodal:
            return await self._call_multimodal(inputs)
        return await self._call_text(inputs)

    async def _call_text(self, inputs: list[str | DataBlock]) -> EmbeddingResponse:
        texts = self._texts(inputs)
        return await self._request(texts, task_type=self.parameters.task_type)

    async def _call_multimodal(self, inputs: list[str | DataBlock]) -> EmbeddingResponse:
        from google.genai import types

        contents = [
            types.Content(
                parts=[
                    types.Part.from_text(text=item)
                    if isinstance(item, str)
                    else self._data_block_to_part(item)
                ]
            )
            for item in inputs
        ]
        return await self._request(contents, task_type=None)

    async def _request(self, contents: Any, *, task_type: str | None) -> EmbeddingResponse:
        from google.genai import types

        p = self.parameters
        config = types.EmbedContentConfig(
            output_dimensionality=p.dimensions if p.send_dimensions else None,
            task_type=task_type,
        )
        started = time.perf_counter()
        response = await self._endpoint.call(
            p.model, contents, config, max_retries=p.max_retries, retry_delay=p.retry_delay
        )
        vectors = self._vectors(response, len(contents))
        return EmbeddingResponse(
            embeddings=vectors, usage=EmbeddingUsage(time=time.perf_counter() - started)
        )

    def _vectors(self, response: types.EmbedContentResponse, expected: int) -> list[list[float]]:
        vectors = [list(item.values or []) for item in response.embeddings or []]
        check_vectors(vectors, expected, self.dimensions, service=self.service, model=self.model)
        return vectors

    @staticmethod
    def _data_block_to_part(block: DataBlock) -> types.Part:
        """A data block as Gemini's ``Part`` of inline bytes (AgentScope's name for this step);
        Gemini's embedding API takes no URL, so a URL source is refused, naming the block."""
        from google.genai import types

        source = block.source
        if not isinstance(source, Base64Source):
            raise UnsupportedInputError(
                "Gemini embeds inline (Base64Source) data only, not a URL: "
                f"got the {source.media_type} block at {source.url}"
            )
        return types.Part.from_bytes(
            data=base64.b64decode(source.data), mime_type=source.media_type
        )


def _kind(item: str | DataBlock) -> str:
    if isinstance(item, str):
        return "text"
    media_type = item.source.media_type
    if media_type == "application/pdf":
        return "pdf"
    return media_type.partition("/")[0]


class _GeminiEndpoint(KeyedEndpoint):
    """Gemini's native API through its SDK, the SDK's own retries off: every attempt goes
    through :func:`with_retries`, every failure worded with the service."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients = PerLoop(self._sdk_client, _close)

    def _sdk_client(self) -> tuple[Any, httpx.AsyncClient]:
        from google import genai
        from google.genai import types

        # Our own httpx client: else the SDK picks aiohttp when it is installed, whose
        # errors would not be known here as transient.
        transport = httpx.AsyncClient(timeout=self._timeout)
        client = genai.Client(
            # for_model refuses to build without one: GeminiCredential requires its key.
            api_key=(self._api_key or SecretStr("")).get_secret_value(),
            http_options=types.HttpOptions(
                base_url=self.base_url,
                timeout=int(self._timeout * 1000),  # milliseconds
                retry_options=types.HttpRetryOptions(attempts=1),
                httpx_async_client=transport,
            ),
        )
        return client, transport

    async def call(
        self, model: str, contents: Any, config: Any, *, max_retries: int, retry_delay: float
    ) -> types.EmbedContentResponse:
        from google.genai import errors

        client, _ = self._clients.get()

        async def attempt() -> types.EmbedContentResponse:
            try:
                response: types.EmbedContentResponse = await client.aio.models.embed_content(
                    model=model, contents=contents, config=config
                )
                return response
            except httpx.TimeoutException:
                raise Transient(f"no answer within {self._timeout:g} s (timeout)") from None
            except httpx.TransportError as exc:
                raise Transient(redact(f"{type(exc).__name__}: {exc}", self.secrets)) from None
            except ValidationError as exc:
                raise EmbeddingError(unexpected_response(self.service, exc)) from None
            except ValueError:  # the SDK's json.loads of the body
                raise EmbeddingError(f"{self.service}: a response that is not JSON") from None
            except errors.APIError as exc:
                message = excerpt(exc.details, str(exc.message or ""), self.secrets)
                problem = f"HTTP {exc.code}: {exc.status}: {message}"
                if not is_transient(exc.code):
                    raise EmbeddingError(f"{self.service}: {problem}") from None
                raise Transient(problem, _retry_after(exc)) from None

        return await with_retries(
            attempt,
            service=self.service,
            error=EmbeddingError,
            max_retries=max_retries,
            backoff=retry_delay,
        )

    async def aclose(self) -> None:
        """Close the SDK's client; a later call opens a new one."""
        await self._clients.aclose()


async def _close(clients: tuple[Any, httpx.AsyncClient]) -> None:
    sdk_client, transport = clients
    await sdk_client.aio.aclose()
    await transport.aclose()


def _retry_after(exc: Any) -> float | None:
    """The ``Retry-After`` of the answer behind an SDK error, if it had one."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    return retry_after(headers) if headers is not None else None
