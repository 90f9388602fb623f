"""``share-ner tag --format share2014``: the 2014 pipe files it writes read back, with the share2014 reader, as
the same mentions and attributes as ``--format jsonl`` gives."""

from __future__ import annotations

import json
from pathlib import Path

from mimic_csv import NOTE_1, NOTE_3, mimic3_csv, write

from share_ner.cli import main
from share_ner.document import Mention
from share_ner.formats import read_annotations
from share_ner.formats.share2014 import read_share2014

NOTES = {
    "a": "No pneumonia or fever. Mother with breast cancer.\nHistory of DVT.\n",
    "b": "Patient denies chest pain, but reports dyspnea and a lung mass.\n",
}


def _key(mentions: list[Mention]) -> list[tuple]:
    return [(m.doc_id, m.spans, m.cui, m.attributes.to_dict() if m.attributes else None) for m in mentions]


def test_note_files_in_share2014_read_back_as_the_jsonl_mentions(small_model: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for doc_id, text in NOTES.items():
        (notes / f"{doc_id}.txt").write_text(text)
    outs = {}
    for fmt in ("jsonl", "share2014"):
        outs[fmt] = tmp_path / fmt
        assert main(["tag", str(notes), "--model", str(small_model), "--format", fmt, "--out", str(outs[fmt]),
                     "--quiet"]) == 0
    want = read_annotations(outs["jsonl"])
    assert sorted(want) == ["a", "b"]
    assert sum(map(len, want.values())) > 0 and all(m.attributes is not None for ms in want.values() for m in ms)
    for doc_id in NOTES:
        got = read_share2014(outs["share2014"] / f"{doc_id}.pipe.txt", expect_doc=doc_id)
        assert _key(got) == _key(want[doc_id])
    # the summary counts mentions of share2014 files on a resumed run too (one mention a line)
    n = sum(map(len, want.values()))
    assert main(["tag", str(notes), "--model", str(small_model), "--format", "share2014", "--out",
                 str(outs["share2014"]), "--quiet"]) == 0
    assert json.loads((outs["share2014"] / "summary.json").read_text())["mentions"] == n


def test_csv_shards_in_share2014_read_back_as_the_jsonl_mentions(small_model: Path, tmp_path: Path) -> None:
    csv_path = write(tmp_path / "NOTEEVENTS.csv", mimic3_csv([
        ("1", "Discharge summary", "", NOTE_1), ("2", "Radiology", "", NOTE_3),
        ("3", "Radiology", "", "No pneumonia. History of DVT.")]))
    for fmt in ("jsonl", "share2014"):
        assert main(["tag", str(csv_path), "--model", str(small_model), "--format", fmt, "--out",
                     str(tmp_path / fmt), "--shard-size", "2", "--quiet"]) == 0
    shards = sorted((tmp_path / "share2014/NOTEEVENTS").glob("part-*"))
    assert [p.name for p in shards] == ["part-00000.pipe.txt", "part-00001.pipe.txt"]
    got = [m for p in shards for m in read_share2014(p)]
    want = read_annotations(tmp_path / "jsonl/NOTEEVENTS")
    assert got and _key(got) == [k for doc_id in sorted(want) for k in _key(want[doc_id])]
