"""Fitting a normalizer on training notes: the CUI-less threshold and the re-ranker by cross-validation, and the
rewrites learned from the gazetteer and lexicon.
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

from share_ner.lexicons.index import LexiconIndex


def fit_threshold(scores: Sequence[float], accepted_correct: Sequence[bool], gold_cuiless: Sequence[bool],
                  default: float = 0.5) -> float:
    """The threshold ``t`` maximising accuracy when decisions scoring ``>= t`` are kept and the others become CUI-less.

    ``accepted_correct[i]``: keeping decision ``i`` would be right; ``gold_cuiless[i]``: rejecting it would be
    right. Candidate thresholds are the lowest score (keep all), the midpoints between consecutive distinct scores
    and just above the highest (reject all); ties go to the lowest threshold. No data gives ``default``.

    When keeping every decision is best, the threshold is 0 (or the lowest score, if one is negative): the data
    gave no reason to reject any score, so a later decision scoring below every one seen here is kept too. Training
    notes without a single CUI-less mention (NCBI disease, for one) therefore never make a mention CUI-less.
    """
    if not scores:
        return default
    items = sorted(zip(scores, accepted_correct, gold_cuiless))
    n = len(items)
    # keep[j]: decisions j.. kept are right; reject[j]: decisions ..j-1 rejected are right (prefix sums)
    reject = [0] * (n + 1)
    for j, (_, _, rej) in enumerate(items):
        reject[j + 1] = reject[j] + int(rej)
    keep = [0] * (n + 1)
    for j in range(n - 1, -1, -1):
        keep[j] = keep[j + 1] + int(items[j][1])
    best_t, best_acc = min(items[0][0], 0.0), keep[0]  # keep all
    for j in range(1, n + 1):
        if j < n and items[j][0] == items[j - 1][0]:
            continue  # a threshold cannot split equal scores
        acc = reject[j] + keep[j]
        if acc > best_acc:
            best_acc = acc
            best_t = (items[j - 1][0] + items[j][0]) / 2 if j < n else items[-1][0] + 1e-6
    return float(best_t)


Swaps = dict[str, list[tuple[str, int]]]  # a → [(b, concepts)], most concepts first


# a word of a → [(a's words as a set, a as a bag when it repeats a word, else None, a's words, b's words,
# concepts)]: the set is the fast first test
Phrases = dict[str, list[tuple[frozenset[str], Counter | None, tuple[str, ...], tuple[str, ...], int]]]


def _merged_rewrites(gaz: LexiconIndex | None, lex: LexiconIndex | None, min_count: int) -> tuple[Swaps, Phrases] | None:
    """The word swaps and the phrase swaps of both indexes seen in at least ``min_count`` concepts. Word swaps
    by word, most frequent first; phrase swaps by the rarest word of the phrase replaced, with both phrases as
    word bags."""
    learned = [r for r in (getattr(gaz, "rewrites", None), getattr(lex, "rewrites", None)) if r is not None]
    if not learned:
        return None
    merged = learned[0].merged(learned[1] if len(learned) > 1 else None)
    swaps = {a: sorted(((b, n) for b, n in bs.items() if n >= min_count), key=lambda bn: (-bn[1], bn[0]))
             for a, bs in merged.swap.items()}
    table = getattr(merged, "phrase", {})
    # each phrase is filed under its word that starts fewest phrases: a mention looks up only its own words
    spread = Counter(w for a in table for w in set(a.split()))
    phrases: Phrases = {}
    for a, bs in table.items():
        a_words = tuple(a.split())
        bag = Counter(a_words)
        entry = (frozenset(bag), bag if len(bag) < len(a_words) else None, a_words)
        for b, n in sorted(bs.items(), key=lambda bn: (-bn[1], bn[0])):
            if n >= min_count:
                phrases.setdefault(min(bag, key=lambda w: (spread[w], w)), []).append((*entry, tuple(b.split()), n))
    return {a: bs for a, bs in swaps.items() if bs}, phrases
