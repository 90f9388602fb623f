"""Fuzzing ``share-ner spark``: hostile inputs against what ``share-ner tag`` makes of them, corrupted Parquet, CSV and
gzip exports, Python workers and JVMs killed, Ctrl-C and SIGTERM, a full disk, runs into one output at once.

The cases on inputs run ``share_ner.spark.job.run_spark`` in one local Spark session (``local[2]``) and compare
with ``share-ner tag`` on the same bytes (its Python reader, in process): the same notes, mentions, rejects and
counts, or at least every note ``tag`` tagged either tagged or named in a reject. The cases on processes run the
command line as a user does, each in a session of its own, and a run that stops is run again to the output of a
clean run. Crashes, hangs and silent losses are counted as :mod:`fuzz` counts them (its table, its
:class:`fuzz.Outcome`): a crash is a process ended by a signal, a traceback on stderr or an exception other than
share-ner's one-line error; a silent loss, a good note missing or different, or a bad record neither tagged nor
named. Prints the table and writes ``benchmarks/results/fuzz_spark.md``::

    nice python benchmarks/fuzz_spark.py [--data DIR]
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import fuzz
from bench_data import REPO, RESULTS_DIR
from fault_injection import III_HEADER, Bench, Run, csv_text, mimic_row

sys.path.insert(0, str(REPO / "tests"))  # the hostile inputs and the comparisons of the tests
import hostile_inputs  # noqa: E402
from hostile_inputs import (  # noqa: E402
    TrippedFactory,
    descendants,
    spark_outcome,
    stop_spark,
    tag_outcome,
    write_hostile_inputs,  # noqa: E402
)

RESULTS = RESULTS_DIR / "fuzz_spark.md"
FIRST_CASE = len(fuzz.CASES)  # the cases below are registered after fuzz.py's own
POISON = "QZX-POISON-PILL"
DAEMON = " -m share_ner.spark.daemon "  # in the command line of Spark's Python daemon and workers (not the JVM's)


@dataclass
class SparkFuzz:
    tmp: Path
    bench: Bench
    spark: Any  # the local[2] session of the cases run in process
    model: Path  # the default model
    factory: Callable[[], Any]  # share-ner tag's annotator factory for it
    texts: list[str]  # MTSamples notes
    table: Path  # a Parquet table of three files of those notes
    clean: dict  # what share-ner tag makes of the table: mentions by note id


def _mentions(spark_out: Path) -> dict:
    from share_ner.formats.parquet import read_parquet

    return {k: sorted((m.spans, m.cui) for m in v) for k, v in read_parquet(spark_out / "mentions").items()}


def _in_process(out: fuzz.Outcome, fn: Callable[[], Any]) -> Any:
    """``fn()``, a try: share-ner's one-line error is an outcome; any other exception a crash."""
    from share_ner.errors import ShareNerError

    out.tries += 1
    try:
        return fn()
    except ShareNerError as exc:
        return exc
    except Exception as exc:  # noqa: BLE001 - counted, and shown
        out.crashes += 1
        out.seen.append(f"crash: {type(exc).__name__}: {str(exc)[:120]}")
        return exc


def _unaccounted(tag: tuple, got: tuple) -> int:
    """Notes ``tag`` tagged that ``got`` (spark's outcome) neither tagged with the same mentions nor rejected."""
    rejected = {r[1] for r in got[1]}
    return sum(1 for k, v in tag[0].items() if got[0].get(k) != v and k not in rejected)


@fuzz.case("hostile inputs: CSV, gzip CSV, Parquet tables and a note directory (unterminated quotes, repeated, blank "
           "and padded ids, ids holding '||', tabs or line breaks, empty and 0-byte notes, bad bytes, 10 MB notes)")
def hostile(fz: SparkFuzz) -> fuzz.Outcome:
    out = fuzz.Outcome("")
    inputs = write_hostile_inputs(fz.tmp / "hostile")
    equal = 0
    for name, path in inputs.items():
        tag = tag_outcome(path, fz.tmp, fz.factory)
        got = _in_process(out, lambda: spark_outcome(fz.spark, path, fz.tmp / f"hostile-{name}", model=str(fz.model)))
        out.losses += 0 if isinstance(got, tuple) else len(tag[0])  # stopped where tag tagged
        if isinstance(got, tuple):
            equal += got == tag
            out.losses += _unaccounted(tag, got) + (got[2]["notes"] + got[2]["rejected"] <
                                                     tag[2]["notes"] + tag[2]["rejected"])
    out.seen.append(f"{equal} of {len(inputs)} inputs: the same mentions, rejects (file, id, row, reason) and counts "
                    "as share-ner tag")
    return out


