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

import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from typing import Any

from share_ner.batch.runner import RunSummary
from share_ner.errors import ShareNerError
from share_ner.formats.parquet import require_pyarrow
from share_ner.inputs.mimic import MIMIC_III, MIMIC_IV
from share_ner.io import GOLD_SUFFIXES
from share_ner.spark import Tally, add_workers, annotate_counted, check_columns, model_error_line, require_spark

INPUT_FORMATS = ("csv", "parquet", "text")
TABLES = ("mentions", "rejects")
CHUNKS_DIR = "chunks"  # OUT/chunks/chunk=K.json: a chunk's counts, written once its tables are committed
COUNTS = ("notes", "mentions", "tokens", "characters")
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


# Settings of the sessions share-ner starts, unless the caller's conf or spark-submit's --conf set them: the
# Python daemon that loads the model once and forks the workers from it (share_ner.spark_daemon).
DEFAULT_CONF = {"spark.python.daemon.module": "share_ner.spark_daemon"}
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
    """The input format an INPUT path announces: csv by name, parquet by name or content, else a directory of
    note files."""
    name = path.rstrip("/").lower()
    if name.endswith((".csv", ".csv.gz")):
        return "csv"
    if name.endswith(".parquet"):
        return "parquet"
    if "://" not in path and os.path.isdir(path):
        for _, _, files in os.walk(path):
            if any(f.endswith(".parquet") for f in files):
                return "parquet"
            if any(f.lower().endswith((".csv", ".csv.gz")) for f in files):
                return "csv"
    return "text"


def start_session(master: str | None, app: str = "share-ner", conf: dict[str, str] | None = None) -> Any:
    """A SparkSession: ``master``, else spark-submit's, else ``local[*]``; ``conf``: more Spark settings (e.g. an
    event log), over :data:`DEFAULT_CONF` and, for a local JVM launched here, :data:`LOCAL_CONF` (a key given in
    ``conf`` or to spark-submit is left as given). A local session's workers run this Python (otherwise they
    would start whatever ``python3`` is first on PATH)."""
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
        return builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001 - the JVM failed to start: say so in one line
        raise ShareNerError(f"cannot start Spark ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})") from None


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


def _reader(spark: Any, fmt: str) -> Any:
    if fmt == "csv":
        # MIMIC exports: a header, fields quoted with "" inside, notes spanning lines. Read as ISO-8859-1, one
        # character per byte, so that each note's bytes are decoded (and undecodable ones rejected) as share-ner
        # tag does; every column stays a string.
        return (spark.read.option("header", "true").option("multiLine", "true").option("escape", '"')
                .option("encoding", "ISO-8859-1").format("csv"))
    if fmt == "parquet":
        return spark.read.format("parquet")
    return (spark.read.format("binaryFile").option("pathGlobFilter", "*.txt")
            .option("recursiveFileLookup", "true"))


def _columns(df: Any, fmt: str, opt: SparkOptions) -> tuple[str, str, Any]:
    """The id and text columns, and the rows to keep (MIMIC-III: ISERROR rows left out, as share-ner tag does)."""
    from pyspark.sql import functions as F

    if fmt == "text":
        gold = None
        for suffix in GOLD_SUFFIXES:
            cond = F.col("path").endswith(suffix)
            gold = cond if gold is None else gold | cond
        return "path", "content", ~gold
    keep = F.lit(True)
    if fmt == "csv" and not (opt.id_col and opt.text_col):
        upper = {c.upper(): c for c in df.columns}
        layout = MIMIC_III if MIMIC_III.id_column in upper else MIMIC_IV if MIMIC_IV.id_column.upper() in upper else None
        if layout is None and not opt.id_col:
            raise ShareNerError(f"{opt.input}: no ROW_ID or note_id column (not a MIMIC-III NOTEEVENTS or MIMIC-IV-Note "
                                f"export; pass --id-col and --text-col); columns: {', '.join(df.columns)}")
        if layout is not None:
            id_col = opt.id_col or upper.get(layout.id_column.upper(), layout.id_column)
            text_col = opt.text_col or upper.get(layout.text_column.upper(), layout.text_column)
            error = upper.get((layout.error_column or "").upper())
            if error and not opt.include_errors:
                keep = F.coalesce(F.trim(F.col(error)) != "1", F.lit(True))
            return id_col, text_col, keep
    return opt.id_col or "note_id", opt.text_col or "text", keep


def run_spark(opt: SparkOptions, spark: Any = None, *, log: Any = None, factory: Any = None) -> RunSummary:
    """Run ``share-ner spark``; ``spark``: an existing session (else one is started, and stopped at the end);
    ``factory``: a picklable annotator factory to use instead of ``opt.model``."""
    fmt = opt.input_format or guess_format(opt.input)
    if fmt not in INPUT_FORMATS:
        raise ShareNerError(f"unknown input format {fmt!r}; expected one of {', '.join(INPUT_FORMATS)}")
    if "://" not in opt.input and not os.path.exists(opt.input):
        raise ShareNerError(f"{opt.input}: no such file or directory")
    started = time.perf_counter()
    own = spark is None
    if own:
        spark = start_session(opt.master, conf=dict(opt.conf))
    try:
        return _run(spark, opt, fmt, started, log, factory)
    finally:
        if own:
            spark.stop()


