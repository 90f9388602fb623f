"""Task 1b: give each disorder mention a CUI from a lexicon, or ``CUI-less``.

The steps, in the order they run (each can be switched off in :class:`NormalizerConfig`; :data:`STEPS` names
them in this order):

1. ``gazetteer`` — the mention string (case-folded) was annotated in training:
   take its most frequent label there (``CUI-less`` included; but a string
   labelled ``CUI-less`` fewer than ``cuiless_min_count`` times that is an exact
   lexicon name goes to step 2 and takes the lexicon's CUI: one annotation is no
   evidence that the lexicon's concept is wrong);
2. ``normalized`` — the normalized key (case, punctuation, spacing, word order,
   plurals and inflections ignored) equals that of a training string or a
   lexicon name;
3. ``abbreviation`` — the mention is a short form defined in the note
   (scispaCy's abbreviation detector) or in the clinical abbreviation list, and
   an expansion matches by step 1 or 2; otherwise the expansions join the
   queries of step 7 (a short form defined in the note, or listed in the site's
   own list, is expanded before step 1: the note says what it means);
4. ``partial`` — a coordination whose parts all match by steps 1-2 ("breast
   and ovarian cancer" → the labels of both, joined by ``+``);
5. ``rewrite`` — the normalized key with one word swapped matches; the swaps
   are learned from pairs of names of one concept that differ by one word
   (:func:`share_ner.lexicons.index.learn_rewrites`), then likewise some
   words against others (``phrase_rewrites``);
6. ``partial`` — the longest suffix of two or more words that matches by steps
   1-2 ("sporadic Wilms tumours" → "Wilms tumours");
7. ``tfidf`` — character 3-gram tf-idf cosine over all training strings and
   lexicon names (one sparse product for all mentions of a note), the top
   candidates re-scored with rapidfuzz and the share of the mention's words
   they contain (:func:`word_coverage`); the best CUI wins; a composite id
   (``D1+D2``) only for a coordinated mention, and no candidate that adds a
   negation the mention lacks (``negation_guard``); a mention that names an
   embedded HPO term is also searched under the term's other names, their
   candidates weighted by ``thesaurus_weight`` (``thesaurus``; off when the
   lexicon holds HPO's names itself); optionally (``dense``, off by default)
   the names nearest by sentence embedding join the candidates and the
   embedding cosine is mixed into every score (:mod:`share_ner.dense`);
8. ``threshold`` — a step-7 decision scoring under a threshold becomes
   ``CUI-less``; the threshold is fitted on the training notes by
   cross-validation to maximise accuracy and saved with the model (without
   training notes: ``default_threshold``).

Then, per note, a training string annotated with several labels takes the one
of them that the note's unambiguous decisions use (``note_consistency``), and,
if ``note_context`` is switched on, the one it carried in the training note
most like this note (:mod:`share_ner.linking.context`).

Every decision is explainable: :meth:`Normalizer.explain` returns the steps
tried, the candidates and their scores.
"""

from __future__ import annotations

import json
import re
import shutil
import warnings
from bisect import bisect_left
from collections import Counter, defaultdict
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from rapidfuzz import fuzz

from share_ner.dense import encoder as dense_encoder
from share_ner.dense import name_vectors
from share_ner.dense import require as require_dense
from share_ner.document import CUI_LESS, Document, Mention
from share_ner.errors import ShareNerError
from share_ner.features.abbreviations import find_definitions
from share_ner.lexicons.abbreviations import load_abbreviations, write_abbreviations
from share_ner.lexicons.abbreviations import merged as merged_abbreviations
from share_ner.lexicons.gazetteer import gazetteer_lexicon, mention_string
from share_ner.lexicons.hpo import SOURCE as HPO_SOURCE
from share_ner.lexicons.hpo import synonym_sets as hpo_synonym_sets
from share_ner.lexicons.index import SEARCH_MEMO, LexiconIndex, compile_index, exact_key, normalized_key, soft_normalize
from share_ner.lexicons.lexicon import Lexicon, write_lexicon
from share_ner.lexicons.loader import load_lexicon
from share_ner.linking.candidates import (
    _COSINE_SLACK,
    _EMBEDDING_COSINE_MAX,
    FEATURES,
    _adds_negation,
    _bounded,
    _candidate_features,
    _finished_score,
    _labels_of,
    _mixed_score,
    _sigmoid,
    _spelling_score,
    _with_nearest,
    word_coverage,
)
from share_ner.linking.config import Decision, NormalizerConfig
from share_ner.linking.context import NoteContexts, word_counts
from share_ner.linking.fitting import _fit_cv, _merged_rewrites
from share_ner.linking.store import COPY_LIMIT_BYTES, FORMAT_VERSION, LEGACY_SETTINGS, _load_reference, check_saved
from share_ner.model import NORMALIZER_FILES

# "breast and ovarian", "breast, ovarian, and colon", "breast and/or ovarian"
_COORDINATION = re.compile(r"\s*,\s*(?:and|or)\s+|\s*,\s*|\s+and/or\s+|\s+and\s+|\s+or\s+", re.IGNORECASE)


