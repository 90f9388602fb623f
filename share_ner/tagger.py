"""Training the CRF disorder-mention tagger (ShARe/CLEF 2013 Task 1a).

:func:`train_model` turns notes and gold mentions into a model directory
(see :mod:`share_ner.model`): each sentence (``share_ner.text.split_sentences``) gets
its token features (``share_ner.features.document_items``: the attributes of ``document_features``) and its tags
(``share_ner.encoding.encode_report``, scheme B/I/O/DB/DI/HB/HI or BIO), and is streamed straight
into ``pycrfsuite.Trainer.append`` so no Python copy of the training set is
kept. CRFsuite's passive-aggressive learner (or L-BFGS with the config's
``c1``/``c2``) then fits the weights.

The training-set gazetteer (the training mentions' strings as a term-matcher
source with semantic type ``"train"``) is jackknifed: the feature of a note in
fold *k* comes from the mentions of the other folds, so the CRF learns how much
a hit is worth on text it has not seen instead of learning that every hit is a
mention.

Coordination ellipsis ("renal or liver impairment") is where most discontiguous
mentions come from: :func:`coordination_features` marks conjuncts whose
distributed reading is a known term, and after tagging
:func:`expand_coordinations` completes such mentions the CRF found only in part
(:func:`drop_lone_fragments` removes a D fragment left without its partner).
"""

from __future__ import annotations

import bisect
import ctypes
import logging
import os
import resource
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import pycrfsuite

from share_ner.config import TaggerConfig
from share_ner.document import Document, Mention, Sentence, span_past_end
from share_ner.encoding import decode, encode_report
from share_ner.errors import ShareNerError
from share_ner.features import FeatureResources, TermMatcher
from share_ner.features.clusters import save_clusters
from share_ner.features.items import add_features, document_items
from share_ner.features.matcher import term_keys
from share_ner.model import FILES, write_config, write_terms
from share_ner.text import split_sentences

log = logging.getLogger(__name__)

TRAIN_SEMTYPE = "train"
LEXICON_SEMTYPE = "lexicon"


# --------------------------------------------------------------------------------------------
# Statistics of a training set.
# --------------------------------------------------------------------------------------------


@dataclass
class EncodeCounts:
    """What the tag scheme could and could not hold, counted over the training set."""

    docs: int = 0
    empty_docs: int = 0
    sentences: int = 0
    tokens: int = 0
    mentions: int = 0
    discontiguous: int = 0
    dropped: int = 0
    inexact: int = 0
    cross_sentence: int = 0

    def to_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class TrainingReport:
    """Counts, time and memory of one training run, stored in the model's config.json."""

    counts: EncodeCounts = field(default_factory=EncodeCounts)
    features: int = 0
    seconds: float = 0.0
    peak_rss_mb: float = 0.0
    dev: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"counts": self.counts.to_dict(), "features": self.features,
               "seconds": round(self.seconds, 1), "peak_rss_mb": round(self.peak_rss_mb, 1)}
        if self.dev is not None:
            out["dev"] = self.dev
        return out


