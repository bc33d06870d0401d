"""A package's names imported on first use (PEP 562).

Python runs a package's ``__init__`` before any of its modules, so an
``__init__`` that imports every module makes ``import package._one`` import
them all. The command line's start-up (``--version``, ``validate`` in a
pre-commit hook) pays for that on every call; with this, a package exports its
names without importing their modules until one is used.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, modules: Mapping[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: each name of ``modules`` from its module
    (relative to the package), imported when first asked for and kept."""

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
