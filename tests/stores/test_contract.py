"""The contract every vector store keeps, run against each real store.

Each test takes ``case`` (a deployment: Qdrant in memory and on disk, Milvus
Lite, PostgreSQL + pgvector, and Elasticsearch / MongoDB when a server is
configured) and usually ``store``, that deployment entered with defaults.
"""

from __future__ import annotations

import asyncio
import math
import random
from typing import Any

import pytest

from ragflow_config import VectorStoreError
from ragflow_config._document import scope_key
from ragflow_config._errors import UnstorableDocumentError
from ragflow_config.message import TextBlock
from ragflow_config.rag import VectorRecord, VectorSearchResult, VectorStoreBase
from ragflow_config.rag._stores.base import matches_filter

from .conftest import StoreCase, make_record

DIMENSIONS = 8


def unit(index: int, dimensions: int = DIMENSIONS) -> list[float]:
    vector = [0.0] * dimensions
    vector[index] = 1.0
    return vector


def random_vector(rng: random.Random) -> list[float]:
    return [rng.uniform(-1.0, 1.0) for _ in range(DIMENSIONS)]


def keys(results: list[VectorSearchResult]) -> list[tuple[str, int]]:
    return [(r.document_id, r.chunk.chunk_index) for r in results]


async def counts(
    store: VectorStoreBase, collection: str, metadata_filter: dict[str, Any] | None = None
) -> dict[str, int]:
    summaries = await store.list_documents(collection, metadata_filter=metadata_filter)
    return {s.document_id: s.chunk_count for s in summaries}


async def test_collection_lifecycle(store: VectorStoreBase, collection: str) -> None:
    assert not await store.has_collection(collection)
    assert await store.collection_dimensions(collection) is None

    await store.create_collection(collection, DIMENSIONS)
    assert await store.has_collection(collection)
    assert await store.collection_dimensions(collection) == DIMENSIONS

    await store.create_collection(collection, 2 * DIMENSIONS)  # exists: a no-op
    assert await store.collection_dimensions(collection) == DIMENSIONS

    await store.delete_collection(collection)
    assert not await store.has_collection(collection)
    assert await store.collection_dimensions(collection) is None
    await store.delete_collection(collection)  # absent: a no-op


async def test_a_store_that_is_not_entered_says_so(case: StoreCase) -> None:
    store = case.open()
    with pytest.raises(VectorStoreError, match="not open"):
        await store.has_collection("anything")


# Query (1, 0, 0) against known vectors: (record vector, expected score), best first.
KNOWN_SCORES = {
    "cosine": [([2.0, 0.0, 0.0], 1.0), ([0.0, 3.0, 0.0], 0.0), ([-1.0, 0.0, 0.0], -1.0)],
    "dot": [([2.0, 0.0, 0.0], 2.0), ([0.0, 1.0, 0.0], 0.0), ([-1.0, 0.0, 0.0], -1.0)],
    "euclidean": [
        ([1.0, 0.0, 0.0], 0.0),
        ([1.0, 1.0, 0.0], -1.0),
        ([-1.0, 0.0, 0.0], -2.0),
        ([4.0, 0.0, 0.0], -3.0),
    ],
}


@pytest.mark.parametrize("distance", ["cosine", "dot", "euclidean"])
async def test_scores_of_known_vectors_are_on_the_common_scale(
    case: StoreCase, distance: str
) -> None:
    if distance not in case.distances:
        pytest.skip(f"{case.kind} does not offer the {distance} metric")
    collection = case.new_collection()
    expected = KNOWN_SCORES[distance]
    async with case.open(distance=distance) as store:
        await store.create_collection(collection, 3)
        await store.insert(
            collection,
            [make_record(f"doc-{i}", 0, vector) for i, (vector, _) in enumerate(expected)],
        )
        results = await store.search(collection, [1.0, 0.0, 0.0], top_k=len(expected))

    assert [r.document_id for r in results] == [f"doc-{i}" for i in range(len(expected))]
    for result, (_, score) in zip(results, expected, strict=True):
        assert result.score == pytest.approx(score, abs=1e-4)


