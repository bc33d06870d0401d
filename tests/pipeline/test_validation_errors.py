"""What `validate` says about a pipeline file's content, with the exact file:line:column."""

from __future__ import annotations

import pytest

from ragflow_config.embedding import OpenAICompatibleEmbeddingModel
from ragflow_config.pipeline import Registry
from ragflow_config.rag import QdrantStore

from .conftest import Check, registered


def test_unknown_keys_point_at_the_key_and_list_the_expected_ones(check: Check) -> None:
    assert check("unknown_keys.yaml") == [
        "unknown_keys.yaml:2:1: storage: unknown key 'storage'; expected one of: chat_models, "
        "embedding_cache, embeddings, execution, knowledge_bases, middlewares, rerankers, "
        "vector_stores, version",
        "unknown_keys.yaml:14:5: knowledge_bases[0].colour: unknown key 'colour'; expected one "
        "of: chunker, collection, description, embedding, evaluation, keep_previous, "
        "max_delete_fraction, max_failed_fraction, max_file_bytes, metadata_filter, name, "
        "on_error, owner, parsers, prune, retrieval, sources, vector_store",
        "unknown_keys.yaml:19:9: knowledge_bases[0].chunker.parameters.chunk_overlap: unknown "
        "key 'chunk_overlap'; expected one of: boundaries, chunk_size, overlap",
    ]


def test_embedding_cache_settings_are_checked_at_their_line(check: Check) -> None:
    assert check("embedding_cache_errors.yaml") == [
        "embedding_cache_errors.yaml:7:9: embedding_cache.path: '' should be non-empty",
        "embedding_cache_errors.yaml:8:16: embedding_cache.max_entries: 0 is less than the "
        "minimum of 1",
        "embedding_cache_errors.yaml:9:3: embedding_cache.max_size: unknown key 'max_size'; "
        "expected one of: max_bytes, max_entries, path",
    ]


def test_a_secret_in_the_file_says_it_belongs_in_the_environment(check: Check) -> None:
    store_keys = ", ".join(sorted(QdrantStore.Parameters.model_fields))
    embedding_keys = ", ".join(sorted(OpenAICompatibleEmbeddingModel.Parameters.model_fields))
    advice = (
        "Secrets never go in a pipeline file: put the value in an environment variable "
        "(name it with api_key_env)"
    )
    issues = check("secrets.yaml")
    assert issues == [
        "secrets.yaml:7:7: vector_stores.remote.parameters.api_key: unknown key 'api_key'; "
        f"expected one of: {store_keys}. {advice}",
        "secrets.yaml:14:7: embeddings.openai.parameters.api_key: unknown key 'api_key'; "
        f"expected one of: {embedding_keys}. {advice}",
    ]
    assert not any("not-a-real-key" in issue for issue in issues)


def test_an_unknown_type_of_each_kind_lists_the_registered_ones_and_suggests_one(
    check: Check, registry: Registry
) -> None:
    def unknown(kind: str, name: str, suggestion: str) -> str:
        return (
            f"unknown {kind} type {name!r} (registered: {registered(registry, kind)}); "
            f"did you mean {suggestion!r}?"
        )

    assert check("unknown_types.yaml") == [
        "unknown_types.yaml:4:11: vector_stores.memory.type: "
        + unknown("vector_store", "qdrnt", "qdrant"),
        "unknown_types.yaml:7:11: embeddings.hashing.type: "
        + unknown("embedding", "hashin", "hashing"),
        "unknown_types.yaml:11:15: knowledge_bases[0].parsers[0].type: "
        + unknown("parser", "txt", "text"),
        "unknown_types.yaml:13:13: knowledge_bases[0].chunker.type: "
        + unknown("chunker", "approx_tokens", "approx_token"),
        "unknown_types.yaml:18:11: middlewares[0].type: " + unknown("middleware", "ragg", "rag"),
    ]


