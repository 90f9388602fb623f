"""De-identification placeholders: one token each, offsets kept, never a sentence end; patterns as data."""

from __future__ import annotations

from pathlib import Path

import pytest

from share_ner import placeholders
from share_ner.document import Document
from share_ner.errors import InputError
from share_ner.placeholders import load_placeholder_patterns, use_site_placeholders
from share_ner.text import split_sentences, tokenize


@pytest.fixture(autouse=True)
def _no_site_files():
    yield
    use_site_placeholders([])


@pytest.mark.parametrize("placeholder", [
    "[**Last Name (NamePattern1) 123**]", "___", "**NAME[ZZZ]", "**DATE[Jul 13 2007]", "***PATH-NUMBER[1]",
    "**INSTITUTION", "<PERSON>",
])
def test_each_style_is_one_token_with_its_offsets(placeholder: str) -> None:
    text = f"Seen by {placeholder} today for chest pain."
    tokens = tokenize(text)
    start = text.index(placeholder)
    assert [(t.text, t.start, t.end) for t in tokens if t.start == start] == [(placeholder, start, start + len(placeholder))]
    assert [t.text for t in tokens][-4:] == ["for", "chest", "pain", "."]
    assert all(text[t.start : t.end] == t.text for t in tokens)


def test_a_placeholder_never_ends_or_splits_a_sentence() -> None:
    text = "Pt **NAME[AAA, BBB]. was seen at **INSTITUTION. for chest pain on **DATE[Jul 13 2007]."
    sentences = split_sentences(Document("d", text))
    assert len(sentences) == 1
    assert "**NAME[AAA, BBB]" in [t.text for t in sentences[0].tokens]


def test_a_placeholder_after_a_full_stop_starts_a_sentence() -> None:
    sentences = split_sentences(Document("d", "Seen on **DATE[Jul 13 2007]. ***PATH-NUMBER[1] shows a mass."))
    assert [s.tokens[0].text for s in sentences] == ["Seen", "***PATH-NUMBER[1]"]


def test_glued_placeholder_is_cut_off_the_word() -> None:
    tokens = [t.text for t in tokenize("A **AGE[63]-year-old man")]
    assert tokens[:2] == ["A", "**AGE[63]"]


def test_packaged_file_loads_every_style() -> None:
    assert set(load_placeholder_patterns()) == {"mimic3", "mimic4", "starred", "tag"}


def test_site_file_adds_a_pattern(tmp_path: Path) -> None:
    site = tmp_path / "site.tsv"
    site.write_text("name\tregex\nhash\t#[A-Z]+#\n", encoding="utf-8")
    text = "Seen by #NAME# today."
    assert "#NAME#" not in [t.text for t in tokenize(text)]
    use_site_placeholders([site])
    assert [t.text for t in tokenize(text)] == ["Seen", "by", "#NAME#", "today", "."]
    assert placeholders.site_placeholder_files() == (str(site),)


def test_a_site_pattern_of_no_plain_first_character_still_matches(tmp_path: Path) -> None:
    site = tmp_path / "site.tsv"
    site.write_text("name\tregex\nmrn\t\\d{7}(?=\\s)\n", encoding="utf-8")  # a digit class: no lookahead
    use_site_placeholders([site])
    assert placeholders.placeholder_regex().pattern.startswith("(?:")
    assert [t.text for t in tokenize("MRN 1234567 on ___.")] == ["MRN", "1234567", "on", "___", "."]


@pytest.mark.parametrize("regex, firsts", [
    (r"\[\*\*x", "["), (r"_{3,}", "_"), (r"\*{2,3}[A-Z]", "*"), (r"<[A-Z]>|#x", "<#"), (r"(ab|c)d", "ac"),
    (r"[a-c_]x", "abc_"), (r"\d+", None), (r"(?i)ab", None), (r"(?i:a)b", None), (r"[^a]", None), (r"a?b", None),
    (r"\bab", None), (r"(?=a)a", None),
])
def test_first_characters_of_a_pattern(regex: str, firsts: str | None) -> None:
    got = placeholders.first_characters(regex)
    assert got == (frozenset(firsts) if firsts is not None else None)


def test_the_first_characters_lookahead_keeps_every_match() -> None:
    import random
    import re

    plain = re.compile(placeholders.alternation(load_placeholder_patterns().values()))
    led = placeholders.placeholder_regex()
    assert led.pattern.startswith("(?=[") and led.pattern != plain.pattern
    rng = random.Random(7)
    pieces = ["[**", "**]", "Hospital1 18", "__", "_", "**NAME", "[ZZZ]", "***PATH-NUMBER", "<PERSON>", "<", ">",
              "*", "[", "]", "x", " ", "\n", "a_b"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        assert [m.span() for m in led.finditer(text)] == [m.span() for m in plain.finditer(text)], text


@pytest.mark.parametrize("body, line, words", [
    ("name\tregex\nok\tabc\nbad\t[unclosed\n", 3, "bad regex"),
    ("name\tregex\nempty\tx*\n", 2, "empty string"),
    ("name\tregex\ntwo\ta\tb\n", 2, "fields"),
    ("name\tregex\nx\ta\nx\tb\n", 3, "repeated"),
    ("term\tcui\n", 1, "header"),
])
def test_bad_file_is_one_error_naming_file_and_line(tmp_path: Path, body: str, line: int, words: str) -> None:
    path = tmp_path / "p.tsv"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_placeholder_patterns(path)
    message = str(err.value)
    assert str(path) in message and f"{path}:{line}:" in message and words in message and "\n" not in message


def test_cli_bad_placeholder_file_exits_2_with_one_line(tmp_path: Path, capsys) -> None:
    from share_ner.cli import main

    bad = tmp_path / "bad.tsv"
    bad.write_text("name\tregex\nbad\t(\n", encoding="utf-8")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("Chest pain.\n", encoding="utf-8")
    assert main(["tag", str(notes), "--placeholders", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "bad.tsv:2:" in err
