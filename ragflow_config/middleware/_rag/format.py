"""Turning messages into queries and hits into what the model reads."""

from __future__ import annotations

from collections.abc import Sequence

from ..._prompts import split_template
from ...message import DataBlock, Msg, TextBlock
from ...rag import VectorSearchResult

Query = str | TextBlock | DataBlock
Blocks = list[TextBlock | DataBlock]


def queries_from(messages: Sequence[Msg]) -> list[Query]:
    """Per message, one text query ``<name>: <its texts, a line each>``, then each data block.

    The speaker's name leads the text as in AgentScope; a message's texts make
    one query (one message, one vector: what AgentScope's code means to do).
    Thinking, tool and hint blocks are never queries: they are not what the
    user asked, and embedding models cannot take them.
    """
    queries: list[Query] = []
    for message in messages:
        texts = [b.text for b in message.content if isinstance(b, TextBlock) and b.text.strip()]
        if texts:
            queries.append(TextBlock(text=f"{message.name}: " + "\n".join(texts)))
        queries.extend(b for b in message.content if isinstance(b, DataBlock))
    return queries


def format_results(hits: Sequence[VectorSearchResult]) -> Blocks:
    """``[i] (source: <file>)\\n<text>`` per hit, blank line between hits, data blocks kept.

    A chunk that knows the headings it sits under (``metadata["headings"]``,
    from the ``markdown``/``html`` parsers or the ``heading`` chunker) is
    cited with them: ``[i] (source: guide.md, section: Guide > Install)``;
    one from a page of a PDF with its page: ``[i] (source: report.pdf, page: 3)``.
    """
    blocks: Blocks = []
    for number, hit in enumerate(hits, start=1):
        prefix = ("\n\n" if number > 1 else "") + f"[{number}] ({citation(hit)})\n"
        content = hit.chunk.content
        if isinstance(content, TextBlock):
            _append_text(blocks, prefix + content.text)
        else:
            _append_text(blocks, prefix)
            blocks.append(content.model_copy(deep=True))
    return blocks


def citation(hit: VectorSearchResult) -> str:
    """``source: <file>``, then ``section: A > B`` and ``page: N`` when the chunk records them."""
    cited = f"source: {hit.chunk.source}"
    headings = hit.chunk.metadata.get("headings")
    if isinstance(headings, list) and headings:
        cited += ", section: " + " > ".join(str(heading) for heading in headings)
    page = hit.chunk.metadata.get("page")
    if isinstance(page, int) and not isinstance(page, bool):
        cited += f", page: {page}"
    return cited


def wrap_hint(template: str, blocks: Blocks) -> str | Blocks:
    """Put ``blocks`` where the template says ``{context}``: a string when all are text."""
    before, after = split_template(template)
    if all(isinstance(block, TextBlock) for block in blocks):
        texts = "\n".join(block.text for block in blocks if isinstance(block, TextBlock))
        return before + texts + after
    wrapped: Blocks = []
    _append_text(wrapped, before)
    for block in blocks:
        if isinstance(block, TextBlock):
            _append_text(wrapped, block.text)
        else:
            wrapped.append(block)
    _append_text(wrapped, after)
    return wrapped


def _append_text(blocks: Blocks, text: str) -> None:
    """Append ``text``, merged into the last block when that is text too."""
    if not text:
        return
    if blocks and isinstance(blocks[-1], TextBlock):
        blocks[-1] = TextBlock(text=blocks[-1].text + text)
    else:
        blocks.append(TextBlock(text=text))
