"""The ``share-ner`` command line: argument parsing only; the work is done by library functions.

Each subcommand lives in a module of :mod:`share_ner.commands` exposing
``register(subparsers)``, which adds its parser and sets ``func(args) -> int``.
A :class:`~share_ner.errors.ShareNerError` (or an ``OSError``) is printed as one line and exits 2; any other
exception is a fault of share-ner's own, printed as one line naming its type and place (exit 1).
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import os
import sys
import threading
import traceback
from pathlib import Path
from typing import Sequence

from share_ner import __version__
from share_ner.collector import collect_less
from share_ner.errors import ShareNerError

# One OpenBLAS thread unless the user sets otherwise: notes are spread over processes (--jobs), not BLAS threads,
# and starting OpenBLAS's thread pool costs more than the small products of one note gain. Set before numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# Set to show the traceback of an internal error instead of its one line.
DEBUG_ENV = "SHARE_NER_DEBUG"

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
    "model",
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
    except OSError as exc:  # the system refused a file operation: its message names the file, not note text
        print(f"share-ner: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a fault of share-ner's own: one line, without the message (it may quote a note)
        if os.environ.get(DEBUG_ENV):
            raise
        frames = traceback.extract_tb(exc.__traceback__)
        where = f" in {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
        print(f"share-ner: internal error: {type(exc).__name__}{where}; please report it (set {DEBUG_ENV}=1 for "
              "the traceback, which may quote note text)", file=sys.stderr)
        return 1


def entry() -> None:
    """The ``share-ner`` console script: :func:`main`, then the exit.

    When :func:`main` leaves no thread running, the process ends without Python's teardown: the exit handlers run
    (logging, multiprocessing, temporary folders) and the standard streams are flushed, but the model's
    millions of objects are not freed one by one (a noticeable part of a short run's CPU time; the system
    reclaims the memory at once). Every file the commands write is closed before :func:`main` returns. The
    process's garbage collector runs less often (:func:`share_ner.collector.collect_less`), imports included.
    """
    collect_less()
    code = main()
    if threading.active_count() > 1:
        sys.exit(code)  # Python's exit waits for those threads
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            pass
        except (OSError, ValueError):
            code = code or 120  # what Python's exit gives when flushing the standard streams fails
    os._exit(code)


if __name__ == "__main__":
    entry()
