"""Scoring a candidate name for a mention: the features of the re-ranker, the mixed tf-idf/fuzzy score and its
bounds, word coverage and added negations.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from rapidfuzz import fuzz

from share_ner.dense import nearest
from share_ner.features.stopwords import NAME_JOINERS
from share_ner.lexicons.index import SEARCH_MEMO, LexiconIndex, fill_memo, stem
from share_ner.linking.config import NormalizerConfig

FEATURES = ("cosine", "fuzz", "ratio", "partial_ratio", "token_set_ratio", "log_prior", "in_note_context",
            "from_training", "same_last_word", "length_ratio")


def _with_nearest(index: LexiconIndex, queries: list[str], found: list[list[tuple[int, float]]],
                  embedded: np.ndarray, vectors: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
    """tf-idf hits per query plus the ``k`` names nearest by embedding (rows of ``vectors``; ``embedded``: the
    queries' embeddings) that tf-idf did not find, with their tf-idf cosine (computed for the pair) so that every
    candidate is scored the same way. Like the tf-idf hits, the added names depend only on the query, so they are
    remembered (up to :data:`SEARCH_MEMO` queries per index and process; see :meth:`LexiconIndex.search`)."""
    first = {q: i for i, q in reversed(list(enumerate(queries)))}
    memo: dict[tuple[str, int], tuple[tuple[int, float], ...]] = index.memo("nearest")

    def added(keys: list[tuple[str, int]]) -> list[tuple[tuple[int, float], ...]]:
        rows = [first[q] for q, _ in keys]
        extra = [(j, u) for j, (r, close) in enumerate(zip(rows, nearest(embedded[rows], vectors, k)))
                 for u in sorted({u for u, _ in close} - {u for u, _ in found[r]})]
        out: list[list[tuple[int, float]]] = [[] for _ in keys]
        for (j, u), cos in zip(extra, index.cosines([(keys[j][0], u) for j, u in extra])):
            out[j].append((u, cos))
        return [tuple(hits) for hits in out]

    fill_memo(memo, [(q, k) for q in queries], SEARCH_MEMO, added)
    return [list(hits) + list(memo[(q, k)]) for q, hits in zip(queries, found)]


# Slack on the bounds of _skip_bounds: a pair's cosine computed alone (LexiconIndex.cosines) may differ from the
# search product's in the last float32 bits, and embeddings held as float16 are not of norm 1 exactly.
_COSINE_SLACK = 1e-4


_EMBEDDING_COSINE_MAX = 1.01


def _mixed_score(cfg: NormalizerConfig, cos: float, fz: float, bonus: float, coverage: float,
                 similarity: float | None, thesaurus: bool) -> float:
    """The hand-weighted step-7 score of one candidate (see the module docstring)."""
    return _finished_score(cfg, _spelling_score(cfg, cos, fz, bonus, coverage), similarity, thesaurus)


def _spelling_score(cfg: NormalizerConfig, cos: float, fz: float, bonus: float, coverage: float) -> float:
    """The step-7 score before the embedding cosine and the thesaurus weight."""
    w = cfg.fuzz_weight
    score = (1 - w) * cos + w * fz + bonus
    if cfg.coverage_weight:
        score = (1 - cfg.coverage_weight) * score + cfg.coverage_weight * coverage
    return score


def _finished_score(cfg: NormalizerConfig, score: float, similarity: float | None, thesaurus: bool) -> float:
    if similarity is not None:
        score = (1 - cfg.dense_weight) * score + cfg.dense_weight * similarity
    if thesaurus:
        score *= cfg.thesaurus_weight
    return score


def _bounded(cfg: NormalizerConfig) -> bool:
    """Whether :func:`_mixed_score` only grows with each of its inputs (weights between 0 and 1), so that
    :meth:`Normalizer._skip_bounds` bounds it."""
    return (0 <= cfg.fuzz_weight <= 1 and 0 <= cfg.coverage_weight <= 1 and 0 <= cfg.dense_weight <= 1
            and cfg.context_bonus >= 0 and cfg.thesaurus_weight >= 0)


def _labels_of(index: LexiconIndex, rows: list[int], best: str) -> tuple[str, ...]:
    """``best`` and then the other labels of ``rows`` (:attr:`Decision.name_labels`)."""
    return (best, *dict.fromkeys(c for r in rows if (c := index.cuis[r]) != best))


def _candidate_features(query: str, name: str, cos: float, fz: float, prior: int, in_context: bool,
                        from_training: bool) -> list[float]:
    """The re-ranker's view of one (query, candidate name) pair, in the order of :data:`FEATURES`."""
    qw, nw = query.split(), name.split()
    same_last = bool(qw and nw and stem(qw[-1]) == stem(nw[-1]))
    return [cos, fz, fuzz.ratio(query, name) / 100.0, fuzz.partial_ratio(query, name) / 100.0,
            fuzz.token_set_ratio(query, name) / 100.0, math.log1p(prior), float(in_context), float(from_training),
            float(same_last), min(len(query), len(name)) / max(len(query), len(name), 1)]


# Two words agree when their first six letters do (abnormal/abnormality, hemiplegia/hemiplegic); chosen on dev.
COVERAGE_PREFIX = 6


@lru_cache(maxsize=200_000)
def _content_prefixes(text: str) -> tuple[str, ...]:
    # Cached: each query meets top_k candidate names, and names recur across queries.
    return tuple(w[:COVERAGE_PREFIX] for w in text.split() if w not in NAME_JOINERS)


NEGATIONS = frozenset({"no", "non", "not", "without"})


def _adds_negation(query: str, name: str) -> bool:
    """Whether the (soft-normalized) candidate ``name`` has a negation word that ``query`` lacks."""
    added = _negations(name)
    return bool(added) and not added <= _negations(query)


@lru_cache(maxsize=200_000)
def _negations(text: str) -> frozenset[str]:
    return NEGATIONS.intersection(text.split())


def word_coverage(query: str, name: str) -> float:
    """The share of the query's content words that a word of ``name`` agrees with (same first
    :data:`COVERAGE_PREFIX` letters); stop words are not counted. "spotty increased pigmentation" covers 2/3 of
    itself in "spotty decreased pigmentation" and 3/3 in "increased spotty pigmentation"."""
    words = _content_prefixes(query)
    if not words:
        return 0.0
    prefixes = _content_prefixes(name)
    return sum(w in prefixes for w in words) / len(words)


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x > -50 else 0.0
