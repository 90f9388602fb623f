"""Tagging a note with the CRF: sentences to feature sequences, CRFsuite tags, decoded and repaired mentions.

:class:`CrfTagger` is the trained tagger of a model directory (its settings, term matcher, clusters and CRFsuite
weights); :meth:`CrfTagger.tag` gives a note's mentions, all ``CUI-less`` (Task 1a).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Sequence

import pycrfsuite

from share_ner.document import Document, Mention, Sentence
from share_ner.errors import ShareNerError
from share_ner.features.clusters import load_clusters
from share_ner.features.config import FeatureConfig
from share_ner.features.coordination import coordination_features
from share_ner.features.items import add_features, document_items, model_attributes
from share_ner.model import FILES, ModelError, ModelInfo, read_terms
from share_ner.tagging.config import TaggerConfig
from share_ner.tagging.repair import balance_brackets, drop_lone_fragments, expand_coordinations
from share_ner.tagging.resources import TaggerResources, cached_resources, make_resources
from share_ner.tagging.scheme import decode
from share_ner.text import split_sentences


def doc_sequences(doc: Document, resources: TaggerResources, features: FeatureConfig,
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


def tag_sequences(tagger: pycrfsuite.Tagger, seqs: Sequence[tuple[Sentence, list[list[bytes]]]],
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


class CrfTagger:
    """The trained CRF tagger of a model directory: its settings, feature resources and CRFsuite weights."""

    def __init__(self, config: TaggerConfig, crf: pycrfsuite.Tagger, resources: TaggerResources) -> None:
        self.config = config
        self.crf = crf
        self.resources = resources

    @classmethod
    def load(cls, info: ModelInfo) -> "CrfTagger":
        """The tagger of the model directory ``info`` describes.

        Raises:
            ShareNerError: one line naming the file that cannot be read.
        """
        try:
            # Models saved before the ``algorithm`` setting existed were all trained with L-BFGS.
            config = TaggerConfig.from_dict({"algorithm": "lbfgs", **info.tagger})
        except ShareNerError as exc:
            raise ModelError(
                f"{info.path(FILES.config)}: {exc} (model written by share-ner {info.data.get('share_ner_version')})"
            ) from None
        tagger = pycrfsuite.Tagger()
        try:
            tagger.open(str(info.path(FILES.crf)))
        except (OSError, ValueError) as exc:
            raise ModelError(f"{info.path(FILES.crf)}: not a readable CRFsuite model ({exc})") from None

        def build() -> TaggerResources:
            terms = list(read_terms(info.path(FILES.terms))) if info.has_terms else None
            clusters = load_clusters(info.path(FILES.clusters)) if info.has_clusters else None
            resources = make_resources(terms, clusters)
            # Tokens carry only the attributes the model weighs; CRFsuite would skip the others (same tags, less
            # work).
            resources.features.keep_only(model_attributes(tagger))
            return resources

        files = (info.path(FILES.terms) if info.has_terms else None,
                 info.path(FILES.clusters) if info.has_clusters else None, info.path(FILES.crf))
        return cls(config, tagger, cached_resources(files, build))

    def tag(self, doc: Document) -> list[Mention]:
        """The note's disorder mentions, all ``CUI-less``."""
        seqs = doc_sequences(doc, self.resources, self.config.features, self.config.coordination)
        return tag_sequences(self.crf, seqs, self.config.scheme,
                             self.resources if self.config.expand_coordinations else None,
                             brackets=self.config.balance_brackets)
