"""Every command that writes an output creates its folder, replaces what an earlier run of it wrote, and refuses
to replace anything else without ``--overwrite`` (one line naming it, exit 2, nothing touched)."""

from __future__ import annotations

from pathlib import Path

import pytest

from share_ner.cli import main

TAGGER = Path(__file__).parent / "fixtures" / "tagger"
TEXT, GOLD, LEXICON = TAGGER / "text", TAGGER / "gold", TAGGER / "lexicon.tsv"


def _refused(capsys, argv: list[str]) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("share-ner: error: ") and "--overwrite" in err
    return err


@pytest.mark.parametrize("command", [
    ["lexicon", "build", "--gold", str(GOLD), "--text", str(TEXT)],
    ["clusters", "build", str(TEXT), "--min-count", "1", "--n-clusters", "2"],
    ["report", "--gold", str(GOLD), "--pred", str(GOLD)],
])
def test_file_outputs_create_their_folder_replace_their_own_kind_and_refuse_others(tmp_path: Path, capsys,
                                                                                  command: list[str]) -> None:
    out = tmp_path / "new" / "folder" / "output"
    assert main([*command, "--out", str(out)]) == 0, capsys.readouterr().err
    first = out.read_bytes()
    assert first
    assert main([*command, "--out", str(out)]) == 0  # a rerun replaces its own output
    note = tmp_path / "note.txt"
    note.write_text("Patient with fever.\n")
    _refused(capsys, [*command, "--out", str(note)])
    assert note.read_text() == "Patient with fever.\n"
    assert main([*command, "--out", str(note), "--overwrite"]) == 0
    assert note.read_bytes()[:20] == first[:20]


@pytest.mark.parametrize("command,written", [
    (["normalize", str(TEXT), "--mentions", str(GOLD), "--lexicon", str(LEXICON)], "note01.pipe.txt"),
    (["attributes", str(TEXT), "--mentions", str(GOLD), "--model", "{model}"], "note01.pipe.txt"),
])
def test_folder_outputs_refuse_to_replace_files_another_run_wrote(tmp_path: Path, capsys, command: list[str],
                                                                  written: str, small_model: Path) -> None:
    command = [a.format(model=small_model) for a in command]
    out = tmp_path / "new" / "out"
    assert main([*command, "--out", str(out)]) == 0, capsys.readouterr().err
    assert (out / written).is_file()
    assert main([*command, "--out", str(out)]) == 0  # a rerun replaces its own outputs
    # a folder of gold files: the run would replace them
    gold_copy = tmp_path / "gold"
    gold_copy.mkdir()
    for p in GOLD.iterdir():
        (gold_copy / p.name).write_bytes(p.read_bytes())
    before = {p.name: p.read_bytes() for p in gold_copy.iterdir()}
    err = _refused(capsys, [*command, "--out", str(gold_copy)])
    assert "which this run would replace" in err
    assert {p.name: p.read_bytes() for p in gold_copy.iterdir()} == before
    assert main([*command, "--out", str(gold_copy), "--overwrite"]) == 0
    # a folder another command writes into (its run.json), even without a file of the same name
    tagged = tmp_path / "tagged"
    tagged.mkdir()
    (tagged / "run.json").write_text('{"format": null, "model": "model 0123456789abcdef"}\n')
    _refused(capsys, [*command, "--out", str(tagged)])
    assert not (tagged / written).exists()


def test_train_refuses_a_folder_that_is_not_a_model_unless_overwrite(tmp_path: Path, capsys) -> None:
    target = tmp_path / "results"
    target.mkdir()
    (target / "keep.txt").write_text("not a model")
    argv = ["train", "--text", str(TEXT), "--gold", str(GOLD), "--model", str(target), "--no-normalizer",
            "--lexicon", "none", "--quiet"]
    _refused(capsys, argv)
    assert (target / "keep.txt").read_text() == "not a model"
    assert main([*argv, "--overwrite"]) == 0
    assert (target / "config.json").is_file() and not (target / "keep.txt").exists()
    assert not list(tmp_path.glob(".results*"))  # nothing left beside it
    model = tmp_path / "deep" / "new" / "model"
    assert main([*argv[:6], str(model), *argv[7:]]) == 0
    assert (model / "config.json").is_file()
