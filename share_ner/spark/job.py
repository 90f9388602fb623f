"""``share-ner spark``: read notes into Spark, annotate them, write Parquet tables and a summary.

Output layout (``OUT`` any Hadoop file system path: local, HDFS, S3, DBFS)::

    OUT/mentions/chunk=00000/part-*.parquet   one row per mention (share_ner.formats.parquet columns)
    OUT/rejects/chunk=00000/part-*.parquet    note_id, reason (never the text)
    OUT/chunks/chunk=00000.json               the chunk's counts (notes, mentions, tokens, characters, rejected)
    OUT/run.json                              the settings; a rerun with others is refused
    OUT/summary.json                          the counts of share-ner tag's summary.json, over all chunks

The input files are taken in name order and cut into chunks (one per CSV file; ``files_per_chunk`` Parquet or
note files). Each chunk is one pass over its notes: one Spark job annotates them and writes the mentions, while
an accumulator gathers the counts and the rejects (note id and reason), which the driver then writes. Both tables
are written by Spark's own output committer, which writes ``_SUCCESS`` once a table is committed; the counts file
comes last. A rerun after a killed job keeps every chunk with both ``_SUCCESS`` files and its counts file and
redoes the others whole (the tasks of a chunk that did finish are redone too: the committer discards uncommitted
output).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from share_ner.batch.lock import output_lock
from share_ner.batch.progress import sigterm_as_interrupt
from share_ner.batch.runner import RunSummary
from share_ner.default_model.build import default_model_dir
from share_ner.errors import ShareNerError
from share_ner.formats.parquet import require_pyarrow
from share_ner.inputs.mimic import is_csv_path
from share_ner.model import model_identity
from share_ner.spark.dataframe import (
    Tally,
    add_workers,
    annotate_records,
    mention_schema,
    model_error_line,
    require_spark,
)
from share_ner.spark.inputs import (
    InputFile,
    InputPlan,
    chunk_records,
    failed_file,
    is_uri,
    lost_rejects,
    needs_duplicate_pass,
    plan_input,
    read_settings,
    repeated,
    spark_cause,
    unread_rejects,
    whole_files,
)

INPUT_FORMATS = ("csv", "parquet", "text")
TABLES = ("mentions", "rejects")
CHUNKS_DIR = "chunks"  # OUT/chunks/chunk=K.json: a chunk's counts, written once its tables are committed
COUNTS = ("notes", "mentions", "tokens", "characters", "skipped_iserror", "skipped_category")
CRASHED = "Python worker exited unexpectedly"  # Spark's words for a Python worker that died
FILES_PER_CHUNK = {"csv": 1, "parquet": 16, "text": 10_000}
RUN_NAME = "run.json"
SUMMARY_NAME = "summary.json"


@dataclass(frozen=True)
class SparkOptions:
    """Settings of one ``share-ner spark`` run (``master=None``: spark-submit's, else ``local[*]``)."""

    input: str
    out: str
    master: str | None = None
    input_format: str | None = None
    text_col: str | None = None
    id_col: str | None = None
    model: str | None = None
    ship_model: bool = False
    include_errors: bool = False
    partitions: int | None = None  # per chunk; default 3 per core of the cluster
    files_per_chunk: int | None = None
    conf: tuple[tuple[str, str], ...] = ()  # Spark settings of the session run_spark starts (no effect on output)
    overwrite: bool = False  # an output holding a run with other settings is emptied and started afresh


# Settings of the sessions share-ner starts, unless the caller's conf or spark-submit's --conf set them: the
# Python daemon that loads the model once and forks the workers from it (share_ner.spark.daemon).
DEFAULT_CONF = {"spark.python.daemon.module": "share_ner.spark.daemon"}
# ... and of a local session whose JVM share-ner launches: that JVM (driver and executor at once) shares the
# machine's cores with the Python workers, and its own work is small beside theirs, so compiling its hot code
# with the optimizing compiler (C2) costs more CPU than the faster code saves; C1 alone compiles in a fraction of
# it (benchmarks/results/spark.md measures both). Set spark.driver.extraJavaOptions to choose otherwise.
LOCAL_CONF = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"}


def _set_already(key: str) -> bool:
    """Whether spark-submit (which started the JVM) was given ``key``."""
    if not os.environ.get("PYSPARK_GATEWAY_PORT"):
        return False
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()
    return SparkConf().contains(key)


def check_java() -> None:
    """A one-line error when no Java runtime is found (Spark's JVM needs one)."""
    home = os.environ.get("JAVA_HOME")
    if shutil.which("java") is None and not (home and os.path.exists(os.path.join(home, "bin", "java"))):
        raise ShareNerError("Spark needs a Java 17+ runtime: none found on PATH or in JAVA_HOME")


def guess_format(path: str) -> str:
    """The input format an INPUT path announces: csv or parquet by its name; a local directory by the files it
    holds (note files make it a directory of notes, else Parquet files a table, else CSV files a directory of
    exports); anything else a directory of note files."""
    name = path.rstrip("/").lower()
    if name.endswith((".csv", ".csv.gz")):
        return "csv"
    if name.endswith(".parquet"):
        return "parquet"
    if is_uri(path) or not os.path.isdir(path):
        return "text"
    found = set()
    for _, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        for f in files:
            if f.lower().endswith(".txt"):
                return "text"
            if f.lower().endswith(".parquet"):
                found.add("parquet")
            elif is_csv_path(f):
                found.add("csv")
    return "parquet" if "parquet" in found else "csv" if "csv" in found else "text"


def start_session(master: str | None, app: str = "share-ner", conf: dict[str, str] | None = None,
                  log_file: str | None = None) -> Any:
    """A SparkSession: ``master``, else spark-submit's, else ``local[*]``; ``conf``: more Spark settings (e.g. an
    event log), over :data:`DEFAULT_CONF` and, for a local JVM launched here, :data:`LOCAL_CONF` (a key given in
    ``conf`` or to spark-submit is left as given). A local session's workers run this Python (otherwise they
    would start whatever ``python3`` is first on PATH). ``log_file``: where the JVM launched here writes its
    output (its log, its tasks' errors, the Python workers' stderr), instead of this process's stderr."""
    require_spark()
    check_java()
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    defaults = dict(DEFAULT_CONF)
    # under spark-submit (which starts the JVM and says where) the master is its --master
    if master or not os.environ.get("PYSPARK_GATEWAY_PORT"):
        master = master or "local[*]"
        builder = builder.master(master)
        if master.startswith("local"):
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            if not os.environ.get("PYSPARK_GATEWAY_PORT"):  # the JVM is launched below, with these options
                defaults.update(LOCAL_CONF)
    builder = (builder.appName(app)
               .config("spark.ui.showConsoleProgress", "false")
               # notes of a few kB to a few hundred kB: Arrow batches of 256 rows keep a worker's input small
               .config("spark.sql.execution.arrow.maxRecordsPerBatch", "256"))
    settings = dict(conf or {})
    for key, value in defaults.items():
        if key not in settings and not _set_already(key):
            settings[key] = value
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        with _output_to(log_file):
            session = builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001 - the JVM failed to start: say so in one line
        raise ShareNerError(f"cannot start Spark ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})") from None
    _quiet_when_the_jvm_is_gone(session.sparkContext)
    return session


def _quiet_when_the_jvm_is_gone(sc: Any) -> None:
    """PySpark's accumulator server (a thread of this process, which the JVM sends the tasks' updates to) prints a
    traceback on stderr when the JVM's connection to it breaks: a JVM that died is reported once, in one line, by
    the call that finds it gone. Its other errors are still printed."""
    server = getattr(sc, "_accumulatorServer", None)
    if server is None:
        return
    original = server.handle_error

    def handle_error(request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], (EOFError, ConnectionError)):
            original(request, client_address)

    server.handle_error = handle_error


