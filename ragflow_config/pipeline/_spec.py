"""The shape of a pipeline file, as Pydantic models.

These models are the typed form the builder and runner use; the JSON Schema
users validate against is generated from them, with each component block
expanded into the registered types (see ``_schema``).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..rag import RetrievalSettings
from ..sources import SourceSpec
from ._registry import Kind

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ComponentBlock(_Strict):
    """A component: a registered ``type`` and that type's ``parameters``."""

    kind: ClassVar[Kind]
    type: str = Field(description="A registered type name.")
    parameters: dict[str, Any] = Field(default_factory=dict)


class ParserBlock(ComponentBlock):
    """A parser; files are routed to the first parser that supports their media type."""

    kind: ClassVar[Kind] = "parser"


class ChunkerBlock(ComponentBlock):
    """A chunker and its parameters."""

    kind: ClassVar[Kind] = "chunker"


class EmbeddingBlock(ComponentBlock):
    """An embedding model."""

    kind: ClassVar[Kind] = "embedding"


class VectorStoreBlock(ComponentBlock):
    """A vector store."""

    kind: ClassVar[Kind] = "vector_store"


class ChatModelBlock(ComponentBlock):
    """A chat model (used to rerank retrieval results)."""

    kind: ClassVar[Kind] = "chat_model"


class RerankerBlock(ComponentBlock):
    """A reranker, named by a knowledge base's `retrieval.rerank`."""

    kind: ClassVar[Kind] = "reranker"


class ExecutionBlock(ComponentBlock):
    """Where a run parses its files: `local` processes (the default) or a `ray` cluster."""

    kind: ClassVar[Kind] = "executor"


class EvaluationThresholds(_Strict):
    """Minimum values; a run of `ragflow-config eval` fails when one is missed."""

    recall: float | None = Field(default=None, ge=0, le=1, description="Minimum recall@k.")
    precision: float | None = Field(default=None, ge=0, le=1, description="Minimum precision@k.")
    mrr: float | None = Field(default=None, ge=0, le=1, description="Minimum mean reciprocal rank.")
    map: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Minimum mean average precision over the top k (trec_eval's map_cut_k).",
    )
    map_uncut: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description=(
            "Minimum mean average precision over the whole ranking, its first 1,000 sources "
            "(trec_eval's map)."
        ),
    )
    ndcg: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Minimum nDCG@k with linear gain (the grade), as trec_eval's ndcg_cut_k.",
    )
    ndcg_exp: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Minimum nDCG@k with exponential gain (2^grade - 1).",
    )
    hit_rate: float | None = Field(default=None, ge=0, le=1, description="Minimum hit rate@k.")


class EvaluationSpec(_Strict):
    """A judged query set and the quality this knowledge base must keep."""

    queries: str = Field(
        description="Query set file (YAML, JSONL or TREC qrels), relative to the pipeline file."
    )
    topics: str | None = Field(
        default=None, description="For TREC qrels: the file of query texts (`<id> <text>` lines)."
    )
    k: int = Field(default=5, ge=1, le=100, description="Cut-off rank of @k metrics.")
    thresholds: EvaluationThresholds = Field(default_factory=EvaluationThresholds)


class KnowledgeBaseSpec(_Strict):
    """A knowledge base: where its files come from and how they are indexed."""

    name: str = Field(pattern=NAME_PATTERN, description="Unique name; agents see it.")
    description: str = Field(default="", description="What it holds; agents see it.")
    sources: list[SourceSpec] = Field(
        default_factory=list, description="Where the files come from: folders, object stores."
    )
    parsers: list[ParserBlock] = Field(
        default_factory=lambda: [ParserBlock(type="text")],
        min_length=1,
        description="Parsers, tried in order; the first that supports a file's media type wins.",
    )
    chunker: ChunkerBlock = Field(
        default_factory=lambda: ChunkerBlock(type="approx_token"),
        description="How sections are cut into chunks.",
    )
    embedding: str | EmbeddingBlock = Field(
        description="The name of an entry of `embeddings`, or an inline embedding block."
    )
    vector_store: str | VectorStoreBlock = Field(
        description="The name of an entry of `vector_stores`, or an inline store block."
    )
    collection: str = Field(min_length=1, description="The store's collection (index, table).")
    metadata_filter: dict[str, Any] | None = Field(
        default=None,
        description="Scope: every chunk gets these metadata values, and every search, "
        "listing and deletion is restricted to them.",
    )
    owner: str | None = Field(
        default=None,
        min_length=1,
        description="The writer identity each record of this knowledge base carries: a run "
        "deletes, updates or repairs only its own writer's documents, and reports another's "
        "in its collection and scope as foreign. Default: the pipeline file's name and the "
        "knowledge base's (`team-a.yaml#docs`); set it to keep the identity when the file "
        "is renamed.",
    )
    on_error: Literal["fail", "skip"] = Field(
        default="skip",
        description="A file that fails to parse: stop the run (`fail`) or report it and go on.",
    )
    prune: bool = Field(
        default=False,
        description="Delete documents whose source file is gone (within metadata_filter's scope).",
    )
    max_file_bytes: int = Field(
        default=64 << 20,
        ge=1,
        description="Files larger than this many bytes are skipped, reported as unsupported with "
        "their size: one huge file (a log, a dump) must not hold up or exhaust a CI run. "
        "Default 64 MiB.",
    )
    max_delete_fraction: float = Field(
        default=0.2,
        ge=0,
        le=1,
        description="A run or plan that would delete more than this share of the documents "
        "refuses unless forced: an empty checkout must not wipe an index.",
    )
    max_failed_fraction: float = Field(
        default=0,
        ge=0,
        le=1,
        description="A rebuild beside the live collection switches although files failed "
        "when the live collection holds none of them (they failed there too, or are new), or "
        "when they are at most this share of its files: those the live collection holds are "
        "then dropped. Default 0: a failed file the live collection holds keeps it live.",
    )
    keep_previous: int = Field(
        default=1,
        ge=0,
        le=10,
        description="Collections kept after a rebuild beside the live one switches, for "
        "`rollback`: each holds a whole copy of the knowledge base. Older ones are deleted.",
    )
    evaluation: EvaluationSpec | None = Field(default=None, description="Retrieval quality gate.")
    retrieval: RetrievalSettings = Field(
        default_factory=RetrievalSettings,
        description="How search ranks: `dense` (default), `lexical` (BM25) or `hybrid` (both, "
        "fused); the analyzer and BM25 settings are part of the fingerprint.",
    )


