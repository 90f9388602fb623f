"""``share-ner spark``'s inputs, read under the input contract (:mod:`share_ner.inputs.contract`) as ``share-ner
tag`` reads them: the same notes, ids, rejects (with the same reasons) and counts.

On the driver, :func:`plan_input` lists the input's files in the contract's order (a path without a scheme by
share-ner's own listing, the one ``share-ner tag`` uses: symbolic links, FIFOs and 0-byte notes alike; a URI
through Hadoop's file system) and checks the columns, once: a CSV export's header, a Parquet table's schema. Note
files the contract rejects unread (hidden names, 0-byte files, FIFOs) are rejects from there on.
:func:`find_duplicates` reads every id once when no single task sees them all (a Parquet table, whose row groups
are read by several tasks; several CSV exports) and returns the later records of each id that repeats.
:func:`chunk_records` gives the records of a chunk of files (:data:`RECORD_SCHEMA`: a note, or a reject's reason):

- CSV: each file's lines, read by Spark as bytes (one task per file, in order), are cut into records by the
  parser ``share-ner tag`` uses (:func:`share_ner.inputs.mimic.iter_csv_lines`);
- Parquet: each row checked by :func:`share_ner.inputs.parquet.check_row`, as ``share-ner tag`` reads a table;
- note files: each file's bytes (Spark's ``binaryFile``) read by :func:`share_ner.inputs.files.note_from_bytes`.

A file Spark cannot read is read again another way: a corrupt Parquet file leniently (Spark's
``ignoreCorruptFiles``, for that file alone), and what it lost becomes a reject naming it; a ``.gz`` export cut
short or corrupt as its bytes, cut into records by ``share-ner tag``'s own reader, whose gzip reader stops where
tag's stops and says so in the same words.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import unquote

from share_ner.errors import InputError, ShareNerError
from share_ner.inputs.contract import (
    clean_id,
    column_kinds_problem,
    duplicate_reason,
    id_problem,
    is_hidden,
    note_name_problem,
    path_order,
    table_note_id,
)
from share_ner.inputs.files import note_from_bytes, walk_note_files
from share_ner.inputs.mimic import (
    CsvRecord,
    Layout,
    export_bytes,
    header_fields,
    header_layout,
    iter_csv_bytes,
    iter_csv_lines,
    layout_of,
)
from share_ner.inputs.parquet import check_row, table_files
from share_ner.io import doc_id_from_path, is_gold_file

RECORD_SCHEMA = "note_id string, text string, reason string, source string, row long"
RECORD_COLUMNS = ("note_id", "text", "reason", "source", "row")
CLAIM_SCHEMA = "note_id string, file string, row long"
CLAIM_COLUMNS = ("note_id", "file", "row")
HEADER_LINES = 1000  # lines read to find a CSV export's header (a quoted header may span lines)
# Spark reads each file of a scan whole, in one task, in order, when its splits may be this large and opening a
# file costs as much: a CSV export's records are cut in one pass over its lines.
WHOLE_FILES = {"spark.sql.files.maxPartitionBytes": str(1 << 40), "spark.sql.files.openCostInBytes": str(1 << 40),
               "spark.sql.files.minPartitionNum": "1"}
OUT_ROWS = 64  # records per Arrow batch handed back to Spark (notes of up to several MB each)
OUT_CHARS = 4_000_000
_FAILED_READ = re.compile(r"\[FAILED_READ_FILE[.A-Z_]*\][^\n]*?reading file (\S+?)\.?\s+SQLSTATE")
_PYTHON_ERROR = re.compile(r"\[PYTHON_EXCEPTION\][^\n]*\n(?:.*\n)*?([^\n]*)\n\s*SQLSTATE")
_CAUSE = re.compile(r"Caused by: ([\w.$]+)(?::[ ]?([^\n]*))?")


@dataclass(frozen=True)
class InputFile:
    """One file of the input: ``key`` names it as Spark's rows do (``scheme:/path``, not URL-encoded), ``path`` is
    what Spark is given to read it, ``relative`` its path below the input, ``problem`` why a note file is rejected
    unread."""

    key: str
    path: str
    relative: str
    problem: str | None = None
    size: int | None = None  # bytes, when the listing says

    def source(self) -> str:
        return source_of(self.key)


def source_of(key: str) -> str:
    """A file as rejects name it: a local path as such, any other as its URI."""
    return key.removeprefix("file:") if key.startswith("file:/") else key


@dataclass
class InputPlan:
    """What the driver found: the format, the files in order, the columns (CSV, Parquet) and the Parquet schema."""

    fmt: str
    root: str
    files: list[InputFile]
    layout: Layout | None = None  # the columns read (CSV: None when each export's header says)
    columns: tuple[str, str] = ("", "")  # the id and text columns (of the first CSV export)
    schema: Any = None  # Parquet: the table's Spark schema, read from its first file
    corrupt: dict[str, str] = field(default_factory=dict)  # file key -> what Spark could not read in it

    @property
    def several(self) -> bool:
        return len(self.files) > 1

    def by_key(self) -> dict[str, InputFile]:
        return {f.key: f for f in self.files}


def file_key(spark_path: str) -> str:
    """The key of a file as Spark names it in ``_metadata.file_path`` (URL-encoded) or ``inputFiles()``."""
    key = unquote(spark_path)
    return "file:" + key[len("file://"):] if key.startswith("file://") else key


def is_uri(path: str) -> bool:
    return "://" in path or path.startswith("file:")


# ---------------------------------------------------------------- listing, on the driver


def _local_files(root: Path, fmt: str) -> list[InputFile]:
    def entry(path: Path, problem: str | None = None, size: int | None = None) -> InputFile:
        relative = path.name if path == root else path.relative_to(root).as_posix()
        return InputFile("file:" + os.path.abspath(path), str(path), relative, problem, size)

    if fmt != "text":
        return [entry(p, size=p.stat().st_size) for _, p in table_files(root)]
    files = []
    for found in walk_note_files(root):
        problem = found.problem or note_name_problem(found.path.name)
        if problem is None:
            try:
                problem = "empty file" if found.path.stat().st_size == 0 else None
            except OSError as exc:
                problem = f"cannot read note: {exc.strerror or exc}"
        files.append(entry(found.path, problem))
    return files  # in the walker's order, the contract's


def _hadoop_files(spark: Any, uri: str, fmt: str) -> list[InputFile]:
    """The files below ``uri`` as Hadoop's file system lists them (for URIs: HDFS, S3, ABFS, file:)."""
    sc = spark.sparkContext
    jpath = sc._jvm.org.apache.hadoop.fs.Path(uri)
    fs = jpath.getFileSystem(sc._jsc.hadoopConfiguration())
    if not fs.exists(jpath):
        raise ShareNerError(f"{uri}: no such file or directory")
    root = fs.makeQualified(jpath).toString().rstrip("/")
    files = []
    if fs.getFileStatus(jpath).isFile():
        statuses = [fs.getFileStatus(jpath)]
        root = root.rpartition("/")[0]
    else:
        listing = fs.listFiles(jpath, True)
        statuses = []
        while listing.hasNext():
            statuses.append(listing.next())
    for st in statuses:
        key = st.getPath().toString()
        relative = key[len(root) + 1:]
        name = relative.rpartition("/")[2]
        if fmt == "text":
            if not name.endswith(".txt") or is_gold_file(Path(name)):
                continue
            problem = note_name_problem(name) or ("empty file" if st.getLen() == 0 else None)
            files.append(InputFile(key, key, relative, problem))
        elif not any(is_hidden(part) for part in relative.split("/")):
            files.append(InputFile(key, key, relative, size=st.getLen()))
    return sorted(files, key=lambda f: path_order(f.relative))


