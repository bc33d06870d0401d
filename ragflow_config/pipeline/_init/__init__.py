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

from ..._errors import RagflowError
from ...sources import source_escape
from .._registry import default_registry
from .._schema import PIPELINE_SCHEMA_FILE, write_schemas
from .._spec import NAME_PATTERN
from ._choose import MODELS, STORES, Draft, Model, Store, choose
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
    if output.exists() and not overwrite:
        raise InitRefused(
            f"{output} exists; init never overwrites a file unless --force: move it, name "
            "another with --output, or pass --force to replace it"
        )
    found = survey(folder, leave_out={output})
    registry = default_registry()
    draft = choose(found, store, model, registry)
    if found.files == sum(found.counts[t] for t in draft.unread):
        raise InitRefused(
            f"{folder}: no file a parser reads"
            + (f" ({found.files} of other types)" if found.files else " (the folder is empty)")
        )
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
    text = render(draft, found, target)
    home.mkdir(parents=True, exist_ok=True)
    # "x": never over a file made meanwhile, unless asked to replace one.
    with open(output, "w" if overwrite else "x", encoding="utf-8") as file:
        file.write(text)
    schemas = home / SCHEMA_FOLDER
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
