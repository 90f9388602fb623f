"""The ``share-ner`` command line: argument parsing only; the work is done by library functions.

Each subcommand lives in a module of :mod:`share_ner.commands` exposing
``register(subparsers)``, which adds its parser and sets ``func(args) -> int``.
A :class:`~share_ner.errors.ShareNerError` is printed as one line and exits 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from share_ner import __version__
from share_ner.errors import ShareNerError

# Subcommand modules under share_ner.commands, in the order --help lists them.
COMMANDS = [
    "tag",
    "train",
    "evaluate",
    "normalize",
    "attributes",
    "lexicon",
    "clusters",
    "ceiling",
    "report",
    "spark",
]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with ``only`` (one of :data:`COMMANDS`), just that subcommand's, which spares
    importing the others' modules (``evaluate`` and ``report`` import the whole scorer: a fifth of start-up)."""
    parser = argparse.ArgumentParser(
        prog="share-ner",
        description="Find disorder mentions in clinical notes and normalize them to UMLS CUIs "
        "(ShARe/CLEF eHealth 2013 Task 1).",
    )
    parser.add_argument("--version", action="version", version=f"share-ner {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in [only] if only in COMMANDS else COMMANDS:
        importlib.import_module(f"share_ner.commands.{name}").register(sub)
    return parser


def _command(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names: its first word that is not an option (the top level takes no values)."""
    return next((a for a in argv if not a.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_command(argv))
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except ShareNerError as exc:
        print(f"share-ner: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("share-ner: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