def plan_input(spark: Any, path: str, fmt: str, *, id_col: str | None = None, text_col: str | None = None,
               encoding: str = "utf-8") -> InputPlan:
    """List ``path``'s files and check its columns: one-line errors for an input that cannot be read at all."""
    files = _hadoop_files(spark, path, fmt) if is_uri(path) else _local_files(Path(path), fmt)
    if not files:
        raise ShareNerError(f"{path}: no {fmt} input files")
    plan = InputPlan(fmt, path, files)
    if fmt == "csv":
        plan.layout, plan.columns = _csv_layout(spark, plan, id_col, text_col, encoding)
    elif fmt == "parquet":
        plan.layout, plan.schema = _parquet_layout(spark, plan, id_col, text_col)
        plan.columns = (plan.layout.id_column, plan.layout.text_column)
        # Spark reads a 0-byte file as no rows at all: it is a file that lost its rows
        plan.corrupt.update((f.key, "0 bytes") for f in files if f.size == 0)
    else:
        plan.columns = ("path", "content")
    return plan


def _asked_layout(found: Layout | None, id_col: str | None, text_col: str | None) -> Layout | None:
    """The columns ``--id-col`` and ``--text-col`` name, over those of the layout found (None: neither given, or
    no layout found and not both given)."""
    if found is None and not (id_col and text_col):
        return None
    base = found or Layout("table", "", "", "", None)
    return Layout(base.name, id_col or base.id_column, text_col or base.text_column, base.category_column,
                  base.error_column)


