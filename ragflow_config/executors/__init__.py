"""Executors: where a run parses its files (this machine's processes, or a Ray cluster)."""

from .base import ExecutorBase, Prepared, StartedExecutor
from .local import LocalExecutor

__all__ = ["ExecutorBase", "LocalExecutor", "Prepared", "StartedExecutor"]
