"""The README and the site's pages, and the code blocks in them.

A block is run or validated unless the line before its fence is a marker saying
why not, so nothing is skipped silently:

- ``<!-- not run: why -->`` before a Python block that cannot run as a script;
- ``<!-- pipeline fragment: knowledge_base -->`` before YAML that holds keys of a
  knowledge base, ``<!-- pipeline fragment: pipeline -->`` before YAML that holds
  top-level keys: each is validated inside a minimal pipeline file;
- ``<!-- not a pipeline: why -->`` before YAML that is no pipeline file (a workflow)
  or cannot be validated as one.

Any other YAML block must be a whole pipeline file, and is validated as one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).parents[2]
DOCS = REPO / "docs"
README = REPO / "README.md"


def pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    language: str
    code: str
    marker: str | None  # the text of a marker comment just before the fence

    def __str__(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


_FENCE = re.compile(
    r"^(?P<indent> *)```(?P<language>\w*)\n(?P<code>.*?)^(?P=indent)```$", re.M | re.S
)
_MARKER = re.compile(r"<!--\s*(.*?)\s*-->\s*$")


def blocks(language: str) -> list[Block]:
    found = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        for match in _FENCE.finditer(text):
            if match["language"] != language:
                continue
            before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            marker = _MARKER.search(before)
            code = "".join(line[len(match["indent"]) :] for line in match["code"].splitlines(True))
            line = text.count("\n", 0, match.start()) + 1
            found.append(Block(page, line, language, code, marker[1] if marker else None))
    return found