def _csv_layout(spark: Any, plan: InputPlan, id_col: str | None, text_col: str | None,
                encoding: str) -> tuple[Layout | None, tuple[str, str]]:
    """The columns every CSV export is read by (None: each by its own header's layout, as share-ner tag reads
    it), and the first one's id and text columns; each file's header checked (its first lines, read by Spark)."""
    from pyspark.sql import functions as F

    forced = None
    columns: tuple[str, str] | None = None
    for f in plan.files:
        try:
            rows = (_reader(spark, "csv").option("lineSep", "\n").load(f.path)
                    .select(F.col("value").cast("binary").alias("line")).limit(HEADER_LINES).collect())
            header = header_fields([bytes(r["line"]) + b"\n" for r in rows], f.source(), encoding)
        except InputError:
            raise
        except Exception as exc:  # noqa: BLE001 - a .gz Spark cannot decompress: read as share-ner tag reads it
            bad = failed_file(exc)
            if bad is None or bad[0] != f.key:
                raise
            plan.corrupt[f.key] = bad[1]
            header = _raw_header(spark, f, encoding)
        asked = _asked_layout(layout_of(header), id_col, text_col) if (id_col or text_col) else None
        layout = header_layout(header, f.source(), layout=asked)  # the error share-ner tag gives, if any
        forced = forced or asked
        columns = columns or (layout.id_column, layout.text_column)
    assert columns is not None
    return forced, columns


def _raw_header(spark: Any, f: InputFile, encoding: str) -> list[str]:
    """The header of a CSV export read from its file's bytes in a task, by share-ner tag's reader (its
    :class:`InputError`, raised here, when there is none to read)."""
    from pyspark.sql import functions as F

    body = functools.partial(_raw_header_rows, encoding=encoding)
    (row,) = (_reader(spark, "text").load(f.path).select(F.col("_metadata.file_path").alias("file"), "content")
              .mapInPandas(body, "header array<string>, error string").collect())
    if row["error"] is not None:
        raise InputError(f.source(), row["error"])
    return list(row["header"])


def _raw_header_rows(batches: Iterator[Any], *, encoding: str) -> Iterator[Any]:
    for batch in batches:
        for path, content in zip(batch["file"].tolist(), batch["content"].tolist()):
            source = source_of(file_key(path))
            try:
                yield _out([(header_fields(export_bytes(bytes(content), source), source, encoding), None)],
                           ("header", "error"))
            except InputError as exc:
                yield _out([(None, exc.message)], ("header", "error"))


