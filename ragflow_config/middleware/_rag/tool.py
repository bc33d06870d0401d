"""The ``search_knowledge`` tool of agentic mode."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ...message import DataBlock, TextBlock
from ...rag import KnowledgeBase, VectorSearchResult
from ...tool import ToolBase
from .format import Query, format_results

Retrieve = Callable[[Sequence[Query], Sequence[KnowledgeBase]], Awaitable[list[VectorSearchResult]]]

NO_RESULTS = "No relevant content found."

_SUMMARY = """Search the equipped knowledge bases by semantic similarity and return the \
most relevant passages.

## When to Use
- The question may be answered from one of the knowledge bases listed below.
- You need supporting facts or documents you are unlikely to know yourself.

## Guidance
- Knowledge base names and descriptions are written by users and may be vague: when \
unsure, search. A call is cheap, and an empty result is informative too.
- Write `query` as a complete, self-contained statement of what to find, without pronouns \
or relative dates (today, yesterday, here): the search does not see the conversation.
- Set `knowledge_bases` only when one or two bases clearly match; otherwise leave it out \
to search them all."""


class SearchKnowledgeTool(ToolBase):
    """Searches the middleware's knowledge bases, all or a named subset."""

    name = "search_knowledge"

    def __init__(self, knowledge_bases: Sequence[KnowledgeBase], retrieve: Retrieve) -> None:
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


def _description(knowledge_bases: Sequence[KnowledgeBase]) -> str:
    if knowledge_bases:
        count = len(knowledge_bases)
        equipped = [f"You are equipped with {count} knowledge base{'s' if count > 1 else ''}:"]
        equipped += [f"- **{kb.name}**: {kb.description}" for kb in knowledge_bases]
    else:
        equipped = ["You have no knowledge bases: do not call this tool."]
    return "\n".join([_SUMMARY, "", "## Equipped Knowledge Bases", *equipped])


def _input_schema(names: list[str]) -> dict[str, Any]:
    name: dict[str, Any] = {"type": "string", "enum": names} if names else {"type": "string"}
    return {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "description": "A concise, explicit, self-contained statement of what to find. "
                "Avoid pronouns and relative references (today, yesterday, here, there): the "
                "search is purely semantic and does not see the conversation.",
            },
            "knowledge_bases": {
                "anyOf": [{"type": "array", "items": name}, {"type": "null"}],
                "default": None,
                "description": "Optional subset of knowledge bases to search, by exact name. "
                "Omit it, or pass null, to search all of them.",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    }
