"""``share-ner tag``: arguments, outputs and one-line errors, with the real pipeline on a tiny trained model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mimic_csv import NOTE_1, NOTE_3, mimic3_csv, write

from share_ner.cli import main
from share_ner.formats import read_annotations
from share_ner.inputs.files import read_notes

TAGGER_FIXTURES = Path(__file__).parent / "fixtures" / "tagger"


def test_tag_directory_matches_the_pipeline(small_model: Path, tmp_path: Path, capsys) -> None:
    from share_ner.pipeline import Pipeline

    out = tmp_path / "out"
    assert main(["tag", str(TAGGER_FIXTURES / "text"), "--model", str(small_model), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.startswith("share-ner: tagged 6 notes (") and "tokens/s" in err
    pipeline = Pipeline.load(small_model)
    expected = {d.id: pipeline.annotate(d) for d in read_notes(TAGGER_FIXTURES / "text").values()}
    assert read_annotations(out) == expected
    assert sum(map(len, expected.values())) > 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["notes"] == 6 and summary["mentions"] == sum(map(len, expected.values()))


def test_tag_csv_to_stdout_with_jobs_2(small_model: Path, tmp_path: Path, capsys) -> None:
    csv_path = write(tmp_path / "NOTEEVENTS.csv", mimic3_csv([
        ("1", "Discharge summary", "", NOTE_1), ("2", "Radiology", "", NOTE_3), ("3", "Radiology", "1", "x")]))
    assert main(["tag", str(csv_path), "--model", str(small_model), "--jobs", "2", "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    lines = [json.loads(x) for x in captured.out.splitlines()]
    assert [r["doc_id"] for r in lines] == ["1", "2"]
    for rec, text in zip(lines, (NOTE_1, NOTE_3)):
        for m in rec["mentions"]:
            assert m["text"] == " ".join(text[s:e] for s, e in m["spans"])
    assert main(["tag", str(csv_path), "--model", str(small_model), "--quiet", "--include-errors",
                 "--category", "radiology"]) == 0
    assert [json.loads(x)["doc_id"] for x in capsys.readouterr().out.splitlines()] == ["2", "3"]


@pytest.mark.parametrize("args,message", [
    (["--model", "{tmp}/nowhere"], "nowhere: no such model folder"),
    (["--out", "{tmp}/blocker/out"], "output folder is not writable"),
    (["--format", "brat", "--out", "{tmp}/o"], "BRAT output needs one file per note"),
])
def test_tag_errors_are_one_line_exit_2(tmp_path: Path, capsys, args: list[str], message: str) -> None:
    (tmp_path / "blocker").write_text("")
    (tmp_path / "model").mkdir()
    csv_path = write(tmp_path / "NOTEEVENTS.csv", mimic3_csv([("1", "Radiology", "", NOTE_3)]))
    argv = ["tag", str(csv_path), "--model", str(tmp_path / "model")] + [a.format(tmp=tmp_path) for a in args]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("share-ner: error: ") and message in err


def test_tag_incomplete_model_is_one_line_error(tmp_path: Path, capsys) -> None:
    (tmp_path / "model").mkdir()
    note = tmp_path / "n.txt"
    note.write_text("fever")
    for jobs in ("1", "2"):
        assert main(["tag", str(note), "--model", str(tmp_path / "model"), "--jobs", jobs, "--quiet"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("share-ner: error: ")


def test_tag_arguments_are_checked(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["tag", "x.txt", "--jobs", "0"])
    assert exc.value.code == 2 and "0 is not at least 1" in capsys.readouterr().err


def test_missing_input_is_reported_before_any_model_is_built(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SHARE_NER_CACHE", str(tmp_path / "cache"))
    assert main(["tag", str(tmp_path / "missing"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"share-ner: error: {tmp_path / 'missing'}: no such file or directory"]
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("dense", [False, True])
def test_jobs_2_builds_a_new_lexicon_index_once(small_model_with_normalizer: Path, tmp_path: Path, monkeypatch, capsys,
                                                 dense: bool) -> None:
    import share_ner.commands.tag as tag_cmd
    from share_ner.lexicons import index as index_mod

    model = small_model_with_normalizer
    # a dense model's workers load their own (PyTorch is not fork-safe): the caches are built once beforehand;
    # otherwise the workers are forked from this process once it has loaded the model, cold cache or not
    monkeypatch.setattr(tag_cmd, "_uses_dense", lambda model: dense)
    monkeypatch.setenv("SHARE_NER_CACHE", str(tmp_path / "cold-cache"))
    monkeypatch.setattr(index_mod, "_MEMORY", {})
    args = ["tag", str(TAGGER_FIXTURES / "text"), "--model", str(model), "--jobs", "2"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    said = "compiling the model's lexicon index once, before the workers start" in capsys.readouterr().err
    assert said == dense
    assert list((tmp_path / "cold-cache").glob("index-*"))
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    assert "compiling" not in capsys.readouterr().err  # cached
    assert main(["tag", str(TAGGER_FIXTURES / "text"), "--model", str(model), "--out", str(tmp_path / "c")]) == 0
    assert read_annotations(tmp_path / "a") == read_annotations(tmp_path / "b") == read_annotations(tmp_path / "c")


def test_tag_with_a_site_abbreviation_list(small_model: Path, small_model_with_normalizer: Path, tmp_path: Path,
                                           capsys) -> None:
    from share_ner.batch.annotate import load_annotator

    site = tmp_path / "site.tsv"
    site.write_text("abbreviation\texpansion\nXQZ\theadache\n", encoding="utf-8")
    note = str(TAGGER_FIXTURES / "text")
    # a model without a normalizer has no use for the list
    assert main(["tag", note, "--model", str(small_model), "--abbreviations", str(site), "--quiet"]) == 2
    assert "has no normalizer" in capsys.readouterr().err
    model = small_model_with_normalizer
    assert load_annotator(model, {"XQZ": ["headache"]}).pipeline.normalizer.site_abbreviations == {"XQZ": ["headache"]}
    out = tmp_path / "out"
    assert main(["tag", note, "--model", str(model), "--abbreviations", str(site), "--out", str(out), "--quiet"]) == 0
    assert "with abbreviations" in json.loads((out / "run.json").read_text())["model"]
    # resuming into the same --out with another list (or none) is refused: the outputs would disagree
    site.write_text("abbreviation\texpansion\nXQZ\tfever\n", encoding="utf-8")
    for extra in (["--abbreviations", str(site)], []):
        assert main(["tag", note, "--model", str(model), "--out", str(out), "--quiet", *extra]) == 2
        assert "holds a run with other settings" in capsys.readouterr().err
    site.write_text("abbreviation\texpansion\nXQZ\n", encoding="utf-8")
    assert main(["tag", note, "--model", str(model), "--abbreviations", str(site), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{site}:2" in err


def test_the_tag_command_parses_without_importing_the_other_commands() -> None:
    # `share-ner tag` builds only its own parser: the scorer that `evaluate` and `report` import is start-up time.
    import subprocess
    import sys

    code = ("import sys\n"
            "from share_ner.cli import COMMANDS, build_parser\n"
            "only = build_parser('tag')._subparsers._group_actions[0].choices\n"
            "print(sorted(only), 'share_ner.commands.evaluate' in sys.modules)\n"
            "print(sorted(build_parser()._subparsers._group_actions[0].choices) == sorted(COMMANDS))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["['tag'] False", "True"]


def test_an_unknown_command_lists_every_command(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["tga"])
    err = capsys.readouterr().err
    assert "invalid choice: 'tga'" in err and "'evaluate'" in err and "'spark'" in err
