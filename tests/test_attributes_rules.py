"""The ConText rules loader: the packaged file loads; every bad line is one error naming the file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from share_ner.attributes import load_rules, packaged_rules, parse_rules
from share_ner.attributes.rules import DIRECTIONS, PSEUDO, TERMINATE
from share_ner.cli import main
from share_ner.document import ATTRIBUTE_VALUES
from share_ner.errors import InputError


def test_packaged_rules_cover_every_kind():
    rules = packaged_rules()
    kinds = {r.attribute for r in rules}
    assert {"negation", "uncertainty", "subject", "conditional", "doctime", PSEUDO, TERMINATE} <= kinds
    assert {r.direction for r in rules if r.attribute in ATTRIBUTE_VALUES} == set(DIRECTIONS)
    # no rule sets a default value (that would be a removal), and phrases are normalized
    assert all(r.value != ATTRIBUTE_VALUES[r.attribute][0] for r in rules if r.attribute in ATTRIBUTE_VALUES)
    assert all(r.phrase == " ".join(r.phrase.lower().split()) for r in rules)


@pytest.mark.parametrize("line,message", [
    ("no\tnegation\tyes", "expected 4 or 5 tab-separated columns"),
    ("no\tnegation\tyes\tforward\t3\textra", "expected 4 or 5 tab-separated columns"),
    ("negative for\tnegation\tyes\tforward\t2", "the rule of line 3 again"),
    ("no\tnegativity\tyes\tforward", "unknown attribute 'negativity'"),
    ("no\tnegation\tmaybe\tforward", "negation value 'maybe' is not one of no, yes"),
    ("no\tnegation\tyes\tsideways", "unknown direction 'sideways'"),
    ("no\tnegation\tyes\tforward\tfive", "window 'five' is not a whole number"),
    ("no\tnegation\tyes\tforward\t0", "window '0' is not a whole number"),
    ("no increase\tpseudo\tnegation\t-", "value 'negation' for a pseudo rule"),
    ("but\tterminate\tnegation,mood\t-", "terminate value 'negation,mood'"),
    ("but\tterminate\t*\tforward", "direction 'forward' for a terminate rule; expected '-' or 'clause'"),
    ("no increase\tpseudo\t*\tclause", "direction 'clause' for a pseudo rule; expected '-'"),
    ("@negation\tuncertainty\tyes\tforward", "'@negation': '@' and an attribute name is the phrase of a terminate"),
    ("@mood\tterminate\tnegation\t-", "'@mood': '@' and an attribute name is the phrase of a terminate"),
    ("cross off\tnegation\tyes\taround", "needs two parts joined by '...'"),
    ("cross ... off\tnegation\tyes\tforward", "only for direction 'around'"),
    ("family history\tsubject\tfamily_member\tsection\t3", "a section rule takes no window"),
    ("\tnegation\tyes\tforward", "empty phrase"),
    ("mother|\tsubject\tfamily_member\tforward", "'mother|': an empty alternative"),
    ("negative|positive for\tnegation\tyes\tforward", "the rule of line 3 again (same phrase, attribute and "
                                                     "direction: 'negative for')"),
])
def test_bad_lines_name_file_and_line(tmp_path: Path, line: str, message: str):
    path = tmp_path / "site.tsv"
    path.write_text(f"# a site's rules\n\nnegative for\tnegation\tyes\tforward\n{line}\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_rules(path)
    assert str(exc.value).startswith(f"{path}:4: ")
    assert message in str(exc.value)


def test_a_site_file_overrides_the_packaged_rule(tmp_path: Path):
    path = tmp_path / "site.tsv"
    path.write_text("denies\tnegation\tyes\tforward\t2\r\nno\tnegation\tno\tforward\r\n", encoding="utf-8")
    rules = {r.key: r for r in load_rules(path)}
    assert rules[("denies", "negation", "forward", "")].window == 2
    assert rules[("denies", "negation", "forward", "")].source == f"{path}:1"
    assert ("no", "negation", "forward", "") not in rules  # the default value removes the packaged rule
    assert len(rules) == len(packaged_rules()) - 1


def test_word_alternatives_spell_one_rule_each():
    rules = parse_rules("mother|father has|had\tsubject\tfamily_member\tforward\t8\n", "x.tsv")
    assert sorted(r.phrase for r in rules) == ["father had", "father has", "mother had", "mother has"]
    assert {(r.attribute, r.value, r.direction, r.window, r.source) for r in rules} == \
        {("subject", "family_member", "forward", 8, "x.tsv:1")}


def test_parse_rules_reads_comments_and_blank_lines():
    rules = parse_rules("# comment\n\n  \nrule  out\tuncertainty\tyes\tforward\n", "x.tsv")
    assert [(r.phrase, r.source) for r in rules] == [("rule out", "x.tsv:4")]


def test_cli_bad_rules_file_is_one_line_exit_2(tmp_path: Path, capsys):
    (tmp_path / "text").mkdir()
    (tmp_path / "text" / "n1.txt").write_text("No fever.\n", encoding="utf-8")
    (tmp_path / "gold").mkdir()
    (tmp_path / "gold" / "n1.pipe.txt").write_text("n1.txt||Disease_Disorder||CUI-less||3||8\n", encoding="utf-8")
    rules = tmp_path / "site.tsv"
    rules.write_text("no\tnegation\tyes\tupward\n", encoding="utf-8")
    code = main(["attributes", str(tmp_path / "text"), "--mentions", str(tmp_path / "gold"),
                 "--out", str(tmp_path / "out"), "--context-rules", str(rules)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and f"{rules}:1: unknown direction 'upward'" in err
    assert "Traceback" not in err


def test_clause_terminators_and_trigger_classes_load():
    rules = parse_rules(", and\tterminate\tnegation\tclause\n@negation\tterminate\tuncertainty\t-\n", "r.tsv")
    assert [(r.phrase, r.direction, sorted(r.terminates)) for r in rules] == [
        (", and", "clause", ["negation"]), ("@negation", "-", ["uncertainty"])]
    # a file of the earlier format (every terminator '-') loads as it did: the packaged one still has such lines
    assert any(r.attribute == TERMINATE and r.direction == "-" for r in packaged_rules())
