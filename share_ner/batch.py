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
malformed CSV row or a truncated ``.gz`` becomes a line of the rejects file
(``source``, note id or row, reason; never note text).
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
from collections import deque
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence, TextIO

from share_ner.document import Document, Mention
from share_ner.errors import InputError, ShareNerError
from share_ner.formats import SUFFIXES, write_annotations
from share_ner.formats.jsonl import format_record
from share_ner.formats.parquet import mention_rows, require_pyarrow, write_parquet
from share_ner.formats.share import format_pipe
from share_ner.mimic import CsvRecord, is_csv_path, iter_csv_notes, read_header
from share_ner.notes import atomic_write_text, decode_note, doc_id_from_path, is_gold_file

Annotator = Callable[[Document], list[Mention]]
AnnotatorFactory = Callable[[], Annotator]

FORMATS = ("share", "brat", "jsonl", "parquet")  # parquet: CSV exports only, in shards
DEFAULT_SHARD_SIZE = 1000
REJECTS_NAME = "rejects.tsv"
SUMMARY_NAME = "summary.json"
RUN_NAME = "run.json"
MANIFEST_NAME = "manifest.ndjson"  # not *.jsonl: annotation readers must not take it for a shard
TMP_MARK = ".tmp"

# What the run counts as tokens: words and punctuation marks, close to the tagger's tokenizer.
_TOKEN_RE = re.compile(r"\w+|[^\w\s]")
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


def load_annotator(model_dir: str | Path, abbreviations: Mapping[str, Sequence[str]] | None = None) -> Annotator:
    """Load a trained model and return it as a :class:`PipelineAnnotator` (the usual annotator factory);
    ``abbreviations``: a site's own list for its normalizer, instead of the model's own.

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
    annotate = PipelineAnnotator(pipeline)
    annotate(_WARM_UP)
    return annotate


def count_tokens(text: str) -> int:
    """The number of words and punctuation marks of ``text`` (the unit of tokens/s)."""
    return len(_TOKEN_RE.findall(text))


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
    tokens = count_tokens(doc.text)
    try:
        mentions = tuple(annotator(doc))
    except Exception as exc:  # noqa: BLE001 - a batch must survive any failure on one note
        return _failed(doc, tokens, exc)
    return NoteResult(doc.id, mentions, tokens)


def _failed(doc: Document, tokens: int, exc: BaseException) -> NoteResult:
    # Exception messages may quote the note: report only the type and where it was raised.
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" in {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return NoteResult(doc.id, (), tokens, f"annotation failed: {type(exc).__name__}{where}")


def annotate_notes(annotator: Annotator, docs: Sequence[Document]) -> list[NoteResult]:
    """:func:`annotate_note` for each of ``docs``; an annotator with a ``many`` method (:class:`PipelineAnnotator`)
    gets the whole batch at once, and a failure stays with its note either way."""
    many = getattr(annotator, "many", None)
    if many is None or len(docs) < 2:
        return [annotate_note(annotator, d) for d in docs]
    try:
        outs = many(docs)
    except Exception:  # noqa: BLE001 - then note by note, so that only the note at fault fails
        return [annotate_note(annotator, d) for d in docs]
    return [_failed(doc, count_tokens(doc.text), out) if isinstance(out, BaseException)
            else NoteResult(doc.id, tuple(out), count_tokens(doc.text)) for doc, out in zip(docs, outs)]


@dataclass(frozen=True)
class Reject:
    """A record that could not be tagged: where it came from, which note or row, and why."""

    source: str
    record: str
    reason: str

    def to_line(self) -> str:
        return "\t".join(_clean(v) for v in (self.source, self.record, self.reason)) + "\n"


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


@dataclass
class RunSummary:
    """Counts and timings of one run (``skipped_done``: notes already complete from an earlier run)."""

    notes: int = 0
    skipped_done: int = 0
    mentions: int = 0
    rejected: int = 0
    tokens: int = 0
    characters: int = 0
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
        d = asdict(self)
        d["tokens_per_second"] = round(self.tokens / self.work_seconds, 1)
        d["notes_per_second"] = round(self.notes / self.work_seconds, 2)
        d["seconds"] = round(self.seconds, 3)
        d["startup_seconds"] = round(self.startup_seconds, 3)
        return d

    def line(self) -> str:
        """A one-line human summary for stderr."""
        text = (
            f"tagged {self.notes} notes ({self.mentions} mentions, {self.tokens} tokens) in {self.seconds:.1f} s, "
            f"{self.tokens / self.work_seconds:,.0f} tokens/s after {self.startup_seconds:.1f} s of model loading"
        )
        if self.skipped_done:
            text += f"; {self.skipped_done} already done"
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

    def _open(self, index: int, item: "_Item") -> None:
        self.current = index
        self.tmp = self.directory / f".{self.shard_name(index)}{TMP_MARK}{os.getpid()}"
        self.file = open(self.tmp, "w", encoding="utf-8", newline="")
        self.rows = []
        self.stats = {"index": index, "shard": self.shard_name(index), "first_row": item.row, "last_row": item.row,
                      "notes": 0, "mentions": 0, "tokens": 0, "rejected": 0, "items": 0}

    def add(self, item: "_Item", result: NoteResult | None) -> None:
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
            if self.fmt == "jsonl":
                self.file.write(_jsonl_line(item.doc, result.mentions))
            elif self.fmt == "parquet":
                self.rows += mention_rows(item.doc.id, result.mentions, item.doc.text)
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
            self.file.close()
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
    end: bool = False  # marks the end of an input (no record)
    complete: bool = True  # with end: False when the input was cut short


class _RejectLog:
    """The rejects file: appended as the run goes, deduplicated against an earlier run's lines."""

    HEADER = "source\trecord\treason\n"

    def __init__(self, path: Path | None, stream: TextIO | None) -> None:
        self.path = path
        self.stream = stream
        self.seen: set[str] = set()
        self.file: TextIO | None = None
        if path is not None:
            if path.exists():
                lines = path.read_text(encoding="utf-8").split("\n")
                self.seen = {ln + "\n" for ln in lines[1:] if ln.count("\t") == 2}
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
            print(f"share-ner: rejected {reject.source} {reject.record}: {reject.reason}", file=self.stream)

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


