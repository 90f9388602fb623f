"""One vocabulary across the command line: a note (never a document or record), a folder (never a directory), and
``--out`` an output folder (or the file to write); checked in every subcommand's ``--help``."""

from __future__ import annotations

import argparse
import re

import pytest

from share_ner.cli import build_parser, main

# words that name one thing twice: the vocabulary's word is in the comment
BANNED = re.compile(r"\b(documents?|docs?|records?|director(?:y|ies)|dirs?)\b", re.IGNORECASE)  # note, folder (DIR too)


def _command_paths(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [path]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                paths += _command_paths(sub, (*path, name))
    return paths


def _parser_of(path: tuple[str, ...]) -> argparse.ArgumentParser:
    parser = build_parser()
    for name in path:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[name]
    return parser


PATHS = _command_paths(build_parser())


def test_every_command_is_walked() -> None:
    assert ("tag",) in PATHS and ("lexicon", "build") in PATHS and ("model", "seal") in PATHS and len(PATHS) > 12


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "share-ner")
def test_help_uses_one_word_for_one_thing(path: tuple[str, ...], capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main([*path, "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: share-ner")
    # option names (--by-doc is kept as an alias) and the paths of the docs/ folder are names, not words
    words = re.sub(r"--[\w-]+|docs/\S+", " ", text)
    found = sorted({m.group(0).lower() for m in BANNED.finditer(words)})
    assert not found, f"share-ner {' '.join(path)} --help says {found}: say note, folder"


@pytest.mark.parametrize("path", [p for p in PATHS if any("--out" in a.option_strings
                                                          for a in _parser_of(p)._actions)],
                         ids=lambda p: " ".join(p))
def test_out_is_the_output_folder_or_the_file_to_write(path: tuple[str, ...]) -> None:
    out = next(a for a in _parser_of(path)._actions if "--out" in a.option_strings)
    assert out.help.startswith("output folder") or re.match(r"the [\w ]+ file to write", out.help), out.help
    assert (out.metavar == "FOLDER") == out.help.startswith("output folder")


def test_the_banned_words_are_caught() -> None:
    assert BANNED.search("a directory of notes") and BANNED.search("one Document") and BANNED.search("a bad record")
    assert not BANNED.search("recording, doctime, dirty, the docstring")
