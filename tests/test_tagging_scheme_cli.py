"""The ``share-ner ceiling`` command."""

from __future__ import annotations

import json

from share_ner.cli import main

TEXT = "The aortic root and ascending aorta are moderately dilated.\nBehcet diseases.\nNo pain.\n"
# aortic root … dilated, ascending aorta … dilated, "Behcet disease" (ends inside a token), pain
GOLD = (
    "a.txt||Disease_Disorder||CUI-less||4||15||51||58\n"
    "a.txt||Disease_Disorder||CUI-less||20||35||51||58\n"
    "a.txt||Disease_Disorder||CUI-less||60||74\n"
    "a.txt||Disease_Disorder||CUI-less||80||84\n"
)


def write_corpus(tmp_path, gold=GOLD):
    (tmp_path / "text").mkdir()
    (tmp_path / "gold").mkdir()
    (tmp_path / "text" / "a.txt").write_text(TEXT, encoding="utf-8", newline="")
    (tmp_path / "gold" / "a.pipe.txt").write_text(gold, encoding="utf-8")
    return str(tmp_path / "text"), str(tmp_path / "gold")


def test_ceiling_json(tmp_path, capsys):
    text, gold = write_corpus(tmp_path)
    assert main(["ceiling", "--text", text, "--gold", gold, "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert (r["mentions"], r["survived"], r["discontiguous"], r["discontiguous_survived"]) == (4, 3, 2, 2)
    assert r["lost"] == {"inexact": 1, "whitespace": 0, "crossing": 0, "dropped": 0, "misdecoded": 0}


def test_ceiling_names_a_span_that_takes_in_the_line_end(tmp_path, capsys):
    # "prostate cancer\r": the gold span runs past the sentence's last token onto the line's "\r"; the tokens
    # hold the mention, but no predicted span ends on whitespace: lost, and not to an overlap
    (tmp_path / "text").mkdir()
    (tmp_path / "gold").mkdir()
    text = "History of prostate cancer\r\nNo fever.\r\n"
    (tmp_path / "text" / "b.txt").write_text(text, encoding="utf-8", newline="")
    start = text.index("prostate")
    (tmp_path / "gold" / "b.pipe.txt").write_text(
        f"b.txt||Disease_Disorder||CUI-less||{start}||{text.index(chr(13)) + 1}\n"
        f"b.txt||Disease_Disorder||CUI-less||{text.index('fever')}||{text.index('fever') + 5}\n", encoding="utf-8")
    assert main(["ceiling", "--text", str(tmp_path / "text"), "--gold", str(tmp_path / "gold"), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert (r["mentions"], r["survived"]) == (2, 1)
    assert r["lost"] == {"inexact": 0, "whitespace": 1, "crossing": 0, "dropped": 0, "misdecoded": 0}
    assert main(["ceiling", "--text", str(tmp_path / "text"), "--gold", str(tmp_path / "gold")]) == 0
    assert "lost: boundary on whitespace        1" in capsys.readouterr().out


def test_ceiling_table_bio(tmp_path, capsys):
    text, gold = write_corpus(tmp_path)
    assert main(["ceiling", "--text", text, "--gold", gold, "--scheme", "bio"]) == 0
    out = capsys.readouterr().out
    assert "1 / 4 survive (25.00%)" in out
    assert "0 / 2 survive (0.00%)" in out


def test_ceiling_mention_past_note_end_is_one_line_error(tmp_path, capsys):
    text, gold = write_corpus(tmp_path, GOLD + "a.txt||Disease_Disorder||CUI-less||90||400\n")
    assert main(["ceiling", "--text", text, "--gold", gold]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "400" in err and "a" in err