def _parquet_layout(spark: Any, plan: InputPlan, id_col: str | None, text_col: str | None) -> tuple[Layout, Any]:
    first = plan.files[0]
    try:
        schema = _reader(spark, "parquet").load(first.path).schema
    except Exception as exc:  # noqa: BLE001 - Spark's AnalysisException for a file that is no Parquet: one line
        raise InputError(first.source(), f"cannot read as Parquet ({spark_cause(exc)})") from None
    names = schema.fieldNames()
    layout = _asked_layout(layout_of(names), id_col or None, text_col or None)
    if layout is None:
        raise InputError(first.source(), "not a table of notes: no ROW_ID or note_id column (pass --id-col and "
                                         f"--text-col); columns: {', '.join(names) or '(none)'}")
    upper = {n.strip().upper(): n for n in names}
    for column in (layout.id_column, layout.text_column):
        if column.upper() not in upper:
            raise InputError(first.source(), f"no column {column}; columns: {', '.join(names) or '(none)'}")
    kinds = [_kind(schema[upper[c.upper()]].dataType) for c in (layout.id_column, layout.text_column)]
    problem = column_kinds_problem(layout.id_column, kinds[0], layout.text_column, kinds[1])
    if problem is not None:
        raise InputError(first.source(), problem)
    # the columns by their names in the table
    layout = Layout(layout.name, upper[layout.id_column.upper()], upper[layout.text_column.upper()],
                    upper.get(layout.category_column.upper(), ""),
                    upper.get((layout.error_column or "").upper()) if layout.error_column else None)
    return layout, schema


def _kind(data_type: Any) -> str:
    from pyspark.sql import types as T

    if isinstance(data_type, T.StringType):
        return "string"
    if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return "integer"
    if isinstance(data_type, T.BinaryType):
        return "binary"
    return data_type.simpleString()


# ---------------------------------------------------------------- reading, in the executors


def _reader(spark: Any, fmt: str, lenient: bool = False) -> Any:
    """A reader of explicit file paths (no glob patterns: a file name may hold '[' or '*')."""
    name = {"csv": "text", "text": "binaryFile"}.get(fmt, fmt)
    reader = spark.read.format(name).option("__globPaths__", "false")
    return reader.option("ignoreCorruptFiles", "true") if lenient else reader


@contextmanager
def whole_files(spark: Any) -> Iterator[None]:
    """Within the block, the jobs planned read each file in one task, in order (:data:`WHOLE_FILES`)."""
    before = {k: spark.conf.get(k, None) for k in WHOLE_FILES}
    for k, v in WHOLE_FILES.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def _scan(spark: Any, plan: InputPlan, files: list[InputFile], columns: Any) -> Any:
    """The rows of ``files`` (those Spark can read strictly, and leniently those known corrupt), ``columns`` of
    each with ``_metadata.file_path`` as ``file``."""
    from pyspark.sql import functions as F

    frames = []
    for lenient in (False, True):
        paths = [f.path for f in files if (f.key in plan.corrupt) == lenient and f.problem is None]
        if not paths:
            continue
        reader = _reader(spark, plan.fmt, lenient)
        if plan.fmt == "parquet":
            reader = reader.schema(plan.schema)
        df = reader.load(paths)
        frames.append(df.select(F.col("_metadata.file_path").alias("file"), *columns(df)))
    if not frames:
        return None
    return functools.reduce(lambda a, b: a.unionByName(b), frames)


def _table_columns(plan: InputPlan, text: bool) -> Any:
    """The columns of a Parquet table's rows: ids and texts as bytes (a string column may hold bytes that are not
    UTF-8, which the contract rejects by offset), integer ids as their digits."""
    from pyspark.sql import functions as F

    layout = plan.layout
    assert layout is not None

    def as_bytes(column: str) -> Any:
        return F.col(f"`{column}`").cast("string").cast("binary")

    def columns(df: Any) -> list[Any]:
        out = [F.col("_metadata.row_index").alias("row_index"), as_bytes(layout.id_column).alias("id")]
        if text:
            out.append(F.col(f"`{layout.text_column}`").cast("binary").alias("text"))
        error = layout.error_column
        out.append((as_bytes(error) if error and error in df.columns else F.lit(None).cast("binary")).alias("error"))
        return out

    return columns


