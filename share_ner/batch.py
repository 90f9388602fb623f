"""Tagging many notes: directories of note files and MIMIC CSV exports, in worker processes.

The unit of work is the pure function :func:`annotate_note`, mapped over
notes by :func:`run_batch` (:func:`annotate_notes` hands a model's annotator a
whole batch, whose mentions it normalizes together). The model is not passed around: workers receive
a picklable *annotator factory* (e.g. ``functools.partial(load_annotator,
model_dir)``) and call it once, so each worker loads the model once.

Outputs are written atomically (temporary file, then ``os.replace``), so a
run stopped by Ctrl-C, SIGTERM or a crash is resumed by running the same
command again:

- note files give one output per note (``<doc>.pipe.txt``, ``.ann`` or
  ``.jsonl``); a note whose output exists is skipped;
- a CSV export gives shards of ``shard_size`` consecutive selected rows
  (``<out>/<csv name>/part-00000.jsonl``...); a shard is done once renamed into
  place, and ``manifest.ndjson`` beside the shards records each one's rows and
  counts. The shard being written when the run stopped is discarded and redone.

Bad input never stops the batch: an empty, binary or undecodable note, a
malformed CSV row, a duplicate note id, a truncated ``.gz``, a note whose
worker process died becomes a line of the rejects file (``source``, note id,
row, byte offset, reason; never note text unless ``show_text``).

Worker processes (:mod:`share_ner.workers`) that die are replaced: the batch a
dead worker held is tried once more, then note by note, so that only the note
that kills a worker is rejected ("worker died (signal 9)").
"""

from __future__ import annotations

import gc
import io
import json
import os
import re
import signal
import sys
import threading
import time
import traceback
from collections import Counter, deque
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence, TextIO

from share_ner.document import Document, Mention
from share_ner.errors import InputError, ShareNerError
from share_ner.formats import OUTPUT_FORMATS, SUFFIXES, write_annotations
from share_ner.formats.jsonl import format_record
from share_ner.formats.parquet import mention_rows, require_pyarrow, write_parquet
from share_ner.formats.share import format_pipe
from share_ner.formats.share2014 import format_share2014
from share_ner.mimic import BAD_ID_RE, CsvRecord, check_encoding, is_csv_path, iter_csv_notes, read_header
from share_ner.notes import atomic_write_text, doc_id_from_path, read_note, walk_note_files
from share_ner.text import SIMPLE_TOKEN

Annotator = Callable[[Document], list[Mention]]
AnnotatorFactory = Callable[[], Annotator]

DEFAULT_SHARD_SIZE = 1000
REJECTS_NAME = "rejects.tsv"
SUMMARY_NAME = "summary.json"
RUN_NAME = "run.json"
MANIFEST_NAME = "manifest.ndjson"  # not *.jsonl: annotation readers must not take it for a shard
TMP_MARK = ".tmp"
# Longer notes (spaCy's own limit on one text) are tagged in line-aligned pieces of at most PIECE_CHARS characters
# (a bound on the memory of one piece's token features), their mentions shifted back to offsets into the whole
# note.
LONG_NOTE_CHARS = 1_000_000
PIECE_CHARS = 250_000
# Workers dying this many times in a row without finishing a task: the annotator itself is at fault, not a note.
MAX_DEATHS_IN_A_ROW = 10

_TMP_RE = re.compile(r"^\..+\.tmp\d+$")


_WARM_UP = Document("warm-up", "History: chest pain and shortness of breath. No fever.\n")


class PipelineAnnotator:
    """A loaded model as an annotator: called with one note, it annotates that note; :meth:`many` annotates a
    batch with the same result, normalizing the batch's mentions together (faster: one tf-idf product, one
    embedding batch under ``dense``)."""

    def __init__(self, pipeline: Any) -> None:
        self.pipeline = pipeline

    def __call__(self, doc: Document) -> list[Mention]:
        return self.pipeline.annotate(doc)

    def many(self, docs: Sequence[Document]) -> list[list[Mention] | Exception]:
        return self.pipeline.annotate_many(docs)


