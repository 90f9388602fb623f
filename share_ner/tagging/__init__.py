"""Finding disorder mentions: the CRF tagger, its tag scheme, post-tagging repairs, its settings and its training."""
