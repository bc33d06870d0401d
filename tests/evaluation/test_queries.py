"""Loading judged query sets: YAML, JSONL and TREC qrels + topics, and their errors by file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragflow_config import ConfigError
from ragflow_config.evaluation import JudgedQuery, Judgement, load_queries
from ragflow_config.evaluation._queries import normalize_text

SAMPLE = Path(__file__).parents[2] / "pipelines" / "eval" / "local-queries.yaml"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def issues(error: pytest.ExceptionInfo[ConfigError]) -> list[str]:
    return [str(issue) for issue in error.value.issues]


# --- YAML -----------------------------------------------------------------------------------


def test_sample_query_set_loads() -> None:
    queries = load_queries(SAMPLE)
    assert len(queries) == 30
    assert [q.id for q in queries][:3] == ["q1", "q2", "q3"]
    assert queries[7].relevant == [
        Judgement(source="howto/unicode.rst", grade=3, passages=['decode("utf-8", "replace")']),
        Judgement(source="faq/programming.txt", grade=1),
    ]


def test_yaml_shorthand_numeric_ids_and_empty_relevant(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "q.yml",
        "queries:\n"
        "  - id: 1\n"
        "    query: cats\n"
        "    relevant: [cats.md, {source: pets.md, grade: 2}]\n"
        "  - {id: 2, query: unicorns, relevant: []}\n",
    )
    assert load_queries(path) == [
        JudgedQuery(
            id="1",
            query="cats",
            relevant=[Judgement(source="cats.md"), Judgement(source="pets.md", grade=2)],
        ),
        JudgedQuery(id="2", query="unicorns", relevant=[]),
    ]


def test_yaml_errors_name_file_line_and_path(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "q.yaml",
        "queries:\n"  # 1
        "  - id: a\n"  # 2
        "    relevant: [x.md]\n"  # 3
        "  - id: b\n"  # 4
        "    query: fine\n"  # 5
        "    relevant:\n"  # 6
        "      - source: x.md\n"  # 7
        "        grade: 0\n"  # 8
        "        passages: ['  ']\n"  # 9
        "    weight: 2\n",  # 10
    )
    with pytest.raises(ConfigError) as error:
        load_queries(path)
    assert issues(error) == [
        f"{path}:2:5: queries[0].query: Field required",
        f"{path}:8:16: queries[1].relevant[0].grade: Input should be greater than or equal to 1",
        f"{path}:9:19: queries[1].relevant[0].passages: "
        "a passage must not be blank: it would match every chunk",
        f"{path}:10:13: queries[1].weight: unknown key",
    ]


def test_yaml_duplicate_ids_and_sources(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "q.yaml",
        "queries:\n"
        "  - {id: a, query: one, relevant: [x.md]}\n"
        "  - {id: b, query: two, relevant: [x.md, y.md]}\n"
        "  - {id: a, query: three, relevant: [y.md]}\n",
    )
    with pytest.raises(ConfigError) as error:
        load_queries(path)
    assert issues(error) == [f"{path}:4:5: duplicate query id 'a' (first on line 2)"]
    write(tmp_path, "q.yaml", "queries:\n  - {id: a, query: one, relevant: [x.md, x.md]}\n")
    with pytest.raises(
        ConfigError, match=r"q\.yaml:2:5: queries\[0\]: source 'x.md' is judged twice"
    ):
        load_queries(path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("queries:\n  - {id: a\n", r"q\.yaml:2:5: YAML syntax: the \{\.\.\.\} that opens here .*"),
        (
            "- {id: a, query: b, relevant: []}\n",
            r"q\.yaml:1:1: expected a mapping with a `queries`",
        ),
        ("", r"q\.yaml:1:1: expected a mapping"),
        ("queries: []\n", r"q\.yaml:1:10: queries: List should have at least 1 item"),
    ],
)
def test_yaml_shape_errors(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected):
        load_queries(write(tmp_path, "q.yaml", text))


def test_unreadable_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing\.yaml:1:1: cannot read"):
        load_queries(tmp_path / "missing.yaml")
    (tmp_path / "latin1.jsonl").write_bytes(b'{"id": "caf\xe9"}\n')
    with pytest.raises(ConfigError, match=r"latin1\.jsonl:1:1: not UTF-8"):
        load_queries(tmp_path / "latin1.jsonl")


def test_topics_only_go_with_qrels(tmp_path: Path) -> None:
    topics = write(tmp_path, "topics.tsv", "1\tcats\n")
    with pytest.raises(ConfigError, match=r"topics\.tsv:1:1: a topics file is only used with TREC"):
        load_queries(SAMPLE, topics)


# --- JSONL ----------------------------------------------------------------------------------


def test_jsonl_one_query_per_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "q.jsonl",
        '{"id": "a", "query": "cats", "relevant": [{"source": "cats.md", "passages": ["purr"]}]}\n'
        "\n"
        '{"id": 7, "query": "dogs", "relevant": ["dogs.md"]}\n',
    )
    assert load_queries(path) == [
        JudgedQuery(
            id="a", query="cats", relevant=[Judgement(source="cats.md", passages=["purr"])]
        ),
        JudgedQuery(id="7", query="dogs", relevant=[Judgement(source="dogs.md")]),
    ]


def test_jsonl_errors_name_each_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "q.jsonl",
        '{"id": "a", "query": "cats", "relevant": []}\n'  # 1: fine
        '{"id": "b", "relevant": []}\n'  # 2: no query
        "{'id': 'c'}\n"  # 3: not JSON
        '{"id": "a", "query": "again", "relevant": []}\n'  # 4: duplicate id
        '["not", "an", "object"]\n',  # 5
    )
    with pytest.raises(ConfigError) as error:
        load_queries(path)
    assert issues(error) == [
        f"{path}:2:1: query: Field required",
        f"{path}:3:2: not JSON: Expecting property name enclosed in double quotes",
        f"{path}:5:1: Input should be a valid dictionary or instance of JudgedQuery",
        f"{path}:4:1: duplicate query id 'a' (first on line 1)",
    ]


def test_empty_jsonl_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"q\.jsonl:1:1: no queries"):
        load_queries(write(tmp_path, "q.jsonl", "\n\n"))


# --- TREC qrels + topics --------------------------------------------------------------------


def test_qrels_with_topics(tmp_path: Path) -> None:
    qrels = write(
        tmp_path,
        "qrels.txt",
        "301 0 FT911-3 1\n"
        "301 0 FT911-7 0\n"  # judged, not relevant
        "301 0 LA0101-9 2\n"
        "\n"
        "302\t0\tFBIS3-1\t0\n"  # judged, nothing relevant
        "303 Q0 FR940104 -1\n",  # negative grades are not relevant either
    )
    topics = write(
        tmp_path,
        "topics.txt",
        "301\tInternational Organized Crime\n"
        "302 Poliomyelitis and Post-Polio\n"
        "303   Hubble Telescope Achievements  \n"
        "304\tnever judged\n",
    )
    assert load_queries(qrels, topics) == [
        JudgedQuery(
            id="301",
            query="International Organized Crime",
            relevant=[Judgement(source="FT911-3"), Judgement(source="LA0101-9", grade=2)],
        ),
        JudgedQuery(id="302", query="Poliomyelitis and Post-Polio", relevant=[]),
        JudgedQuery(id="303", query="Hubble Telescope Achievements", relevant=[]),
    ]  # 304 has no judgements and is left out, as trec_eval does


def test_qrels_without_topics_is_an_error(tmp_path: Path) -> None:
    qrels = write(tmp_path, "qrels.test", "1 0 d1 1\n")
    with pytest.raises(ConfigError, match=r"qrels\.test:1:1: read as TREC qrels .* needs a topics"):
        load_queries(qrels)


def test_qrels_errors_name_each_line(tmp_path: Path) -> None:
    qrels = write(
        tmp_path,
        "qrels.txt",
        "1 0 d1 1\n"  # 1
        "1 0 d2\n"  # 2: three fields
        "1 0 d3 high\n"  # 3
        "1 0 d1 2\n"  # 4: judged twice
        "9 0 d1 1\n",  # 5: no topic
    )
    topics = write(tmp_path, "topics.txt", "1 cats\n")
    with pytest.raises(ConfigError) as error:
        load_queries(qrels, topics)
    assert issues(error) == [
        f"{qrels}:2:1: expected `<qid> <iter> <docid> <rel>`, got 3 fields",
        f"{qrels}:3:1: relevance 'high' is not an integer",
        f"{qrels}:4:1: document 'd1' is judged twice for query '1' (first on line 1)",
        f"{qrels}:5:1: query '9' has no text in {topics}",
    ]


def test_topics_errors(tmp_path: Path) -> None:
    qrels = write(tmp_path, "qrels.txt", "1 0 d1 1\n")
    topics = write(tmp_path, "topics.txt", "1 cats\n2\n1 dogs\n")
    with pytest.raises(ConfigError) as error:
        load_queries(qrels, topics)
    assert issues(error) == [
        f"{topics}:2:1: expected `<qid> <text>`, found no text",
        f"{topics}:3:1: duplicate query id '1' (first on line 1)",
    ]
    empty = write(tmp_path, "empty.qrels", "\n")
    with pytest.raises(ConfigError, match=r"empty\.qrels:1:1: no judgements"):
        load_queries(empty, write(tmp_path, "topics.txt", "1 cats\n"))


def test_passages_compare_case_folded_with_whitespace_runs_as_one_space() -> None:
    assert normalize_text("  Read\n\tA  FILE ") == "read a file"
    judgement = Judgement(source="a.md", passages=["xx"])
    assert not judgement.matches("a.md", "a b")
    assert judgement.matches("a.md", "A XX b")


def test_a_judgement_matches_only_its_own_source() -> None:
    assert not Judgement(source="a.md").matches("b.md", "anything")
    assert not Judgement(source="a.md", passages=["cat"]).matches("b.md", "a cat")
    assert Judgement(source="a.md").matches("a.md", "anything")


def test_yaml_syntax_errors_are_said_as_for_pipeline_files(tmp_path: Path) -> None:
    alias = write(tmp_path, "alias.yaml", "queries: &x []\nother: *y\n")
    with pytest.raises(ConfigError) as error:
        load_queries(alias)
    assert issues(error) == [
        f"{alias}:2:8: YAML syntax: *y reads as a reference to an anchor &y, and none is "
        "defined above it: quote a value that starts with '*' (\"*y\")"
    ]
    flow = write(tmp_path, "flow.yaml", "queries: [a, b\n")
    with pytest.raises(ConfigError) as error:
        load_queries(flow)
    assert issues(error) == [
        f"{flow}:1:10: YAML syntax: the [...] that opens here is never closed (the file ends "
        "inside it): close it with ']'"
    ]


def test_a_control_character_is_a_yaml_error_at_the_start(tmp_path: Path) -> None:
    path = write(tmp_path, "bell.yaml", "queries: \x07\n")
    with pytest.raises(ConfigError) as error:
        load_queries(path)
    [message] = issues(error)
    assert message.startswith(f"{path}:1:1: YAML syntax: unacceptable character #x0007")


def test_a_missing_queries_key_is_reported_at_the_top(tmp_path: Path) -> None:
    path = write(tmp_path, "q.yaml", "other: 1\n")
    with pytest.raises(ConfigError) as error:
        load_queries(path)
    assert issues(error) == [
        f"{path}:1:1: queries: Field required",
        f"{path}:1:8: other: unknown key",
    ]


@pytest.mark.parametrize("name", ["q.yml", "q.YML", "q.jsonl", "q.JSONL"])
def test_topics_are_refused_with_yml_and_jsonl_files_too(tmp_path: Path, name: str) -> None:
    topics = write(tmp_path, "topics.tsv", "1\tcats\n")
    path = write(tmp_path, name, '{"id": "1", "query": "cats"}\n')
    with pytest.raises(ConfigError) as error:
        load_queries(path, topics)
    assert issues(error) == [
        f"{topics}:1:1: a topics file is only used with TREC qrels, not {name}"
    ]


def test_qrels_without_topics_says_what_the_topics_file_holds(tmp_path: Path) -> None:
    qrels = write(tmp_path, "qrels.test", "1 0 d1 1\n")
    with pytest.raises(ConfigError) as error:
        load_queries(qrels)
    assert issues(error) == [
        f"{qrels}:1:1: read as TREC qrels (not .yaml, .yml or .jsonl), which needs a topics "
        "file of query texts (`<qid> <text>` lines)"
    ]
    empty = write(tmp_path, "q.jsonl", "\n")
    with pytest.raises(ConfigError) as error:
        load_queries(empty)
    assert issues(error) == [f"{empty}:1:1: no queries: expected one JSON object per line"]


def test_blank_lines_in_topics_are_skipped_not_the_end(tmp_path: Path) -> None:
    qrels = write(tmp_path, "qrels.txt", "1 0 d1 1\n2 0 d2 1\n")
    topics = write(tmp_path, "topics.txt", "1 cats\n\n   \n2 dogs\n")
    assert [(q.id, q.query) for q in load_queries(qrels, topics)] == [("1", "cats"), ("2", "dogs")]
