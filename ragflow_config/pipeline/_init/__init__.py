"""``ragflow-config init``: a commented pipeline file for a folder, from what its files are.

:func:`survey` finds each file's media type as ``run`` will (``_survey``),
:func:`choose` decides the components and extras (``_choose``), and
:func:`write_pipeline` writes the file (``_render``), never over another one.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..._errors import RagflowError
from ..._redact import redact_url
from ...sources import SourceListingError, source_escape
from .._registry import default_registry
from .._schema import PIPELINE_SCHEMA_FILE, write_schemas
from .._spec import NAME_PATTERN
from ._choose import MODELS, STORES, Draft, Model, Store, choose
from ._remote import remote_source, survey_remote
from ._render import Target, render
from ._survey import FolderSurvey, survey

__all__ = [
    "MODELS",
    "STORES",
    "Draft",
    "FolderSurvey",
    "InitRefused",
    "Model",
    "Store",
    "Written",
    "choose",
    "survey",
    "write_pipeline",
    "write_remote_pipeline",
]

# Beside the pipeline file, as its store is: hidden, so a run never indexes it.
SCHEMA_FOLDER = Path(".ragflow") / "schemas"


class InitRefused(RagflowError):
    """``init`` wrote nothing: the file exists, or the folder holds nothing to index."""


@dataclass(frozen=True)
class Written:
    """What ``init`` wrote and decided."""

    file: Path
    schemas: Path
    survey: FolderSurvey
    draft: Draft
    target: Target


def write_pipeline(
    folder: Path,
    output: Path,
    store: Store = "qdrant-edge",
    model: Model = "minilm",
    *,
    overwrite: bool = False,
) -> Written:
    """Survey ``folder`` and write a pipeline file for it at ``output``, which must not
    exist unless ``overwrite``."""
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such folder")
    _refuse_existing(output, overwrite)
    found = survey(folder, leave_out={output})
    home = output.parent
    source = Path(os.path.relpath(folder.resolve(), home.resolve())).as_posix()
    name = _name(folder.resolve().name)
    inside = output.resolve().is_relative_to(folder.resolve())
    target = Target(
        file=str(output),
        source=source,
        allow_outside=source_escape(source, home) is not None,
        # The file itself, written into the folder it indexes, is no document.
        exclude=[f"/{output.resolve().relative_to(folder.resolve()).as_posix()}"] if inside else [],
        schema=(SCHEMA_FOLDER / PIPELINE_SCHEMA_FILE).as_posix(),
        name=name,
        collection=_collection(name),
    )
    return _write(found, target, output, store, model, overwrite=overwrite, where=str(folder))


def write_remote_pipeline(
    url: str,
    output: Path,
    store: Store = "qdrant-edge",
    model: Model = "minilm",
    *,
    overwrite: bool = False,
    parameters: dict[str, Any] | None = None,
) -> Written:
    """Survey a sample of the remote source ``url`` names (``s3://...``, ``https://...``)
    and write a pipeline file for it at ``output``; ``parameters`` go in its block
    (an ``endpoint_url``). Nothing is written when the source cannot be listed."""
    _refuse_existing(output, overwrite)
    block = remote_source(url, parameters or {})
    if block is None:
        raise InitRefused(
            f"{url}: init indexes a folder, an s3:// bucket or prefix, or an http(s):// site"
        )
    try:
        found, origin, whole = survey_remote(block, output.parent)
    except SourceListingError as exc:
        raise InitRefused(str(exc)) from None
    except ValidationError as exc:  # the URL or a parameter the source kind refuses
        problem = exc.errors()[0]
        raise InitRefused(
            f"{redact_url(url)}: {'.'.join(map(str, problem['loc']))}: {problem['msg']}"
        ) from None
    # The prefix's last folder (`kb` of s3://bucket/kb), else the bucket or the host.
    name = _name(origin.rstrip("/").rpartition("/")[2].partition(":")[0])
    target = Target(
        file=str(output),
        source=origin,
        allow_outside=False,
        exclude=[],
        schema=(SCHEMA_FOLDER / PIPELINE_SCHEMA_FILE).as_posix(),
        name=name,
        collection=_collection(name),
        remote={"type": block.type, "parameters": block.parameters},
        whole=whole,
    )
    return _write(found, target, output, store, model, overwrite=overwrite, where=url)


def _refuse_existing(output: Path, overwrite: bool) -> None:
    if output.exists() and not overwrite:
        raise InitRefused(
            f"{output} exists; init never overwrites a file unless --force: move it, name "
            "another with --output, or pass --force to replace it"
        )


def _write(
    found: FolderSurvey,
    target: Target,
    output: Path,
    store: Store,
    model: Model,
    *,
    overwrite: bool,
    where: str,
) -> Written:
    registry = default_registry()
    empty = "the listing" if target.remote is not None else "the folder"
    draft = choose(found, store, model, registry)
    if target.remote is not None:  # the source kind's own client (obstore for s3)
        draft.extras.update(registry.get("source", target.remote["type"]).cls.requires.values())
    if found.files == sum(found.counts[t] for t in draft.unread):
        raise InitRefused(
            f"{where}: no file a parser reads"
            + (f" ({found.files} of other types)" if found.files else f" ({empty} is empty)")
        )
    text = render(draft, found, target)
    output.parent.mkdir(parents=True, exist_ok=True)
    # "x": never over a file made meanwhile, unless asked to replace one.
    with open(output, "w" if overwrite else "x", encoding="utf-8") as file:
        file.write(text)
    schemas = output.parent / SCHEMA_FOLDER
    write_schemas(registry, schemas)
    return Written(output, schemas, found, draft, target)


def _name(folder_name: str) -> str:
    """The knowledge base's name: the folder's, made a valid name."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", folder_name).strip("-._")
    return name if re.fullmatch(NAME_PATTERN, name) else "docs"


def _collection(name: str) -> str:
    """A collection name every store takes: letters, digits and underscores, not a digit first."""
    collection = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return collection if collection[:1].isalpha() else f"kb_{collection}"
