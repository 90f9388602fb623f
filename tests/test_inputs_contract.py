"""The input contract (share_ner.inputs.contract) and share-ner tag's Parquet tables (share_ner.inputs.parquet):
ids, repeats, note file names, file order; and a table's rows, columns and corrupt files, as tag reads them."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from share_ner.cli import main
from share_ner.errors import InputError
from share_ner.inputs.contract import (
    FirstSeen,
    clean_id,
    id_problem,
    note_name_problem,
    path_order,
    table_note_id,
    text_problem,
)
from share_ner.inputs.files import walk_note_files

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from share_ner.inputs.parquet import is_parquet_path, iter_parquet_notes, read_table_layout  # noqa: E402


def test_an_id_is_its_field_without_surrounding_space_and_one_that_breaks_lines_is_refused() -> None:
    assert [clean_id(v) for v in (" x ", "x", 5000, None, b" y\t", "\u00a0z ")] == ["x", "x", "5000", "", "y", "z"]
    assert id_problem("", "ROW_ID") == "empty ROW_ID"
    for bad in ("a||b", "a\tb", "a\nb", "a\rb", "a\x7fb", "a\x00b"):
        assert id_problem(bad, "note_id") == ("note_id contains '||' or a control character (it would break the "
                                              "output lines)"), bad
    assert id_problem("caf\udce9", "note_id") == "note_id is not valid utf-8 at character 3"
    assert id_problem("a|b", "note_id") is None and id_problem("10000032-DS-21", "note_id") is None


def test_the_first_record_of_an_id_keeps_it_and_the_later_ones_name_it() -> None:
    seen = FirstSeen()
    assert seen.claim("a", 1) is None and seen.claim("b", 2) is None
    assert seen.claim("a", 5) == "duplicate note id (first at row 1)"
    assert seen.claim("c", 3, "part-0.parquet") is None
    assert seen.claim("c", 1, "part-1.parquet") == "duplicate note id (first at row 3 of part-0.parquet)"
    assert seen.claim("c", 9, "part-0.parquet") == "duplicate note id (first at row 3)"


def test_note_file_names_and_ids_in_a_table() -> None:
    assert table_note_id("", "note1") == "note1" == table_note_id(".", "note1")
    assert table_note_id("2019/ward", "note1") == "2019/ward/note1"
    assert table_note_id("a", "x||y") == ""  # the reject names the file instead
    hidden = "hidden file name (starts with '.' or '_'; Spark and Hadoop skip such files)"
    assert note_name_problem(".note.txt") == hidden == note_name_problem("_note.txt")
    assert note_name_problem("a||b.txt").startswith("the file name contains '||'")
    assert note_name_problem("a\tb.txt").startswith("the file name contains '||'")
    assert note_name_problem("note_1.txt") is None
    assert text_problem("", "TEXT") == "TEXT is empty"


def test_the_order_of_files_is_the_walkers(tmp_path: Path) -> None:
    for name in ("a/z.txt", "a.b/y.txt", "a-c.txt", "a.txt", "b/c/x.txt", "b.txt", "A.txt", "a/b/w.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    walked = [e.path.relative_to(tmp_path).as_posix() for e in walk_note_files(tmp_path)]
    assert sorted(walked, key=path_order) == walked
    assert walked[:3] == ["A.txt", "a/b/w.txt", "a/z.txt"]


def write_table(path: Path, columns: dict, **kw) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path, **kw)
    return path


def test_tag_reads_a_parquet_table_of_several_files_under_the_contract(tmp_path: Path) -> None:
    table = tmp_path / "notes"
    write_table(table / "part-0.parquet", {"ROW_ID": pa.array([1, 2, 1, None], pa.int64()),
                                           "TEXT": ["fever", "pain", "again", "none"],
                                           "ISERROR": pa.array([None, 1, None, None], pa.int8()),
                                           "CATEGORY": ["Radiology"] * 4})
    write_table(table / "year=2020" / "part-0.parquet", {"ROW_ID": pa.array([2, 3], pa.int64()),
                                                         "TEXT": ["cough", ""], "CATEGORY": ["Radiology"] * 2})
    (table / "_SUCCESS").write_text("")
    (table / ".part-0.parquet.crc").write_text("junk")  # hidden: not a file of the table
    assert is_parquet_path(table) and read_table_layout(table).name == "MIMIC-III NOTEEVENTS"
    counts: Counter = Counter()
    got = [(r.source.rsplit("/", 2)[-2:], r.row, r.note_id, r.reason) for r in iter_parquet_notes(table, counts=counts)]
    assert got == [
        (["notes", "part-0.parquet"], 1, "1", None),
        (["notes", "part-0.parquet"], 3, "1", "duplicate note id (first at row 1)"),
        (["notes", "part-0.parquet"], 4, "", "empty ROW_ID"),
        (["year=2020", "part-0.parquet"], 1, "2", None),  # row 2 of the first file is ISERROR: it claims nothing
        (["year=2020", "part-0.parquet"], 2, "3", "TEXT is empty")]
    assert counts == {"iserror": 1}


def test_a_table_that_cannot_be_read_as_notes_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"not a table of notes: no ROW_ID or note_id column; columns: a, b"):
        read_table_layout(write_table(tmp_path / "a.parquet", {"a": [1], "b": ["x"]}))
    with pytest.raises(InputError, match=r"note_id holds double; note ids must be strings or integers"):
        read_table_layout(write_table(tmp_path / "b.parquet", {"note_id": [1.5], "text": ["x"]}))
    with pytest.raises(InputError, match=r"no column text; columns: note_id"):
        read_table_layout(write_table(tmp_path / "c.parquet", {"note_id": ["1"]}))
    (tmp_path / "d.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(InputError, match=r"d.parquet: cannot read as Parquet \("):
        read_table_layout(tmp_path / "d.parquet")


def test_a_corrupt_file_ends_the_table_with_a_reject_naming_it(tmp_path: Path) -> None:
    table = tmp_path / "t"
    write_table(table / "part-0.parquet", {"note_id": ["a", "b"], "text": ["fever", "pain"]})
    good = write_table(table / "part-1.parquet", {"note_id": ["c"] * 3, "text": ["x"] * 3})
    good.write_bytes(good.read_bytes()[:40])
    records = list(iter_parquet_notes(table))
    assert [r.note_id for r in records[:2]] == ["a", "b"]
    assert records[2].fatal and records[2].source == str(good)
    assert records[2].reason.startswith("cannot read part-1.parquet (") and records[2].reason.endswith(
        "after row 0 of it; later rows are lost")


def test_tag_command_on_a_parquet_table_writes_shards_and_rejects(tmp_path: Path, small_model: Path) -> None:
    path = write_table(tmp_path / "discharge.parquet", {
        "note_id": [" 1-DS-1 ", "1-DS-1", "1-DS||2", "1-DS-3"],
        "text": pa.array([b"History: fever and cough.", b"again", b"x", b"caf\xe9"], pa.binary())})
    out = tmp_path / "out"
    assert main(["tag", str(path), "--model", str(small_model), "--out", str(out), "--quiet"]) == 0
    shard = [json.loads(line) for line in (out / "discharge" / "part-00000.jsonl").read_text().splitlines()]
    assert [r["doc_id"] for r in shard] == ["1-DS-1"]
    rejects = [line.split("\t") for line in (out / "rejects.tsv").read_text().splitlines()[1:]]
    assert [(r[1], r[2], r[4]) for r in rejects] == [
        ("1-DS-1", "2", "duplicate note id (first at row 1)"),
        ("", "3", "note_id contains '||' or a control character (it would break the output lines)"),
        ("1-DS-3", "4", "text is not valid utf-8 at character 3")]
    assert json.loads((out / "summary.json").read_text())["rejected"] == 3


def test_a_hidden_note_file_is_rejected_unread(tmp_path: Path, small_model: Path) -> None:
    notes = tmp_path / "notes"
    (notes / "ward").mkdir(parents=True)
    (notes / "ward" / "a.txt").write_text("fever")
    (notes / "ward" / "._a.txt").write_bytes(b"\x00\x05\x16\x07 AppleDouble")  # a Mac's resource fork
    out = tmp_path / "out"
    assert main(["tag", str(notes), "--model", str(small_model), "--out", str(out), "--quiet"]) == 0
    (reject,) = [line.split("\t") for line in (out / "rejects.tsv").read_text().splitlines()[1:]]
    assert reject[0] == str(notes / "ward" / "._a.txt") and reject[1] == "ward/._a"
    assert reject[4].startswith("hidden file name")
    assert sorted(os.listdir(out / "ward")) == ["a.pipe.txt"]