def load_annotator(model_dir: str | Path, abbreviations: Mapping[str, Sequence[str]] | None = None,
                   attributes: bool = True, context_rules: str | None = None,
                   anatomy: str | None = None) -> Annotator:
    """Load a trained model and return it as a :class:`PipelineAnnotator` (the usual annotator factory);
    ``abbreviations``: a site's own list for its normalizer, instead of the model's own; ``attributes``: fill
    the ShARe/CLEF 2014 attributes (with a site's ``context_rules`` file on top of the packaged rules, and its
    ``anatomy`` lexicon for body locations instead of the packaged body sites).

    The model is tried on a one-line note, so that lazily built parts
    (tokenizer, abbreviation detector) count as start-up, not as the first note.
    """
    from share_ner.pipeline import Pipeline

    pipeline = Pipeline.load(Path(model_dir))
    if abbreviations is not None:
        if pipeline.normalizer is None:
            raise ShareNerError(f"{model_dir}: this model has no normalizer; a site abbreviation list is for "
                                "normalization")
        pipeline.normalizer.use_site_abbreviations(abbreviations)
    if not attributes or context_rules is not None or anatomy is not None:
        from share_ner.attributes import ContextMatcher

        pipeline.use_attributes(ContextMatcher.load(context_rules, anatomy) if attributes else None)
    annotate = PipelineAnnotator(pipeline)
    annotate(_WARM_UP)
    return annotate


def count_tokens(text: str) -> int:
    """The number of words and punctuation marks of ``text`` (the unit of tokens/s), counted with the
    tokenizer's own fallback pattern, :data:`share_ner.text.SIMPLE_TOKEN`."""
    return len(SIMPLE_TOKEN.findall(text))


@dataclass(frozen=True)
class NoteResult:
    """What annotating one note gave: its mentions and token count, or an error (no note text in it)."""

    doc_id: str
    mentions: tuple[Mention, ...]
    tokens: int
    error: str | None = None


def annotate_note(annotator: Annotator, doc: Document) -> NoteResult:
    """Annotate one note; an exception becomes ``NoteResult.error`` so that one bad note does not stop a batch.

    Pure and picklable with a picklable annotator: a distributed engine can map it over partitions.
    """
    return annotate_notes(annotator, [doc])[0]


def _failed(doc: Document, tokens: int, exc: BaseException) -> NoteResult:
    # Exception messages may quote the note: report only the type and where it was raised.
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" in {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return NoteResult(doc.id, (), tokens, f"annotation failed: {type(exc).__name__}{where}")


def note_pieces(text: str, limit: int = LONG_NOTE_CHARS, piece: int = PIECE_CHARS) -> list[tuple[int, int]]:
    """``(start, end)`` of the pieces ``text`` is tagged in: itself when at most ``limit`` characters, else
    consecutive pieces of at most ``piece`` characters, each cut after a line break (else after a space, else
    anywhere)."""
    if len(text) <= limit:
        return [(0, len(text))]
    limit = piece
    pieces = []
    start, n = 0, len(text)
    while n - start > limit:
        end = text.rfind("\n", start, start + limit) + 1
        if end <= start:
            end = max(text.rfind(" ", start, start + limit), text.rfind("\t", start, start + limit)) + 1
        if end <= start:
            end = start + limit
        pieces.append((start, end))
        start = end
    pieces.append((start, n))
    return pieces


def _shifted(mention: Mention, doc_id: str, offset: int) -> Mention:
    shifted = Mention(doc_id, tuple((s + offset, e + offset) for s, e in mention.spans), mention.cui, mention.type)
    return shifted if mention.attributes is None else shifted.with_attributes(mention.attributes)


def annotate_notes(annotator: Annotator, docs: Sequence[Document]) -> list[NoteResult]:
    """:func:`annotate_note` for each of ``docs``; an annotator with a ``many`` method (:class:`PipelineAnnotator`)
    gets the whole batch at once, and a failure stays with its note either way. A note over
    :data:`LONG_NOTE_CHARS` is annotated as its :func:`note_pieces`, each piece a note of its own, and its
    mentions are those of its pieces at their offsets in the whole note."""
    parts: list[Document] = []
    owner: list[tuple[int, int]] = []  # (index in docs, offset of the piece)
    for i, doc in enumerate(docs):
        for start, end in note_pieces(doc.text):
            parts.append(doc if (start, end) == (0, len(doc.text)) else Document(doc.id, doc.text[start:end]))
            owner.append((i, start))
    outs = _annotate_parts(annotator, parts)
    mentions: list[list[Mention]] = [[] for _ in docs]
    errors: list[BaseException | None] = [None] * len(docs)
    for (i, offset), out in zip(owner, outs):
        if isinstance(out, BaseException):
            errors[i] = errors[i] or out
        else:
            mentions[i].extend(out if offset == 0 else (_shifted(m, docs[i].id, offset) for m in out))
    results = []
    for doc, ms, err in zip(docs, mentions, errors):
        tokens = count_tokens(doc.text)
        results.append(_failed(doc, tokens, err) if err is not None else NoteResult(doc.id, tuple(ms), tokens))
    return results


