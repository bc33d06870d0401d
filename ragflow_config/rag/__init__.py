"""Retrieval-augmented generation: parsers, chunkers, vector stores and the ``KnowledgeBase``.

Names mirror ``agentscope.rag``. Each is imported on first use; classes whose
libraries are optional import them on first use too, so a missing extra fails
with an error naming it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._errors import (
    CollectionMismatchError,
    ParserError,
    ParserFileNotFoundError,
    VectorStoreError,
)
from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .._document import Chunk, DocumentSummary, Section, VectorRecord, VectorSearchResult
    from ._analyzer import AnalyzerSettings
    from ._chunkers.approx_token import ApproxTokenChunker
    from ._chunkers.base import ChunkerBase
    from ._chunkers.heading import HeadingChunker
    from ._chunkers.recursive import RecursiveChunker
    from ._chunkers.token import TokenChunker
    from ._knowledge_base import KnowledgeBase
    from ._parsers.base import ParserBase
    from ._parsers.docx import WordParser
    from ._parsers.eml import EmailParser
    from ._parsers.epub import EPUBParser
    from ._parsers.excel import ExcelParser
    from ._parsers.html import HTMLParser
    from ._parsers.image import ImageParser
    from ._parsers.markdown import MarkdownParser
    from ._parsers.pdf import PDFParser
    from ._parsers.pptx import PPTParser
    from ._parsers.records import RecordsParser
    from ._parsers.text import TextParser
    from ._remote import RemoteKnowledgeBase
    from ._retrieval import (
        Bm25Settings,
        FeedbackSettings,
        FusionSettings,
        RerankSettings,
        RetrievalSettings,
        Rm3Settings,
        RocchioSettings,
    )
    from ._stores.base import VectorStoreBase
    from ._stores.elasticsearch import ElasticsearchStore
    from ._stores.milvus import MilvusLiteStore
    from ._stores.mongodb import MongoDBStore
    from ._stores.pgvector import PgVectorStore
    from ._stores.qdrant import QdrantStore
    from ._stores.qdrant_edge import QdrantEdgeStore

# Every class imported on first use: a pipeline file's check needs the retrieval
# settings, not the knowledge base or the stores, and a store's class should not
# import the others' libraries.
__getattr__ = lazy_exports(
    __name__,
    {
        "AnalyzerSettings": "._analyzer",
        "ApproxTokenChunker": "._chunkers.approx_token",
        "Bm25Settings": "._retrieval",
        "Chunk": ".._document",
        "ChunkerBase": "._chunkers.base",
        "DocumentSummary": ".._document",
        "EPUBParser": "._parsers.epub",
        "ElasticsearchStore": "._stores.elasticsearch",
        "EmailParser": "._parsers.eml",
        "ExcelParser": "._parsers.excel",
        "FeedbackSettings": "._retrieval",
        "FusionSettings": "._retrieval",
        "HTMLParser": "._parsers.html",
        "HeadingChunker": "._chunkers.heading",
        "ImageParser": "._parsers.image",
        "KnowledgeBase": "._knowledge_base",
        "MarkdownParser": "._parsers.markdown",
        "MilvusLiteStore": "._stores.milvus",
        "MongoDBStore": "._stores.mongodb",
        "PDFParser": "._parsers.pdf",
        "PPTParser": "._parsers.pptx",
        "ParserBase": "._parsers.base",
        "PgVectorStore": "._stores.pgvector",
        "QdrantEdgeStore": "._stores.qdrant_edge",
        "QdrantStore": "._stores.qdrant",
        "RecordsParser": "._parsers.records",
        "RecursiveChunker": "._chunkers.recursive",
        "RemoteKnowledgeBase": "._remote",
        "RerankSettings": "._retrieval",
        "Rm3Settings": "._retrieval",
        "RocchioSettings": "._retrieval",
        "RetrievalSettings": "._retrieval",
        "Section": ".._document",
        "TextParser": "._parsers.text",
        "TokenChunker": "._chunkers.token",
        "VectorRecord": ".._document",
        "VectorSearchResult": ".._document",
        "VectorStoreBase": "._stores.base",
        "WordParser": "._parsers.docx",
    },
)

__all__ = [
    "AnalyzerSettings",
    "ApproxTokenChunker",
    "Bm25Settings",
    "Chunk",
    "ChunkerBase",
    "CollectionMismatchError",
    "DocumentSummary",
    "EPUBParser",
    "ElasticsearchStore",
    "EmailParser",
    "ExcelParser",
    "FeedbackSettings",
    "FusionSettings",
    "HTMLParser",
    "HeadingChunker",
    "ImageParser",
    "KnowledgeBase",
    "MarkdownParser",
    "MilvusLiteStore",
    "MongoDBStore",
    "PDFParser",
    "PPTParser",
    "ParserBase",
    "ParserError",
    "ParserFileNotFoundError",
    "PgVectorStore",
    "QdrantEdgeStore",
    "QdrantStore",
    "RecordsParser",
    "RecursiveChunker",
    "RemoteKnowledgeBase",
    "RerankSettings",
    "RetrievalSettings",
    "Rm3Settings",
    "RocchioSettings",
    "Section",
    "TextParser",
    "TokenChunker",
    "VectorRecord",
    "VectorSearchResult",
    "VectorStoreBase",
    "VectorStoreError",
    "WordParser",
]
