"""``share-ner spark``: tag a table of notes on Apache Spark; the work is done by :mod:`share_ner.spark.job`."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time

from share_ner.commands import at_least
from share_ner.errors import ShareNerError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "spark",
        help="tag notes on Apache Spark (MIMIC CSV exports, Parquet tables, note folders) into Parquet tables",
        description="Tag notes on Apache Spark (pip install 'share-ner[spark]'; a Java 17+ runtime). INPUT is a "
        "MIMIC-III NOTEEVENTS.csv[.gz] or MIMIC-IV-Note CSV export, a Parquet table, or a folder of note files "
        "(*.txt), on any file system Spark reads; read as share-ner tag reads them. Writes OUT/mentions and "
        "OUT/rejects as Parquet and OUT/summary.json; rerunning the same command after a killed job keeps the "
        "chunks already committed.",
    )
    p.add_argument("input", metavar="INPUT", help="CSV export, Parquet table or folder of note files")
    p.add_argument("--out", required=True, metavar="FOLDER", help="output folder (a Hadoop file system path)")
    p.add_argument("--master", metavar="URL", help="Spark master, e.g. local[4] (default: spark-submit's, else local[*])")
    p.add_argument("--input-format", choices=("csv", "parquet", "text"),
                   help="how to read INPUT (default: by its name or content)")
    p.add_argument("--text-col", metavar="C", help="column of the note text (default: TEXT / text)")
    p.add_argument("--id-col", metavar="C", help="column of the note id (default: ROW_ID / note_id)")
    p.add_argument("--model", metavar="M", help="model folder every executor can read (default: the built-in model)")
    p.add_argument("--ship-model", action="store_true",
                   help="send the local model folder to the executors with the job, as a zip archive "
                        "(SparkContext.addArchive)")
    p.add_argument("--include-errors", action="store_true",
                   help="MIMIC-III: keep rows flagged ISERROR=1 (skipped by default)")
    p.add_argument("--partitions", type=at_least(1), metavar="N",
                   help="partitions per chunk (default: 3 per core of the cluster)")
    p.add_argument("--files-per-chunk", type=at_least(1), metavar="N",
                   help="input files per resumable chunk (default: 1 CSV, 16 Parquet, 10000 note files)")
    p.add_argument("--conf", action="append", type=spark_setting, default=[], metavar="KEY=VALUE",
                   help="a Spark setting of the session (repeatable), as spark-submit's --conf; under spark-submit, "
                   "give it to spark-submit")
    p.add_argument("--overwrite", action="store_true",
                   help="start afresh when the output folder holds a run with other settings (its tables, chunk "
                        "counts and summary are deleted first)")
    p.add_argument("--quiet", action="store_true", help="no progress and no summary line")
    p.set_defaults(func=run)


def spark_setting(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` of ``--conf`` as a pair."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def run(args: argparse.Namespace) -> int:
    try:
        from share_ner.spark.job import SparkFailure, SparkOptions, run_spark
    except ImportError:
        raise ShareNerError("share-ner spark needs PySpark: pip install 'share-ner[spark]'") from None
    opt = SparkOptions(input=args.input, out=args.out, master=args.master, input_format=args.input_format,
                       text_col=args.text_col, id_col=args.id_col, model=args.model, ship_model=args.ship_model,
                       include_errors=args.include_errors, partitions=args.partitions,
                       files_per_chunk=args.files_per_chunk, conf=tuple(args.conf),
                       overwrite=args.overwrite)
    # The JVM's own output (its log, a failed task's Java and Python tracebacks) goes to a file; a failure is one
    # line here that names the file. What py4j logs of an interrupted call or a JVM that died (on the root logger,
    # with a traceback) is that same failure: not repeated.
    logging.getLogger("py4j").setLevel(logging.CRITICAL)
    if not logging.getLogger().handlers:
        logging.getLogger().addHandler(logging.NullHandler())
    fd, spark_log = tempfile.mkstemp(prefix=time.strftime("share-ner-spark-%Y%m%d-%H%M%S-"), suffix=".log")
    os.close(fd)
    keep = False
    try:
        summary = run_spark(opt, log=None if args.quiet else sys.stderr, spark_log=spark_log)
    except SparkFailure as exc:
        keep = True
        raise ShareNerError(f"{exc} (Spark's log: {spark_log})") from None
    finally:
        if not keep:
            os.unlink(spark_log)
    if not args.quiet:
        print(f"share-ner: {summary.line()}", file=sys.stderr)
    return 0
