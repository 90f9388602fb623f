"""Error analysis (share_ner.eval.errors) on hand-made notes, every error kind counted by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from share_ner.document import Mention
from share_ner.errors import ShareNerError
from share_ner.eval.counting import count_document
from share_ner.eval.errors import ERROR_KINDS, classify_corpus, classify_note, frequent_strings, mention_string
from share_ner.eval.matching import cui_matches, strict_matches, strict_pairs
from share_ner.eval.scoring import score
from share_ner.formats import read_annotations
from share_ner.inputs.files import read_notes

REPORT = Path(__file__).parent / "fixtures" / "report"


def M(*spans, cui="CUI-less", attributes=None):
    return Mention("d", tuple(spans), cui, attributes=attributes)


@pytest.fixture(scope="module")
def corpus():
    gold = read_annotations(REPORT / "gold")
    pred = read_annotations(REPORT / "pred")
    texts = {d: doc.text for d, doc in read_notes(REPORT / "text").items()}
    return gold, pred, texts


def test_strict_pairs_pair_equal_cuis_first():
    gold = [M((0, 4), cui="A"), M((0, 4), cui="B"), M((6, 9), cui="C")]
    pred = [M((0, 4), cui="B"), M((0, 4), cui="X"), M((0, 4), cui="A")]
    pairs = strict_pairs(gold, pred)
    # gold A pairs with pred A, gold B with pred B; the third (0, 4) prediction has no gold left
    assert pairs == [(0, 2), (1, 0)]
    assert len(pairs) == strict_matches(gold, pred) == 2
    assert sum(gold[i].cui == pred[j].cui for i, j in pairs) == cui_matches(gold, pred) == 2
    # a gold mention whose CUI no prediction has still pairs, after the equal ones
    assert strict_pairs([M((0, 4), cui="Z"), M((0, 4), cui="A")], [M((0, 4), cui="A"), M((0, 4), cui="Q")]) == [
        (0, 1), (1, 0)]


def test_cui_kinds():
    gold = [M((0, 4), cui="C1"), M((5, 9), cui="C2"), M((10, 14)), M((15, 19), cui="C4")]
    pred = [M((0, 4), cui="C1"), M((5, 9), cui="C9"), M((10, 14), cui="C3"), M((15, 19))]
    n = classify_note("d", gold, pred)
    assert n.correct == ((0, 0),)
    assert [(e.kind, e.gold, e.pred) for e in n.errors] == [
        ("wrong_cui", 1, 1), ("cui_for_cui_less", 2, 2), ("cui_less_for_cui", 3, 3)]


@pytest.mark.parametrize(
    "gold, pred, detail",
    [
        ((10, 20), (5, 20), "too_long"),
        ((10, 20), (10, 25), "too_long"),
        ((10, 20), (12, 18), "too_short"),
        ((10, 20), (5, 15), "shifted"),
    ],
)
def test_boundary_details(gold, pred, detail):
    (e,) = classify_note("d", [M(gold)], [M(pred)]).errors
    assert (e.kind, e.detail) == ("boundary", detail)


@pytest.mark.parametrize(
    "gold, pred, detail",
    [
        (((0, 4), (10, 14)), ((0, 4),), "fragment_missing"),
        (((0, 4),), ((0, 4), (10, 14)), "extra_fragment"),
        (((0, 4), (10, 14)), ((0, 4), (20, 24)), "wrong_pairing"),
        (((0, 4), (10, 14)), ((0, 14),), "fragments_joined"),
        (((0, 14),), ((0, 4), (10, 14)), "split"),
        (((0, 4), (10, 14)), ((0, 5), (11, 14)), "fragment_boundary"),
    ],
)
def test_discontiguous_details(gold, pred, detail):
    (e,) = classify_note("d", [M(*gold)], [M(*pred)]).errors
    assert (e.kind, e.detail) == ("discontiguous", detail)


def test_unpaired_mentions_are_false_positives_and_negatives():
    # the second prediction of one span set overlaps a gold mention that is already paired: a false positive
    n = classify_note("d", [M((0, 4)), M((30, 34))], [M((0, 4)), M((0, 4)), M((20, 24))])
    assert n.correct == ((0, 0),)
    assert sorted((e.kind, e.gold, e.pred) for e in n.errors) == [
        ("false_negative", 1, None), ("false_positive", None, 1), ("false_positive", None, 2)]


def test_fixture_counted_by_hand(corpus):
    gold, pred, _ = corpus
    summary = classify_corpus(gold, pred)
    assert [n.doc_id for n in summary.notes] == ["cuis", "discont", "discont2", "exact", "fp", "missing", "spans"]
    # cuis: gout C0003873 for C0018099; anemia C0002871 for CUI-less; rash CUI-less for C0015230
    # spans: "Severe chest" / "chest pain" shifted, "shortness" too short, "then fever" too long; "cough" missed
    # discont: "Left atrium" lacks "dilated"; "ascending aorta ... enlarged" takes the second "enlarged";
    #   "Heart is enlarged" joins "Heart ... enlarged"; discont2: [Pain in][knee] against [Pain][left knee],
    #   [knee][swollen] against "knee is swollen", [Rash][arms] against "Rash"
    # fp: "fever" not annotated, "chills" predicted twice; missing: "sepsis" in a note with no predictions
    assert summary.by_kind() == {
        "false_positive": 2, "false_negative": 2, "boundary": 3, "discontiguous": 6,
        "wrong_cui": 1, "cui_for_cui_less": 1, "cui_less_for_cui": 1,
    }
    assert summary.by_detail("boundary") == {"shifted": 1, "too_short": 1, "too_long": 1}
    assert summary.by_detail("discontiguous") == {
        "fragment_missing": 1, "wrong_pairing": 1, "fragments_joined": 1,
        "fragment_boundary": 1, "split": 1, "extra_fragment": 1}
    # correct: exact 2, cuis 1 (hypertension), discont 1 (aortic root ... enlarged), fp 1 (chills)
    assert summary.n_correct == 5
    assert summary.relaxed_gap == 0
    assert [n.doc_id for n in summary.notes if not n.has_errors] == ["exact"]
    discont = next(n for n in summary.notes if n.doc_id == "discont")
    assert [(e.gold, e.pred, e.detail) for e in discont.errors] == [
        (0, 0, "fragment_missing"), (2, 2, "wrong_pairing"), (3, 3, "fragments_joined")]


def test_classes_add_up_to_the_scores(corpus):
    gold, pred, _ = corpus
    summary = classify_corpus(gold, pred)
    sc = score(gold, pred)
    k = summary.by_kind()
    cui_errors = k["wrong_cui"] + k["cui_for_cui_less"] + k["cui_less_for_cui"]
    assert summary.n_correct == sc.n_correct_cui == 5
    assert summary.n_correct + cui_errors == sc.strict.tp == 8
    assert k["boundary"] + k["discontiguous"] + k["false_positive"] == sc.strict.fp == 11
    assert k["boundary"] + k["discontiguous"] + k["false_negative"] == sc.strict.fn == 11
    assert sc.strict.tp + k["boundary"] + k["discontiguous"] == sc.relaxed.tp == 17
    for n in summary.notes:
        c = count_document(n.gold, n.pred)
        assert len(n.correct) + sum(e.gold is not None for e in n.errors) == c.n_gold
        assert len(n.correct) + sum(e.pred is not None for e in n.errors) == c.n_pred


def test_relaxed_gap_counts_an_overlap_chain_the_exact_pair_blocks():
    # gold [0,10) and [0,3); predicted [0,10) and [5,15): the exact pair leaves [0,3) and [5,15), which do not
    # overlap, while the relaxed score pairs [0,10)-[5,15) and [0,3)-[0,10)
    n = classify_note("d", [M((0, 10)), M((0, 3))], [M((0, 10)), M((5, 15))])
    assert sorted(e.kind for e in n.errors) == ["false_negative", "false_positive"]
    assert n.relaxed_gap == 1


def test_extra_predicted_notes_are_an_error_unless_allowed():
    gold = {"a": [M((0, 4))]}
    pred = {"a": [M((0, 4))], "b": [M((0, 4))]}
    with pytest.raises(ShareNerError, match="1 predicted note"):
        classify_corpus(gold, pred)
    assert [n.doc_id for n in classify_corpus(gold, pred, allow_extra=True).notes] == ["a"]


def test_frequent_strings(corpus):
    gold, pred, texts = corpus
    strings = frequent_strings(classify_corpus(gold, pred), texts)
    assert set(strings) == set(ERROR_KINDS)
    # false positives count the predicted words, ties in alphabetical order
    assert strings["false_positive"] == [("chills", 1), ("fever", 1)]
    assert strings["false_negative"] == [("cough", 1), ("sepsis", 1)]
    assert strings["discontiguous"][0] == ("ascending aorta … enlarged", 1)
    assert strings["wrong_cui"] == [("gout", 1)]
    assert mention_string(M((0, 4), (6, 12)), "Left\r\natrium") == "left … atrium"
    assert mention_string(M((0, 12)), "Left\r\natrium") == "left atrium"


def test_frequent_strings_rank_by_count():
    text = "fever fever cough"
    summary = classify_corpus({"d": []}, {"d": [M((0, 5)), M((6, 11)), M((12, 17))]})
    assert frequent_strings(summary, {"d": text}, top=1)["false_positive"] == [("fever", 2)]
