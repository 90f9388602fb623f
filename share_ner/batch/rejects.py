"""The rejects file: one line per note that could not be tagged (source, note id, row, byte offset, reason), never
note text unless asked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from share_ner.io import atomic_write_text

REJECTS_NAME = "rejects.tsv"


@dataclass(frozen=True)
class Reject:
    """A record that could not be tagged: where it came from (file, note id, CSV row and byte offset of the
    record; empty when unknown or not applicable), and why. Never note text, unless the user asked for it."""

    source: str
    note_id: str
    reason: str
    row: int | None = None
    byte: int | None = None

    COLUMNS = ("source", "note_id", "row", "byte", "reason")

    def to_line(self) -> str:
        values = (self.source, self.note_id, "" if self.row is None else str(self.row),
                  "" if self.byte is None else str(self.byte), self.reason)
        return "\t".join(_clean(v) for v in values) + "\n"

    def where(self) -> str:
        """Where the reject is, in words, for stderr: ``note 174 (row 3, byte 1042)``."""
        at = ", ".join(x for x in (f"row {self.row}" if self.row is not None else "",
                                   f"byte {self.byte}" if self.byte is not None else "") if x)
        if not self.note_id:  # a row or line without a usable id
            return at or "an input without a note id"
        return f"note {self.note_id}" + (f" ({at})" if at else "")


def _clean(value: str) -> str:
    return re.sub(r"[\t\r\n]+", " ", value)


class _RejectLog:
    """The rejects file: appended as the run goes, deduplicated against an earlier run's lines."""

    HEADER = "\t".join(Reject.COLUMNS) + "\n"

    def __init__(self, path: Path | None, stream: TextIO | None) -> None:
        self.path = path
        self.stream = stream
        self.seen: set[str] = set()
        self.file: TextIO | None = None
        if path is not None:
            if path.exists():
                lines = path.read_text(encoding="utf-8").split("\n")
                tabs = len(Reject.COLUMNS) - 1
                self.seen = {ln + "\n" for ln in lines[1:] if ln.count("\t") == tabs}
                # rewrite without a line cut by a crash
                atomic_write_text(path, self.HEADER + "".join(ln + "\n" for ln in lines[1:] if ln + "\n" in self.seen))
            else:
                atomic_write_text(path, self.HEADER)

    def add(self, reject: Reject) -> None:
        line = reject.to_line()
        if self.path is not None:
            if line in self.seen:
                return
            self.seen.add(line)
            if self.file is None:
                self.file = open(self.path, "a", encoding="utf-8", newline="")
            self.file.write(line)
            self.file.flush()
        elif self.stream is not None:
            print(f"share-ner: rejected {reject.source} {reject.where()}: {reject.reason}", file=self.stream)

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None
