"""Text to terms for the lexical side: tokenise, drop stop words, stem, hash.

The analyzer runs in the project, not in a store, so a text gives the same
terms on every backend: a lowercase word tokeniser (Unicode ``\\w``, with
inner apostrophes kept so ``don't`` meets its stop word), an optional stop
list, and a Snowball stemmer (PyStemmer). Each term is hashed to a stable id
below 2**29, which every store's sparse vectors can index (pgvector's
``sparsevec`` allows at most 10**9 dimensions).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .._extras import require

TERM_SPACE = 1 << 29
"""Term ids lie in ``[0, TERM_SPACE)``."""

Language = Literal[
    "arabic", "armenian", "basque", "catalan", "danish", "dutch", "english", "finnish",
    "french", "german", "greek", "hindi", "hungarian", "indonesian", "irish", "italian",
    "lithuanian", "nepali", "norwegian", "porter", "portuguese", "romanian", "russian",
    "serbian", "spanish", "swedish", "tamil", "turkish", "yiddish",
]  # fmt: skip

_WORD = re.compile(r"\w+(?:'\w+)*")

# Snowball's English stop list (snowballstem.org, BSD-3-Clause).
_ENGLISH = """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his himself
    she her hers herself it its itself they them their theirs themselves what which who whom
    this that these those am is are was were be been being have has had having do does did
    doing would should could ought i'm you're he's she's it's we're they're i've you've we've
    they've i'd you'd he'd she'd we'd they'd i'll you'll he'll she'll we'll they'll isn't
    aren't wasn't weren't hasn't haven't hadn't doesn't don't didn't won't wouldn't shan't
    shouldn't can't cannot couldn't mustn't let's that's who's what's here's there's when's
    where's why's how's a an the and but if or because as until while of at by for with about
    against between into through during before after above below to from up down in out on
    off over under again further then once here there when where why how all any both each
    few more most other some such no nor not only own same so than too very
"""
ENGLISH_STOP_WORDS = frozenset(_ENGLISH.split())
_BUILT_IN_STOP_WORDS = {"english": ENGLISH_STOP_WORDS, "porter": ENGLISH_STOP_WORDS}


class AnalyzerSettings(BaseModel):
    """How text becomes terms: the same settings give the same terms on every store."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    language: Language = Field(
        default="english", description="Snowball stemmer language (and built-in stop list)."
    )
    stemming: bool = Field(default=True, description="Reduce words to their Snowball stem.")
    stop_words: bool | list[str] = Field(
        default=True,
        description="Words left out: `true` for the language's built-in list (English only), "
        "`false` for none, or a list of words.",
    )

    @model_validator(mode="after")
    def _stop_list_exists(self) -> AnalyzerSettings:
        if self.stop_words is True and self.language not in _BUILT_IN_STOP_WORDS:
            raise ValueError(
                f"no built-in stop words for {self.language!r}: set stop_words to a list of "
                "words, or to false"
            )
        return self


class Analyzer:
    """Turns text into hashed term ids, deterministically."""

    requires = {"Stemmer": "hybrid"}

    def __init__(self, settings: AnalyzerSettings | None = None) -> None:
        self.settings = settings or AnalyzerSettings()
        stop = self.settings.stop_words
        if stop is True:
            words: frozenset[str] = _BUILT_IN_STOP_WORDS[self.settings.language]
        elif stop is False:
            words = frozenset()
        else:
            words = frozenset(word.lower() for word in stop)
        self._stop_words = words
        self._ids: dict[str, int] = {}

    @cached_property
    def _stem(self) -> Any:
        if not self.settings.stemming:
            return None
        return require("Stemmer", "hybrid").Stemmer(self.settings.language).stemWord

    def terms(self, text: str) -> list[str]:
        """The terms of ``text``, in order, repeats kept."""
        words = [w for w in _WORD.findall(text.replace("\u2019", "'").lower())]
        words = [w for w in words if w not in self._stop_words]
        stem = self._stem
        return [stem(w) for w in words] if stem is not None else words

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """``(start, end, term)`` of each word of ``text`` that is a term, in order: where
        :meth:`terms` finds them (a page highlights the matched ones)."""
        stem = self._stem
        found = []
        # U+2019 becomes an apostrophe, one character for one: the offsets hold.
        for match in _WORD.finditer(text.replace("\u2019", "'")):
            word = match.group(0).lower()
            if word in self._stop_words:
                continue
            found.append((match.start(), match.end(), stem(word) if stem is not None else word))
        return found

    def term_id(self, term: str) -> int:
        """A term's stable id in ``[0, TERM_SPACE)``."""
        found = self._ids.get(term)
        if found is None:
            digest = hashlib.blake2b(term.encode(), digest_size=8).digest()
            found = self._ids[term] = int.from_bytes(digest, "big") % TERM_SPACE
        return found

    def term_counts(self, text: str) -> tuple[dict[int, int], int]:
        """``({term id: occurrences}, number of terms)`` of ``text``."""
        terms = self.terms(text)
        counts = Counter(self.term_id(t) for t in terms)
        return dict(counts), len(terms)
