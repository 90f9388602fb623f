"""``share-ner evaluate`` through ``main([...])``: table, --json, --vs, ranking, errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from share_ner.cli import main

EVAL = Path(__file__).parent / "fixtures" / "eval"
GOLD, PRED, PRED_B, TEXT = (str(EVAL / d) for d in ("gold", "pred", "pred_b", "text"))


def test_table(capsys):
    assert main(["evaluate", "--gold", GOLD, "--pred", PRED, "--text", TEXT]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    # hand counts in test_eval_scoring.py: strict 4/9, 4/8, 8/17; relaxed 7/9, 7/8, 14/17
    assert "strict       0.444   0.500   0.471       4       5       4" in lines
    assert "relaxed      0.778   0.875   0.824       7       2       1" in lines
    assert any(line.startswith("strict         0.375   3 correct CUIs / 8 gold") for line in lines)
    assert "7 notes, 8 gold mentions, 9 predicted mentions" in lines
    # the gold note with no prediction file is reported on stderr, by id
    assert "1 gold note(s) have no predictions and count as predicting nothing: missing" in err


def test_discontiguous_row_and_json(capsys):
    disc = EVAL.parent / "eval_discontiguous"
    argv = ["evaluate", "--gold", str(disc / "gold"), "--pred", str(disc / "pred"), "--text", str(disc / "text")]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    # hand counts in test_eval_scoring.py (DISC_COUNTS): 3 discontiguous gold, 4 predicted, 2 exact
    assert "disc.        0.500   0.667   0.571       2       2       1" in lines
    assert main([*argv, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["discontiguous"] == {"precision": 0.5, "recall": pytest.approx(2 / 3), "f1": pytest.approx(4 / 7),
                                  "tp": 2, "fp": 2, "fn": 1}


def test_json_and_by_doc(capsys):
    assert main(["evaluate", "--gold", GOLD, "--pred", PRED, "--json", "--by-doc"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["strict"]["tp"] == 4 and d["relaxed"]["fp"] == 2
    assert d["accuracy"]["relaxed"] == pytest.approx(0.75)
    assert (d["n_gold"], d["n_pred"]) == (8, 9)
    assert d["by_doc"]["dup"] == {"n_gold": 2, "n_pred": 2, "strict_tp": 2, "relaxed_tp": 2, "cui_correct": 1,
                                  "disc_gold": 0, "disc_pred": 0, "disc_tp": 0}
    assert "significance" not in d


def test_vs_adds_significance(capsys):
    argv = ["evaluate", "--gold", GOLD, "--pred", PRED, "--vs", PRED_B, "--shuffles", "200", "--seed", "1", "--json"]
    assert main(argv) == 0
    d = json.loads(capsys.readouterr().out)
    sig = d["significance"]
    assert set(sig) == {"strict_f1", "relaxed_f1", "discontiguous_f1", "strict_accuracy", "relaxed_accuracy"}
    # B finds only "diabetes": strict F1 2*1/(8+1) = 2/9; A's is 8/17
    assert sig["strict_f1"]["a"] == pytest.approx(8 / 17)
    assert sig["strict_f1"]["b"] == pytest.approx(2 / 9)
    assert sig["strict_f1"]["diff"] == pytest.approx(8 / 17 - 2 / 9)
    assert 0 < sig["strict_f1"]["p_value"] <= 1
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out) == d  # the seed fixes the shuffles


def test_vs_table(capsys):
    assert main(["evaluate", "--gold", GOLD, "--pred", PRED, "--vs", PRED_B, "--shuffles", "100"]) == 0
    out = capsys.readouterr().out
    assert "Approximate randomization over notes, 100 shuffles" in out
    assert any(line.startswith("strict F1            0.471   0.222   +0.248") for line in out.splitlines())


def test_ranking_from_several_preds_and_from_a_runs_directory(tmp_path, capsys):
    assert main(["evaluate", "--gold", GOLD, "--pred", PRED_B, PRED, "--shuffles", "100"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split()[0] for line in lines[2:4]]
    assert rows == ["pred", "pred_b"]  # 8/17 above 2/9
    runs = tmp_path / "runs"
    shutil.copytree(PRED, runs / "A")
    shutil.copytree(PRED_B, runs / "B")
    assert main(["evaluate", "--gold", GOLD, "--pred", str(runs), "--shuffles", "100", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in d["systems"]] == ["A", "B"]
    assert d["systems"][0]["strict"]["f1"] == pytest.approx(8 / 17)
    assert set(d["systems"][0]["vs_next"]) == {"strict_f1", "relaxed_f1", "discontiguous_f1", "strict_accuracy",
                                               "relaxed_accuracy"}
    assert d["systems"][1]["vs_next"] == {}


def _one_line_error(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


def test_offset_past_note_end_is_one_line(tmp_path, capsys):
    (tmp_path / "exact.pipe.txt").write_text("exact.txt||Disease_Disorder||C1||20||99\n")
    err = _one_line_error(capsys, ["evaluate", "--gold", GOLD, "--pred", str(tmp_path), "--text", TEXT])
    assert err == (
        f"share-ner: error: {tmp_path / 'exact.pipe.txt'}:1: span 20-99 of note exact "
        "ends past the note's end (28 characters)\n"
    )


def test_malformed_prediction_is_one_line(tmp_path, capsys):
    (tmp_path / "a.ann").write_text("T1\tDisease_Disorder 3 1\tx\n")
    err = _one_line_error(capsys, ["evaluate", "--gold", GOLD, "--pred", str(tmp_path)])
    assert err.endswith("a.ann:1: span 3-1: expected start < end\n")


def test_extra_note_needs_allow_extra(tmp_path, capsys):
    shutil.copytree(PRED, tmp_path / "p")
    (tmp_path / "p" / "stray.pipe.txt").write_text("stray.txt||Disease_Disorder||C1||0||2\n")
    err = _one_line_error(capsys, ["evaluate", "--gold", GOLD, "--pred", str(tmp_path / "p")])
    assert "1 predicted note(s) have no gold annotations: stray" in err
    assert main(["evaluate", "--gold", GOLD, "--pred", str(tmp_path / "p"), "--allow-extra", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["n_pred"] == 9
    assert "1 predicted note(s) without gold were left out: stray" in err


def test_missing_gold_path_is_one_line(tmp_path, capsys):
    err = _one_line_error(capsys, ["evaluate", "--gold", str(tmp_path / "no"), "--pred", PRED])
    assert "no such file or directory" in err


def test_by_doc_table(capsys):
    assert main(["evaluate", "--gold", GOLD, "--pred", PRED, "--by-doc"]) == 0
    rows = {line.split()[0]: line.split()[1:] for line in capsys.readouterr().out.splitlines() if line.strip()}
    # n_gold, n_pred, strict_tp, relaxed_tp, cui_correct, disc_gold, disc_pred, disc_tp, as counted in
    # test_eval_scoring.py
    assert rows["twopred"] == ["1", "2", "0", "1", "0", "0", "0", "0"]
    assert rows["missing"] == ["1", "0", "0", "0", "0", "0", "0", "0"]
    assert rows["discont"] == ["1", "1", "0", "1", "0", "1", "0", "0"]


def test_vs_with_several_systems_is_one_line(capsys):
    err = _one_line_error(capsys, ["evaluate", "--gold", GOLD, "--pred", PRED, PRED_B, "--vs", GOLD])
    assert "--vs and --by-note need exactly one --pred" in err