@contextlib.contextmanager
def _output_to(log_file: str | None) -> Any:
    """Within the block, this process's standard output and error (file descriptors 1 and 2, which the JVM
    launched in it inherits) go to ``log_file``; nothing changes when there is none, or a JVM runs already."""
    from pyspark import SparkContext

    if log_file is None or os.environ.get("PYSPARK_GATEWAY_PORT") or SparkContext._gateway is not None:
        yield
        return
    fd = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for f in (fd, *saved):
            os.close(f)


class _Fs:
    """The Hadoop file system of the output directory, through the JVM (local, HDFS, S3, DBFS alike)."""

    def __init__(self, spark: Any, root: str) -> None:
        jvm = spark.sparkContext._jvm
        self.jvm = jvm
        self.root = root.rstrip("/")
        self.fs = jvm.org.apache.hadoop.fs.Path(self.root).getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())

    def path(self, *parts: str) -> Any:
        return self.jvm.org.apache.hadoop.fs.Path("/".join((self.root, *parts)))

    def exists(self, *parts: str) -> bool:
        return bool(self.fs.exists(self.path(*parts)))

    def read(self, *parts: str) -> str | None:
        if not self.exists(*parts):
            return None
        stream = self.fs.open(self.path(*parts))
        try:
            reader = self.jvm.java.io.BufferedReader(self.jvm.java.io.InputStreamReader(stream, "UTF-8"))
            lines = []
            while True:
                line = reader.readLine()
                if line is None:
                    break
                lines.append(line)
            return "\n".join(lines)
        finally:
            stream.close()

    def clear(self) -> None:
        """Delete what a run writes here (tables, chunk counts, run.json, summary.json); anything else stays."""
        for name in (*TABLES, CHUNKS_DIR, RUN_NAME, SUMMARY_NAME):
            if self.exists(name):
                self.fs.delete(self.path(name), True)

    def write(self, text: str, *parts: str) -> None:
        """Write a small file: to a temporary name, then renamed over the old one."""
        final = self.path(*parts)
        tmp = self.path(*parts[:-1], f".{parts[-1]}.tmp")
        stream = self.fs.create(tmp, True)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()
        if self.fs.exists(final):
            self.fs.delete(final, False)
        self.fs.rename(tmp, final)


