"""Sources: where a knowledge base's files come from, one module per kind.

Every kind registers in the ``ragflow_config.sources`` entry-point group, as
parsers and stores do in theirs: ``local`` (a folder, :mod:`.local`) and
``s3`` (an S3-compatible object store, :mod:`.s3`) and ``git`` (a repository at
a ref, :mod:`.git`).
"""

from .base import (
    ListedFile,
    SourceBase,
    SourceFile,
    SourceListingError,
    SourceSpec,
    content_hash,
    document_id,
    matches,
    pattern_problem,
)
from .local import (
    LocalFile,
    LocalFolderSource,
    SourceOutsideError,
    allowed_root,
    has_files,
    source_escape,
)

__all__ = [
    "ListedFile",
    "LocalFile",
    "LocalFolderSource",
    "SourceBase",
    "SourceFile",
    "SourceListingError",
    "SourceOutsideError",
    "SourceSpec",
    "allowed_root",
    "content_hash",
    "document_id",
    "has_files",
    "matches",
    "pattern_problem",
    "source_escape",
]