class MiddlewareSpec(_Strict):
    """A middleware for agents, built on named knowledge bases."""

    type: str = Field(description="A registered middleware type.")
    knowledge_bases: list[str] = Field(min_length=1, description="Names of knowledge bases.")
    rerank_model: str | ChatModelBlock | None = Field(
        default=None, description="A chat model name from `chat_models`, or an inline block."
    )
    parameters: dict[str, Any] = Field(default_factory=dict)


class EmbeddingCacheSpec(_Strict):
    """Vectors kept on disk by model and exact text, for every knowledge base, run and process."""

    path: str = Field(
        default=".cache/embeddings",
        min_length=1,
        description="The cache's folder, relative to the pipeline file's folder (created on "
        "first use). Every process of a run uses it, the parser processes and Ray's tasks "
        "too: on a Ray cluster of several nodes, make it a path every node shares.",
    )
    max_entries: int | None = Field(
        default=None,
        ge=1,
        description="Vectors kept at most; the least recently used go first. Default: no limit.",
    )
    max_bytes: int | None = Field(
        default=None,
        ge=1,
        description="Bytes of entry files kept at most (a 384-dimensional vector's file holds "
        "3,216); the least recently used go first. Default: no limit.",
    )


class PipelineSpec(_Strict):
    """A ragflow-config pipeline file."""

    version: Literal[1] = Field(description="The file format version.")
    vector_stores: dict[str, VectorStoreBlock] = Field(
        default_factory=dict,
        description="Named vector stores; knowledge bases naming one share it.",
    )
    embeddings: dict[str, EmbeddingBlock] = Field(
        default_factory=dict, description="Named embedding models."
    )
    chat_models: dict[str, ChatModelBlock] = Field(
        default_factory=dict, description="Named chat models, for reranking."
    )
    rerankers: dict[str, RerankerBlock] = Field(
        default_factory=dict,
        description="Named rerankers; a knowledge base's `retrieval.rerank` names one.",
    )
    knowledge_bases: list[KnowledgeBaseSpec] = Field(min_length=1)
    middlewares: list[MiddlewareSpec] = Field(default_factory=list)
    execution: ExecutionBlock = Field(
        default_factory=lambda: ExecutionBlock(type="local"),
        description="Where `run` parses, chunks (and embeds with a `cpu_bound` model) the "
        "files; the runner still decides, writes and prunes. `run --executor` overrides it.",
    )
    embedding_cache: EmbeddingCacheSpec | None = Field(
        default=None,
        description="Keep the vectors `run` makes, by the model (its name, dimensions and "
        "every setting that shapes vectors) and the exact text, so a text any knowledge base "
        "embedded before, in any document or run (after a `reset` too), is not embedded "
        "again. A changed model never finds another's vectors; the cache is not part of the "
        "fingerprint. Off unless set (`embedding_cache: {}` keeps `.cache/embeddings`).",
    )


# Component block models, by the name pydantic gives them in the schema's $defs, with their kind.
COMPONENT_BLOCKS: dict[str, Kind] = {
    cls.__name__: cls.kind
    for cls in (
        ParserBlock,
        ChunkerBlock,
        EmbeddingBlock,
        VectorStoreBlock,
        ChatModelBlock,
        RerankerBlock,
        ExecutionBlock,
    )
}
COMPONENT_BLOCKS[SourceSpec.__name__] = "source"
