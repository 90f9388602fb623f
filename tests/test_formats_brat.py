"""BRAT standoff: reading, writing, round trips, and one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from share_ner.document import CUI_LESS, Document, Mention
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


# ---------------------------------------------------------------- the collection's configuration


def _conf_sections(text: str) -> dict[str, list[str]]:
    """A brat configuration file's lines by section, comments and blank lines left out."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in text.split("\n"):
        if not line.strip() or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], [])
        else:
            assert current is not None, line
            current.append(line)
    return sections


def test_annotation_conf_declares_every_type_and_attribute_value_the_ann_files_use(tmp_path: Path) -> None:
    from share_ner.document import ATTRIBUTE_VALUES, Attributes
    from share_ner.formats.brat import write_collection_conf

    text = "No fever. Knee pain and cough."
    (tmp_path / "ward").mkdir()
    brat.write_brat(tmp_path / "a.ann", [Mention("a", ((3, 8),), "C0015967", attributes=Attributes(negation="yes"))], text)
    brat.write_brat(tmp_path / "ward" / "b.ann", [
        Mention("b", ((10, 19),), "C0231749", attributes=Attributes(body_location="C0022742", severity="severe")),
        Mention("b", ((24, 29),), CUI_LESS, type="Sign_or_symptom")], text)
    write_collection_conf(tmp_path)
    conf = _conf_sections((tmp_path / "annotation.conf").read_text(encoding="utf-8"))
    assert set(conf) == {"entities", "relations", "events", "attributes"}  # the sections brat expects
    assert conf["entities"] == ["Disease_Disorder", "Sign_or_symptom"]
    attributes = dict(line.split("\t") for line in conf["attributes"])
    for name, allowed in ATTRIBUTE_VALUES.items():
        assert attributes[name] == f"Arg:<ENTITY>, Value:{'|'.join(allowed)}"
    assert attributes["body_location"] == "Arg:<ENTITY>, Value:C0022742"
    # every A line of the files names a declared attribute and one of its values
    for ann in tmp_path.rglob("*.ann"):
        for line in ann.read_text().splitlines():
            if line.startswith("A"):
                name, _, value = line.split("\t")[1].split(" ")
                assert value in attributes[name].split("Value:")[1].split("|")
    visual = _conf_sections((tmp_path / "visual.conf").read_text(encoding="utf-8"))
    assert set(visual) == {"labels", "drawing"}
    assert "Disease_Disorder | Disease Disorder | Disease" in visual["labels"]
    assert any(line.startswith("negation\t") and "box:crossed" in line for line in visual["drawing"])


def test_tag_with_brat_output_writes_a_collection_brat_opens(small_model: Path, tmp_path: Path) -> None:
    from share_ner.cli import main
    from share_ner.inputs.files import read_notes

    text_dir = Path(__file__).parent / "fixtures" / "tagger" / "text"
    out = tmp_path / "brat"
    assert main(["tag", str(text_dir), "--model", str(small_model), "--out", str(out), "--format", "brat",
                 "--quiet"]) == 0
    assert (out / "annotation.conf").is_file() and (out / "visual.conf").is_file()
    notes = read_notes(text_dir)
    for doc_id, doc in notes.items():  # brat lists a collection's notes by their .txt, offsets into it
        assert (out / f"{doc_id}.txt").read_bytes().decode("utf-8") == doc.text
        for m in brat.read_brat(out / f"{doc_id}.ann"):
            assert m.spans[-1][1] <= len(doc.text)
    conf = _conf_sections((out / "annotation.conf").read_text(encoding="utf-8"))
    assert conf["entities"] == ["Disease_Disorder"]
