"""Whose documents a run may change: each record carries its writer's identity.

Two pipeline files may write one collection, each without a scope
(``metadata_filter``): two teams' knowledge bases, say. Every run lists the
whole collection, so without a writer on each record one team's prune would
take the other's documents for files that are gone, and delete them. So a
run stamps chunk 0's state with its writer, the knowledge base's ``owner``
or else the pipeline file's name and the knowledge base's
(``team-a.yaml#docs``), and never deletes, updates or repairs a document
another writer stamped: it reports it as foreign, as it does documents no
run wrote (see ``_adopt``).

A document written before writers were recorded is told apart by its id,
which digests the knowledge base's name with the file's source and path:
another knowledge base's name gives another id. Two knowledge bases of one
name in two files are then told apart only once their runs have rewritten
their documents.
"""

from __future__ import annotations

from ..rag import DocumentSummary
from ..sources import document_id
from ._generations import state
from ._spec import KnowledgeBaseSpec

WRITER_KEY = "writer"


def writer(spec: KnowledgeBaseSpec, pipeline_file: str) -> str:
    """The identity a knowledge base's runs stamp on what they write."""
    if spec.owner:
        return spec.owner
    return f"{pipeline_file}#{spec.name}" if pipeline_file else spec.name


def other_writer(summary: DocumentSummary, kb_name: str, own: str) -> str | None:
    """Who else wrote a document that carries run state; ``None`` when it is ``own``'s."""
    found = state(summary)
    recorded = found.get(WRITER_KEY)
    if isinstance(recorded, str):
        return None if recorded == own else recorded
    # Written before writers were recorded: its id digests the name of the knowledge base.
    source, path = found.get("source"), found.get("path")
    if not (isinstance(source, str) and isinstance(path, str)):
        return None
    if document_id(kb_name, source, path) != summary.document_id:
        return f"a knowledge base not named {kb_name!r}"
    return None


def shared_reason(writer_name: str, collection: str) -> str:
    """Why a run leaves another writer's document alone, and how to stop sharing."""
    return (
        f"written by {writer_name}, another writer of collection {collection} in this scope: "
        "never deleted or updated by this knowledge base's runs; give each knowledge base "
        "its own metadata_filter (or collection)"
    )
