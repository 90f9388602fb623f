from __future__ import annotations

from pathlib import Path

import pytest

from share_ner.document import Mention
from share_ner.errors import InputError
from share_ner.formats import read_annotations, share
from share_ner.inputs.files import read_notes

CRLF = Path(__file__).parent / "fixtures" / "share_crlf"  # a note and its pipe file, both with CRLF line ends


def test_parse_discontiguous_line():
    m = share.parse_line("doc1.txt||Disease_Disorder||C0000001||10||15||20||25")
    assert m == Mention("doc1", ((10, 15), (20, 25)), "C0000001")
    assert m.is_discontiguous
    assert share.format_line(m) == "doc1.txt||Disease_Disorder||C0000001||10||15||20||25"


@pytest.mark.parametrize(
    "line, fragment",
    [
        ("d.txt||Disease_Disorder||CUI-less||1", "4 fields"),
        ("d.txt||Disease_Disorder||CUI-less||1||2||3", "odd number of offsets"),
        ("d.txt||Disease_Disorder||CUI-less||5||5", "start < end"),
        ("d.txt||Disease_Disorder||CUI-less||a||5", "'a' in field 4 is not an integer"),
        ("d.txt||Drug||CUI-less||1||5", "type 'Drug'"),
        ("d.txt||Disease_Disorder||CUI-less||10||15||12||20", "overlap"),
        ("d.txt||Disease_Disorder||||10||15", "CUI field"),
    ],
)
def test_malformed_lines_name_file_and_line(line, fragment):
    with pytest.raises(InputError) as err:
        share.parse_text("d.txt||Disease_Disorder||CUI-less||0||3\n" + line + "\n", "gold/d.pipe.txt")
    msg = str(err.value)
    assert msg.startswith("gold/d.pipe.txt:2: ")
    assert fragment in msg
    assert "\n" not in msg


def test_read_dir_accepts_wild_names_and_empty_files(tmp_path):
    (tmp_path / "a.pipe.txt").write_text("a.txt||Disease_Disorder||CUI-less||0||3\n")
    (tmp_path / "b.pipe").write_text("b.txt||Disease_Disorder||C1||4||6||9||12\n")
    (tmp_path / "c.txt.pipe").write_text("")
    gold = share.read_pipe_dir(tmp_path)
    assert sorted(gold) == ["a", "b", "c"]
    assert gold["c"] == []
    assert gold["b"][0].spans == ((4, 6), (9, 12))


def test_line_naming_another_document_is_an_error(tmp_path):
    (tmp_path / "a.pipe.txt").write_text("x.txt||Disease_Disorder||CUI-less||0||3\n")
    with pytest.raises(InputError, match=r"a.pipe.txt:1: line names document x.txt"):
        share.read_pipe_dir(tmp_path)


def test_write_then_read_gives_same_mentions(tmp_path):
    ms = [Mention("n", ((0, 4),)), Mention("n", ((5, 9), (20, 31)), "C0018681")]
    share.write_pipe(tmp_path / "n.pipe.txt", ms)
    assert share.read_pipe(tmp_path / "n.pipe.txt") == ms


def test_crlf_note_and_pipe_file_round_trip_byte_for_byte(tmp_path):
    note = (CRLF / "text" / "crlf01.txt").read_bytes()
    data = (CRLF / "gold" / "crlf01.pipe.txt").read_bytes()
    assert b"\r\n" in note and data.count(b"\r\n") == 3  # git keeps the bytes (.gitattributes: -text)
    doc = read_notes(CRLF / "text")["crlf01"]
    assert doc.text.encode("utf-8") == note  # read as stored: every \r kept
    mentions = share.read_pipe(CRLF / "gold" / "crlf01.pipe.txt")
    # the offsets count the \r of each line end before the mention
    assert [m.text(doc.text) for m in mentions] == ["left atrium dilated", "Chest pain", "fever"]
    assert read_annotations(CRLF / "gold", {"crlf01": doc}) == {"crlf01": mentions}  # offsets checked
    assert share.format_pipe(mentions, share.detect_newline(data.decode("utf-8"))).encode("utf-8") == data
    share.write_pipe(tmp_path / "crlf01.pipe.txt", mentions, newline="\r\n")
    assert (tmp_path / "crlf01.pipe.txt").read_bytes() == data


def test_every_shared_gold_file_round_trips_byte_for_byte(shared_data):
    n = 0
    for path in sorted(shared_data.glob("*/*/gold/*.pipe.txt")):
        data = path.read_bytes()
        text = data.decode("utf-8")
        mentions = share.read_pipe(path)
        assert share.format_pipe(mentions, share.detect_newline(text)).encode("utf-8") == data, path
        n += 1
    assert n > 4000


def test_input_error_survives_pickling():
    import pickle

    err = pickle.loads(pickle.dumps(InputError("notes/a.txt", "bad byte", 3)))
    assert (err.path, err.line, str(err)) == ("notes/a.txt", 3, "notes/a.txt:3: bad byte")


def test_with_cui_is_the_same_mention_with_another_cui():
    import dataclasses

    m = Mention("d", ((9, 12), (0, 4)), "C1")
    n = m.with_cui("C2")
    assert n == Mention("d", ((0, 4), (9, 12)), "C2") and hash(n) == hash(Mention("d", ((0, 4), (9, 12)), "C2"))
    assert (n.doc_id, n.spans, n.type, m.cui) == ("d", ((0, 4), (9, 12)), "Disease_Disorder", "C1")
    assert n < m.with_cui("C3") and sorted([m.with_cui("C3"), n]) == [n, m.with_cui("C3")]
    with pytest.raises(dataclasses.FrozenInstanceError):
        n.cui = "C4"  # type: ignore[misc]
