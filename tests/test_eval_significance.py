"""Approximate randomization: identical systems, a clearly better system, reproducibility, rankings."""

from __future__ import annotations

import numpy as np
import pytest

from share_ner.document import Mention
from share_ner.errors import ShareNerError
from share_ner.eval.ranking import rank_systems
from share_ner.eval.significance import METRIC_NAMES, approximate_randomization, compare


def _corpus(n_docs: int, keep: float, seed: int) -> tuple[dict, dict]:
    """Gold with 3 mentions a note; a system that finds each with probability ``keep`` (CUIs right)."""
    rng = np.random.default_rng(seed)
    gold, pred = {}, {}
    for d in range(n_docs):
        doc = f"n{d:03d}"
        gold[doc] = [Mention(doc, ((10 * k, 10 * k + 5),), f"C{k}") for k in range(3)]
        pred[doc] = [m for m in gold[doc] if rng.random() < keep]
    return gold, pred


def test_identical_systems_have_p_one():
    gold, pred = _corpus(30, 0.6, seed=1)
    res = compare(gold, pred, pred, n_shuffles=500, seed=3)
    assert set(res) == set(METRIC_NAMES)
    for c in res.values():
        assert c.diff == 0.0
        # every shuffle ties the observed difference of 0: p = (500 + 1) / (500 + 1)
        assert c.p_value == 1.0


def test_clearly_better_system_has_small_p():
    gold, good = _corpus(60, 0.95, seed=1)
    _, bad = _corpus(60, 0.3, seed=2)
    res = compare(gold, good, bad, n_shuffles=2000, seed=0)
    assert res["strict_f1"].diff > 0.3
    # no shuffle of 60 notes reaches a gap that wide: p = 1 / 2001
    assert res["strict_f1"].p_value < 0.001
    assert res["strict_accuracy"].p_value < 0.001


def test_seed_makes_p_values_reproducible():
    gold, a = _corpus(20, 0.7, seed=1)
    _, b = _corpus(20, 0.6, seed=2)
    first = compare(gold, a, b, n_shuffles=300, seed=42)
    assert compare(gold, a, b, n_shuffles=300, seed=42) == first
    # a close pair gives a p-value well inside (0, 1) that depends on the shuffles drawn
    ps = {compare(gold, a, b, n_shuffles=300, seed=s)["relaxed_f1"].p_value for s in range(5)}
    assert len(ps) > 1


def test_p_value_formula_on_a_tiny_case():
    # One note each; swapping it just exchanges A and B, so |diff| is unchanged in every shuffle:
    # c = N, p = (N + 1) / (N + 1) = 1 even though A is better.
    a = np.array([[2, 2, 2, 2, 2, 0, 0, 0]])
    b = np.array([[2, 2, 0, 0, 0, 0, 0, 0]])
    res = approximate_randomization(a, b, n_shuffles=50, seed=0)
    assert res["strict_f1"].diff == 1.0
    assert res["strict_f1"].p_value == 1.0


def test_bad_shuffle_count_is_a_user_error():
    with pytest.raises(ShareNerError, match="at least 1"):
        approximate_randomization(np.zeros((1, 8)), np.zeros((1, 8)), n_shuffles=0)


def test_ranking_orders_by_strict_f1_and_marks_significance():
    gold, good = _corpus(60, 0.95, seed=1)
    _, mid = _corpus(60, 0.9, seed=5)
    _, bad = _corpus(60, 0.3, seed=2)
    ranked = rank_systems(gold, {"bad": bad, "good": good, "mid": mid}, n_shuffles=1000, seed=0)
    assert [r.name for r in ranked] == ["good", "mid", "bad"]
    assert ranked[1].better_than_next("strict_f1")  # 0.9 vs 0.3 recall
    assert not ranked[-1].vs_next  # nothing below the last


def test_shuffled_p_value_approaches_the_exact_permutation_p_value():
    # Three notes: all 2**3 swap patterns can be enumerated by hand.
    # A: (gold, pred, strict, relaxed, correct) per note; B worse on notes 0 and 1.
    a = np.array([[4, 4, 4, 4, 4], [2, 2, 2, 2, 1], [3, 3, 1, 3, 1]])
    b = np.array([[4, 4, 1, 3, 1], [2, 2, 1, 2, 1], [3, 3, 1, 3, 1]])
    # strict F1 = 2*strict/(gold+pred), gold + pred = 18 for both whatever is swapped, so only the
    # strict sums matter. Unswapped: A 4+2+1 = 7, B 1+1+1 = 3, |diff| 4. Swap note 0 only: A 1+2+1 = 4,
    # B 4+1+1 = 6, |diff| 2. Swap note 1 only: A 6, B 4, |diff| 2. Swap both: A 3, B 7, |diff| 4.
    # Note 2 is the same in both, so each case occurs twice: 4 of 8 patterns reach 4, exact p = 0.5.
    from itertools import product

    from share_ner.eval.counting import METRICS

    f = METRICS["strict_f1"]
    observed = abs(f(a.sum(0)) - f(b.sum(0)))
    hits = 0
    for swap in product([0, 1], repeat=3):
        s = np.array(swap)[:, None]
        sa, sb = (a * (1 - s) + b * s).sum(0), (b * (1 - s) + a * s).sum(0)
        hits += abs(f(sa) - f(sb)) >= observed - 1e-12
    exact = hits / 8
    assert exact == 0.5
    res = approximate_randomization(a, b, ["strict_f1"], n_shuffles=20_000, seed=7)
    assert res["strict_f1"].p_value == pytest.approx(exact, abs=0.015)
