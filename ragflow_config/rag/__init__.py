"""Retrieval-augmented generation: parsers, chunkers, vector stores and the ``KnowledgeBase``.

Names mirror ``agentscope.rag``. Classes whose libraries are optional import
them on first use, so a missing extra fails with an error naming it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .._errors import (
    CollectionMismatchError,
    ParserError,
    ParserFileNotFoundError,
    VectorStoreError,
)
from ._analyzer import AnalyzerSettings
from ._chunkers.approx_token import ApproxTokenChunker
from ._chunkers.base import ChunkerBase
from ._document import Chunk, DocumentSummary, Section, VectorRecord, VectorSearchResult
from ._knowledge_base import KnowledgeBase
from ._parsers.base import ParserBase
from ._parsers.text import TextParser
from ._retrieval import Bm25Settings, FusionSettings, RerankSettings, RetrievalSettings
from ._stores.base import VectorStoreBase
from ._stores.qdrant import QdrantStore

if TYPE_CHECKING:
    from ._chunkers.heading import HeadingChunker
    from ._chunkers.recursive import RecursiveChunker
    from ._chunkers.token import TokenChunker
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
    from ._stores.elasticsearch import ElasticsearchStore
    from ._stores.milvus import MilvusLiteStore
    from ._stores.mongodb import MongoDBStore
    from ._stores.pgvector import PgVectorStore

# Modules that are imported when one of their names is first used.
_LAZY = {
    "PDFParser": "._parsers.pdf",
    "PPTParser": "._parsers.pptx",
    "WordParser": "._parsers.docx",
    "ExcelParser": "._parsers.excel",
    "ImageParser": "._parsers.image",
    "MarkdownParser": "._parsers.markdown",
    "HTMLParser": "._parsers.html",
    "RecordsParser": "._parsers.records",
    "EmailParser": "._parsers.eml",
    "EPUBParser": "._parsers.epub",
    "TokenChunker": "._chunkers.token",
    "HeadingChunker": "._chunkers.heading",
    "RecursiveChunker": "._chunkers.recursive",
    "MilvusLiteStore": "._stores.milvus",
    "MongoDBStore": "._stores.mongodb",
    "ElasticsearchStore": "._stores.elasticsearch",
    "PgVectorStore": "._stores.pgvector",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


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
    "QdrantStore",
    "RecordsParser",
    "RecursiveChunker",
    "RerankSettings",
    "RetrievalSettings",
    "Section",
    "TextParser",
    "TokenChunker",
    "VectorRecord",
    "VectorSearchResult",
    "VectorStoreBase",
    "VectorStoreError",
    "WordParser",
]
