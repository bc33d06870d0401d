"""``list_models()``: AgentScope 2.0.11's cards, for the models each class can call."""

from __future__ import annotations

import pytest

pytest.importorskip("agentscope", reason="the parity extra (agentscope==2.0.11) is not installed")

import agentscope.embedding as theirs

import ragflow_config.embedding as ours

CLASSES = [
    "OpenAIEmbeddingModel",
    "DashScopeEmbeddingModel",
    "GeminiEmbeddingModel",
    "OllamaEmbeddingModel",
]


def test_a_card_has_agentscopes_fields() -> None:
    def fields(card: type) -> dict[str, bool]:
        return {name: info.is_required() for name, info in card.model_fields.items()}

    assert fields(ours.EmbeddingModelCard) == fields(theirs.EmbeddingModelCard)


MULTIMODAL_CLASSES = ["DashScopeEmbeddingModel", "GeminiEmbeddingModel"]


@pytest.mark.parametrize("name", MULTIMODAL_CLASSES)
def test_a_multimodal_class_lists_every_model_with_agentscopes_card(name: str) -> None:
    """DashScope's and Gemini's classes embed media as AgentScope's do, through the same APIs."""
    their_cards = [card.model_dump() for card in getattr(theirs, name).list_models()]
    our_cards = [card.model_dump() for card in getattr(ours, name).list_models()]
    assert sorted(our_cards, key=str) == sorted(their_cards, key=str)


@pytest.mark.parametrize("name", [name for name in CLASSES if name not in MULTIMODAL_CLASSES])
def test_every_text_model_is_listed_with_agentscopes_card(name: str) -> None:
    """These classes send text only, so they list AgentScope's text models only."""
    their_cards = {card.name: card.model_dump() for card in getattr(theirs, name).list_models()}
    our_cards = {card.name: card.model_dump() for card in getattr(ours, name).list_models()}
    text_only = {
        model for model, card in their_cards.items() if card["input_types"] == ["text/plain"]
    }
    assert text_only <= set(our_cards) <= set(their_cards)
    for model, card in our_cards.items():
        assert card == their_cards[model] | {"input_types": ["text/plain"]}, model


def test_the_listed_cards_are_copies() -> None:
    [card, *_] = ours.OpenAIEmbeddingModel.list_models()
    card.supported_dimensions = []
    assert ours.OpenAIEmbeddingModel.list_models()[0].supported_dimensions
