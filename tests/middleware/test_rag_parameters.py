"""RAGMiddleware.Parameters: the rules a pipeline file's middlewares block is held to."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ragflow_config.middleware import RAGMiddleware
from ragflow_config.rag import KnowledgeBase

Parameters = RAGMiddleware.Parameters


def test_defaults_follow_the_reference():
    p = Parameters()
    assert (p.mode, p.top_k, p.score_threshold, p.rerank_candidate_k) == ("agentic", 5, None, None)
    assert (p.emit_hint_event, p.persist_hint) == (True, False)
    assert p.rerank_candidates == 10


@pytest.mark.parametrize(("top_k", "expected"), [(1, 2), (3, 6), (25, 50), (30, 50), (50, 50)])
def test_rerank_candidates_default_to_twice_top_k_capped_at_50(top_k: int, expected: int):
    assert Parameters(top_k=top_k).rerank_candidates == expected


def test_rerank_candidate_k_below_top_k_is_rejected_clearly():
    with pytest.raises(
        ValidationError, match=r"rerank_candidate_k \(4\) must be at least top_k \(5\)"
    ):
        Parameters(top_k=5, rerank_candidate_k=4)
    assert Parameters(top_k=5, rerank_candidate_k=5).rerank_candidates == 5


@pytest.mark.parametrize(
    "options",
    [
        {"top_k": 0},
        {"top_k": 51},
        {"rerank_candidate_k": 0},
        {"rerank_candidate_k": 51},
        {"mode": "hybrid"},
        {"search_config": {}},
    ],
)
def test_out_of_range_and_unknown_options_are_rejected(options: dict[str, object]):
    with pytest.raises(ValidationError):
        Parameters(**options)


def test_parameters_are_frozen():
    with pytest.raises(ValidationError):
        Parameters().top_k = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    "template",
    ["no field", "{context} and {context}", "{context} {foo}", "{}", "{context", "{context!r}"],
)
def test_a_hint_template_that_could_fail_at_run_time_is_rejected(template: str):
    with pytest.raises(ValidationError, match="hint_template"):
        Parameters(hint_template=template)


@pytest.mark.parametrize(
    "prompt", ["{top_k} only", "{query} {foo}", "{query} {0}", "{query:d}", "{query"]
)
def test_rerank_prompt_takes_query_and_top_k_only(prompt: str):
    with pytest.raises(ValidationError, match="rerank_prompt"):
        Parameters(rerank_prompt=prompt)
    assert Parameters(rerank_prompt="Rank {top_k} for {query} {{json}}").rerank_prompt


def test_the_json_schema_documents_every_field():
    schema = Parameters.model_json_schema()
    assert schema["additionalProperties"] is False
    for field in (
        "mode",
        "top_k",
        "score_threshold",
        "rerank_candidate_k",
        "emit_hint_event",
        "persist_hint",
        "hint_template",
        "rerank_prompt",
    ):
        assert schema["properties"][field]["description"]
    assert schema["properties"]["top_k"]["maximum"] == 50


def test_the_constructor_the_pipeline_runner_uses(hr_kb: KnowledgeBase):
    params = {"mode": "static", "top_k": 3}
    middleware = RAGMiddleware(
        knowledge_bases=[hr_kb], rerank_model=None, parameters=Parameters(**params)
    )
    assert middleware.parameters == Parameters(mode="static", top_k=3)
    assert RAGMiddleware([hr_kb], mode="static", top_k=3).parameters == middleware.parameters