def local_path(path: str) -> Path | None:
    """The local file system path of ``path`` (a plain path or a ``file:`` URI), None for another file system's."""
    if is_uri(path) and not path.startswith("file:"):
        return None
    return Path(path.removeprefix("file://").removeprefix("file:"))


def _locked(out: str) -> Any:
    """The exclusive lock of ``share-ner tag``'s outputs on ``out`` when it is a local directory (a Hadoop file
    system such as HDFS or S3 has no lock to take: a run there is not guarded against a second one)."""
    local = local_path(out)
    return contextlib.nullcontext() if local is None else output_lock(local, "share-ner spark")


def run_spark(opt: SparkOptions, spark: Any = None, *, log: Any = None, factory: Any = None,
              spark_log: str | None = None) -> RunSummary:
    """Run ``share-ner spark``; ``spark``: an existing session (else one is started, and stopped at the end, its
    JVM's output going to ``spark_log`` when given); ``factory``: a picklable annotator factory to use instead
    of ``opt.model``. Spark's own failures (a JVM that died, a job that failed for no reason of the input's) are
    a :class:`SparkFailure`; SIGTERM, like Ctrl-C, is a ``KeyboardInterrupt``."""
    fmt = opt.input_format or guess_format(opt.input)
    if fmt not in INPUT_FORMATS:
        raise ShareNerError(f"unknown input format {fmt!r}; expected one of {', '.join(INPUT_FORMATS)}")
    if not is_uri(opt.input) and not os.path.exists(opt.input):
        raise ShareNerError(f"{opt.input}: no such file or directory")
    with _locked(opt.out), sigterm_as_interrupt():
        started = time.perf_counter()
        own = spark is None
        if own:
            spark = start_session(opt.master, conf=dict(opt.conf), log_file=spark_log)
        try:
            with _stop_signals(spark) as stopped:
                try:
                    return _run(spark, opt, fmt, started, log, factory, stopped)
                except (ShareNerError, KeyboardInterrupt):
                    raise
                except Exception as exc:  # noqa: BLE001 - Spark's own failure: one line, never a traceback
                    if stopped.is_set():  # py4j's error for the call the signal interrupted
                        raise KeyboardInterrupt from None
                    raise spark_failure(exc) from None
        finally:
            if own:
                _stop(spark)