def peak_rss_mb() -> float:
    """Peak resident memory of this process in MB (``ru_maxrss`` is KB on Linux, bytes on macOS)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


# --------------------------------------------------------------------------------------------
# Input checks.
# --------------------------------------------------------------------------------------------


def check_gold(docs: Mapping[str, Document], gold: Mapping[str, Sequence[Mention]], what: str = "gold") -> None:
    """Every gold mention must name a given note and lie inside its text; raise one clear line if not."""
    for doc_id, mentions in gold.items():
        doc = docs.get(doc_id)
        if doc is None:
            if mentions:
                raise ShareNerError(f"{what}: annotations for note {doc_id} but no such note among the texts")
            continue
        for m in mentions:
            if m.doc_id != doc_id:
                raise ShareNerError(f"{what}: note {doc_id}: a mention names note {m.doc_id}")
            if problem := span_past_end(doc, m):
                raise ShareNerError(f"{what}: {problem}")


# --------------------------------------------------------------------------------------------
# Term-matcher terms and feature resources.
# --------------------------------------------------------------------------------------------


def lexicon_terms(lexicon: Any) -> Iterator[tuple[str, str]]:
    """``(name, semantic type)`` pairs of a lexicon, one per semantic type (``"lexicon"`` if it has none)."""
    for entry in lexicon.entries:
        semtypes = tuple(entry.semtypes) or (LEXICON_SEMTYPE,)
        for st in semtypes:
            yield entry.name, st


def mention_terms(docs: Mapping[str, Document], gold: Mapping[str, Sequence[Mention]],
                  doc_ids: Iterable[str] | None = None) -> set[str]:
    """Whitespace-normalized strings of the gold mentions of ``doc_ids`` (all notes by default), fragments joined by a space."""
    terms: set[str] = set()
    for doc_id in (gold if doc_ids is None else doc_ids):
        doc = docs.get(doc_id)
        if doc is None:
            continue
        for m in gold.get(doc_id, ()):
            # A discontiguous mention's words ("renal ... impairment") are the distributed
            # term that coordination_features looks for.
            text = " ".join(m.text(doc.text).split())
            if any(c.isalpha() for c in text) and len(text) > 1:
                terms.add(text)
    return terms


@dataclass(frozen=True)
class TaggerResources:
    """What feature building needs: ``share_ner.features.FeatureResources`` and the gazetteer's head words."""

    features: Any
    head_words: frozenset[str] = frozenset()
    # First and last word keys of all terms: a distributed string is looked up only when
    # it could start and end a term, which keeps coordination_features cheap.
    first_keys: frozenset[str] = frozenset()
    last_keys: frozenset[str] = frozenset()

    @property
    def term_matcher(self) -> Any:
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
    from share_ner.lexicons.abbreviations import load_abbreviations

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


def gazetteer_hits(docs: Mapping[str, Document], gold: Mapping[str, Sequence[Mention]],
                   terms: Iterable[str]) -> dict[str, list[tuple[str, bool]]]:
    """Per note, each longest match of the training terms: (normalized term, matches a gold mention exactly)."""
    matcher = TermMatcher.from_terms((t, TRAIN_SEMTYPE) for t in terms)
    out: dict[str, list[tuple[str, bool]]] = {}
    for doc_id, doc in docs.items():
        if not doc.text.strip():
            continue
        spans = {m.spans[0] for m in gold.get(doc_id, ()) if not m.is_discontiguous}
        found = []
        for sentence in split_sentences(doc):
            toks = sentence.tokens
            for m in matcher.find([t.text for t in toks]):
                key = " ".join(term_keys(" ".join(t.text for t in toks[m.start:m.end])))
                found.append((key, (toks[m.start].start, toks[m.end - 1].end) in spans))
        out[doc_id] = found
    return out


def label_reliability(terms: Iterable[str], hits: Mapping[str, list[tuple[str, bool]]],
                      doc_ids: Sequence[str]) -> list[tuple[str, str]]:
    """Training terms labelled ``train`` when at least half their occurrences in ``doc_ids`` are gold
    mentions, else ``train-weak`` (a string often seen unannotated, like "pregnant" in trial criteria)."""
    annotated: dict[str, int] = {}
    total: dict[str, int] = {}
    for doc_id in doc_ids:
        for key, is_gold in hits.get(doc_id, ()):
            total[key] = total.get(key, 0) + 1
            annotated[key] = annotated.get(key, 0) + is_gold
    out = []
    for t in sorted(terms):
        key = " ".join(term_keys(t))
        n = total.get(key, 0)
        weak = n > 0 and 2 * annotated.get(key, 0) < n
        out.append((t, WEAK_TRAIN_SEMTYPE if weak else TRAIN_SEMTYPE))
    return out


# A note repeated to weigh more in training is given the id "<id>~<n>" (share_ner.distant).
COPY_SEP = "~"


def folds_of(doc_ids: Sequence[str], k: int) -> dict[str, int]:
    """Deterministic fold of each note: round robin over the sorted ids; a note's weighted copies (``id~n``)
    share its fold, so the jackknifed training gazetteer never shows a note its own mentions."""
    originals = sorted({doc_id.split(COPY_SEP, 1)[0] for doc_id in doc_ids})
    fold = {doc_id: i % k for i, doc_id in enumerate(originals)}
    return {doc_id: fold[doc_id.split(COPY_SEP, 1)[0]] for doc_id in doc_ids}


