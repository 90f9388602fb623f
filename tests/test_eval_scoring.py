"""Scoring on hand-written notes; every expected number is counted by hand in the comments."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from share_ner.document import Mention
from share_ner.errors import ShareNerError
from share_ner.eval.counting import DocCounts, count_document
from share_ner.eval.matching import cui_matches, relaxed_matches, strict_matches
from share_ner.eval.scoring import score
from share_ner.formats import read_annotations

EVAL = Path(__file__).parent / "fixtures" / "eval"
DISC = Path(__file__).parent / "fixtures" / "eval_discontiguous"


def M(*spans: tuple[int, int], cui: str = "CUI-less", doc: str = "d") -> Mention:
    return Mention(doc, spans, cui)


@pytest.fixture(scope="module")
def gold() -> dict[str, list[Mention]]:
    return read_annotations(EVAL / "gold")


@pytest.fixture(scope="module")
def pred() -> dict[str, list[Mention]]:
    return read_annotations(EVAL / "pred")


# Per note: (n_gold, n_pred, strict_tp, relaxed_tp, cui_correct, disc_gold, disc_pred, disc_tp), counted by hand.
HAND_COUNTS = {
    # gold diabetes 7-15, asthma 20-26; pred the same two with the same CUIs plus "has" 3-6:
    # 2 strict, 2 relaxed ("has" overlaps nothing), 2 correct CUIs; nothing discontiguous
    "exact": (2, 3, 2, 2, 2, 0, 0, 0),
    # gold "chest pain" 7-17; pred "Severe chest pain" 0-17: not identical, but overlapping
    "boundary": (1, 1, 0, 1, 0, 0, 0, 0),
    # gold "left atrium ... dilated" 4-15;19-26; pred the hull 4-26: a different span set, overlapping;
    # one discontiguous gold mention, no discontiguous prediction
    "discont": (1, 1, 0, 1, 0, 1, 0, 0),
    # gold "Acute renal failure" 0-19; preds "Acute renal" 0-11 and "renal failure" 6-19 both overlap it,
    # but one-to-one only one of them can be matched: relaxed 1, the other a false positive
    "twopred": (1, 2, 0, 1, 0, 0, 0, 0),
    # gold "stroke" 11-17 twice (C0038454, C0751956); pred 11-17 twice (C0751956, CUI-less):
    # 2 strict pairs; pairing equal CUIs first gives C0751956=C0751956 correct, C0038454 vs CUI-less wrong: 1
    "dup": (2, 2, 2, 2, 1, 0, 0, 0),
    # empty gold file, empty pred file: a note with nothing in it
    "empty": (0, 0, 0, 0, 0, 0, 0, 0),
    # gold "fever" 7-12; no pred file at all: predicts nothing
    "missing": (1, 0, 0, 0, 0, 0, 0, 0),
}

# The discontiguous fixture (fixtures/eval_discontiguous), counted by hand.
DISC_COUNTS = {
    # "No renal or liver impairment. The left atrium is dilated."
    # gold: renal 3-8 + impairment 18-28 (disc.), liver impairment 12-28, left atrium 34-45 + dilated 49-56 (disc.)
    # pred: renal … impairment (disc., exact), liver impairment (exact), the hull 34-56 of "left atrium is
    #   dilated" (contiguous, overlapping the third), No 0-2 + impairment 18-28 (disc., wrong)
    # strict 2; relaxed 3 (each gold pairs with its own overlapping pred; "No … impairment" is left over);
    # disc.: 2 gold, 2 predicted, 1 exact
    "coord": (3, 4, 2, 3, 2, 2, 2, 1),
    # "Fracture of the wrist or ankle; asthma."
    # gold: Fracture of the wrist 0-21, Fracture of the 0-15 + ankle 25-30 (disc.), asthma 32-38
    # pred: 0-21 (exact), 0-15 + 25-30 (disc., exact), 0-15 + 16-21 + 25-30 (disc., three spans, wrong)
    # strict 2; relaxed 2 (asthma unfound, the three-span prediction overlaps only gold already paired);
    # disc.: 1 gold, 2 predicted, 1 exact
    "head": (3, 3, 2, 2, 2, 1, 2, 1),
}


@pytest.mark.parametrize("doc_id", sorted(HAND_COUNTS))
def test_hand_counted_notes(gold, pred, doc_id):
    assert count_document(gold[doc_id], pred.get(doc_id, [])) == DocCounts(*HAND_COUNTS[doc_id])


@pytest.mark.parametrize("doc_id", sorted(DISC_COUNTS))
def test_hand_counted_discontiguous_notes(doc_id):
    gold, pred = read_annotations(DISC / "gold"), read_annotations(DISC / "pred")
    assert count_document(gold[doc_id], pred[doc_id]) == DocCounts(*DISC_COUNTS[doc_id])


def test_discontiguous_scores_beside_the_overall_ones():
    sc = score(read_annotations(DISC / "gold"), read_annotations(DISC / "pred"))
    # overall: gold 3+3 = 6, pred 4+3 = 7, strict 2+2 = 4
    assert (sc.n_gold, sc.n_pred, sc.strict.tp) == (6, 7, 4)
    # disc.: gold 2+1 = 3, pred 2+2 = 4, exact 1+1 = 2: P 2/4, R 2/3, F1 2*2/(3+4) = 4/7
    d = sc.discontiguous
    assert (d.tp, d.fp, d.fn) == (2, 2, 1)
    assert (d.precision, d.recall, d.f1) == pytest.approx((0.5, 2 / 3, 4 / 7))
    assert sc.to_dict()["discontiguous"]["f1"] == pytest.approx(4 / 7)


def test_fixture_totals(gold, pred):
    sc = score(gold, pred)
    # gold 2+1+1+1+2+0+1 = 8; pred 3+1+1+2+2+0+0 = 9; strict 2+2 = 4; relaxed 2+1+1+1+2 = 7; CUIs 2+1 = 3
    assert (sc.n_gold, sc.n_pred) == (8, 9)
    # strict: P 4/9, R 4/8, F1 2*4/(8+9) = 8/17; FP 9-4 = 5, FN 8-4 = 4
    assert sc.strict.precision == pytest.approx(4 / 9)
    assert sc.strict.recall == pytest.approx(0.5)
    assert sc.strict.f1 == pytest.approx(8 / 17)
    assert (sc.strict.tp, sc.strict.fp, sc.strict.fn) == (4, 5, 4)
    # relaxed: P 7/9, R 7/8, F1 14/17; FP 2, FN 1
    assert sc.relaxed.precision == pytest.approx(7 / 9)
    assert sc.relaxed.recall == pytest.approx(7 / 8)
    assert sc.relaxed.f1 == pytest.approx(14 / 17)
    assert (sc.relaxed.tp, sc.relaxed.fp, sc.relaxed.fn) == (7, 2, 1)
    # accuracy: strict 3 correct / 8 gold, relaxed 3 correct / 4 strict matches
    assert sc.accuracy_strict == pytest.approx(3 / 8)
    assert sc.accuracy_relaxed == pytest.approx(3 / 4)
    assert sc.missing == ("missing",)
    # discontiguous alone: 1 gold ("discont"), none predicted: P 0 (nothing predicted), R 0, F1 0
    assert (sc.discontiguous.tp, sc.discontiguous.fp, sc.discontiguous.fn) == (0, 0, 1)
    assert sc.discontiguous.f1 == 0.0


def test_to_dict_has_the_agreed_keys(gold, pred):
    d = score(gold, pred).to_dict(by_doc=True)
    assert set(d) == {"strict", "relaxed", "discontiguous", "accuracy", "n_gold", "n_pred", "by_doc"}
    assert set(d["strict"]) == {"precision", "recall", "f1", "tp", "fp", "fn"}
    assert d["accuracy"] == {"strict": pytest.approx(3 / 8), "relaxed": pytest.approx(3 / 4)}
    assert d["by_doc"]["twopred"] == {"n_gold": 1, "n_pred": 2, "strict_tp": 0, "relaxed_tp": 1, "cui_correct": 0,
                                      "disc_gold": 0, "disc_pred": 0, "disc_tp": 0}


def test_extra_predicted_note_is_an_error_unless_allowed(gold, pred):
    extra = dict(pred, stray=[M((0, 3), doc="stray")])
    with pytest.raises(ShareNerError, match=r"1 predicted note\(s\) have no gold annotations: stray"):
        score(gold, extra)
    # allowed: left out, so the scores are those without it
    sc = score(gold, extra, allow_extra=True)
    assert sc.extra == ("stray",)
    assert (sc.n_pred, sc.strict.tp) == (9, 4)


def test_all_empty_gives_zeros_not_errors():
    sc = score({"a": []}, {"a": []})
    assert (sc.strict.precision, sc.strict.recall, sc.strict.f1) == (0.0, 0.0, 0.0)
    assert (sc.accuracy_strict, sc.accuracy_relaxed) == (0.0, 0.0)


def test_one_pred_over_two_gold_matches_once():
    # gold "chest" 0-5 and "pain" 6-10; one pred 0-10 overlaps both: relaxed one-to-one gives 1
    assert relaxed_matches([M((0, 5)), M((6, 10))], [M((0, 10))]) == 1


def test_maximum_matching_is_not_greedy():
    # g0 0-10 overlaps p0 0-3 and p1 8-12; g1 11-15 overlaps only p1.
    # Greedy g0->p1 would leave g1 unmatched; the maximum matching is g0-p0, g1-p1 = 2
    assert relaxed_matches([M((0, 10)), M((11, 15))], [M((8, 12)), M((0, 3))]) == 2


def test_touching_spans_do_not_overlap():
    # half-open: 0-5 and 5-9 share no character
    assert relaxed_matches([M((0, 5))], [M((5, 9))]) == 0


def test_discontiguous_pred_overlapping_only_through_its_second_fragment():
    # gold 20-25; pred 0-3;21-23: the second fragment shares characters 21-22
    assert relaxed_matches([M((20, 25))], [M((0, 3), (21, 23))]) == 1
    assert strict_matches([M((20, 25))], [M((0, 3), (21, 23))]) == 0


def test_cui_counted_only_on_strict_matches():
    # same CUI, overlapping but different spans: no strict match, so no correct CUI
    assert cui_matches([M((0, 5), cui="C1")], [M((0, 6), cui="C1")]) == 0
    # CUI-less is a label like any other
    assert cui_matches([M((0, 5))], [M((0, 5))]) == 1


def test_duplicate_prediction_of_one_gold_is_one_tp_one_fp():
    assert strict_matches([M((0, 5))], [M((0, 5)), M((0, 5))]) == 1


# Random notes: mentions of one or two fragments inside 0..60.
_fragment = st.tuples(st.integers(0, 55), st.integers(1, 5)).map(lambda t: (t[0], t[0] + t[1]))
_mention = st.builds(
    lambda frags, cui: M(*_disjoint(frags), cui=cui),
    st.lists(_fragment, min_size=1, max_size=2),
    st.sampled_from(["C1", "C2", "CUI-less"]),
)


def _disjoint(frags: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    frags = sorted(frags)
    out = [frags[0]]
    for s, e in frags[1:]:
        if s >= out[-1][1]:
            out.append((s, e))
    return tuple(out)


_corpus = st.dictionaries(st.sampled_from(["a", "b", "c"]), st.lists(_mention, max_size=6), min_size=1)


@settings(max_examples=60, deadline=None)
@given(_corpus)
def test_gold_against_itself_scores_one(gold):
    if not any(gold.values()):
        gold = {**gold, "a": [M((0, 1))]}
    sc = score(gold, gold)
    assert (sc.strict.precision, sc.strict.recall, sc.strict.f1) == (1.0, 1.0, 1.0)
    assert (sc.relaxed.precision, sc.relaxed.recall, sc.relaxed.f1) == (1.0, 1.0, 1.0)
    assert (sc.accuracy_strict, sc.accuracy_relaxed) == (1.0, 1.0)


@settings(max_examples=60, deadline=None)
@given(_corpus, _corpus)
def test_strict_never_exceeds_relaxed(gold, pred):
    pred = {d: ms for d, ms in pred.items() if d in gold}
    sc = score(gold, pred)
    assert sc.strict.tp <= sc.relaxed.tp <= min(sc.n_gold, sc.n_pred)
    assert sc.strict.f1 <= sc.relaxed.f1
    assert sc.n_correct_cui <= sc.strict.tp
