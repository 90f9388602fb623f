"""CLI subcommands, one module each, with ``register(subparsers)``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from share_ner.batch.lock import RUN_NAME
from share_ner.errors import ShareNerError
from share_ner.io import atomic_write_text


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type`` for integers of at least ``minimum``."""

    def parse(value: str) -> int:
        try:
            n = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not an integer") from None
        if n < minimum:
            raise argparse.ArgumentTypeError(f"{n} is not at least {minimum}")
        return n

    return parse


OVERWRITE_HELP = "replace an output that holds something else than an earlier run of this command wrote"


def starts_with(*prefixes: str) -> Callable[[Path], bool]:
    """A test of ``prepare_output_file``: the file begins with one of ``prefixes`` (case-insensitive): the first
    line of the files a command writes (a header, ``<!DOCTYPE html>``)."""
    wanted = [p.lower().encode("utf-8") for p in prefixes]

    def test(path: Path) -> bool:
        try:
            with open(path, "rb") as f:
                head = f.read(max(map(len, wanted))).lower()
        except OSError:
            return False
        return any(head.startswith(p) for p in wanted)

    return test


def prepare_output_file(path: str | Path, overwrite: bool, ours: Callable[[Path], bool], what: str) -> Path:
    """The file ``--out`` names, its folder created. An existing file is replaced when it is ``what`` (``ours``: a
    rerun), or with ``--overwrite``; anything else there is one error line naming ``--overwrite``."""
    path = Path(path)
    if path.is_dir():
        raise ShareNerError(f"{path}: is a folder; --out names the file to write ({what})")
    if path.exists() and not overwrite and not ours(path):
        raise ShareNerError(f"{path}: exists and is not {what}; give --overwrite to replace it, or another --out")
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def claim_output_folder(out: Path, command: str, targets: Iterable[Path], overwrite: bool) -> None:
    """Record in ``out`` (``run.json``) that ``command`` writes into it. Another run's record, or files it would
    replace that an earlier run of the same command did not write (gold files, another command's outputs), are one
    error line naming ``--overwrite``; a rerun of the command replaces its own outputs."""
    record = out / RUN_NAME
    try:
        earlier = json.loads(record.read_text(encoding="utf-8")) if record.is_file() else None
    except (OSError, ValueError):
        earlier = None
    if not overwrite and not (isinstance(earlier, dict) and earlier.get("command") == command):
        clash = record if record.exists() else next((t for t in targets if t.exists()), None)
        if clash is not None:  # another run's record too: one folder holds one run
            raise ShareNerError(f"{out}: holds {clash.name}, which this run would replace, and no earlier run of "
                                f"{command} wrote it; give --overwrite to replace it, or another --out")
    atomic_write_text(record, json.dumps({"command": command}, indent=1) + "\n")


def read_note_inputs(path: str | Path | Sequence[str | Path], encoding: str = "utf-8") -> dict[str, Any]:
    """:func:`share_ner.inputs.files.read_notes`, with the other files of the folders named in one warning line on
    stderr (a folder of ``.doc`` or extensionless exports would otherwise give fewer notes, silently)."""
    from share_ner.inputs.files import read_notes, skipped_files_line

    skipped: list[Path] = []
    notes = read_notes(path, encoding, skipped)
    warning = skipped_files_line(skipped)
    if warning:
        print(f"share-ner: warning: {warning}", file=sys.stderr)
    return notes