def _prefer_note_labels(decisions: Sequence[Decision | None]) -> None:
    """A training string annotated with several labels takes, among them, the one label that the note's
    unambiguous decisions use ("hereditary breast cancer" in a note about hereditary breast and ovarian cancer)."""
    settled = {d.cui for d in decisions if d is not None and not d.alternatives and d.cui != CUI_LESS}
    for d in decisions:
        if d is None or not d.alternatives or d.cui in settled:
            continue
        in_note = [c for c in d.alternatives if c in settled]
        if len(in_note) == 1:
            d.cui = in_note[0]


def _prefer_similar_notes(contexts: NoteContexts, doc: Document, decisions: Sequence[Decision | None]) -> None:
    """A training string annotated with several labels takes the one it had in the training note most like
    ``doc`` ("psychosis" in a note like those where it meant drug-induced psychosis); a tie keeps the label."""
    note = sims = None
    for d in decisions:
        if d is None or not d.alternatives or exact_key(d.matched) not in contexts.where:
            continue
        if note is None:
            note = word_counts(doc.text)
            sims = contexts.similarities(note)
        nearest = contexts.nearest(note, sims, d.matched, [d.cui, *d.alternatives])
        if nearest:
            d.context = nearest
            d.cui = max(nearest, key=lambda c: (nearest[c], c == d.cui))


def _paired_definitions(doc: Document, mentions: Sequence[Mention]) -> dict[str, str]:
    """Short forms the mentions themselves define: mention A directly followed by "(B)" where B is a mention
    ("myotonic dystrophy (DM)"), which catches definitions whose letters do not line up for the detector."""
    starts = {m.spans[0]: m for m in mentions if len(m.spans) == 1}
    out: dict[str, str] = {}
    for m in mentions:
        after = doc.text[m.end:m.end + 16]
        match = _PAREN.match(after)
        if match is None:
            continue
        s = m.end + match.start(1)
        b = starts.get((s, m.end + match.end(1)))
        if b is not None and b is not m:
            short = doc.text[b.start:b.end].strip()
            out.setdefault(short, " ".join(mention_string(doc, m).split()))
    return out


_PAREN = re.compile(r"\s*\(\s*([^()\s][^()]{0,11}?)\s*\)")


def _may_be_defined(mention: str, text: str | tuple[frozenset[str], frozenset[str]]) -> bool:
    """Cheap test before running the abbreviation detector on a note: does a short, capitalised word of the
    mention appear next to a parenthesis ("long form (SF)" or "SF (long form)")? ``text``: the note, or its
    :func:`_parenthesis_runs`."""
    after, before = _parenthesis_runs(text) if isinstance(text, str) else text
    return any(w in after or w in before for w in _short_capitalised(mention))


@lru_cache(maxsize=100_000)
def _short_capitalised(mention: str) -> tuple[str, ...]:
    """The words of ``mention`` that :func:`_may_be_defined` looks for: of at most 10 characters, one of them
    upper case (per string: notes repeat their mentions)."""
    return tuple(w for w in mention.split() if len(w) <= 10 and any(c.isupper() for c in w))


_AFTER_PARENTHESIS = re.compile(r"\((?=(\S{1,10}))")


