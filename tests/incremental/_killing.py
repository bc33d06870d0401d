"""Store plugins that kill their own process, installed as a third-party package would be.

A ``*.dist-info`` with an entry point, on ``PYTHONPATH``: the run under test
finds the plugin the way it finds any store, and nothing in the project
knows it is being tested.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path


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
