"""Step 7 of the normalizer: the candidate names of a mention by character 3-gram tf-idf over the compiled indexes
of the training gazetteer and the lexicon (:class:`CandidateSearch`), their scores (the re-ranker's features, the
mixed tf-idf/fuzzy score and its bounds, word coverage, added negations) and the best candidate's decision.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache
from typing import Sequence

import numpy as np
from rapidfuzz import fuzz

from share_ner.document import CUI_LESS
from share_ner.features.stopwords import NAME_JOINERS
from share_ner.lexicons.index import SEARCH_MEMO, LexiconIndex, compile_index, fill_memo
from share_ner.lexicons.keys import soft_normalize, stem
from share_ner.lexicons.lexicon import Lexicon
from share_ner.linking.config import Decision, NormalizerConfig
from share_ner.linking.dense import encoder as dense_encoder
from share_ner.linking.dense import name_vectors as dense_name_vectors
from share_ner.linking.dense import nearest

# "breast and ovarian", "breast, ovarian, and colon", "breast and/or ovarian"
COORDINATION = re.compile(r"\s*,\s*(?:and|or)\s+|\s*,\s*|\s+and/or\s+|\s+and\s+|\s+or\s+", re.IGNORECASE)

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
    :meth:`CandidateSearch._skip_bounds` bounds it."""
    return (0 <= cfg.fuzz_weight <= 1 and 0 <= cfg.coverage_weight <= 1 and 0 <= cfg.dense_weight <= 1
            and cfg.context_bonus >= 0 and cfg.thesaurus_weight >= 0)


def labels_of(index: LexiconIndex, rows: list[int], best: str) -> tuple[str, ...]:
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


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x > -50 else 0.0