def _run(spark: Any, opt: SparkOptions, fmt: str, started: float, log: Any, factory: Any) -> RunSummary:
    startup = time.perf_counter() - started
    reader = _reader(spark, fmt)
    try:
        whole = reader.load(opt.input)
    except Exception as exc:  # noqa: BLE001 - Spark's AnalysisException and friends: one line
        raise ShareNerError(f"{opt.input}: cannot read as {fmt} ({str(exc).splitlines()[0][:200]})") from None
    id_col, text_col, keep = _columns(whole, fmt, opt)
    check_columns(whole, id_col, text_col, source=opt.input)
    files = sorted(whole.inputFiles())
    if not files:
        raise ShareNerError(f"{opt.input}: no {fmt} input files")
    per_chunk = opt.files_per_chunk or FILES_PER_CHUNK[fmt]
    chunks = [files[i:i + per_chunk] for i in range(0, len(files), per_chunk)]
    fs = _Fs(spark, opt.out)
    settings = {"input": opt.input, "input_format": fmt, "id_col": id_col, "text_col": text_col,
                "model": opt.model, "include_errors": opt.include_errors, "files_per_chunk": per_chunk,
                "files": len(files)}
    earlier = fs.read(RUN_NAME)
    if earlier is not None:
        try:
            before = json.loads(earlier)
        except ValueError:
            before = None
        if isinstance(before, dict) and before != settings:
            diff = ", ".join(f"{k} {before.get(k)!r} then {v!r}" for k, v in settings.items() if before.get(k) != v)
            raise ShareNerError(f"{opt.out} holds a run with other settings ({diff}); resume with the same options "
                                "or use another --out")
    fs.write(json.dumps(settings, indent=1) + "\n", RUN_NAME)
    sc = spark.sparkContext
    model: Any = factory if factory is not None else opt.model
    kept: list[str] = []
    workers: dict[str, dict[str, float]] = {}
    totals = RunSummary(out=opt.out, rejects_file=str(fs.path("rejects")))
    if fmt != "text":  # each chunk read with the schema found above, not inferred again
        reader = reader.schema(whole.schema)
    for k, chunk in enumerate(chunks):
        name = f"chunk={k:05d}"
        if _committed(fs, name):
            kept.append(name)
            continue
        notes = reader.load(chunk).where(keep)
        if fmt == "text":
            notes = notes.select("path", "content")
        notes = _spread(notes, opt.partitions, sc.defaultParallelism)
        tally = sc.accumulator(Tally.empty(), Tally())
        mentions = annotate_counted(notes, tally, text_col, id_col, model, ship_model=opt.ship_model,
                                    _latin1=fmt == "csv", _id_from_path=fmt == "text")
        try:
            # the one pass over the chunk's notes: the mentions written, the rest counted into the accumulator
            mentions.write.mode("overwrite").parquet(str(fs.path("mentions", name)))
        except Exception as exc:  # noqa: BLE001 - a worker that could not load the model: one line
            line = model_error_line(exc)
            if line is not None:
                raise ShareNerError(line) from None
            raise
        got = tally.value
        _rejects_frame(spark, got["rejects"]).write.mode("overwrite").parquet(str(fs.path("rejects", name)))
        counts = {c: got[c] for c in COUNTS} | {"rejected": len(got["rejects"])}
        fs.write(json.dumps(counts) + "\n", CHUNKS_DIR, f"{name}.json")  # last: the chunk is done
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
    fs.write(json.dumps(data, indent=1) + "\n", SUMMARY_NAME)
    return summary


def _rejects_frame(spark: Any, rejects: list[tuple[str, str]]) -> Any:
    """The rejects as a one-partition DataFrame, handed to the JVM as Arrow (a list of rows would need a Python
    worker to unpickle them)."""
    pa = require_pyarrow()
    ids, reasons = (list(c) for c in zip(*rejects)) if rejects else ([], [])
    return spark.createDataFrame(pa.table({"note_id": pa.array(ids, pa.string()),
                                           "reason": pa.array(reasons, pa.string())}))


def _add_counts(summary: RunSummary, counts: dict[str, int]) -> None:
    for name in (*COUNTS, "rejected"):
        setattr(summary, name, getattr(summary, name) + counts[name])


def _committed(fs: _Fs, name: str) -> bool:
    """Whether chunk ``name`` is done: both tables committed (``_SUCCESS``) and its counts written after them."""
    return all(fs.exists(t, name, "_SUCCESS") for t in TABLES) and fs.exists(CHUNKS_DIR, f"{name}.json")


def _spread(notes: Any, partitions: int | None, cores: int) -> Any:
    """The notes over ``partitions`` tasks if asked, else as read when that gives at least 3 tasks per core, else
    over 3 tasks per core by the shuffle of a repartition. Fewer cannot balance the cores: one gzipped CSV is one
    task, and a Parquet file split in several tasks may still hold one row group, which the task holding its middle
    reads whole while the others get nothing."""
    if partitions:
        return notes.repartition(partitions)
    if notes.rdd.getNumPartitions() < 3 * cores:
        return notes.repartition(3 * cores)
    return notes
