"""The code examples of AgentScope 2.0.11's RAG documentation, verbatim, in its order.

NOTICE: copied from AgentScope's documentation (docs.agentscope.io, "RAG"), Apache
License 2.0, Copyright the AgentScope authors; see NOTICE. Only
``test_seed_examples.py`` changes them, and only their imports.
"""

EXAMPLES: dict[str, str] = {
    "chunker parameters": """\
from agentscope.rag import ApproxTokenChunker

chunker = ApproxTokenChunker(
    parameters=ApproxTokenChunker.Parameters(
        chunk_size=256,
        overlap=32,
    ),
)
""",
    "text file": """\
from agentscope.rag import TextParser

parser = TextParser()

# 1) Pass bytes directly
sections = await parser.parse(
    file=b"# Cats\\nCats sleep 12-16 hours per day.\\n",
    filename="cats.md",
)

# 2) Pass a file path (an existing file is read from disk)
sections = await parser.parse(file="./cats.md", filename="cats.md")
""",
    "pdf": """\
from agentscope.rag import PDFParser

parser = PDFParser()

# 1) Pass a file path
sections = await parser.parse(file="./report.pdf", filename="report.pdf")

# 2) Or pass bytes directly (e.g. from an HTTP upload / blob store)
with open("report.pdf", "rb") as f:
    sections = await parser.parse(file=f.read(), filename="report.pdf")

# Each section.metadata contains {"page": N}
""",
    "powerpoint": """\
from agentscope.rag import PPTParser

parser = PPTParser(
    include_image=True,          # Whether to extract embedded images
    separate_table=False,        # Whether to emit tables as their own Section
    table_format="markdown",     # Table rendering: "markdown" or "json"
    slide_prefix="<slide index={index}>",
    slide_suffix="</slide>",
)

# File path
sections = await parser.parse(file="./deck.pptx", filename="deck.pptx")
""",
    "word": """\
from agentscope.rag import WordParser

parser = WordParser(
    include_image=True,        # Whether to extract embedded images
    separate_table=False,      # Whether to emit tables as their own Section
    table_format="markdown",   # Table rendering: "markdown" or "json"
)

# File path
sections = await parser.parse(file="./doc.docx", filename="doc.docx")
""",
    "excel": """\
from agentscope.rag import ExcelParser

parser = ExcelParser(
    include_sheet_names=True,        # Prepend each sheet's name as a header
    include_cell_coordinates=False,  # Include cell coordinates like [A1]
    include_image=False,             # Whether to extract embedded images
    separate_sheet=False,            # Keep sheets in separate Sections
    table_format="markdown",         # Table rendering: "markdown" or "json"
)

# File path
sections = await parser.parse(file="./table.xlsx", filename="table.xlsx")
# With separate_sheet=True, each section.metadata contains {"sheet": "<name>"}
""",
    "image": """\
from agentscope.rag import ImageParser

parser = ImageParser()

# File path
sections = await parser.parse(file="./cat.png", filename="cat.png")
# The entire image is wrapped as a single DataBlock; metadata records the media_type
""",
    "chunk": """\
from agentscope.rag import ApproxTokenChunker

chunker = ApproxTokenChunker(
    parameters=ApproxTokenChunker.Parameters(
        chunk_size=256,
        overlap=32,
    ),
)
chunks = await chunker.chunk(sections)
""",
    "knowledge base": """\
from agentscope.credential import DashScopeCredential
from agentscope.embedding import DashScopeEmbeddingModel
from agentscope.rag import KnowledgeBase, QdrantStore

embedding_model = DashScopeEmbeddingModel(
    credential=DashScopeCredential(api_key="YOUR_API_KEY"),
    model="text-embedding-v4",
    dimensions=1024,
)

# QdrantStore is an async context manager; entering it opens the client connection
store = QdrantStore(location=":memory:")  # or url="http://..." for a real cluster

async with store:
    knowledge = KnowledgeBase(
        name="demo-kb",
        description="A toy corpus.",
        embedding_model=embedding_model,
        vector_store=store,
        collection="demo-kb",
    )
    # The backing collection is created on first use, sized to embedding_model.dimensions
    document_id = await knowledge.insert_document(
        chunks,
        document_metadata={"filename": "cats.md"},
    )
""",
    "milvus lite": """\
from agentscope.rag import MilvusLiteStore

# Local persistent .db file; requires agentscope[vdb-milvus]
store = MilvusLiteStore(uri="./rag_demo.db")
""",
    "mongodb": """\
from agentscope.rag import MongoDBStore

# MongoDB Vector Search (Atlas or self-hosted); requires agentscope[vdb-mongodb]
store = MongoDBStore(
    uri="mongodb+srv://user:pass@cluster.mongodb.net",
    database="agentscope_rag",
    # Fields used in metadata_filter must be declared here,
    # so they are included in the vector search index
    filter_fields=["chunk.metadata.tenant_id"],
)
""",
    "elasticsearch": """\
from agentscope.rag import ElasticsearchStore

# Dense-vector indexes with approximate kNN; requires agentscope[vdb-elasticsearch]
store = ElasticsearchStore(hosts="http://localhost:9200")
""",
    "vector retrieval": """\
async with store:
    results = await knowledge.search(
        queries=["When do cats sleep?"],
        top_k=3,
        score_threshold=None,  # minimum score to keep a hit; None keeps everything
    )
    for r in results:
        print(r.score, r.document_id, r.chunk.content)
""",
    "document management": """\
# List every document (one DocumentSummary per document)
summaries = await knowledge.list_documents()
for s in summaries:
    print(s.document_id, s.source, s.chunk_count, s.metadata)

# Delete every chunk belonging to one document
await knowledge.delete_document(document_id)
""",
    "metadata_filter": """\
knowledge = KnowledgeBase(
    name="tenant-a-kb",
    description="...",
    embedding_model=embedding_model,
    vector_store=store,
    collection="shared",
    metadata_filter={"tenant_id": "tenant-a"},
)
""",
    "supported media types": """\
>>> from agentscope.rag import TextParser, ImageParser
>>> TextParser.supported_media_types
['text/plain', 'text/markdown', 'text/csv', 'text/html', 'text/x-rst',
 'application/json', 'application/xml', 'application/x-yaml']
>>> ImageParser.supported_media_types
['image/png', 'image/jpeg', 'image/gif', 'image/bmp', 'image/webp']
""",
    "supports multimodal": """\
>>> embedding_model.supports_multimodal
True
""",
    "static mode": """\
from agentscope.middleware import RAGMiddleware
from agentscope.tool import Toolkit

static_mw = RAGMiddleware(
    knowledge_bases=[knowledge],       # One or more KnowledgeBase handles
    parameters=RAGMiddleware.Parameters(
        mode="static",
        top_k=3,
        emit_hint_event=False,
    ),
)

agent = Agent(
    name="static-agent",
    system_prompt="Answer the user's question using the retrieved material.",
    model=chat_model,
    toolkit=Toolkit(),
    middlewares=[static_mw],
)
""",
    "agentic mode": """\
from agentscope.middleware import RAGMiddleware
from agentscope.tool import Toolkit

agentic_mw = RAGMiddleware(
    knowledge_bases=[knowledge],
    parameters=RAGMiddleware.Parameters(mode="agentic", top_k=3),
)

# Note: in agentic mode you must manually inject the search_knowledge tool into the Toolkit
toolkit = Toolkit(tools=await agentic_mw.list_tools())

agent = Agent(
    name="agentic-agent",
    system_prompt="When necessary, call the search_knowledge tool to look up material.",
    model=chat_model,
    toolkit=toolkit,
    middlewares=[agentic_mw],
)
""",
    "combined modes": """\
from agentscope.middleware import RAGMiddleware
from agentscope.tool import Toolkit

# static gives the first turn some background automatically;
# agentic lets the model fetch more on demand
static_mw = RAGMiddleware(
    knowledge_bases=[knowledge],
    parameters=RAGMiddleware.Parameters(mode="static", top_k=3),
)
agentic_mw = RAGMiddleware(
    knowledge_bases=[knowledge],
    parameters=RAGMiddleware.Parameters(mode="agentic", top_k=3),
)

# Note: in agentic mode you must manually inject the search_knowledge tool into the Toolkit
toolkit = Toolkit(tools=await agentic_mw.list_tools())

agent = Agent(
    name="hybrid-agent",
    system_prompt="Answer using the retrieved material; call search_knowledge for more when needed.",
    model=chat_model,
    toolkit=toolkit,
    middlewares=[static_mw, agentic_mw],
)
""",
    "rerank model": """\
from agentscope.middleware import RAGMiddleware
from agentscope.model import DashScopeChatModel
from agentscope.credential import DashScopeCredential

rag_mw = RAGMiddleware(
    knowledge_bases=[knowledge],
    rerank_model=DashScopeChatModel(       # the chat model that does the reranking
        credential=DashScopeCredential(api_key="YOUR_API_KEY"),
        model="qwen-max",
    ),
    parameters=RAGMiddleware.Parameters(
        mode="agentic",
        top_k=3,                # keep 3 hits in the end
        rerank_candidate_k=10,  # pull 10 candidates for the rerank model first
    ),
)
""",
    "custom parser": """\
from agentscope.message import TextBlock
from agentscope.rag import ParserBase, Section


class MyMarkdownParser(ParserBase):
    supported_media_types = ["text/markdown"]

    async def parse(
        self,
        file: bytes | str,
        filename: str,
    ) -> list[Section]:
        text = file.decode("utf-8") if isinstance(file, bytes) else file
        # Split by H2 headings into multiple Sections, preserving the source
        return [
            Section(
                content=TextBlock(text=block),
                source=filename,
                metadata={"index": index},
            )
            for index, block in enumerate(text.split("\\n## "))
        ]
""",
    "custom chunker": """\
from pydantic import Field

from agentscope.message import TextBlock
from agentscope.rag import Chunk, ChunkerBase, Section


class FixedCharChunker(ChunkerBase):
    chunker_type = "fixed_char"

    class Parameters(ChunkerBase.Parameters):
        chunk_size: int = Field(default=1000, ge=1)

    async def chunk(self, sections: list[Section]) -> list[Chunk]:
        chunks: list[Chunk] = []
        for section in sections:
            # Multimodal content is not split — pass through as a whole chunk
            if not isinstance(section.content, TextBlock):
                chunks.append(
                    Chunk(
                        content=section.content,
                        source=section.source,
                        chunk_index=0,
                        total_chunks=0,
                        metadata=dict(section.metadata),
                    ),
                )
                continue
            text = section.content.text
            for start in range(0, len(text), self.parameters.chunk_size):
                chunks.append(
                    Chunk(
                        content=TextBlock(
                            text=text[
                                start : start + self.parameters.chunk_size
                            ],
                        ),
                        source=section.source,
                        chunk_index=0,
                        total_chunks=0,
                        metadata=dict(section.metadata),
                    ),
                )
        # Renumber consistently
        for index, chunk in enumerate(chunks):
            chunk.chunk_index = index
            chunk.total_chunks = len(chunks)
        return chunks
""",
    "custom vector database": """\
from typing import Any
from agentscope.rag import (
    DocumentSummary,
    VectorRecord,
    VectorSearchResult,
    VectorStoreBase,
)


class MyVectorStore(VectorStoreBase):
    async def __aenter__(self) -> "MyVectorStore":
        self._client = await connect_my_backend(...)
        return self

    async def __aexit__(self, exc_type, exc, tb) -> None:
        await self._client.close()

    async def create_collection(self, name: str, dimensions: int) -> None: ...

    async def delete_collection(self, name: str) -> None: ...

    async def has_collection(self, name: str) -> bool: ...

    async def insert(
        self,
        collection: str,
        records: list[VectorRecord],
    ) -> None: ...

    async def delete(self, collection: str, document_id: str) -> None: ...

    async def search(
        self,
        collection: str,
        query_vector: list[float],
        top_k: int = 5,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[VectorSearchResult]: ...

    async def list_documents(
        self,
        collection: str,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[DocumentSummary]: ...
""",
}
