"""Which physical collection a knowledge base reads: the pointer each store keeps.

A knowledge base whose pipeline changes what makes its vectors is rebuilt
in a new collection beside the live one, then switched to by replacing one
record, its *pointer*, in a single atomic write: a reader sees the old
record or the new one, never a collection half-built. The record also
keeps the collections it replaced, latest first, which is what ``rollback``
switches back to, and the rebuild under way, so an interrupted one is found
and resumed or cleared.

Every store keeps pointers as records of its own registry (a collection,
table or index named :data:`POINTER_REGISTRY`), one per pointer name,
replaced whole. Not an engine alias: Milvus Lite has none, an alias cannot
carry the history rollback needs, and knowledge bases of different scopes
share a collection yet each switches on its own.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

POINTER_REGISTRY = "ragflow_pointers"


class Generation(BaseModel):
    """One physical collection of a knowledge base, and what made its vectors."""

    collection: str
    embedding: str = Field(
        description="A digest of the embedding model that made the vectors: a query must "
        "be embedded by the same model to be compared with them."
    )
    fingerprint: dict[str, str] = Field(
        default_factory=dict, description="The pipeline fingerprint the collection was built by."
    )
    not_switched: str | None = Field(
        default=None,
        description="Why the last run left this rebuild without switching to it "
        '("2 files failed"); none while one is under way.',
    )


class Remembered(BaseModel):
    """A file that yielded nothing to index (it failed, or held nothing the model embeds),
    remembered so that runs need not parse it again while it and the pipeline stay as they were."""

    path: str
    revision: str = Field(
        description="A digest of the file's content and the pipeline fingerprint it was tried "
        "with: either changing retries it."
    )
    action: Literal["failed", "empty", "skipped", "unsupported"] = Field(
        description="What the run found: a parse that failed, nothing to index, only what "
        "the model cannot embed, no parser for the file's type."
    )
    reason: str


class Pointer(BaseModel):
    """A knowledge base's collections: the live one first, then those it replaced."""

    generations: list[Generation] = Field(min_length=1)
    building: Generation | None = Field(
        default=None, description="A rebuild under way, not yet switched to."
    )
    retiring: list[Generation] = Field(
        default_factory=list,
        description="Collections past `keep_previous`, to delete: listed by the switch "
        "itself, so a run killed before deleting them finds them.",
    )

    yielded_nothing: dict[str, Remembered] = Field(
        default_factory=dict,
        description="The files, by document id, that yielded nothing to index when last "
        "tried: a run reports them as they were without parsing them again.",
    )

    @property
    def live(self) -> Generation:
        return self.generations[0]
