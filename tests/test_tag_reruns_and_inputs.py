"""``share-ner tag`` as a newcomer meets it: reruns (the same model at another path, ``--overwrite``), input folders
with other files, notes from the standard input, and the summary for people on stderr."""

from __future__ import annotations

import io
import json
import shutil
import sys
from pathlib import Path

import pytest
from mimic_csv import NOTE_1, NOTE_2, NOTE_3, mimic3_csv, write
from test_batch import files, opts, regex_factory

from share_ner.batch.runner import run_batch
from share_ner.cli import main
from share_ner.errors import ShareNerError
from share_ner.formats import read_annotations
from share_ner.inputs.files import iter_stdin_notes, skipped_files_line, walk_note_files

TAGGER_TEXT = Path(__file__).parent / "fixtures" / "tagger" / "text"


# ---------------------------------------------------------------- reruns


def test_rerun_with_the_same_model_at_another_path_resumes(small_model: Path, tmp_path: Path, capsys) -> None:
    copy = tmp_path / "elsewhere" / "model"
    shutil.copytree(small_model, copy)
    out = tmp_path / "out"
    assert main(["tag", str(TAGGER_TEXT), "--model", str(small_model), "--out", str(out)]) == 0
    first = files(out)
    capsys.readouterr()
    assert main(["tag", str(TAGGER_TEXT), "--model", str(copy), "--out", str(out)]) == 0
    assert "6 already done" in capsys.readouterr().err
    assert files(out) == first
    assert str(small_model) not in (out / "run.json").read_text()  # the model by its content, not its path


def test_the_default_model_seen_at_another_path_resumes(small_model: Path, tmp_path: Path, monkeypatch,
                                                       capsys) -> None:
    # `pip install .` then `pip install -e .`: the packaged default model is the same files in another folder
    import share_ner.default_model.build as build

    copy = tmp_path / "checkout" / "default_model"
    shutil.copytree(small_model, copy)
    out = tmp_path / "out"
    for where in (small_model, copy):
        monkeypatch.setattr(build, "default_model_dir", lambda where=where: where)
        assert main(["tag", str(TAGGER_TEXT), "--out", str(out), "--quiet"]) == 0, capsys.readouterr().err


