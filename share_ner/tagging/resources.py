"""What the CRF's features need besides the note: the term matcher (lexicon names and training mentions), head words and word clusters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from share_ner.features import FeatureResources, TermMatcher
from share_ner.features.matcher import term_keys
from share_ner.lexicons.abbreviations import load_abbreviations

TRAIN_SEMTYPE = "train"


LEXICON_SEMTYPE = "lexicon"


@dataclass(frozen=True)
class TaggerResources:
    """What feature building needs: ``share_ner.features.FeatureResources`` and the gazetteer's head words."""

    features: FeatureResources
    head_words: frozenset[str] = frozenset()
    # First and last word keys of all terms: a distributed string is looked up only when
    # it could start and end a term, which keeps coordination_features cheap.
    first_keys: frozenset[str] = frozenset()
    last_keys: frozenset[str] = frozenset()

    @property
    def term_matcher(self) -> TermMatcher | None:
        return self.features.term_matcher


HEAD_WORD_MIN = 3  # a word ending at least this many multi-word training mentions is a head word


def head_words(terms: Iterable[tuple[str, str]]) -> frozenset[str]:
    """Last words (lowercased) of multi-word training-gazetteer terms, kept when frequent ("disease", "impairment")."""
    counts: dict[str, int] = {}
    for term, semtype in terms:
        if semtype not in (TRAIN_SEMTYPE, WEAK_TRAIN_SEMTYPE):
            continue
        words = term.lower().split()
        if len(words) > 1 and words[-1].isalpha():
            counts[words[-1]] = counts.get(words[-1], 0) + 1
    return frozenset(w for w, n in counts.items() if n >= HEAD_WORD_MIN)


def make_resources(terms: Iterable[tuple[str, str]] | None, clusters: Mapping[str, str] | None) -> TaggerResources:
    """A term matcher of ``terms``, word clusters and the packaged abbreviation list, plus head words."""
    terms = list(terms) if terms is not None else None
    matcher = TermMatcher.from_terms(terms) if terms is not None else None
    features = FeatureResources(matcher, dict(clusters) if clusters else None, load_abbreviations())
    first: set[str] = set()
    last: set[str] = set()
    for term, _ in terms or ():
        keys = term_keys(term)
        if keys:
            first.add(keys[0])
            last.add(keys[-1])
    return TaggerResources(features, head_words(terms or ()), frozenset(first), frozenset(last))


WEAK_TRAIN_SEMTYPE = "train-weak"
