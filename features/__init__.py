"""Token features for the CRF tagger (installed as ``share_ner.features``): pure functions, resources passed in.

``document_features(doc, sentences, resources, config)`` gives, per sentence, one feature
dict per token for sklearn-crfsuite / pycrfsuite. ``FeatureConfig`` switches groups off;
``FeatureResources`` carries the lexicon matcher, word clusters and abbreviation list.
"""

from share_ner.features.clusters import load_clusters
from share_ner.features.config import GROUPS, FeatureConfig
from share_ner.features.extract import (
    FeatureResources,
    NoteAbbreviations,
    document_features,
    note_abbreviations,
    sentence_features,
)
from share_ner.features.matcher import Match, TermMatcher

__all__ = [
    "GROUPS",
    "FeatureConfig",
    "FeatureResources",
    "Match",
    "NoteAbbreviations",
    "TermMatcher",
    "document_features",
    "load_clusters",
    "note_abbreviations",
    "sentence_features",
]
