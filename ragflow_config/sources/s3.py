"""An S3-compatible object store (AWS S3, R2, MinIO, GCS's interoperability API) as a source.

Listed through obstore (the Rust ``object_store`` crate): each object's ETag
and size come with the listing, so a run reads only the objects whose marker
differs from the one stored, and ``plan`` of an unchanged bucket reads none.
Credentials come from the environment and the standard chain (``AWS_*``
variables, web identity, the instance's role), never from the pipeline file.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from .._component import ComponentParameters
from .._redact import redact_urls
from ._download import DownloadArea
from .base import ListedFile, SourceBase, SourceListingError, SourceSpec

if TYPE_CHECKING:
    from obstore import GetOptions
    from obstore.store import S3Config, S3Store

_S3_URL = r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$"


class S3Source(SourceBase):
    """Objects under a prefix of an S3-compatible bucket (`s3://bucket/prefix`)."""

    requires: ClassVar[dict[str, str]] = {"obstore": "s3"}

    class Parameters(ComponentParameters):
        url: str = Field(
            pattern=_S3_URL,
            description="`s3://bucket` or `s3://bucket/prefix`: the objects under the prefix "
            "(a folder: `docs` holds `docs/a.md`, not `docs-old/b.md`).",
        )
        endpoint_url: str | None = Field(
            default=None,
            pattern=r"^https?://[^/\s@]+/?$",
            description="Another S3-compatible service's endpoint (`https://<account>."
            "r2.cloudflarestorage.com`, `http://127.0.0.1:9000` for MinIO); AWS's when unset.",
        )
        region: str | None = Field(
            default=None,
            pattern=r"^[a-z0-9-]+$",
            description="The bucket's region; else `AWS_REGION` or `AWS_DEFAULT_REGION`.",
        )
        timeout_seconds: float = Field(
            default=30, gt=0, le=600, description="Time allowed to each request."
        )
        max_retries: int = Field(
            default=3,
            ge=0,
            le=10,
            description="Retries of a request that failed on a 5xx, a 429 or the network; a "
            "listing that still fails stops the run, and prunes nothing.",
        )

    parameters: Parameters

    @property
    def bucket(self) -> str:
        return self.parameters.url.removeprefix("s3://").partition("/")[0]

    @property
    def prefix(self) -> str:
        """The key prefix, as a folder: without its slashes at either end."""
        return self.parameters.url.removeprefix("s3://").partition("/")[2].strip("/")

    def origin(self, spec: SourceSpec) -> str:
        return f"s3://{self.bucket}/{self.prefix}".rstrip("/")

    @cached_property
    def store(self) -> S3Store:
        from obstore.store import S3Store

        options = self.parameters
        config: S3Config = {}
        if options.endpoint_url:
            config["endpoint"] = options.endpoint_url.rstrip("/")
        if options.region:
            config["region"] = options.region
        return S3Store(
            self.bucket,
            config=config,
            client_options={
                # Plain HTTP only when the file names an http:// endpoint (MinIO on a host).
                "allow_http": bool(
                    options.endpoint_url and options.endpoint_url.startswith("http:")
                ),
                "timeout": timedelta(seconds=options.timeout_seconds),
                "connect_timeout": timedelta(seconds=min(options.timeout_seconds, 10)),
            },
            retry_config={
                "max_retries": options.max_retries,
                "retry_timeout": timedelta(
                    seconds=options.timeout_seconds * (1 + options.max_retries)
                ),
                "backoff": {
                    "init_backoff": timedelta(milliseconds=100),
                    "max_backoff": timedelta(seconds=5),
                    "base": 2,
                },
            },
        )

    def files(self, spec: SourceSpec, folder: Path) -> Iterator[S3Object]:
        """Every object under the prefix that ``spec`` selects, in key order.

        The whole listing is read before any object is yielded: a listing that
        fails on its tenth page yields nothing, so nothing it did not reach
        reads as deleted.
        """
        import obstore

        origin = self.origin(spec)
        listed = []
        try:
            for batch in obstore.list(self.store, prefix=self.prefix or None, chunk_size=1000):
                listed.extend(batch)
        except Exception as exc:  # any failure: what was listed is not the bucket's contents
            raise SourceListingError(
                f"source {origin}: the listing failed ({type(exc).__name__}: "
                f"{_first_line(exc)}); nothing is pruned or written"
            ) from None
        cut = len(self.prefix) + 1 if self.prefix else 0
        for meta in sorted(listed, key=lambda meta: meta["path"]):
            relative = meta["path"][cut:]
            if relative and spec.selects(relative):
                marker = meta.get("version") or meta.get("e_tag") or ""
                yield S3Object(
                    source=spec,
                    origin=origin,
                    relative=relative,
                    key=meta["path"],
                    listed_size=meta["size"],
                    version=f"{marker}:{meta['size']}",
                    etag=meta.get("e_tag"),
                    kind=self,
                )


@dataclass(frozen=True, kw_only=True)
class S3Object(ListedFile):
    """An object as the listing saw it; read, it must still be that object."""

    key: str
    etag: str | None
    kind: S3Source

    def read(self) -> bytes:
        """The object's bytes, streamed to a temporary file and stopped at its listed size.

        Asked with ``If-Match`` its listed ETag: an object rewritten since the
        listing fails to read (and is read at the next run) rather than be
        stored under the marker of another version. The file is removed once
        read, and when the download fails or is interrupted.
        """
        import obstore

        options: GetOptions = {"if_match": self.etag} if self.etag else {}
        area = DownloadArea(max_bytes=self.listed_size)
        try:
            result = obstore.get(self.kind.store, self.key, options=options)
            downloaded = area.store(
                (bytes(chunk) for chunk in result.stream(min_chunk_size=1 << 20)),
                limit=self.listed_size,
            )
            if downloaded is None:
                raise OSError(errno.EFBIG, "it grew past its listed size")
            return downloaded.read_bytes()
        except OSError:
            raise
        except Exception as exc:
            raise OSError(errno.EIO, f"{type(exc).__name__}: {_first_line(exc)}") from None
        finally:
            area.close()


def _first_line(exc: Exception) -> str:
    """An error's first line, URLs without credentials: object_store's messages run long."""
    text = str(exc).strip().splitlines()
    return redact_urls(text[0]) if text else ""