def _parquet_files(directory: Path, texts: list[str], files: int = 3, notes: int = 10) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory.mkdir(parents=True)
    for k in range(files):
        pq.write_table(pa.table({"note_id": [f"n{k}-{i}" for i in range(notes)],
                                 "text": [texts[k * notes + i] for i in range(notes)]}),
                       directory / f"part-{k:05d}.parquet", row_group_size=4)
    return directory


@fuzz.case("Parquet tables with one file cut at every sixteenth of its length; the file repaired, the same command")
def parquet_cut(fz: SparkFuzz) -> fuzz.Outcome:
    out = fuzz.Outcome("")
    named = redone = 0
    whole = (fz.table / "part-00001.parquet").read_bytes()
    for k in range(16):
        table = fz.tmp / f"cut-{k}"
        shutil.copytree(fz.table, table)
        (table / "part-00001.parquet").write_bytes(whole[: len(whole) * k // 16])
        got = _in_process(out, lambda: spark_outcome(fz.spark, table, fz.tmp / f"cut-{k}-out", model=str(fz.model)))
        if not isinstance(got, tuple):  # stopped: the notes of the other files are lost
            out.losses += sum(1 for n in fz.clean if not n.startswith("n1-"))
            continue
        lost_file = [r for r in got[1] if r[0] == "part-00001.parquet" and "the rest are lost" in r[3]]
        named += len(lost_file) == 1
        good = {n: v for n, v in fz.clean.items() if not n.startswith("n1-")}
        out.losses += sum(1 for n, v in good.items() if got[0].get(n) != v)
        out.losses += not lost_file and any(n.startswith("n1-") and got[0].get(n) != v for n, v in fz.clean.items())
        if k == 8:  # repaired, then the same command: the chunk is done again, whole
            (table / "part-00001.parquet").write_bytes(whole)
            again = _in_process(out, lambda: spark_outcome(fz.spark, table, fz.tmp / f"cut-{k}-out",
                                                           model=str(fz.model)))
            redone += isinstance(again, tuple) and again[0] == fz.clean and not again[1]
            out.losses += not (isinstance(again, tuple) and again[0] == fz.clean)
    out.seen.append(f"16 cuts: the cut file named in one reject ({named} of 16), the other files' notes as tag "
                    f"tags them; repaired and run again: {redone} of 1 equal to a clean run")
    return out


def _export(fz: SparkFuzz, rows: int = 40) -> bytes:
    return csv_text([III_HEADER] + [mimic_row(str(1000 + i), fz.texts[i]) for i in range(rows)]).encode("utf-8")


def _compare(fz: SparkFuzz, out: fuzz.Outcome, path: Path, tag_file: Path, name: str) -> bool:
    """tag and spark on ``path`` (tag on ``tag_file``: the same bytes, a name tag reads as an export); whether they
    agree exactly. A note tag tagged that spark neither tagged nor named is a loss."""
    from share_ner.errors import ShareNerError

    try:
        tag: Any = tag_outcome(tag_file, fz.tmp, fz.factory)
    except ShareNerError as exc:  # nothing to read (no header): a one-line error for both
        tag = exc
    got = _in_process(out, lambda: spark_outcome(fz.spark, path, fz.tmp / name, model=str(fz.model)))
    if not isinstance(got, tuple) or not isinstance(tag, tuple):
        if isinstance(tag, tuple):  # spark stopped where tag tagged: each of tag's notes is lost
            out.losses += len(tag[0])
            out.seen.append(f"{name}: spark stopped: {str(got)[:100]}")
        return isinstance(got, ShareNerError) and isinstance(tag, ShareNerError)
    out.losses += _unaccounted(tag, got)
    return (got[0], [r[1:] for r in got[1]], got[2]) == (tag[0], [r[1:] for r in tag[1]], tag[2])


def _variants(fz: SparkFuzz, out: fuzz.Outcome, data: bytes, name: str, seed: int,
              change: Callable[[bytearray, random.Random], None]) -> int:
    """``data`` cut at every sixteenth, and changed 16 times by ``change``: how many of the 32 spark and tag agree
    on exactly."""
    rnd = random.Random(seed)
    equal = 0
    for k in range(32):
        variant = bytearray(data[: max(20, len(data) * k // 16)] if k < 16 else data)
        if k >= 16:
            for _ in range(1 + k % 4):
                change(variant, rnd)
        path = fz.tmp / f"{name}-{k}" / name
        path.parent.mkdir()
        path.write_bytes(bytes(variant))
        equal += _compare(fz, out, path, path, f"{name}-{k}-out")
    return equal


@fuzz.case("CSV exports: bytes changed inside note texts, and the file cut at every sixteenth")
def csv_corrupt(fz: SparkFuzz) -> fuzz.Outcome:
    out = fuzz.Outcome("")

    def change(data: bytearray, rnd: random.Random) -> None:
        data[rnd.randrange(len(data) // 10, len(data))] = rnd.randrange(256)

    equal = _variants(fz, out, _export(fz), "NOTEEVENTS.csv", 45, change)
    out.seen.append(f"16 cuts and 16 with 1 to 4 bytes changed: {equal} of 32 with the notes, rejects (id, row, "
                    "reason) and counts of share-ner tag")
    return out


@fuzz.case("gzip CSV exports: cut at every sixteenth, and bytes of the compressed stream changed")
def gzip_corrupt(fz: SparkFuzz) -> fuzz.Outcome:
    out = fuzz.Outcome("")

    def change(data: bytearray, rnd: random.Random) -> None:
        data[rnd.randrange(len(data) // 4, len(data) - 8)] ^= 1 << rnd.randrange(8)

    equal = _variants(fz, out, gzip.compress(_export(fz), mtime=0), "NOTEEVENTS.csv.gz", 46, change)
    out.seen.append(f"16 cuts and 16 with 1 to 4 bits flipped: {equal} of 32 with the notes, rejects (id, row, "
                    "reason) and counts of share-ner tag (a file Spark cannot decompress is read as its bytes, by "
                    "tag's own reader)")
    return out


def _python_workers(jvm: int) -> list[int]:
    """The Python workers of the JVM ``jvm`` running now: the processes its share-ner daemons forked (never another
    process's)."""
    daemons = [pid for pid, command in descendants(jvm) if DAEMON in command]  # and the workers they forked
    return sorted({pid for daemon in daemons for pid, _ in descendants(daemon)})


@fuzz.case("Python workers SIGKILLed from outside mid-run; a note that kills every worker it reaches")
def killed_workers(fz: SparkFuzz) -> fuzz.Outcome:
    from pyspark import SparkContext

    out = fuzz.Outcome("")
    jvm = SparkContext._gateway.proc.pid  # the session's JVM: only its workers are killed
    equal = 0
    for k in range(3):
        stop = threading.Event()

        def killer(delay: float = 4.0 + 3 * k) -> None:
            time.sleep(delay)
            while not stop.is_set():
                workers = _python_workers(jvm)
                if workers:
                    os.kill(workers[0], signal.SIGKILL)
                    return
                time.sleep(0.1)

        thread = threading.Thread(target=killer, daemon=True)
        thread.start()
        got = _in_process(out, lambda: spark_outcome(fz.spark, fz.table, fz.tmp / f"kill-{k}", model=str(fz.model)))
        stop.set()
        if isinstance(got, tuple):
            equal += got[0] == fz.clean and not got[1]
            out.losses += got[0] != fz.clean
    import pyarrow as pa
    import pyarrow.parquet as pq

    poisoned = fz.tmp / "poisoned"
    shutil.copytree(fz.table, poisoned)
    rows = pq.read_table(poisoned / "part-00001.parquet").to_pylist()
    rows[3]["text"] += " " + POISON
    pq.write_table(pa.Table.from_pylist(rows), poisoned / "part-00001.parquet")
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(hostile_inputs)
    got = _in_process(out, lambda: spark_outcome(fz.spark, poisoned, fz.tmp / "poison",
                                                 factory=TrippedFactory(fz.model, POISON, kill=True)))
    alone = isinstance(got, tuple) and [r[1:] for r in got[1]] == [("n1-3", 4, "worker died (signal 9)")]
    if isinstance(got, tuple):
        out.losses += sum(1 for n, v in fz.clean.items() if n != "n1-3" and got[0].get(n) != v) + (not alone)
    out.seen.append(f"a worker killed in 3 runs: {equal} of 3 equal to a clean run; the poisoned note rejected "
                    f"alone, 'worker died (signal 9)', every other note written: {int(alone)} of 1")
    return out


def _spark_argv(fz: SparkFuzz, table: Path, out: Path, *more: str) -> list[str]:
    return ["spark", str(table), "--out", str(out), "--master", "local[2]", "--files-per-chunk", "1", *more]


def _descendant(proc: subprocess.Popen, part: str, timeout: float = 600) -> int | None:
    """A process below ``proc`` whose command line holds ``part``, once there is one (None: ``proc`` ended)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.poll() is None:
        found = [pid for pid, command in descendants(proc.pid) if part in command]
        if found:
            return found[0]
        time.sleep(0.2)
    return None


def _cli_clean(fz: SparkFuzz, run: Run, out: Path, status: int, first_line: str) -> tuple[bool, bool]:
    """Whether ``run`` ended with ``status`` and a last line starting ``first_line``, in share-ner's lines only; and
    whether the same command then ends at the clean output."""
    lines = run.stderr.strip().splitlines()
    one = (run.status == status and bool(lines) and lines[-1].startswith(first_line)
           and all(line.startswith("share-ner: ") for line in lines))
    again = fz.bench.command(_spark_argv(fz, fz.table, out, "--model", str(fz.model)), timeout=1200)
    return one, again.status == 0 and _mentions(out) == fz.clean


@fuzz.case("the JVM SIGKILLed, Ctrl-C (SIGINT to the process group) and SIGTERM mid-run; then the same command")
def stopped(fz: SparkFuzz) -> fuzz.Outcome:
    out = fuzz.Outcome("")
    kinds = [("JVM SIGKILLed", 2, "share-ner: error: Spark's JVM stopped"),
             ("Ctrl-C", 130, "share-ner: interrupted"), ("SIGTERM", 130, "share-ner: interrupted")]
    one_line = resumed = 0
    for k, (kind, status, first) in enumerate(kinds):
        target = fz.tmp / f"stop-{k}"

        def stop(proc: subprocess.Popen, kind: str = kind) -> None:
            if _descendant(proc, DAEMON) is None:  # a job is running: its Python daemon is up
                return
            time.sleep(3)
            if kind == "JVM SIGKILLed":
                jvm = _descendant(proc, "org.apache.spark.deploy.SparkSubmit")
                if jvm is not None:
                    os.kill(jvm, signal.SIGKILL)
            elif kind == "Ctrl-C":
                os.killpg(proc.pid, signal.SIGINT)
            else:
                proc.send_signal(signal.SIGTERM)

        run = fz.bench.command(_spark_argv(fz, fz.table, target, "--model", str(fz.model)), kill=stop,
                               timeout=1200)
        out.run(run)
        one, again = _cli_clean(fz, run, target, status, first)
        one_line += one
        resumed += again
        out.losses += not again
        out.seen.append(f"{kind}: exit {run.status}, {run.stderr.strip().splitlines()[-1][:90] if run.stderr else ''}")
        for log in Path(tempfile.gettempdir()).glob("share-ner-spark-*.log"):
            if str(log) in run.stderr:
                log.unlink()
    out.seen.insert(0, f"{one_line} of 3 one line with the expected exit status; the same command then: {resumed} "
                       "of 3 equal to a clean run")
    return out


@fuzz.case("a full disk (a file size limit on the JVM and its workers) mid-run; space freed, the same command")
def full_disk(fz: SparkFuzz) -> fuzz.Outcome:
    out = fuzz.Outcome("")
    noise = random.Random(47)
    big = fz.tmp / "big"
    import pyarrow as pa
    import pyarrow.parquet as pq

    big.mkdir()
    for k in range(3):  # notes that do not compress: Spark's files outgrow the limit
        pq.write_table(pa.table({"note_id": [f"b{k}-{i}" for i in range(300)],
                                 "text": [fz.texts[i % len(fz.texts)][:500] + noise.randbytes(1000).hex()
                                          for i in range(300)]}), big / f"part-{k:05d}.parquet")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1_000_000, 1_000_000))

    target = fz.tmp / "full"
    argv = ["spark", str(big), "--out", str(target), "--master", "local[2]", "--model", str(fz.model)]
    run = fz.bench.command(argv, preexec=limit, timeout=1200)
    out.run(run)
    lines = run.stderr.strip().splitlines()
    one = run.status == 2 and len(lines) >= 1 and "cannot write (File too large" in lines[-1]
    again = fz.bench.command(argv, timeout=1800)
    summary = json.loads((target / "summary.json").read_text()) if (target / "summary.json").exists() else {}
    ok = again.status == 0 and summary.get("notes") == 900
    out.losses += not ok
    out.seen.append(f"exit {run.status}, {'one line: ' + lines[-1][18:90] if one else run.stderr[-200:]}; space "
                    f"freed: {'exit 0, all 900 notes' if ok else again.stderr[-200:]}")
    return out


@fuzz.case("a second run into the same output while the first runs (spark after spark, spark after tag)")
def concurrent(fz: SparkFuzz) -> fuzz.Outcome:
    out = fuzz.Outcome("")
    named = 0
    for k, first in enumerate(("spark", "tag")):
        target = fz.tmp / f"twice-{k}"
        first_argv = (_spark_argv(fz, fz.table, target, "--model", str(fz.model)) if first == "spark"
                      else ["tag", str(fz.table), "--out", str(target), "--model", str(fz.model), "--quiet"])
        second: list[Run] = []

        def start_second(proc: subprocess.Popen) -> None:
            while not (target / ".share-ner.lock").exists() and proc.poll() is None:
                time.sleep(0.05)
            second.append(fz.bench.command(_spark_argv(fz, fz.table, target, "--model", str(fz.model)), timeout=600))

        run = fz.bench.command(first_argv, kill=start_second, timeout=1800)
        out.run(run)
        out.run(second[0])
        err = second[0].stderr.strip()
        one = second[0].status == 2 and err.count("\n") == 0 and "another run is writing into this directory" in err
        named += one and (f"share-ner {first}" in err)
        out.losses += run.status != 0 or not one
        if first == "spark":
            out.losses += _mentions(target) != fz.clean
    out.seen.append(f"the second run stopped at once, one line naming the first (its command): {named} of 2; the "
                    "first ran to its end")
    return out


def setup(tmp: Path, source: Path, jobs: int) -> SparkFuzz:
    from share_ner.batch.annotate import load_annotator
    from share_ner.default_model.build import default_model_dir
    from share_ner.spark.job import start_session

    texts = [p.read_text(encoding="utf-8") for p in sorted(source.glob("*.txt"))[:60]]
    model = Path(default_model_dir())
    factory = functools.partial(load_annotator, model)
    table = _parquet_files(tmp / "table", texts)
    spark = start_session(f"local[{jobs}]", app="share-ner-fuzz", log_file=str(tmp / "spark.log"))
    spark.sparkContext.setLogLevel("ERROR")
    clean = tag_outcome(table, tmp, factory)[0]
    return SparkFuzz(tmp, Bench(tmp, 2), spark, model, factory, texts, table, clean)


def main(argv: list[str] | None = None) -> int:
    args = fuzz.command_line(argv, __doc__, RESULTS)
    source = args.data / "mtsamples" / "raw" / "notes"
    if not source.is_dir():
        print(f"fuzz_spark: {source}: no MTSamples notes", file=sys.stderr)
        return 2
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    cpu0 = fuzz.children_cpu()
    with tempfile.TemporaryDirectory(prefix="fuzz-spark-") as tmp_name:
        fz = setup(Path(tmp_name), source, args.jobs)
        outcomes = fuzz.run_cases(fuzz.CASES[FIRST_CASE:], fz, args.only, "fuzz_spark")
        stop_spark(fz.spark)  # then its JVM's CPU time, and its workers', is counted
    mine = resource.getrusage(resource.RUSAGE_SELF)  # and this process's: the driver, share-ner tag in process
    cpu = fuzz.children_cpu() - cpu0 + mine.ru_utime + mine.ru_stime
    text = fuzz.report(outcomes, args.jobs, cpu, command="nice python benchmarks/fuzz_spark.py",
                       title="Fuzzing share-ner spark: hostile and corrupted inputs, killed workers and JVMs, "
                             "signals, a full disk, runs at once",
                       how=f"in a local[{args.jobs}] Spark session against `share-ner tag` on the same bytes, and "
                           "through the command line as a user runs it")
    return fuzz.publish(text, outcomes, args)

if __name__ == "__main__":
    sys.exit(main())
