"""Each parser names the modules it imports (its worker processes import them up front)."""

from __future__ import annotations

import importlib

import pytest

from ragflow_config.pipeline._registry import default_registry

PARSERS = {entry.name: entry.cls for entry in default_registry().types("parser")}


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_a_parsers_required_modules_import(name: str) -> None:
    for module in PARSERS[name].requires:
        importlib.import_module(module)


def test_office_pdf_and_image_parsers_name_their_modules() -> None:
    named = {name for name, parser in PARSERS.items() if parser.requires}
    assert named >= {"pdf", "docx", "pptx", "excel", "image"}