def _annotate_parts(annotator: Annotator, docs: Sequence[Document]) -> list[list[Mention] | BaseException]:
    many = getattr(annotator, "many", None)
    if many is not None and len(docs) > 1:
        try:
            return list(many(docs))
        except Exception:  # noqa: BLE001 - then note by note, so that only the note at fault fails
            pass
    outs: list[list[Mention] | BaseException] = []
    for doc in docs:
        try:
            outs.append(list(annotator(doc)))
        except Exception as exc:  # noqa: BLE001 - a batch must survive any failure on one note
            outs.append(exc)
    return outs


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
        """The record in words, for stderr: ``note 174 (row 3, byte 1042)``."""
        at = ", ".join(x for x in (f"row {self.row}" if self.row is not None else "",
                                   f"byte {self.byte}" if self.byte is not None else "") if x)
        what = f"note {self.note_id}" if self.note_id else "a record"
        return what + (f" ({at})" if at else "")


def _clean(value: str) -> str:
    return re.sub(r"[\t\r\n]+", " ", value)


@dataclass
class BatchOptions:
    """Settings of a batch run; ``out=None`` writes JSON Lines to ``stdout``."""

    out: Path | None = None
    fmt: str | None = None  # None: share for note files, jsonl for CSV exports
    jobs: int = 1
    categories: tuple[str, ...] = ()
    limit: int | None = None
    include_errors: bool = False
    encoding: str = "utf-8"
    progress: bool = True
    rejects: Path | None = None
    shard_size: int = DEFAULT_SHARD_SIZE
    model: str = ""  # recorded in run.json: resuming with another model is refused
    batch_notes: int = 16
    batch_chars: int = 1_000_000
    # freeze the heap once the annotator is loaded (:func:`settle_heap`), also in this process when jobs == 1;
    # worker processes always do. Off by default: in a caller's process it would freeze the caller's objects.
    settle_heap: bool = False
    # jobs > 1, on Linux: load the annotator once, in this process, and fork the workers from it, so that they
    # share its memory (copy-on-write) and its start-up instead of each loading their own. Only for annotators
    # that are safe to fork (not one that has started PyTorch's thread pool); this process keeps the annotator.
    preload: bool = False
    # rejects and errors may quote the first characters of a bad record (off: they name ids, rows and offsets)
    show_text: bool = False


_THIS_RUN = ("tagged", "skipped_done", "tagged_tokens", "seconds", "startup_seconds", "jobs", "interrupted")


@dataclass
class RunSummary:
    """What the outputs hold, and what this run did.

    ``notes``, ``mentions``, ``tokens``, ``characters``, ``rejected`` and the skipped counts describe the whole
    output: a run resumed after an interruption reports what an uninterrupted run would. ``tagged`` (and
    ``tagged_tokens``) are the notes this run tagged itself, ``skipped_done`` those an earlier run had finished.
    """

    notes: int = 0
    mentions: int = 0
    rejected: int = 0
    tokens: int = 0
    characters: int = 0
    skipped_iserror: int = 0  # MIMIC-III rows flagged ISERROR = 1, left out (no --include-errors)
    skipped_category: int = 0  # rows of another category than --category
    tagged: int = 0
    skipped_done: int = 0
    tagged_tokens: int = 0
    seconds: float = 0.0
    startup_seconds: float = 0.0
    jobs: int = 1
    interrupted: bool = False
    out: str | None = None
    rejects_file: str | None = None

    @property
    def work_seconds(self) -> float:
        """Wall time after the model was loaded (the rates are per this time)."""
        return max(self.seconds - self.startup_seconds, 1e-9)

    def to_dict(self) -> dict[str, Any]:
        """The counts of the output at the top level; this run's own counts and timings under ``this_run``."""
        d = asdict(self)
        run = {k: d.pop(k) for k in _THIS_RUN}
        run["seconds"] = round(self.seconds, 3)
        run["startup_seconds"] = round(self.startup_seconds, 3)
        run["tokens_per_second"] = round(self.tagged_tokens / self.work_seconds, 1)
        run["notes_per_second"] = round(self.tagged / self.work_seconds, 2)
        d["this_run"] = run
        return d

    def line(self) -> str:
        """A one-line human summary for stderr."""
        text = (
            f"tagged {self.tagged} notes ({self.tagged_tokens} tokens) in {self.seconds:.1f} s, "
            f"{self.tagged_tokens / self.work_seconds:,.0f} tokens/s after {self.startup_seconds:.1f} s of model "
            "loading"
        )
        if self.skipped_done:
            text += f"; {self.skipped_done} already done"
        text += f"; {self.notes} notes, {self.mentions} mentions in all"
        if self.skipped_iserror:
            text += f"; {self.skipped_iserror} ISERROR rows left out"
        if self.skipped_category:
            text += f"; {self.skipped_category} rows of other categories left out"
        if self.rejected:
            text += f"; {self.rejected} rejected" + (f" (see {self.rejects_file})" if self.rejects_file else "")
        return text


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
            self.stream.write(_jsonl_line(item.doc, result.mentions))


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

    def prepare(self) -> None:
        """Read the manifest of an earlier run; a shard is done when listed complete and present."""
        self.directory.mkdir(parents=True, exist_ok=True)
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