@contextlib.contextmanager
def _stop_signals(spark: Any) -> Iterator[threading.Event]:
    """Within the block (in the main thread), SIGINT and SIGTERM cancel the session's jobs, set the event given
    and raise ``KeyboardInterrupt``: an error py4j raises for the call the signal interrupted is that interrupt."""
    stopped = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stopped
        return

    def stop(signum: int, frame: Any) -> None:
        stopped.set()
        with contextlib.suppress(Exception):
            spark.sparkContext.cancelAllJobs()
        raise KeyboardInterrupt

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stopped
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _stop(spark: Any) -> None:
    """Stop the session; a JVM already gone is nothing to stop."""
    try:
        spark.stop()
    except Exception:  # noqa: BLE001 - the JVM died (the failure being reported is that)
        pass


class SparkFailure(ShareNerError):
    """Spark itself failed (its JVM died, a job failed for a cause that is not the input's)."""


RESUME = "the chunks already written are kept: run the same command again to resume"


def jvm_gone(exc: BaseException) -> bool:
    """Whether ``exc`` says the JVM no longer answers (killed, crashed): py4j's own errors, a refused connection."""
    module = type(exc).__module__ or ""
    return isinstance(exc, (ConnectionError, EOFError)) or (module.startswith("py4j")
                                                             and type(exc).__name__ != "Py4JJavaError")


def spark_failure(exc: BaseException) -> SparkFailure:
    """One line for a failure of Spark's: its JVM gone (a py4j error), or a job's cause."""
    if jvm_gone(exc):
        return SparkFailure(f"Spark's JVM stopped ({type(exc).__name__}); {RESUME}")
    return SparkFailure(f"Spark failed ({spark_cause(exc)}); {RESUME}")


_FULL = ("No space left on device", "Disk quota exceeded", "File too large")


def _write_error(exc: BaseException, out: str) -> ShareNerError | None:
    """A full disk (or a file size limit) met while writing the output, in one line, or None."""
    text = str(exc)
    what = next((w for w in _FULL if w in text), None)
    if what is None:
        return None
    return ShareNerError(f"{out}: cannot write ({what}; in the output directory or Spark's local directories, "
                         "spark.local.dir); the chunks already written are kept: free the space, then run the same "
                         "command again to resume")


def _model_key(model: str | None) -> str | None:
    """What run.json records of the model: a local model folder's content (the same model at another path resumes
    the run), else the path or URI given (None: the default model's content)."""
    if model is None:
        return model_identity(Path(default_model_dir()))
    local = local_path(model)
    return model_identity(local) if local is not None and local.is_dir() else model