def _csv_scan(spark: Any, plan: InputPlan, files: list[InputFile], how: ReadSettings, tally: Any, claims: bool,
              schema: str) -> Any:
    """The records (or claims) of CSV exports: each file's lines read by Spark, one task per file, in order (plan
    the job within :func:`whole_files`); a file Spark cannot decompress (a gzip cut short or corrupt), read as its
    bytes and cut as share-ner tag cuts it, to where tag's gzip reader stops."""
    from pyspark.sql import functions as F

    frames = []
    good = [f.path for f in files if f.key not in plan.corrupt and f.problem is None]
    bad = [f.path for f in files if f.key in plan.corrupt]
    if good:
        lines = _reader(spark, "csv").option("lineSep", "\n").load(good)
        frames.append(lines.select(F.col("_metadata.file_path").alias("file"),
                                   F.col("value").cast("binary").alias("line"))
                      .mapInPandas(functools.partial(_csv_records, how=how, tally=tally, claims=claims), schema))
    if bad:
        contents = _reader(spark, "text").load(bad)
        frames.append(contents.select(F.col("_metadata.file_path").alias("file"), "content")
                      .mapInPandas(functools.partial(_csv_raw_records, how=how, tally=tally, claims=claims), schema))
    return functools.reduce(lambda a, b: a.unionByName(b), frames) if frames else None


def _content_columns(df: Any) -> list[Any]:
    return ["content"]


@dataclass(frozen=True)
class ReadSettings:
    """What the functions run in the executors need of the plan (picklable, without the file list)."""

    fmt: str
    layout: Layout | None
    root_keys: tuple[str, ...]  # the keys the files' keys start with: relative paths are what follows
    labels: bool  # name a duplicate's first record by its file (a table of several files)
    include_errors: bool
    encoding: str
    corrupt: tuple[tuple[str, str], ...]  # (file key, what Spark could not read in it)
    duplicates: Any = None  # a broadcast of {(file key, row): reason}

    def relative(self, key: str) -> str:
        for root in self.root_keys:
            if key.startswith(root + "/"):
                return key[len(root) + 1:]
        return key.rpartition("/")[2]

    def csv(self) -> dict[str, Any]:
        """The keywords of share-ner tag's CSV reader."""
        return {"include_errors": self.include_errors, "encoding": self.encoding, "layout": self.layout}

    def duplicate(self, key: str, row: int) -> str | None:
        return None if self.duplicates is None else self.duplicates.value.get((key, row))


def read_settings(plan: InputPlan, include_errors: bool, encoding: str, duplicates: Any = None) -> ReadSettings:
    roots = {f.key[: len(f.key) - len(f.relative) - 1] for f in plan.files}
    return ReadSettings(plan.fmt, plan.layout, tuple(sorted(roots)), plan.several, include_errors, encoding,
                        tuple(sorted(plan.corrupt.items())), duplicates)


def _out(rows: list[tuple[Any, ...]], columns: tuple[str, ...]) -> Any:
    import pandas as pd

    return pd.DataFrame(rows, columns=list(columns), dtype=object)


def _batched(rows: Iterator[tuple[Any, ...]], columns: tuple[str, ...]) -> Iterator[Any]:
    """Rows as pandas frames of at most :data:`OUT_ROWS` rows or about :data:`OUT_CHARS` characters of text."""
    batch: list[tuple[Any, ...]] = []
    chars = 0
    for row in rows:
        batch.append(row)
        chars += len(row[1] or "") if len(row) > 1 and isinstance(row[1], str) else 0
        if len(batch) >= OUT_ROWS or chars >= OUT_CHARS:
            yield _out(batch, columns)
            batch, chars = [], 0
    if batch:
        yield _out(batch, columns)