# ---------------------------------------------------------------- inputs


@dataclass
class _Input:
    path: Path
    is_csv: bool
    sink: _Sink | None = None


def _read_note_file(path: Path, doc_id: str, encoding: str) -> Document | str:
    """The note, or the reason it is rejected."""
    if BAD_ID_RE.search(doc_id):
        return "the file name contains '||' or a control character (it would break the output lines)"
    try:
        return read_note(path, encoding, doc_id, reject_empty=True)
    except InputError as exc:
        return exc.message


class _Task:
    """A batch on its way through the worker pool: its documents, and how often a worker died holding it."""

    def __init__(self, seq: int, docs: list[Document], part: int | None = None) -> None:
        self.seq = seq
        self.docs = docs
        self.part = part  # index of the single note, once the batch is split after two deaths
        self.deaths = 0


class _Runner:
    def __init__(self, inputs: Sequence[Path], factory: AnnotatorFactory, options: BatchOptions,
                 stdout: TextIO, stderr: TextIO) -> None:
        self.factory = factory
        self.opt = options
        self.stdout = stdout
        self.stderr = stderr
        self.inputs = [_Input(Path(p), Path(p).is_file() and is_csv_path(p)) for p in inputs]
        self.summary = RunSummary(jobs=options.jobs)
        self.stop = threading.Event()
        self.selected = 0  # records counted against --limit
        self.error: ShareNerError | None = None  # a read error that stopped the input stream
        self.bytes_before = 0  # size of the CSV inputs already read
        self.total_bytes = 0  # size of all CSV inputs when they are the only inputs
        self.note_files: int | None = None  # counted by setup when it walks the note-file inputs

    # ---- setup

    def setup(self) -> None:
        opt = self.opt
        if opt.jobs < 1:
            raise ShareNerError(f"--jobs must be at least 1, got {opt.jobs}")
        if opt.shard_size < 1:
            raise ShareNerError(f"--shard-size must be at least 1, got {opt.shard_size}")
        if opt.limit is not None and opt.limit < 0:
            raise ShareNerError(f"--limit must be 0 or more, got {opt.limit}")
        if opt.fmt is not None and opt.fmt not in OUTPUT_FORMATS:
            raise ShareNerError(f"unknown format {opt.fmt!r}; expected one of {', '.join(OUTPUT_FORMATS)}")
        if opt.fmt == "brat" and opt.out is None:
            raise ShareNerError("--format brat writes one .ann file per note: give --out DIR (without --out, notes "
                                "go to stdout as JSON Lines)")
        if not self.inputs:
            raise ShareNerError("no input given")
        check_encoding(opt.encoding)  # one setup error, not one reject per note
        for inp in self.inputs:
            if not inp.path.exists() and not inp.path.is_symlink():
                raise InputError(inp.path, "no such file or directory")
            if inp.is_csv:
                read_header(inp.path, opt.encoding, show_text=opt.show_text)  # fails now, not hours later
                if opt.fmt in ("brat", "bioc") and opt.out is not None:
                    name = {"brat": "BRAT", "bioc": "BioC"}[opt.fmt]
                    raise ShareNerError(
                        f"{inp.path}: {name} output needs one file per note; for a CSV export use --format jsonl or share"
                    )
            elif opt.fmt == "parquet":
                raise ShareNerError(f"{inp.path}: Parquet output is written in shards of a CSV export; for note files "
                                    "use --format jsonl, share or brat")
        self._check_note_names()
        if opt.fmt == "parquet":
            if opt.out is None:
                raise ShareNerError("Parquet output needs --out DIR")
            require_pyarrow()
        if opt.out is None:
            sink = _StreamSink(self.stdout)
            for inp in self.inputs:
                inp.sink = sink
            self.rejects = self._reject_log(opt.rejects, self.stderr)
            return
        out = opt.out
        try:
            out.mkdir(parents=True, exist_ok=True)
            probe = out / f".write-test{TMP_MARK}{os.getpid()}"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise ShareNerError(f"{out}: output directory is not writable ({exc.strerror or exc})") from None
        self._check_run_file(out)
        self._remove_stale_temps(out)
        stems: dict[str, Path] = {}
        for inp in self.inputs:
            if inp.is_csv:
                stem = _csv_stem(inp.path)
                if stem in stems:
                    raise ShareNerError(f"{inp.path} and {stems[stem]} would both write to {out / stem}; rename one")
                stems[stem] = inp.path
                shard = _ShardSink(out / stem, opt.fmt or "jsonl", opt.shard_size)
                shard.prepare()
                inp.sink = shard
            else:
                inp.sink = _NoteFileSink(out, opt.fmt or "share")
        self.rejects = self._reject_log(opt.rejects or out / REJECTS_NAME, None)
        self.summary.out = str(out)
        self.summary.rejects_file = str(opt.rejects or out / REJECTS_NAME)

    def _check_note_names(self) -> None:
        """Walk the note-file inputs once before any work: count them (for the progress bar) and, when there are
        several, stop at a note that would have the same output (same sub-directory and note id) as a note of
        another input, naming both files. One set of names is kept, and only with several inputs."""
        roots = [inp.path for inp in self.inputs if not inp.is_csv]
        names: dict[tuple[str, str], Path] | None = {} if len(roots) > 1 else None
        count = 0
        for root in roots:
            for entry in walk_note_files(root):
                count += 1
                if names is None:
                    continue
                key = (str(_rel_dir(root, entry.path)), doc_id_from_path(entry.path))
                other = names.setdefault(key, entry.path)
                if other != entry.path:
                    where = Path(key[0]) / per_note_file_name(key[1], self.opt.fmt or "share")
                    raise ShareNerError(
                        f"{entry.path} and {other} are both note {key[1]!r} and would both write {where}; "
                        "give their directories as separate runs (another --out) or rename one")
        self.note_files = count

    @staticmethod
    def _reject_log(path: Path | None, stream: TextIO | None) -> _RejectLog:
        try:
            return _RejectLog(path, stream)
        except OSError as exc:
            raise ShareNerError(f"{path}: cannot write the rejects file ({exc.strerror or exc})") from None

    def _check_run_file(self, out: Path) -> None:
        opt = self.opt
        settings = {"format": opt.fmt, "shard_size": opt.shard_size, "categories": sorted(opt.categories),
                    "include_errors": opt.include_errors, "limit": opt.limit, "model": opt.model}
        path = out / RUN_NAME
        if path.exists():
            try:
                earlier = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                earlier = None
            if isinstance(earlier, dict) and earlier != settings:
                diff = ", ".join(f"{k} {earlier.get(k)!r} then {v!r}" for k, v in settings.items() if earlier.get(k) != v)
                raise ShareNerError(
                    f"{out} holds a run with other settings ({diff}); resume with the same options or use another --out"
                )
        atomic_write_text(path, json.dumps(settings, indent=1) + "\n")

    @staticmethod
    def _remove_stale_temps(out: Path) -> None:
        # temp files of a killed run (SIGKILL, power loss): their content was never committed
        for p in out.rglob(".*"):
            if _TMP_RE.match(p.name) and p.is_file():
                p.unlink(missing_ok=True)

    def total(self) -> int | None:
        """Number of records to go through when cheaply known (note files only), for the progress bar.

        For CSV exports it is estimated as the run goes, from the share of the file read.
        """
        if any(inp.is_csv for inp in self.inputs):
            if self.opt.limit is None and all(inp.is_csv for inp in self.inputs):
                self.total_bytes = sum(inp.path.stat().st_size for inp in self.inputs)
            return self.opt.limit
        n = self.note_files or 0
        return n if self.opt.limit is None else min(n, self.opt.limit)

    # ---- reading

    def _limit_reached(self) -> bool:
        return self.opt.limit is not None and self.selected >= self.opt.limit

    def items(self) -> Iterator[_Item]:
        for inp in self.inputs:
            if self._limit_reached() or self.stop.is_set():
                return
            if inp.is_csv:
                yield from self._csv_items(inp)
            else:
                yield from self._file_items(inp)

    def _file_items(self, inp: _Input) -> Iterator[_Item]:
        sink = inp.sink
        root = inp.path
        for entry in walk_note_files(root):
            if self._limit_reached() or self.stop.is_set():
                return
            self.selected += 1
            path = entry.path
            doc_id = doc_id_from_path(path)
            rel_dir = _rel_dir(root, path)
            if entry.problem is not None:
                yield _Item(sink, rel_dir, str(path), reject=Reject(str(path), doc_id, entry.problem))
                continue
            if isinstance(sink, _NoteFileSink):
                output = sink.output_path(rel_dir, doc_id)
                if output.exists():
                    yield _Item(sink, rel_dir, done=True, earlier=self._earlier_note(sink, path, output, doc_id))
                    continue
            got = _read_note_file(path, doc_id, self.opt.encoding)
            if isinstance(got, str):
                yield _Item(sink, rel_dir, str(path), reject=Reject(str(path), doc_id, got))
            else:
                yield _Item(sink, rel_dir, str(path), doc=got)

    def _earlier_note(self, sink: _NoteFileSink, path: Path, output: Path, doc_id: str) -> dict[str, int] | None:
        """The counts of a note tagged by an earlier run: its text read again, its mentions from its output."""
        got = _read_note_file(path, doc_id, self.opt.encoding)
        try:
            mentions = sink.mentions_in(output)
        except (OSError, ValueError, AttributeError):
            mentions = 0
        if isinstance(got, str):
            return {"notes": 1, "mentions": mentions, "tokens": 0, "characters": 0}
        return {"notes": 1, "mentions": mentions, "tokens": count_tokens(got.text), "characters": len(got.text)}

    def _csv_items(self, inp: _Input) -> Iterator[_Item]:
        sink = inp.sink
        shards = sink if isinstance(sink, _ShardSink) else None
        index = 0
        counts: Counter = Counter()
        records: Iterator[CsvRecord] = iter_csv_notes(
            inp.path, categories=self.opt.categories or None, include_errors=self.opt.include_errors,
            encoding=self.opt.encoding, show_text=self.opt.show_text, counts=counts,
        )
        complete = True
        source = str(inp.path)
        before = self.bytes_before
        try:
            for rec in records:
                if self.stop.is_set():
                    return
                reject = None if rec.doc is not None else Reject(source, rec.note_id, rec.reason or "", rec.row,
                                                                 rec.byte)
                if rec.fatal:
                    yield _Item(sink, index, source, reject=reject, row=rec.row, end=True, complete=False)
                    return
                if self._limit_reached():
                    break
                self.selected += 1
                if shards is not None and shards.is_done(index):
                    yield _Item(sink, index, source, reject=reject, row=rec.row, pos=before + rec.offset, done=True,
                                earlier=shards.earlier(index))
                elif reject is not None:
                    yield _Item(sink, index, source, reject=reject, row=rec.row)
                else:
                    yield _Item(sink, index, source, doc=rec.doc, row=rec.row, pos=before + rec.offset)
                index += 1
        finally:
            self.summary.skipped_iserror += counts["iserror"]
            self.summary.skipped_category += counts["category"]
        self.bytes_before += inp.path.stat().st_size
        yield _Item(sink, index, end=True, complete=complete)

    # ---- processing

    def batches(self, pending: deque) -> Iterator[list[Document]]:
        """Group items into batches of documents; each batch's items are appended to ``pending`` as it is given."""
        batch: list[_Item] = []
        docs: list[Document] = []
        chars = 0
        for item in self._guarded(self.items()):
            batch.append(item)
            if item.doc is not None:
                docs.append(item.doc)
                chars += len(item.doc.text)
            if len(docs) >= self.opt.batch_notes or chars >= self.opt.batch_chars or len(batch) >= 4096:
                pending.append(batch)
                yield docs
                if self.stop.is_set():
                    return
                batch, docs, chars = [], [], 0
        if batch:
            pending.append(batch)
            yield docs

    def _guarded(self, items: Iterator[_Item]) -> Iterator[_Item]:
        # An error raised while reading ends the input stream here; the run re-raises it after the work already
        # read is done.
        try:
            yield from items
        except ShareNerError as exc:
            self.error = exc

    def handle(self, batch: list[_Item], results: list[NoteResult], bar: Any) -> None:
        it = iter(results)
        s = self.summary
        for item in batch:
            if item.end:
                if item.reject is not None:
                    self._reject(item.reject)
                item.sink.end(item.complete)
                continue
            result = next(it) if item.doc is not None else None
            if item.done:
                if item.reject is not None:
                    self._reject(item.reject)  # listed once in the file, counted as an uninterrupted run counts
                else:
                    s.skipped_done += 1
                if item.earlier:
                    s.notes += item.earlier["notes"]
                    s.mentions += item.earlier["mentions"]
                    s.tokens += item.earlier["tokens"]
                    s.characters += item.earlier["characters"]
            elif item.reject is not None:
                self._reject(item.reject)
                item.sink.add(item, None)
            elif result is not None and result.error is not None:
                assert item.doc is not None
                self._reject(Reject(item.source, item.doc.id, result.error, item.row or None))
                item.sink.add(item, None)
            elif result is not None and item.doc is not None:
                item.sink.add(item, result)
                s.notes += 1
                s.tagged += 1
                s.mentions += len(result.mentions)
                s.tokens += result.tokens
                s.tagged_tokens += result.tokens
                s.characters += len(item.doc.text)
            if bar is not None:
                bar.update(1)
                if 0 < item.pos < self.total_bytes and bar.n % 50 == 0:
                    bar.total = max(bar.n, round(bar.n * self.total_bytes / item.pos))

    def _reject(self, reject: Reject) -> None:
        self.summary.rejected += 1
        self.rejects.add(reject)

    def results(self, pending: deque) -> Iterator[tuple[list[_Item], list[NoteResult]]]:
        opt = self.opt
        if opt.jobs == 1:
            start = time.perf_counter()
            annotator = self.factory()
            if opt.settle_heap:
                settle_heap()
            self.summary.startup_seconds = time.perf_counter() - start
            for docs in self.batches(pending):
                results = annotate_notes(annotator, docs)
                yield pending.popleft(), results
            return
        import multiprocessing

        from share_ner.workers import Death, WorkerPool

        if opt.preload and sys.platform.startswith("linux"):
            _load_annotator(self.factory)  # into this process: the forked workers (and their replacements) inherit it
            pool = WorkerPool(opt.jobs, _work, context=multiprocessing.get_context("fork"))
        else:
            pool = WorkerPool(opt.jobs, _work, initializer=_init_worker, initargs=(self.factory,))
        source = self.batches(pending)
        # results of batches not yet handled, by sequence number; a split batch collects its notes one by one
        finished: dict[int, list[NoteResult]] = {}
        parts: dict[int, list[NoteResult | None]] = {}
        next_seq = read = 0
        exhausted = False
        deaths_in_a_row = 0
        try:
            while True:
                while not exhausted and read - next_seq < opt.jobs * 3 and not self.stop.is_set():
                    docs = next(source, None)
                    if docs is None:
                        exhausted = True
                        break
                    if docs:
                        pool.submit(_Task(read, docs), docs)
                    else:
                        finished[read] = []
                    read += 1
                while next_seq in finished:
                    batch = pending.popleft()
                    yield batch, finished.pop(next_seq)
                    next_seq += 1
                if next_seq == read and (exhausted or self.stop.is_set()):
                    break
                for event in pool.wait(timeout=1.0):
                    task: _Task = event.task
                    if isinstance(event, Death):
                        deaths_in_a_row += 1
                        if deaths_in_a_row >= MAX_DEATHS_IN_A_ROW:
                            raise ShareNerError(f"worker processes keep dying ({event.reason()}, {deaths_in_a_row} "
                                                "times in a row without finishing a batch); the model cannot run here")
                        if task is None:
                            continue  # it died starting, holding no batch
                        task.deaths += 1
                        if task.part is not None or len(task.docs) == 1:
                            # the note alone killed its worker again: it is the note at fault
                            result = NoteResult(task.docs[0].id, (), count_tokens(task.docs[0].text), event.reason())
                            self._collect(task, [result], finished, parts)
                        elif task.deaths == 1:
                            pool.submit(task, task.docs)  # once more, whole
                        else:
                            parts[task.seq] = [None] * len(task.docs)
                            for k, doc in enumerate(task.docs):
                                pool.submit(_Task(task.seq, [doc], part=k), [doc])
                        continue
                    deaths_in_a_row = 0
                    load_seconds, results = event.result
                    if isinstance(results, str):
                        raise ShareNerError(results)
                    self.summary.startup_seconds = max(self.summary.startup_seconds, load_seconds)
                    self._collect(task, results, finished, parts)
        finally:
            self.stop.set()
            pool.close(kill=True)
            _WORKER.clear()  # a preloaded annotator: not kept past the run

    @staticmethod
    def _collect(task: _Task, results: list[NoteResult], finished: dict[int, list[NoteResult]],
                 parts: dict[int, list[NoteResult | None]]) -> None:
        if task.part is None:
            finished[task.seq] = results
            return
        got = parts[task.seq]
        got[task.part] = results[0]
        if all(r is not None for r in got):
            finished[task.seq] = [r for r in got if r is not None]
            del parts[task.seq]

    def run(self) -> RunSummary:
        self.setup()
        start = time.perf_counter()
        bar = None
        if self.opt.progress:
            from tqdm import tqdm

            bar = tqdm(total=self.total(), unit="note", file=self.stderr, ncols=_bar_width(self.stderr), smoothing=0.1)
        pending: deque = deque()
        try:
            for batch, results in self.results(pending):
                try:
                    self.handle(batch, results, bar)
                except OSError as exc:
                    where = exc.filename or self.opt.out or "output"
                    raise ShareNerError(f"{where}: cannot write ({exc.strerror or exc}); completed outputs are "
                                        "kept: free the space or fix the directory, then run the same command to "
                                        "resume") from None
            if self.error is not None:
                raise self.error
        except BaseException:
            self.stop.set()
            self.summary.interrupted = True
            for inp in self.inputs:
                if inp.sink is not None:
                    inp.sink.abort()
            raise
        finally:
            if bar is not None:
                bar.close()
            try:
                self.rejects.close()
            except OSError:
                pass
            self.summary.seconds = time.perf_counter() - start
            if self.opt.out is not None:
                try:
                    atomic_write_text(self.opt.out / SUMMARY_NAME, json.dumps(self.summary.to_dict(), indent=1) + "\n")
                except OSError:
                    pass  # the error that stopped the run is the one to report
        return self.summary


