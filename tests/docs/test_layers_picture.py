"""The picture of the layers in docs/development.md is the import-linter contract's.

``lint-imports`` enforces ``[tool.importlinter]``'s ``layers`` and ``rag-layers``
contracts; the Mermaid picture on the development page is drawn from the same
lists, so a layer added, moved or renamed in ``pyproject.toml`` fails here until
the picture is redrawn: ``python tests/docs/test_layers_picture.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # the dev extra installs tomli there
    import tomli as tomllib

REPO = Path(__file__).parents[2]
PAGE = REPO / "docs" / "development.md"
MARKER = "<!-- generated from [tool.importlinter] by tests/docs/test_layers_picture.py -->"


def contracts() -> dict[str, list[list[str]]]:
    """Each layers contract's rows, top first, each row's modules in the contract's order."""
    tool = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    return {
        contract["id"]: [[name.strip() for name in row.split("|")] for row in contract["layers"]]
        for contract in tool["importlinter"]["contracts"]
        if contract["type"] == "layers"
    }


def picture() -> str:
    """The Mermaid flowchart of the package's layers, ``rag``'s own drawn inside it."""
    layers = contracts()
    lines = ["flowchart TB"]
    for number, row in enumerate(layers["layers"]):
        lines += [f'  subgraph layer{number}[" "]', "    direction LR"]
        for name in row:
            if name == "rag":
                lines += _rag(layers["rag-layers"])
            else:
                lines.append(f'    m_{name}["{name}"]')
        lines.append("  end")
    chain = " --> ".join(f"layer{number}" for number in range(len(layers["layers"])))
    lines.append(f"  {chain}")
    return "\n".join(lines) + "\n"


def _rag(rows: list[list[str]]) -> list[str]:
    lines = ['    subgraph m_rag["rag"]', "      direction TB"]
    for number, row in enumerate(rows):
        lines += [f'      subgraph rag{number}[" "]', "        direction LR"]
        lines += [f'        rag_{name}["{name}"]' for name in row]
        lines.append("      end")
    chain = " --> ".join(f"rag{number}" for number in range(len(rows)))
    return [*lines, f"      {chain}", "    end"]


def drawn(page: str) -> str:
    """The Mermaid block right after the marker on ``page``."""
    assert MARKER in page, f"{PAGE.name} lost its marker {MARKER}"
    after = page.split(MARKER, 1)[1].lstrip("\n")
    assert after.startswith("```mermaid\n"), "the marker must stand right above a mermaid block"
    return after.removeprefix("```mermaid\n").split("```\n", 1)[0]


def redraw() -> None:
    page = PAGE.read_text(encoding="utf-8")
    old = f"{MARKER}\n\n```mermaid\n{drawn(page)}```\n"
    assert old in page, "keep one blank line between the marker and the block"
    PAGE.write_text(page.replace(old, f"{MARKER}\n\n```mermaid\n{picture()}```\n"), "utf-8")


def test_the_picture_draws_the_layers_the_contract_enforces() -> None:
    assert drawn(PAGE.read_text(encoding="utf-8")) == picture(), (
        "docs/development.md's layers picture differs from [tool.importlinter]; "
        "redraw it with: python tests/docs/test_layers_picture.py"
    )


def test_every_module_of_the_contract_is_a_node_once() -> None:
    picture_text = picture()
    for contract, prefix in (("layers", "m_"), ("rag-layers", "rag_")):
        for row in contracts()[contract]:
            for name in row:
                assert picture_text.count(f'{prefix}{name}["{name}"]') == 1, name


if __name__ == "__main__":
    redraw()
    sys.exit(0)