def _record_row(rec: CsvRecord, source: str) -> tuple[Any, ...]:
    if rec.doc is not None:
        return rec.note_id, rec.doc.text, None, source, rec.row or None
    return rec.note_id, None, rec.reason, source, rec.row or None


def _csv_records(batches: Iterator[Any], *, how: ReadSettings, tally: Any, claims: bool) -> Iterator[Any]:
    """mapInPandas body over CSV exports' lines (``file``, ``line``), one file per task, in order."""
    counts: Counter = Counter()

    def lines() -> Iterator[tuple[str, bytes]]:
        for batch in batches:
            for key, line in zip(batch["file"].tolist(), batch["line"].tolist()):
                yield file_key(key), bytes(line) + b"\n"

    def rows() -> Iterator[tuple[Any, ...]]:
        for key, group in itertools.groupby(lines(), key=lambda pair: pair[0]):
            source = source_of(key)
            yield from _csv_file_rows(key, iter_csv_lines((line for _, line in group), source, counts=counts,
                                                          **how.csv()), how, claims)

    yield from _batched(rows(), CLAIM_COLUMNS if claims else RECORD_COLUMNS)
    if not claims:
        tally.add(_counted(counts))


def _csv_raw_records(batches: Iterator[Any], *, how: ReadSettings, tally: Any, claims: bool) -> Iterator[Any]:
    """mapInPandas body over CSV exports' files (``file``, ``content``: its bytes) that Spark could not decompress,
    each cut into records by share-ner tag's reader as tag reads the file (gzip included)."""
    counts: Counter = Counter()

    def rows() -> Iterator[tuple[Any, ...]]:
        for batch in batches:
            for path, content in zip(batch["file"].tolist(), batch["content"].tolist()):
                key = file_key(path)
                yield from _csv_file_rows(key, iter_csv_bytes(bytes(content), source_of(key), counts=counts,
                                                              **how.csv()), how, claims)

    yield from _batched(rows(), CLAIM_COLUMNS if claims else RECORD_COLUMNS)
    if not claims:
        tally.add(_counted(counts))


def _csv_file_rows(key: str, records: Iterator[CsvRecord], how: ReadSettings,
                   claims: bool) -> Iterator[tuple[Any, ...]]:
    """The output rows of one export's records: claims of ids, or records (a repeat across exports rejected)."""
    source = source_of(key)
    try:
        for rec in records:
            if claims:
                if rec.claimed:
                    yield rec.note_id, key, rec.row
                continue
            duplicate = how.duplicate(key, rec.row) if rec.claimed else None
            if duplicate is not None:
                rec = rec._replace(doc=None, reason=f"line {rec.line}: {duplicate}")
            yield _record_row(rec, source)
    except InputError as exc:  # no header to read (checked on the driver; a file changed since)
        if not claims:
            yield "", None, exc.message, source, None


def _counted(counts: Counter) -> dict[str, Any]:
    """The rows left out, for the tally of :class:`share_ner.spark.Tally` (its other counts are the annotator's)."""
    return {"skipped_iserror": counts["iserror"], "skipped_category": counts["category"]}


def _table_records(batches: Iterator[Any], *, how: ReadSettings, tally: Any, claims: bool) -> Iterator[Any]:
    """mapInPandas body over a Parquet table's rows (``file``, ``row_index``, ``id``, [``text``,] ``error``)."""
    layout = how.layout
    assert layout is not None
    counts: Counter = Counter()
    read: Counter = Counter()  # rows read of each file known corrupt
    corrupt = dict(how.corrupt)

    def rows() -> Iterator[tuple[Any, ...]]:
        for batch in batches:
            texts = batch["text"].tolist() if "text" in batch else None
            for k, (path, index, raw_id, error) in enumerate(zip(
                    batch["file"].tolist(), batch["row_index"].tolist(), batch["id"].tolist(),
                    batch["error"].tolist())):
                key = file_key(path)
                row = int(index) + 1
                if key in corrupt:
                    read[key] += 1
                if layout.error_column and not how.include_errors and clean_id(error) == "1":
                    counts["iserror"] += 1
                    continue
                if claims:
                    note_id = clean_id(raw_id)
                    if id_problem(note_id, layout.id_column) is None:
                        yield note_id, key, row
                    continue
                rec = check_row(raw_id, texts[k] if texts is not None else None, row, source_of(key), None, layout,
                                None, how.encoding, how.duplicate(key, row))
                yield _record_row(rec, rec.source)

    yield from _batched(rows(), CLAIM_COLUMNS if claims else RECORD_COLUMNS)
    if not claims:
        got = _counted(counts)
        got["read"] = dict(read)
        tally.add(got)


