"""Where a batch's mentions go: one file per note, a stream (stdout), or shards of a CSV export with their
manifest; every file written atomically so that a stopped run resumes.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence, TextIO

from share_ner.batch.rejects import Reject
from share_ner.document import Document, Mention
from share_ner.formats import SUFFIXES, write_annotations
from share_ner.formats.jsonl import format_record
from share_ner.formats.parquet import mention_rows, write_parquet
from share_ner.formats.share import format_pipe
from share_ner.formats.share2014 import format_share2014
from share_ner.inputs.contract import table_note_id
from share_ner.io import atomic_write_text

if TYPE_CHECKING:  # annotations only: the CLI reads this module to build its parser, and annotate loads the pipeline
    from share_ner.batch.annotate import NoteResult

DEFAULT_SHARD_SIZE = 1000


MANIFEST_NAME = "manifest.ndjson"  # not *.jsonl: annotation readers must not take it for a shard


TMP_MARK = ".tmp"


_TMP_RE = re.compile(r"^\..+\.tmp\d+$")


# ---------------------------------------------------------------- output writers


def _jsonl_line(doc: Document, mentions: Sequence[Mention]) -> str:
    return format_record(doc.id, mentions, doc.text) + "\n"


def per_note_file_name(doc_id: str, fmt: str) -> str:
    """The output file name of one note in format ``fmt`` (``<doc>.pipe.txt``, ``<doc>.ann``, ``<doc>.jsonl``)."""
    return f"{doc_id}{SUFFIXES[fmt]}"


class _Sink:
    """Where the results of one input go."""

    def add(self, item: "_Item", result: NoteResult | None) -> None:
        raise NotImplementedError

    def end(self, complete: bool) -> None:
        """The input ended (``complete=False``: cut short by a read error)."""

    def abort(self) -> None:
        """The run stops: discard unfinished work."""


class _NoteFileSink(_Sink):
    def __init__(self, out_dir: Path, fmt: str) -> None:
        self.out_dir = out_dir
        self.fmt = fmt
        self.made: set[Path] = set()

    def output_path(self, rel_dir: Path, doc_id: str) -> Path:
        return self.out_dir / rel_dir / per_note_file_name(doc_id, self.fmt)

    def add(self, item: "_Item", result: NoteResult | None) -> None:
        if result is None or item.doc is None:
            return
        directory = self.out_dir / item.key
        if directory not in self.made:
            directory.mkdir(parents=True, exist_ok=True)
            self.made.add(directory)
        if self.fmt == "brat":  # brat shows a note from its .txt beside the .ann: written first, so a done .ann has it
            text = directory / f"{item.doc.id}.txt"
            if not (item.source and text.exists() and text.samefile(item.source)):  # not the note itself
                atomic_write_text(text, item.doc.text)
        write_annotations(directory, item.doc, result.mentions, self.fmt)

    def mentions_in(self, path: Path) -> int:
        """How many mentions the output file of an earlier run holds."""
        text = path.read_text(encoding="utf-8")
        if self.fmt in ("share", "share2014"):  # one mention a line
            return sum(1 for line in text.split("\n") if line.strip())
        if self.fmt == "brat":
            return sum(1 for line in text.split("\n") if line.startswith("T"))
        return sum(len(json.loads(line).get("mentions", ())) for line in text.split("\n") if line.strip())


class _StreamSink(_Sink):
    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def add(self, item: "_Item", result: NoteResult | None) -> None:
        if result is not None and item.doc is not None:
            doc = item.doc
            if isinstance(item.key, Path) and item.key.parts:  # one stream: a note below a sub-directory by its path
                doc = Document(table_note_id(item.key.as_posix(), doc.id), doc.text)
            self.stream.write(_jsonl_line(doc, result.mentions))


class _ShardSink(_Sink):
    """Consecutive selected rows of one CSV export, ``size`` per shard, each shard written then renamed."""

    def __init__(self, directory: Path, fmt: str, size: int) -> None:
        self.directory = directory
        self.fmt = fmt
        self.size = size
        self.suffix = {"jsonl": ".jsonl", "parquet": ".parquet"}.get(fmt, ".pipe.txt")
        self.rows: list[dict[str, Any]] = []  # parquet: the shard's mention rows, written when it closes
        self.manifest = directory / MANIFEST_NAME
        self.done: dict[int, dict[str, Any]] = {}
        self.current: int | None = None
        self.file: TextIO | None = None
        self.tmp: Path | None = None
        self.stats: dict[str, Any] = {}

    def shard_name(self, index: int) -> str:
        return f"part-{index:05d}{self.suffix}"

    def prepare(self, fresh: bool = False) -> None:
        """Read the manifest of an earlier run; a shard is done when listed complete and present. ``fresh``:
        remove an earlier run's shards and manifest instead (every row is tagged again)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        if fresh:
            for path in self.directory.glob(f"part-*{self.suffix}"):
                path.unlink(missing_ok=True)
            self.manifest.unlink(missing_ok=True)
        if not self.manifest.exists():
            return
        for line in self.manifest.read_text(encoding="utf-8").split("\n"):
            try:
                entry = json.loads(line)
                index = int(entry["index"])
            except (ValueError, KeyError, TypeError):
                continue  # a line cut by a crash: its shard was never renamed into place
            if entry.get("complete") and (self.directory / str(entry.get("shard"))).exists():
                self.done[index] = entry
            else:
                self.done.pop(index, None)
        # Keep only the shards that will be skipped, so that the resumed manifest equals an uninterrupted one.
        self._write_manifest()

    def is_done(self, item_index: int) -> bool:
        return item_index // self.size in self.done

    def earlier(self, item_index: int) -> dict[str, int] | None:
        """The counts of a done shard, given with its first row (so counted once)."""
        if item_index % self.size:
            return None
        entry = self.done[item_index // self.size]
        return {k: int(entry.get(k, 0)) for k in ("notes", "mentions", "tokens", "characters")}

    def _open(self, index: int, item: "_Item") -> None:
        self.current = index
        self.tmp = self.directory / f".{self.shard_name(index)}{TMP_MARK}{os.getpid()}"
        self.file = open(self.tmp, "w", encoding="utf-8", newline="")
        self.rows = []
        self.stats = {"index": index, "shard": self.shard_name(index), "first_row": item.row, "last_row": item.row,
                      "notes": 0, "mentions": 0, "tokens": 0, "characters": 0, "rejected": 0, "items": 0}

    def add(self, item: "_Item", result: NoteResult | None) -> None:
        try:
            self._add(item, result)
        except OSError as exc:
            if exc.filename is None and self.tmp is not None:  # a write to the open shard: name it
                raise OSError(exc.errno, exc.strerror, str(self.tmp)) from None
            raise

    def _add(self, item: "_Item", result: NoteResult | None) -> None:
        index = item.key // self.size
        if self.current != index:
            if self.current is not None:  # cannot happen with contiguous items; keep what was written
                self._close(complete=False)
            self._open(index, item)
        assert self.file is not None
        self.stats["last_row"] = item.row
        self.stats["items"] += 1
        if result is None or item.doc is None:
            self.stats["rejected"] += 1
        else:
            self.stats["notes"] += 1
            self.stats["mentions"] += len(result.mentions)
            self.stats["tokens"] += result.tokens
            self.stats["characters"] += len(item.doc.text)
            if self.fmt == "jsonl":
                self.file.write(_jsonl_line(item.doc, result.mentions))
            elif self.fmt == "parquet":
                self.rows += mention_rows(item.doc.id, result.mentions, item.doc.text)
            elif self.fmt == "share2014":
                self.file.write(format_share2014(result.mentions))
            else:
                self.file.write(format_pipe(result.mentions))
        if self.stats["items"] == self.size:
            self._close(complete=True)

    def _close(self, complete: bool) -> None:
        assert self.file is not None and self.tmp is not None
        if self.fmt == "parquet":  # into the same (truncated) file, so the fsync below covers it
            write_parquet(self.tmp, self.rows)
            self.rows = []
        self.file.flush()
        os.fsync(self.file.fileno())
        self.file.close()
        self.file = None
        entry = dict(self.stats, complete=complete)
        # The manifest line goes first: a shard file in place always has its line.
        with open(self.manifest, "a", encoding="utf-8") as m:
            m.write(json.dumps(entry) + "\n")
            m.flush()
            os.fsync(m.fileno())
        os.replace(self.tmp, self.directory / entry["shard"])
        self.done[entry["index"]] = entry
        self.tmp = None
        self.current = None

    def end(self, complete: bool) -> None:
        if self.file is not None:
            self._close(complete)
        # shards redone out of order (one deleted by hand) were appended last: put the lines in shard order
        self._write_manifest()

    def _write_manifest(self) -> None:
        atomic_write_text(self.manifest, "".join(json.dumps(self.done[k]) + "\n" for k in sorted(self.done)))

    def abort(self) -> None:
        if self.file is not None:
            try:
                self.file.close()
            except OSError:  # what it still held cannot be written (a full disk): it is discarded anyway
                pass
            self.file = None
        if self.tmp is not None:
            self.tmp.unlink(missing_ok=True)
            self.tmp = None


@dataclass
class _Item:
    """One selected record on its way through the run, in input order."""

    sink: _Sink
    key: Any  # note files: output sub-directory; CSV: index of the selected row
    source: str = ""
    doc: Document | None = None
    reject: Reject | None = None
    row: int = 0
    pos: int = 0  # CSV: bytes read so far over all CSV inputs, for the progress estimate
    done: bool = False  # complete in an earlier run
    earlier: dict[str, int] | None = None  # with done: the counts of what the earlier run wrote
    end: bool = False  # marks the end of an input (no record)
    complete: bool = True  # with end: False when the input was cut short