def test_a_changed_model_is_still_refused_and_the_message_names_overwrite(small_model: Path, tmp_path: Path,
                                                                          capsys) -> None:
    changed = tmp_path / "changed"
    shutil.copytree(small_model, changed)
    config = json.loads((changed / "config.json").read_text())
    config["checksum"] = "0" * 64  # another model's config: another checksum
    (changed / "config.json").write_text(json.dumps(config))
    out = tmp_path / "out"
    assert main(["tag", str(TAGGER_TEXT), "--model", str(small_model), "--out", str(out), "--quiet"]) == 0
    assert main(["tag", str(TAGGER_TEXT), "--model", str(changed), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds a run with other settings" in err and "--overwrite" in err


def test_overwrite_replaces_a_run_with_other_settings(small_model: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    base = ["tag", str(TAGGER_TEXT), "--model", str(small_model), "--out", str(out), "--format", "jsonl", "--quiet"]
    assert main(base) == 0
    with_attributes = read_annotations(out)
    assert any(m.attributes is not None for ms in with_attributes.values() for m in ms)
    assert main([*base, "--no-attributes"]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main([*base, "--no-attributes", "--overwrite"]) == 0
    assert "without attributes" in json.loads((out / "run.json").read_text())["model"]
    again = read_annotations(out)
    assert again.keys() == with_attributes.keys()
    assert all(m.attributes is None for ms in again.values() for m in ms)
    # with the same settings too, --overwrite tags every note again instead of resuming
    assert main([*base, "--no-attributes", "--overwrite"]) == 0
    assert json.loads((out / "summary.json").read_text())["this_run"]["tagged"] == 6


def test_overwrite_redoes_the_shards_and_rejects_of_a_csv_export(tmp_path: Path) -> None:
    csv_path = write(tmp_path / "NOTEEVENTS.csv", mimic3_csv([
        ("1", "Radiology", "", NOTE_1), ("2", "Radiology", "", "\x00binary"), ("3", "Radiology", "", NOTE_2),
        ("4", "Radiology", "", NOTE_3)]))
    out = tmp_path / "out"
    run_batch([csv_path], regex_factory, opts(out, shard_size=1, limit=3))
    assert sorted(p.name for p in (out / "NOTEEVENTS").glob("part-*")) == [f"part-0000{i}.jsonl" for i in range(3)]
    with pytest.raises(ShareNerError, match="--overwrite"):
        run_batch([csv_path], regex_factory, opts(out, shard_size=2))
    summary = run_batch([csv_path], regex_factory, opts(out, shard_size=2, overwrite=True))
    assert summary.tagged == 3 and summary.skipped_done == 0 and summary.rejected == 1
    assert sorted(p.name for p in (out / "NOTEEVENTS").glob("part-*")) == ["part-00000.jsonl", "part-00001.jsonl"]
    manifest = [json.loads(x) for x in (out / "NOTEEVENTS" / "manifest.ndjson").read_text().splitlines()]
    assert [e["shard"] for e in manifest] == ["part-00000.jsonl", "part-00001.jsonl"]
    assert len((out / "rejects.tsv").read_text().splitlines()) == 2  # the header and the binary row, once


# ---------------------------------------------------------------- input folders


@pytest.fixture
def mixed_dir(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    (root / "sub").mkdir(parents=True)
    (root / "ECG.TXT").write_bytes(b"fever")
    (root / "sub" / "ward.Txt").write_bytes(b"pain")
    (root / "a.doc").write_bytes(b"pain")
    (root / "b").write_bytes(b"pain")
    (root / "c.csv").write_bytes(b"pain")
    (root / "ECG.pipe.txt").write_bytes(b"ECG.txt||Disease_Disorder||CUI-less||0||5\n")
    (root / "sub" / "ward.PIPE.TXT").write_bytes(b"")
    (root / ".DS_Store").write_bytes(b"")
    return root


def test_txt_in_any_case_is_a_note_and_gold_files_stay_gold(mixed_dir: Path) -> None:
    skipped: list[Path] = []
    notes = [e.path.relative_to(mixed_dir).as_posix() for e in walk_note_files(mixed_dir, skipped)]
    assert notes == ["ECG.TXT", "sub/ward.Txt"]
    assert [p.name for p in skipped] == ["a.doc", "b", "c.csv"]


def test_other_files_of_an_input_folder_are_named_in_one_warning(mixed_dir: Path, tmp_path: Path) -> None:
    err = io.StringIO()
    summary = run_batch([mixed_dir], regex_factory, opts(tmp_path / "out"), stderr=err)
    assert summary.tagged == 2
    assert sorted(read_annotations(tmp_path / "out")) == ["ECG", "ward"]
    assert err.getvalue() == "share-ner: warning: skipped 3 files that are not .txt notes: a.doc, b, c.csv\n"


def test_the_warning_names_a_few_files_then_how_many_more() -> None:
    paths = [Path(f"n{i}.rtf") for i in range(7)]
    assert skipped_files_line(paths) == "skipped 7 files that are not .txt notes: n0.rtf, n1.rtf, n2.rtf and 4 more"
    assert skipped_files_line(paths[:1]) == "skipped 1 file that is not a .txt note: n0.rtf"
    assert skipped_files_line([]) is None


def test_a_folder_without_notes_warns_instead_of_tagging_nothing_silently(tmp_path: Path, small_model: Path,
                                                                         capsys) -> None:
    root = tmp_path / "exports"
    root.mkdir()
    for name in ("note1", "note2"):
        (root / name).write_text("fever")
    assert main(["tag", str(root), "--model", str(small_model), "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert "warning: skipped 2 files that are not .txt notes: note1, note2" in err and "tagged 0 notes" in err


# ---------------------------------------------------------------- the standard input


def _stdin(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_dash_reads_the_whole_standard_input_as_one_note(small_model: Path, tmp_path: Path, monkeypatch,
                                                         capsys) -> None:
    text = (TAGGER_TEXT / "note01.txt").read_bytes()
    _stdin(monkeypatch, text)
    assert main(["tag", "-", "--model", str(small_model), "--quiet"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["doc_id"] for r in records] == ["stdin"]
    assert main(["tag", str(TAGGER_TEXT / "note01.txt"), "--model", str(small_model), "--quiet"]) == 0
    expected = json.loads(capsys.readouterr().out)
    assert records[0]["mentions"] == expected["mentions"] and expected["mentions"]
    # into an output folder: the note's file is stdin.pipe.txt
    _stdin(monkeypatch, text)
    assert main(["tag", "-", "--model", str(small_model), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    assert (tmp_path / "out" / "stdin.pipe.txt").is_file()


def test_dash_with_jsonl_reads_one_note_a_line_and_rejects_bad_lines(small_model: Path, monkeypatch,
                                                                     capsys) -> None:
    lines = [json.dumps({"id": "n1", "text": "Patient has fever."}), "not json",
             json.dumps({"doc_id": 7, "text": "Chest pain."}), json.dumps({"id": "../x", "text": "secret words"})]
    _stdin(monkeypatch, "\n".join(lines).encode())
    assert main(["tag", "-", "--stdin-format", "jsonl", "--model", str(small_model), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert [json.loads(x)["doc_id"] for x in captured.out.splitlines()] == ["n1", "7"]
    assert "line 2: not a JSON object" in captured.err and "line 4:" in captured.err
    assert "secret" not in captured.err


def test_stdin_notes_keep_carriage_returns_and_name_lines() -> None:
    [note] = iter_stdin_notes(b"fever\r\npain")
    assert note.doc is not None and note.doc.id == "stdin" and note.doc.text == "fever\r\npain"
    assert [n.problem for n in iter_stdin_notes(b"")] == ["empty standard input"]
    got = list(iter_stdin_notes(b'{"id": "a", "text": "x"}\n\n{"id": "a", "text": "y"}\n[1]\n', "jsonl"))
    assert [(n.note_id, n.line, n.problem) for n in got] == [
        ("a", 1, None), ("a", 3, "line 3: duplicate note id (first at line 1)"), ("", 4, "line 4: not a JSON object")]


def test_stdin_json_lines_follow_the_input_contract() -> None:
    lines = [{"id": " a ", "text": "fever"}, {"id": "a", "text": "cough"}, {"id": 7, "text": ""},
             {"id": 7, "text": "pain"}, {"id": "x\ty", "text": "pain"}, {"id": "../x", "text": "pain"},
             {"id": "..", "text": "pain"}, {"id": "n", "text": "a\u0000b"}, {"id": True, "text": "pain"},
             {"id": "m", "text": "x\ud800"}, {"id": "  ", "text": "pain"}]
    data = "\n".join(json.dumps(x) for x in lines).encode()
    got = [(n.note_id, n.problem) for n in iter_stdin_notes(data, "jsonl")]
    assert got == [
        ("a", None),  # surrounding whitespace is not part of an id
        ("a", "line 2: duplicate note id (first at line 1)"),
        ("7", 'line 3: "text" is empty'),
        ("7", "line 4: duplicate note id (first at line 3)"),  # a rejected text keeps its claim on the id
        ("", "line 5: \"id\" contains '||' or a control character (it would break the output lines)"),
        ("", "line 6: id holds '/' or '\\', or is . or .. (it names the note's output file)"),
        ("", "line 7: id holds '/' or '\\', or is . or .. (it names the note's output file)"),
        ("n", 'line 8: "text" contains NUL bytes at character 1'),
        ("", 'line 9: no "id" (a string or number)'),
        ("m", 'line 10: "text" is not valid utf-8 at character 1'),
        ("", 'line 11: empty "id"'),
    ]


def test_the_standard_input_is_read_once(tmp_path: Path) -> None:
    with pytest.raises(ShareNerError, match="given twice"):
        run_batch(["-", "-"], regex_factory, opts(None), stdin=io.BytesIO(b"fever"), stdout=io.StringIO())


# ---------------------------------------------------------------- the summary for people


def test_tag_ends_with_a_summary_for_people_on_stderr(tiny_model: Path, capsys) -> None:
    assert main(["tag", str(TAGGER_TEXT), "--model", str(tiny_model)]) == 0
    captured = capsys.readouterr()
    records = [json.loads(line) for line in captured.out.splitlines()]  # stdout stays JSON Lines
    mentions = [m for r in records for m in r["mentions"]]
    negated = sum(m["attributes"]["negation"] == "yes" for m in mentions)
    lines = captured.err.splitlines()
    assert lines[0].startswith("share-ner: tagged 6 notes (")
    assert lines[1].startswith(f"share-ner: {len(mentions)} mentions in 6 notes: {negated} negated "
                               f"({100 * negated / len(mentions):.0f}%)")
    top = sorted({m["cui"] for m in mentions if m["cui"] != "CUI-less"},
                 key=lambda c: (-sum(m["cui"] == c for m in mentions), c))[0]
    name = next(m["name"] for m in mentions if m["cui"] == top)
    assert f"most frequent: {name} ({top}) {sum(m['cui'] == top for m in mentions)}" in lines[1]
    assert main(["tag", str(TAGGER_TEXT), "--model", str(tiny_model), "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_summary_json_keeps_this_runs_top_concepts(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("fever, fever and pain")
    (notes / "b.txt").write_text("fever")
    summary = run_batch([notes], regex_factory, opts(tmp_path / "out"))
    saved = json.loads((tmp_path / "out" / "summary.json").read_text())["this_run"]
    assert saved["top_concepts"] == [{"cui": "C_fever", "name": "", "mentions": 3},
                                     {"cui": "C_pain", "name": "", "mentions": 1}]
    assert summary.details() == "4 mentions in 2 notes: 0 negated (0%), 0 CUI-less (0%); most frequent: C_fever 3, C_pain 1"


def test_commands_that_read_note_folders_name_the_skipped_files_too(tmp_path: Path, capsys) -> None:
    text = tmp_path / "text"
    shutil.copytree(TAGGER_TEXT, text)
    (text / "note01.txt").rename(text / "note01.TXT")  # still note01: its gold applies
    (text / "scan.pdf").write_bytes(b"%PDF")
    (text / "note07").write_text("fever")
    (text / "note01.ann").write_text("")  # brat annotations beside their notes are expected there
    gold = TAGGER_TEXT.parent / "gold"
    assert main(["ceiling", "--text", str(text), "--gold", str(gold), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["notes"] == 6
    assert captured.err == "share-ner: warning: skipped 2 files that are not .txt notes: note07, scan.pdf\n"


def test_a_rejects_file_elsewhere_gets_its_folder(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("fever")
    (notes / "empty.txt").write_text("")
    rejects = tmp_path / "logs" / "today" / "rejects.tsv"
    summary = run_batch([notes], regex_factory, opts(tmp_path / "out", rejects=rejects))
    assert summary.rejected == 1 and len(rejects.read_text().splitlines()) == 2