def _file_records(batches: Iterator[Any], *, how: ReadSettings) -> Iterator[Any]:
    """mapInPandas body over note files (``file``, ``content``)."""

    def rows() -> Iterator[tuple[Any, ...]]:
        for batch in batches:
            for path, content in zip(batch["file"].tolist(), batch["content"].tolist()):
                key = file_key(path)
                relative = how.relative(key)
                directory, _, name = relative.rpartition("/")
                note_id = table_note_id(directory, doc_id_from_path(name))
                source = source_of(key)
                try:
                    doc = note_from_bytes(bytes(content), source, note_id, how.encoding, reject_empty=True)
                except InputError as exc:
                    yield note_id, None, exc.message, source, None
                    continue
                yield doc.id, doc.text, None, source, None

    yield from _batched(rows(), RECORD_COLUMNS)


def chunk_records(spark: Any, plan: InputPlan, files: list[InputFile], how: ReadSettings, tally: Any) -> Any:
    """The records (:data:`RECORD_SCHEMA`) of ``files``, one chunk of the plan's; None when Spark has none of them
    to read (every file rejected unread). Plan the job that uses it within :func:`whole_files` (CSV)."""
    if plan.fmt == "csv":
        return _csv_scan(spark, plan, files, how, tally, False, RECORD_SCHEMA)
    if plan.fmt == "parquet":
        rows = _scan(spark, plan, files, _table_columns(plan, text=True))
        body = functools.partial(_table_records, how=how, tally=tally, claims=False)
        return None if rows is None else rows.mapInPandas(body, RECORD_SCHEMA)
    contents = _scan(spark, plan, files, _content_columns)
    body = functools.partial(_file_records, how=how)
    return None if contents is None else contents.mapInPandas(body, RECORD_SCHEMA)


def needs_duplicate_pass(plan: InputPlan) -> bool:
    """Whether ids can repeat where no one task sees them all: in a Parquet table (read by row groups), or across
    CSV exports (each is parsed whole by one task, which rejects the repeats within it)."""
    return plan.fmt == "parquet" or (plan.fmt == "csv" and plan.several)


def duplicate_claims(spark: Any, plan: InputPlan, how: ReadSettings) -> Any:
    """Every record that claims an id (``note_id``, ``file``, ``row``), of the whole input."""
    if plan.fmt == "csv":
        return _csv_scan(spark, plan, plan.files, how, None, True, CLAIM_SCHEMA)
    rows = _scan(spark, plan, plan.files, _table_columns(plan, text=False))
    return rows.mapInPandas(functools.partial(_table_records, how=how, tally=None, claims=True), CLAIM_SCHEMA)


def repeated(spark: Any, plan: InputPlan, how: ReadSettings) -> dict[tuple[str, int], str]:
    """The records whose id an earlier record claimed, by (file key, row), with their reasons; one Spark job over
    the ids (run it within :func:`whole_files`)."""
    from pyspark.sql import functions as F

    claims = duplicate_claims(spark, plan, how)
    groups = (claims.groupBy("note_id").agg(F.count(F.lit(1)).alias("n"),
                                             F.collect_list(F.struct("file", "row")).alias("at"))
              .where(F.col("n") > 1).select("at").collect())
    order = {f.key: i for i, f in enumerate(plan.files)}
    files = plan.by_key()
    out: dict[tuple[str, int], str] = {}
    for group in groups:
        at = sorted(((file_key(a["file"]), int(a["row"])) for a in group["at"]), key=lambda x: (order.get(x[0], -1),
                                                                                                  x[1]))
        first_key, first_row = at[0]
        for key, row in at[1:]:
            label = files[first_key].relative if first_key != key and first_key in files else None
            out[(key, row)] = duplicate_reason(first_row, label)
    return out


