"""What `validate` advises on a valid pipeline file: settings that index less than they seem to.

Not errors: the file runs as written. Each piece of advice is a
:class:`ConfigIssue` at the block it is about, saying what to change.
"""

from __future__ import annotations

from typing import cast

from .._errors import ConfigIssue
from .._extras import install_line
from ..embedding import EmbeddingModelBase
from ..rag import ParserBase
from ._build import embedding_block
from ._registry import Registry, default_registry
from ._validate import LoadedPipeline


def advice(loaded: LoadedPipeline, registry: Registry | None = None) -> list[ConfigIssue]:
    """Advice on ``loaded``, in file order: for now, parsers whose files the model cannot embed."""
    registry = registry or default_registry()
    spec = loaded.spec
    issues = []
    for i, kb in enumerate(spec.knowledge_bases):
        block = embedding_block(spec, kb)
        model = cast(type[EmbeddingModelBase], registry.get("embedding", block.type).cls)
        if model.multimodal_for(model.Parameters.model_validate(block.parameters)):
            continue
        named = f"{kb.embedding!r}" if isinstance(kb.embedding, str) else f"{block.type!r}"
        for j, parser_block in enumerate(kb.parsers):
            parser = cast(type[ParserBase], registry.get("parser", parser_block.type).cls)
            if parser.only_data_for(parser.Parameters.model_validate(parser_block.parameters)):
                issues.append(
                    loaded.locations.issue(
                        ("knowledge_bases", i, "parsers", j),
                        f"the {parser_block.type!r} parser keeps images as images and the "
                        f"embedding {named} embeds text only, so a run skips every such "
                        "file; turn on OCR (`parameters: {ocr: auto}`, "
                        f"{install_line({'ocr'})}) or use a multimodal embedding model",
                    )
                )
    return issues
