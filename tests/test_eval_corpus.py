"""A converted corpus split scored against itself, and its gold written as BRAT and JSON Lines and read back
(skipped without ../shared)."""

from __future__ import annotations

from share_ner.eval.counting import count_corpus
from share_ner.eval.scoring import Scores
from share_ner.formats import read_annotations, write_annotations
from share_ner.inputs.files import read_notes


def test_gold_scores_one_against_itself_and_survives_brat_and_jsonl(shared_data, tmp_path):
    split = shared_data / "mantra_gsc" / "test"
    notes = read_notes(split / "text")
    gold = read_annotations(split / "gold", notes)
    scores = Scores.from_counts(count_corpus(gold, gold))
    assert scores.n_gold == 540  # the data README's count of kept DISO mentions
    assert scores.strict.f1 == scores.relaxed.f1 == scores.accuracy_strict == scores.accuracy_relaxed == 1.0
    for fmt in ("brat", "jsonl"):
        out = tmp_path / fmt
        out.mkdir()
        for doc_id, ms in gold.items():
            write_annotations(out, notes[doc_id], ms, fmt)
        assert read_annotations(out, notes) == gold, fmt