# --------------------------------------------------------------------------------------------
# Sequences.
# --------------------------------------------------------------------------------------------


# Tokens that join the conjuncts of a coordination ("renal or liver impairment").
COORDINATORS = frozenset({"or", "and", "and/or", "or/and", "/", ",", "&", "nor", "vs", "versus"})
# Tokens a coordinated phrase does not cross.
_PHRASE_BREAKS = frozenset({".", ";", ":", "(", ")", "[", "]", "with", "without", "who", "which", "that", "for"})
_HEAD_REACH = 15  # tokens scanned for the shared head of a coordination


@lru_cache(maxsize=200_000)
def _word_keys(word: str) -> tuple[str, ...]:
    return tuple(term_keys(word))


@lru_cache(maxsize=200_000)
def _coordination_word(word: str) -> tuple[str, bool, bool, tuple[str, ...]]:
    """(lower case, a coordinator, a content word, term keys) of a token, for :func:`coordination_features`."""
    lower = word.lower()
    coord = lower in COORDINATORS
    content = not coord and lower not in _PHRASE_BREAKS and any(ch.isalnum() for ch in lower)
    return lower, coord, content, _word_keys(word)


def coordination_features(words: Sequence[str], feats: list[dict], matcher: Any,
                          head_words: frozenset[str] = frozenset(),
                          first_keys: frozenset[str] | None = None, last_keys: frozenset[str] | None = None) -> None:
    """Mark coordinations whose distributed reading is a known term (added to ``feats`` in place).

    Coordination ellipsis is where most discontiguous disorder mentions come from:
    in "renal or liver impairment" the mention "renal ... impairment" borrows the head
    of the second conjunct, in "hepatitis B or C" the mention "hepatitis ... C" borrows
    the head of the first. For a conjunct next to a coordinator, the distributed
    string (conjunct + a head up to ``_HEAD_REACH`` tokens away) is looked up in the
    term matcher (lexicon and training-gazetteer terms); on a hit the conjunct tokens
    get ``co.mod``/``co.rmod`` and the head tokens ``co.head``/``co.lhead`` (B/I).
    Without a known term, a conjunct followed (within reach) by one of ``head_words``
    gets ``co.hw_mod`` and that word ``co.hw_head``: the weaker, more general signal.
    """
    n = len(words)
    if n < 3 or matcher is None:
        return
    lower, coord, content, keys = zip(*map(_coordination_word, words))
    if True not in coord:
        return
    lookup = matcher.lookup
    # Could token i start / end a term? (Unknown key sets: assume it could.)
    starts = [bool(k) and (first_keys is None or k[0] in first_keys) for k in keys]
    ends = [bool(k) and (last_keys is None or k[-1] in last_keys) for k in keys]

    def mark(start: int, end: int, key: str) -> None:
        for j in range(start, end + 1):
            feats[j][key] = "B" if j == start else "I"

    for c in range(1, n - 1):
        if not coord[c]:
            continue
        # Head on the right: MOD <c> ... HEAD, with MOD + HEAD a term.
        for a in (c - 1, c - 2):
            if a < 0 or not content[a]:
                break
            if not starts[a]:
                continue
            left = " ".join(words[a:c])
            hit = None
            for h in range(c + 2, min(n, c + 1 + _HEAD_REACH)):
                if lower[h] in _PHRASE_BREAKS:
                    break
                if not content[h]:
                    continue
                for e in range(h, min(n, h + 3)):
                    if not content[e]:
                        break
                    if ends[e] and lookup(left + " " + " ".join(words[h:e + 1])):
                        hit = (h, e)
                if hit:
                    break
            if hit:
                mark(a, c - 1, "co.mod")
                mark(hit[0], hit[1], "co.head")
                break
        if head_words and content[c - 1]:
            for h in range(c + 2, min(n, c + 1 + _HEAD_REACH)):
                if lower[h] in _PHRASE_BREAKS:
                    break
                if lower[h] in head_words:
                    feats[c - 1]["co.hw_mod"] = 1.0
                    feats[h]["co.hw_head"] = 1.0
                    break
        # Head on the left: HEAD ... MOD <c> MOD', with HEAD + MOD' a term ("hepatitis B or C").
        for r in (c + 1, c + 2):
            if r >= n or not content[r]:
                break
            if not ends[r]:
                continue
            right = " ".join(words[c + 1:r + 1])
            hit = None
            for b in range(c - 2, max(-1, c - 1 - _HEAD_REACH), -1):
                if lower[b] in _PHRASE_BREAKS:
                    break
                if not content[b]:
                    continue
                for h in range(b, max(-1, b - 3), -1):
                    if not content[h]:
                        break
                    if starts[h] and lookup(" ".join(words[h:b + 1]) + " " + right):
                        hit = (h, b)
                if hit:
                    break
            if hit:
                mark(hit[0], hit[1], "co.lhead")
                mark(c + 1, r, "co.rmod")
                break


