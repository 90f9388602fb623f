"""Distant supervision: train the tagger on a site's own unannotated notes, labelled by a lexicon.

``share-ner train --distant NOTES --lexicon L [--text T --gold G] --model OUT``:

1. every note under ``NOTES`` is labelled by longest lexicon matching over its
   tokens (the tagger's own :class:`~share_ner.features.matcher.TermMatcher`:
   case, punctuation and plurals folded), following the ShARe guidelines where
   a lexicon alone would not (:func:`labelling_terms`, :func:`lexicon_labels`):

   * with the HPO lexicon, only names of phenotypic abnormalities are matched
     (not modes of inheritance, onset, frequency or severity terms such as
     "Chronic" or "Mild", not grouping names, not lab values);
   * the project's own clinical term, finding and abbreviation lists are
     matched too (``JVD``, ``CHF``, ``lethargic``);
   * a match takes in the body sites and disorder adjectives written just
     before it ("gastric ulcer", "ischemic heart disease", "pulmonary
     embolism"), but not severity, course, certainty or negation words, which
     ShARe leaves outside the span;
   * a one-word match shorter than ``min_chars`` characters is left out
     (short names are mostly abbreviations that mean something else in notes);

   each label takes the CUI of the name it matched;
2. a CRF is trained on those labels, with the gold notes (when given) repeated
   ``gold_weight`` times, so gold outweighs distant labels; its term features
   match the names the labels were matched with (:func:`label_lexicon`), so
   that they fire where the labels are and nowhere else;
3. self-training, ``rounds`` times: a model (trained with L-BFGS, whose
   marginals are probabilities, and by default without lexicon features,
   so that it learns from context what the lexicon does not list) tags the
   distant notes; the mentions whose every token has a marginal probability
   of at least ``min_confidence`` join the lexicon's labels where they
   overlap none of them (with ``round_lexicon_features``, they replace the
   labels they overlap); the model is trained again on the new labels (with
   the settings given).

The normalizer is fitted on the same labels (gold plus distant) and the lexicon
(:func:`model_lexicon`), so its gazetteer holds the lexicon's CUIs for the
strings the notes use.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pycrfsuite

from share_ner.default_model import terms as synthetic_terms
from share_ner.document import CUI_LESS, Document, Mention, Sentence
from share_ner.errors import ShareNerError
from share_ner.features.matcher import TermMatcher, token_keys
from share_ner.features.stopwords import MODIFIER_ADJECTIVE, NOT_MODIFIERS, TERM_STOP_WORDS
from share_ner.lexicons.abbreviations import load_abbreviations
from share_ner.lexicons.lexicon import Lexicon, LexiconEntry
from share_ner.lexicons.variants import derived_entries, with_derived_names
from share_ner.pipeline import Pipeline
from share_ner.settings import checked_settings, load_settings
from share_ner.tagging.config import TaggerConfig
from share_ner.tagging.crf import doc_sequences
from share_ner.tagging.evidence import is_lower_case_acronym
from share_ner.tagging.resources import acronym_only_keys
from share_ner.tagging.scheme import decode
from share_ner.tagging.training import COPY_SEP
from share_ner.text import split_sentences
from share_ner.training import train_model


@dataclass(frozen=True)
class DistantConfig:
    """Settings of distant supervision; ``from_dict`` rejects unknown keys."""

    rounds: int = 1  # self-training rounds after the model trained on lexicon labels
    min_confidence: float = 0.9  # a tagged mention is kept when each of its tokens' marginals reaches this
    gold_weight: int = 3  # each gold note counts this many times
    min_chars: int = 4  # a one-word lexicon match needs this many characters
    phenotypes_only: bool = True  # with HPO: phenotypic abnormalities only (no inheritance, onset, severity terms)
    project_lists: bool = True  # also match the project's clinical term, finding and abbreviation lists
    modifiers: bool = True  # a match takes in the body sites and disorder adjectives just before it
    coordinations: bool = False  # and modifiers coordinated before it share its head: "renal ... failure"
    # also match ICD-10-CM's short disorder names (share_ner.default_model.icd10cm), CUI-less: the common disorders
    # HPO does not name (chosen on chia, ncbi_disease, bc5cdr dev and negex_kit/dev: benchmarks/results/default_real.md)
    icd_names: bool = True
    # also match the adjectives of one-word names, with the noun's CUI: "anemic", "osteoporotic", "syncopal"
    # (share_ner.lexicons.variants), and give them to the normalizer's lexicon; off: a model trained on distant labels
    # alone lost chia/dev and ncbi_disease/dev F1 with them (benchmarks/results/default_real.md)
    derived_names: bool = False
    # also match the disease names of the HPO release's annotations (OMIM, Orphanet: "Castleman disease",
    # "macrophage activation syndrome"; share_ner.default_model.diseases), CUI-less, so that a disease is labelled by
    # its whole name; on for the packaged default model's notes (SynthConfig.disease_names)
    disease_names: bool = False
    # The project's list names with a CUI join the normalizer's lexicon (and, without label_features, the term
    # features' lexicon), so that they are normalized like the lexicon's own names.
    lists_in_lexicon: bool = True
    # The model's term features match the labelling names (label_lexicon), not the whole lexicon: HPO's modifiers
    # and grouping names ("Mild", "All") would fire where no label is, and its phenotypes without a UMLS CUI would
    # not fire where labels are. The normalizer keeps the lexicon with CUIs (model_lexicon).
    label_features: bool = True
    # The self-training model without lexicon features: with them it only gives the lexicon's labels back.
    round_lexicon_features: bool = False

    def __post_init__(self) -> None:
        if not (isinstance(self.rounds, int) and 0 <= self.rounds <= 10):
            raise ShareNerError(f"distant setting 'rounds' must be an integer from 0 to 10, got {self.rounds!r}")
        if not 0.0 <= float(self.min_confidence) <= 1.0:
            raise ShareNerError(f"distant setting 'min_confidence' must be in [0, 1], got {self.min_confidence!r}")
        if not (isinstance(self.gold_weight, int) and self.gold_weight >= 1):
            raise ShareNerError(f"distant setting 'gold_weight' must be a positive integer, got {self.gold_weight!r}")
        if not (isinstance(self.min_chars, int) and self.min_chars >= 1):
            raise ShareNerError(f"distant setting 'min_chars' must be a positive integer, got {self.min_chars!r}")
        for name in ("phenotypes_only", "project_lists", "modifiers", "coordinations", "icd_names", "derived_names",
                     "disease_names", "lists_in_lexicon", "label_features", "round_lexicon_features"):
            if not isinstance(getattr(self, name), bool):
                raise ShareNerError(f"distant setting {name!r} must be true or false, got {getattr(self, name)!r}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "DistantConfig":
        return cls(**checked_settings(cls, data, "distant"))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def load_distant_config(path: str | Path) -> DistantConfig:
    """Read a :class:`DistantConfig` from a JSON file (``share-ner train --distant-config``); a bad file, key or
    value is one error naming the file."""
    return load_settings(DistantConfig, path, "distant config")


def cui_matcher(lexicon: Lexicon) -> TermMatcher:
    """A term matcher whose matches carry the CUIs of the names they match (in the lexicon's order)."""

    return TermMatcher.from_terms((entry.name, entry.cui) for entry in lexicon.entries)


def labelling_terms(lexicon: Lexicon, config: DistantConfig = DistantConfig()) -> list[tuple[str, str]]:
    """The (name, CUI) pairs distant labels are matched with: the lexicon's names (with HPO and
    ``phenotypes_only``, the phenotypic abnormalities the template generator uses), then the project's lists, then
    (``icd_names``) the ICD-10-CM names none of those has, then (``disease_names``) the disease names of HPO's
    annotations none of those has."""

    hpo: list[Any] = []
    if config.phenotypes_only and getattr(lexicon, "name", "") == "hpo":
        hpo = synthetic_terms.hpo_terms()
        terms = [(t.name, t.cui) for t in synthetic_terms.usable_hpo(hpo)]
    else:
        terms = [(entry.name, entry.cui) for entry in lexicon.entries]
    if config.project_lists:
        project = synthetic_terms.project_terms()
        lists = [*project, *synthetic_terms.finding_terms(), *synthetic_terms.abbreviation_terms(hpo, project)]
        terms += [(t.name, t.cui) for t in lists]
    if config.icd_names:
        terms += [(t.name, t.cui) for t in synthetic_terms.icd_terms(synthetic_terms.Term(name) for name, _ in terms)]
    if config.disease_names:
        terms += [(t.name, t.cui) for t in synthetic_terms.disease_terms(synthetic_terms.Term(name) for name, _ in terms)]
    if config.derived_names:
        terms += [(e.name, e.cui) for e in derived_entries(LexiconEntry(cui, name) for name, cui in terms)]
    return terms


def model_lexicon(lexicon: Lexicon, config: DistantConfig = DistantConfig()) -> Lexicon:
    """The lexicon a distant model's normalizer is fitted on (and, without ``label_features``, its term features
    match): ``lexicon``, and with ``project_lists`` and ``lists_in_lexicon``, the project's list names that carry a
    CUI too; with ``derived_names``, the adjectives of its one-word names."""

    if config.project_lists and config.lists_in_lexicon:
        lexicon = synthetic_terms.with_list_names(lexicon)
    return with_derived_names(lexicon) if config.derived_names else lexicon


def label_lexicon(lexicon: Lexicon, config: DistantConfig = DistantConfig()) -> Lexicon:
    """The names distant labels are matched with (:func:`labelling_terms`, the CUI-less ones included) as a lexicon:
    with ``label_features``, the one the model's term features match."""

    entries = [LexiconEntry(cui, name, "share-ner") for name, cui in labelling_terms(lexicon, config)]
    return Lexicon.from_entries(entries, f"{getattr(lexicon, 'name', 'memory')}-labels")


def labelling_matcher(lexicon: Lexicon, config: DistantConfig = DistantConfig()) -> TermMatcher:
    """A term matcher over :func:`labelling_terms`, its matches carrying the names' CUIs."""

    return TermMatcher.from_terms(labelling_terms(lexicon, config))


def _is_modifier(word: str, sites: frozenset[str]) -> bool:
    """A body site or disorder adjective, not a severity, course or certainty word."""
    word = word.lower()
    return (word not in NOT_MODIFIERS and word not in TERM_STOP_WORDS
            and bool(word in sites or MODIFIER_ADJECTIVE.match(word)))


def _modifier_start(words: Sequence[str], start: int, sites: frozenset[str]) -> int:
    """Where a match starting at ``start`` begins once the body sites and disorder adjectives before it join."""

    while start > 0 and _is_modifier(words[start - 1], sites):
        start -= 1
    return start


_CONJUNCTIONS = frozenset({"or", "and", "and/or", ",", "/"})


def _coordinated(words: Sequence[str], start: int, end: int, sites: frozenset[str]) -> list[tuple[int, int, int]]:
    """The modifiers coordinated before a match ``start..end`` that share its head, as ShARe annotates "renal or
    hepatic failure" ("renal ... failure" besides "hepatic failure"): ``(first, last + 1, head)`` token indices
    for each, ``head`` where the match's words after its own leading modifiers begin; none when every word of the
    match is a modifier."""
    head = start
    while head < end and _is_modifier(words[head], sites):
        head += 1
    if head in (start, end):
        return []
    out: list[tuple[int, int, int]] = []
    at = start
    while at >= 2 and words[at - 1].lower() in _CONJUNCTIONS and _is_modifier(words[at - 2], sites):
        first = _modifier_start(words, at - 2, sites)
        out.append((first, at - 1, head))
        at = first
    return out


def label_notes(docs: Mapping[str, Document], lexicon: Lexicon, config: DistantConfig = DistantConfig()
                ) -> dict[str, list[Mention]]:
    """The distant labels of ``docs``: :func:`lexicon_labels` with the names of :func:`labelling_terms`."""
    terms = labelling_terms(lexicon, config)
    acronyms = acronym_only_keys([*(name for name, _ in terms), *load_abbreviations()])
    return lexicon_labels(docs, TermMatcher.from_terms(terms), config.min_chars, config.modifiers,
                          config.coordinations, acronyms)


def lexicon_labels(docs: Mapping[str, Document], matcher: TermMatcher, min_chars: int = 4,
                   modifiers: bool = False, coordinations: bool = False,
                   acronym_keys: frozenset[str] = frozenset()) -> dict[str, list[Mention]]:
    """Longest lexicon matches in each note as mentions (with the matched name's first CUI); with
    ``modifiers``, each takes in the body sites and disorder adjectives just before it, and with
    ``coordinations`` too, the modifiers coordinated before those share its head ("renal ... failure" in
    "renal or hepatic failure", CUI-less). A one-word match written in lower case whose key only short forms in
    capitals have (``acronym_keys``: "does" folded onto DOE) is the English word: no label."""

    sites = frozenset(synthetic_terms.body_sites()) if modifiers else frozenset()
    out: dict[str, list[Mention]] = {}
    for doc_id, doc in docs.items():
        found: list[Mention] = []
        for sentence in split_sentences(doc):
            tokens = sentence.tokens
            words = [t.text for t in tokens]
            for m in matcher.find(words):
                if m.end - m.start == 1 and (len(tokens[m.start].text) < min_chars or is_lower_case_acronym(
                        words[m.start], token_keys(words[m.start]), acronym_keys, {}, sentence)):
                    continue
                start = _modifier_start(words, m.start, sites) if modifiers else m.start
                cui = next((c for c in m.semtypes if c), CUI_LESS)
                found.append(Mention(doc_id, ((tokens[start].start, tokens[m.end - 1].end),), cui))
                for first, last, head in (_coordinated(words, start, m.end, sites) if modifiers and coordinations
                                          else ()):
                    spans = ((tokens[first].start, tokens[last - 1].end), (tokens[head].start, tokens[m.end - 1].end))
                    found.append(Mention(doc_id, spans, CUI_LESS))
        out[doc_id] = found
    return out


def confident_mentions(pipeline: Pipeline, doc: Document, min_confidence: float) -> tuple[list[Mention], list[tuple[int, int]]]:
    """The model's mentions in ``doc`` whose tokens all have marginals >= ``min_confidence``, and the character
    ranges of the sentences they were looked for in. A lone fragment of a discontiguous mention (tagged D
    throughout, one span: "tricuspid valve" whose "... is thickened" the model did not tag) is not a mention
    to learn from: trained on as one, it teaches body parts as disorders. A model with ``evidence`` checks its
    mentions against the note (:class:`share_ner.tagging.evidence.Evidence`), as when it tags."""

    kept: list[Mention] = []
    ranges: list[tuple[int, int]] = []
    sentences: list[Sentence] = []
    tagger = pipeline.tagger.crf
    for sentence, feats in doc_sequences(doc, pipeline.resources, pipeline.config.features,
                                         pipeline.config.coordination):
        sentences.append(sentence)
        tags = tagger.tag(pycrfsuite.ItemSequence(feats))
        tokens = sentence.tokens
        ranges.append((tokens[0].start, tokens[-1].end))
        index = {t.start: i for i, t in enumerate(tokens)}
        for mention in decode(sentence, tags, scheme=pipeline.config.scheme):
            positions = [index[t.start] for s, e in mention.spans for t in tokens if s <= t.start < e]
            if len(mention.spans) == 1 and all(tags[i].startswith("D") for i in positions):
                continue
            if positions and min(tagger.marginal(tags[i], i) for i in positions) >= min_confidence:
                kept.append(Mention(doc.id, mention.spans, CUI_LESS))
    if pipeline.tagger.evidence is not None:  # as the model would give them: checked against the note
        kept = pipeline.tagger.evidence.check(doc, sentences, kept)
    return kept, ranges


def relabel(lexicon_gold: Sequence[Mention], confident: Sequence[Mention], cui_of: Callable[[Mention], str],
            *, keep_lexicon: bool = False) -> list[Mention]:
    """Confident tagged mentions, plus the lexicon labels none of them overlaps; with ``keep_lexicon``, the
    lexicon labels, plus the confident mentions that overlap none of them."""
    if keep_lexicon:
        merged = list(lexicon_gold)
        merged += [Mention(m.doc_id, m.spans, cui_of(m)) for m in confident
                   if not any(m.overlaps(g) for g in lexicon_gold)]
    else:
        merged = [Mention(m.doc_id, m.spans, cui_of(m)) for m in confident]
        merged += [m for m in lexicon_gold if not any(m.overlaps(c) for c in confident)]
    return sorted(merged, key=lambda m: (m.spans, m.cui))


def repeated(docs: Mapping[str, Document], gold: Mapping[str, list[Mention]], times: int
             ) -> tuple[dict[str, Document], dict[str, list[Mention]]]:
    """``docs`` and their gold ``times`` over, the copies under ids of their own (a weight in training)."""
    out_docs: dict[str, Document] = {}
    out_gold: dict[str, list[Mention]] = {}
    for copy in range(times):
        for doc_id, doc in docs.items():
            key = doc_id if copy == 0 else f"{doc_id}{COPY_SEP}{copy}"  # copies share the note's fold
            out_docs[key] = doc if copy == 0 else Document(key, doc.text)
            out_gold[key] = [Mention(key, m.spans, m.cui, m.type) for m in gold.get(doc_id, [])]
    return out_docs, out_gold


def train_distant(
    notes: Mapping[str, Document],
    lexicon: Lexicon | None,
    out_dir: Path,
    tagger_config: TaggerConfig | None = None,
    *,
    gold_docs: Mapping[str, Document] | None = None,
    gold: Mapping[str, list[Mention]] | None = None,
    config: DistantConfig = DistantConfig(),
    source: str = "",
    progress: Callable[[str], None] | None = None,
    **train_options: Any,
) -> Path:
    """Train a model on ``notes`` labelled by ``lexicon`` (and self-training), with optional gold notes.

    Raises :class:`ShareNerError` when there are no notes or the lexicon matches nothing in them.
    """
    say = progress or (lambda msg: None)
    round_config = tagger_config or TaggerConfig()
    where = source or "the distant notes"
    if not notes:
        raise ShareNerError(f"{where}: no .txt notes found")
    if lexicon is None:
        raise ShareNerError("--distant needs a lexicon to label the notes (--lexicon hpo or a TSV)")
    labels = label_notes(notes, lexicon, config)
    n_labels = sum(map(len, labels.values()))
    if not n_labels:
        raise ShareNerError(f"{where}: the lexicon matches nothing in {len(notes)} notes; nothing to learn from")
    say(f"{len(notes)} distant notes, {n_labels} lexicon labels")
    # The normalizer's lexicon (CUIs); the term features' names, with label_features, are the labels' own.
    features_lexicon = label_lexicon(lexicon, config) if config.label_features else model_lexicon(lexicon, config)
    lexicon = model_lexicon(lexicon, config)
    gold_docs = dict(gold_docs or {})
    gold = dict(gold or {})
    clash = sorted(set(gold_docs) & set(notes))
    if clash:
        raise ShareNerError(f"note id {clash[0]!r} is both a gold note and a distant note")

    def training_set(distant: Mapping[str, list[Mention]]) -> tuple[dict[str, Document], dict[str, list[Mention]]]:
        copies, copies_gold = repeated(gold_docs, gold, config.gold_weight)
        return {**notes, **copies}, {**{k: list(v) for k, v in distant.items()}, **copies_gold}

    work = Path(tempfile.mkdtemp(prefix=".distant.", dir=Path(out_dir).parent if Path(out_dir).parent.is_dir() else None))
    try:
        current = labels
        for round_no in range(config.rounds):
            docs, train_gold = training_set(current)
            say(f"self-training round {round_no + 1}: training on {len(docs)} notes")
            # L-BFGS: its marginals are probabilities; passive-aggressive weights are not (every marginal ~0.5).
            model_config = round_config.replace(algorithm="lbfgs")
            if not config.round_lexicon_features:
                model_config = model_config.replace(features=replace(model_config.features, lexicon=False))
            model = train_model(docs, train_gold, work / f"round{round_no}", model_config,
                                lexicon=features_lexicon, fit_normalizer=False, progress=say)
            pipeline = Pipeline.load(model)
            matched = {m.spans: m.cui for ms in labels.values() for m in ms}
            current = {}
            kept = 0
            for doc_id, doc in notes.items():
                confident, _ = confident_mentions(pipeline, doc, config.min_confidence)
                kept += len(confident)
                current[doc_id] = relabel(labels[doc_id], confident, lambda m: matched.get(m.spans, CUI_LESS),
                                          keep_lexicon=not config.round_lexicon_features)
            say(f"self-training round {round_no + 1}: {kept} confident mentions, "
                f"{sum(map(len, current.values()))} labels")
        docs, train_gold = training_set(current)
        return train_model(docs, train_gold, out_dir, tagger_config, lexicon=features_lexicon,
                           normalizer_lexicon=lexicon, progress=say, **train_options)
    finally:
        shutil.rmtree(work, ignore_errors=True)
