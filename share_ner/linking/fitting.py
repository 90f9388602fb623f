"""Fitting a normalizer on training notes: the CUI-less threshold and the re-ranker by cross-validation, and the
rewrites learned from the gazetteer and lexicon.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Mapping, Protocol, Sequence

from share_ner.document import CUI_LESS, Document, Mention
from share_ner.lexicons.gazetteer import gazetteer_lexicon
from share_ner.lexicons.index import LexiconIndex
from share_ner.lexicons.lexicon import Lexicon
from share_ner.lexicons.rewrites import PhraseSwaps, WordSwaps
from share_ner.linking.candidates import sigmoid
from share_ner.linking.config import Decision, NormalizerConfig


class FoldNormalizer(Protocol):
    """What :func:`fit_cv` asks of the normalizers it makes for the held-out folds (a
    :class:`share_ner.linking.normalizer.Normalizer`)."""

    collect_features: bool

    def decide_many(self, batch: Sequence[tuple[Document, Sequence[Mention]]],
                    trace: bool = False) -> list[list[Decision]]: ...


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


Swaps = WordSwaps  # a → [(b, concepts)], most concepts first


# a word of a → another word of a (or None) → [(a's words as a set, a as a bag when it repeats a word, else None,
# a's words, [(b's words, concepts)])]: the set is the fast first test (PhraseSwaps.get)
Phrases = PhraseSwaps


def merged_rewrites(gaz: LexiconIndex | None, lex: LexiconIndex | None, min_count: int) -> tuple[Swaps, Phrases] | None:
    """The word swaps and the phrase swaps of both indexes seen in at least ``min_count`` concepts. Word swaps
    by word, most frequent first; phrase swaps by the rarest word of the phrase replaced, with both phrases as
    word bags."""
    learned = [r for r in (getattr(gaz, "rewrites", None), getattr(lex, "rewrites", None)) if r is not None]
    if not learned:
        return None
    merged = learned[0].merged(learned[1] if len(learned) > 1 else None)
    # both by word, made for a word when a mention first looks it up
    return WordSwaps(merged.swap, min_count), PhraseSwaps(merged.phrase, min_count, merged.filing())


def fit_cv(make: Callable[..., FoldNormalizer], lexicon: Lexicon | None, docs: Mapping[str, Document], gold: Mapping[str, list[Mention]],
            config: NormalizerConfig, abbreviations: Mapping[str, Sequence[str]] | None = None,
            ) -> tuple[tuple[list[float], float] | None, float, dict[str, Any]]:
    """Fit the re-ranker and the CUI-less threshold on step-7 decisions for held-out notes.

    The notes are split into ``config.folds`` folds; each fold is normalized with the gazetteer of the other
    folds. The re-ranker (logistic regression: is this candidate the gold id?) learns from every candidate; the
    threshold then maximises accuracy on the re-ranked top candidates. ``make``: the normalizer class whose
    instances decide the held-out folds (called as ``make(lexicon, gazetteer, config, abbreviations=...)``).
    """
    ids = sorted(d for d, ms in gold.items() if ms and d in docs)
    if len(ids) < 2:
        return None, config.default_threshold, {"folds": 0, "decisions": 0}
    rng = random.Random(config.seed)
    rng.shuffle(ids)
    k = min(config.folds, len(ids))
    plain = NormalizerConfig(**{**config.to_dict(), "use_threshold": False, "use_ranker": False})
    mentions: list[tuple[str, list[tuple[str, list[float]]], float, str]] = []  # gold, candidates, score, cui
    for f in range(k):
        held = set(ids[f::k])
        train_gold = {d: ms for d, ms in gold.items() if d not in held}
        fold = make(lexicon, gazetteer_lexicon(docs, train_gold) if train_gold else None, plain,
                          abbreviations=abbreviations)
        fold.collect_features = True
        held_ids = sorted(held)
        decided = fold.decide_many([(docs[d], gold[d]) for d in held_ids])
        for d, decisions in zip(held_ids, decided):
            for m, dec in zip(gold[d], decisions):
                if dec.method == "tfidf":
                    mentions.append((m.cui, dec.features, dec.score, dec.cui))
    report: dict[str, Any] = {"folds": k, "decisions": len(mentions)}
    ranker = None
    if config.use_ranker:
        X = [feats for _, cands, _, _ in mentions for _, feats in cands]
        y = [int(c == g) for g, cands, _, _ in mentions for c, _ in cands]
        if 0 < sum(y) < len(y):
            from sklearn.linear_model import LogisticRegression

            model = LogisticRegression(C=1.0, max_iter=1000).fit(X, y)
            ranker = ([float(c) for c in model.coef_[0]], float(model.intercept_[0]))
            report["ranker_candidates"] = len(y)
    scores: list[float] = []
    correct: list[bool] = []
    cuiless: list[bool] = []
    for g, cands, score, cui in mentions:
        if ranker is not None and cands:
            probs = [(sigmoid(sum(a * b for a, b in zip(ranker[0], feats)) + ranker[1]), c) for c, feats in cands]
            score, cui = max(probs, key=lambda pc: pc[0])  # ties: the first, as in CandidateSearch.search's order
        scores.append(score)
        correct.append(cui == g)
        cuiless.append(g == CUI_LESS)
    report["correct_keeping_all"] = sum(correct)
    t = config.default_threshold
    if config.use_threshold:
        t = fit_threshold(scores, correct, cuiless, config.default_threshold)
        report["correct_at_threshold"] = sum(ok if s >= t else rej for s, ok, rej in zip(scores, correct, cuiless))
    return ranker, t, report
