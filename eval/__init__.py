"""Scoring, significance testing and reports (installed as ``share_ner.eval``)."""