def _parenthesis_runs(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """What :func:`_may_be_defined` looks for, once per note instead of a scan of the note per mention: every
    beginning of the first (up to 10) non-space characters after each "(", and every end of the last (up to 10)
    before each " (". A word ``w`` without spaces, of at most 10 characters, is in the note as "(w" exactly when
    it is one of the first, and as "w (" exactly when it is one of the second."""
    after = {m.group(1) for m in _AFTER_PARENTHESIS.finditer(text)}
    before = set()
    p = text.find(" (")
    while p >= 0:
        chunk = text[max(0, p - 10):p]
        if chunk and not chunk[-1].isspace():
            before.add(chunk.split()[-1])
        p = text.find(" (", p + 1)
    return (frozenset(r[:n] for r in after for n in range(1, len(r) + 1)),
            frozenset(r[-n:] for r in before for n in range(1, len(r) + 1)))


def _clinical_abbreviations() -> dict[str, list[str]]:
    """The packaged clinical abbreviation list (none if it cannot be read)."""
    try:
        return {k: list(v) for k, v in load_abbreviations().items()}
    except (ShareNerError, OSError):
        return {}


class Normalizer:
    """Assigns CUIs to mentions; see the module docstring for the steps."""

    def __init__(self, lexicon: Lexicon | None = None, gazetteer: Lexicon | None = None,
                 config: NormalizerConfig | None = None, threshold: float | None = None,
                 abbreviations: Mapping[str, Sequence[str]] | None = None) -> None:
        self.config = config or NormalizerConfig()
        self.lexicon = lexicon
        self.gazetteer = gazetteer
        self.threshold_ = self.config.default_threshold if threshold is None else float(threshold)
        self.fit_report_: dict[str, Any] = {}
        self._lex: LexiconIndex | None = compile_index(lexicon) if lexicon is not None and len(lexicon) else None
        self._gaz: LexiconIndex | None = compile_index(gazetteer, use_cache=gazetteer.path is not None) \
            if gazetteer is not None and len(gazetteer) else None
        self._prior: Counter[str] = Counter()
        if self._gaz is not None:
            for cui, n in zip(self._gaz.cuis, self._gaz.counts):
                self._prior[cui] += int(n)
        self._rewrites = _merged_rewrites(self._gaz, self._lex, self.config.rewrite_min_count)
        if self.config.dense and self.config.use_ranker:
            raise ShareNerError("the dense setting mixes into the hand-weighted tf-idf score; it cannot be "
                                "combined with use_ranker")
        if self.config.dense:
            require_dense()  # a model fitted with it is refused at load, not note by note
        self.ranker_: tuple[list[float], float] | None = None  # (coefficients, intercept) of the re-ranker
        self.contexts_: NoteContexts | None = None  # training notes of ambiguous training strings (note_context)
        self._collect_features = False
        # decisions of the steps that depend on the mention string alone, per string (_remembered)
        self._steps: dict[tuple[str, str], Decision | None] = {}
        self._steps_anchor: dict | None = None
        # the label of a unique name as a tf-idf candidate, per name of the gazetteer's and the lexicon's index
        self._labels: tuple[dict[int, str], dict[int, str]] = ({}, {})
        self._abbreviations: dict[str, list[str]] | None = None  # the site's list, then the packaged one
        self.site_abbreviations: dict[str, list[str]] = {}
        self.use_site_abbreviations(abbreviations or {})

    def use_site_abbreviations(self, abbreviations: Mapping[str, Sequence[str]]) -> None:
        """Expand abbreviations by a site's own list (``{abbreviation: [expansion, ...]}``, read by
        :func:`share_ner.lexicons.abbreviations.load_abbreviations`) before the packaged clinical list, instead
        of the site list it had; it is saved with the normalizer."""
        self.site_abbreviations = {a: list(dict.fromkeys(e)) for a, e in abbreviations.items() if e}
        self._abbreviations = None

    def __getstate__(self) -> dict[str, Any]:
        # The per-string step memo is per process (it follows the lexicon index's search memo).
        return {**self.__dict__, "_steps": {}, "_steps_anchor": None, "_labels": ({}, {})}

    # ----------------------------------------------------------------- fitting
    @classmethod
    def fit(cls, lexicon: Lexicon | None, docs: Mapping[str, Document], gold: Mapping[str, list[Mention]],
            config: NormalizerConfig | None = None,
            abbreviations: Mapping[str, Sequence[str]] | None = None) -> "Normalizer":
        """The training gazetteer of ``gold`` plus ``lexicon``, with the CUI-less threshold fitted by
        cross-validation; ``abbreviations``: a site's own list, tried before the packaged one."""
        config = config or NormalizerConfig()
        gazetteer = gazetteer_lexicon(docs, gold) if gold else None
        norm = cls(lexicon, gazetteer, config, abbreviations=abbreviations)
        if config.note_context and config.use_gazetteer and gold:
            norm.contexts_ = NoteContexts.fit(docs, gold)
        if (config.use_threshold or config.use_ranker) and config.use_tfidf and gold:
            norm.ranker_, norm.threshold_, norm.fit_report_ = _fit_cv(cls, lexicon, docs, gold, config,
                                                                       norm.site_abbreviations)
        return norm

    # ------------------------------------------------------------ normalizing
    def normalize(self, doc: Document, mentions: Sequence[Mention]) -> list[Mention]:
        """The mentions with their CUI (re)assigned, in the same order."""
        return [m.with_cui(d.cui) for m, d in zip(mentions, self.decide(doc, mentions))]

    def explain(self, doc: Document, mention: Mention) -> dict[str, Any]:
        """The decision for one mention: label, step, score, threshold, steps tried and candidates."""
        d = self.decide(doc, [mention], trace=True)[0]
        return {"doc_id": doc.id, "spans": [list(s) for s in mention.spans], "text": mention_string(doc, mention),
                "cui": d.cui, "method": d.method, "score": round(d.score, 4), "matched": d.matched,
                "threshold": round(self.threshold_, 4) if self.config.use_threshold else None,
                "other_labels": [c for c in d.name_labels if c != d.cui],
                "tried": d.tried, "candidates": d.candidates,
                "note_context": {c: round(s, 4) for c, s in d.context.items()}}

    def decide(self, doc: Document, mentions: Sequence[Mention], trace: bool = False) -> list[Decision]:
        """One :class:`Decision` per mention; the tf-idf step runs once for all mentions that reach it."""
        return self.decide_many([(doc, mentions)], trace)[0]

    def normalize_many(self, batch: Sequence[tuple[Document, Sequence[Mention]]]) -> list[list[Mention]]:
        """:meth:`normalize` for several notes, with one tf-idf product for all of them (many short notes)."""
        return [[m.with_cui(d.cui) for m, d in zip(ms, ds)]
                for (_, ms), ds in zip(batch, self.decide_many(batch))]

    def decide_many(self, batch: Sequence[tuple[Document, Sequence[Mention]]],
                    trace: bool = False) -> list[list[Decision]]:
        """Decisions for the mentions of several notes; steps 1-6 per mention, step 7 once for the batch."""
        cfg = self.config
        out: list[list[Decision | None]] = [[None] * len(ms) for _, ms in batch]
        # (note, position, queries, thesaurus queries, tried)
        pending: list[tuple[int, int, list[str], list[str], list[str]]] = []
        self._fresh_memos()
        def step(fn: Callable[[str, list[str]], Decision | None], text: str, tried: list[str]) -> Decision | None:
            return fn(text, tried) if trace else self._remembered(fn, text)

        for n, (doc, mentions) in enumerate(batch):
            definitions: dict[str, str] | None = None
            paired = _paired_definitions(doc, mentions) if cfg.use_abbreviations else {}
            parens = _parenthesis_runs(doc.text) if cfg.use_abbreviations else (frozenset(), frozenset())
            for i, m in enumerate(mentions):
                text = mention_string(doc, m) if m.end <= len(doc.text) else ""
                if not text.strip():
                    out[n][i] = Decision(CUI_LESS, "empty", 1.0)
                    continue
                tried: list[str] = []
                d = None
                if cfg.use_abbreviations and cfg.defined_first and _may_be_defined(text, parens):
                    # A short form defined in this note means what the note says, whatever it meant in training.
                    if definitions is None:
                        definitions = {**paired, **self._definitions(doc)}
                    long_form = definitions.get(text.strip())
                    if long_form:
                        d = step(self._exact_steps, long_form, tried)
                        if d is not None:
                            d.method, d.matched = "abbreviation", long_form
                if d is None and cfg.use_abbreviations and self.site_abbreviations:
                    # The site's own list says what its abbreviations mean, before what training or the lexicon
                    # say the short form itself means ("MI" is *myocardial infarction* in HPO).
                    for exp in self._site_expansions(text):
                        d = step(self._exact_steps, exp, tried)
                        if d is not None:
                            d.method, d.matched = "abbreviation", exp
                            break
                if d is None:
                    d = step(self._exact_steps, text, tried)
                expansions: list[str] = []
                if d is None and cfg.use_abbreviations:
                    if definitions is None and _may_be_defined(text, parens):
                        definitions = {**paired, **self._definitions(doc)}
                    expansions = self._expansions(text, definitions or {})
                    for exp in expansions:
                        d = step(self._exact_steps, exp, tried)
                        if d is not None:
                            d.method, d.matched = "abbreviation", exp
                            break
                if d is None and cfg.use_partial:
                    d = step(self._coordination, text, tried)
                if d is None and cfg.use_rewrites:
                    d = step(self._rewrite, text, tried)
                if d is None and cfg.use_partial:
                    d = step(self._partial, text, tried)
                if d is None:
                    if cfg.use_tfidf:
                        # A short form defined in the note is searched by its long form only: the letters of
                        # "WFS" say little, "Wolfram syndrome" says what it is.
                        long_form = definitions.get(text.strip()) if definitions else None
                        queries = [long_form] if long_form else [text] + expansions
                        pending.append((n, i, queries, self._synonyms(queries), tried))
                        continue
                    d = Decision(CUI_LESS, "none", 0.0)
                d.tried = tried if trace else []
                out[n][i] = d
        if pending:
            seen: list[set[str]] = [{d.cui for d in ds if d is not None and d.cui != CUI_LESS} for ds in out]
            for (n, i, _, _, tried), d in zip(pending, self._tfidf([p[2] for p in pending], trace,
                                                                   [seen[p[0]] for p in pending],
                                                                   [p[3] for p in pending])):
                d.tried = tried + ["tfidf"] if trace else []
                out[n][i] = d
        if cfg.note_consistency:
            for ds in out:
                _prefer_note_labels(ds)
        if cfg.note_context and self.contexts_ is not None:
            for (doc, _), ds in zip(batch, out):
                _prefer_similar_notes(self.contexts_, doc, ds)
        return [[d for d in ds if d is not None] for ds in out]

    def _remembered(self, fn: Callable[[str, list[str]], Decision | None], text: str) -> Decision | None:
        """``fn(text)`` for one of the steps that depend on the mention string alone (exact, coordination,
        rewrite, suffix), remembered per string: clinical notes repeat their disorder names. A copy, since
        decisions are edited afterwards. The memo lives and is forgotten with the lexicon index's search memo
        (:meth:`LexiconIndex.forget_searches`), and holds up to :data:`SEARCH_MEMO` strings."""
        if self._steps_anchor is None:  # no index whose search memo it follows (see _fresh_memos)
            return fn(text, [])
        key = (fn.__name__, text)
        steps = self._steps
        try:
            d = steps[key]
        except KeyError:
            if len(steps) >= SEARCH_MEMO:
                steps.clear()
            d = steps[key] = fn(text, [])
        if d is None:
            return None
        copy = object.__new__(Decision)  # dataclasses.replace(d) (every field as it is) without its checks
        copy.__dict__.update(d.__dict__)
        return copy

    def _fresh_memos(self) -> None:
        """Empty the per-string step memo and the per-name labels (:meth:`_candidate_label`) if the lexicon
        index's search memo was forgotten since they were filled (checked once per :meth:`decide_many`)."""
        anchor = self._lex if self._lex is not None else self._gaz
        if anchor is None:
            return
        found = anchor.__dict__.setdefault("_found", {})
        if self._steps_anchor is not found:
            self._steps_anchor, self._steps, self._labels = found, {}, ({}, {})

    def _exact_steps(self, text: str, tried: list[str]) -> Decision | None:
        cfg = self.config
        lexicon_first = False
        if cfg.use_gazetteer and self._gaz is not None:
            tried.append(f"gazetteer:{text}")
            rows = self._gaz.exact.get(exact_key(text))
            if rows:
                best = self._best(self._gaz, rows, by_count=True)
                if best == CUI_LESS and self._lex is not None and self._lex.exact.get(exact_key(text)) and sum(
                        int(self._gaz.counts[r]) for r in rows if self._gaz.cuis[r] == CUI_LESS) < cfg.cuiless_min_count:
                    rows, lexicon_first = [], True  # too few CUI-less labels to overrule an exact lexicon name
            if rows:
                others = tuple(dict.fromkeys(c for r in rows if (c := self._gaz.cuis[r]) != best))
                return Decision(best, "gazetteer", 1.0, text, alternatives=others, name_labels=(best, *others))
        if cfg.use_normalized:
            key = normalized_key(text)
            ex = exact_key(text)
            tried.append(f"normalized:{key}")
            gaz = self._gaz if cfg.use_gazetteer else None
            for index in (self._lex, gaz) if lexicon_first else (gaz, self._lex):
                if index is None:
                    continue
                # A case-insensitive exact name beats one equal only after stemming and synonym folding.
                rows = (index.exact.get(ex) if index is self._lex else None) or index.key.get(key)
                if rows:
                    best = self._best(index, rows, by_count=index is self._gaz)
                    others = tuple(dict.fromkeys(c for r in rows if (c := index.cuis[r]) != best))
                    return Decision(best, "normalized", 1.0, text, alternatives=others if index is self._gaz else (),
                                    name_labels=(best, *others))
        return None

    def _rewrite(self, text: str, tried: list[str]) -> Decision | None:
        """The normalized key with one word swapped for another that names the same thing in other concepts' names
        ("renal impairment" → "renal dysfunction") equals that of a training string or lexicon name; the swap
        seen in the most concepts wins. Then, likewise, words against other words ("abnormality of the sacrum" →
        "abnormal sacrum morphology", "outermost bone" → "distal phalanx"), when ``phrase_rewrites`` is on."""
        if self._rewrites is None or not self.config.use_normalized:
            return None
        swaps, phrases = self._rewrites
        words = normalized_key(text).split()
        # Only the variants that are a key of an index are kept (the first of them in the order below wins): a
        # large lexicon's swaps make tens of variants of a mention, and few of them name anything.
        gaz = self._gaz if self.config.use_gazetteer else None
        gaz_keys = gaz.key.ids if gaz is not None else {}
        lex_keys = self._lex.key.ids if self._lex is not None else {}
        variants: list[tuple[int, str]] = []
        for i, w in enumerate(words):
            swapped = swaps.get(w, ())
            if not swapped:
                continue
            rest = words[:i] + words[i + 1:]  # sorted, as the key's words are
            for b, n in swapped:
                at = bisect_left(rest, b)
                variant = " ".join([*rest[:at], b, *rest[at:]])
                if variant in gaz_keys or variant in lex_keys:
                    variants.append((n, variant))
        variants.sort(key=lambda v: -v[0])  # stable: ties keep word order
        if self.config.phrase_rewrites and phrases:
            longer: list[tuple[int, str]] = []
            present = set(words)
            bag: Counter | None = None
            for w in present:
                filed = phrases.get(w)
                if not filed:
                    continue
                for a_set, a_bag, a_words, swapped in (entry for other in (None, *present) if other != w
                                                       for entry in filed.get(other, ())):
                    if not a_set <= present:
                        continue
                    if a_bag is not None:
                        bag = bag or Counter(words)
                        if not a_bag <= bag:
                            continue
                    rest = list(words)
                    for x in a_words:
                        rest.remove(x)
                    for b_words, n in swapped:
                        variant = " ".join(sorted([*rest, *b_words]))
                        if variant in gaz_keys or variant in lex_keys:
                            longer.append((n, variant))
            longer.sort(key=lambda v: (-v[0], v[1]))  # ties by the variant: the same order in every process
            variants += longer
        tried.append("rewrite")
        for _, variant in variants:
            for index in (gaz, self._lex):
                rows = index.key.get(variant) if index is not None else None
                if rows:
                    best = self._best(index, rows, by_count=index is self._gaz)
                    return Decision(best, "rewrite", 1.0, text, name_labels=_labels_of(index, rows, best))
        return None

    def _coordination(self, text: str, tried: list[str]) -> Decision | None:
        """A coordinated mention whose parts all match by steps 1-2: 'breast and ovarian cancer' → the labels of
        'breast cancer' and 'ovarian cancer' joined by '+' in text order (NCBI/BC5CDR composite ids); parts share
        a head noun written last, or leading words written first ('ventricular tachycardia and fibrillation')."""
        parts = [p for p in _COORDINATION.split(text) if p and p.strip()]
        if len(parts) < 2:
            return None
        last_words = parts[-1].split()
        head = last_words[-1] if len(last_words) > 1 else ""
        first_words = parts[0].split()
        # "ventricular tachycardia and fibrillation": one-word parts after the first share its leading words
        modifier = " ".join(first_words[:-1]) if not head and len(first_words) > 1 else ""
        labels: list[str] = []
        for i, part in enumerate(parts):
            d = None
            if modifier and i > 0 and len(part.split()) == 1:
                d = self._exact_steps(f"{modifier} {part}", tried)
            if d is None:
                d = self._exact_steps(part, tried) if len(part.split()) > 1 or not head else None
            if d is None and head and i < len(parts) - 1:
                d = self._exact_steps(f"{part} {head}", tried)  # shared head noun
            if d is None or d.cui == CUI_LESS:
                return None
            labels.extend(c for c in d.cui.split("+") if c not in labels)
        return Decision("+".join(labels), "partial", 1.0, " | ".join(parts))

    def _partial(self, text: str, tried: list[str]) -> Decision | None:
        """The longest word suffix (of ``partial_min_words`` or more words) that matches by steps 1-2 ('sporadic Wilms tumours' →
        'Wilms tumours'): disorder names put their head last, and leading modifiers are often unseen."""
        words = text.split()
        for start in range(1, len(words) - self.config.partial_min_words + 1):
            suffix = " ".join(words[start:])
            d = self._exact_steps(suffix, tried)
            if d is not None:
                d.method, d.matched = "partial", suffix
                return d
        return None

    def _best(self, index: LexiconIndex, rows: list[int], by_count: bool) -> str:
        """The label of ``rows``: most training count (gazetteer), most training prior, a preferred name, then
        lexicon order (for HPO: a term's first UMLS cross-reference)."""
        votes: dict[str, tuple[int, int, int]] = {}
        for r in rows:
            cui = index.cuis[r]
            n, p, first = votes.get(cui, (0, 0, -r))
            votes[cui] = (n + (int(index.counts[r]) if by_count else 0), max(p, int(index.preferred[r])), first)
        return max(votes, key=lambda c: (votes[c][0], self._prior.get(c, 0), votes[c][1], votes[c][2]))

    def _definitions(self, doc: Document) -> dict[str, str]:
        out: dict[str, str] = {}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # spaCy warns when a note defines nothing
                pairs = find_definitions(doc.text)
        except Exception:  # noqa: BLE001 -- a detector failure must not stop normalization; the step is skipped
            return out
        for (ss, se), (ls, le) in pairs:
            out.setdefault(doc.text[ss:se], " ".join(doc.text[ls:le].split()))
        return out

    def _site_expansions(self, text: str) -> list[str]:
        """The expansions of ``text`` in the site's own list (as written, lower case, upper case)."""
        stripped = text.strip()
        found = [e for key in dict.fromkeys((stripped, stripped.lower(), stripped.upper()))
                 for e in self.site_abbreviations.get(key, ())]
        return list(dict.fromkeys(e for e in found if e != text))

    def _expansions(self, text: str, definitions: Mapping[str, str]) -> list[str]:
        if self._abbreviations is None:
            self._abbreviations = merged_abbreviations(self.site_abbreviations, _clinical_abbreviations())
        found: list[str] = []
        stripped = text.strip()
        if stripped in definitions:
            found.append(definitions[stripped])
        for key in (stripped, stripped.lower(), stripped.upper()):
            for exp in self._abbreviations.get(key, ()):
                found.append(exp)
        words = stripped.split()
        if len(words) > 1:
            # Expand abbreviated words inside a longer mention ("LV dysfunction"), first expansion each.
            expanded = [definitions.get(w) or (self._abbreviations.get(w) or self._abbreviations.get(w.lower())
                                               or [w])[0] for w in words]
            if expanded != words:
                found.append(" ".join(expanded))
        return list(dict.fromkeys(e for e in found if e and e != text))

    def _synonyms(self, queries: list[str]) -> list[str]:
        """The other names of each embedded HPO term that one of ``queries`` names (after normalization), unless
        the lexicon holds HPO's names itself (``thesaurus``): "nephroblastoma" → "Wilms tumor", "Wilms tumour"."""
        if not self.config.thesaurus or not self.config.use_tfidf or (self._lex is not None
                                                                      and HPO_SOURCE in self._lex.sources):
            return []
        sets = hpo_synonym_sets()
        keys = {normalized_key(q) for q in queries}
        found = [n for k in keys for names in sets.get(k, ()) for n in names if normalized_key(n) not in keys]
        return list(dict.fromkeys(found))

    def _name_vectors(self, index: LexiconIndex) -> np.ndarray:
        """The embeddings of ``index``'s names (``dense``), kept in the on-disk cache unless the index is of a
        gazetteer fitted in memory (no file: a cross-validation fold)."""
        persist = index is self._lex or (self.gazetteer is not None and self.gazetteer.path is not None)
        return name_vectors(index.content_hash, index.unique_names, dense_encoder(), persist=persist)

    def _tfidf(self, queries: list[list[str]], trace: bool, context: Sequence[set[str]] | None = None,
               synonyms: Sequence[list[str]] | None = None) -> list[Decision]:
        """Step 7 for all pending mentions; ``context[i]``: labels decided by steps 1-6 in mention i's note;
        ``synonyms[i]``: thesaurus names searched too, their candidates' scores weighted by ``thesaurus_weight``."""
        cfg = self.config
        synonyms = synonyms if synonyms is not None else [[] for _ in queries]
        thesaurus = [t for qs, syn in zip(queries, synonyms) for t in [False] * len(qs) + [True] * len(syn)]
        queries = [qs + syn for qs, syn in zip(queries, synonyms)]
        flat = [soft_normalize(q) for qs in queries for q in qs]
        coordinated = [_COORDINATION.search(q) is not None for qs in queries for q in qs]
        owner = [i for i, qs in enumerate(queries) for _ in qs]
        # cui → (score, cosine, fuzz, name, source, ranker features, embedding cosine)
        best: list[dict[str, tuple[float, float, float, str, str, list[float], float | None]]] = \
            [{} for _ in queries]
        scorer = getattr(fuzz, cfg.fuzz_scorer)
        ranker = self.ranker_ if cfg.use_ranker else None
        indexes = [(index, source) for index, source in ((self._gaz, "train"), (self._lex, "lexicon"))
                   if index is not None]
        # A query none of whose candidates can reach the CUI-less threshold cannot decide its mention: its
        # candidates are not scored, nor, under `dense`, is it embedded (see _skip_bounds).
        live = list(range(len(flat)))
        skipped: dict[int, float] = {}  # mention → highest bound of its skipped queries
        skipping = cfg.use_threshold and ranker is None and not trace and not self._collect_features \
            and _bounded(cfg) \
            and self.threshold_ > _mixed_score(cfg, 0.0, 1.0, 0.0, 1.0, 0.0 if cfg.dense else None, True)
        if skipping and not cfg.dense:
            # Only the live queries are searched in full; the others need their best cosine, which a large
            # index finds by blocks of names (LexiconIndex.top_cosines), and to know whether they have a
            # candidate at all.
            searched, live = self._search_live(indexes, flat, thesaurus, coordinated, owner, skipped)
            skipping = False
        else:
            searched = [(index, source, index.search(flat, cfg.top_k)) for index, source in indexes]
        if skipping:
            # (a threshold no higher than the lowest bound there can be skips nothing: no bounds computed)
            live = []
            for q_i, bound in enumerate(self._skip_bounds(flat, thesaurus, [found for _, _, found in searched])):
                if bound >= self.threshold_:
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
                    if bound >= self.threshold_:
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
                vectors = self._name_vectors(index)
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
                    feats = _candidate_features(q, name, cos, fz, self._prior.get(cui, 0), in_context,
                                                source == "train") if ranker or self._collect_features else []
                    similarity = similarities[h] if similarities else None
                    if ranker is not None:
                        score = _sigmoid(sum(a * b for a, b in zip(ranker[0], feats)) + ranker[1])
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
            ranked = sorted(slot.items(), key=lambda kv: (-kv[1][0], -self._prior.get(kv[0], 0), kv[0]))
            cui, (score, _, _, name, source, _, _) = ranked[0]
            d = Decision(cui, "tfidf", score, name)
            if cfg.use_threshold and score < self.threshold_:
                d = Decision(CUI_LESS, "threshold", score, name)
            if trace:
                index = self._gaz if source.startswith("train") else self._lex
                rows = index.unique.get(name) if index is not None else None  # names are soft-normalised
                d.name_labels = _labels_of(index, rows, cui) if rows else ()
                d.candidates = [{"cui": c, "name": n, "source": src, "cosine": round(cs, 4), "fuzz": round(f, 4),
                                 **({"dense": round(e, 4)} if e is not None else {}), "score": round(s, 4)}
                                for c, (s, cs, f, n, src, _, e) in ranked[:cfg.top_k]]
            if self._collect_features:
                d.features = [(c, v[5]) for c, v in ranked]
            decisions.append(d)
        return decisions

    def _search_live(self, indexes: list[tuple[LexiconIndex, str]], flat: list[str], thesaurus: list[bool],
                     coordinated: list[bool], owner: list[int], skipped: dict[int, float],
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
        live = [q_i for q_i, b in enumerate(bounds) if b >= self.threshold_]
        hits: list[list[list[tuple[int, float]]]] = [[[] for _ in flat] for _ in indexes]
        live_queries = [flat[q_i] for q_i in live]
        for j, (index, _) in enumerate(indexes):
            if live_queries:
                for q_i, found in zip(live, index.search(live_queries, k)):
                    hits[j][q_i] = found
        for q_i, bound in enumerate(bounds):
            if bound >= self.threshold_ or bound <= skipped.get(owner[q_i], -1.0):
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
        labels = self._labels[index is self._lex]
        cui = labels.get(u)
        if cui is None:
            rows = index.name_rows(u)
            cui = labels[u] = self._best(index, rows, by_count=index is self._gaz) if len(rows) > 1 \
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

    # ------------------------------------------------------------ persistence
    def save(self, directory: str | Path) -> Path:
        """Write ``normalizer.json`` (config, threshold, lexicon reference) and ``gazetteer.tsv`` into ``directory``.

        The embedded HPO lexicon is referenced by name; a lexicon file by path and content hash, and copied
        into the directory when it is small (under 5 MB); an in-memory lexicon is written there.
        """
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        ref: dict[str, Any] | None = None
        lex = self.lexicon
        if lex is not None:
            if lex.name == "hpo" and lex.path is None:
                ref = {"kind": "hpo", "content_hash": lex.content_hash}
            elif lex.path is not None:
                ref = {"kind": "file", "path": str(Path(lex.path).resolve()), "content_hash": lex.content_hash}
                if Path(lex.path).stat().st_size <= COPY_LIMIT_BYTES:
                    copy = directory / NORMALIZER_FILES.lexicon_copy
                    if not (copy.exists() and copy.samefile(lex.path)):  # saved again where it was loaded from
                        shutil.copyfile(lex.path, copy)
                    ref["copy"] = NORMALIZER_FILES.lexicon_copy
            else:
                write_lexicon(directory / NORMALIZER_FILES.lexicon_copy, lex.entries)
                ref = {"kind": "file", "path": None, "content_hash": lex.content_hash, "copy": NORMALIZER_FILES.lexicon_copy}
        if self.gazetteer is not None:
            write_lexicon(directory / NORMALIZER_FILES.gazetteer, self.gazetteer.entries, with_count=True)
        else:
            (directory / NORMALIZER_FILES.gazetteer).unlink(missing_ok=True)
        if self.contexts_ is not None:
            self.contexts_.save(directory)
        else:
            (directory / NORMALIZER_FILES.contexts).unlink(missing_ok=True)
        if self.site_abbreviations:
            write_abbreviations(directory / NORMALIZER_FILES.abbreviations, self.site_abbreviations)
        else:
            (directory / NORMALIZER_FILES.abbreviations).unlink(missing_ok=True)
        meta = {"format_version": FORMAT_VERSION, "config": self.config.to_dict(), "threshold": self.threshold_,
                "ranker": None if self.ranker_ is None else {"features": list(FEATURES), "coef": self.ranker_[0],
                                                             "intercept": self.ranker_[1]},
                "lexicon": ref, "gazetteer": NORMALIZER_FILES.gazetteer if self.gazetteer is not None else None,
                "contexts": NORMALIZER_FILES.contexts if self.contexts_ is not None else None,
                "abbreviations": NORMALIZER_FILES.abbreviations if self.site_abbreviations else None,
                "fit_report": self.fit_report_}
        tmp = directory / f".{NORMALIZER_FILES.config}.tmp"
        tmp.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        tmp.replace(directory / NORMALIZER_FILES.config)
        return directory

    @classmethod
    def load(cls, directory: str | Path) -> "Normalizer":
        """Read a normalizer written by :meth:`save`; a missing or changed lexicon is a clear error."""
        directory = Path(directory)
        meta_path = directory / NORMALIZER_FILES.config
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ShareNerError(f"{directory}: not a normalizer directory (no {NORMALIZER_FILES.config})") from None
        except (OSError, ValueError) as exc:
            raise ShareNerError(f"{meta_path}: cannot read: {exc}") from None
        check_saved(meta, meta_path)  # a wrong type: one line naming the file
        if meta.get("format_version") != FORMAT_VERSION:
            raise ShareNerError(f"{meta_path}: normalizer format {meta.get('format_version')!r}; "
                                f"this share-ner reads format {FORMAT_VERSION}")
        saved = meta.get("config", {})
        # Saved before word coverage, the thesaurus or the negation guard joined the tf-idf step: keep the step
        # its threshold was fitted on.
        try:
            config = NormalizerConfig.from_dict({**LEGACY_SETTINGS, **saved})
        except ShareNerError as exc:
            raise ShareNerError(f"{meta_path}: {exc}") from None
        lexicon = _load_reference(directory, meta.get("lexicon"))
        gazetteer = load_lexicon(directory / meta["gazetteer"]) if meta.get("gazetteer") else None
        # absent from normalizers saved before site abbreviation lists existed
        abbreviations = load_abbreviations(directory / meta["abbreviations"]) if meta.get("abbreviations") else None
        norm = cls(lexicon, gazetteer, config, meta.get("threshold"), abbreviations)
        norm.fit_report_ = meta.get("fit_report", {})
        if meta.get("contexts"):  # absent from normalizers saved before note_context existed
            norm.contexts_ = NoteContexts.load(directory / meta["contexts"])
        ranker = meta.get("ranker")
        if ranker:
            if ranker.get("features") != list(FEATURES):
                raise ShareNerError(f"{meta_path}: the re-ranker uses features {ranker.get('features')}; "
                                    f"this share-ner computes {list(FEATURES)}")
            norm.ranker_ = ([float(c) for c in ranker["coef"]], float(ranker["intercept"]))
        return norm


def prepare_caches(directory: str | Path) -> None:
    """Load the normalizer saved in ``directory``, which compiles its indexes into the on-disk cache, and for a
    ``dense`` normalizer embed its names into it too: what every worker of ``share-ner tag --jobs N`` would
    otherwise build at once (for a SNOMED CT-sized lexicon, seconds and hundreds of MB each, and minutes of CPU
    for its names' embeddings; benchmarks/results/scale.md)."""
    norm = Normalizer.load(directory)
    if norm.config.dense:
        for index in (norm._lex, norm._gaz):
            if index is not None:
                norm._name_vectors(index)


def normalize_all(normalizer: Normalizer, docs: Mapping[str, Document], mentions: Mapping[str, list[Mention]],
                  batch_size: int = 256) -> dict[str, list[Mention]]:
    """Normalize the mentions of every note, ``batch_size`` notes per tf-idf product; a note id without text is
    an error naming it."""
    out: dict[str, list[Mention]] = {}
    ids = list(mentions)
    for doc_id in ids:
        if doc_id not in docs:
            raise ShareNerError(f"mentions for note {doc_id} but no note text with that id")
    for start in range(0, len(ids), batch_size):
        chunk = ids[start:start + batch_size]
        for doc_id, ms in zip(chunk, normalizer.normalize_many([(docs[d], mentions[d]) for d in chunk])):
            out[doc_id] = ms
    return out


def group_counts(decisions: Sequence[Decision]) -> dict[str, int]:
    """How many decisions each step made."""
    counts: dict[str, int] = defaultdict(int)
    for d in decisions:
        counts[d.method] += 1
    return dict(counts)
