"""Encode/decode on hand-written sentences: every tag, shared heads, several discontiguous mentions, overlaps."""

from __future__ import annotations

import pytest
from helpers import mention_of

from share_ner.document import Document, Mention
from share_ner.errors import ShareNerError
from share_ner.tagging.scheme import (
    SCHEMES,
    TAGS,
    check_mentions,
    decode,
    encode,
    encode_report,
    round_trip_ceiling,
    validate,
)
from share_ner.text import split_sentences


def sentence_of(text: str):
    (sent,) = split_sentences(Document("d1", text))
    return sent


def m(text: str, *phrases: str, doc_id: str = "d1") -> Mention:
    return mention_of(text, *phrases, doc_id=doc_id)


def tags_by_word(sent, tags):
    return [(t.text, tag) for t, tag in zip(sent.tokens, tags)]


AORTA = "The aortic root and ascending aorta are moderately dilated."
ATRIUM = "The left atrium is moderately dilated."


def test_shared_head_table5():
    sent = sentence_of(AORTA)
    gold = [m(AORTA, "aortic root", "dilated"), m(AORTA, "ascending aorta", "dilated")]
    tags = encode(sent, gold)
    assert tags == ["O", "DB", "DI", "O", "DB", "DI", "O", "O", "HB", "O"]
    assert decode(sent, tags) == sorted(gold)


def test_discontiguous_without_head_table5():
    sent = sentence_of(ATRIUM)
    gold = [m(ATRIUM, "left atrium", "dilated")]
    tags = encode(sent, gold)
    assert tags == ["O", "DB", "DI", "O", "O", "DB", "O"]
    assert decode(sent, tags) == gold


def test_contiguous_table5():
    text = "No pain."
    sent = sentence_of(text)
    assert encode(sent, [m(text, "pain")]) == ["O", "B", "O"]
    assert decode(sent, ["O", "B", "O"]) == [m(text, "pain")]


def test_multi_token_head_and_contiguous_sharer():
    # Chia's pattern: "X or Y disorders" = X … disorders + Y disorders (contiguous).
    text = "cardiac or pulmonary structural abnormality"
    sent = sentence_of(text)
    gold = [m(text, "cardiac", "structural abnormality"), m(text, "pulmonary structural abnormality")]
    tags = encode(sent, gold)
    assert tags == ["DB", "O", "DB", "HB", "HI"]
    assert decode(sent, tags) == sorted(gold)


def test_head_before_fragments():
    text = "fracture of the wrist or ankle"
    sent = sentence_of(text)
    gold = [m(text, "fracture of the wrist"), m(text, "fracture of the", "ankle")]
    tags = encode(sent, gold)
    assert tags == ["HB", "HI", "HI", "DB", "O", "DB"]
    assert decode(sent, tags) == sorted(gold)


def test_two_heads_each_fragment_takes_nearest():
    text = "cardiac or renal failure and liver or lung disease"
    sent = sentence_of(text)
    gold = [
        m(text, "cardiac", "failure"),
        m(text, "renal failure"),
        m(text, "liver", "disease"),
        m(text, "lung disease"),
    ]
    res = encode_report(sent, gold)
    assert res.dropped == [] and res.inexact == []
    assert res.tags == ["DB", "O", "DB", "HB", "O", "DB", "O", "DB", "HB"]
    assert decode(sent, res.tags) == sorted(gold)


def test_overlap_that_cannot_be_held_is_reported():
    text = "Becker muscular dystrophy"
    sent = sentence_of(text)
    outer, inner = m(text, "Becker muscular dystrophy"), m(text, "muscular dystrophy")
    res = encode_report(sent, [outer, inner])
    assert len(res.dropped) == 1
    kept = decode(sent, res.tags)
    assert len(kept) == 1 and kept[0] in (outer, inner) and kept[0] not in res.dropped


def test_boundary_inside_token_is_inexact():
    text = "Behcet diseases"
    sent = sentence_of(text)
    gold = Mention("d1", ((0, 14),))  # ends inside "diseases"
    res = encode_report(sent, [gold])
    assert res.inexact == [gold]
    assert res.tags == ["B", "I"]
    assert decode(sent, res.tags) == [Mention("d1", ((0, 15),))]


