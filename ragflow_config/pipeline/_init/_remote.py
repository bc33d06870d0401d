"""What a remote source holds, from a bounded sample of its listing: ``init s3://...`` and
``init https://...`` choose parsers as for a folder, without downloading the source.

The first ``SAMPLE_FILES`` files of the listing are typed by their name or the type
their source declares (a page's ``Content-Type``); at most ``SAMPLE_READS`` files
named neither way are fetched, within ``max_file_bytes``, to be typed by content.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ...rag._media_types import by_extension, detect
from ...sources import SourceFile, SourceSpec
from .._sources import source_kind
from ._survey import MAX_FILE_BYTES, FolderSurvey

SAMPLE_FILES = 500
SAMPLE_READS = 20


def remote_source(url: str, parameters: dict[str, Any]) -> SourceSpec | None:
    """The source block ``init`` writes for ``url``: an ``s3://`` bucket, or a site (a
    sitemap when the URL names an ``.xml`` file), ``parameters`` added to its own; None
    for any other URL."""
    if url.startswith("s3://"):
        return SourceSpec(type="s3", parameters={"url": url, **parameters})
    if url.startswith(("https://", "http://")):
        start = "sitemap" if urlsplit(url).path.endswith(".xml") else "url"
        return SourceSpec(type="web", parameters={start: url, **parameters})
    return None


def survey_remote(source: SourceSpec, home: Path) -> tuple[FolderSurvey, str, bool]:
    """The sampled files by media type, the source's name (its ``origin``), and whether
    the sample is the whole listing.

    Raises :class:`SourceListingError` when the source cannot be listed.
    """
    kind = source_kind(source)
    found = FolderSurvey(home)  # no folder: where the pipeline file goes
    listed = kind.sample(source, home, SAMPLE_FILES + 1)
    reads = 0
    for file in itertools.islice(listed, SAMPLE_FILES):
        media_type = by_extension(file.relative) or file.media_type
        if media_type is None and reads < SAMPLE_READS:
            reads += 1
            media_type = _read_type(file)
        found.counts[media_type] += 1
        found.examples.setdefault(media_type, file.relative)
        # The sample is not the listing: a type is selected by its extension, or not at all
        # (a pattern naming one sampled file would leave out the unsampled ones).
        suffix = Path(urlsplit(file.relative).path).suffix
        pattern = f"*{suffix}" if suffix and by_extension(file.relative) else "**/*"
        found.patterns.setdefault(media_type, set()).add(pattern)
    whole = next(listed, None) is None
    return found, kind.origin(source), whole


def _read_type(file: SourceFile) -> str | None:
    try:
        if file.size() > MAX_FILE_BYTES:
            return None
        return detect(file.relative, file.read())
    except OSError:
        return None
