"""The ``ragflow-config`` command: a thin layer over the Python API.

One module per group of commands; ``_main`` assembles them and owns what
every command shares: error reporting, ``--json`` and exit codes.
"""

from __future__ import annotations

from ._main import main

__all__ = ["main"]
