"""Tagging a note with the CRF: sentences to feature sequences, CRFsuite tags, decoded and repaired mentions.
"""

from __future__ import annotations

from typing import Any, Sequence

import pycrfsuite

from share_ner.document import Document, Mention, Sentence
from share_ner.features import document_features
from share_ner.features.coordination import coordination_features
from share_ner.tagging.repair import balance_brackets, drop_lone_fragments, expand_coordinations
from share_ner.tagging.resources import TaggerResources
from share_ner.tagging.scheme import decode
from share_ner.text import split_sentences


def doc_sequences(doc: Document, resources: Any, features: Any,
                  coordination: bool = False) -> list[tuple[Sentence, list[dict]]]:
    """The non-empty sentences of a note with their per-token feature dicts."""
    if not doc.text.strip():
        return []
    sentences = [s for s in split_sentences(doc) if s.tokens]
    if not sentences:
        return []
    feats = document_features(doc, sentences, resources.features, features)
    if coordination and resources.term_matcher is not None:
        for sentence, f in zip(sentences, feats):
            coordination_features([t.text for t in sentence.tokens], f, resources.term_matcher,
                                  resources.head_words, resources.first_keys, resources.last_keys)
    return list(zip(sentences, feats))


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
        tags = tagger.tag(pycrfsuite.ItemSequence(feats))
        found = decode(sentence, tags, scheme=scheme)
        if expand and found:
            found = drop_lone_fragments(sentence, tags, found, resources)
            found = expand_coordinations(sentence, found, resources)
        if brackets and found:
            found = balance_brackets(sentence, found)
        mentions.extend(found)
    return mentions