def doc_sequences(doc: Document, resources: Any, features: Any,
                  coordination: bool = False) -> list[tuple[Sentence, list[list[bytes]]]]:
    """The non-empty sentences of a note with their tokens' CRFsuite attributes
    (``share_ner.features.items``: the feature dicts' ``key:value`` names, built once per word type)."""
    if not doc.text.strip():
        return []
    sentences = [s for s in split_sentences(doc) if s.tokens]
    if not sentences:
        return []
    items = document_items(doc, sentences, resources.features, features)
    if coordination and resources.term_matcher is not None:
        for sentence, seq in zip(sentences, items):
            extra: defaultdict[int, dict] = defaultdict(dict)  # coordination_features marks few tokens
            coordination_features([t.text for t in sentence.tokens], extra, resources.term_matcher,  # type: ignore[arg-type]
                                  resources.head_words, resources.first_keys, resources.last_keys)
            if extra:
                add_features(seq, extra, resources.features)
    return list(zip(sentences, items))


def tag_sequences(tagger: pycrfsuite.Tagger, seqs: Sequence[tuple[Sentence, list[dict]]],
                  scheme: str, resources: TaggerResources | None = None,
                  brackets: bool = False) -> list[Mention]:
    """CRF tags for each sentence, decoded into CUI-less mentions.

    With ``resources`` (and the biohd scheme), :func:`expand_coordinations` adds the
    distributed mentions of coordinations the CRF found only in part; with ``brackets``,
    :func:`balance_brackets` repairs mentions with unpaired round brackets.
    """
    mentions: list[Mention] = []
    expand = resources is not None and resources.term_matcher is not None and scheme == "biohd"
    for sentence, feats in seqs:
        tags = tagger.tag(feats)  # pycrfsuite converts the attribute lists once (an ItemSequence would be copied)
        if tags.count("O") == len(tags):
            continue  # most sentences: nothing to decode
        found = decode(sentence, tags, scheme=scheme)
        if expand and found:
            found = drop_lone_fragments(sentence, tags, found, resources)
            found = expand_coordinations(sentence, found, resources)
        if brackets and found:
            found = balance_brackets(sentence, found)
        mentions.extend(found)
    return mentions


def _token_run_of(sentence: Sentence) -> Callable[[int, int], tuple[int, int] | None]:
    """A function mapping a character span to the (first, last) token indices it covers exactly, else None."""
    first = {t.start: i for i, t in enumerate(sentence.tokens)}
    last = {t.end: i for i, t in enumerate(sentence.tokens)}

    def run(start: int, end: int) -> tuple[int, int] | None:
        i, j = first.get(start), last.get(end)
        return None if i is None or j is None else (i, j)

    return run


def _bracket_depth(text: str) -> int:
    return text.count("(") - text.count(")")


