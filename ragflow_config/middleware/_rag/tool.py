"""The ``search_knowledge`` tool of agentic mode."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ...message import DataBlock, TextBlock
from ...rag import VectorSearchResult
from ...tool import ToolBase
from .format import Query, format_results
from .search import Searchable

Retrieve = Callable[[Sequence[Query], Sequence[Searchable]], Awaitable[list[VectorSearchResult]]]

NO_RESULTS = "No relevant content found."

# NOTICE: the texts the model reads here (_SUMMARY, the knowledge-base lines and the
# argument descriptions) are verbatim from AgentScope 2.0.11
# (https://github.com/agentscope-ai/agentscope, by the SysML team of Alibaba Tongyi Lab),
# agentscope/middleware/_rag.py's _SearchKnowledgeTool and _SearchParams, under the
# Apache License 2.0.
_SUMMARY = "\n".join(
    [
        "Search the agent's equipped knowledge bases by semantic "
        "similarity and return the most relevant chunks.",
        "",
        "## When to Use",
        "- The user's question may be answered by content stored "
        "in one of the listed knowledge bases (see *Equipped "
        "Knowledge Bases* below).",
        "- You need supporting facts, definitions, or documents "
        "that are unlikely to be in your parametric knowledge.",
        "",
        "## Guidance",
        "- Knowledge base names and descriptions are "
        "user-supplied and may be terse, vague, or unrelated to "
        "the actual contents. When in doubt, try the search — a "
        "single call is cheap and an empty result is informative.",
        "- Phrase `query` as a self-contained statement of what "
        "you want to find. Avoid pronouns or relative time "
        "references — the search is purely semantic and has no "
        "conversational context.",
        "- Set `knowledge_bases` only when the question clearly "
        "matches one or two specific bases; otherwise leave it "
        "unset to search them all.",
    ]
)


class SearchKnowledgeTool(ToolBase):
    """Searches the middleware's knowledge bases, all or a named subset."""

    name = "search_knowledge"

    def __init__(self, knowledge_bases: Sequence[Searchable], retrieve: Retrieve) -> None:
        self._knowledge_bases = tuple(knowledge_bases)
        self._retrieve = retrieve
        self.description = _description(self._knowledge_bases)
        self.input_schema = _input_schema([kb.name for kb in self._knowledge_bases])

    async def call(self, **arguments: Any) -> list[TextBlock | DataBlock]:
        query: str = arguments["query"]
        names: list[str] | None = arguments.get("knowledge_bases")
        # None (or no argument) is every base; an empty list is none, as in AgentScope.
        targets = [kb for kb in self._knowledge_bases if names is None or kb.name in names]
        hits = await self._retrieve([query], targets)
        return format_results(hits) or [TextBlock(text=NO_RESULTS)]


def _description(knowledge_bases: Sequence[Searchable]) -> str:
    if knowledge_bases:
        equipped = [
            f"The agent is currently equipped with {len(knowledge_bases)} knowledge base(s):"
        ]
        equipped += [f"- **{kb.name}**: {kb.description}" for kb in knowledge_bases]
    else:
        equipped = [
            "No knowledge bases are currently equipped. **Do not call this tool** "
            "— it will return nothing."
        ]
    return "\n".join([_SUMMARY, "", "## Equipped Knowledge Bases", *equipped])


def _input_schema(names: list[str]) -> dict[str, Any]:
    name: dict[str, Any] = {"type": "string", "enum": names} if names else {"type": "string"}
    return {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "description": "The query string to search the knowledge base(s) with. "
                "Must be concise, explicit, and self-contained: AVOID ambiguous references "
                "like `he`/`she`/`it`, `today`/`yesterday`/`tomorrow`, `here`/`there`, etc. "
                "— the search is purely semantic and has no conversational context. "
                "Phrase the query as a complete statement of what you want to find.",
            },
            "knowledge_bases": {
                "anyOf": [{"type": "array", "items": name}, {"type": "null"}],
                "default": None,
                "description": "Optional subset of knowledge bases to query, by name. When "
                "omitted (or `null`) every equipped knowledge base is searched. Names must "
                "exactly match those listed in the tool description.",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    }
