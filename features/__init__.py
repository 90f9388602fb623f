"""Token features for the CRF tagger (installed as ``share_ner.features``): pure functions, resources passed in."""