def balance_brackets(sentence: Sentence, mentions: list[Mention]) -> list[Mention]:
    """Repair mentions whose round brackets do not pair up, as gold mentions almost never do.

    An open bracket left unclosed at the end is closed by the next token when it is ``)``
    ("polycystic ovary syndrome (PCOS" + ")"); otherwise the mention is cut before it
    ("tricuspid regurgitation (TR" → "tricuspid regurgitation"). A closing bracket with no
    opening one at the start is matched by the token before when it is ``(``, else the
    mention starts after it ("metastatic) malignant melanoma" → "malignant melanoma").
    A mention left with no tokens is dropped. Gold mentions almost never have unpaired
    brackets (docs/tagger.md counts them).
    """
    tokens = sentence.tokens
    if not any("(" in t.text or ")" in t.text for t in tokens):
        return mentions
    token_run = _token_run_of(sentence)
    out: list[Mention] = []
    changed = False
    for m in mentions:
        runs = []
        for s, e in m.spans:
            run = token_run(s, e)
            if run is None:
                break
            runs.append(list(run))
        depth = sum(_bracket_depth(tokens[k].text) for i, j in runs for k in range(i, j + 1))
        if depth == 0 or len(runs) != len(m.spans):
            out.append(m)
            continue
        changed = True
        if depth > 0:
            i, j = runs[-1]
            if j + 1 < len(tokens) and tokens[j + 1].text == ")" and depth == 1:
                runs[-1][1] = j + 1
            else:
                cut = max((k for k in range(i, j + 1) if "(" in tokens[k].text), default=None)
                if cut is None:  # the open bracket is in an earlier fragment: leave the mention alone
                    out.append(m)
                    continue
                if cut > i:
                    runs[-1][1] = cut - 1
                else:
                    runs.pop()
        else:
            i, j = runs[0]
            if i > 0 and tokens[i - 1].text == "(" and depth == -1:
                runs[0][0] = i - 1
            else:
                cut = min((k for k in range(i, j + 1) if ")" in tokens[k].text), default=None)
                if cut is None:
                    out.append(m)
                    continue
                if cut < j:
                    runs[0][0] = cut + 1
                else:
                    runs.pop(0)
        if runs:
            out.append(Mention(m.doc_id, tuple((tokens[i].start, tokens[j].end) for i, j in runs), m.cui, m.type))
    if not changed:
        return mentions
    return sorted(set(out), key=lambda x: x.spans)


def drop_lone_fragments(sentence: Sentence, tags: Sequence[str], mentions: list[Mention],
                        resources: TaggerResources) -> list[Mention]:
    """Drop a mention made of one D fragment alone (its partner was never tagged) unless it is a known term."""
    token_run = _token_run_of(sentence)
    out = []
    for m in mentions:
        run = None if m.is_discontiguous else token_run(m.start, m.end)
        if run is not None and all(tags[k] in ("DB", "DI") for k in range(run[0], run[1] + 1)):
            if not resources.term_matcher.lookup(" ".join(t.text for t in sentence.tokens[run[0]:run[1] + 1])):
                continue
        out.append(m)
    return out


