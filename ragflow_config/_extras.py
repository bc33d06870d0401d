"""Imports of optional dependencies, with an error that names the extra to install."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Mapping
from types import ModuleType

from ._errors import MissingExtraError
from ._gc import collector_paused


def require(module: str, extra: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingExtraError` naming ``extra``.

    The cyclic garbage collector is paused for the import. A library's import
    makes thousands of objects that all live on (``qdrant_client`` builds 343
    Pydantic models), so the passes it triggers meanwhile, each longer than the
    last, find nothing to free: they were about 0.1 CPU-s of a 1.3-1.5 CPU-s
    `search` on Qdrant local.
    """
    imported = sys.modules.get(module)
    if imported is not None:  # the usual call, in a parse or a search: no pause to pay for
        return imported
    try:
        with collector_paused():
            return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f"{module!r} is not installed; install it with: {install_line({extra})}"
        ) from exc


def missing(requires: Mapping[str, str]) -> dict[str, str]:
    """The modules of ``requires`` (module -> extra) that are not installed, without importing any."""
    absent = {}
    for module, extra in requires.items():
        try:
            found = importlib.util.find_spec(module) is not None
        except ImportError:  # its parent package is missing
            found = False
        if not found:
            absent[module] = extra
    return absent


def install_line(extras: set[str]) -> str:
    """The one command that installs every extra named."""
    return f"pip install 'ragflow-config[{','.join(sorted(extras))}]'"
