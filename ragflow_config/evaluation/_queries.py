"""Judged query sets: the model, and loading one from YAML, JSONL or TREC qrels + topics."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from .._errors import ConfigError, ConfigIssue, format_path
from ..pipeline._syntax import syntax_issue

Loc = tuple[int | str, ...]


class _Strict(BaseModel):
    # Numeric ids are common (TREC topics, JSONL exports); they are kept as text.
    model_config = ConfigDict(extra="forbid", frozen=True, coerce_numbers_to_str=True)


def normalize_text(text: str) -> str:
    """Case-folded, with every run of whitespace made one space: how passages are compared."""
    return " ".join(text.split()).casefold()


class Judgement(_Strict):
    """A source that answers a query, how well (``grade``), and optionally where (``passages``)."""

    source: str = Field(min_length=1, description="The chunk source (file) that is relevant.")
    grade: int = Field(default=1, ge=1, description="Graded relevance; higher is better.")
    passages: list[str] = Field(
        default_factory=list,
        description="When given, only chunks containing one of these count "
        "(case-insensitive, whitespace-normalised).",
    )

    @field_validator("passages")
    @classmethod
    def _no_blank_passage(cls, passages: list[str]) -> list[str]:
        if any(not normalize_text(passage) for passage in passages):
            raise ValueError("a passage must not be blank: it would match every chunk")
        return passages

    def matches(self, source: str, text: str) -> bool:
        """Whether a chunk of ``source`` with this ``text`` satisfies the judgement."""
        if source != self.source:
            return False
        if not self.passages:
            return True
        haystack = normalize_text(text)
        return any(normalize_text(passage) in haystack for passage in self.passages)


class JudgedQuery(_Strict):
    """A query and the judgements saying which sources answer it (none is allowed)."""

    id: str = Field(min_length=1)
    query: str = Field(min_length=1)
    relevant: list[Judgement]

    @field_validator("relevant", mode="before")
    @classmethod
    def _expand_shorthand(cls, value: Any) -> Any:
        # `relevant: [a.md, b.md]` is short for `[{source: a.md}, {source: b.md}]`.
        if isinstance(value, list):
            return [{"source": item} if isinstance(item, str) else item for item in value]
        return value

    @model_validator(mode="after")
    def _one_judgement_per_source(self) -> JudgedQuery:
        seen: set[str] = set()
        for judgement in self.relevant:
            if judgement.source in seen:
                raise ValueError(
                    f"source {judgement.source!r} is judged twice; give one judgement "
                    "with several passages instead"
                )
            seen.add(judgement.source)
        return self


class _QuerySet(_Strict):
    queries: list[JudgedQuery] = Field(min_length=1)


def load_queries(path: str | Path, topics: str | Path | None = None) -> list[JudgedQuery]:
    """Read a judged query set; raise :class:`ConfigError` naming the file and line of each problem.

    ``.yaml``/``.yml``: ``queries: [{id, query, relevant: [{source, grade, passages}]}]``.
    ``.jsonl``: one query object per line. Any other file is TREC qrels
    (``<qid> <iter> <docid> <rel>``), whose query texts come from ``topics``.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml", ".jsonl") and topics is not None:
        raise ConfigError(
            [
                _issue(
                    Path(topics),
                    1,
                    1,
                    f"a topics file is only used with TREC qrels, not {path.name}",
                )
            ]
        )
    if suffix in (".yaml", ".yml"):
        return _load_yaml(path)
    if suffix == ".jsonl":
        return _load_jsonl(path)
    if topics is None:
        raise ConfigError(
            [
                _issue(
                    path,
                    1,
                    1,
                    "read as TREC qrels (not .yaml, .yml or .jsonl), which needs a topics "
                    "file of query texts (`<qid> <text>` lines)",
                )
            ]
        )
    return _load_trec(path, Path(topics))


def _issue(file: Path, line: int, column: int, message: str, path: str = "") -> ConfigIssue:
    return ConfigIssue(str(file), line, column, path, message)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([_issue(path, 1, 1, f"cannot read: {exc.strerror}")]) from None
    except UnicodeDecodeError as exc:
        raise ConfigError([_issue(path, 1, 1, f"not UTF-8 text: {exc}")]) from None


def _messages(exc: ValidationError) -> Iterator[tuple[Loc, str]]:
    for error in exc.errors():
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown key"
        yield tuple(error["loc"]), message


def _check_unique_ids(
    queries: list[JudgedQuery], places: list[tuple[int, int]], path: Path
) -> list[ConfigIssue]:
    first: dict[str, int] = {}
    issues = []
    for index, query in enumerate(queries):
        if query.id in first:
            line, column = places[index]
            earlier = places[first[query.id]][0]
            issues.append(
                _issue(
                    path, line, column, f"duplicate query id {query.id!r} (first on line {earlier})"
                )
            )
        else:
            first[query.id] = index
    return issues


# --- YAML -------------------------------------------------------------------------------------


