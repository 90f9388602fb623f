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
   (the Schwartz & Hearst detector, ``share_ner.features.abbreviations``) or in the clinical abbreviation list, and
   an expansion matches by step 1 or 2; otherwise the expansions join the
   queries of step 7 (a short form defined in the note, or listed in the site's
   own list, is expanded before step 1: the note says what it means; so is one
   with several senses in the lists, by the sense the note writes out, else the
   list's first: "CP" is *chest pain* in a note that names chest pain, not the
   *cerebral palsy* of HPO's synonym);
4. ``partial`` — a coordination whose parts all match by steps 1-2 ("breast
   and ovarian cancer" → the labels of both, joined by ``+``);
5. ``rewrite`` — the normalized key with one word swapped matches; the swaps
   are learned from pairs of names of one concept that differ by one word
   (:func:`share_ner.lexicons.rewrites.learn_rewrites`), then likewise some
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
   embedding cosine is mixed into every score (:mod:`share_ner.linking.dense`); the
   search, scores and bounds are :class:`~share_ner.linking.candidates.CandidateSearch`'s;
8. ``threshold`` — a step-7 decision scoring under a threshold becomes
   ``CUI-less``; the threshold is fitted on the training notes by
   cross-validation to maximise accuracy and saved with the model (without
   training notes: ``default_threshold``).

Then, per note, a training string annotated with several labels takes the one
of them that the note's unambiguous decisions use (``note_consistency``), and,
if ``note_context`` is switched on, the one it carried in the training note
most like this note (:mod:`share_ner.linking.context`).

Every decision is explainable: :meth:`Normalizer.explain` returns the steps
tried, the candidates and their scores. A fitted normalizer's files are written and read by
:mod:`share_ner.linking.store`, its threshold and re-ranker fitted by :mod:`share_ner.linking.fitting`.
"""

from __future__ import annotations

import re
import warnings
from bisect import bisect_left
from collections import Counter, defaultdict
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from share_ner.document import CUI_LESS, Document, Mention
from share_ner.errors import ShareNerError
from share_ner.features.abbreviations import find_definitions
from share_ner.features.matcher import contains_keys, term_keys
from share_ner.lexicons.abbreviations import load_abbreviations
from share_ner.lexicons.abbreviations import merged as merged_abbreviations
from share_ner.lexicons.gazetteer import gazetteer_lexicon, mention_string
from share_ner.lexicons.hpo import SOURCE as HPO_SOURCE
from share_ner.lexicons.hpo import synonym_sets as hpo_synonym_sets
from share_ner.lexicons.index import SEARCH_MEMO, LexiconIndex, concept_names
from share_ner.lexicons.keys import exact_key, normalized_key
from share_ner.lexicons.lexicon import Lexicon
from share_ner.linking.candidates import COORDINATION, CandidateSearch, labels_of
from share_ner.linking.config import Decision, NormalizerConfig
from share_ner.linking.context import NoteContexts, word_counts
from share_ner.linking.dense import require as require_dense
from share_ner.linking.fitting import fit_cv, merged_rewrites
from share_ner.linking.store import SavedNormalizer, read_normalizer, write_normalizer


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


def _merged_definitions(paired: Mapping[str, str], detected: Mapping[str, str]) -> dict[str, str]:
    """The long form of each short form: the detector's, unless the mention before the brackets holds it and more
    (the fuller name: "Complement C7 deficiency (C7D)", where the detector's shortest long form is "C7
    deficiency"); a mention that holds less ("heparin-induced [thrombocytopenia] (HIT)") loses to the letters."""
    out = dict(paired)
    for short, long_form in detected.items():
        mention = out.get(short)
        if mention is None or long_form.lower() not in mention.lower():
            out[short] = long_form
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
        self._search = CandidateSearch(self.config, lexicon, gazetteer)  # step 7, over the compiled indexes
        self._lex: LexiconIndex | None = self._search.lex
        self._gaz: LexiconIndex | None = self._search.gaz
        self._rewrites = merged_rewrites(self._gaz, self._lex, self.config.rewrite_min_count)
        if self.config.dense and self.config.use_ranker:
            raise ShareNerError("the dense setting mixes into the hand-weighted tf-idf score; it cannot be "
                                "combined with use_ranker")
        if self.config.dense:
            require_dense()  # a model fitted with it is refused at load, not note by note
        self.ranker_: tuple[list[float], float] | None = None  # (coefficients, intercept) of the re-ranker
        self.contexts_: NoteContexts | None = None  # training notes of ambiguous training strings (note_context)
        self.collect_features = False  # decisions keep their candidates' re-ranker features (fitting reads them)
        # decisions of the steps that depend on the mention string alone, per string (_remembered)
        self._steps: dict[tuple[str, str], Decision | None] = {}
        self._steps_anchor: dict | None = None
        self._abbreviations: dict[str, list[str]] | None = None  # the site's list, then the packaged one
        self.site_abbreviations: dict[str, list[str]] = {}
        self.use_site_abbreviations(abbreviations or {})
        self._names: dict[str, str] | None = None  # CUI -> preferred name (name_of), built on first use

    def use_site_abbreviations(self, abbreviations: Mapping[str, Sequence[str]]) -> None:
        """Expand abbreviations by a site's own list (``{abbreviation: [expansion, ...]}``, read by
        :func:`share_ner.lexicons.abbreviations.load_abbreviations`) before the packaged clinical list, instead
        of the site list it had; it is saved with the normalizer."""
        self.site_abbreviations = {a: list(dict.fromkeys(e)) for a, e in abbreviations.items() if e}
        self._abbreviations = None

    def __getstate__(self) -> dict[str, Any]:
        # The per-string step memo is per process (it follows the lexicon index's search memo).
        return {**self.__dict__, "_steps": {}, "_steps_anchor": None, "_names": None}

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
            norm.ranker_, norm.threshold_, norm.fit_report_ = fit_cv(cls, lexicon, docs, gold, config,
                                                                      norm.site_abbreviations)
        return norm

    # ------------------------------------------------------------ normalizing
    def normalize(self, doc: Document, mentions: Sequence[Mention]) -> list[Mention]:
        """The mentions with their CUI (re)assigned and its preferred name (:meth:`name_of`), in the same order."""
        return [m.with_cui(d.cui, self.name_of(d.cui)) for m, d in zip(mentions, self.decide(doc, mentions))]

    def name_of(self, cui: str) -> str | None:
        """The concept's preferred name: the lexicon's preferred name for ``cui`` (HPO's term name, UMLS's
        preferred term), else its first name there, else the gazetteer's most frequent training string; None
        for ``CUI-less`` or a label neither holds."""
        if cui == CUI_LESS:
            return None
        if self._names is None:
            names: dict[str, str] = dict(concept_names(self.lexicon)) if self.lexicon is not None else {}
            if self.gazetteer is not None:
                counts: dict[str, tuple[int, str]] = {}
                for e in self.gazetteer.entries:
                    if e.cui not in names and e.count > counts.get(e.cui, (0, ""))[0]:
                        counts[e.cui] = (e.count, e.name)
                names.update((c, name) for c, (_, name) in counts.items())
            self._names = names
        return self._names.get(cui)

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
        return [[m.with_cui(d.cui, self.name_of(d.cui)) for m, d in zip(ms, ds)]
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
            note_keys: list[str] | None = None
            paired = _paired_definitions(doc, mentions) if cfg.use_abbreviations else {}
            parens = _parenthesis_runs(doc.text) if cfg.use_abbreviations else (frozenset(), frozenset())
            for i, m in enumerate(mentions):
                text = mention_string(doc, m) if m.end <= len(doc.text) else ""
                if not text.strip():
                    out[n][i] = Decision(CUI_LESS, "empty", 1.0)
                    continue
                tried: list[str] = []
                d = None
                long_form = None  # what the note defines the mention to stand for, if it is a short form
                if cfg.use_abbreviations and cfg.defined_first and _may_be_defined(text, parens):
                    # A short form defined in this note means what the note says, whatever it meant in training.
                    if definitions is None:
                        definitions = _merged_definitions(paired, self._definitions(doc))
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
                if d is None and cfg.use_abbreviations:
                    # An ambiguous short form (CP: chest pain, cerebral palsy ...) means the sense the note writes
                    # out, else its most frequent one (the list's first), whatever one lexicon name says.
                    senses = self._ambiguous_senses(text)
                    if senses:
                        if note_keys is None:
                            note_keys = term_keys(doc.text)
                        written = [e for e in senses if contains_keys(note_keys, term_keys(e))]
                        for exp in dict.fromkeys([*written, *senses]):
                            d = step(self._exact_steps, exp, tried)
                            if d is not None:
                                d.method, d.matched = "abbreviation", exp
                                break
                if d is None:
                    d = step(self._exact_steps, text, tried)
                expansions: list[str] = []
                if d is None and cfg.use_abbreviations:
                    if definitions is None and _may_be_defined(text, parens):
                        definitions = _merged_definitions(paired, self._definitions(doc))
                    expansions = self._expansions(text, definitions or {})
                    for exp in expansions:
                        d = step(self._exact_steps, exp, tried)
                        if d is not None:
                            d.method, d.matched = "abbreviation", exp
                            break
                # A short form defined in the note goes through the remaining steps as its long form, so that it
                # gets the decision its long form gets: the letters of "WFS" say little, "Wolfram syndrome" says
                # what it is.
                if long_form is None and definitions:
                    long_form = definitions.get(text.strip())
                query = long_form or text
                if d is None and cfg.use_partial:
                    d = step(self._coordination, query, tried)
                if d is None and cfg.use_rewrites:
                    d = step(self._rewrite, query, tried)
                if d is None and cfg.use_partial:
                    d = step(self._partial, query, tried)
                if d is None:
                    if cfg.use_tfidf:
                        queries = [long_form] if long_form else [text] + expansions
                        pending.append((n, i, queries, self._synonyms(queries), tried))
                        continue
                    d = Decision(CUI_LESS, "none", 0.0)
                d.tried = tried if trace else []
                out[n][i] = d
        if pending:
            seen: list[set[str]] = [{d.cui for d in ds if d is not None and d.cui != CUI_LESS} for ds in out]
            decided = self._search.search([p[2] for p in pending], self.threshold_, self.ranker_, trace,
                                          self.collect_features, [seen[p[0]] for p in pending], [p[3] for p in pending])
            for (n, i, _, _, tried), d in zip(pending, decided):
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
        """Empty the per-string step memo and the per-name labels of the candidate search if the lexicon
        index's search memo was forgotten since they were filled (checked once per :meth:`decide_many`)."""
        anchor = self._lex if self._lex is not None else self._gaz
        if anchor is None:
            return
        found = anchor.__dict__.setdefault("_found", {})
        if self._steps_anchor is not found:
            self._steps_anchor, self._steps = found, {}
            self._search.forget_labels()

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
                    return Decision(best, "rewrite", 1.0, text, name_labels=labels_of(index, rows, best))
        return None

    def _coordination(self, text: str, tried: list[str]) -> Decision | None:
        """A coordinated mention whose parts all match by steps 1-2: 'breast and ovarian cancer' → the labels of
        'breast cancer' and 'ovarian cancer' joined by '+' in text order (NCBI/BC5CDR composite ids); parts share
        a head noun written last, or leading words written first ('ventricular tachycardia and fibrillation')."""
        parts = [p for p in COORDINATION.split(text) if p and p.strip()]
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
        return self._search.best(index, rows, by_count)

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

    def _ambiguous_senses(self, text: str) -> list[str]:
        """The expansions of a short form with several in the abbreviation lists (the site's, then the packaged
        one), as written; none for any other text."""
        if self._abbreviations is None:
            self._abbreviations = merged_abbreviations(self.site_abbreviations, _clinical_abbreviations())
        senses = self._abbreviations.get(text.strip(), ())
        return list(senses) if len(senses) > 1 else []

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

    # ------------------------------------------------------------ persistence
    def save(self, directory: str | Path) -> Path:
        """Write the normalizer into ``directory`` (:func:`share_ner.linking.store.write_normalizer`)."""
        return write_normalizer(directory, SavedNormalizer(
            self.config, self.lexicon, self.gazetteer, self.threshold_, self.ranker_, self.contexts_,
            self.site_abbreviations, self.fit_report_))

    @classmethod
    def load(cls, directory: str | Path) -> "Normalizer":
        """Read a normalizer written by :meth:`save`; a missing or changed lexicon is a clear error."""
        saved = read_normalizer(directory)
        norm = cls(saved.lexicon, saved.gazetteer, saved.config, saved.threshold, saved.abbreviations)
        norm.fit_report_ = saved.fit_report
        norm.contexts_ = saved.contexts
        norm.ranker_ = saved.ranker
        return norm


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