def test_an_unknown_type_with_no_close_name_makes_no_suggestion(
    check: Check, registry: Registry, tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = tmp_path_factory.mktemp("pipeline") / "far.yaml"
    path.write_text(
        "version: 1\nembeddings:\n  e: {type: zzzzzz}\nvector_stores:\n"
        "  s: {type: qdrant}\nknowledge_bases:\n"
        "  - {name: a, embedding: e, vector_store: s, collection: c}\n",
        encoding="utf-8",
    )
    [issue] = check(str(path))
    assert issue.endswith(
        f"far.yaml:3:13: embeddings.e.type: unknown embedding type 'zzzzzz' "
        f"(registered: {registered(registry, 'embedding')})"
    )


def test_wrong_parameter_values_give_the_schema_messages_at_the_values(check: Check) -> None:
    assert check("bad_values.yaml") == [
        "bad_values.yaml:11:21: knowledge_bases[0].chunker.parameters.chunk_size: "
        "'big' is not of type 'integer'",
        "bad_values.yaml:12:18: knowledge_bases[0].chunker.parameters.overlap: "
        "-1 is less than the minimum of 0",
    ]


def test_overlap_not_below_chunk_size_is_caught_by_the_parameters_model(check: Check) -> None:
    # JSON Schema cannot compare two fields; the Pydantic pass does, at the parameters.
    assert check("overlap_too_large.yaml") == [
        "overlap_too_large.yaml:11:9: knowledge_bases[0].chunker.parameters: "
        "overlap (100) must be less than chunk_size (100)"
    ]


def test_a_value_of_the_wrong_shape_says_what_the_place_takes(check: Check) -> None:
    assert check("wrong_shapes.yaml") == [
        "wrong_shapes.yaml:3:9: vector_stores.disk: expected a mapping with a `type` key, "
        "got 'qdrant'",
        "wrong_shapes.yaml:8:16: knowledge_bases[0].embedding: 5 is not a string or an "
        "embedding block",
        "wrong_shapes.yaml:9:19: knowledge_bases[0].vector_store: ['disk'] is not a string or a "
        "vector_store block",
        "wrong_shapes.yaml:11:22: knowledge_bases[0].metadata_filter: 3 is not a mapping or null",
        "wrong_shapes.yaml:13:5: middlewares[0]: expected a mapping with a `type` key, got 'rag'",
    ]


def test_a_knowledge_base_naming_undefined_blocks_and_a_middleware_naming_an_undefined_kb(
    check: Check,
) -> None:
    assert check("references.yaml") == [
        "references.yaml:9:19: knowledge_bases[0].vector_store: 'memroy' is not defined in "
        "`vector_stores` (defined: memory); did you mean 'memory'?",
        "references.yaml:12:16: knowledge_bases[1].embedding: 'hashed' is not defined in "
        "`embeddings` (defined: hashing); did you mean 'hashing'?",
        "references.yaml:15:11: knowledge_bases[2].name: duplicate knowledge base name 'notes' "
        "(first at knowledge_bases[0])",
        "references.yaml:21:30: middlewares[0].knowledge_bases[1]: 'manuals' is not defined in "
        "`knowledge_bases` (defined: faq, notes)",
    ]


def test_two_knowledge_bases_on_one_collection_must_agree_on_dimensions(check: Check) -> None:
    assert check("dimensions_conflict.yaml") == [
        "dimensions_conflict.yaml:16:17: knowledge_bases[1].collection: collection 'shared' is "
        "also used by 'notes' (knowledge_bases[0]) with 64-dimensional vectors, but this "
        "knowledge base's embedding makes 128-dimensional ones"
    ]


def test_two_knowledge_bases_on_one_collection_need_their_own_scopes(check: Check) -> None:
    assert check("same_scope.yaml") == [
        "same_scope.yaml:15:17: knowledge_bases[1].collection: collection 'shared' is also used "
        "by 'notes' (knowledge_bases[0]) with the same metadata_filter; give each knowledge base "
        "its own collection or its own metadata_filter scope"
    ]
    assert check("separate_scopes.yaml") == []


def test_every_error_in_a_file_is_reported_at_once_in_file_order(
    check: Check, registry: Registry
) -> None:
    store_keys = ", ".join(sorted(QdrantStore.Parameters.model_fields))
    issues = check("many_errors.yaml")
    assert issues == [
        "many_errors.yaml:1:10: version: 1 was expected",
        "many_errors.yaml:5:40: vector_stores.memory.parameters.api_key: unknown key 'api_key'; "
        f"expected one of: {store_keys}. Secrets never go in a pipeline file: put the value in "
        "an environment variable (name it with api_key_env)",
        "many_errors.yaml:7:53: embeddings.hashing.parameters.dimensions: "
        "4 is less than the minimum of 8",
        "many_errors.yaml:12:32: knowledge_bases[0].chunker.parameters.chunk_size: "
        "0 is less than the minimum of 1",
        "many_errors.yaml:14:19: knowledge_bases[0].vector_store: 'memori' is not defined in "
        "`vector_stores` (defined: memory); did you mean 'memory'?",
        "many_errors.yaml:16:15: knowledge_bases[0].on_error: 'ignore' is not one of "
        "['fail', 'skip']",
        "many_errors.yaml:17:5: knowledge_bases[1]: missing required key 'collection'",
        "many_errors.yaml:17:11: knowledge_bases[1].name: duplicate knowledge base name 'notes' "
        "(first at knowledge_bases[0])",
        "many_errors.yaml:19:15: knowledge_bases[1].parsers[0].type: unknown parser type 'pdff' "
        f"(registered: {registered(registry, 'parser')}); did you mean 'pdf'?",
        "many_errors.yaml:22:19: knowledge_bases[1].chunker.parameters: overlap (8) must be "
        "less than chunk_size (8)",
        "many_errors.yaml:27:23: middlewares[0].knowledge_bases[0]: 'faq' is not defined in "
        "`knowledge_bases` (defined: notes)",
    ]
    assert len(issues) == 11


def test_a_valid_file_has_no_issues(check: Check) -> None:
    assert check("valid.yaml") == []
