"""Store plugins that kill their own process, installed as a third-party package would be.

A ``*.dist-info`` with an entry point, on ``PYTHONPATH``: the run under test
finds the plugin the way it finds any store, and nothing in the project
knows it is being tested. ``install_killing_stores`` wraps the four embedded
stores (Qdrant Edge, Qdrant local, Milvus Lite, pgvector) in one ``killing(base)`` class
factory, for tests that kill the same way on each of them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

__all__ = ["KILLING_STORES", "install_killing_stores", "install_plugin", "run_killed"]

# store type: (its class, its parameters in a pipeline file; {folder} is a folder of its own)
_EMBEDDED = {
    "qdrant_edge": ("QdrantEdgeStore", "path: {folder}/edge"),
    "qdrant": ("QdrantStore", "path: {folder}/qdrant"),
    "milvus_lite": ("MilvusLiteStore", "uri: {folder}/milvus.db"),
    "pgvector": ("PgVectorStore", ""),
}
# store type: (the type its killing plugin registers, its parameters in a pipeline file)
KILLING_STORES = {store: (f"killing_{store}", params) for store, (_, params) in _EMBEDDED.items()}

_PREAMBLE = """\
import os
import signal
from pathlib import Path

from ragflow_config.rag import MilvusLiteStore, PgVectorStore, QdrantEdgeStore, QdrantStore

"""


def install_plugin(root: Path, module: str, source: str, stores: dict[str, str]) -> Path:
    """Write ``module`` with ``source`` and register ``stores`` (type name -> class name)."""
    (root / f"{module}.py").write_text(source, encoding="utf-8")
    info = root / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 0.1\n"
    )
    (info / "entry_points.txt").write_text(
        "[ragflow_config.vector_stores]\n"
        + "".join(f"{name} = {module}:{cls}\n" for name, cls in stores.items())
    )
    return root


def install_killing_stores(root: Path, module: str, killing: str) -> Path:
    """Install ``module``: ``killing`` defines ``killing(base)``, which returns a subclass of a
    store class that kills its process; it is registered over each of ``KILLING_STORES``.

    ``os``, ``signal`` and ``Path`` are imported for it."""
    made = "".join(f"Killing{cls} = killing({cls})\n" for cls, _ in _EMBEDDED.values())
    source = f"{_PREAMBLE}{textwrap.dedent(killing).strip()}\n\n\n{made}"
    types = {f"killing_{store}": f"Killing{cls}" for store, (cls, _) in _EMBEDDED.items()}
    return install_plugin(root, module, source, types)


def run_killed(pipeline: Path, plugin_path: Path, **environment: str) -> None:
    """``ragflow-config run`` in a process of its own, which must end killed by SIGKILL."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(plugin_path), os.environ.get("PYTHONPATH", "")]),
        **environment,
    }
    process = subprocess.run(
        [sys.executable, "-m", "ragflow_config.cli", "run", str(pipeline), "--workers", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert process.returncode == -signal.SIGKILL, (
        f"the run was not killed: exit {process.returncode}\n{process.stderr}"
    )
