"""read_annotations / write_annotations: dispatch by file name, mixed directories, offset checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from share_ner.document import Document, Mention
from share_ner.errors import InputError, ShareNerError
from share_ner.formats import FORMATS, read_annotations, write_annotations
from share_ner.inputs.files import read_notes

EVAL = Path(__file__).parent / "fixtures" / "eval"


@pytest.fixture(scope="module")
def notes() -> dict[str, Document]:
    return read_notes(EVAL / "text")


@pytest.fixture(scope="module")
def gold(notes) -> dict[str, list[Mention]]:
    return read_annotations(EVAL / "gold", notes)


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_round_trips_the_fixtures(tmp_path, notes, gold, fmt):
    for doc_id, ms in gold.items():
        write_annotations(tmp_path, notes[doc_id], ms, fmt)
    assert read_annotations(tmp_path, notes) == gold


def test_mixed_directory_and_duplicate_notes(tmp_path, notes, gold):
    write_annotations(tmp_path, notes["exact"], gold["exact"], "brat")
    write_annotations(tmp_path, notes["dup"], gold["dup"], "jsonl")
    write_annotations(tmp_path / "..", notes["empty"], [], "share")  # outside: not read
    write_annotations(tmp_path, notes["missing"], gold["missing"], "share")
    assert read_annotations(tmp_path) == {k: gold[k] for k in ("exact", "dup", "missing")}
    write_annotations(tmp_path, notes["exact"], gold["exact"], "jsonl")
    with pytest.raises(InputError, match=r"exact.jsonl: note exact is also annotated in .*exact.ann"):
        read_annotations(tmp_path)


def test_brat_with_text_writes_the_note_beside(tmp_path, notes, gold):
    write_annotations(tmp_path, notes["discont"], gold["discont"], "brat", with_text=True)
    assert (tmp_path / "discont.txt").read_text(encoding="utf-8") == notes["discont"].text
    assert read_annotations(tmp_path) == {"discont": gold["discont"]}


def test_single_files_by_suffix_or_content(tmp_path):
    (tmp_path / "run.txt").write_text("a.txt||Disease_Disorder||C1||0||3\nb.txt||Disease_Disorder||C2||4||6\n")
    assert read_annotations(tmp_path / "run.txt") == {
        "a": [Mention("a", ((0, 3),), "C1")],
        "b": [Mention("b", ((4, 6),), "C2")],
    }
    (tmp_path / "x.out").write_text('{"doc_id": "x", "mentions": [{"spans": [[1, 2]]}]}\n')
    assert read_annotations(tmp_path / "x.out") == {"x": [Mention("x", ((1, 2),))]}
    (tmp_path / "note7.ann").write_text("T1\tDisease_Disorder 0 4\tPain\n")
    assert read_annotations(tmp_path / "note7.ann") == {"note7": [Mention("note7", ((0, 4),))]}
    (tmp_path / "what.csv").write_text("a,b,c\n")
    with pytest.raises(InputError, match=r"what.csv:1: not a pipe"):
        read_annotations(tmp_path / "what.csv")


def test_empty_or_absent_inputs(tmp_path):
    with pytest.raises(InputError, match="no annotation files"):
        read_annotations(tmp_path)
    with pytest.raises(InputError, match="no such file or directory"):
        read_annotations(tmp_path / "nope")
    (tmp_path / "e.ann").write_text("")
    assert read_annotations(tmp_path) == {"e": []}


@pytest.mark.parametrize(
    "fmt, expected_line",
    [("share", 2), ("brat", 3), ("jsonl", 1)],
)
def test_offset_past_the_note_names_file_and_line(tmp_path, fmt, expected_line):
    doc = Document("n", "Pt has asthma.\n")  # 15 characters
    ms = [Mention("n", ((7, 13),)), Mention("n", ((7, 20),))]
    path = write_annotations(tmp_path, doc, ms, fmt)
    with pytest.raises(InputError) as err:
        read_annotations(tmp_path, {"n": doc})
    assert str(err.value) == (
        f"{path}:{expected_line}: span 7-20 of note n ends past the note's end (15 characters)"
    )


def test_unknown_format_is_a_user_error(tmp_path):
    with pytest.raises(ShareNerError, match="expected one of share, brat, jsonl"):
        write_annotations(tmp_path, Document("n", ""), [], "xml")


@pytest.mark.parametrize("fmt", ["brat", "jsonl"])
def test_mention_text_must_match_the_note(tmp_path, fmt):
    # offsets counted on a copy with CRLF turned into LF land one character early after the line break
    stored = Document("n", "Pain.\r\nFever today.\n")
    lf_copy = Document("n", stored.text.replace("\r\n", "\n"))
    fever = Mention("n", ((6, 11),))  # "Fever" in the LF copy; "\nFeve" in the note as stored
    write_annotations(tmp_path, lf_copy, [fever], fmt)
    assert read_annotations(tmp_path, {"n": lf_copy}) == {"n": [fever]}
    with pytest.raises(InputError, match=r":1: the mention text given for 6-11 is not the text of note n there"):
        read_annotations(tmp_path, {"n": stored})


NAMED_NOTE = Document("named", "Hemoptysis and a mass; left atrium dilated.")
NAMED = [Mention("named", ((0, 10),), "C0019079", name="Hemoptysis"), Mention("named", ((17, 21),)),
         Mention("named", ((23, 34), (35, 42)), "C0344720", name="Left atrial enlargement")]


@pytest.mark.parametrize("fmt", ["jsonl", "brat", "bioc"])
def test_names_beside_cuis_are_written_and_read_back(tmp_path, fmt):
    path = write_annotations(tmp_path, NAMED_NOTE, NAMED, fmt)
    [got] = read_annotations(tmp_path, {"named": NAMED_NOTE}).values()
    assert got == NAMED and [m.name for m in got] == ["Hemoptysis", None, "Left atrial enlargement"]
    written = path.read_text(encoding="utf-8")
    assert written.count("Hemoptysis") == 2  # the mention's text and its concept's name
    assert "Left atrial enlargement" in written


def test_brat_carries_the_name_in_a_normalization_line(tmp_path):
    path = write_annotations(tmp_path, NAMED_NOTE, NAMED, "brat")
    lines = path.read_text(encoding="utf-8").splitlines()
    assert "N1\tReference T1 UMLS:C0019079\tHemoptysis" in lines
    assert not any(line.startswith("N2") for line in lines)  # CUI-less: nothing to name
    assert "#1\tAnnotatorNotes T1\tC0019079" in lines  # the CUI stays where readers of earlier files find it


def test_the_share_pipe_stays_as_the_task_defines_it(tmp_path):
    path = write_annotations(tmp_path, NAMED_NOTE, NAMED, "share")
    assert path.read_text(encoding="utf-8").splitlines()[0] == "named.txt||Disease_Disorder||C0019079||0||10"
    assert "Hemoptysis" not in path.read_text(encoding="utf-8")