def _rel_dir(root: Path, path: Path) -> Path:
    """The sub-directory of a note below its input (empty for a note given as a file)."""
    return path.parent.relative_to(root) if path != root else Path()


def in_child(fn: Callable[..., Any], *args: Any) -> bool:
    """Run ``fn(*args)`` in a child process, for what it leaves on disk (this process stays small); whether it
    succeeded. A failure prints nothing: the same work fails again, with its message, where it is needed."""
    import multiprocessing

    child = multiprocessing.get_context().Process(target=_quietly, args=(fn, *args))
    child.start()
    child.join()
    return child.exitcode == 0


def _quietly(fn: Callable[..., Any], *args: Any) -> None:
    try:
        fn(*args)
    except BaseException:  # noqa: BLE001
        sys.exit(1)


def settle_heap() -> None:
    """Once the model is loaded: move every object alive to the garbage collector's permanent generation.

    The lexicon index, gazetteer, learned swaps and CRF model are millions of Python objects that live as long
    as the process. Left in the collected generations, every full collection walks them all again; frozen
    (:func:`gc.freeze`), they are never walked, and the collections that remain look only at what a note
    creates. Frozen objects are still freed when nothing refers to them; only reference cycles among them
    would outlive their use, and a loaded model has none to free.
    """
    gc.collect()
    gc.freeze()