async def test_search_returns_top_k_best_first(store: VectorStoreBase, collection: str) -> None:
    rng = random.Random(7)
    await store.create_collection(collection, DIMENSIONS)
    await store.insert(
        collection, [make_record("doc", i, random_vector(rng), total=300) for i in range(300)]
    )
    query = random_vector(rng)

    results = await store.search(collection, query, top_k=100)

    assert len(results) == 100
    assert len(set(keys(results))) == 100
    scores = [r.score for r in results]
    assert scores == sorted(scores, reverse=True)
    assert await store.search(collection, query, top_k=0) == []


async def test_top_k_with_a_filter_that_excludes_most_records(
    store: VectorStoreBase, collection: str
) -> None:
    # The five in scope point away from the query, so an index that filters
    # after its scan finds none of them among the nearest candidates.
    rng = random.Random(11)
    await store.create_collection(collection, DIMENSIONS)
    records = [
        make_record("hay", i, [1.0, *(rng.uniform(0, 0.1) for _ in range(7))], {"tenant": "hay"})
        for i in range(495)
    ]
    needles = [
        make_record(f"needle-{i}", 0, [-1.0, *random_vector(rng)[1:]], {"tenant": "needle"})
        for i in range(5)
    ]
    await store.insert(collection, records + needles)

    results = await store.search(collection, unit(0), top_k=5, metadata_filter={"tenant": "needle"})

    assert sorted(keys(results)) == sorted(keys(needles))  # type: ignore[arg-type]


def _filter_records() -> list[VectorRecord]:
    metadata: list[dict[str, Any]] = [
        {"tenant": "a", "org": {"team": "x", "unit": 1}, "n": 3, "flag": True, "ratio": 0.25},
        {"tenant": "a", "org": {"team": "y", "unit": 1}, "n": "3", "flag": 1, "ratio": 0.5},
        {"tenant": "b", "org": {"team": "x", "unit": 2}, "n": 4, "flag": False, "ratio": 0.25},
        {"tenant": "b", "kind": "no-org"},
    ]
    return [make_record(f"doc-{i}", 0, unit(i), meta) for i, meta in enumerate(metadata)]


FILTERS = [
    ({"tenant": "a"}, {"doc-0", "doc-1"}),
    ({"org": {"team": "x"}}, {"doc-0", "doc-2"}),
    ({"tenant": "a", "org": {"team": "x"}}, {"doc-0"}),
    ({"org": {"team": "x", "unit": 2}}, {"doc-2"}),
    ({"org": {"team": "y", "unit": 2}}, set()),
    ({"n": 3}, {"doc-0"}),  # the number 3, not the string "3"
    ({"n": "3"}, {"doc-1"}),
    ({"flag": True}, {"doc-0"}),  # a boolean, not the number 1
    ({"ratio": 0.25}, {"doc-0", "doc-2"}),
    ({"tenant": "c"}, set()),
]


@pytest.mark.parametrize(("metadata_filter", "expected"), FILTERS, ids=str)
async def test_nested_and_multi_key_filters(
    store: VectorStoreBase, collection: str, metadata_filter: dict[str, Any], expected: set[str]
) -> None:
    await store.create_collection(collection, DIMENSIONS)
    await store.insert(collection, _filter_records())

    found = await store.search(collection, unit(0), top_k=10, metadata_filter=metadata_filter)
    listed = await counts(store, collection, metadata_filter)

    assert {r.document_id for r in found} == expected
    assert set(listed) == expected


def _list_records() -> list[VectorRecord]:
    # List-valued metadata, as the Excel and PDF parsers emit (``sheets``, ``pages``).
    metadata: list[dict[str, Any]] = [
        {
            "tenant": "t",
            "sheets": ["Q1", "Q2"],
            "org": {"tags": ["a", "b"]},
            "nums": [1, 2.5],
            "mixed": ["x", 3, True],
        },
        {
            "tenant": "t",
            "sheets": ["Q3", "two lines", "two\nlines"],
            "org": {"tags": ["c"]},
            "nums": [True],
            "mixed": [False, "3", 4.0],
        },
        {"tenant": "u", "sheets": "Q1", "org": {"tags": "a"}, "nums": 1, "mixed": 3},
        {"tenant": "u", "sheets": [], "org": {"tags": []}, "nums": [], "mixed": [["x"]]},
    ]
    names = ["listed", "other", "scalar", "empty"]
    return [
        make_record(name, i, unit(i), meta, total=2)
        for name, meta in zip(names, metadata, strict=True)
        for i in range(2)
    ]


