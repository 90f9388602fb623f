"""``share-ner train`` refuses text and gold that do not go together: one line, exit 2, and no model written."""

from __future__ import annotations

from pathlib import Path

import pytest

from share_ner.cli import main

NOTE = "Patient has diabetes mellitus and chest pain.\n"


def _data(tmp_path: Path, gold: dict[str, str]) -> tuple[Path, Path]:
    text, golds = tmp_path / "text", tmp_path / "gold"
    text.mkdir()
    golds.mkdir()
    (text / "a.txt").write_text(NOTE)
    (text / "b.txt").write_text(NOTE)
    for name, content in gold.items():
        (golds / name).write_text(content)
    return text, golds


@pytest.mark.parametrize("gold,message", [
    # no note id shared: the gold is of other notes
    ({"x.pipe.txt": "x.txt||Disease_Disorder||C0011849||12||29\n",
      "y.pipe.txt": "y.txt||Disease_Disorder||C0008031||34||44\n"},
     "none of its mentions is in a note of"),
    # every span outside its note
    ({"a.pipe.txt": "a.txt||Disease_Disorder||C0011849||112||129\n"}, "ends past the note's end"),
    # gold files without a mention
    ({"a.pipe.txt": "", "b.pipe.txt": "\n"}, "no gold mention found"),
])
def test_train_refuses_gold_that_gives_nothing_to_learn(tmp_path: Path, capsys, gold: dict[str, str],
                                                        message: str) -> None:
    text, golds = _data(tmp_path, gold)
    model = tmp_path / "models" / "m"
    argv = ["train", "--text", str(text), "--gold", str(golds), "--model", str(model), "--no-normalizer",
            "--lexicon", "none"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("share-ner: error: ") and message in err
    assert "diabetes" not in err  # no note text
    assert not model.exists() and not list(tmp_path.glob("models/.m*"))  # nor a half-written one beside it


def test_train_names_the_gold_notes_when_none_is_among_the_texts(tmp_path: Path, capsys) -> None:
    text, golds = _data(tmp_path, {f"n{i}.pipe.txt": f"n{i}.txt||Disease_Disorder||CUI-less||12||29\n"
                                   for i in range(5)})
    assert main(["train", "--text", str(text), "--gold", str(golds), "--model", str(tmp_path / "m"),
                 "--no-normalizer", "--lexicon", "none", "--quiet"]) == 2
    assert "it annotates 5 note(s): n0, n1, n2 and 2 more" in capsys.readouterr().err
