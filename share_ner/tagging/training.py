"""Training the CRF disorder-mention tagger (ShARe/CLEF 2013 Task 1a).

:func:`train_tagger` writes the tagger's part of a model directory (see :mod:`share_ner.model`;
:func:`share_ner.training.train_model` adds the normalizer and ``config.json``): each sentence
(``share_ner.text.split_sentences``) gets its token features (``share_ner.features.document_items``: the attributes of ``document_features``) and its tags
(``share_ner.tagging.scheme.encode_report``, scheme B/I/O/DB/DI/HB/HI or BIO), and is streamed straight
into ``pycrfsuite.Trainer.append`` so no Python copy of the training set is
kept. CRFsuite's passive-aggressive learner (or L-BFGS with the config's
``c1``/``c2``) then fits the weights.

The training-set gazetteer (the training mentions' strings as a term-matcher
source with semantic type ``"train"``) is jackknifed: the feature of a note in
fold *k* comes from the mentions of the other folds, so the CRF learns how much
a hit is worth on text it has not seen instead of learning that every hit is a
mention.

Coordination ellipsis ("renal or liver impairment") is where most discontiguous
mentions come from: :func:`share_ner.features.coordination.coordination_features` marks conjuncts whose
distributed reading is a known term, and after tagging
:func:`share_ner.tagging.repair.expand_coordinations` completes such mentions the CRF found only in part
(:func:`share_ner.tagging.repair.drop_lone_fragments` removes a D fragment left without its partner).
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import pycrfsuite

from share_ner.document import Document, Mention, Sentence, span_past_end, trimmed
from share_ner.errors import ShareNerError
from share_ner.features import TermMatcher
from share_ner.features.clusters import save_clusters
from share_ner.features.matcher import term_keys
from share_ner.lexicons.lexicon import Lexicon
from share_ner.model import FILES, write_terms
from share_ner.tagging.config import TaggerConfig
from share_ner.tagging.crf import doc_sequences
from share_ner.tagging.pairing import PairingExamples
from share_ner.tagging.resources import (
    LEXICON_SEMTYPE,
    TRAIN_SEMTYPE,
    WEAK_TRAIN_SEMTYPE,
    TaggerResources,
    make_resources,
)
from share_ner.tagging.scheme import encode_report, mention_tokens
from share_ner.text import split_sentences

log = logging.getLogger(__name__)


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
    trimmed: int = 0  # mentions with whitespace at a span's end, trained without it

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


def lexicon_terms(lexicon: Lexicon) -> Iterator[tuple[str, str]]:
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


# A note repeated to weigh more in training is given the id "<id>~<n>" (share_ner.training.distant).
COPY_SEP = "~"


def folds_of(doc_ids: Sequence[str], k: int) -> dict[str, int]:
    """Deterministic fold of each note: round robin over the sorted ids; a note's weighted copies (``id~n``)
    share its fold, so the jackknifed training gazetteer never shows a note its own mentions."""
    originals = sorted({doc_id.split(COPY_SEP, 1)[0] for doc_id in doc_ids})
    fold = {doc_id: i % k for i, doc_id in enumerate(originals)}
    return {doc_id: fold[doc_id.split(COPY_SEP, 1)[0]] for doc_id in doc_ids}


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


def train_tagger(
    docs: Mapping[str, Document],
    gold: Mapping[str, list[Mention]],
    tmp: Path,
    config: TaggerConfig,
    report: TrainingReport,
    *,
    lexicon: Lexicon | None = None,
    clusters: Mapping[str, str] | None = None,
    clusters_source: str | None = None,
    say: Callable[[str], None] = log.info,
) -> dict[str, Any]:
    """Train the CRF tagger into the directory ``tmp``: ``model.crfsuite``, and ``terms.tsv`` and ``clusters.tsv``
    when used. ``report`` gets the training counts and the feature count.

    Args:
        docs: training notes by id; notes without gold have no mentions.
        gold: gold mentions by note id (checked by :func:`check_gold`).
        tmp: the directory to write into (the model directory being built).
        config: training settings.
        report: filled with what the tag scheme could hold and the number of features.
        lexicon: a lexicon whose names become term-matcher features; None for no lexicon.
        clusters: word → cluster id (``share_ner.features.load_clusters``); copied into the model.
        clusters_source: where the clusters came from, recorded in config.json.
        say: called with one-line status messages.

    Returns:
        The ``config.json`` sections that describe the tagger: ``tagger``, ``lexicon``, ``terms``, ``clusters``.
    """
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

    def resources_for(fold_id: int | None) -> TaggerResources:
        if not use_terms:
            return make_resources(None, clusters)
        if fold_id is None:
            ids = list(docs)
            train_terms = all_train_terms
        else:
            ids = [d for d in docs if fold[d] != fold_id]
            train_terms = mention_terms(docs, gold, ids)
        return make_resources(lex_terms + train_labels(train_terms, ids), clusters)

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
    learned = config.pairing == "learned" and config.scheme == "biohd"
    # the coordination classifier's examples only when it is used (they are most of the pairing's training time)
    examples = PairingExamples(config.learned_coordinations, config.list_walk) if learned else None
    for fold_id in range(k):
        resources = resources_for(fold_id if k > 1 else None)
        say(f"features: fold {fold_id + 1}/{k}" if k > 1 else "features")
        for doc_id in order:
            if fold[doc_id] != fold_id:
                continue
            doc = docs[doc_id]
            # whitespace at a span's end (a line's closing "\r") is no token's: the mention is trained without it,
            # not lost beyond its sentence's last token
            given = gold.get(doc_id, ())
            mentions = [trimmed(doc.text, m) or m for m in given]
            counts.trimmed += sum(b is not m for b, m in zip(mentions, given))
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
            lookup = resources.term_matcher.lookup if resources.term_matcher is not None else None
            for (sentence, feats), inside in zip(seqs, placed):
                result = encode_report(sentence, inside, scheme=config.scheme,
                                       pairing="learned" if learned else "rules")
                counts.inexact += len(result.inexact)
                counts.dropped += len(result.dropped)
                counts.sentences += 1
                counts.tokens += len(feats)
                tags = list(result.tags)
                copies = config.oversample_discontiguous if "DB" in tags or "HB" in tags else 1
                for _ in range(copies):
                    trainer.append(feats, tags)
                if examples is not None and inside:
                    # the pairing learns from the gold fragments, its term lookups jackknifed like the CRF's
                    gold_idx = [got[0] for got in (mention_tokens(sentence, m) for m in inside) if got and got[0]]
                    examples.add([t.text for t in sentence.tokens], result.tags, gold_idx, lookup)
            del seqs
    say(f"training CRF on {counts.sentences} sentences, {counts.tokens} tokens "
        + (f"(L-BFGS, c1={config.c1}, c2={config.c2}, max {config.iterations} iterations)"
           if config.algorithm == "lbfgs" else f"(passive-aggressive, {config.iterations} iterations)"))
    _seed_crfsuite()
    trainer.train(str(tmp / FILES.crf))
    report.features = _count_features(tmp / FILES.crf)
    if examples is not None:
        say("fitting the fragment pairing")
        examples.fit().save(tmp / FILES.pairing)

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
    return {"tagger": config.to_dict(), "lexicon": lexicon_info, "terms": terms_info, "clusters": clusters_info}


def _count_features(path: Path) -> int:
    tagger = pycrfsuite.Tagger()
    tagger.open(str(path))
    try:
        return len(tagger.info().state_features)
    finally:
        tagger.close()


def _lexicon_info(lexicon: Lexicon | None) -> dict[str, Any] | None:
    if lexicon is None:
        return None
    path = getattr(lexicon, "path", None)
    return {
        "name": getattr(lexicon, "name", ""),
        "path": None if path is None else str(path),
        "content_hash": getattr(lexicon, "content_hash", None),
        "entries": len(lexicon.entries),
    }