def _run(spark: Any, opt: SparkOptions, fmt: str, started: float, log: Any, factory: Any,
         stopped: threading.Event) -> RunSummary:
    startup = time.perf_counter() - started
    plan = plan_input(spark, opt.input, fmt, id_col=opt.id_col, text_col=opt.text_col)
    per_chunk = opt.files_per_chunk or FILES_PER_CHUNK[fmt]
    chunks = [plan.files[i:i + per_chunk] for i in range(0, len(plan.files), per_chunk)]
    fs = _Fs(spark, opt.out)
    settings = {"input": opt.input, "input_format": fmt, "id_col": plan.columns[0], "text_col": plan.columns[1],
                "model": _model_key(opt.model), "include_errors": opt.include_errors, "files_per_chunk": per_chunk,
                "files": len(plan.files)}
    earlier = fs.read(RUN_NAME)
    if earlier is not None:
        try:
            before = json.loads(earlier)
        except ValueError:
            before = None
        if isinstance(before, dict) and before != settings:
            if opt.overwrite:
                _writing(fs.clear, opt.out)
            else:
                diff = ", ".join(f"{k} {before.get(k)!r} then {v!r}" for k, v in settings.items()
                                 if before.get(k) != v)
                raise ShareNerError(f"{opt.out} holds a run with other settings ({diff}); resume with the same "
                                    "options, use another --out, or start afresh with --overwrite")
    _writing(lambda: fs.write(json.dumps(settings, indent=1) + "\n", RUN_NAME), opt.out)
    sc = spark.sparkContext
    duplicates = None
    if needs_duplicate_pass(plan):
        found = _reading(spark, plan, lambda: repeated(spark, plan, read_settings(plan, opt.include_errors, "utf-8")))
        duplicates = sc.broadcast(found)
    job = _Job(spark, opt, plan, factory if factory is not None else opt.model, duplicates, log, stopped)
    kept: list[str] = []
    workers: dict[str, dict[str, float]] = {}
    totals = RunSummary(out=opt.out, rejects_file=str(fs.path("rejects")))
    for k, chunk in enumerate(chunks):
        name = f"chunk={k:05d}"
        if _committed(fs, name):
            kept.append(name)
            continue
        got = job.annotate(chunk, fs, name, f"chunk {k + 1}/{len(chunks)}")
        rejects = _ordered(plan, got["rejects"] + unread_rejects(plan, chunk) + lost_rejects(plan, chunk,
                                                                                              got["read"]))
        counts = {c: got[c] for c in COUNTS} | {"rejected": len(rejects),
                                                "complete": not any(f.key in plan.corrupt for f in chunk)}
        _writing(lambda: _rejects_frame(spark, rejects).write.mode("overwrite").parquet(str(fs.path("rejects", name))),
                 opt.out)
        _writing(lambda: fs.write(json.dumps(counts) + "\n", CHUNKS_DIR, f"{name}.json"), opt.out)  # last: done
        _add_counts(totals, counts)
        add_workers(workers, got["workers"])
        if log is not None:
            print(f"share-ner: chunk {k + 1}/{len(chunks)} written", file=log)
    # as share-ner tag counts: the whole output at the top level (kept chunks included), this run's notes apart
    summary = totals
    summary.tagged, summary.tagged_tokens = totals.notes, totals.tokens
    for name in kept:
        counts = json.loads(fs.read(CHUNKS_DIR, f"{name}.json") or "{}")
        summary.skipped_done += counts["notes"]
        _add_counts(summary, counts)
    summary.jobs = spark.sparkContext.defaultParallelism
    summary.startup_seconds = startup
    summary.seconds = time.perf_counter() - started
    data = summary.to_dict()
    data.update(chunks=len(chunks), chunks_kept=len(kept), input_format=fmt,
                master=spark.sparkContext.master, workers=workers)
    _writing(lambda: fs.write(json.dumps(data, indent=1) + "\n", SUMMARY_NAME), opt.out)
    return summary


def _writing(write: Callable[[], Any], out: str) -> Any:
    """``write()``; a full disk is one line."""
    try:
        return write()
    except Exception as exc:  # noqa: BLE001 - py4j's error around the JVM's IOException
        error = _write_error(exc, out)
        if error is not None:
            raise error from None
        raise


def _reading(spark: Any, plan: InputPlan, action: Callable[[], Any]) -> Any:
    """``action()`` (a job over the input's files), run again with each file Spark cannot read (a corrupt Parquet
    file, a truncated ``.gz``) read leniently: what it lost is the reject of that file."""
    keys = {f.key for f in plan.files}
    while True:
        try:
            with whole_files(spark) if plan.fmt == "csv" else contextlib.nullcontext():
                return action()
        except Exception as exc:  # noqa: BLE001 - Spark's job failure, classified below
            bad = failed_file(exc)
            if bad is None or bad[0] not in keys or bad[0] in plan.corrupt:
                raise
            plan.corrupt[bad[0]] = bad[1]