LIST_FILTERS = [
    ({"sheets": "Q1"}, {"listed", "scalar"}),  # a list holding it, and a scalar equal to it
    ({"sheets": "Q3"}, {"other"}),
    ({"sheets": "Q9"}, set()),  # no list holds it
    ({"sheets": "two\nlines"}, {"other"}),
    ({"org": {"tags": "a"}}, {"listed", "scalar"}),  # nested
    ({"org": {"tags": "c"}}, {"other"}),
    ({"nums": 1}, {"listed", "scalar"}),  # the number 1, not the boolean in [true]
    ({"nums": True}, {"other"}),  # a boolean, not the number 1
    ({"nums": 2.5}, {"listed"}),
    ({"mixed": 3}, {"listed", "scalar"}),  # not "3"
    ({"mixed": "3"}, {"other"}),
    ({"mixed": 4.0}, {"other"}),
    ({"mixed": 4}, {"other"}),  # the integer 4 equals 4.0
    ({"mixed": True}, {"listed"}),
    ({"mixed": False}, {"other"}),
    ({"mixed": "x"}, {"listed"}),  # not the list ["x"] inside a list
    ({"tenant": "t", "sheets": "Q1"}, {"listed"}),
    ({"tenant": "u"}, {"scalar", "empty"}),  # a scalar field: equality as before
]


@pytest.mark.parametrize(("metadata_filter", "expected"), LIST_FILTERS, ids=str)
def test_the_reference_filter_matches_a_list_that_holds_the_value(
    metadata_filter: dict[str, Any], expected: set[str]
) -> None:
    matched = {
        r.document_id for r in _list_records() if matches_filter(r.chunk.metadata, metadata_filter)
    }
    assert matched == expected


@pytest.mark.parametrize(("metadata_filter", "expected"), LIST_FILTERS, ids=str)
async def test_a_filter_value_matches_a_list_that_holds_it(
    store: VectorStoreBase, collection: str, metadata_filter: dict[str, Any], expected: set[str]
) -> None:
    await store.create_collection(collection, DIMENSIONS)
    records = _list_records()
    await store.insert(collection, records)
    everything = {r.document_id for r in records}

    found = await store.search(collection, unit(0), top_k=20, metadata_filter=metadata_filter)
    assert {r.document_id for r in found} == expected
    assert await counts(store, collection, metadata_filter) == dict.fromkeys(expected, 2)
    for document_id in everything:
        chunks = await store.list_chunks(collection, document_id, metadata_filter=metadata_filter)
        assert len(chunks) == (2 if document_id in expected else 0), document_id

    for document_id in everything:
        await store.delete(collection, document_id, metadata_filter=metadata_filter)
    assert set(await counts(store, collection)) == everything - expected


HOSTILE_VALUES = [
    "it's",
    'say "hi"',
    "back\\slash",
    "trailing\\",
    'escaped\\"quote',
    "dot.ted.value",
    "tab\there",
    "ünï😀",
    "%_*?",
    "$ne",
    '{"$gt": ""}',
    "a && b || c",
]
INJECTIONS = [
    '" or 1==1 or "',
    "' OR '1'='1",
    '") or metadata["label"] != ("',
    "x'); DROP TABLE users; --",
    "*",
    "%",
]


