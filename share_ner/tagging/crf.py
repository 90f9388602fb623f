"""Tagging a note with the CRF: sentences to emission scores, CRFsuite's tags, decoded and repaired mentions.

:class:`CrfTagger` is the trained tagger of a model directory (its settings, term matcher, clusters and CRFsuite
weights); :meth:`CrfTagger.tag` gives a note's mentions, all ``CUI-less`` (Task 1a). Training gives CRFsuite each
token's attribute names (:func:`doc_sequences`); tagging sums the model's weights of the same attributes into
emission scores by bundles (:func:`doc_emissions`) and decodes them with CRFsuite's Viterbi
(``share_ner.tagging.weights``), many sentences at once.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Mapping, Sequence

import numpy as np
import pycrfsuite

from share_ner.document import Document, Mention, Sentence
from share_ner.errors import ShareNerError
from share_ner.features.clusters import load_clusters
from share_ner.features.config import FeatureConfig
from share_ner.features.coordination import coordination_features, note_coordination
from share_ner.features.extract import NoteAbbreviations
from share_ner.features.items import add_features, document_abbreviations, document_items, sentence_items
from share_ner.features.scores import ScoreTable, document_scores
from share_ner.lexicons.abbreviations import other_senses
from share_ner.model import FILES, ModelError, ModelInfo, read_terms
from share_ner.tagging.config import TaggerConfig
from share_ner.tagging.evidence import Evidence
from share_ner.tagging.pairing import PairingModel, expand, extend_lists, pair_fragments, reread_lone
from share_ner.tagging.repair import balance_brackets, drop_lone_fragments, expand_coordinations
from share_ner.tagging.resources import TaggerResources, cached_resources, make_resources
from share_ner.tagging.scheme import _to_mention, decode
from share_ner.tagging.sections import drop_section_titles
from share_ner.tagging.suspended import complete_suspended
from share_ner.tagging.weights import WeightsError, check_model_bytes, read_weights, viterbi
from share_ner.text import split_sentences


def _sentences(doc: Document) -> list[Sentence]:
    if not doc.text.strip():
        return []
    return [s for s in split_sentences(doc) if s.tokens]


def _coordination(sentence: Sentence, resources: TaggerResources, lists: bool = False) -> dict[int, dict]:
    """The coordination marks of a sentence's tokens (:func:`coordination_features`; most sentences: none)."""
    extra: defaultdict[int, dict] = defaultdict(dict)  # coordination_features marks few tokens
    coordination_features([t.text for t in sentence.tokens], extra, resources.term_matcher,  # type: ignore[arg-type]
                          resources.head_words, resources.first_keys, resources.last_keys, lists)
    return extra


def doc_sequences(doc: Document, resources: TaggerResources, features: FeatureConfig,
                  coordination: bool = False) -> list[tuple[Sentence, list[list[bytes]]]]:
    """The non-empty sentences of a note with their tokens' CRFsuite attributes
    (``share_ner.features.items``: the feature dicts' ``key:value`` names, built once per word type): what
    training gives CRFsuite."""
    sentences = _sentences(doc)
    if not sentences:
        return []
    items = document_items(doc, sentences, resources.features, features)
    if coordination and resources.term_matcher is not None:
        for sentence, seq in zip(sentences, items):
            extra = _coordination(sentence, resources, features.coordination_lists)
            if extra:
                add_features(seq, extra, resources.features)
    return list(zip(sentences, items))


def doc_emissions(doc: Document, resources: TaggerResources, features: FeatureConfig, table: ScoreTable,
                  coordination: bool = False) -> tuple[list[Sentence], np.ndarray, list[Mapping[int, dict]] | None]:
    """The non-empty sentences of a note, the emission scores of their tokens laid end to end (tokens x labels:
    the sums of the weights of the attributes :func:`doc_sequences` gives them,
    ``share_ner.features.scores``), and each sentence's coordination marks (None: the model has none)."""
    sentences = _sentences(doc)
    extras = None
    if coordination and resources.term_matcher is not None:
        extras = note_coordination([t.text for s in sentences for t in s.tokens], [len(s.tokens) for s in sentences],
                                   resources.term_matcher, resources.head_words, resources.first_keys,
                                   resources.last_keys, features.coordination_lists)
    return sentences, document_scores(doc, sentences, resources.features, features, table, extras), extras