def expand_coordinations(sentence: Sentence, mentions: list[Mention], resources: TaggerResources) -> list[Mention]:
    """Complete coordination ellipses next to tagged mentions when the distributed reading is a known term.

    "renal or [liver impairment]": the conjunct "renal" before a coordinator that precedes a
    tagged multi-token mention borrows its head when "renal impairment" is a lexicon or
    gazetteer term, giving the discontiguous mention "renal … impairment". "[hepatitis B] or C":
    the conjunct after the coordinator borrows the head on the left ("hepatitis … C"). A
    contiguous mention the CRF gave to the bare conjunct alone ("renal", "C") is replaced.
    """
    tokens = sentence.tokens
    n = len(tokens)
    token_run = _token_run_of(sentence)
    lower = [t.text.lower() for t in tokens]
    lookup = resources.term_matcher.lookup
    spans_taken = {m.spans for m in mentions}
    covered: set[int] = set()
    contiguous: dict[tuple[int, int], Mention] = {}
    for m in mentions:
        for s, e in m.spans:
            run = token_run(s, e)
            if run is not None:
                covered.update(range(run[0], run[1] + 1))
        if not m.is_discontiguous:
            run = token_run(m.start, m.end)
            if run is not None:
                contiguous[run] = m

    def content(i: int) -> bool:
        return 0 <= i < n and lower[i] not in COORDINATORS and lower[i] not in _PHRASE_BREAKS \
            and any(ch.isalnum() for ch in lower[i])

    def words(i: int, j: int) -> str:
        return " ".join(t.text for t in tokens[i:j + 1])

    added: list[Mention] = []
    removed: set[tuple[int, int]] = set()
    doc_id = sentence.doc_id

    def free_conjunct(a: int, b: int) -> bool:
        """Tokens a..b are content words, untagged or a bare contiguous mention of their own."""
        return all(content(k) for k in range(a, b + 1)) \
            and not any(k in covered and (a, b) not in contiguous for k in range(a, b + 1))

    def borrow(readings: Iterable[tuple[tuple[int, int], tuple[int, int]]], conjunct: tuple[int, int]) -> bool:
        """Add the first distributed reading (two token runs in text order) that is a known term; False if none."""
        for first, second in readings:
            if lookup(words(*first) + " " + words(*second)):
                spans = tuple((tokens[a].start, tokens[b].end) for a, b in (first, second))
                if spans not in spans_taken:
                    added.append(Mention(doc_id, spans))
                    spans_taken.add(spans)
                    removed.add(conjunct)
                return True
        return False

    for (s, e), m in sorted(contiguous.items()):
        if e - s < 1:
            continue
        # Head on the right: X <coord> [s .. e] -> X + tokens j..e for the longest known head.
        c = s - 1
        if c >= 1 and lower[c] in COORDINATORS:
            x_end = c - 1
            for x_start in (x_end, x_end - 1):
                x = (x_start, x_end)
                if not free_conjunct(*x) or borrow(((x, (j, e)) for j in range(s + 1, e + 1)), x):
                    break
        # Head on the left: [s .. e] <coord> X -> tokens s..j + X.
        c = e + 1
        if c + 1 < n and lower[c] in COORDINATORS:
            for x_end in (c + 1, c + 2):
                x = (c + 1, x_end)
                if not free_conjunct(*x) or borrow((((s, j), x) for j in range(e - 1, s - 1, -1)), x):
                    break
    if not added:
        return mentions
    # A bare conjunct that is itself a known term ("asthma or COPD") stays a mention too.
    removed = {r for r in removed if r in contiguous and not lookup(words(*r))}
    kept = [m for m in mentions if not any(contiguous.get(r) is m for r in removed)]
    return sorted(kept + added, key=lambda m: m.spans)


def _assign_mentions(seqs: Sequence[tuple[Sentence, list[dict]]], mentions: Sequence[Mention]) -> list[list[Mention]]:
    """The mentions lying wholly inside each sentence; one crossing a sentence break goes nowhere."""
    placed: list[list[Mention]] = [[] for _ in seqs]
    starts = [s.start for s, _ in seqs]
    for m in mentions:
        i = bisect.bisect_right(starts, m.start) - 1
        if i < 0:
            i = 0
        sentence = seqs[i][0]
        if sentence.start <= m.start and m.end <= sentence.end:
            placed[i].append(m)
        elif i + 1 < len(seqs) and seqs[i + 1][0].start <= m.start and m.end <= seqs[i + 1][0].end:
            placed[i + 1].append(m)
    return placed


# --------------------------------------------------------------------------------------------
# Training.
# --------------------------------------------------------------------------------------------


def _prepare_out_dir(out_dir: Path) -> Path:
    """A fresh temporary directory beside ``out_dir``; refuse to overwrite a non-model directory."""
    if out_dir.exists():
        if not out_dir.is_dir():
            raise ShareNerError(f"{out_dir}: exists and is not a directory")
        if any(out_dir.iterdir()) and not (out_dir / FILES.config).exists():
            raise ShareNerError(f"{out_dir}: directory is not empty and is not a share-ner model; choose another --model")
    parent = out_dir.parent
    parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=parent))


def _install(tmp: Path, out_dir: Path) -> None:
    """Replace ``out_dir`` by the finished model in ``tmp`` (a half-written model is never left behind)."""
    if out_dir.exists():
        old = out_dir.with_name(f".{out_dir.name}.old{os.getpid()}")
        os.replace(out_dir, old)
        os.replace(tmp, out_dir)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, out_dir)


def _seed_crfsuite(seed: int = 1) -> None:
    """Reseed the C library's ``rand()``, which CRFsuite's online trainers (passive-aggressive, AROW, SGD,
    perceptron) use to shuffle the training sequences and which nothing else reseeds: without this, a model
    depended on how many sequences earlier trainings in the same process had shuffled. Seed 1 is the C
    library's start state, so a training gives the model a fresh process gives."""
    try:
        ctypes.CDLL(None).srand(seed)
    except (OSError, AttributeError):  # no C library to load by this name (Windows): order-dependent, as before
        pass