async def test_filter_values_are_data_never_syntax(store: VectorStoreBase, collection: str) -> None:
    await store.create_collection(collection, DIMENSIONS)
    records = [
        make_record(f"doc-{i}", 0, unit(i % DIMENSIONS), {"label": value})
        for i, value in enumerate(HOSTILE_VALUES)
    ]
    await store.insert(collection, records)

    for i, value in enumerate(HOSTILE_VALUES):
        scope = {"label": value}
        found = await store.search(collection, unit(0), top_k=50, metadata_filter=scope)
        assert [r.document_id for r in found] == [f"doc-{i}"], value
        assert set(await counts(store, collection, scope)) == {f"doc-{i}"}, value
    for attempt in INJECTIONS:
        scope = {"label": attempt}
        assert await store.search(collection, unit(0), top_k=50, metadata_filter=scope) == []
        assert await counts(store, collection, scope) == {}
        await store.delete(collection, "doc-0", metadata_filter=scope)
    # Nothing was deleted or broken along the way.
    assert len(await counts(store, collection)) == len(HOSTILE_VALUES)


async def test_keys_and_line_breaks_are_matched_exactly_or_refused(
    store: VectorStoreBase, collection: str
) -> None:
    """A filter a store cannot express is a ValueError, never a wrong match."""
    await store.create_collection(collection, DIMENSIONS)
    await store.insert(
        collection,
        [
            make_record("dotted", 0, unit(0), {"a.b": "v", "text": "two\nlines"}),
            make_record("nested", 0, unit(1), {"a": {"b": "v"}, "text": "two lines"}),
        ],
    )
    cases: list[tuple[dict[str, Any], set[str]]] = [
        ({"a.b": "v"}, {"dotted"}),
        ({"a": {"b": "v"}}, {"nested"}),
        ({"text": "two\nlines"}, {"dotted"}),
    ]
    for metadata_filter, expected in cases:
        try:
            listed = await counts(store, collection, metadata_filter)
        except ValueError:
            continue
        assert set(listed) == expected, metadata_filter


async def test_delete_by_document_respects_the_filter(
    store: VectorStoreBase, collection: str
) -> None:
    await store.create_collection(collection, DIMENSIONS)
    await store.insert(
        collection,
        [make_record("a", i, unit(i), {"tenant": "t"}, total=3) for i in range(3)]
        + [make_record("b", i, unit(i), {"tenant": "t"}, total=2) for i in range(2)],
    )

    await store.delete(collection, "a")
    assert await counts(store, collection) == {"b": 2}
    assert {r.document_id for r in await store.search(collection, unit(0), top_k=10)} == {"b"}

    await store.delete(collection, "b", metadata_filter={"tenant": "other"})
    assert await counts(store, collection) == {"b": 2}

    await store.delete(collection, "b", metadata_filter={"tenant": "t"})
    assert await counts(store, collection) == {}
    await store.delete(collection, "never-inserted")


async def test_list_documents_counts_thousands_of_chunks(
    store: VectorStoreBase, collection: str
) -> None:
    sizes = {"d1": 1, "d2": 2, "d3": 10, "d4": 100, "d5": 387, "d6": 1000, "d7": 1500}
    rng = random.Random(3)
    records = [
        make_record(
            document_id,
            i,
            random_vector(rng),
            {"tenant": "odd" if int(document_id[1]) % 2 else "even", "page": i},
            total=size,
        )
        for document_id, size in sizes.items()
        for i in range(size)
    ]
    rng.shuffle(records)  # the summary must not depend on insertion order
    await store.create_collection(collection, DIMENSIONS)
    await store.insert(collection, records)

    summaries = {s.document_id: s for s in await store.list_documents(collection)}

    assert {d: s.chunk_count for d, s in summaries.items()} == sizes
    for document_id, summary in summaries.items():
        assert summary.source == f"{document_id}.txt"
        assert summary.metadata["page"] == 0  # from the lowest-indexed chunk
    assert await counts(store, collection, {"tenant": "even"}) == {
        d: n for d, n in sizes.items() if int(d[1]) % 2 == 0
    }


