"""Tabular and structured data files read as records: CSV rows, JSON array items, JSONL lines."""

from __future__ import annotations

import csv
import io
import json
from typing import Any, ClassVar

from pydantic import Field

from ..._document import Section
from ..._errors import ParserError
from ...message import TextBlock
from .text import TextParser

CSV = "text/csv"
JSON = "application/json"
JSONL = "application/x-ndjson"


class RecordsParser(TextParser):
    """CSV, JSON and JSON Lines files, one section per record.

    A record is a CSV row (the first row names the columns), an item of a
    JSON file's top-level array (a file holding one object is one record),
    or a JSON Lines line. Each is written as ``key: value`` lines, nested
    objects as dotted keys (``address.city: Paris``), lists of plain values
    joined with ``, ``; empty values are left out. ``metadata={"record": n}``
    counts records from 1 (for CSV, the data row after the header). A file
    that is not valid JSON (or a JSON Lines line that is not) raises
    :class:`ParserError` naming the line. Decoding is the ``text`` parser's.
    """

    supported_media_types: ClassVar[list[str]] = [CSV, JSON, JSONL]

    class Parameters(TextParser.Parameters):
        records_per_section: int = Field(
            default=1,
            ge=1,
            description="Consecutive records joined (a blank line between) into one section.",
        )
        delimiter: str = Field(
            default=",", min_length=1, max_length=1, description="The CSV column delimiter."
        )

    parameters: Parameters

    @classmethod
    def supported_extensions(cls) -> list[str]:
        return [".csv", ".json", ".jsonl", ".ndjson"]

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        (whole,) = await super().parse(file, filename)
        assert isinstance(whole.content, TextBlock)
        text = whole.content.text
        lowered = filename.lower()
        try:
            if lowered.endswith(".csv"):
                records = self._csv(text)
            elif lowered.endswith((".jsonl", ".ndjson")):
                records = _json_lines(text, filename)
            else:
                records = _json(text, filename)
            rendered = [(number, _render(record)) for number, record in enumerate(records, 1)]
        except RecursionError:  # json and the rendering both recurse into nested values
            raise ParserError(
                filename, "the JSON nests arrays or objects too deeply to read"
            ) from None
        except csv.Error as exc:
            raise ParserError(filename, f"not readable as CSV: {exc}") from None
        sections: list[Section] = []
        group = self.parameters.records_per_section
        rendered = [(number, text) for number, text in rendered if text]
        for start in range(0, len(rendered), group):
            batch = rendered[start : start + group]
            metadata: dict[str, Any] = {"record": batch[0][0]}
            if len(batch) > 1:
                metadata["last_record"] = batch[-1][0]
            sections.append(
                Section(
                    content=TextBlock(text="\n\n".join(text for _, text in batch)),
                    source=filename,
                    metadata=metadata,
                )
            )
        return sections

    def _csv(self, text: str) -> list[dict[str, Any]]:
        rows = list(csv.reader(io.StringIO(text), delimiter=self.parameters.delimiter))
        rows = [row for row in rows if any(cell.strip() for cell in row)]
        if not rows:
            return []
        header, *body = rows
        names = [name.strip() or f"column {index}" for index, name in enumerate(header, start=1)]
        records = []
        for row in body:
            record: dict[str, Any] = {}
            for index, cell in enumerate(row):
                name = names[index] if index < len(names) else f"column {index + 1}"
                record[name] = cell
            records.append(record)
        return records


def _json(text: str, filename: str) -> list[Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParserError(filename, f"not valid JSON at line {exc.lineno}: {exc.msg}") from None
    return value if isinstance(value, list) else [value]


def _json_lines(text: str, filename: str) -> list[Any]:
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise ParserError(filename, f"line {number} is not valid JSON: {exc.msg}") from None
    return records


def _render(record: Any) -> str:
    if not isinstance(record, dict):
        return _scalar(record)
    lines: list[str] = []
    _flatten(record, "", lines)
    return "\n".join(lines)


def _flatten(value: dict[str, Any], prefix: str, lines: list[str]) -> None:
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, dict):
            _flatten(item, name + ".", lines)
            continue
        text = _scalar(item)
        if text:
            lines.append(f"{name}: {text}")


def _scalar(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list) and all(not isinstance(v, dict | list) for v in value):
        return ", ".join(text for text in map(_scalar, value) if text)
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False)
