"""Scoring, significance testing and reports (installed as ``share_ner.eval``).

Each step is its own module, as in nervaluate and seqeval:

- :mod:`~share_ner.eval.matching` — strict, relaxed and CUI matching within one note;
- :mod:`~share_ner.eval.counting` — per-note counts and the metrics computed from summed counts;
- :mod:`~share_ner.eval.scoring` — :func:`~share_ner.eval.scoring.score` and the definitions;
- :mod:`~share_ner.eval.accuracy` — Task 1b accuracy of a linker on gold spans;
- :mod:`~share_ner.eval.significance` — approximate randomization over notes;
- :mod:`~share_ner.eval.ranking` — several systems ordered as the shared task's tables;
- :mod:`~share_ner.eval.report` — plain-text tables;
- :mod:`~share_ner.eval.systems` — finding and loading the systems to evaluate.
"""
