"""Lexicon readers, builders and their data (installed as ``share_ner.lexicons``)."""
