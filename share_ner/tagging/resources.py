"""What the CRF's features need besides the note: the term matcher (lexicon names and training mentions), head words and word clusters.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping

from share_ner.features import FeatureResources, TermMatcher
from share_ner.features.matcher import term_keys
from share_ner.lexicons.abbreviations import ABBREVIATIONS_PATH, load_abbreviations
from share_ner.lexicons.index import read_cached, write_cached
from share_ner.lexicons.lexicon import cache_dir
from share_ner.tagging.weights import CrfWeights

TRAIN_SEMTYPE = "train"


LEXICON_SEMTYPE = "lexicon"


@dataclass(frozen=True)
class TaggerResources:
    """What feature building needs: ``share_ner.features.FeatureResources`` and the gazetteer's head words; for a
    loaded model, also its CRF weights (``share_ner.tagging.weights``)."""

    features: FeatureResources
    head_words: frozenset[str] = frozenset()
    # First and last word keys of all terms: a distributed string is looked up only when
    # it could start and end a term, which keeps coordination_features cheap.
    first_keys: frozenset[str] = frozenset()
    last_keys: frozenset[str] = frozenset()
    weights: CrfWeights | None = None
    # The word keys that only short forms written in capitals have among the lexicon's one-word names and the
    # abbreviation list ("doe" of DOE, "mac" of MAC): a word in lower case with such a key is not that short form
    # (share_ner.tagging.evidence). Training mentions do not count: distant labels hold such words.
    acronym_keys: frozenset[str] = frozenset()

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
    names = [term for term, semtype in terms or () if semtype not in (TRAIN_SEMTYPE, WEAK_TRAIN_SEMTYPE)]
    return TaggerResources(features, head_words(terms or ()), frozenset(first), frozenset(last),
                           acronym_keys=acronym_only_keys([*names, *(features.abbreviations or ())]))


def acronym_only_keys(names: Iterable[str]) -> frozenset[str]:
    """The word keys of the one-word ``names`` written as short forms in capitals (:func:`is_acronym`) that no
    one-word name written otherwise has: "doe" of DOE, "mac" of MAC, not "aids" (AIDS and "aids")."""
    acronyms: set[str] = set()
    words: set[str] = set()
    for name in names:
        keys = term_keys(name)
        if len(keys) == 1:
            (acronyms if is_acronym(name) else words).add(keys[0])
    return frozenset(acronyms - words)


def is_acronym(text: str) -> bool:
    """A short form written in capitals: two or more letters, none in lower case ("DOE", "T-PLL", "CP")."""
    letters = [c for c in text if c.isalpha()]
    return len(letters) >= 2 and not any(c.islower() for c in letters) and " " not in text.strip()


WEAK_TRAIN_SEMTYPE = "train-weak"


# ---------------------------------------------------------------- the resources of a loaded model, cached

# The modules whose code decides what make_resources builds (and whose classes the cached pickle holds): a change
# to any of them is a new cache key, so a cache never outlives the code that wrote it.
_BUILDERS = ("share_ner.model", "share_ner.tagging.resources", "share_ner.features.extract",
             "share_ner.features.matcher", "share_ner.features.stopwords", "share_ner.features.clusters",
             "share_ner.features.items", "share_ner.lexicons.abbreviations", "share_ner.tagging.weights")


def _code_hash() -> str:
    h = hashlib.sha1()
    for name in _BUILDERS:
        module = sys.modules.get(name) or __import__(name, fromlist=["_"])
        h.update(Path(module.__file__ or "").read_bytes())
    return h.hexdigest()[:16]


def cached_resources(files: Iterable[Path | None], build: Callable[[], TaggerResources]) -> TaggerResources:
    """``build()``, kept in the user cache (``share_ner.lexicons.lexicon.cache_dir()``) by the content of
    ``files`` (the model's terms, clusters and CRF weights; None: absent) and of the code that builds it.

    Unpickling the term trie and the model's attribute set takes about a third of the time building them does
    (lexicon terms parsed into the trie, the CRF model's attributes read): start-up time. A missing, unreadable
    or unwritable cache only costs that time.
    """
    h = hashlib.sha1()
    try:
        for path in (*files, ABBREVIATIONS_PATH):
            h.update(b"-" if path is None else Path(path).read_bytes())
            h.update(b"\0")
    except OSError:
        return build()  # which names the file it cannot read
    model = h.hexdigest()[:24]
    code = _code_hash()
    path = cache_dir() / f"resources-{model}-{code}.pkl"
    resources = read_cached(path)
    if isinstance(resources, TaggerResources):
        return resources
    resources = build()
    if write_cached(path, resources):
        try:
            for stale in path.parent.glob(f"resources-{model}-*.pkl"):  # written by other code
                if stale != path:
                    stale.unlink(missing_ok=True)
        except OSError:
            pass  # a stale file left behind only costs disk space
    return resources
