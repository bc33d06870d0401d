"""The registry of component types, filled from entry points.

Built-in components register through the same entry-point groups as
third-party packages, so a plugin's parser or store appears in the generated
schema and the CLI without an edit here.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from importlib.metadata import EntryPoint, entry_points
from typing import Literal

from pydantic import BaseModel

from .._component import Component
from .._errors import RagflowError

logger = logging.getLogger("ragflow_config.registry")

Kind = Literal[
    "parser",
    "chunker",
    "embedding",
    "vector_store",
    "chat_model",
    "middleware",
    "executor",
    "reranker",
    "source",
]

ENTRY_POINT_GROUPS: dict[Kind, str] = {
    "parser": "ragflow_config.parsers",
    "chunker": "ragflow_config.chunkers",
    "embedding": "ragflow_config.embeddings",
    "vector_store": "ragflow_config.vector_stores",
    "chat_model": "ragflow_config.chat_models",
    "middleware": "ragflow_config.middlewares",
    "executor": "ragflow_config.executors",
    "reranker": "ragflow_config.rerankers",
    "source": "ragflow_config.sources",
}
KINDS: tuple[Kind, ...] = tuple(ENTRY_POINT_GROUPS)
# This project's distribution: its entry points are the built-in types.
DISTRIBUTION = "ragflow-config"


class UnknownTypeError(RagflowError, LookupError):
    """A pipeline (or `run --executor`) names a type no installed package registers."""

    def __init__(self, kind: Kind, name: str, known: list[str]) -> None:
        self.kind = kind
        self.name = name
        self.known = known
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        listing = ", ".join(known) or "none"
        super().__init__(f"unknown {kind} type {name!r} (registered: {listing}){hint}")


@dataclass(frozen=True)
class ComponentType:
    """A registered type: its name, its class, and the model of its parameters."""

    kind: Kind
    name: str
    cls: type[Component]
    distribution: str | None

    @property
    def parameters_model(self) -> type[BaseModel]:
        return self.cls.Parameters

    @property
    def description(self) -> str:
        doc = (self.cls.__doc__ or "").strip()
        return doc.split("\n\n", 1)[0].replace("\n", " ")


class Registry:
    """Component types by kind and name.

    Filled from entry points, a type's module is imported when the type is first
    asked for by name: `validate` of a file that names a Qdrant store and the
    hashing model imports those two, not DashScope's client or every parser's
    library. Listing a kind (`names`, `types`) imports every type of it.

    The built-in types come from this project's own metadata. Every installed
    distribution's is read (a scan of all of them) only when a name is not a
    built-in or a kind is listed: then a plugin reusing a built-in name is
    skipped, with a warning.
    """

    def __init__(self) -> None:
        self._types: dict[Kind, dict[str, ComponentType]] = {
            kind: {} for kind in ENTRY_POINT_GROUPS
        }
        # Entry points not imported yet, by kind and name; built-in ones first.
        self._pending: dict[Kind, dict[str, list[EntryPoint]]] = {
            kind: {} for kind in ENTRY_POINT_GROUPS
        }
        # The built-in entry points already pending, while the other distributions are unread;
        # None once read (or for a registry filled by hand).
        self._built_in: set[EntryPoint] | None = None

    @classmethod
    def from_entry_points(cls) -> Registry:
        """Every installed package's types; a plugin that fails to load is skipped with a
        warning when its type is first asked for.

        Built-in types load first, so a plugin reusing one of their names is the one skipped.
        """
        registry = cls()
        try:
            own = metadata.distribution(DISTRIBUTION).entry_points
        except metadata.PackageNotFoundError:  # a source tree not installed: all from the scan
            own = metadata.EntryPoints(())
        for kind, group in ENTRY_POINT_GROUPS.items():
            registry._add(kind, own.select(group=group))
        registry._built_in = set(own)
        return registry

    def _add(self, kind: Kind, entries: Iterable[EntryPoint]) -> None:
        for entry in sorted(entries, key=_third_party):
            self._pending[kind].setdefault(entry.name, []).append(entry)

    def _discover(self) -> None:
        """Read every installed distribution's entry points, once; the built-in ones are
        already pending (or loaded)."""
        if self._built_in is None:
            return
        built_in, self._built_in = self._built_in, None
        installed = entry_points()  # one read of every distribution's metadata, not one per group
        for kind, group in ENTRY_POINT_GROUPS.items():
            self._add(kind, (e for e in installed.select(group=group) if e not in built_in))

    def _find(self, kind: Kind, name: str) -> None:
        """Load the type ``name``; when no built-in one loads, read the other distributions."""
        self._load(kind, name)
        if name not in self._types[kind]:
            self._discover()
            self._load(kind, name)

    def _load(self, kind: Kind, name: str) -> None:
        for entry in self._pending[kind].pop(name, []):
            distribution = entry.dist.name if entry.dist else None
            try:
                self._put(kind, entry.name, entry.load(), distribution=distribution)
            except Exception as exc:  # a broken plugin must not take the others down
                logger.warning(
                    "skipping %s type %r from %s: %s: %s",
                    kind,
                    entry.name,
                    entry.value,
                    type(exc).__name__,
                    exc,
                )

    def register(
        self, kind: Kind, name: str, component: type[Component], *, distribution: str | None = None
    ) -> None:
        self._find(kind, name)  # an entry point of the same name comes first
        self._put(kind, name, component, distribution=distribution)

    def _put(
        self, kind: Kind, name: str, component: type[Component], *, distribution: str | None
    ) -> None:
        if not (isinstance(component, type) and issubclass(component, Component)):
            raise TypeError(f"{kind} type {name!r}: {component!r} is not a Component subclass")
        chunker_type = getattr(component, "chunker_type", None)
        if kind == "chunker" and chunker_type != name:
            raise ValueError(
                f"chunker {component.__name__} has chunker_type {chunker_type!r} "
                f"but is registered as {name!r}"
            )
        existing = self._types[kind].get(name)
        if existing is not None and existing.cls is not component:
            raise ValueError(
                f"{kind} type {name!r} is registered twice: by {existing.distribution} "
                f"({existing.cls.__module__}) and by {distribution} ({component.__module__})"
            )
        self._types[kind][name] = ComponentType(kind, name, component, distribution)

    def names(self, kind: Kind) -> list[str]:
        self._discover()
        for name in list(self._pending[kind]):
            self._load(kind, name)
        return sorted(self._types[kind])

    def types(self, kind: Kind) -> list[ComponentType]:
        return [self._types[kind][name] for name in self.names(kind)]

    def get(self, kind: Kind, name: str) -> ComponentType:
        self._find(kind, name)
        try:
            return self._types[kind][name]
        except KeyError:
            raise UnknownTypeError(kind, name, self.names(kind)) from None

    def only(self, wanted: Iterable[tuple[Kind, object]]) -> Registry:
        """The types named in ``wanted`` that exist, importing only those: what the
        check of one pipeline file needs (its schema and its blocks' parameters)."""
        subset = Registry()
        for kind, name in wanted:
            if self.has(kind, name):
                subset._types[kind][str(name)] = self._types[kind][str(name)]
        return subset

    def has(self, kind: Kind, name: object) -> bool:
        """Whether ``name`` is a type of ``kind`` that loads, importing that type only."""
        if not isinstance(name, str):
            return False
        self._find(kind, name)
        return name in self._types[kind]


def _third_party(entry: EntryPoint) -> bool:
    return entry.module.partition(".")[0] != __name__.partition(".")[0]


_default: Registry | None = None


def default_registry() -> Registry:
    """The registry of every installed package's entry points, loaded once."""
    global _default
    if _default is None:
        _default = Registry.from_entry_points()
    return _default
