"""Token features for the CRF tagger (installed as ``share_ner.features``): pure functions, resources passed in.

``document_features(doc, sentences, resources, config)`` gives, per sentence, one feature
dict per token for sklearn-crfsuite / pycrfsuite. ``FeatureConfig`` switches groups off;
``FeatureResources`` carries the lexicon matcher, word clusters and abbreviation list.
"""

from share_ner.lazy import lazy_exports

# Each name and the module that defines it, imported when the name is first used: a caller that needs only
# ``share_ner.features.config`` (the CLI building its parser) does not pay for spaCy, which ``extract`` loads.
_HOMES = {
    "GROUPS": "share_ner.features.config",
    "FeatureConfig": "share_ner.features.config",
    "FeatureResources": "share_ner.features.extract",
    "Match": "share_ner.features.matcher",
    "NoteAbbreviations": "share_ner.features.extract",
    "TermMatcher": "share_ner.features.matcher",
    "document_features": "share_ner.features.items",
    "load_clusters": "share_ner.features.clusters",
    "note_abbreviations": "share_ner.features.extract",
    "sentence_features": "share_ner.features.items",
}
__all__ = list(_HOMES)
__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
