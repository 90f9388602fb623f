"""JSON Lines: reading, writing, round trips, and one-line errors."""

from __future__ import annotations

import json

import pytest

from share_ner.document import Mention
from share_ner.errors import InputError
from share_ner.formats import jsonl

NOTE = "Severe chest pain.\r\nNo fever\u2028today.\n"


def test_record_layout():
    line = jsonl.format_record("n", [Mention("n", ((7, 12), (13, 17)), "C0008031")], NOTE, with_text=True)
    assert json.loads(line) == {
        "doc_id": "n",
        "text": NOTE,
        "mentions": [{"spans": [[7, 12], [13, 17]], "text": "chest pain", "cui": "C0008031"}],
    }


def test_write_then_read_gives_same_mentions(tmp_path):
    a = [Mention("a", ((7, 17),), "C0008031"), Mention("a", ((0, 6), (13, 17))), Mention("a", ((23, 28),), "C1")]
    b: list[Mention] = []
    path = tmp_path / "out.jsonl"
    # the note holds U+2028, which str.splitlines() would treat as a line break
    jsonl.write_jsonl(path, [("a", a, NOTE), ("b", b, None)], with_text=True)
    records = jsonl.read_jsonl(path)
    assert [(r.doc_id, r.mentions) for r in records] == [("a", a), ("b", b)]
    assert records[0].text == NOTE and records[1].text is None
    assert records[1].line == 2


def test_defaults_cui_less_and_no_mentions():
    rec = jsonl.parse_record('{"doc_id": "n", "mentions": [{"spans": [[0, 3]]}]}')
    assert rec.mentions == [Mention("n", ((0, 3),))]
    assert jsonl.parse_record('{"doc_id": "m"}').mentions == []


@pytest.mark.parametrize(
    "line, fragment",
    [
        ('{"doc_id": "x", "mentions": [', "invalid JSON at column"),
        ('["x"]', "found a JSON list"),
        ('{"mentions": []}', 'missing or empty "doc_id"'),
        ('{"doc_id": "x", "mentions": {}}', '"mentions" of note x is not a list'),
        ('{"doc_id": "x", "mentions": [{"cui": "C1"}]}', 'mention 1 of note x has no "spans"'),
        ('{"doc_id": "x", "mentions": [{"spans": [[1, "2"]]}]}', "is not [start, end] with integer offsets"),
        ('{"doc_id": "x", "mentions": [{"spans": [[5, 2]]}]}', "span 5-2; expected 0 <= start < end"),
        ('{"doc_id": "x", "mentions": [{"spans": [[1, 5], [3, 8]]}]}', "overlap"),
        ('{"doc_id": "x", "mentions": [{"spans": [[1, 5]], "cui": ""}]}', '"cui" is not a non-empty string'),
        ('{"doc_id": "x", "text": "abc", "mentions": [{"spans": [[1, 5]]}]}', "ends past the note's end (3"),
        ('{"doc_id": "a"}', "note a already appears on line 1"),
    ],
)
def test_malformed_lines_name_file_and_line(line, fragment):
    with pytest.raises(InputError) as err:
        list(jsonl.iter_records('{"doc_id": "a", "mentions": []}\n' + line + "\n", "runs/out.jsonl"))
    msg = str(err.value)
    assert msg.startswith("runs/out.jsonl:2: ")
    assert fragment in msg
    assert "\n" not in msg


def test_byte_order_mark_is_ignored():
    records = list(jsonl.iter_records('\ufeff{"doc_id": "n", "mentions": []}\r\n'))
    assert [r.doc_id for r in records] == ["n"]