async def test_list_documents_pages_and_finds_documents_missing_chunk_0(
    store: VectorStoreBase, collection: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pages of 5 rows, so 25 documents (75 chunks) span several pages of both reads.
    for page_size in (
        "milvus._connection._QUERY_PAGE",
        "qdrant._connection._SCROLL_PAGE",
        "qdrant._connection._LOCAL_SCROLL_PAGE",
    ):
        monkeypatch.setattr(f"ragflow_config.rag._stores.{page_size}", 5)
    whole = {f"w{n:02}": "a" if n % 2 else "b" for n in range(25)}
    records = [
        make_record(doc, i, unit(i), {"tenant": tenant, "page": i}, total=3)
        for doc, tenant in whole.items()
        for i in range(3)
    ]
    # An interrupted write: chunk 0 (written last) and here chunk 1 are missing.
    records += [make_record("cut", i, unit(i), {"tenant": "a", "page": i}) for i in (2, 3)]
    # Chunk 0 outside the scope {"tenant": "a"}, the rest inside it.
    records += [
        make_record("split", i, unit(i), {"tenant": "b" if i == 0 else "a", "page": i})
        for i in range(3)
    ]
    await store.create_collection(collection, DIMENSIONS)
    await store.insert(collection, records)

    summaries = {s.document_id: s for s in await store.list_documents(collection)}
    assert {d: s.chunk_count for d, s in summaries.items()} == {
        **{doc: 3 for doc in whole},
        "cut": 2,
        "split": 3,
    }
    assert {d: (s.source, s.metadata["page"]) for d, s in summaries.items()} == {
        **{doc: (f"{doc}.txt", 0) for doc in whole},
        "cut": ("cut.txt", 2),  # from the lowest-indexed chunk there is
        "split": ("split.txt", 0),
    }

    scoped = {s.document_id: s for s in await store.list_documents(collection, {"tenant": "a"})}
    assert {d: s.chunk_count for d, s in scoped.items()} == {
        **{doc: 3 for doc, tenant in whole.items() if tenant == "a"},
        "cut": 2,
        "split": 2,
    }
    assert scoped["split"].metadata == {"tenant": "a", "page": 1}


async def test_list_chunks_pages_by_chunk_index(store: VectorStoreBase, collection: str) -> None:
    await store.create_collection(collection, DIMENSIONS)
    records = [make_record("doc", i, unit(i % DIMENSIONS), {"tenant": "t"}, 25) for i in range(25)]
    await store.insert(
        collection,
        records + [make_record("other", i, unit(0), {"tenant": "t"}, 5) for i in range(5)],
    )

    async def page(offset: int, limit: int, **options: Any) -> list[int]:
        chunks = await store.list_chunks(collection, "doc", offset=offset, limit=limit, **options)
        return [chunk.chunk_index for chunk in chunks]

    assert await page(0, 10) == list(range(10))
    assert await page(10, 10) == list(range(10, 20))
    assert await page(20, 10) == list(range(20, 25))
    assert await page(25, 10) == []
    assert await page(0, 0) == []
    assert await page(0, 30, metadata_filter={"tenant": "t"}) == list(range(25))
    assert await page(0, 30, metadata_filter={"tenant": "u"}) == []
    [third] = await store.list_chunks(collection, "doc", offset=3, limit=1)
    assert third.content == records[3].chunk.content  # the whole block, as it was stored


@pytest.mark.parametrize("lexical", [False, True], ids=["dense", "lexical"])
async def test_document_vectors_gives_each_chunk_with_its_stored_vector(
    store: VectorStoreBase, collection: str, lexical: bool
) -> None:
    rng = random.Random(5)
    if lexical and not store.supports_lexical:
        return  # pinned by test_a_store_without_a_lexical_side_says_so
    if lexical:  # a lexical collection holds a sparse vector beside the dense one
        await store.create_lexical_collection(collection, DIMENSIONS)
    else:
        await store.create_collection(collection, DIMENSIONS)

    def normalised(vector: list[float]) -> list[float]:  # as embedding models give them
        norm = math.sqrt(sum(x * x for x in vector))
        return [x / norm for x in vector]

    records = [
        make_record("doc", i, normalised(random_vector(rng)), {"rev": i % 2}, 6).model_copy(
            update={"terms": {i + 1: 1.0} if lexical else None}
        )
        for i in range(6)
    ]
    await store.insert(collection, [*records, make_record("other", 0, unit(1))])

    found = await store.document_vectors(collection, "doc")
    assert sorted(chunk.chunk_index for chunk, _ in found) == list(range(6))
    for chunk, vector in found:
        record = records[chunk.chunk_index]
        assert chunk == record.chunk
        assert vector == pytest.approx(record.vector, abs=1e-6)  # float32 in most engines
    narrowed = await store.document_vectors(collection, "doc", {"rev": 1})
    assert sorted(chunk.chunk_index for chunk, _ in narrowed) == [1, 3, 5]
    assert await store.document_vectors(collection, "missing") == []


async def test_a_reopened_store_finds_its_data(case: StoreCase) -> None:
    collection = case.new_collection()
    async with case.open() as store:
        await store.create_collection(collection, DIMENSIONS)
        await store.insert(collection, [make_record("kept", i, unit(i), total=3) for i in range(3)])

    async with case.open() as reopened:
        if not case.persistent:  # in memory: what was closed is gone, and says so
            assert await reopened.collection_dimensions(collection) is None
            return
        assert await reopened.collection_dimensions(collection) == DIMENSIONS
        assert await counts(reopened, collection) == {"kept": 3}
        best = await reopened.search(collection, unit(1), top_k=1)
        assert keys(best) == [("kept", 1)]
        assert math.isclose(best[0].score, 1.0, abs_tol=1e-4)


async def test_concurrent_inserts_of_different_documents(
    store: VectorStoreBase, collection: str
) -> None:
    rng = random.Random(5)
    await store.create_collection(collection, DIMENSIONS)
    documents = {
        f"doc-{d}": [make_record(f"doc-{d}", i, random_vector(rng), total=40) for i in range(40)]
        for d in range(8)
    }

    await asyncio.gather(*(store.insert(collection, records) for records in documents.values()))

    assert await counts(store, collection) == {d: 40 for d in documents}


async def test_reinserting_records_replaces_them(store: VectorStoreBase, collection: str) -> None:
    await store.create_collection(collection, DIMENSIONS)
    first = [make_record("doc", i, unit(i), {"version": 1}, total=4) for i in range(4)]
    await store.insert(collection, first)
    await store.insert(collection, first)
    second = [
        r.model_copy(update={"chunk": r.chunk.model_copy(update={"metadata": {"version": 2}})})
        for r in first
    ]
    await store.insert(collection, second)
    await store.insert(collection, [])

    assert await counts(store, collection) == {"doc": 4}
    results = await store.search(collection, unit(2), top_k=10)
    assert sorted(keys(results)) == [("doc", i) for i in range(4)]
    assert {r.chunk.metadata["version"] for r in results} == {2}


async def test_records_of_two_scopes_never_share_a_key(
    store: VectorStoreBase, collection: str
) -> None:
    """One document id written under two scopes is two documents: neither replaces the other."""
    await store.create_collection(collection, DIMENSIONS)
    tenants = {"a": scope_key({"tenant": "a"}), "b": scope_key({"tenant": "b"})}
    for position, (tenant, scope) in enumerate(tenants.items()):
        records = [
            make_record("doc", i, unit(position), {"tenant": tenant}, total=2) for i in range(2)
        ]
        await store.insert(collection, [r.model_copy(update={"scope": scope}) for r in records])

    for tenant in tenants:
        assert await counts(store, collection, {"tenant": tenant}) == {"doc": 2}
        hits = await store.search(collection, unit(0), top_k=10, metadata_filter={"tenant": tenant})
        assert {r.chunk.metadata["tenant"] for r in hits} == {tenant}
        assert len(hits) == 2

    await store.delete(collection, "doc", metadata_filter={"tenant": "b"})
    assert await counts(store, collection, {"tenant": "a"}) == {"doc": 2}
    assert await counts(store, collection, {"tenant": "b"}) == {}


HOSTILE_DOCUMENT_IDS = ['quote"d', "it's", "back\\slash", "two\nlines", '" or 1==1 or "', "ünï 😀"]


async def test_document_ids_are_data_never_syntax(store: VectorStoreBase, collection: str) -> None:
    await store.create_collection(collection, DIMENSIONS)
    await store.insert(
        collection,
        [
            make_record(document_id, i, unit(i), total=2)
            for document_id in HOSTILE_DOCUMENT_IDS
            for i in range(2)
        ],
    )
    for document_id in HOSTILE_DOCUMENT_IDS:
        chunks = await store.list_chunks(collection, document_id)
        assert [chunk.source for chunk in chunks] == [f"{document_id}.txt"] * 2

    await store.delete(collection, '" or 1==1 or "')

    remaining = set(HOSTILE_DOCUMENT_IDS) - {'" or 1==1 or "'}
    assert await counts(store, collection) == {document_id: 2 for document_id in remaining}


async def test_a_vector_of_the_wrong_length_is_refused(
    store: VectorStoreBase, collection: str
) -> None:
    await store.create_collection(collection, DIMENSIONS)
    with pytest.raises(VectorStoreError) as refused:
        await store.insert(collection, [make_record("doc", 0, [1.0, 0.0])])
    assert store.store_name in str(refused.value)


# Text a store must keep exactly as given, and find again by filter. U+E000 is
# the character pgvector spells NUL with: it must survive on its own too.
HOSTILE_TEXT = [
    "nul\0byte",
    "\0",
    "crlf\r\nand\rcr",
    "two\nlines",
    'quote"d \\back\\slash\\',
    "ünï😀 \u2028 \ufeff",
    "\ue000 and \ue0000 and \ue000\0",
]


def hostile_record(i: int, text: str) -> VectorRecord:
    record = make_record(
        f"doc {text}",
        0,
        unit(i % DIMENSIONS),
        {"label": text, f"key {text}": i, "nested": {"label": text}},
    )
    chunk = record.chunk.model_copy(update={"content": TextBlock(text=f"content {text}")})
    return record.model_copy(update={"chunk": chunk})


async def test_hostile_text_is_stored_faithfully_and_found_by_filter(
    store: VectorStoreBase, collection: str
) -> None:
    await store.create_collection(collection, DIMENSIONS)
    records = [hostile_record(i, text) for i, text in enumerate(HOSTILE_TEXT)]
    await store.insert(collection, records)

    summaries = {s.document_id: s for s in await store.list_documents(collection)}
    assert set(summaries) == {r.document_id for r in records}
    for record, text in zip(records, HOSTILE_TEXT, strict=True):
        [chunk] = await store.list_chunks(collection, record.document_id)
        assert chunk == record.chunk, repr(text)
        assert summaries[record.document_id].source == record.chunk.source
        assert summaries[record.document_id].metadata == record.chunk.metadata
        for scope in ({"label": text}, {"nested": {"label": text}}):
            found = await store.search(collection, unit(0), top_k=50, metadata_filter=scope)
            assert [(r.document_id, r.chunk) for r in found] == [
                (record.document_id, record.chunk)
            ], repr(text)
            assert set(await counts(store, collection, scope)) == {record.document_id}, repr(text)

    await store.delete(
        collection, records[3].document_id, metadata_filter={"label": "two\r\nlines"}
    )
    await store.delete(collection, records[2].document_id, metadata_filter={"label": "two\nlines"})
    assert len(await counts(store, collection)) == len(records)  # neither was in scope
    await store.delete(collection, records[3].document_id, metadata_filter={"label": "two\nlines"})
    assert records[3].document_id not in await counts(store, collection)
    assert len(await counts(store, collection)) == len(records) - 1


async def test_a_line_break_filter_keeps_top_k_among_near_misses(
    store: VectorStoreBase, collection: str
) -> None:
    # Near misses of "a\nb" ("a b", "a%b", ...) lie nearer the query than every true match.
    await store.create_collection(collection, DIMENSIONS)
    misses = [
        make_record(f"miss-{i}", 0, unit(0), {"label": f"a{c}b"})
        for i, c in enumerate(" \r%_\\x" * 5)
    ]
    hits = [make_record(f"hit-{i}", 0, unit(1), {"label": "a\nb"}) for i in range(3)]
    await store.insert(collection, misses + hits)

    found = await store.search(collection, unit(0), top_k=2, metadata_filter={"label": "a\nb"})

    assert len(found) == 2 and {r.document_id for r in found} <= {h.document_id for h in hits}


async def test_a_lone_surrogate_refuses_the_document_before_any_write(
    store: VectorStoreBase, collection: str
) -> None:
    await store.create_collection(collection, DIMENSIONS)
    good = make_record("doc", 1, unit(1), total=2)
    for bad in (
        make_record("doc", 0, unit(0), {"label": "bad\udce9"}, total=2),
        make_record("doc", 0, unit(0), {"bad\ud800": 1}, total=2),
        make_record("doc\udce9", 0, unit(0), total=2),
    ):
        with pytest.raises(UnstorableDocumentError, match="lone surrogate") as refused:
            await store.insert(collection, [good, bad])
        assert refused.value.store == store.store_name
        assert await counts(store, collection) == {}


# The lexical side: sparse term weights beside the vector (rag/_retrieval.py).
# A store without one says so; a store with one scores by the exact inner
# product and counts terms within a filter, so BM25 means the same everywhere.
TERMS = {
    "a": {1: 0.5, 2: 1.5},
    "b": {2: 2.0, 300_000_000: 1.0},
    "c": {3: 4.0},
    "d": {1: 1.0, 2: 0.25, 3: 0.5},
}


def lexical_record(document_id: str, **metadata: Any) -> VectorRecord:
    record = make_record(document_id, 0, unit(0), metadata)
    return record.model_copy(update={"terms": TERMS[document_id]})


async def test_a_store_without_a_lexical_side_says_so(
    store: VectorStoreBase, collection: str
) -> None:
    if store.supports_lexical:
        await store.create_lexical_collection(collection, DIMENSIONS)
        assert await store.has_lexical(collection)
        return
    with pytest.raises(NotImplementedError, match="has no lexical side"):
        await store.create_lexical_collection(collection, DIMENSIONS)
    with pytest.raises(NotImplementedError, match="has no lexical side"):
        await store.lexical_search(collection, {1: 1.0})


async def test_lexical_scores_are_exact_inner_products_within_the_filter(
    store: VectorStoreBase, collection: str
) -> None:
    if not store.supports_lexical:
        return  # pinned by test_a_store_without_a_lexical_side_says_so
    await store.create_lexical_collection(collection, DIMENSIONS)
    await store.insert(
        collection, [lexical_record(n, tenant="x" if n != "d" else "y") for n in TERMS]
    )
    await store.insert(collection, [make_record("plain", 0, unit(1), {"tenant": "x"})])
    weights = {1: 2.0, 2: 1.0, 300_000_000: 3.0}
    hits = await store.lexical_search(collection, weights, top_k=10)
    assert [(h.document_id, h.score) for h in hits] == [
        ("b", pytest.approx(5.0)),  # 2.0 * 1 + 1.0 * 3
        ("a", pytest.approx(2.5)),
        ("d", pytest.approx(2.25)),
    ]  # c shares no term and "plain" has none: neither is a hit
    scoped = await store.lexical_search(collection, weights, 3, {"tenant": "x"})
    assert keys(scoped) == [("b", 0), ("a", 0)]  # d is outside
    assert await store.term_counts(collection, [1, 2, 3, 7], {"tenant": "x"}) == (
        4,
        {1: 1, 2: 2, 3: 1, 7: 0},
    )
    assert (await store.term_counts(collection, [2, 2]))[1] == {2: 3}  # a repeat counts once


async def test_replaced_and_deleted_records_leave_no_terms(
    store: VectorStoreBase, collection: str
) -> None:
    if not store.supports_lexical:
        return
    await store.create_lexical_collection(collection, DIMENSIONS)
    await store.insert(collection, [lexical_record(n) for n in TERMS])
    replaced = lexical_record("a").model_copy(update={"terms": {9: 1.0}})
    await store.insert(collection, [replaced])
    await store.delete(collection, "b")
    assert keys(await store.lexical_search(collection, {2: 1.0}, 10)) == [("d", 0)]
    assert keys(await store.lexical_search(collection, {9: 1.0}, 10)) == [("a", 0)]
    assert await store.term_counts(collection, [2, 9]) == (3, {2: 1, 9: 1})