def unread_rejects(plan: InputPlan, files: list[InputFile]) -> list[tuple[str, str, str, int | None]]:
    """The rejects of note files rejected unread (note id, reason, source, row)."""
    out = []
    for f in files:
        if f.problem is not None:
            directory, _, name = f.relative.rpartition("/")
            out.append((table_note_id(directory, doc_id_from_path(name)), f.problem, f.source(), None))
    return out


def lost_rejects(plan: InputPlan, files: list[InputFile], read: dict[str, int]) -> list[tuple[str, str, str, None]]:
    """The rejects of files known corrupt (Parquet, note files): what Spark read of each, and that the rest is
    lost. A CSV export's is its parser's last record."""
    out = []
    for f in files:
        if f.key not in plan.corrupt or plan.fmt == "csv":
            continue
        cause = plan.corrupt[f.key]
        if plan.fmt == "parquet":
            rows = read.get(f.key, 0)
            reason = f"cannot read {f.relative} ({cause}): {rows} of its rows were read, the rest are lost"
        else:
            reason = f"cannot read note ({cause})"
        directory, _, name = f.relative.rpartition("/")
        note_id = table_note_id(directory, doc_id_from_path(name)) if plan.fmt == "text" else ""
        out.append((note_id, reason, f.source(), None))
    return out


# ---------------------------------------------------------------- Spark's failures


def failed_file(exc: BaseException) -> tuple[str, str] | None:
    """The file Spark failed to read (its key) and the cause, from a job's failure, or None."""
    text = str(exc)
    m = _FAILED_READ.search(text)
    if m is None:
        return None
    return file_key(m.group(1)), spark_cause(exc, after=m.end())


def spark_cause(exc: BaseException, after: int = 0) -> str:
    """The innermost cause of a Spark failure in one short line: ``java.io.EOFException: Unexpected end...``."""
    text = str(exc)
    python = _PYTHON_ERROR.search(text, after)
    if python is not None:  # a Python worker's exception: its last line
        return python.group(1).strip()[:200]
    causes = list(_CAUSE.finditer(text, after))
    if causes:
        m = causes[-1]
        name = m.group(1).rpartition(".")[2] if m.group(1).startswith("java.lang.") else m.group(1)
        detail = (m.group(2) or "").strip()
        return (f"{name}: {detail}" if detail else name)[:200]
    first = text.strip().split("\n", 1)[0]
    return first[:200] or type(exc).__name__


def api_records(df: Any, id_col: str, text_col: str) -> Any:
    """The records of a DataFrame of notes (``share_ner.spark.annotate``): each row's id and text checked as the
    contract says; no file, no row, and no pass over all ids (a DataFrame is the caller's: duplicates are not
    looked for)."""
    layout = Layout("DataFrame", id_col, text_col, "", None)
    body = functools.partial(_api_rows, layout=layout)
    return df.select(df[id_col].cast("string").alias("id"), df[text_col].alias("text")).mapInPandas(body,
                                                                                                     RECORD_SCHEMA)


def _api_rows(batches: Iterator[Any], *, layout: Layout) -> Iterator[Any]:
    def rows() -> Iterator[tuple[Any, ...]]:
        for batch in batches:
            for raw_id, text in zip(batch["id"].tolist(), batch["text"].tolist()):
                rec = check_row(raw_id, text, 0, "", None, layout, None)
                yield _record_row(rec, "")

    yield from _batched(rows(), RECORD_COLUMNS)

