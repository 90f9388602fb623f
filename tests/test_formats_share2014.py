"""The ShARe/CLEF 2014 Task 2 pipe format, and attributes in JSON Lines and BRAT."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from share_ner.document import Attributes, Document, Mention
from share_ner.errors import InputError
from share_ner.formats import brat, jsonl, read_annotations, share2014, write_annotations

FIX = Path(__file__).parent / "fixtures" / "share2014"
GOLD = FIX / "gold" / "note1.pipe.txt"


def test_crlf_file_round_trips_byte_for_byte(tmp_path: Path):
    raw = GOLD.read_bytes()
    assert b"\r\n" in raw
    mentions = share2014.read_share2014(GOLD)
    out = tmp_path / "note1.pipe.txt"
    share2014.write_share2014(out, mentions, share2014.newline_of(GOLD))
    assert out.read_bytes() == raw


def test_reader_fills_every_field():
    dvt, chest, dyspnea, cancer = share2014.read_share2014(GOLD)
    text = (FIX / "text" / "note1.txt").read_bytes().decode()
    assert dvt.cui == "C0149871" and dvt.attributes.doctime == "before" and dvt.attributes.cues == {}
    assert chest.attributes.negation == "yes" and text[slice(*chest.attributes.cues["negation"][0])] == "Denies"
    assert dyspnea.attributes == Attributes()
    assert cancer.spans == ((text.index("breast"), text.index("breast") + 6),
                            (text.index("cancer"), text.index("cancer") + 6))
    a = cancer.attributes
    assert (a.subject, a.body_location, a.doctime) == ("family_member", "C0006141", "before_overlap")
    assert text[slice(*a.cues["subject"][0])] == "Mother"


def test_read_annotations_tells_2014_from_2013_pipe_files(tmp_path: Path):
    gold = read_annotations(FIX / "gold")
    assert [m.attributes is not None for m in gold["note1"]] == [True] * 4
    single = tmp_path / "all.txt"  # one file of unknown name: recognised by its first line
    single.write_bytes(GOLD.read_bytes())
    assert read_annotations(single) == gold


@pytest.mark.parametrize("edit,message", [
    (lambda f: f[:5], "found 5 fields"),
    (lambda f: f[:3] + ["maybe"] + f[4:], "negation value 'maybe' is not one of no, yes"),
    (lambda f: f[:19] + ["later"] + f[20:], "doctime value 'later'"),
    (lambda f: f[:1] + ["9-3"] + f[2:], "spans '9-3'"),
    (lambda f: f[:4] + ["1-2-3"] + f[5:], "negation cue '1-2-3'"),
    (lambda f: f[:20] + ["sometimes"] + f[21:], "temporal expression 'sometimes'"),
])
def test_bad_lines_name_file_and_line(tmp_path: Path, edit, message):
    first, second = GOLD.read_bytes().decode().split("\r\n")[:2]
    bad = tmp_path / "note1.pipe.txt"
    bad.write_text(first + "\n" + "|".join(edit(second.split("|"))) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        share2014.read_share2014(bad)
    assert str(exc.value).startswith(f"{bad}:2: ") and message in str(exc.value)


def test_values_are_read_in_any_case():
    line = ("n.txt|0-3|CUI-less|YES|null|Family_Member|null|no|null|unmarked|null|unmarked|null|false|null|"
            "false|null|null|null|Before-Overlap|none|null")
    a = share2014.parse_line(line).attributes
    assert (a.negation, a.subject, a.doctime, a.body_location) == ("yes", "family_member", "before_overlap", "NULL")


def test_mentions_without_attributes_are_written_with_the_defaults():
    line = share2014.format_line(Mention("n", ((0, 3), (5, 9))))
    assert line == ("n.txt|0-3,5-9|CUI-less|no|null|patient|null|no|null|unmarked|null|unmarked|null|false|null|"
                    "false|null|NULL|null|unknown|none|null")


def _with_attributes() -> tuple[Document, list[Mention]]:
    doc = Document("n1", "Denies fever. Mother: breast cancer.")
    fever = Mention("n1", ((7, 12),), "C0015967",
                    attributes=Attributes(negation="yes", cues={"negation": ((0, 6),)}))
    cancer = Mention("n1", ((22, 28), (29, 35)), "CUI-less",
                     attributes=Attributes(subject="family_member", doctime="before",
                                           cues={"subject": ((14, 20),)}))
    return doc, [fever, cancer]


def test_jsonl_carries_attributes_and_cues(tmp_path: Path):
    doc, mentions = _with_attributes()
    path = write_annotations(tmp_path, doc, mentions, "jsonl")
    rec = json.loads(path.read_text(encoding="utf-8"))
    fever = rec["mentions"][0]
    assert set(fever["attributes"]) == {"negation", "uncertainty", "subject", "conditional", "generic", "course",
                                        "severity", "doctime", "body_location"}
    assert fever["attributes"]["negation"] == "yes" and fever["cues"] == {"negation": [[0, 6]]}
    assert "cues" not in fever["attributes"]
    back = jsonl.read_jsonl(path)[0].mentions
    assert [m.attributes for m in back] == [m.attributes for m in mentions]


def test_jsonl_without_attributes_reads_none_and_bad_attributes_are_errors(tmp_path: Path):
    plain = jsonl.parse_record('{"doc_id": "a", "mentions": [{"spans": [[0, 3]]}]}')
    assert plain.mentions[0].attributes is None
    with pytest.raises(InputError, match="negation value 'perhaps'"):
        jsonl.parse_record('{"doc_id": "a", "mentions": [{"spans": [[0, 3]], '
                           '"attributes": {"negation": "perhaps"}}]}', "x.jsonl", 3)
    with pytest.raises(InputError, match="x.jsonl:3: .*unknown attribute 'mood'"):
        jsonl.parse_record('{"doc_id": "a", "mentions": [{"spans": [[0, 3]], "attributes": {"mood": "x"}}]}',
                           "x.jsonl", 3)


def test_brat_a_lines_round_trip(tmp_path: Path):
    doc, mentions = _with_attributes()
    path = write_annotations(tmp_path, doc, mentions, "brat")
    text = path.read_text(encoding="utf-8")
    assert "A1\tnegation T1 yes\n" in text
    assert "A2\tsubject T2 family_member\nA3\tdoctime T2 before\n" in text
    back = brat.read_brat(path)
    # values come back; brat keeps no cue spans
    assert [m.attributes.non_default() for m in back] == [m.attributes.non_default() for m in mentions]
    assert back == mentions


def test_brat_attribute_errors_and_other_attributes(tmp_path: Path):
    ann = "T1\tDisease_Disorder 0 5\tfever\nA1\tnegation T1 sure\n"
    with pytest.raises(InputError, match=r"x.ann:2: negation value 'sure'"):
        brat.parse_ann(ann, "x", "x.ann")
    ann = "T1\tDisease_Disorder 0 5\tfever\nA1\tnegation T9 yes\n"
    with pytest.raises(InputError, match="T9, which is not a text-bound annotation"):
        brat.parse_ann(ann, "x", "x.ann")
    # an A line of another annotation scheme is skipped, as before
    (m,) = brat.parse_ann("T1\tDisease_Disorder 0 5\tfever\nA1\tNegated T1\n", "x")
    assert m.attributes is None
