"""Annotating a DataFrame of notes on Spark (:func:`annotate`), and the per-partition work behind it and
``share-ner spark``; see :mod:`share_ner.spark`.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import os
import resource
import shutil
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any, Callable, Iterator

import share_ner.spark.daemon as spark_daemon
from share_ner.batch.annotate import NoteResult, annotate_notes, count_tokens, load_annotator
from share_ner.batch.processes import settle_heap
from share_ner.batch.workers import Death, WorkerPool
from share_ner.default_model.build import default_model_dir
from share_ner.document import ATTRIBUTE_NAMES, Document
from share_ner.errors import ShareNerError
from share_ner.formats.parquet import BASE_COLUMNS, mention_rows
from share_ner.spark.daemon import PRELOAD_ENV
from share_ner.spark.inputs import RECORD_COLUMNS, api_records

# Notes handed to the annotator at once, as share-ner tag's default batches (its --batch-notes / --batch-chars).
BATCH_NOTES = 16
BATCH_CHARS = 1_000_000
# A worker that cannot load the model raises with this prefix; the driver turns it into one line.
MODEL_ERROR = "share-ner model error: "
KINDS = ("mention", "reject", "note", "worker")

_MODELS: dict[str, Any] = {}  # per Python worker: model key -> loaded annotator


def require_spark() -> Any:
    """The ``pyspark`` module, or a one-line error saying how to install it."""
    try:
        import pyspark
    except ImportError:
        raise ShareNerError("share-ner spark needs PySpark: pip install 'share-ner[spark]'") from None
    return pyspark


# ---------------------------------------------------------------- schemas


def mention_schema(attributes: bool = True) -> Any:
    """The Spark schema of the mentions DataFrame (the Parquet table's columns)."""
    from pyspark.sql import types as T

    span = T.StructType([T.StructField("start", T.IntegerType()), T.StructField("end", T.IntegerType())])
    fields = [T.StructField("note_id", T.StringType()), T.StructField("mention", T.IntegerType()),
              T.StructField("spans", T.ArrayType(span)), T.StructField("text", T.StringType()),
              T.StructField("cui", T.StringType()), T.StructField("name", T.StringType())]
    if attributes:
        fields += [T.StructField(name, T.StringType()) for name in ATTRIBUTE_NAMES]
    return T.StructType(fields)


def _all_schema(attributes: bool) -> Any:
    from pyspark.sql import types as T

    extra = [T.StructField("reason", T.StringType()), T.StructField("source", T.StringType()),
             T.StructField("row", T.LongType()), T.StructField("tokens", T.LongType()),
             T.StructField("characters", T.LongType()), T.StructField("mentions", T.IntegerType()),
             T.StructField("rss_kb", T.LongType()), T.StructField("private_kb", T.LongType()),
             T.StructField("cpu_seconds", T.DoubleType()), T.StructField("load_seconds", T.DoubleType()),
             T.StructField("preload_seconds", T.DoubleType()), T.StructField("process_cpu_seconds", T.DoubleType())]
    return T.StructType([T.StructField("kind", T.StringType()), *mention_schema(attributes).fields, *extra])


# ---------------------------------------------------------------- in the Python workers


def _annotator(key: str, loader: Callable[[], Any]) -> tuple[Any, float]:
    """The worker's annotator for ``key`` (loaded on first use) and the seconds this call spent loading it."""
    if key in _MODELS:
        return _MODELS[key], 0.0
    if spark_daemon.PRELOADED.get("key") == key:  # loaded by the daemon this worker was forked from
        _MODELS.clear()
        _MODELS[key] = spark_daemon.PRELOADED["annotator"]
        return _MODELS[key], 0.0
    start = time.perf_counter()
    try:
        annotator = loader()
    except Exception as exc:  # noqa: BLE001 - one line for the driver, whatever the cause
        what = str(exc) if isinstance(exc, ShareNerError) else f"{type(exc).__name__}: {exc}"
        raise RuntimeError(f"{MODEL_ERROR}{what}") from None
    settle_heap()
    _MODELS.clear()  # one model per worker at a time
    _MODELS[key] = annotator
    return annotator, time.perf_counter() - start


def _load_shipped(name: str) -> Any:
    from pyspark import SparkFiles

    return load_annotator(SparkFiles.get(name))


def _annotated(batches: Iterator[Any], *, annotator: Any, attributes: bool,
               guarded: bool = False) -> Iterator[list[dict[str, Any]]]:
    """The output rows of each batch of records (:data:`share_ner.spark.inputs.RECORD_SCHEMA`): ``mention``,
    ``reject`` and ``note`` rows (a ``kind`` key each). ``guarded``: each batch of notes is annotated in a child
    process (:func:`_isolated`), so that a note that crashes its process is rejected alone."""
    pool = _child_pool(annotator) if guarded else None
    try:
        for batch in batches:
            out: list[dict[str, Any]] = []
            docs: list[Document] = []
            chars = 0

            def flush() -> None:
                results = annotate_notes(annotator, docs) if pool is None else _isolated(pool, docs)
                for doc, result in zip(docs, results):
                    if result.error is not None:
                        out.append({"kind": "reject", "note_id": doc.id, "reason": result.error,
                                    "source": sources[doc.id][0], "row": sources[doc.id][1]})
                        continue
                    out.append({"kind": "note", "note_id": doc.id, "tokens": result.tokens,
                                "characters": len(doc.text), "mentions": len(result.mentions)})
                    out.extend(dict(r, kind="mention") for r in mention_rows(doc.id, result.mentions, doc.text,
                                                                             attributes))
                docs.clear()

            sources: dict[str, tuple[Any, Any]] = {}
            for note_id, text, reason, source, row in zip(*(batch[c].tolist() for c in RECORD_COLUMNS)):
                row = _int_or_none(row)
                if isinstance(reason, str):
                    out.append({"kind": "reject", "note_id": note_id if isinstance(note_id, str) else "",
                                "reason": reason, "source": source, "row": row})
                    continue
                docs.append(Document(note_id, text))
                sources[note_id] = (source, row)
                chars += len(text)
                if len(docs) >= BATCH_NOTES or chars >= BATCH_CHARS:
                    flush()
                    chars = 0
            flush()
            yield out
    finally:
        if pool is not None:
            pool.close(kill=True)


def _int_or_none(value: Any) -> int | None:
    """A nullable integer column's value from pandas (None, NaN or pandas.NA when null)."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _child_pool(annotator: Any) -> WorkerPool:
    """One worker process forked from this one (the annotator already loaded), replaced when it dies."""
    import multiprocessing

    return WorkerPool(1, functools.partial(annotate_notes, annotator), context=multiprocessing.get_context("fork"))


def _isolated(pool: WorkerPool, docs: list[Document]) -> list[NoteResult]:
    """:func:`annotate_notes` of ``docs`` in ``pool``'s worker; when it dies, each note alone, and a note whose
    worker dies is rejected with the cause (``worker died (signal 9)``), as ``share-ner tag --jobs N`` does."""

    def run(batch: list[Document]) -> list[NoteResult] | str:
        pool.submit(None, batch)
        while True:
            for event in pool.wait(timeout=1.0):
                if isinstance(event, Death):
                    if event.task is None and pool.outstanding():
                        continue  # died between tasks: the batch is still queued
                    return event.reason()
                return event.result

    got = run(docs)
    if not isinstance(got, str):
        return got
    results = []
    for doc in docs:
        one = run([doc]) if len(docs) > 1 else got
        results.append(one[0] if not isinstance(one, str) else NoteResult(doc.id, (), count_tokens(doc.text), one))
    return results


def _frame(rows: list[dict[str, Any]], columns: list[str]) -> Any:
    import pandas as pd

    # object columns with None, not NaN, where a row has no value (a NaN in ``spans`` is no list)
    return pd.DataFrame([[r.get(c) for c in columns] for r in rows], columns=columns, dtype=object)


def _worker_figures(key: str, cpu0: float, load_seconds: float) -> dict[str, Any]:
    """This task's figures: the worker's peak memory and its own memory (not shared with the daemon it was
    forked from), its CPU seconds in the task (model load left out), the seconds it spent loading the model, the
    seconds the daemon spent loading it for the worker (0 if it did not), and its whole CPU seconds so far (its
    start and model load included; not the daemon's)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"rss_kb": usage.ru_maxrss, "private_kb": _private_kb(), "cpu_seconds": time.process_time() - cpu0,
            "load_seconds": load_seconds,
            "preload_seconds": spark_daemon.PRELOADED["seconds"] if spark_daemon.PRELOADED.get("key") == key else 0.0,
            "process_cpu_seconds": usage.ru_utime + usage.ru_stime}


def _private_kb() -> int:
    """The memory this process does not share with others (Linux's Private_Clean + Private_Dirty), 0 if unknown."""
    try:
        with open("/proc/self/smaps_rollup", encoding="ascii") as f:
            return sum(int(line.split()[1]) for line in f if line.startswith(("Private_Clean:", "Private_Dirty:")))
    except (OSError, ValueError, IndexError):
        return 0


def _partition(batches: Iterator[Any], *, key: str, loader: Callable[[], Any], columns: list[str],
               **how: Any) -> Iterator[Any]:
    """mapInPandas body of :func:`annotate_all`: every row kind, and one worker row at the end."""
    annotator, load_seconds = _annotator(key, loader)
    cpu0 = time.process_time()
    for rows in _annotated(batches, annotator=annotator, **how):
        if rows:
            yield _frame(rows, columns)
    yield _frame([{"kind": "worker", "note_id": str(os.getpid()), **_worker_figures(key, cpu0, load_seconds)}],
                 columns)


class Tally:
    """Accumulator param of :func:`annotate_counted`: the counts of ``share-ner tag``'s summary, the rejects
    (note id, reason, source, row; never the text), the rows read of files Spark could read only in part, and each
    Python worker's figures, added up over the tasks."""

    COUNTS = ("notes", "mentions", "tokens", "characters", "skipped_iserror", "skipped_category")

    @staticmethod
    def empty() -> dict[str, Any]:
        return {**dict.fromkeys(Tally.COUNTS, 0), "rejects": [], "workers": {}, "read": {}}

    def zero(self, value: Any) -> dict[str, Any]:
        return self.empty()

    def addInPlace(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:  # noqa: N802 - pyspark's name
        """Add ``b``, which may hold some of the keys only (the readers of :mod:`share_ner.spark.inputs` add their
        counts)."""
        for name in Tally.COUNTS:
            a[name] += b.get(name, 0)
        a["rejects"].extend(b.get("rejects", ()))
        for file, rows in b.get("read", {}).items():
            a["read"][file] = a["read"].get(file, 0) + rows
        add_workers(a["workers"], b.get("workers", {}))
        return a


def add_workers(into: dict[str, dict[str, Any]], more: dict[str, dict[str, Any]]) -> None:
    """Add the worker figures ``more`` (by process id) to ``into``: peak memory the max, seconds summed."""
    for pid, w in more.items():
        have = into.setdefault(pid, {"rss_kb": 0, "private_kb": 0, "cpu_seconds": 0.0, "load_seconds": 0.0,
                                     "preload_seconds": 0.0, "process_cpu_seconds": 0.0})
        for name in ("rss_kb", "private_kb", "preload_seconds", "process_cpu_seconds"):
            have[name] = max(have[name], w[name])
        have["cpu_seconds"] += w["cpu_seconds"]
        have["load_seconds"] += w["load_seconds"]


def _counted_partition(batches: Iterator[Any], *, key: str, loader: Callable[[], Any], columns: list[str],
                       tally: Any, **how: Any) -> Iterator[Any]:
    """mapInPandas body of :func:`annotate_counted`: mention rows out, everything else into ``tally``."""
    annotator, load_seconds = _annotator(key, loader)
    cpu0 = time.process_time()
    mine = Tally.empty()
    for rows in _annotated(batches, annotator=annotator, **how):
        mentions = []
        for r in rows:
            kind = r["kind"]
            if kind == "mention":
                mentions.append(r)
            elif kind == "reject":
                mine["rejects"].append((r["note_id"], r["reason"], r["source"], r["row"]))
            else:
                mine["notes"] += 1
                mine["mentions"] += r["mentions"]
                mine["tokens"] += r["tokens"]
                mine["characters"] += r["characters"]
        if mentions:
            yield _frame(mentions, columns)
    mine["workers"][str(os.getpid())] = _worker_figures(key, cpu0, load_seconds)
    tally.add(mine)


# ---------------------------------------------------------------- on the driver


def _model_loader(spark: Any, model: Any, ship_model: bool) -> tuple[str, Callable[[], Any], str | None]:
    """A key naming the model, a picklable function that loads it in a worker, and the directory the Python
    daemon loads it from before forking the workers (None: a factory, which each worker runs itself)."""
    if callable(model):  # an annotator factory, as share_ner.batch takes
        from pyspark import cloudpickle

        return "factory:" + hashlib.sha256(cloudpickle.dumps(model)).hexdigest(), model, None
    if model is None:
        model = default_model_dir()
    path = str(model)
    local = "://" not in path or path.startswith("file:")
    if local and not Path(path.removeprefix("file:")).is_dir():
        raise ShareNerError(f"{path}: no such model folder")
    if ship_model:
        if not local:
            raise ShareNerError(f"{path}: a shipped model must be a local directory")
        from pyspark import SparkFiles

        name = ship_archive(spark.sparkContext, Path(path.removeprefix("file:")).resolve())
        # where the executor unpacks it: the driver's files directory in local mode, else the executor's working
        # directory, where the daemon starts (SparkFiles' root on an executor)
        here = os.path.join(SparkFiles.getRootDirectory(), name)
        at = here if spark.sparkContext.master.startswith("local") else name
        return f"shipped:{name}", functools.partial(_load_shipped, name), at
    where = path.removeprefix("file:") if local else path
    return f"path:{path}", functools.partial(load_annotator, where), where


_SHIPPED: dict[tuple[str, str], str] = {}  # (application id, archive name) -> the archive added to it


def ship_archive(sc: Any, directory: Path) -> str:
    """Add the model ``directory`` to the job as a zip archive (``SparkContext.addArchive``; Spark refuses
    ``addFile`` of a directory outside local mode), which every executor unpacks into its working directory
    under the name returned: ``share-ner-model-<hash of the files>``, so that another model, or this one
    changed, is another archive."""
    digest = hashlib.sha256()
    files = sorted(p for p in directory.rglob("*") if p.is_file())
    for p in files:
        digest.update(p.relative_to(directory).as_posix().encode("utf-8") + b"\0")
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    name = f"share-ner-model-{digest.hexdigest()[:20]}"
    if (sc.applicationId, name) in _SHIPPED:
        return name
    folder = Path(tempfile.mkdtemp(prefix="share-ner-ship-"))
    atexit.register(shutil.rmtree, folder, True)
    archive = folder / f"{name}.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for p in files:
            z.write(p, p.relative_to(directory).as_posix())
    sc.addArchive(f"{archive}#{name}")
    _SHIPPED[(sc.applicationId, name)] = str(archive)
    return name


def check_columns(df: Any, *names: str, source: str = "the input") -> None:
    """A one-line error naming the first of ``names`` missing from ``df`` and the columns it has."""
    for name in names:
        if name not in df.columns:
            raise ShareNerError(f"{source}: no column {name!r}; columns: {', '.join(df.columns) or '(none)'}")


def annotate_all(df: Any, text_col: str = "text", id_col: str = "note_id", model: Any = None, *,
                 attributes: bool = True, ship_model: bool = False) -> Any:
    """Every output row, mentions and rejects and per-note counts together, with a ``kind`` column: ``mention``
    (the mention columns), ``reject`` (``note_id``, ``reason``), ``note`` (``note_id``, ``mentions``, ``tokens``,
    ``characters``) and one ``worker`` row per task (its peak memory and CPU seconds). Lazy, like any DataFrame:
    persist it before taking several results from it, or each one annotates again."""
    check_columns(df, id_col, text_col)
    schema = _all_schema(attributes)
    how, preload = _worker_args(df, model, attributes, ship_model)
    return _map(api_records(df, id_col, text_col), functools.partial(_partition, columns=schema.fieldNames(), **how),
                schema, preload)


def annotate_counted(df: Any, tally: Any, text_col: str = "text", id_col: str = "note_id", model: Any = None, *,
                     attributes: bool = True, ship_model: bool = False) -> Any:
    """The mentions DataFrame of :func:`annotate`, while the notes are counted and the rejects gathered into
    ``tally``, an accumulator made with :class:`Tally` (``sc.accumulator(Tally.empty(), Tally())``): one pass
    over the notes gives every output. Read ``tally.value`` after the one action that writes the mentions;
    Spark applies each task's update once (a failed or retried task's is dropped)."""
    check_columns(df, id_col, text_col)
    return annotate_records(api_records(df, id_col, text_col), tally, model, attributes=attributes,
                            ship_model=ship_model)


def annotate_records(records: Any, tally: Any, model: Any = None, *, attributes: bool = True,
                     ship_model: bool = False, guarded: bool = False) -> Any:
    """:func:`annotate_counted` of records already checked under the input contract
    (:data:`share_ner.spark.inputs.RECORD_SCHEMA`, as :mod:`share_ner.spark.job` reads them); ``guarded``:
    annotate each batch in a child process of the Python worker, so that a note that crashes it is rejected
    alone (a chunk is run so once one of its workers has crashed)."""
    schema = mention_schema(attributes)
    how, preload = _worker_args(records, model, attributes, ship_model)
    body = functools.partial(_counted_partition, columns=schema.fieldNames(), tally=tally, guarded=guarded, **how)
    return _map(records, body, schema, preload)


def _map(records: Any, body: functools.partial, schema: Any, preload: str | None) -> Any:
    """``mapInPandas(body)`` over the records. The function handed to Spark carries the session's Python
    environment with :data:`PRELOAD_ENV` naming the model and its directory ``preload`` (None: none), so that a
    Python daemon started for it (``spark.python.daemon.module=share_ner.spark.daemon``) loads the model before
    forking the workers; the session's environment is left as it was (the variable is part of the key Spark
    keeps its daemons under)."""
    environment = records.sparkSession.sparkContext.environment
    before = environment.get(PRELOAD_ENV)
    if preload is not None:
        environment[PRELOAD_ENV] = json.dumps({"key": body.keywords["key"], "path": preload})
    else:
        environment.pop(PRELOAD_ENV, None)
    try:
        return records.mapInPandas(body, schema)
    finally:
        if before is None:
            environment.pop(PRELOAD_ENV, None)
        else:
            environment[PRELOAD_ENV] = before


def _worker_args(df: Any, model: Any, attributes: bool, ship_model: bool) -> tuple[dict[str, Any], str | None]:
    """The keyword arguments of a partition function, and the directory the Python daemon preloads the model
    from (see :func:`_model_loader`)."""
    from pyspark.sql import SparkSession

    require_spark()
    spark = SparkSession.getActiveSession() or df.sparkSession
    key, loader, preload = _model_loader(spark, model, ship_model)
    return {"key": key, "loader": loader, "attributes": attributes}, preload


def annotate(df: Any, text_col: str = "text", id_col: str = "note_id", model: Any = None, *,
             attributes: bool = True, rejects: bool = False, ship_model: bool = False) -> Any:
    """One row per mention of the notes of ``df`` (columns ``note_id``, ``mention``, ``spans``, ``text``, ``cui``,
    ``name`` and, with ``attributes``, the ShARe/CLEF 2014 attribute columns, null when not computed).

    ``model``: a model directory every executor can read (default: the built-in model), or a picklable annotator
    factory as :func:`share_ner.batch.runner.run_batch` takes; ``ship_model``: copy a local model directory to the
    executors with the job. With ``rejects=True`` returns ``(mentions, rejects)``, both from one persisted
    annotation (``rejects``: ``note_id``, ``reason``).
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    every = annotate_all(df, text_col, id_col, model, attributes=attributes, ship_model=ship_model)
    names = list(BASE_COLUMNS) + (list(ATTRIBUTE_NAMES) if attributes else [])
    if not rejects:
        return every.where(F.col("kind") == "mention").select(*names)
    every = every.persist(StorageLevel.MEMORY_AND_DISK)
    return (every.where(F.col("kind") == "mention").select(*names),
            every.where(F.col("kind") == "reject").select("note_id", "reason"))


def model_error_line(exc: BaseException) -> str | None:
    """The one-line model error a worker raised, found in a Spark job failure, or None."""
    text = str(exc)
    at = text.find(MODEL_ERROR)
    if at < 0:
        return None
    line = text[at + len(MODEL_ERROR):].split("\n", 1)[0].strip()
    return f"cannot load the model on an executor: {line}"
