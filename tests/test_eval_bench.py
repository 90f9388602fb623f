"""A quick run of eval/bench_corpora.py on the smallest converted split (skipped without ../shared)."""

from __future__ import annotations

from share_ner.document import Document, Mention
from share_ner.eval.bench_corpora import Perturbation, bench_split, find_splits, perturb, time_shuffles


def test_bench_on_one_split(shared_data):
    splits = {f"{p.parent.name}/{p.name}": p for p in find_splits(shared_data)}
    row = bench_split(splits["mantra_gsc/test"], seed=13, n_shuffles=200)
    assert row["self_all_one"]
    assert row["round_trip"]
    assert row["gold"] == 540  # the data README's count of kept DISO mentions
    # 10% of mentions dropped and 10% shifted: strict F1 well below 1, relaxed above strict
    assert 0.6 < row["strict_f1"] < 0.95
    assert row["strict_f1"] < row["relaxed_f1"] < 1.0
    assert row["p_strict_f1"] < 0.01


def test_perturbation_is_seeded_and_changes_what_it_says():
    notes = {"a": Document("a", "x" * 200)}
    gold = {"a": [Mention("a", ((10 * k, 10 * k + 5),), f"C{k}") for k in range(15)]}
    assert perturb(gold, notes, 1) == perturb(gold, notes, 1)
    assert perturb(gold, notes, 1, Perturbation(0, 0, 0, 0)) == gold
    dropped = perturb(gold, notes, 1, Perturbation(shift=0, drop=1, add=0, change_cui=0))
    assert dropped == {"a": []}
    recoded = perturb(gold, notes, 1, Perturbation(shift=0, drop=0, add=0, change_cui=1))
    assert [m.spans for m in recoded["a"]] == [m.spans for m in gold["a"]]
    assert all(p.cui != g.cui for p, g in zip(recoded["a"], gold["a"]))


def test_shuffle_timer_runs():
    assert time_shuffles(n_notes=10, n_shuffles=50, repeats=1) > 0
