"""MIMIC-III NOTEEVENTS and MIMIC-IV-Note readers, on synthetic CSVs in the exact layouts (no real MIMIC data)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from mimic_csv import NOTE_1, NOTE_2, NOTE_3, mimic3_csv, mimic4_csv, three_hundred_rows, write

from share_ner.errors import InputError
from share_ner.inputs.mimic import MIMIC_III, MIMIC_IV, is_csv_path, iter_csv_notes, read_header
from share_ner.text import tokenize


@pytest.fixture
def noteevents(tmp_path: Path) -> Path:
    rows = [("174", "Discharge summary", "", NOTE_1), ("175", "Nursing/other ", "1", "erroneous note"),
            ("176", "Nursing/other", "", NOTE_2), ("177", "Radiology", "", NOTE_3)]
    return write(tmp_path / "NOTEEVENTS.csv", mimic3_csv(rows))


def test_mimic3_text_kept_exactly_and_iserror_skipped(noteevents: Path) -> None:
    recs = list(iter_csv_notes(noteevents))
    assert [r.note_id for r in recs] == ["174", "176", "177"]
    assert [r.row for r in recs] == [1, 3, 4]
    # the multi-line quoted field keeps its \r\n, quotes and placeholders: offsets are into TEXT as stored
    assert recs[0].doc.text == NOTE_1
    assert recs[1].doc.text == NOTE_2
    assert recs[0].doc.text.index("[**Hospital1 18**]") == NOTE_1.index("[**Hospital1 18**]")
    assert all(r.reason is None for r in recs)
    assert read_header(noteevents) is MIMIC_III


def test_mimic3_include_errors_and_category_filter(noteevents: Path) -> None:
    assert [r.note_id for r in iter_csv_notes(noteevents, include_errors=True)] == ["174", "175", "176", "177"]
    # category match ignores case and the trailing space MIMIC-III has in some categories
    picked = iter_csv_notes(noteevents, categories=["nursing/other"], include_errors=True)
    assert [r.note_id for r in picked] == ["175", "176"]
    assert [r.note_id for r in iter_csv_notes(noteevents, categories=["Radiology", "Discharge summary"])] == ["174", "177"]


def test_mimic4_gzipped(tmp_path: Path) -> None:
    path = write(tmp_path / "discharge.csv.gz", mimic4_csv([("10000032-DS-21", "DS", NOTE_2),
                                                             ("10000032-RR-14", "RR", NOTE_3)]), gz=True)
    assert read_header(path) is MIMIC_IV
    recs = list(iter_csv_notes(path))
    assert [(r.note_id, r.doc.text) for r in recs] == [("10000032-DS-21", NOTE_2), ("10000032-RR-14", NOTE_3)]
    assert [r.note_id for r in iter_csv_notes(path, categories=["rr"])] == ["10000032-RR-14"]


def test_truncated_gzip_keeps_rows_read_and_ends_with_one_fatal_record(tmp_path: Path) -> None:
    rows = [(str(1000 + i), "DS", f"note {i} " + "x" * 3000) for i in range(200)]
    data = gzip.compress(mimic4_csv(rows).encode(), compresslevel=1)
    path = tmp_path / "discharge.csv.gz"
    path.write_bytes(data[: len(data) // 2])
    recs = list(iter_csv_notes(path))
    good = [r for r in recs if r.doc is not None]
    assert 0 < len(good) < 200
    assert [r.note_id for r in good] == [str(1000 + i) for i in range(len(good))]
    assert all(r.doc.text == rows[i][2] for i, r in enumerate(good))
    assert recs[-1].fatal and recs[-1].doc is None
    assert "truncated" in recs[-1].reason and f"after row {len(good)}" in recs[-1].reason
    assert sum(r.fatal for r in recs) == 1


def test_missing_text_column_is_one_clear_error(tmp_path: Path) -> None:
    path = write(tmp_path / "NOTEEVENTS.csv", "ROW_ID,SUBJECT_ID,CATEGORY\n1,2,Radiology\n")
    with pytest.raises(InputError) as err:
        read_header(path)
    assert str(err.value).startswith(f"{path}:1: ") and "no TEXT column" in str(err.value)
    with pytest.raises(InputError, match="no TEXT column"):
        list(iter_csv_notes(path))


def test_other_csv_and_empty_and_non_gzip_files_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no ROW_ID or note_id column"):
        read_header(write(tmp_path / "other.csv", "a,b\n1,2\n"))
    with pytest.raises(InputError, match="empty file"):
        read_header(write(tmp_path / "empty.csv", ""))
    with pytest.raises(InputError, match="not a gzip file"):
        read_header(write(tmp_path / "plain.csv.gz", mimic4_csv([])))


def test_malformed_row_and_undecodable_note_are_rejected_and_reading_goes_on(tmp_path: Path) -> None:
    good = mimic4_csv([("n1", "DS", NOTE_3)])
    bad_width = 'n2,1,2,DS\n'
    undecodable = mimic4_csv([("n3", "DS", "caf\udcffe")]).split("\n", 1)[1]  # header dropped
    tail = mimic4_csv([("n4", "DS", NOTE_2)]).split("\n", 1)[1]
    path = tmp_path / "radiology.csv"
    path.write_bytes((good + bad_width).encode() + undecodable.encode("utf-8", "surrogateescape") + tail.encode())
    recs = list(iter_csv_notes(path))
    assert [(r.row, r.note_id, r.doc is not None) for r in recs] == [
        (1, "n1", True), (2, "n2", False), (3, "n3", False), (4, "n4", True)]
    assert recs[1].reason == "line 3: 4 fields, expected 8"
    assert recs[2].reason == "text is not valid utf-8 at character 3"
    assert recs[3].doc.text == NOTE_2
    # reasons never carry note text
    assert all("caf" not in (r.reason or "") for r in recs)


def test_five_megabyte_note(tmp_path: Path) -> None:
    big = ("Patient with fever, \"quoted\", and commas.\n" * 125_000)[:5_000_000]
    path = write(tmp_path / "NOTEEVENTS.csv.gz", mimic3_csv([("1", "Discharge summary", "", big)]), gz=True)
    (rec,) = list(iter_csv_notes(path))
    assert len(rec.doc.text) == 5_000_000 and rec.doc.text == big


def test_csv_paths_are_recognised_by_name() -> None:
    assert is_csv_path("NOTEEVENTS.csv") and is_csv_path("discharge.csv.gz") and is_csv_path("x.GZ")
    assert not is_csv_path("note.txt")


def test_placeholders_stay_single_tokens_at_csv_offsets(noteevents: Path) -> None:
    doc = next(iter(iter_csv_notes(noteevents))).doc
    tokens = tokenize(doc.text)
    spans = {(t.start, t.end) for t in tokens}
    for placeholder in ("[**2151-7-16**]", "[**Hospital1 18**]"):
        start = doc.text.index(placeholder)
        assert (start, start + len(placeholder)) in spans
    assert all(doc.text[t.start:t.end] == t.text for t in tokens)


def test_an_unterminated_quote_is_cut_at_the_next_record_and_only_its_row_is_rejected(tmp_path: Path) -> None:
    rows = three_hundred_rows()
    lines = mimic3_csv(rows).split("\n")
    bad = next(i for i, line in enumerate(lines) if line.startswith("1150,"))
    assert lines[bad].endswith('"Seen today #150.')  # the quoted TEXT opens on this line...
    lines[bad + 2] = "2 lines MARKER Dr. [**Last Name (STitle) 123**]"  # ...and its closing quote is lost
    path = tmp_path / "NOTEEVENTS.csv"
    path.write_text("\n".join(lines), encoding="utf-8")
    recs = list(iter_csv_notes(path))
    good = [r for r in recs if r.doc is not None]
    assert [r.note_id for r in good] == [str(1000 + i) for i in range(300) if i != 150]
    assert all(r.doc.text == rows[int(r.note_id) - 1000][3] for r in good)
    (bad_rec,) = [r for r in recs if r.doc is None]
    assert (bad_rec.note_id, bad_rec.row) == ("1150", 151)
    assert bad_rec.reason.startswith(f"line {bad + 1}: unterminated quote (the record runs into the next record, "
                                     f"line {bad + 4}); cut there")
    assert bad_rec.byte == len("\n".join(lines[:bad]).encode()) + 1
    assert [r.row for r in recs] == list(range(1, 301))
    assert "MARKER" not in bad_rec.reason and "Last Name" not in bad_rec.reason
    shown = [r for r in iter_csv_notes(path, show_text=True) if r.doc is None][0]
    assert "MARKER" in shown.reason  # asked for with show_text


def test_an_unterminated_quote_in_the_last_record_runs_to_the_end(tmp_path: Path) -> None:
    path = write(tmp_path / "NOTEEVENTS.csv", mimic3_csv([("1", "DS", "", "fine")]) +
                 '2,1,2,2151-08-04,,,"DS","Report",,,"no closing quote\nmore\n')
    recs = list(iter_csv_notes(path))
    assert [(r.note_id, r.doc is not None) for r in recs] == [("1", True), ("2", False)]
    assert recs[1].reason == "line 3: unterminated quote (the record runs to the end of the file)"


def test_a_text_line_that_only_looks_like_numbers_does_not_cut_a_note(tmp_path: Path) -> None:
    text = 'Labs:\n12,3,4,5\n140,4.1,"Na",K\n2151-08-04,,,\nend'
    path = write(tmp_path / "NOTEEVENTS.csv", mimic3_csv([("1", "DS", "", text), ("2", "DS", "", "x")]))
    recs = list(iter_csv_notes(path))
    assert [(r.note_id, r.doc.text) for r in recs] == [("1", text), ("2", "x")]


def test_duplicate_note_ids_are_rejected_after_the_first(tmp_path: Path) -> None:
    path = write(tmp_path / "NOTEEVENTS.csv", mimic3_csv([("7", "DS", "", "first"), ("8", "DS", "", "other"),
                                                          ("7", "DS", "", "second"), ("7", "DS", "1", "flagged")]))
    recs = list(iter_csv_notes(path))
    assert [(r.row, r.note_id, r.doc.text if r.doc else r.reason) for r in recs] == [
        (1, "7", "first"), (2, "8", "other"), (3, "7", "line 4: duplicate note id (first at row 1)")]


def test_skipped_rows_are_counted(noteevents: Path) -> None:
    from collections import Counter

    counts: Counter = Counter()
    assert len(list(iter_csv_notes(noteevents, categories=["radiology"], counts=counts))) == 1
    assert counts == Counter({"iserror": 1, "category": 2})


def test_a_csv_without_header_does_not_quote_its_first_note(tmp_path: Path) -> None:
    path = write(tmp_path / "NOTEEVENTS.csv", "174,22532,167853,2151-08-04,,,Discharge,Report,,,"
                                              '"Seen by Dr. [**Last Name (STitle) 123**] MARKER"\n')
    with pytest.raises(InputError) as err:
        read_header(path)
    assert "MARKER" not in str(err.value) and "Seen by" not in str(err.value)
    assert "no ROW_ID or note_id column in the first line (11 fields); the file needs its header row" in str(err.value)
    with pytest.raises(InputError, match="MARKER"):
        read_header(path, show_text=True)


def test_unknown_or_ascii_incompatible_encoding_is_one_error(noteevents: Path) -> None:
    with pytest.raises(InputError, match="unknown encoding 'bogus'"):
        read_header(noteevents, "bogus")
    with pytest.raises(InputError, match="not ASCII-compatible"):
        list(iter_csv_notes(noteevents, encoding="utf-16"))