def _paired(sentence: Sentence, tags: list[str], pairing: PairingModel, resources: TaggerResources,
            coordinations: str | None) -> list[Mention]:
    """A sentence's fragment tags joined into mentions by the learned pairing (``share_ner.tagging.pairing``), and
    coordinations the CRF found only in part completed: ``coordinations="rules"`` by :func:`expand_coordinations`
    (a known term), ``"learned"`` by the pairing's coordination classifier, None not at all."""
    words = [t.text for t in sentence.tokens]
    matcher = resources.term_matcher
    lookup = matcher.lookup if matcher is not None else None
    found, lone = pair_fragments(words, tags, pairing, lookup)
    if lone:
        reread = reread_lone(words, tags, lone, pairing, lookup)
        found += [idx for idx, _ in reread]
        joined = {frag for _, frag in reread}
        lone = [frag for frag in lone if frag not in joined]
    # a D fragment no candidate took is kept only when it is a known term
    found += [tuple(range(a, b + 1)) for a, b in lone if lookup is not None and lookup(" ".join(words[a:b + 1]))]
    found += extend_lists(words, tags, found, pairing, lookup)
    if coordinations == "learned":
        taken = {frozenset(idx) for idx in found}
        contiguous = [(idx[0], idx[-1]) for idx in found if len(idx) > 1 and idx[-1] - idx[0] + 1 == len(idx)]
        added = expand(words, tags, contiguous, taken, pairing, lookup)
        if added:
            # a bare conjunct tagged as a mention of its own gives way to its distributed reading, unless a term
            bare = {frozenset(range(a, b + 1)) for runs, side in added for a, b in (runs[0 if side == "CR" else 1],)}
            found = [idx for idx in found if frozenset(idx) not in bare
                     or (lookup is not None and lookup(" ".join(words[idx[0]:idx[-1] + 1])))]
            found += [tuple(i for a, b in runs for i in range(a, b + 1)) for runs, _ in added]
    mentions = sorted({_to_mention(sentence, idx) for idx in found})
    if coordinations == "rules" and matcher is not None and mentions:
        mentions = expand_coordinations(sentence, mentions, resources)
    return mentions


def _mentions(sentence: Sentence, tags: list[str], scheme: str, resources: TaggerResources | None,
              brackets: bool, pairing: PairingModel | None = None, coordinations: str | None = None) -> list[Mention]:
    """A sentence's CRF tags decoded into CUI-less mentions, repaired (see :meth:`CrfTagger.tag`)."""
    if pairing is not None and resources is not None:
        found = _paired(sentence, tags, pairing, resources, coordinations)
        return balance_brackets(sentence, found) if brackets and found else found
    found = decode(sentence, tags, scheme=scheme)
    if resources is not None and found:
        found = drop_lone_fragments(sentence, tags, found, resources)
        found = expand_coordinations(sentence, found, resources)
    if brackets and found:
        found = balance_brackets(sentence, found)
    return found


