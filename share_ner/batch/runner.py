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
- the notes of the standard input (input ``-``) give one output per note too, tagged again by every run;
- a CSV export gives shards of ``shard_size`` consecutive selected rows
  (``<out>/<csv name>/part-00000.jsonl``...); a shard is done once renamed into
  place, and ``manifest.ndjson`` beside the shards records each one's rows and
  counts. The shard being written when the run stopped is discarded and redone.

One run at a time writes into an output folder (:mod:`share_ner.batch.lock`): a second run stops with an
error naming the first, and takes over the lock of a run that was killed. ``run.json`` holds the settings of the
run (the model by its content, not its path); a run with other settings is refused unless ``overwrite``, which
tags every note again. BRAT output ends with the ``annotation.conf`` and ``visual.conf`` of the folder.

Bad input never stops the batch: an empty, binary or undecodable note, a malformed CSV row, a duplicate note id,
a truncated ``.gz``, a note whose worker process died, a note that ran out of time
(:mod:`share_ner.batch.timeout`) becomes a line of the rejects file (``source``, note id, row, byte offset,
reason; never note text unless ``show_text``).

Worker processes (:mod:`share_ner.batch.workers`) that die are replaced: the batch a
dead worker held is tried once more, then note by note, so that only the note
that kills a worker is rejected ("worker died (signal 9)").
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import threading
import time
from collections import Counter, deque
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Iterator, Sequence, TextIO

from share_ner.batch.annotate import AnnotatorFactory, NoteResult, annotate_notes, count_tokens
from share_ner.batch.lock import RUN_NAME, OutputLock, output_lock
from share_ner.batch.processes import _WORKER, BatchPool, _init_worker, _load_annotator, _work, settle_heap
from share_ner.batch.progress import progress_bar, sigterm_as_interrupt
from share_ner.batch.rejects import REJECTS_NAME, Reject, _RejectLog
from share_ner.batch.sinks import (
    _TMP_RE,
    DEFAULT_SHARD_SIZE,
    TMP_MARK,
    _Item,
    _NoteFileSink,
    _ShardSink,
    _Sink,
    _StreamSink,
    per_note_file_name,
)
from share_ner.batch.summary import RunSummary
from share_ner.batch.timeout import DEFAULT_NOTE_SECONDS
from share_ner.batch.workers import WorkerPool
from share_ner.document import Document
from share_ner.errors import InputError, ShareNerError
from share_ner.formats import OUTPUT_FORMATS
from share_ner.formats.brat import write_collection_conf
from share_ner.formats.parquet import require_pyarrow
from share_ner.inputs.contract import note_name_problem, table_note_id
from share_ner.inputs.files import (
    STDIN,
    STDIN_FORMATS,
    iter_stdin_notes,
    read_note,
    skipped_files_line,
    walk_note_files,
)
from share_ner.inputs.mimic import CsvRecord, check_encoding, is_csv_path, iter_csv_notes, read_header
from share_ner.inputs.parquet import is_parquet_path, iter_parquet_notes, read_table_layout
from share_ner.io import atomic_write_text, doc_id_from_path

SUMMARY_NAME = "summary.json"

STDIN_SOURCE = "<stdin>"  # the source the rejects file names for a note of the standard input


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
    # seconds a note may take per million characters (or part of one) before it is rejected; 0 or None: no limit
    note_seconds: float | None = DEFAULT_NOTE_SECONDS
    # who writes into ``out``, named in the error of another run that finds it locked
    command: str = "share-ner tag"
    # the notes of the input "-" (:func:`share_ner.inputs.files.iter_stdin_notes`): "text", the whole standard input
    # is one note; "jsonl", one {"id", "text"} object a line
    stdin_format: str = "text"
    # start afresh in ``out``: tag every note again, replacing the outputs, shards, rejects and run.json of an
    # earlier run (whatever its settings) instead of resuming it
    overwrite: bool = False


# ---------------------------------------------------------------- inputs


@dataclass
class _Input:
    path: Path
    is_csv: bool
    sink: _Sink | None = None
    is_stdin: bool = False


def _read_note_file(path: Path, doc_id: str, encoding: str) -> Document | str:
    """The note, or the reason it is rejected."""
    problem = note_name_problem(path.name)
    if problem is not None:
        return problem
    try:
        return read_note(path, encoding, doc_id, reject_empty=True)
    except InputError as exc:
        return exc.message


