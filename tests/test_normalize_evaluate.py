"""Task 1b figures from the command line: ``share-ner normalize`` on gold spans, then ``share-ner evaluate``,
give the accuracy the normalizer benchmark counts mention by mention."""

from __future__ import annotations

import json

from share_ner.cli import main
from share_ner.eval.accuracy import accuracy
from share_ner.formats.share import read_pipe_dir
from share_ner.inputs.files import read_notes
from share_ner.lexicons import default_lexicon
from share_ner.linking.normalizer import Normalizer


def test_normalize_then_evaluate_is_the_benchmark_count(shared_data, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SHARE_NER_CACHE", str(tmp_path / "cache"))
    root = shared_data / "mantra_gsc" / "test"
    text, gold = root / "text", root / "gold"
    out = tmp_path / "pred"
    assert main(["normalize", str(text), "--mentions", str(gold), "--lexicon", "hpo", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["evaluate", "--gold", str(gold), "--pred", str(out), "--text", str(text), "--json"]) == 0
    scores = json.loads(capsys.readouterr().out)

    right, total = accuracy(Normalizer(default_lexicon()), read_notes(text), read_pipe_dir(gold))
    assert total == scores["n_gold"] == scores["n_pred"] == scores["strict"]["tp"] == 540  # the spans came back
    assert 0 < right < total
    assert scores["accuracy"]["strict"] == scores["accuracy"]["relaxed"] == right / total
