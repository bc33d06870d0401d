"""The described settings beside a fingerprint: a change named by its values, and a price that
changes nothing the vectors depend on."""

from __future__ import annotations

from ragflow_config.embedding import HashingEmbeddingModel, vectors_digest
from ragflow_config.pipeline._settings import most_common_settings, setting_changes

OLD = {
    "embedding": {"class": "HashingEmbeddingModel", "model": "hashing-v1", "dimensions": 64},
    "chunker": {"type": "approx_token", "parameters": {"chunk_size": 256, "overlap": 16}},
    "parsers": {"text": {"parameters": {"encoding": "utf-8"}}},
}


def test_a_change_is_named_by_its_dotted_path_and_values() -> None:
    new = {
        **OLD,
        "chunker": {"type": "approx_token", "parameters": {"chunk_size": 128, "overlap": 16}},
        "parsers": {"text": {"parameters": {"encoding": "latin-1", "errors": "replace"}}},
    }
    assert setting_changes(OLD, new) == [
        ("chunker.parameters.chunk_size", 256, 128),
        ("parsers.text.parameters.encoding", "utf-8", "latin-1"),
        ("parsers.text.parameters.errors", None, "replace"),
    ]
    # Only the parts whose digest changed: a part described otherwise but digested alike is quiet.
    assert setting_changes(OLD, new, ["chunker"]) == [("chunker.parameters.chunk_size", 256, 128)]
    assert setting_changes(OLD, OLD) == []


def test_the_settings_most_documents_carry_win_and_old_documents_have_none() -> None:
    other = {**OLD, "chunker": {"type": "recursive", "parameters": {}}}
    states = [{"settings": OLD}, {"settings": other}, {"settings": OLD}, {"fingerprint": {}}]
    assert most_common_settings(states) == OLD
    assert most_common_settings([{"fingerprint": {}}]) is None  # indexed before settings were kept


def test_a_price_changes_neither_the_fingerprint_nor_the_cache_key() -> None:
    plain = HashingEmbeddingModel(dimensions=64)
    priced = HashingEmbeddingModel(dimensions=64, price_per_million_tokens=0.02)
    assert priced.parameters.price_per_million_tokens == 0.02
    assert vectors_digest(priced) == vectors_digest(plain)
    assert priced.cache_identifier("text") == plain.cache_identifier("text")