def iter_note_files(path: Path) -> Iterator[Path]:
    """Note files (``*.txt``, gold files left out) under ``path``, streamed in a fixed order.

    Unlike sorting a full recursive listing, memory stays bounded by the
    largest single directory, whatever the size of the tree.
    """
    if path.is_file():
        yield path
        return
    if not path.is_dir():
        raise InputError(path, "no such file or directory")
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError as exc:
        raise InputError(path, f"cannot list directory: {exc.strerror or exc}") from None
    for entry in entries:
        if entry.is_dir():
            yield from iter_note_files(Path(entry.path))
        elif entry.name.endswith(".txt") and entry.is_file() and not is_gold_file(Path(entry.name)):
            yield Path(entry.path)


def _read_note_file(path: Path, doc_id: str, encoding: str) -> Document | str:
    """The note, or the reason it is rejected."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    if not data:
        return "empty file"
    nul = data.find(b"\x00")
    if nul >= 0:
        return f"binary file (NUL byte at byte {nul})"
    try:
        return Document(doc_id, decode_note(data, path, encoding))
    except InputError as exc:
        return exc.message


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

    # ---- setup

    def setup(self) -> None:
        opt = self.opt
        if opt.jobs < 1:
            raise ShareNerError(f"--jobs must be at least 1, got {opt.jobs}")
        if opt.shard_size < 1:
            raise ShareNerError(f"--shard-size must be at least 1, got {opt.shard_size}")
        if opt.limit is not None and opt.limit < 0:
            raise ShareNerError(f"--limit must be 0 or more, got {opt.limit}")
        if opt.fmt is not None and opt.fmt not in FORMATS:
            raise ShareNerError(f"unknown format {opt.fmt!r}; expected one of {', '.join(FORMATS)}")
        if not self.inputs:
            raise ShareNerError("no input given")
        for inp in self.inputs:
            if not inp.path.exists():
                raise InputError(inp.path, "no such file or directory")
            if inp.is_csv:
                read_header(inp.path, opt.encoding)  # a CSV without its text column fails now, not hours later
                if opt.fmt == "brat" and opt.out is not None:
                    raise ShareNerError(
                        f"{inp.path}: BRAT output needs one file per note; for a CSV export use --format jsonl or share"
                    )
            elif opt.fmt == "parquet":
                raise ShareNerError(f"{inp.path}: Parquet output is written in shards of a CSV export; for note files "
                                    "use --format jsonl, share or brat")
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
        n = sum(sum(1 for _ in iter_note_files(inp.path)) for inp in self.inputs)
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
        for path in iter_note_files(root):
            if self._limit_reached() or self.stop.is_set():
                return
            self.selected += 1
            doc_id = doc_id_from_path(path)
            rel_dir = path.parent.relative_to(root) if root.is_dir() else Path()
            if isinstance(sink, _NoteFileSink) and sink.output_path(rel_dir, doc_id).exists():
                yield _Item(sink, rel_dir, done=True)
                continue
            got = _read_note_file(path, doc_id, self.opt.encoding)
            if isinstance(got, str):
                yield _Item(sink, rel_dir, str(path), reject=Reject(str(path), doc_id, got))
            else:
                yield _Item(sink, rel_dir, str(path), doc=got)

    def _csv_items(self, inp: _Input) -> Iterator[_Item]:
        sink = inp.sink
        shards = sink if isinstance(sink, _ShardSink) else None
        index = 0
        records: Iterator[CsvRecord] = iter_csv_notes(
            inp.path, categories=self.opt.categories or None, include_errors=self.opt.include_errors,
            encoding=self.opt.encoding,
        )
        complete = True
        source = str(inp.path)
        before = self.bytes_before
        for rec in records:
            if self.stop.is_set():
                return
            if rec.fatal:
                yield _Item(sink, index, source, reject=Reject(source, f"row {rec.row}", rec.reason or ""), row=rec.row,
                            end=True, complete=False)
                return
            if self._limit_reached():
                break
            self.selected += 1
            if shards is not None and shards.is_done(index):
                yield _Item(sink, index, row=rec.row, pos=before + rec.offset, done=True)
            elif rec.doc is None:
                record = rec.note_id or f"row {rec.row}"
                yield _Item(sink, index, source, reject=Reject(source, record, rec.reason or ""), row=rec.row)
            else:
                yield _Item(sink, index, source, doc=rec.doc, row=rec.row, pos=before + rec.offset)
            index += 1
        self.bytes_before += inp.path.stat().st_size
        yield _Item(sink, index, end=True, complete=complete)

    # ---- processing

    def batches(self, gate: threading.Semaphore | None, pending: deque) -> Iterator[list[Document]]:
        """Group items into batches of documents; ``gate`` bounds the batches in flight."""
        batch: list[_Item] = []
        docs: list[Document] = []
        chars = 0

        def release() -> Iterator[list[Document]]:
            if gate is not None:
                while not gate.acquire(timeout=0.2):
                    if self.stop.is_set():
                        return
            pending.append(batch)
            yield docs

        for item in self._guarded(self.items()):
            batch.append(item)
            if item.doc is not None:
                docs.append(item.doc)
                chars += len(item.doc.text)
            if len(docs) >= self.opt.batch_notes or chars >= self.opt.batch_chars or len(batch) >= 4096:
                yield from release()
                if self.stop.is_set():
                    return
                batch, docs, chars = [], [], 0
        if batch:
            yield from release()

    def _guarded(self, items: Iterator[_Item]) -> Iterator[_Item]:
        # An error raised while reading ends the input stream here; the main thread re-raises it after the
        # work already read is done (raised inside the pool's feeder thread, it would reach a worker instead).
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
                s.skipped_done += 1
            elif item.reject is not None:
                self._reject(item.reject)
                item.sink.add(item, None)
            elif result is not None and result.error is not None:
                assert item.doc is not None
                self._reject(Reject(item.source, item.doc.id, result.error))
                item.sink.add(item, None)
            elif result is not None and item.doc is not None:
                item.sink.add(item, result)
                s.notes += 1
                s.mentions += len(result.mentions)
                s.tokens += result.tokens
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
            for docs in self.batches(None, pending):
                results = annotate_notes(annotator, docs)
                yield pending.popleft(), results
            return
        import multiprocessing

        gate = threading.Semaphore(opt.jobs * 3)
        if opt.preload and sys.platform.startswith("linux"):
            _load_annotator(self.factory)  # into this process: the forked workers inherit it
            pool = multiprocessing.get_context("fork").Pool(opt.jobs, initializer=_init_forked)
        else:
            pool = multiprocessing.get_context().Pool(opt.jobs, initializer=_init_worker, initargs=(self.factory,))
        try:
            for load_seconds, results in pool.imap(_work, self.batches(gate, pending)):
                if isinstance(results, str):
                    raise ShareNerError(results)
                self.summary.startup_seconds = max(self.summary.startup_seconds, load_seconds)
                batch = pending.popleft()
                gate.release()
                yield batch, results
            pool.close()
        finally:
            self.stop.set()
            pool.terminate()
            pool.join()
            _WORKER.clear()  # a preloaded annotator: not kept past the run

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
                self.handle(batch, results, bar)
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
            self.rejects.close()
            self.summary.seconds = time.perf_counter() - start
            if self.opt.out is not None:
                atomic_write_text(self.opt.out / SUMMARY_NAME, json.dumps(self.summary.to_dict(), indent=1) + "\n")
        return self.summary


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


def _init_forked() -> None:
    # Ctrl-C goes to the whole process group: only the parent reacts, then terminates the pool.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _init_worker(factory: AnnotatorFactory) -> None:
    _init_forked()
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
        # raising here would make the pool restart the worker forever: report it with the first batch
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