class _Runner:
    def __init__(self, inputs: Sequence[Path | str], factory: AnnotatorFactory, options: BatchOptions,
                 stdout: TextIO, stderr: TextIO, stdin: BinaryIO | None = None) -> None:
        self.factory = factory
        self.opt = options
        self.stdout = stdout
        self.stderr = stderr
        # a CSV export or a Parquet table: records in rows, written in shards; "-": notes from standard input
        self.inputs = [_Input(Path(p), False, is_stdin=True) if str(p) == STDIN
                       else _Input(Path(p), (Path(p).is_file() and is_csv_path(p)) or is_parquet_path(p))
                       for p in inputs]
        self.stdin = stdin
        self.summary = RunSummary(jobs=options.jobs)
        self.stop = threading.Event()
        self.selected = 0  # records counted against --limit
        self.error: ShareNerError | None = None  # a read error that stopped the input stream
        self.bytes_before = 0  # size of the CSV inputs already read
        self.total_bytes = 0  # size of all CSV inputs when they are the only inputs
        self.note_files: int | None = None  # counted by setup when it walks the note-file inputs
        self.held = ExitStack()  # the lock on the output directory, released when the run ends
        self.lock: OutputLock | None = None

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
        if sum(inp.is_stdin for inp in self.inputs) > 1:
            raise ShareNerError("the standard input (-) is given twice; it can be read once")
        if opt.stdin_format not in STDIN_FORMATS:
            raise ShareNerError(f"unknown standard input format {opt.stdin_format!r}; expected one of "
                                f"{', '.join(STDIN_FORMATS)}")
        for inp in self.inputs:
            if inp.is_stdin:
                if opt.fmt == "parquet":
                    raise ShareNerError("Parquet output is written in shards of a CSV export; for notes from the "
                                        "standard input use --format jsonl, share or brat")
                continue
            if not inp.path.exists() and not inp.path.is_symlink():
                raise InputError(inp.path, "no such file or directory")
            if inp.is_csv:
                if is_parquet_path(inp.path):
                    read_table_layout(inp.path)  # fails now, not hours later
                else:
                    read_header(inp.path, opt.encoding, show_text=opt.show_text)
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
        # before anything is written or removed in it: no other run writes into it meanwhile
        self.lock = self.held.enter_context(output_lock(out, opt.command))
        if self.lock.stale is not None:
            print(f"share-ner: {out}: taking over from a run that ended without finishing "
                  f"({self.lock.stale.describe()}); its unfinished files are discarded", file=self.stderr)
        try:
            probe = out / f".write-test{TMP_MARK}{os.getpid()}"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise ShareNerError(f"{out}: output folder is not writable ({exc.strerror or exc})") from None
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
                shard.prepare(fresh=opt.overwrite)
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
        roots = [inp.path for inp in self.inputs if not inp.is_csv and not inp.is_stdin]
        names: dict[tuple[str, str], Path] | None = {} if len(roots) > 1 else None
        count = 0
        skipped: list[Path] = []
        for root in roots:
            for entry in walk_note_files(root, skipped):
                count += 1
                if names is None:
                    continue
                key = (str(_rel_dir(root, entry.path)), doc_id_from_path(entry.path))
                other = names.setdefault(key, entry.path)
                if other != entry.path:
                    where = Path(key[0]) / per_note_file_name(key[1], self.opt.fmt or "share")
                    raise ShareNerError(
                        f"{entry.path} and {other} are both note {key[1]!r} and would both write {where}; "
                        "give their folders as separate runs (another --out) or rename one")
        self.note_files = count
        warning = skipped_files_line(skipped)
        if warning:  # one line, however many: a folder of .doc files or extensionless exports is not tagged
            print(f"share-ner: warning: {warning}", file=self.stderr)

    @staticmethod
    def _reject_log(path: Path | None, stream: TextIO | None) -> _RejectLog:
        try:
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)  # --rejects elsewhere: its folder, as every output's
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
            if isinstance(earlier, dict) and earlier != settings and not opt.overwrite:
                diff = ", ".join(f"{k} {earlier.get(k)!r} then {v!r}" for k, v in settings.items() if earlier.get(k) != v)
                raise ShareNerError(
                    f"{out} holds a run with other settings ({diff}); resume with the same options, use another "
                    "--out, or give --overwrite to replace its results"
                )
        if opt.overwrite:  # before run.json names the new settings: a stop in between leaves nothing to resume
            (out / REJECTS_NAME).unlink(missing_ok=True)
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
        if any(inp.is_stdin for inp in self.inputs):
            return self.opt.limit
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
            elif inp.is_stdin:
                yield from self._stdin_items(inp)
            else:
                yield from self._file_items(inp)

    def _stdin_items(self, inp: _Input) -> Iterator[_Item]:
        """The notes of the standard input; a rerun tags them again (what they hold may differ from run to run)."""
        stream = self.stdin if self.stdin is not None else sys.stdin.buffer
        for note in iter_stdin_notes(stream.read(), self.opt.stdin_format, self.opt.encoding):
            if self._limit_reached() or self.stop.is_set():
                return
            self.selected += 1
            if note.doc is None:
                yield _Item(inp.sink, Path(), STDIN_SOURCE, reject=Reject(STDIN_SOURCE, note.note_id, note.problem or "",
                                                                         note.line))
            else:
                yield _Item(inp.sink, Path(), STDIN_SOURCE, doc=note.doc)

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
            named = table_note_id(rel_dir.as_posix(), doc_id)  # in the one rejects table, by its path
            if entry.problem is not None:
                yield _Item(sink, rel_dir, str(path), reject=Reject(str(path), named, entry.problem))
                continue
            if isinstance(sink, _NoteFileSink) and not self.opt.overwrite:
                output = sink.output_path(rel_dir, doc_id)
                if output.exists():
                    yield _Item(sink, rel_dir, done=True, earlier=self._earlier_note(sink, path, output, doc_id))
                    continue
            got = _read_note_file(path, doc_id, self.opt.encoding)
            if isinstance(got, str):
                yield _Item(sink, rel_dir, str(path), reject=Reject(str(path), named, got))
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
        records: Iterator[CsvRecord] = (iter_parquet_notes if is_parquet_path(inp.path) else iter_csv_notes)(
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
                reject = None if rec.doc is not None else Reject(rec.source or source, rec.note_id, rec.reason or "",
                                                                 rec.row, rec.byte or None)
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
                s.count_mentions(result.mentions)
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
        seconds = opt.note_seconds or None
        if opt.jobs == 1:
            start = time.perf_counter()
            annotator = self.factory()
            if opt.settle_heap:
                settle_heap()
            self.summary.startup_seconds = time.perf_counter() - start
            for docs in self.batches(pending):
                results = annotate_notes(annotator, docs, seconds)
                yield pending.popleft(), results
            return
        if opt.preload and sys.platform.startswith("linux"):
            _load_annotator(self.factory)  # into this process: the forked workers (and their replacements) inherit it
            workers = WorkerPool(opt.jobs, _work, context=multiprocessing.get_context("fork"))
        else:
            workers = WorkerPool(opt.jobs, _work, initializer=_init_worker, initargs=(self.factory,))
        pool = BatchPool(workers, lambda doc, reason: NoteResult(doc.id, (), count_tokens(doc.text), reason), seconds)
        source = self.batches(pending)
        exhausted = False
        try:
            while True:
                while not exhausted and pool.in_flight() < opt.jobs * 3 and not self.stop.is_set():
                    docs = next(source, None)
                    if docs is None:
                        exhausted = True
                        break
                    pool.submit(docs)
                for results in pool.done():
                    yield pending.popleft(), results
                if pool.in_flight() == 0 and (exhausted or self.stop.is_set()):
                    break
                pool.wait(timeout=1.0)
                self.summary.startup_seconds = max(self.summary.startup_seconds, pool.load_seconds)
        finally:
            self.stop.set()
            pool.close(kill=True)
            _WORKER.clear()  # a preloaded annotator: not kept past the run

    def run(self) -> RunSummary:
        with self.held:
            return self._run()

    def _run(self) -> RunSummary:
        self.setup()
        start = time.perf_counter()
        bar = None
        if self.opt.progress:
            bar = progress_bar(self.total(), self.stderr)
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
            if self.opt.out is not None and self.opt.fmt == "brat":
                write_collection_conf(self.opt.out)  # brat opens the output folder as a collection
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


def _csv_stem(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".csv", ".parquet"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    return name


def run_batch(
    inputs: Sequence[str | Path],
    factory: AnnotatorFactory,
    options: BatchOptions | None = None,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    stdin: BinaryIO | None = None,
) -> RunSummary:
    """Tag every note of ``inputs`` (note files, directories, MIMIC CSV exports, and ``"-"``: the notes of
    ``stdin``, by default the standard input's bytes) with annotators from ``factory``.

    SIGTERM is handled like Ctrl-C: work in progress is discarded, everything
    completed stays, and ``KeyboardInterrupt`` is raised. Raises
    :class:`ShareNerError` for setup errors (missing input, a CSV without its
    text column, an unwritable output directory, a resume with other settings).
    """
    options = options or BatchOptions()
    runner = _Runner(list(inputs), factory, options, stdout or sys.stdout, stderr or sys.stderr, stdin)
    with sigterm_as_interrupt():
        return runner.run()