def test_bio_scheme_flattens_to_hull():
    sent = sentence_of(ATRIUM)
    gold = [m(ATRIUM, "left atrium", "dilated")]
    tags = encode(sent, gold, scheme="bio")
    assert tags == ["O", "B", "I", "I", "I", "I", "O"]
    assert decode(sent, tags, scheme="bio") == [m(ATRIUM, "left atrium is moderately dilated")]


def test_bio_prefers_contiguous_and_reports_hull_overlap():
    text = "renal or hepatic failure"
    sent = sentence_of(text)
    disc, cont = m(text, "renal", "failure"), m(text, "hepatic failure")
    res = encode_report(sent, [disc, cont], scheme="bio")
    assert res.dropped == [disc]
    assert res.tags == ["O", "O", "B", "I"]


def test_lenient_decode_of_inside_without_begin():
    text = "No chest pain today"
    sent = sentence_of(text)
    assert decode(sent, ["O", "I", "I", "O"]) == [m(text, "chest pain")]


def test_validate_names_position_and_neighbours():
    validate(["O", "B", "I", "DB", "DI", "HB", "HI"])
    with pytest.raises(ShareNerError, match=r"position 2.*O B \[DI\] O.*'DI' may only follow DB, DI"):
        validate(["O", "B", "DI", "O"])
    with pytest.raises(ShareNerError, match=r"invalid tag 'X' at position 0.*allowed tags"):
        validate(["X"], "bio")
    with pytest.raises(ShareNerError, match="allowed tags of scheme 'bio'"):
        validate(["DB"], "bio")


def test_unknown_scheme():
    with pytest.raises(ShareNerError, match="unknown tagging scheme 'iobes'; allowed: biohd, bio"):
        encode(sentence_of("pain"), [], scheme="iobes")


def test_tags_are_declared_by_schemes():
    assert set(SCHEMES["biohd"].tags) == set(TAGS)
    assert not SCHEMES["biohd"].allowed(None, "HI")
    assert SCHEMES["biohd"].allowed("HB", "HI") and not SCHEMES["biohd"].allowed("DB", "HI")


def test_mention_outside_note_is_a_clear_error():
    doc = Document("note7", "short text")
    with pytest.raises(ShareNerError, match=r"gold: span 5-40 of note note7 ends past the note's end \(10 characters\)"):
        check_mentions(doc, [Mention("note7", ((5, 40),))])


def test_ceiling_counts_hand_built_corpus():
    text = "The aortic root and ascending aorta are moderately dilated.\nBehcet diseases.\nNo pain."
    docs = {"a": Document("a", text)}
    gold = {
        "a": [
            m(AORTA, "aortic root", "dilated", doc_id="a"),
            m(AORTA, "ascending aorta", "dilated", doc_id="a"),
            Mention("a", ((60, 74),)),  # "Behcet disease" inside "diseases": lost
            m(text, "pain", doc_id="a"),
        ]
    }
    r = round_trip_ceiling(docs, gold)
    assert (r["mentions"], r["survived"], r["discontiguous"], r["discontiguous_survived"]) == (4, 3, 2, 2)
    assert r["lost"]["inexact"] == 1
    r = round_trip_ceiling(docs, gold, "bio")
    assert (r["survived"], r["discontiguous_survived"]) == (1, 0)


def test_chain_touching_heads_on_both_sides_takes_both():
    text = "chronic kidney / liver disease"
    sent = sentence_of(text)
    gold = [m(text, "chronic kidney", "disease"), m(text, "chronic", "liver disease")]
    tags = encode(sent, gold)
    assert tags == ["HB", "DB", "O", "DB", "HB"]
    assert decode(sent, tags) == sorted(gold)


