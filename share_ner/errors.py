"""User-facing errors.

Every error a user can cause by their input is a :class:`ShareNerError`; the
CLI prints it as one line and exits with status 2. Messages name files, line
numbers, note ids and offsets, never note text (notes carry PHI).
"""

from __future__ import annotations

from os import PathLike
from typing import Sequence


class ShareNerError(Exception):
    """An error caused by the user's input or settings, reported in one line."""


class InputError(ShareNerError):
    """Bad content in an input file, located by path and (optionally) line number."""

    def __init__(self, path: str | PathLike[str] | None, message: str, line: int | None = None) -> None:
        self.path = None if path is None else str(path)
        self.line = line
        self.message = message
        where = self.path or "<input>"
        if line is not None:
            where = f"{where}:{line}"
        super().__init__(f"{where}: {message}")

    def __reduce__(self):  # picklable, so worker processes can report it
        return (type(self), (self.path, self.message, self.line))


def some_of(names: Sequence[str], n: int = 5) -> str:
    """The first ``n`` of ``names`` for a message, and how many more there are: "a, b, c and 7 more"."""
    shown = ", ".join(names[:n])
    return shown + (f" and {len(names) - n} more" if len(names) > n else "")
