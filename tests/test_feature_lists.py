"""The list features (share_ner.features.lists) on hand-built sentences: which conjuncts they mark, and with what."""

from __future__ import annotations

from collections import defaultdict

from share_ner.features import TermMatcher
from share_ner.features.coordination import coordination_features, note_coordination
from share_ner.features.matcher import term_keys

TERMS = ["disturbances", "metabolic disturbances", "cancer", "lung cancer", "breast cancer"]


def _marks(sentence: str, lists: bool = True, terms: list[str] = TERMS,
           last_keys: frozenset[str] | None = frozenset(term_keys("disturbances cancer"))) -> dict[str, dict]:
    words = sentence.split()
    feats: list[dict] = [{} for _ in words]
    matcher = TermMatcher.from_terms((t, "train") for t in terms)
    coordination_features(words, feats, matcher, frozenset({"impairment"}), None, last_keys, lists)
    return {f"{i}:{w}": {k: v for k, v in f.items() if k.startswith("cl.")} for i, (w, f) in enumerate(zip(words, feats))
            if any(k.startswith("cl.") for k in f)}


def test_far_conjuncts_of_a_list_see_the_shared_head_on_the_right() -> None:
    marked = _marks("significant cardiac , vascular , renal , psychiatric , or metabolic disturbances .")
    shared = {"cl.size": "4+", "cl.rh": "disturbances", "cl.rh.k": "TSE", "cl.lh": "significant", "cl.lh.k": "-",
              "cl.lh.link": "-"}
    # psychiatric and metabolic sit next to the coordinator: the window sees the head from there
    assert marked == {"1:cardiac": {**shared, "cl.pos": "first"}, "3:vascular": {**shared, "cl.pos": "mid"},
                      "5:renal": {**shared, "cl.pos": "mid"}}


def test_a_list_with_its_head_on_the_left() -> None:
    marked = _marks("history of cancer of the breast , ovary or lung .")
    assert marked == {"5:breast": {"cl.size": "3", "cl.rh.k": "none", "cl.lh": "cancer", "cl.lh.k": "TSE",
                                   "cl.lh.link": "of", "cl.pos": "first"}}


def test_conjuncts_of_two_words_and_a_head_after_a_parallel_last_conjunct() -> None:
    # the right conjunct is taken as long as the one before the coordinator: "lung cancer" + the head "history"
    marked = _marks("chronic cough , night sweats or lung cancer history")
    assert set(marked) == {"1:cough"}
    assert marked["1:cough"]["cl.rh"] == "history" and marked["1:cough"]["cl.rh.k"] == "-"


def test_no_marks_without_a_far_conjunct_or_across_a_break_or_when_off() -> None:
    assert _marks("renal or liver impairment") == {}
    assert _marks("renal , ( liver or lung cancer") == {}  # the bracket ends the list: two conjuncts left
    assert set(_marks("renal ( liver , kidney or lung cancer")) == {"2:liver"}
    assert _marks("cardiac , vascular ; renal or lung cancer") == {}
    assert _marks("significant cardiac , vascular , renal or metabolic disturbances .", lists=False) == {}
    # a list closed by commas alone is no list
    assert _marks("cardiac , vascular , renal , metabolic disturbances") == {}


def test_head_kinds_follow_the_term_matcher() -> None:
    sentence = "cardiac , vascular or metabolic disturbances"
    assert _marks(sentence, last_keys=None)["0:cardiac"]["cl.rh.k"] == "TS"
    assert _marks(sentence, terms=["other things"], last_keys=frozenset())["0:cardiac"]["cl.rh.k"] == "-"
    assert _marks("cardiac , vascular or metabolic impairment")["0:cardiac"]["cl.rh.k"] == "H"


def test_a_notes_list_marks_are_those_of_its_sentences_one_by_one() -> None:
    matcher = TermMatcher.from_terms((t, "train") for t in TERMS)
    sentences = ["significant cardiac , vascular or metabolic disturbances .".split(), "or".split(),
                 "cancer of the breast , ovary or lung".split(), "no list here".split()]
    words = [w for s in sentences for w in s]
    by_note = note_coordination(words, [len(s) for s in sentences], matcher, lists=True)
    expected = []
    for s in sentences:
        feats: defaultdict[int, dict] = defaultdict(dict)
        coordination_features(s, feats, matcher, lists=True)
        expected.append(feats)
    assert by_note == expected
    assert by_note[0][1]["cl.pos"] == "first" and by_note[2][3]["cl.lh"] == "cancer"