class _Job:
    """The chunks' Spark jobs: one pass over a chunk's notes, which writes the mentions while an accumulator
    gathers the counts and rejects; a job that fails is run again where that can succeed."""

    def __init__(self, spark: Any, opt: SparkOptions, plan: InputPlan, model: Any, duplicates: Any, log: Any,
                 stopped: threading.Event) -> None:
        self.spark, self.opt, self.plan, self.model = spark, opt, plan, model
        self.duplicates, self.log, self.stopped = duplicates, log, stopped

    def annotate(self, chunk: list[InputFile], fs: _Fs, name: str, which: str) -> dict[str, Any]:
        """Annotate ``chunk`` and write its mentions: the tally of the run that succeeded. A file Spark cannot read
        is read again leniently; a Python worker that crashed has the chunk annotated again, each batch in a child
        process, so that the note that crashes it is rejected alone."""
        spark, opt = self.spark, self.opt
        sc = spark.sparkContext
        guarded = False
        while True:
            tally = sc.accumulator(Tally.empty(), Tally())
            how = read_settings(self.plan, opt.include_errors, "utf-8", self.duplicates)
            try:
                with whole_files(spark) if self.plan.fmt == "csv" else contextlib.nullcontext():
                    records = chunk_records(spark, self.plan, chunk, how, tally)
                    if records is None:
                        mentions = spark.createDataFrame([], mention_schema())
                    else:
                        records = _spread(records, opt.partitions, sc.defaultParallelism)
                        mentions = annotate_records(records, tally, self.model, ship_model=opt.ship_model,
                                                    guarded=guarded)
                    # the one pass over the chunk's notes: the mentions written, the rest counted into the accumulator
                    mentions.write.mode("overwrite").parquet(str(fs.path("mentions", name)))
                return tally.value
            except Exception as exc:  # noqa: BLE001 - Spark's job failure, classified here
                if self.stopped.is_set():  # the jobs cancelled by Ctrl-C or SIGTERM
                    raise KeyboardInterrupt from None
                if jvm_gone(exc):
                    raise spark_failure(exc) from None
                line = model_error_line(exc)
                if line is not None:
                    raise ShareNerError(line) from None
                bad = failed_file(exc)
                if bad is not None and bad[0] in {f.key for f in chunk} and bad[0] not in self.plan.corrupt:
                    self.plan.corrupt[bad[0]] = bad[1]
                    self._say(f"{which}: cannot read {bad[0]} ({bad[1]}); reading what it holds")
                    continue
                if CRASHED in str(exc) and not guarded:
                    guarded = True
                    self._say(f"{which}: a Python worker crashed; annotating the chunk again, each batch in a child "
                              "process")
                    continue
                error = _write_error(exc, opt.out)
                if error is not None:
                    raise error from None
                files = ", ".join(f.relative for f in chunk[:3]) + (" ..." if len(chunk) > 3 else "")
                raise SparkFailure(f"{which} ({files}) failed: {spark_cause(exc)}; {RESUME}") from None

    def _say(self, line: str) -> None:
        if self.log is not None:
            print(f"share-ner: {line}", file=self.log)


def _ordered(plan: InputPlan, rejects: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The rejects in input order (files in the plan's order, then rows), whatever order the tasks ended in."""
    order = {f.source(): i for i, f in enumerate(plan.files)}
    return sorted(rejects, key=lambda r: (order.get(r[2], len(order)), r[3] or 0, r[0] or "", r[1]))


def _rejects_frame(spark: Any, rejects: list[tuple[Any, ...]]) -> Any:
    """The rejects as a one-partition DataFrame, handed to the JVM as Arrow (a list of rows would need a Python
    worker to unpickle them)."""
    pa = require_pyarrow()
    columns = list(zip(*rejects)) if rejects else [[], [], [], []]
    return spark.createDataFrame(pa.table({"note_id": pa.array(columns[0], pa.string()),
                                           "reason": pa.array(columns[1], pa.string()),
                                           "source": pa.array(columns[2], pa.string()),
                                           "row": pa.array(columns[3], pa.int64())}))


def _add_counts(summary: RunSummary, counts: dict[str, Any]) -> None:
    for name in (*COUNTS, "rejected"):
        setattr(summary, name, getattr(summary, name) + counts.get(name, 0))


def _committed(fs: _Fs, name: str) -> bool:
    """Whether chunk ``name`` is done: both tables committed (``_SUCCESS``) and its counts written after them, with
    every file read whole (a chunk with a file Spark could read only in part is redone, once the file is
    repaired)."""
    if not (all(fs.exists(t, name, "_SUCCESS") for t in TABLES) and fs.exists(CHUNKS_DIR, f"{name}.json")):
        return False
    try:
        return json.loads(fs.read(CHUNKS_DIR, f"{name}.json") or "{}").get("complete", True) is not False
    except ValueError:
        return False


def _spread(notes: Any, partitions: int | None, cores: int) -> Any:
    """The notes over ``partitions`` tasks if asked, else as read when that gives at least 3 tasks per core, else
    over 3 tasks per core by the shuffle of a repartition. Fewer cannot balance the cores: one CSV export is read
    by one task, and a Parquet file split in several tasks may still hold one row group, which the task holding
    its middle reads whole while the others get nothing."""
    if partitions:
        return notes.repartition(partitions)
    if notes.rdd.getNumPartitions() < 3 * cores:
        return notes.repartition(3 * cores)
    return notes