class CandidateSearch:
    """The tf-idf step of a normalizer over the compiled indexes of its ``lexicon`` and training ``gazetteer``
    (``lex``, ``gaz``: the exact steps read them too): each query's candidate names, their labels and scores, the
    bounds that spare the queries none of whose candidates can reach the threshold, and the best candidate's
    decision per mention."""

    def __init__(self, config: NormalizerConfig, lexicon: Lexicon | None, gazetteer: Lexicon | None) -> None:
        self.config = config
        self.lex: LexiconIndex | None = compile_index(lexicon) if lexicon is not None and len(lexicon) else None
        self.gaz: LexiconIndex | None = compile_index(gazetteer, use_cache=gazetteer.path is not None) \
            if gazetteer is not None and len(gazetteer) else None
        # a gazetteer read from a file, not fitted in memory (a cross-validation fold): its name vectors are cached
        self.persist_gazetteer = gazetteer is not None and gazetteer.path is not None
        self.prior: Counter[str] = Counter()
        if self.gaz is not None:
            for cui, n in zip(self.gaz.cuis, self.gaz.counts):
                self.prior[cui] += int(n)
        # the label of a unique name as a tf-idf candidate, per name of the gazetteer's and the lexicon's index
        self.labels: tuple[dict[int, str], dict[int, str]] = ({}, {})

    def __getstate__(self) -> dict:
        # The per-name labels are per process (they follow the lexicon index's search memo).
        return {**self.__dict__, "labels": ({}, {})}

    def forget_labels(self) -> None:
        """Empty the per-name labels (:meth:`_candidate_label`): the index's search memo was forgotten."""
        self.labels = ({}, {})

    def best(self, index: LexiconIndex, rows: list[int], by_count: bool) -> str:
        """The label of ``rows``: most training count (gazetteer), most training prior, a preferred name, then
        lexicon order (for HPO: a term's first UMLS cross-reference)."""
        votes: dict[str, tuple[int, int, int]] = {}
        for r in rows:
            cui = index.cuis[r]
            n, p, first = votes.get(cui, (0, 0, -r))
            votes[cui] = (n + (int(index.counts[r]) if by_count else 0), max(p, int(index.preferred[r])), first)
        return max(votes, key=lambda c: (votes[c][0], self.prior.get(c, 0), votes[c][1], votes[c][2]))

    def name_vectors(self, index: LexiconIndex) -> np.ndarray:
        """The embeddings of ``index``'s names (``dense``), kept in the on-disk cache unless the index is of a
        gazetteer fitted in memory (no file: a cross-validation fold)."""
        persist = index is self.lex or self.persist_gazetteer
        return dense_name_vectors(index.content_hash, index.unique_names, dense_encoder(), persist=persist)

    def search(self, queries: list[list[str]], threshold: float, ranker: tuple[list[float], float] | None,
               trace: bool, collect_features: bool, context: Sequence[set[str]] | None = None,
               synonyms: Sequence[list[str]] | None = None) -> list[Decision]:
        """Step 7 for all pending mentions, given the normalizer's CUI-less ``threshold`` and re-ranker
        (``ranker``, used under ``use_ranker``); ``context[i]``: labels decided by steps 1-6 in mention i's note;
        ``synonyms[i]``: thesaurus names searched too, their candidates' scores weighted by ``thesaurus_weight``;
        ``collect_features``: each decision keeps its candidates' re-ranker features (for fitting)."""
        cfg = self.config
        synonyms = synonyms if synonyms is not None else [[] for _ in queries]
        thesaurus = [t for qs, syn in zip(queries, synonyms) for t in [False] * len(qs) + [True] * len(syn)]
        queries = [qs + syn for qs, syn in zip(queries, synonyms)]
        flat = [soft_normalize(q) for qs in queries for q in qs]
        coordinated = [COORDINATION.search(q) is not None for qs in queries for q in qs]
        owner = [i for i, qs in enumerate(queries) for _ in qs]
        # cui → (score, cosine, fuzz, name, source, ranker features, embedding cosine)
        best: list[dict[str, tuple[float, float, float, str, str, list[float], float | None]]] = \
            [{} for _ in queries]
        scorer = getattr(fuzz, cfg.fuzz_scorer)
        ranker = ranker if cfg.use_ranker else None
        indexes = [(index, source) for index, source in ((self.gaz, "train"), (self.lex, "lexicon"))
                   if index is not None]
        # A query none of whose candidates can reach the CUI-less threshold cannot decide its mention: its
        # candidates are not scored, nor, under `dense`, is it embedded (see _skip_bounds).
        live = list(range(len(flat)))
        skipped: dict[int, float] = {}  # mention → highest bound of its skipped queries
        skipping = cfg.use_threshold and ranker is None and not trace and not collect_features \
            and _bounded(cfg) \
            and threshold > _mixed_score(cfg, 0.0, 1.0, 0.0, 1.0, 0.0 if cfg.dense else None, True)
        if skipping and not cfg.dense:
            # Only the live queries are searched in full; the others need their best cosine, which a large
            # index finds by blocks of names (LexiconIndex.top_cosines), and to know whether they have a
            # candidate at all.
            searched, live = self._search_live(indexes, flat, thesaurus, coordinated, owner, skipped, threshold)
            skipping = False
        else:
            searched = [(index, source, index.search(flat, cfg.top_k)) for index, source in indexes]
        if skipping:
            # (a threshold no higher than the lowest bound there can be skips nothing: no bounds computed)
            live = []
            for q_i, bound in enumerate(self._skip_bounds(flat, thesaurus, [found for _, _, found in searched])):
                if bound >= threshold:
                    live.append(q_i)
                elif bound > skipped.get(owner[q_i], -1.0) and (
                        # it has a candidate, so its mention is CUI-less by the threshold, not for want of one
                        any(self._candidate_label(index, u, flat[q_i], coordinated[q_i]) is not None
                            for index, _, found in searched for u, _ in found[q_i])
                        or (cfg.dense and any(index.unique_names for index, _, _ in searched))):
                    skipped[owner[q_i]] = bound
            if cfg.dense:
                # Before embedding, a closer bound: the tf-idf hits' own scores, and for the names the embedding
                # may add, a cosine no higher than the query's last hit.
                kept = []
                for q_i in live:
                    bound = self._dense_bound(flat[q_i], coordinated[q_i], thesaurus[q_i],
                                              context[owner[q_i]] if context is not None else set(),
                                              [(index, found[q_i]) for index, _, found in searched])
                    if bound >= threshold:
                        kept.append(q_i)
                    elif bound > skipped.get(owner[q_i], -1.0):
                        skipped[owner[q_i]] = bound  # under dense a query always has candidates (see above)
                live = kept
        live_queries = [flat[q_i] for q_i in live]
        embedded = dense_encoder().encode(live_queries) if cfg.dense and live_queries else None
        for index, source, found in searched:
            vectors = None
            hits_of = [found[q_i] for q_i in live]
            if embedded is not None:
                vectors = self.name_vectors(index)
                hits_of = _with_nearest(index, live_queries, hits_of, embedded, vectors, cfg.dense_top_k)
            for row, (q_i, hits) in enumerate(zip(live, hits_of)):
                q = flat[q_i]
                k = owner[q_i]
                slot = best[k]
                similarities = (vectors[[u for u, _ in hits]].astype(np.float32, copy=False) @ embedded[row]).tolist() \
                    if vectors is not None and hits else []
                for h, (u, cos) in enumerate(hits):
                    cui = self._candidate_label(index, u, q, coordinated[q_i])
                    if cui is None:
                        continue
                    name = index.unique_names[u]
                    fz = scorer(q, name) / 100.0
                    in_context = bool(context is not None and cui in context[k])
                    feats = _candidate_features(q, name, cos, fz, self.prior.get(cui, 0), in_context,
                                                source == "train") if ranker or collect_features else []
                    similarity = similarities[h] if similarities else None
                    if ranker is not None:
                        score = sigmoid(sum(a * b for a, b in zip(ranker[0], feats)) + ranker[1])
                    else:
                        score = _mixed_score(cfg, cos, fz, cfg.context_bonus if in_context else 0.0,
                                             word_coverage(q, name) if cfg.coverage_weight else 0.0, similarity,
                                             thesaurus[q_i])
                    prev = slot.get(cui)
                    if prev is None or score > prev[0]:
                        slot[cui] = (score, cos, fz, name, f"{source} via {q!r}" if thesaurus[q_i] else source, feats,
                                     similarity)
        decisions = []
        for k, slot in enumerate(best):
            if not slot:
                # every query skipped (or left without candidates): the bound is all that is known of its score
                decisions.append(Decision(CUI_LESS, "threshold", skipped[k]) if k in skipped
                                 else Decision(CUI_LESS, "none", 0.0))
                continue
            ranked = sorted(slot.items(), key=lambda kv: (-kv[1][0], -self.prior.get(kv[0], 0), kv[0]))
            cui, (score, _, _, name, source, _, _) = ranked[0]
            d = Decision(cui, "tfidf", score, name)
            if cfg.use_threshold and score < threshold:
                d = Decision(CUI_LESS, "threshold", score, name)
            if trace:
                index = self.gaz if source.startswith("train") else self.lex
                rows = index.unique.get(name) if index is not None else None  # names are soft-normalised
                d.name_labels = labels_of(index, rows, cui) if rows else ()
                d.candidates = [{"cui": c, "name": n, "source": src, "cosine": round(cs, 4), "fuzz": round(f, 4),
                                 **({"dense": round(e, 4)} if e is not None else {}), "score": round(s, 4)}
                                for c, (s, cs, f, n, src, _, e) in ranked[:cfg.top_k]]
            if collect_features:
                d.features = [(c, v[5]) for c, v in ranked]
            decisions.append(d)
        return decisions

    def _search_live(self, indexes: list[tuple[LexiconIndex, str]], flat: list[str], thesaurus: list[bool],
                     coordinated: list[bool], owner: list[int], skipped: dict[int, float], threshold: float,
                     ) -> tuple[list[tuple[LexiconIndex, str, list[list[tuple[int, float]]]]], list[int]]:
        """The queries whose bound (:meth:`_skip_bounds`) reaches the threshold, with their hits per index (the
        other queries' hits left empty), and, in ``skipped``, the bound of each other mention that has a
        candidate: what the search of every query followed by the bounds gives, without searching all of them.
        A query's best cosine over each index comes from :meth:`LexiconIndex.top_cosines`; it has a candidate
        when one of the names with that cosine is one (all of them are among its ``top_k`` hits when there are
        no more than ``top_k``); otherwise its hits are searched to tell."""
        k = self.config.top_k
        tops = [index.top_cosines(flat) for index, _ in indexes]
        best = [max((t[q_i][0] for t in tops), default=0.0) for q_i in range(len(flat))]
        bounds = self._skip_bounds(flat, thesaurus, [[[(0, c)] for c in best]])
        live = [q_i for q_i, b in enumerate(bounds) if b >= threshold]
        hits: list[list[list[tuple[int, float]]]] = [[[] for _ in flat] for _ in indexes]
        live_queries = [flat[q_i] for q_i in live]
        for j, (index, _) in enumerate(indexes):
            if live_queries:
                for q_i, found in zip(live, index.search(live_queries, k)):
                    hits[j][q_i] = found
        for q_i, bound in enumerate(bounds):
            if bound >= threshold or bound <= skipped.get(owner[q_i], -1.0):
                continue
            q, coord = flat[q_i], coordinated[q_i]
            has = False
            for j, (index, _) in enumerate(indexes):
                _, at = tops[j][q_i]
                if not at:
                    continue
                if len(at) <= k and any(self._candidate_label(index, u, q, coord) is not None for u in at):
                    has = True
                    break
                found = index.search([q], k)[0]
                if any(self._candidate_label(index, u, q, coord) is not None for u, _ in found):
                    has = True
                    break
            if has:
                skipped[owner[q_i]] = bound
        return [(index, source, h) for (index, source), h in zip(indexes, hits)], live

    def _candidate_label(self, index: LexiconIndex, u: int, query: str, coordinated: bool) -> str | None:
        """The label of unique name ``u`` of ``index`` as a step-7 candidate for ``query``, or None if it is
        passed over."""
        labels = self.labels[index is self.lex]
        cui = labels.get(u)
        if cui is None:
            rows = index.name_rows(u)
            cui = labels[u] = self.best(index, rows, by_count=index is self.gaz) if len(rows) > 1 \
                else index.cuis[rows[0]]
        if self.config.composite_needs_coordination and "+" in cui and not coordinated:
            return None  # a fuzzy match asserts one concept, not several
        if self.config.negation_guard and _adds_negation(query, index.unique_names[u]):
            return None  # "non insulin dependent diabetes" names the opposite of "insulin dependent diabetes"
        return cui

    def _dense_bound(self, query: str, coordinated: bool, thesaurus: bool, context: set[str],
                     found: list[tuple[LexiconIndex, list[tuple[int, float]]]]) -> float:
        """Under ``dense``, a score none of the query's candidates can exceed, computed before it is embedded:
        the best of its tf-idf hits' scores without the embedding and, for a name only the embedding adds, the
        score of one with the cosine of the query's last hit (``top_k`` hits: the highest cosines; fewer: no
        other name shares a 3-gram with it), a perfect rapidfuzz score and word coverage and the context bonus;
        then mixed with an embedding cosine of 1 (see :meth:`_skip_bounds`)."""
        cfg = self.config
        scorer = getattr(fuzz, cfg.fuzz_scorer)
        best = -1.0
        for index, hits in found:
            for u, cos in hits:
                cui = self._candidate_label(index, u, query, coordinated)
                if cui is None:
                    continue
                name = index.unique_names[u]
                best = max(best, _spelling_score(cfg, cos, scorer(query, name) / 100.0,
                                                 cfg.context_bonus if cui in context else 0.0,
                                                 word_coverage(query, name) if cfg.coverage_weight else 0.0))
            if index.unique_names:
                last = hits[-1][1] if len(hits) >= cfg.top_k else 0.0
                best = max(best, _spelling_score(cfg, last + _COSINE_SLACK, 1.0, cfg.context_bonus, 1.0))
        return _finished_score(cfg, best, _EMBEDDING_COSINE_MAX, thesaurus)

    def _skip_bounds(self, flat: list[str], thesaurus: list[bool],
                     found: list[list[list[tuple[int, float]]]]) -> list[float]:
        """Per query, a score that none of its candidates can exceed: the score of a candidate with the query's
        best tf-idf cosine over the indexes (``found``), a perfect rapidfuzz score and word coverage, the
        context bonus and, under ``dense``, an embedding cosine of 1. A name that only the embedding adds has a
        cosine no higher than the query's tf-idf hits, which are the top ``top_k`` by cosine. The score is
        monotone in each of these, and float rounding is monotone too, so a query whose bound is below the
        threshold would leave its mention CUI-less whatever its candidates: with the default model's threshold
        (high: it is fitted on invented notes) that is most queries of clinical notes."""
        cfg = self.config
        out = []
        for q_i in range(len(flat)):
            top = max((hits[q_i][0][1] for hits in found if hits[q_i]), default=0.0)
            out.append(_mixed_score(cfg, top + _COSINE_SLACK, 1.0, cfg.context_bonus, 1.0,
                                    _EMBEDDING_COSINE_MAX if cfg.dense else None, thesaurus[q_i]))
        return out
