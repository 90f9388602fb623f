"""BioC JSON: round trips (discontiguous mentions, CUIs, attributes), a PubTator-style file read by hand-counted
expectations, sniffing, ``share-ner tag --format bioc``, and errors naming the file and where in it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from share_ner.cli import main
from share_ner.document import CUI_LESS, Attributes, Document, Mention
from share_ner.errors import InputError
from share_ner.formats import format_of, read_annotations, write_annotations
from share_ner.formats.bioc import format_bioc, parse_bioc, read_bioc
from share_ner.inputs.files import read_notes

NOTE = Document("note1", "Left atrium is dilated.\r\nNo chest pain; mild edema.\n")
MENTIONS = [
    Mention("note1", ((0, 11), (15, 22)), "C0344720"),  # Left atrium ... dilated
    Mention("note1", ((28, 38),), CUI_LESS,
            attributes=Attributes(negation="yes", cues={"negation": ((25, 27),)})),  # No chest pain
    Mention("note1", ((45, 50),), "C0013604", attributes=Attributes(severity="slight", cues={"severity": ((40, 44),)})),
]


def test_round_trip_keeps_spans_cuis_attributes_and_text(tmp_path: Path) -> None:
    assert [m.text(NOTE.text) for m in MENTIONS] == ["Left atrium dilated", "chest pain", "edema"]
    for with_text in (False, True):
        out = tmp_path / str(with_text)
        out.mkdir()
        path = write_annotations(out, NOTE, MENTIONS, "bioc", with_text=with_text)
        assert path.name == "note1.bioc.json"
        (doc,) = read_bioc(path)
        assert doc.mentions == MENTIONS
        assert [m.attributes for m in doc.mentions] == [m.attributes for m in MENTIONS]
        assert doc.mention_texts == ["Left atrium dilated", "chest pain", "edema"]
        assert doc.text == (NOTE.text if with_text else None)
        assert read_annotations(path.parent, {"note1": NOTE}) == {"note1": MENTIONS}


def test_discontiguous_mention_is_one_annotation_with_two_locations() -> None:
    data = json.loads(format_bioc([("note1", MENTIONS, NOTE.text)], date="2026-01-31"))
    (passage,) = data["documents"][0]["passages"]
    first = passage["annotations"][0]
    assert first["locations"] == [{"offset": 0, "length": 11}, {"offset": 15, "length": 7}]
    assert first["infons"] == {"type": "Disease_Disorder", "identifier": "C0344720"}
    second = passage["annotations"][1]["infons"]
    assert second["negation"] == "yes" and json.loads(second["cues"]) == {"negation": [[25, 27]]}
    assert data["date"] == "2026-01-31" and "text" not in passage


PUBTATOR = {
    "source": "PubTator", "date": "2024-01-01", "key": "BioC.key", "infons": {},
    "documents": [{
        "id": "123", "infons": {}, "relations": [{"id": "R1", "infons": {}, "nodes": []}],
        "passages": [
            {"offset": 0, "infons": {"type": "title"}, "text": "Diabetes and heart failure.", "sentences": [],
             "annotations": [
                 {"id": "1", "infons": {"type": "Disease", "identifier": "MESH:D003920"}, "text": "Diabetes",
                  "locations": [{"offset": 0, "length": 8}]},
                 {"id": "2", "infons": {"type": "Disease", "identifier": "UMLS:C0018801"}, "text": "heart failure",
                  "locations": [{"offset": 13, "length": 13}]}],
             "relations": []},
            {"offset": 28, "infons": {"type": "abstract"}, "text": "Renal and hepatic failure.", "relations": [],
             "annotations": [],
             "sentences": [{"offset": 28, "infons": {}, "text": "Renal and hepatic failure.", "relations": [],
                            "annotations": [{"id": "3", "infons": {"identifier": "C0035078"},
                                             "text": "Renal failure",
                                             "locations": [{"offset": 46, "length": 7},
                                                           {"offset": 28, "length": 5}]}]}]}],
        "annotations": [{"id": "4", "infons": {}, "locations": [{"offset": 38, "length": 15}]}],
    }],
}


def test_a_pubtator_style_collection() -> None:
    (doc,) = parse_bioc(json.dumps(PUBTATOR))
    assert doc.doc_id == "123"
    assert doc.text == "Diabetes and heart failure. Renal and hepatic failure."
    assert doc.mentions == [
        Mention("123", ((0, 8),), CUI_LESS, "Disease"),  # a MeSH id is not a CUI
        Mention("123", ((13, 26),), "C0018801", "Disease"),
        Mention("123", ((28, 33), (46, 53)), "C0035078"),  # locations in any order; no type: Disease_Disorder
        Mention("123", ((38, 53),), CUI_LESS),  # a document-level annotation
    ]
    assert [m.text(doc.text) for m in doc.mentions][2:] == ["Renal failure", "hepatic failure"]


def test_a_bioc_file_of_any_name_is_sniffed_and_jsonl_still_is_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text(json.dumps(PUBTATOR, indent=2), encoding="utf-8")
    assert format_of(path) is None and format_of("a.BioC.JSON") == "bioc"
    assert len(read_annotations(path)["123"]) == 4
    lines = tmp_path / "x.json"
    lines.write_text('{"doc_id": "a", "mentions": [{"spans": [[0, 3]]}]}\n', encoding="utf-8")
    assert read_annotations(lines) == {"a": [Mention("a", ((0, 3),))]}


def _broken(edit) -> str:
    data = json.loads(json.dumps(PUBTATOR))
    edit(data)
    return json.dumps(data)


def _title(data):
    return data["documents"][0]["passages"][0]


@pytest.mark.parametrize("edit,where,message", [
    (lambda d: _title(d)["annotations"][0]["locations"][0].update(offset=-1),
     "documents[0] (note 123) passages[0] annotations[0] (annotation 1) locations[0]", '"offset" is -1'),
    (lambda d: _title(d)["annotations"][1]["locations"].append({"offset": 20, "length": 2}),
     "annotations[1] (annotation 2)", "locations 13-26 and 20-22 overlap"),
    (lambda d: _title(d)["annotations"][1]["locations"][0].update(length=40),
     "annotations[1] (annotation 2) locations[0]", "span 13-53 is outside its passage (0-27)"),
    (lambda d: _title(d)["annotations"][1].update(text="heart attack"),
     "annotations[1] (annotation 2)", "annotation text is not the text of note 123 at 13-26"),
    (lambda d: d["documents"].append(d["documents"][0]), "documents[1]", "note 123 is also documents[0]"),
    (lambda d: _title(d)["annotations"][0]["infons"].update(negation="maybe"),
     "annotations[0] (annotation 1)", "negation value 'maybe' is not one of no, yes"),
    (lambda d: _title(d)["annotations"][0].update(locations=[]), "annotations[0] (annotation 1)", 'no "locations"'),
    (lambda d: d["documents"][0].update(id=""), "documents[0]", 'missing or empty document "id"'),
    (lambda d: d.pop("documents"), "top level", 'no "documents" list'),
    (lambda d: _title(d)["annotations"][0].update(infons={"identifier": 3}), "annotations[0] (annotation 1)",
     '"infons" must be an object of strings'),
])
def test_errors_name_the_file_and_the_object(tmp_path: Path, edit, where: str, message: str) -> None:
    path = tmp_path / "bad.bioc.json"
    path.write_text(_broken(edit), encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_annotations(path)
    text = str(info.value)
    assert text.startswith(f"{path}: ") and where in text and message in text
    assert "Diabetes" not in text or "Diabetes" in message  # no note text


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.bioc.json"
    # a missing ":" (json places a trailing comma differently from Python 3.13 on; this error alike everywhere)
    path.write_text('{"documents": [\n  {"id" "a"}\n]}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.bioc\.json:2: invalid JSON at column 9"):
        read_annotations(path)


def test_tag_writes_bioc_that_reads_back_as_the_pipeline(tiny_model: Path, tmp_path: Path) -> None:
    from share_ner.pipeline import Pipeline

    text = Path(__file__).parent / "fixtures" / "tagger" / "text"
    out = tmp_path / "out"
    assert main(["tag", str(text), "--model", str(tiny_model), "--out", str(out), "--format", "bioc",
                 "--quiet"]) == 0
    pipeline = Pipeline.load(tiny_model)
    notes = read_notes(text)
    expected = {d.id: pipeline.annotate(d) for d in notes.values()}
    assert sorted(p.name for p in out.glob("*.bioc.json")) == sorted(f"{d}.bioc.json" for d in notes)
    assert read_annotations(out, notes) == expected
    assert any(m.is_discontiguous for ms in expected.values() for m in ms)


def test_tag_refuses_bioc_for_a_csv_export(tmp_path: Path, capsys) -> None:
    from mimic_csv import NOTE_3, mimic3_csv, write

    (tmp_path / "model").mkdir()
    csv_path = write(tmp_path / "NOTEEVENTS.csv", mimic3_csv([("1", "Radiology", "", NOTE_3)]))
    assert main(["tag", str(csv_path), "--model", str(tmp_path / "model"), "--format", "bioc",
                 "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "BioC output needs one file per note" in err
