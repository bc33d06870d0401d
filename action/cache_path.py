"""Where the pipeline files keep their embedding cache, and the actions/cache key for it.

    python action/cache_path.py FILE [FILE ...]

Each file's ``embedding_cache.path`` (default ``.cache/embeddings`` when the block is
there, relative to the file's folder; no cache when the file has no ``embedding_cache``).
Writes to ``$GITHUB_OUTPUT`` (or prints, outside Actions):

- ``paths``: the folders, one a line (actions/cache's ``path`` input);
- ``key``: ``ragflow-config-embeddings-<RUNNER_OS>-<sha256 of the files>``;
- ``restore-key``: the key's prefix, so a changed file starts from the last cache
  (entries are keyed by model and text inside the cache, so old ones stay valid);
- ``enabled``: ``true`` when some file has a cache.

It reads the files with the package's own YAML loader (``${VAR}`` values included),
so it runs after the action's install step. A file it cannot read has no cache (a
warning): the commands report it. Exit 2 for a usage error.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

PREFIX = "ragflow-config-embeddings"
DEFAULT_PATH = ".cache/embeddings"


def cache_folder(file: Path) -> Path | None:
    """The file's embedding cache folder, or None when it keeps none (or cannot be read)."""
    from ragflow_config.pipeline._yaml import load_yaml

    data, _, issues = load_yaml(file, str(file))
    if issues or not isinstance(data, dict):
        for issue in issues:
            print(f"warning: {issue}; no embedding cache for {file}", file=sys.stderr)
        return None
    block = data.get("embedding_cache")
    if not isinstance(block, dict):
        return None
    path = block.get("path", DEFAULT_PATH)
    if not isinstance(path, str) or not path:
        return None
    return (file.parent / Path(path).expanduser()).resolve()


def cache_key(files: list[Path], runner_os: str) -> tuple[str, str]:
    """The cache key (by the files' bytes, in the order given) and its restore prefix."""
    digest = hashlib.sha256()
    for file in files:
        digest.update(str(file).encode() + b"\0" + file.read_bytes() + b"\0")
    prefix = f"{PREFIX}-{runner_os}-"
    return prefix + digest.hexdigest()[:32], prefix


def write_outputs(outputs: dict[str, str]) -> None:
    """To $GITHUB_OUTPUT (multi-line values in its heredoc form), else to stdout."""
    target = os.environ.get("GITHUB_OUTPUT")
    lines = []
    for name, value in outputs.items():
        if "\n" in value:
            delimiter = f"ragflow_config_{hashlib.sha256(value.encode()).hexdigest()[:16]}"
            lines.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
        else:
            lines.append(f"{name}={value}\n")
    if target:
        with open(target, "a", encoding="utf-8") as out:
            out.writelines(lines)
    else:
        sys.stdout.writelines(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or any(arg.startswith("-") for arg in args):
        print("usage: cache_path.py FILE [FILE ...]", file=sys.stderr)
        return 2
    # A missing file is the commands' to report (in the summary and the PR comment): here
    # it only has no cache.
    files = []
    for arg in args:
        if Path(arg).is_file():
            files.append(Path(arg))
        else:
            print(
                f"warning: no such pipeline file: {arg}; no embedding cache for it", file=sys.stderr
            )
    folders: list[str] = []
    for file in files:
        folder = cache_folder(file)
        if folder is not None and str(folder) not in folders:
            folders.append(str(folder))
    key, prefix = cache_key(files, os.environ.get("RUNNER_OS", "local"))
    write_outputs(
        {
            "enabled": "true" if folders else "false",
            "paths": "\n".join(folders),
            "key": key,
            "restore-key": prefix,
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