def train_model(
    docs: Mapping[str, Document],
    gold: Mapping[str, list[Mention]],
    out_dir: Path,
    config: TaggerConfig | None = None,
    *,
    lexicon: Any | None = None,
    clusters: dict | None = None,
    dev: tuple[Mapping[str, Document], Mapping[str, list[Mention]]] | None = None,
    fit_normalizer: bool = True,
    normalizer_config: Any | None = None,
    normalizer_abbreviations: Mapping[str, Sequence[str]] | None = None,
    clusters_source: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Train the CRF tagger (and the normalizer) and write a model directory.

    Args:
        docs: training notes by id; notes without gold have no mentions.
        gold: gold mentions by note id.
        out_dir: the model directory to write (replaced atomically if it is a model already).
        config: training settings; defaults to :class:`TaggerConfig()`.
        lexicon: a ``share_ner.lexicons.Lexicon`` whose names become term-matcher features
            and which the normalizer is fitted on; None for no lexicon.
        clusters: word → cluster id (``share_ner.features.load_clusters``); copied into the model.
        dev: (notes, gold) scored after training; the scores go to config.json.
        fit_normalizer: fit the Normalizer and keep it in ``normalizer/``.
        normalizer_config: its ``NormalizerConfig`` (default settings when None).
        normalizer_abbreviations: a site's own abbreviation list for the normalizer, kept in the model.
        clusters_source: where the clusters came from, recorded in config.json.
        progress: called with one-line status messages.

    Returns:
        ``out_dir``.
    """
    config = config or TaggerConfig()
    say = progress or (lambda msg: log.info(msg))
    out_dir = Path(out_dir)
    check_gold(docs, gold)
    if dev is not None:
        check_gold(dev[0], dev[1], "dev gold")
    if not any(d.text.strip() for d in docs.values()):
        raise ShareNerError("no training text: every note is empty")
    started = time.perf_counter()
    report = TrainingReport()

    # Term-matcher sources: lexicon names and (jackknifed) training mentions.
    lex_terms = list(lexicon_terms(lexicon)) if lexicon is not None else []
    use_train = config.train_gazetteer
    all_train_terms = mention_terms(docs, gold) if use_train else set()
    use_terms = bool(lex_terms) or bool(all_train_terms)
    k = config.gazetteer_folds if use_train and config.gazetteer_folds > 1 else 1
    fold = folds_of(list(docs), k)

    hits = gazetteer_hits(docs, gold, all_train_terms) if use_train and config.gazetteer_reliability else None

    def train_labels(train_terms: set[str], doc_ids: Sequence[str]) -> list[tuple[str, str]]:
        if hits is None:
            return [(t, TRAIN_SEMTYPE) for t in sorted(train_terms)]
        return label_reliability(train_terms, hits, doc_ids)

    def resources_for(fold_id: int | None) -> Any:
        if not use_terms:
            return make_resources(None, clusters)
        if fold_id is None:
            ids = list(docs)
            train_terms = all_train_terms
        else:
            ids = [d for d in docs if fold[d] != fold_id]
            train_terms = mention_terms(docs, gold, ids)
        return make_resources(lex_terms + train_labels(train_terms, ids), clusters)

    tmp = _prepare_out_dir(out_dir)
    try:
        trainer = pycrfsuite.Trainer(algorithm=config.algorithm, verbose=False)
        params: dict[str, Any] = {
            "max_iterations": config.iterations,
            "feature.possible_transitions": bool(config.all_possible_transitions),
            "feature.minfreq": float(config.min_feature_freq),
        }
        if config.algorithm == "lbfgs":
            params.update(c1=float(config.c1), c2=float(config.c2))
        trainer.set_params(params)
        counts = report.counts
        order = sorted(docs)
        for fold_id in range(k):
            resources = resources_for(fold_id if k > 1 else None)
            say(f"features: fold {fold_id + 1}/{k}" if k > 1 else "features")
            for doc_id in order:
                if fold[doc_id] != fold_id:
                    continue
                doc = docs[doc_id]
                mentions = list(gold.get(doc_id, ()))
                counts.docs += 1
                counts.mentions += len(mentions)
                counts.discontiguous += sum(m.is_discontiguous for m in mentions)
                seqs = doc_sequences(doc, resources, config.features, config.coordination)
                if not seqs:
                    counts.empty_docs += 1
                    counts.dropped += len(mentions)
                    continue
                placed = _assign_mentions(seqs, mentions)
                counts.cross_sentence += len(mentions) - sum(len(v) for v in placed)
                for (sentence, feats), inside in zip(seqs, placed):
                    result = encode_report(sentence, inside, scheme=config.scheme)
                    counts.inexact += len(result.inexact)
                    counts.dropped += len(result.dropped)
                    counts.sentences += 1
                    counts.tokens += len(feats)
                    trainer.append(feats, list(result.tags))
                del seqs
        say(f"training CRF on {counts.sentences} sentences, {counts.tokens} tokens "
            + (f"(L-BFGS, c1={config.c1}, c2={config.c2}, max {config.iterations} iterations)"
               if config.algorithm == "lbfgs" else f"(passive-aggressive, {config.iterations} iterations)"))
        _seed_crfsuite()
        trainer.train(str(tmp / FILES.crf))
        report.features = _count_features(tmp / FILES.crf)

        # What tagging needs: the full (non-jackknifed) term list and the clusters.
        terms_info = None
        if use_terms:
            n_terms = write_terms(tmp / FILES.terms, lex_terms + train_labels(all_train_terms, list(docs)))
            terms_info = {"file": FILES.terms, "rows": n_terms, "train_mentions": len(all_train_terms)}
        clusters_info = None
        if clusters:
            save_clusters(tmp / FILES.clusters, clusters)
            clusters_info = {"file": FILES.clusters, "words": len(clusters), "source": clusters_source}
        lexicon_info = _lexicon_info(lexicon)

        normalizer_info = None
        if fit_normalizer:
            say("fitting the normalizer")
            from share_ner.normalizer import Normalizer

            normalizer = Normalizer.fit(lexicon, docs, gold, normalizer_config, normalizer_abbreviations)
            normalizer.save(tmp / FILES.normalizer)
            normalizer_info = {"directory": FILES.normalizer}

        report.seconds = time.perf_counter() - started
        report.peak_rss_mb = peak_rss_mb()
        data = {
            "tagger": config.to_dict(),
            "lexicon": lexicon_info,
            "terms": terms_info,
            "clusters": clusters_info,
            "normalizer": normalizer_info,
            "training": report.to_dict(),
        }
        write_config(tmp, data)
        if dev is not None:
            say("scoring the dev set")
            from share_ner.pipeline import Pipeline

            pipeline = Pipeline.load(tmp)
            pred = {doc_id: pipeline.tag(doc) for doc_id, doc in dev[0].items()}
            report.dev = score_dict(dev[1], pred, dev[0])
            data["training"] = report.to_dict()
            write_config(tmp, data)
        _install(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir


def _count_features(path: Path) -> int:
    tagger = pycrfsuite.Tagger()
    tagger.open(str(path))
    try:
        return len(tagger.info().state_features)
    finally:
        tagger.close()


def _lexicon_info(lexicon: Any) -> dict[str, Any] | None:
    if lexicon is None:
        return None
    path = getattr(lexicon, "path", None)
    return {
        "name": getattr(lexicon, "name", ""),
        "path": None if path is None else str(path),
        "content_hash": getattr(lexicon, "content_hash", None),
        "entries": len(lexicon.entries),
    }


# --------------------------------------------------------------------------------------------
# Scoring (share_ner.eval's scorer).
# --------------------------------------------------------------------------------------------


def score_dict(gold: Mapping[str, Sequence[Mention]], pred: Mapping[str, Sequence[Mention]],
               docs: Mapping[str, Document] | None = None) -> dict[str, Any]:
    """Strict/relaxed precision, recall and F1 of ``pred`` against ``gold`` (``share_ner.eval.scoring.score``)."""
    from share_ner.eval.scoring import score

    ids = set(gold) | set(pred)
    if docs is not None:
        ids |= set(docs)
    g = {d: list(gold.get(d, ())) for d in ids}
    p = {d: list(pred.get(d, ())) for d in ids}
    return score(g, p).to_dict()
