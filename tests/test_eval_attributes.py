"""Task 2a scores (``share_ner.eval.attributes``) and ``share-ner evaluate`` on gold with attributes, counted by
hand."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from share_ner.cli import main
from share_ner.document import Attributes, Mention
from share_ner.eval import attributes as task2
from share_ner.formats.jsonl import write_jsonl
from share_ner.formats.share2014 import write_share2014


def M(doc: str, s: int, e: int, **values: str) -> Mention:
    return Mention(doc, ((s, e),), attributes=Attributes(**values))


GOLD = {
    "a": [M("a", 0, 5, negation="yes", doctime="before"), M("a", 10, 15), M("a", 20, 25, subject="family_member")],
    "b": [M("b", 0, 4, negation="yes")],
}
PRED = {
    "a": [M("a", 0, 5, negation="yes"), M("a", 10, 15, negation="yes"), M("a", 20, 26, subject="family_member")],
    "b": [Mention("b", ((0, 4),))],  # no attributes: the defaults
}
# By hand: pairs matched by span: (0,5) (10,15) in a, (0,4) in b -> n = 3; (20,25) has no partner.
# negation: agree on (0,5) only -> 1/3; tp 1, gold not default 2 ((0,5), b), predicted not default 2 -> P = R = 1/2
# doctime: (0,5) before vs overlap wrong, the other two agree -> 2/3; tp 0, gold 1, pred 0 -> P = R = F1 = 0
# the seven other attributes agree on all three pairs -> 3/3, no values other than the default
# overall: (1 + 2 + 7 * 3) / (9 * 3) = 24 / 27


def test_hand_counted_scores():
    s = task2.score_attributes(GOLD, PRED).to_dict()
    assert s["overall"] == {"accuracy": pytest.approx(24 / 27), "n": 3}
    assert s["negation"] == {"accuracy": pytest.approx(1 / 3), "precision": 0.5, "recall": 0.5, "f1": 0.5,
                             "correct": 1, "tp": 1, "gold_pos": 2, "pred_pos": 2}
    assert s["doctime"] == {"accuracy": pytest.approx(2 / 3), "precision": 0.0, "recall": 0.0, "f1": 0.0,
                            "correct": 2, "tp": 0, "gold_pos": 1, "pred_pos": 0}
    for name in ("uncertainty", "subject", "conditional", "generic", "course", "severity", "body_location"):
        assert s[name]["accuracy"] == 1.0 and s[name]["gold_pos"] == 0 and s[name]["pred_pos"] == 0


def test_rows_per_note_sum_to_the_totals():
    table = task2.count_corpus(GOLD, PRED)
    assert table.shape == (2, len(task2.COLUMNS))
    col = task2.COLUMNS.index("negation.correct")
    assert table[:, 0].tolist() == [2, 1] and table[:, col].tolist() == [1, 0]
    assert np.array_equal(table.sum(axis=0), task2.score_attributes(GOLD, PRED).totals)


def test_gold_without_attributes_is_not_scored_for_them():
    plain = {"a": [Mention("a", ((0, 5),))]}
    assert not task2.has_attributes(plain)
    assert task2.score_attributes(plain, PRED).to_dict()["overall"]["n"] == 0


def _write(tmp_path: Path) -> tuple[str, str, str]:
    gold, pred, same = tmp_path / "gold", tmp_path / "pred", tmp_path / "same"
    for d in (gold, pred, same):
        d.mkdir()
    for doc_id, ms in GOLD.items():
        write_share2014(gold / f"{doc_id}.pipe.txt", ms)
        write_share2014(same / f"{doc_id}.pipe.txt", ms)
    write_jsonl(pred / "pred.jsonl", [(d, ms, None) for d, ms in PRED.items()])
    return str(gold), str(pred), str(same)


def test_evaluate_json_and_table(tmp_path: Path, capsys):
    gold, pred, _ = _write(tmp_path)
    assert main(["evaluate", "--gold", gold, "--pred", pred, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["attributes"]["negation"]["accuracy"] == pytest.approx(1 / 3)
    assert out["attributes"]["negation"]["f1"] == 0.5
    assert out["attributes"]["overall"]["accuracy"] == pytest.approx(24 / 27)
    assert main(["evaluate", "--gold", gold, "--pred", pred]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "negation          0.333   0.500   0.500   0.500      2      2" in lines
    assert any(line.startswith("overall           0.889   over 3 gold mentions") for line in lines)


def test_evaluate_vs_tests_the_attribute_metrics(tmp_path: Path, capsys):
    gold, pred, same = _write(tmp_path)
    assert main(["evaluate", "--gold", gold, "--pred", same, "--vs", pred, "--json", "--shuffles", "200"]) == 0
    sig = json.loads(capsys.readouterr().out)["significance"]
    neg = sig["attributes.negation.accuracy"]
    assert neg["a"] == 1.0 and neg["b"] == pytest.approx(1 / 3) and 0 < neg["p_value"] <= 1
    assert sig["attributes.generic.accuracy"]["p_value"] == 1.0  # the same on every note: no difference
    assert "strict_f1" in sig and "attributes.overall.accuracy" in sig
