"""Fragment tags that hold overlapping mentions, and the learned pairing that joins the fragments again."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import mention_of

from share_ner.document import Document, Mention
from share_ner.model import FILES
from share_ner.tagging.config import TaggerConfig
from share_ner.tagging.pairing import (
    PairingExamples,
    PairingModel,
    coordination_candidates,
    extend_lists,
    fragment_candidates,
    pair_fragments,
    reread_lone,
)
from share_ner.tagging.scheme import encode_report, held, mention_tokens, round_trip_ceiling
from share_ner.text import split_sentences


def sentence_of(text: str):
    (sent,) = split_sentences(Document("d1", text))
    return sent


def indices(sent, mention: Mention) -> tuple[int, ...]:
    got = mention_tokens(sent, mention)
    assert got is not None
    return got[0]


def test_nested_mentions_are_both_held_by_fragment_tags():
    text = "lung metastases"
    sent = sentence_of(text)
    outer, inner = mention_of(text, "lung metastases"), mention_of(text, "metastases")
    rules = encode_report(sent, [outer, inner])
    assert len(rules.dropped) == 1  # one tag sequence read by the rules cannot hold both
    res = encode_report(sent, [outer, inner], pairing="learned")
    assert res.dropped == [] and res.tags == ["DB", "HB"]
    assert held(res.tags, indices(sent, outer)) and held(res.tags, indices(sent, inner))


def test_heads_shared_two_ways_become_separate_fragments():
    # renal ... failure, renal ... insufficiency, hepatic failure, hepatic ... insufficiency: every word is in two
    text = "renal or hepatic failure or insufficiency"
    sent = sentence_of(text)
    gold = [mention_of(text, "renal", "failure"), mention_of(text, "renal", "insufficiency"),
            mention_of(text, "hepatic failure"), mention_of(text, "hepatic", "insufficiency")]
    res = encode_report(sent, gold, pairing="learned")
    assert res.tags == ["HB", "O", "HB", "HB", "O", "HB"]
    assert all(held(res.tags, indices(sent, g)) for g in gold)
    # a token set that cuts a fragment is not held
    assert not held(["HB", "HI"], (0,))


def test_ceiling_counts_what_fragment_tags_hold(tmp_path: Path):
    text = "Becker muscular dystrophy and lung metastases."
    docs = {"d1": Document("d1", text)}
    gold = {"d1": [mention_of(text, *p, doc_id="d1") for p in (["Becker muscular dystrophy"], ["muscular dystrophy"],
                                                                ["lung metastases"], ["metastases"])]}
    learned = round_trip_ceiling(docs, gold)
    rules = round_trip_ceiling(docs, gold, pairing="rules")
    assert learned["pairing"] == "learned" and learned["survived"] == 4 and learned["lost"]["dropped"] == 0
    # the rules drop one mention of each nested pair
    assert rules["survived"] == 2 and rules["lost"]["dropped"] == 2


def test_fragment_candidates_are_heads_alone_pairs_and_triples_with_a_head():
    tags = ["DB", "O", "DB", "HB", "HI"]
    pairs = [
        (((0, 0), (2, 2)), "DD"),
        (((0, 0), (3, 4)), "DH"),
        (((2, 2), (3, 4)), "DH"),
        (((3, 4),), "H"),
    ]
    assert fragment_candidates(tags, max_parts=2) == pairs
    assert fragment_candidates(tags) == pairs[:1] + [(((0, 0), (2, 2), (3, 4)), "DDH")] + pairs[1:]
    # three D fragments: no triple without a head
    assert all(len(runs) < 3 for runs, _ in fragment_candidates(["DB", "O", "DB", "O", "DB"]))


def test_coordination_candidates_walk_a_list_to_the_head():
    words = "cardiac , vascular or metabolic disturbances".split()
    cands = {(runs, kinds) for runs, kinds, _ in coordination_candidates(words, (4, 5))}
    assert (((2, 2), (5, 5)), "CR") in cands  # vascular ... disturbances
    assert (((0, 0), (5, 5)), "CR") in cands  # cardiac ... disturbances
    # head on the left: "hepatitis B or C" gives hepatitis ... C
    cands = {runs for runs, _, _ in coordination_candidates("hepatitis B or C".split(), (0, 1))}
    assert ((0, 0), (3, 3)) in cands


def _coordination_sentence(x: str, y: str, head: str):
    text = f"history of {x} or {y} {head} ."
    sent = sentence_of(text)
    gold = [mention_of(text, x, head), mention_of(text, f"{y} {head}")]
    return sent, gold


def test_pairing_learned_from_gold_fragments_joins_new_ones():
    examples = PairingExamples()
    pairs = [("renal", "hepatic", "failure"), ("cardiac", "pulmonary", "disease"), ("acute", "chronic", "pain"),
             ("liver", "lung", "cancer"), ("left", "right", "effusion"), ("skin", "bone", "infection")]
    for x, y, head in pairs:
        sent, gold = _coordination_sentence(x, y, head)
        res = encode_report(sent, gold, pairing="learned")
        words = [t.text for t in sent.tokens]
        examples.add(words, res.tags, [indices(sent, g) for g in gold], None)
        # a sentence of two separate conditions: D fragments that must not be joined across "and"
        text = f"{x} {head} and {y} {head} ."
        s2 = sentence_of(text)
        g2 = [mention_of(text, f"{x} {head}"), mention_of(text, f"{y} {head}")]
        examples.add([t.text for t in s2.tokens], encode_report(s2, g2, pairing="learned").tags,
                     [indices(s2, g) for g in g2], None)
    model = examples.fit()
    sent, gold = _coordination_sentence("kidney", "heart", "damage")
    words = [t.text for t in sent.tokens]
    tags = encode_report(sent, gold, pairing="learned").tags
    assert tags == ["O", "O", "DB", "O", "DB", "HB", "O"]
    found, lone = pair_fragments(words, tags, model, None)
    assert sorted(found) == sorted(indices(sent, g) for g in gold) and lone == []


def _fit(sentences, lists: bool = False) -> PairingModel:
    """A pairing model fitted on (text, gold phrases per mention) training sentences (``lists``: with the list
    classifier)."""
    examples = PairingExamples(lists=lists)
    for text, mentions in sentences:
        sent = sentence_of(text)
        gold = [mention_of(text, *phrases) for phrases in mentions]
        tags = encode_report(sent, gold, pairing="learned").tags
        examples.add([t.text for t in sent.tokens], tags, [indices(sent, g) for g in gold], None)
    return examples.fit()


def test_pairing_joins_three_fragments_sharing_a_modifier_and_a_head():
    words = [("renal", "liver"), ("cardiac", "lung"), ("skin", "bone"), ("left", "right"), ("upper", "lower")]
    model = _fit([(f"abnormal {x} or {y} function .", [("abnormal", x, "function"), ("abnormal", f"{y} function")])
                  for x, y in words] + [(f"abnormal {x} and {y} function .", [(f"abnormal {x}",), (f"{y} function",)])
                                        for x, y in words])
    text = "abnormal kidney or heart function ."
    sent = sentence_of(text)
    gold = [mention_of(text, "abnormal", "kidney", "function"), mention_of(text, "abnormal", "heart function")]
    tags = encode_report(sent, gold, pairing="learned").tags
    assert tags == ["HB", "DB", "O", "DB", "HB", "O"]
    found, lone = pair_fragments([t.text for t in sent.tokens], tags, model, None)
    assert sorted(found) == sorted(indices(sent, g) for g in gold) and lone == []
    # a model that joins pairs only cannot
    found, _ = pair_fragments([t.text for t in sent.tokens], tags, replace(model, max_parts=2), None)
    assert not set(found) & {indices(sent, g) for g in gold}


def test_a_lone_fragment_is_joined_with_the_head_of_a_contiguous_mention_across_a_coordinator():
    model = _fit([(f"history of {x} or {y} {h} .", [(x, h), (f"{y} {h}",)])
                  for x, y, h in [("renal", "hepatic", "failure"), ("cardiac", "pulmonary", "disease"),
                                  ("acute", "chronic", "pain"), ("liver", "lung", "cancer"), ("skin", "bone", "infection")]]
                 + [(f"{x} {h} and {y} {h} .", [(f"{x} {h}",), (f"{y} {h}",)])
                    for x, y, h in [("renal", "hepatic", "failure"), ("acute", "chronic", "pain")]])
    words = "history of urogenital or uterine prolapse .".split()
    tags = ["O", "O", "DB", "O", "B", "I", "O"]  # the CRF tagged the second conjunct as a contiguous mention
    found, lone = pair_fragments(words, tags, model, None)
    assert lone == [(2, 2)]
    assert reread_lone(words, tags, lone, model, None) == [((2, 5), (2, 2))]  # urogenital ... prolapse
    # only across a coordinator that is a word ("or", "and"), and not with a model written before the re-reading
    assert reread_lone(words[:3] + [","] + words[4:], tags, lone, model, None) == []
    assert reread_lone(words, tags, lone, replace(model, reread=False), None) == []


_LISTS = [("cardiac", "renal", "hepatic", "pulmonary", "disease"), ("upper", "lower", "middle", "outer", "pain"),
          ("skin", "bone", "joint", "muscle", "infection"), ("liver", "lung", "brain", "colon", "cancer"),
          ("acute", "chronic", "recurrent", "severe", "failure")]


def test_the_list_walk_adds_the_far_conjuncts_of_a_list_the_crf_tagged_in_part():
    # every conjunct of a list borrows the head; a mention of its own before the list does not
    model = _fit([(f"history of {a} , {b} , {c} or {d} {h} .", [(a, h), (b, h), (c, h), (f"{d} {h}",)])
                  for a, b, c, d, h in _LISTS]
                 + [(f"fever , {c} or {d} {h} .", [("fever",), (c, h), (f"{d} {h}",)]) for _, _, c, d, h in _LISTS],
                 lists=True)
    assert model.lists  # the list classifier was trained
    words = "history of kidney , spleen , ovary or heart disorder .".split()
    tags = ["O", "O", "O", "O", "O", "O", "DB", "O", "DB", "HB", "O"]  # the CRF found the last two conjuncts
    found, lone = pair_fragments(words, tags, model, None)
    assert sorted(found) == [(6, 9), (8, 9)] and lone == []
    assert sorted(extend_lists(words, tags, found, model, None)) == [(2, 9), (4, 9)]  # kidney / spleen ... disorder
    # a conjunct the CRF tagged as a mention of its own ends the walk; a model without the list classifier adds none
    tags_own = ["O", "O", "B", "O", "O", "O", "DB", "O", "DB", "HB", "O"]
    assert extend_lists(words, tags_own, found, model, None) == [(4, 9)]
    assert extend_lists(words, tags, found, replace(model, lists={}), None) == []


def test_the_list_classifier_is_trained_only_when_asked_and_its_absence_leaves_the_file_as_before(tmp_path: Path):
    sentences = [(f"history of {a} , {b} or {c} {h} .", [(a, h), (b, h), (f"{c} {h}",)]) for a, b, c, _, h in _LISTS]
    model = _fit(sentences)
    assert model.lists == {}
    model.save(tmp_path / FILES.pairing)
    assert "lists" not in json.loads((tmp_path / FILES.pairing).read_text())
    assert _fit(sentences, lists=True).lists
    with pytest.raises(Exception, match="'list_walk' must be true or false"):
        TaggerConfig.from_dict({"list_walk": "yes"})


def test_a_pairing_file_without_decoding_settings_decodes_as_before(tmp_path: Path):
    (tmp_path / FILES.pairing).write_text(json.dumps({"threshold": 0.5, "fragments": {"bias": 1.0},
                                                      "coordination": {}}), encoding="utf-8")
    model = PairingModel.load(tmp_path / FILES.pairing)
    assert model.max_parts == 2 and model.reread is False and model.lists == {}


def test_pairing_model_round_trips_through_json(tmp_path: Path):
    model = PairingModel({"bias": -1.0, "kinds=DH": 2.5}, {"bias": 0.5}, 0.6, lists={"bias": -0.25})
    model.save(tmp_path / FILES.pairing)
    again = PairingModel.load(tmp_path / FILES.pairing)
    assert again == model
    # z = -1 + 2.5 = 1.5
    assert again.probability("fragments", {"bias": 1.0, "kinds=DH": 1.0}) == pytest.approx(1 / (1 + math.exp(-1.5)))
    assert again.probability("coordination", {"bias": 1.0}) == pytest.approx(1 / (1 + math.exp(-0.5)))
    assert again.probability("lists", {"bias": 1.0}) == pytest.approx(1 / (1 + math.exp(0.25)))
    # a classifier that was not trained accepts nothing
    assert PairingModel({}, {}).probability("coordination", {"bias": 1.0}) == 0.0
    assert json.loads((tmp_path / FILES.pairing).read_text())["threshold"] == 0.6


def test_unknown_pairing_is_a_config_error():
    with pytest.raises(Exception, match="pairing 'best' is not one of learned, rules"):
        TaggerConfig.from_dict({"pairing": "best"})