def _load_yaml(path: Path) -> list[JudgedQuery]:
    text = _read(path)
    try:
        document = YAML(typ="rt", pure=True).load(text)
    except MarkedYAMLError as exc:  # in the words pipeline files get
        raise ConfigError([syntax_issue(str(path), text, exc)]) from None
    except YAMLError as exc:
        raise ConfigError([_issue(path, 1, 1, f"YAML syntax: {exc}")]) from None
    if not isinstance(document, CommentedMap):
        raise ConfigError([_issue(path, 1, 1, "expected a mapping with a `queries` list")])
    try:
        queries = _QuerySet.model_validate(document).queries
    except ValidationError as exc:
        issues = [
            _issue(path, *_position(document, loc), message, format_path(loc))
            for loc, message in _messages(exc)
        ]
        raise ConfigError(issues) from None
    places = [_position(document, ("queries", index)) for index in range(len(queries))]
    issues = _check_unique_ids(queries, places, path)
    if issues:
        raise ConfigError(issues)
    return queries


def _position(document: Any, loc: Loc) -> tuple[int, int]:
    """1-based line and column of the deepest node along ``loc`` that exists in the file."""
    node, line, column = document, 0, 0
    for part in loc:
        if isinstance(node, CommentedMap) and part in node:
            line, column = node.lc.value(part)
        elif isinstance(node, CommentedSeq) and isinstance(part, int) and 0 <= part < len(node):
            line, column = node.lc.item(part)
        else:
            break
        node = node[part]
    return line + 1, column + 1


# --- JSONL ------------------------------------------------------------------------------------


def _load_jsonl(path: Path) -> list[JudgedQuery]:
    queries: list[JudgedQuery] = []
    places: list[tuple[int, int]] = []
    issues: list[ConfigIssue] = []
    for number, line in enumerate(_read(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            issues.append(_issue(path, number, exc.colno, f"not JSON: {exc.msg}"))
            continue
        try:
            queries.append(JudgedQuery.model_validate(data))
        except ValidationError as exc:
            issues += [
                _issue(path, number, 1, message, format_path(loc))
                for loc, message in _messages(exc)
            ]
            continue
        places.append((number, 1))
    if not issues and not queries:
        issues.append(_issue(path, 1, 1, "no queries: expected one JSON object per line"))
    issues += _check_unique_ids(queries, places, path)
    if issues:
        raise ConfigError(issues)
    return queries


# --- TREC -------------------------------------------------------------------------------------


def _load_trec(qrels: Path, topics: Path) -> list[JudgedQuery]:
    texts = _read_topics(topics)
    judgements: dict[str, list[Judgement]] = {}
    first_line: dict[str, int] = {}
    judged: dict[tuple[str, str], int] = {}
    issues: list[ConfigIssue] = []
    for number, line in enumerate(_read(qrels).splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 4:
            issues.append(
                _issue(
                    qrels,
                    number,
                    1,
                    f"expected `<qid> <iter> <docid> <rel>`, got {len(fields)} fields",
                )
            )
            continue
        qid, _iteration, docid, rel = fields
        try:
            grade = int(rel)
        except ValueError:
            issues.append(_issue(qrels, number, 1, f"relevance {rel!r} is not an integer"))
            continue
        if (qid, docid) in judged:
            issues.append(
                _issue(
                    qrels,
                    number,
                    1,
                    f"document {docid!r} is judged twice for query {qid!r} "
                    f"(first on line {judged[(qid, docid)]})",
                )
            )
            continue
        judged[(qid, docid)] = number
        first_line.setdefault(qid, number)
        # Grade 0 (and TREC's negative grades) mean "judged, not relevant": the
        # query exists, but the document is not one of its relevant sources.
        found = judgements.setdefault(qid, [])
        if grade > 0:
            found.append(Judgement(source=docid, grade=grade))
    for qid, number in first_line.items():
        if qid not in texts:
            issues.append(_issue(qrels, number, 1, f"query {qid!r} has no text in {topics}"))
    if not issues and not judgements:
        issues.append(
            _issue(qrels, 1, 1, "no judgements: expected `<qid> <iter> <docid> <rel>` lines")
        )
    if issues:
        raise ConfigError(issues)
    # Topics without judgements are left out, as trec_eval does.
    return [
        JudgedQuery(id=qid, query=texts[qid], relevant=relevant)
        for qid, relevant in judgements.items()
    ]


def _read_topics(topics: Path) -> dict[str, str]:
    """``<qid>\\t<text>`` or ``<qid> <text>`` lines, by query id."""
    texts: dict[str, str] = {}
    lines: dict[str, int] = {}
    issues: list[ConfigIssue] = []
    for number, line in enumerate(_read(topics).splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.strip().split(None, 1)
        if len(parts) != 2:
            issues.append(_issue(topics, number, 1, "expected `<qid> <text>`, found no text"))
        elif parts[0] in texts:
            issues.append(
                _issue(
                    topics,
                    number,
                    1,
                    f"duplicate query id {parts[0]!r} (first on line {lines[parts[0]]})",
                )
            )
        else:
            texts[parts[0]], lines[parts[0]] = parts[1].strip(), number
    if issues:
        raise ConfigError(issues)
    return texts