def _bar_width(stream: TextIO) -> int:
    # some terminals (pseudo-terminals of job runners) report 0 columns, and tqdm would then draw nothing
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        columns = 0
    return columns if columns > 20 else 100


def _csv_stem(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".csv"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    return name


# ---------------------------------------------------------------- worker processes

_WORKER: dict[str, Any] = {}


def _init_worker(factory: AnnotatorFactory) -> None:
    # One of --jobs processes: a thread pool per worker (PyTorch's, under the optional dense normalizer, is
    # created when the worker first loads it) would oversubscribe the cores.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    _load_annotator(factory)


def _load_annotator(factory: AnnotatorFactory) -> None:
    """Load the annotator of this process's workers (of a worker, or of the parent that forks them)."""
    _WORKER.clear()
    start = time.perf_counter()
    try:
        _WORKER["annotator"] = factory()
        settle_heap()
        _WORKER["load_seconds"] = time.perf_counter() - start
    except Exception as exc:  # noqa: BLE001
        # raised here, the worker would die and be replaced again and again: report it with the first batch
        what = str(exc) if isinstance(exc, ShareNerError) else f"cannot load the annotator: {type(exc).__name__}: {exc}"
        _WORKER["error"] = what


def _work(docs: list[Document]) -> tuple[float, list[NoteResult] | str]:
    """Annotate a batch in a worker; also return how long the worker took to load its annotator."""
    if "error" in _WORKER:
        return 0.0, _WORKER["error"]
    annotator = _WORKER["annotator"]
    return _WORKER["load_seconds"], annotate_notes(annotator, docs)


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def run_batch(
    inputs: Sequence[str | Path],
    factory: AnnotatorFactory,
    options: BatchOptions | None = None,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> RunSummary:
    """Tag every note of ``inputs`` (note files, directories, MIMIC CSV exports) with annotators from ``factory``.

    SIGTERM is handled like Ctrl-C: work in progress is discarded, everything
    completed stays, and ``KeyboardInterrupt`` is raised. Raises
    :class:`ShareNerError` for setup errors (missing input, a CSV without its
    text column, an unwritable output directory, a resume with other settings).
    """
    options = options or BatchOptions()
    runner = _Runner([Path(p) for p in inputs], factory, options, stdout or sys.stdout, stderr or sys.stderr)
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_interrupt) if in_main else None
    try:
        return runner.run()
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous)