class CrfTagger:
    """The trained CRF tagger of a model directory: its settings, feature resources and CRFsuite weights."""

    def __init__(self, config: TaggerConfig, crf: pycrfsuite.Tagger, resources: TaggerResources,
                 model_bytes: bytes | None = None, pairing: PairingModel | None = None) -> None:
        if resources.weights is None:
            raise ValueError("a tagger's resources need the model's weights")
        self.config = config
        self.pairing = pairing  # the learned fragment pairing, None: the decoding rules
        self.crf = crf  # CRFsuite's own tagger, for the sentences viterbi is unsure of
        self._model_bytes = model_bytes  # a tagger opened in memory reads them for as long as it lives
        self.resources = resources
        self.weights = resources.weights
        # the rows of summed weights of the attribute bundles met, kept for the run
        self.scores = ScoreTable(self.weights.attributes, self.weights.state)
        # the checks of a note's mentions against the note and the lexicon (config.evidence)
        self.evidence = Evidence(resources, other_senses()) if config.evidence else None

    @classmethod
    def load(cls, info: ModelInfo) -> "CrfTagger":
        """The tagger of the model directory ``info`` describes.

        Raises:
            ShareNerError: one line naming the file that cannot be read.
        """
        try:
            # Models saved before the ``algorithm`` setting existed were all trained with L-BFGS, those before
            # ``pairing`` decode with the rules.
            config = TaggerConfig.from_dict({"algorithm": "lbfgs", "pairing": "rules", **info.tagger})
        except ShareNerError as exc:
            raise ModelError(
                f"{info.path(FILES.config)}: {exc} (model written by share-ner {info.data.get('share_ner_version')})"
            ) from None
        # CRFsuite's C reader trusts the file's offsets: it gets the very bytes checked here, or none
        path = info.path(FILES.crf)
        tagger = pycrfsuite.Tagger()
        try:
            data = path.read_bytes()
            check_model_bytes(data)
            tagger.open_inmemory(data)
        except (OSError, ValueError) as exc:
            raise ModelError(f"{path}: not a readable CRFsuite model ({exc})") from None

        def build() -> TaggerResources:
            try:
                weights = read_weights(data, checked=True)  # checked above, before CRFsuite read them
            except WeightsError as exc:
                raise ModelError(f"{path}: not a readable CRFsuite model ({exc})") from None
            terms = list(read_terms(info.path(FILES.terms), info.data["terms"].get("rows"))) if info.has_terms \
                else None
            clusters = load_clusters(info.path(FILES.clusters)) if info.has_clusters else None
            words = info.data["clusters"].get("words") if info.has_clusters else None
            if clusters is not None and isinstance(words, int) and len(clusters) != words:
                raise ModelError(f"{info.path(FILES.clusters)}: {len(clusters)} words where {FILES.config} records "
                                 f"{words} (truncated or changed); retrain the model or restore its directory")
            resources = replace(make_resources(terms, clusters), weights=weights)
            # Tokens carry only the attributes the model weighs; CRFsuite would skip the others (same tags, less
            # work).
            resources.features.keep_only(frozenset(weights.attributes))
            return resources

        files = (info.path(FILES.terms) if info.has_terms else None,
                 info.path(FILES.clusters) if info.has_clusters else None, info.path(FILES.crf))
        pairing = None
        if config.pairing == "learned" and config.scheme == "biohd":
            try:
                pairing = PairingModel.load(info.path(FILES.pairing))
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise ModelError(f"{info.path(FILES.pairing)}: not a readable pairing model ({exc})") from None
        return cls(config, tagger, cached_resources(files, build), data, pairing)

    def tag(self, doc: Document) -> list[Mention]:
        """The note's disorder mentions, all ``CUI-less``."""
        [found] = self.tag_many([doc])
        if isinstance(found, Exception):
            raise found
        return found

    def tag_many(self, docs: Sequence[Document]) -> list[list[Mention] | Exception]:
        """:meth:`tag` for each of ``docs``, their sentences decoded together; a note whose tagging raises gets
        the exception in its place.

        Each token's emission scores are sums of rows of summed attribute weights (:func:`doc_emissions`), and
        :func:`viterbi` decodes all sentences at once; the tags are CRFsuite's (``tests/test_crf_scores.py``):
        a sentence whose path wins a choice by a rounding margin is tagged by CRFsuite itself. With the biohd
        scheme and ``expand_coordinations``, :func:`expand_coordinations` adds the distributed mentions of
        coordinations the CRF found only in part; with ``balance_brackets``, :func:`balance_brackets` repairs
        mentions with unpaired round brackets; with ``evidence``, each note's mentions are checked against the
        note and the lexicon (:class:`Evidence`); with ``section_titles``, a mention that is exactly the title of
        a standard section's header is dropped (:func:`drop_section_titles`); with the biohd scheme, a mention
        starting with a word that completes a suspended prefix ("hyper- or hypothyroidism") gets its distributed
        reading (:func:`complete_suspended`).
        """
        config = self.config
        out: list[list[Mention] | Exception] = [[] for _ in docs]
        notes = []
        for i, doc in enumerate(docs):
            try:
                notes.append((i, doc, *doc_emissions(doc, self.resources, config.features, self.scores,
                                                     config.coordination)))
            except Exception as exc:  # noqa: BLE001 - reported for this note only
                out[i] = exc
        notes = [note for note in notes if note[2]]
        if not notes:
            return out
        lengths = [len(s.tokens) for note in notes for s in note[2]]
        labels, unsure = viterbi(np.concatenate([note[3] for note in notes]), np.array(lengths),
                                 self.weights.transitions)
        names = self.weights.labels
        outside = names.index("O") if "O" in names else -1  # no O: every sentence is decoded
        inside = np.add.reduceat(labels != outside, np.cumsum([0, *lengths[:-1]])) > 0  # a sentence with a mention
        resources, coordinations = self.decoding()
        k = start = 0
        for i, doc, sentences, scores, extras in notes:
            try:
                out[i] = self._decode(doc, sentences, extras, labels, unsure, inside, k, start, resources,
                                      coordinations)
                if self.evidence is not None:
                    out[i] = self.evidence.check(doc, sentences, out[i])
                if config.section_titles:
                    out[i] = drop_section_titles(doc.text, out[i])
                if config.scheme == "biohd":
                    out[i] = complete_suspended(doc.text, out[i])
            except Exception as exc:  # noqa: BLE001 - reported for this note only
                out[i] = exc
            k += len(sentences)
            start += len(scores)  # a row per token
        return out

    def decoding(self) -> tuple[TaggerResources | None, str | None]:
        """What :func:`_mentions` takes besides a sentence's tags: the resources of the repairs (None: no repair
        needs them) and the coordination step of the learned pairing (``"rules"``, ``"learned"`` or None)."""
        config = self.config
        if self.pairing is not None:  # the pairing runs with or without terms
            coordinations = ("learned" if config.learned_coordinations else "rules") \
                if config.expand_coordinations else None
            return self.resources, coordinations
        resources = self.resources if config.expand_coordinations and config.scheme == "biohd" else None
        if resources is not None and resources.term_matcher is None:
            resources = None
        return resources, None

    def _decode(self, doc: Document, sentences: list[Sentence], extras: list[Mapping[int, dict]] | None,
                labels: np.ndarray, unsure: np.ndarray, inside: np.ndarray, k: int, start: int,
                resources: TaggerResources | None, coordinations: str | None = None) -> list[Mention]:
        """One note's mentions from the labels of its sentences (the ``k``-th on, from token ``start`` on)."""
        config = self.config
        names = self.weights.labels
        found: list[Mention] = []
        abbreviations: list = []  # the note's, once a sentence needs them
        for j, sentence in enumerate(sentences):
            n = len(sentence.tokens)
            tags = None  # most sentences: all O, nothing to decode
            if unsure[k + j]:
                if not abbreviations:
                    abbreviations.append(document_abbreviations(doc, self.resources.features, config.features))
                tags = self._crfsuite_tags(doc, sentence, extras[j] if extras is not None else None, abbreviations[0])
            elif inside[k + j]:
                tags = [names[y] for y in labels[start:start + n].tolist()]
            if tags is not None and tags.count("O") < n:
                found += _mentions(sentence, tags, config.scheme, resources, config.balance_brackets, self.pairing,
                                   coordinations)
            start += n
        return found

    def _crfsuite_tags(self, doc: Document, sentence: Sentence, extra: Mapping[int, dict] | None,
                       abbreviations: NoteAbbreviations | None) -> list[str]:
        """CRFsuite's own tags of one sentence, from its attribute lists (:func:`doc_sequences`' for it; the
        note's ``abbreviations``: :func:`document_abbreviations`)."""
        features = self.resources.features
        items = sentence_items(sentence, features, self.config.features, doc.text, abbreviations)
        if extra:
            add_features(items, extra, features)
        return self.crf.tag(items)
