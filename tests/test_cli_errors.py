"""The command line's last resort: an exception that is not the user's input is one line, never a traceback."""

from __future__ import annotations

import pytest


def test_an_internal_error_is_one_line_without_its_message(monkeypatch, capsys) -> None:
    """A fault of share-ner's own (not the user's input): one line naming its type and place, exit 1; its message,
    which may quote a note, is left out unless SHARE_NER_DEBUG is set."""
    from share_ner import cli
    from share_ner.commands import model as model_command

    def broken(args):
        raise ValueError("He has chest pain")  # a message quoting a note

    monkeypatch.setattr(model_command, "run_check", broken)
    assert cli.main(["model", "check", "x"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: ValueError in test_cli_errors.py:" in err and "chest" not in err
    monkeypatch.setenv(cli.DEBUG_ENV, "1")
    with pytest.raises(ValueError):
        cli.main(["model", "check", "x"])