def test_several_discontiguous_mentions_without_heads_group_by_contiguous_mentions():
    text = "left atrium is dilated , no pain , right ventricle is enlarged"
    sent = sentence_of(text)
    tags = ["DB", "DI", "O", "DB", "O", "O", "B", "O", "DB", "DI", "O", "DB"]
    # D fragments are grouped until a B/I mention closes the group.
    assert decode(sent, tags) == sorted(
        [
            m(text, "left atrium", "dilated"),
            m(text, "pain"),
            m(text, "right ventricle", "enlarged"),
        ]
    )


def test_lone_fragments_and_unused_heads_become_mentions():
    text = "severe pain and fever"
    sent = sentence_of(text)
    assert decode(sent, ["O", "DB", "O", "O"]) == [m(text, "pain")]
    assert decode(sent, ["O", "HB", "O", "O"]) == [m(text, "pain")]


def test_nearest_head_when_no_chain_touches_one():
    text = "aortic root and ascending aorta moderately dilated , not calcified"
    sent = sentence_of(text)
    tags = ["DB", "DI", "O", "DB", "DI", "O", "HB", "O", "O", "HB"]
    got = decode(sent, tags)
    # both fragments go to "dilated" (nearer); the unused head "calcified" stands alone
    assert got == sorted(
        [
            m(text, "aortic root", "dilated"),
            m(text, "ascending aorta", "dilated"),
            m(text, "calcified"),
        ]
    )


def test_mention_crossing_the_sentence_is_dropped_in_each_part():
    text = "Severe chest\n\npain today."
    sents = split_sentences(Document("d1", text))
    assert len(sents) == 2
    gold = m(text, "chest\n\npain")
    for sent in sents:
        res = encode_report(sent, [gold])
        assert res.dropped == [gold]
        assert set(res.tags) == {"O"}


def test_mentions_elsewhere_in_the_note_are_ignored():
    text = "No pain.\nMild fever."
    first, second = split_sentences(Document("d1", text))
    res = encode_report(first, [m(text, "pain"), m(text, "fever")])
    assert res == (["O", "B", "O"], [], [])
    assert encode(second, [m(text, "pain"), m(text, "fever")]) == ["O", "B", "O"]


def test_decode_rejects_wrong_length_and_unknown_tags():
    sent = sentence_of("No pain")
    with pytest.raises(ShareNerError, match="1 tags for a sentence of 2 tokens"):
        decode(sent, ["O"])
    with pytest.raises(ShareNerError, match=r"invalid tag 'HB' at position 1 \(O \[HB\]\).*'bio'"):
        decode(sent, ["O", "HB"], scheme="bio")


@pytest.mark.parametrize(
    "text,phrases",
    [
        ("The aortic root and ascending aorta are moderately dilated.",
         [("aortic root", "dilated"), ("ascending aorta", "dilated")]),
        ("Drug or alcohol abuse and chronic pain.", [("Drug", "abuse"), ("alcohol abuse",), ("chronic pain",)]),
        ("ulcer of the foot or heel", [("ulcer of the foot",), ("ulcer of the", "heel")]),
        ("pain in left arm and left leg", [("pain",), ("left arm",), ("left leg",)]),
    ],
)
def test_round_trip(text, phrases):
    sent = sentence_of(text)
    gold = sorted(m(text, *p) for p in phrases)
    res = encode_report(sent, gold)
    assert res.dropped == [] and res.inexact == []
    assert decode(sent, res.tags) == gold
    validate(res.tags)


def test_four_head_less_fragments_pair_up():
    text = "left atrium is dilated and right ventricle is hypertrophied"
    sent = sentence_of(text)
    gold = [m(text, "left atrium", "dilated"), m(text, "right ventricle", "hypertrophied")]
    res = encode_report(sent, gold)
    assert res.tags == ["DB", "DI", "O", "DB", "O", "DB", "DI", "O", "DB"]
    assert res.dropped == []
    assert decode(sent, res.tags) == sorted(gold)
    # three fragments stay one mention
    assert decode(sent, ["DB", "DI", "O", "DB", "O", "DB", "O", "O", "O"]) == [
        m(text, "left atrium", "dilated", "right")
    ]
