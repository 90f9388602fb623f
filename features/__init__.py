"""Token features for the CRF tagger (installed as ``share_ner.features``): pure functions, resources passed in.

``document_features(doc, sentences, resources, config)`` gives, per sentence, one feature
dict per token for sklearn-crfsuite / pycrfsuite. ``FeatureConfig`` switches groups off;
``FeatureResources`` carries the lexicon matcher, word clusters and abbreviation list.
"""

import importlib
from typing import Any

# Each name and the module that defines it, imported when the name is first used (PEP 562): a caller that needs
# only ``share_ner.features.config`` (the CLI building its parser) does not pay for spaCy, which ``extract`` loads.
_HOMES = {
    "GROUPS": "config",
    "FeatureConfig": "config",
    "FeatureResources": "extract",
    "Match": "matcher",
    "NoteAbbreviations": "extract",
    "TermMatcher": "matcher",
    "document_features": "extract",
    "load_clusters": "clusters",
    "note_abbreviations": "extract",
    "sentence_features": "extract",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)


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
