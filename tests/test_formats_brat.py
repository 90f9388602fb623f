"""BRAT standoff: reading, writing, round trips, and one-line errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from share_ner.document import Document, Mention
from share_ner.errors import InputError
from share_ner.formats import brat

NOTE = "The left atrium is\r\nmoderately dilated. Pain.\n"


def test_reads_discontiguous_mention_with_cui_note():
    ann = "T1\tDisease_Disorder 4 15;31 38\tleft atrium dilated\n#1\tAnnotatorNotes T1\tC0011849\n"
    assert brat.parse_ann(ann, "n") == [Mention("n", ((4, 15), (31, 38)), "C0011849")]


def test_without_note_is_cui_less_and_other_lines_are_skipped():
    ann = (
        "T1\tDisease_Disorder 40 44\tPain\n"
        "T2\tDisease_Disorder 4 15\tleft atrium\n"
        "N1\tReference T2 UMLS:C0225860\tLeft atrium\n"
        "R1\tLocation Arg1:T1 Arg2:T2\n"
        "A1\tNegated T1\n"
    )
    assert brat.parse_ann(ann, "n") == [Mention("n", ((40, 44),)), Mention("n", ((4, 15),), "C0225860")]


def test_fragments_out_of_order_are_sorted():
    assert brat.parse_ann("T1\tDisease_Disorder 31 38;4 15\tx\n", "n")[0].spans == ((4, 15), (31, 38))


def test_write_then_read_gives_same_mentions(tmp_path):
    ms = [
        Mention("n", ((4, 15), (31, 38)), "C0011849"),
        Mention("n", ((4, 8),)),
        Mention("n", ((40, 44),), "C0030193"),
        Mention("n", ((40, 44),), "C0030193"),  # a duplicate survives too
    ]
    path = tmp_path / "n.ann"
    brat.write_brat(path, ms, NOTE)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "T1\tDisease_Disorder 4 15;31 38\tleft atrium dilated"
    assert lines[1] == "#1\tAnnotatorNotes T1\tC0011849"
    assert brat.read_brat(path) == ms


def test_span_across_a_line_break_keeps_the_file_one_line_per_annotation(tmp_path):
    # "is\r\nmoderately" spans the CRLF; the text column must not break the line
    m = Mention("n", ((16, 30),), "C1")
    text = brat.format_brat([m], NOTE)
    assert text.count("\n") == 2
    assert brat.parse_ann(text, "n") == [m]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 40), st.integers(1, 4), st.integers(0, 5), st.sampled_from(["C1", "CUI-less"])),
        max_size=5,
    )
)
def test_round_trip_property(rows):
    doc = Document("n", "x" * 60 + "\u2028tail")
    ms = []
    for start, length, gap, cui in rows:
        spans = [(start, start + length)]
        if gap:
            spans.append((start + length + gap, start + length + gap + 3))
        ms.append(Mention("n", tuple(spans), cui))
    assert brat.parse_ann(brat.format_brat(ms, doc.text), "n") == ms


@pytest.mark.parametrize(
    "line, fragment",
    [
        ("T2\tDisease_Disorder 5 x\tfoo", "fragment '5 x' is not '<start> <end>'"),
        ("T2\tDisease_Disorder\tfoo", "no offsets after the type"),
        ("T2\tDisease_Disorder 9 4\tfoo", "span 9-4: expected start < end"),
        ("T2\tDisease_Disorder 1 5;3 8\tfoo", "overlap"),
        ("T1\tDisease_Disorder 1 5\tfoo", "annotation id T1 is used twice (first on line 1)"),
        ("#2\tAnnotatorNotes T9\tC1", "refers to T9"),
        ("#2\tAnnotatorNotes T1\tC1 and more words", "expected one CUI"),
        ("#2\tComment T1\tC1", "expected #<n><TAB>AnnotatorNotes"),
        ("hello world", "does not start with a brat annotation id"),
        ("T2 Disease_Disorder 1 5 foo", "found 1 tab-separated fields"),
    ],
)
def test_malformed_lines_name_file_and_line(line, fragment):
    with pytest.raises(InputError) as err:
        brat.parse_ann("T1\tDisease_Disorder 0 3\tThe\n" + line + "\n", "n", "ann/n.ann")
    msg = str(err.value)
    assert msg.startswith("ann/n.ann:2: ")
    assert fragment in msg
    assert "\n" not in msg


def test_byte_order_mark_is_ignored():
    assert brat.parse_ann("\ufeffT1\tDisease_Disorder 0 3\tThe\n", "n") == [Mention("n", ((0, 3),))]
