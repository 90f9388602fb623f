"""Hostile inputs of every kind ``share-ner tag`` and ``share-ner spark`` read, for the test that both give the same
notes, ids, rejects and counts, and for ``benchmarks/fault_injection_spark.py``: MIMIC-III and MIMIC-IV CSV
exports (plain and gzipped), Parquet tables (string and integer ids, two files) and a directory of note files,
each with unterminated quotes, repeated and blank ids, ids padded with spaces or holding '||', a tab or a line
break, empty and 0-byte notes, undecodable and NUL bytes, hidden file names and a note of ``big_chars``
characters. No real note text: the notes are made of the words :data:`TERMS` finds and filler lines.

Each note holds :data:`MARKER`, so that a test can look for note text where none may be (rejects, errors, logs).
"""

from __future__ import annotations

import gzip
import io
import json
import re
import tempfile
from pathlib import Path
from typing import Any, Callable

from mimic_csv import III_HEADER, IV_HEADER

from share_ner.document import Document, Mention

MARKER = "QZX-HOSTILE"
TERMS = re.compile(r"\b(fever|pain|cough)\b")
FILLER = "Patient resting comfortably, vitals stable overnight.\r\n"


class TermAnnotator:
    """A quick, picklable stand-in for a model: the note's first character and each of :data:`TERMS` are
    mentions, so that every note tagged has a mention (its id is in any mentions table)."""

    def __call__(self, doc: Document) -> list[Mention]:
        found = [Mention(doc.id, ((m.start(), m.end()),), f"C_{m.group(1)}") for m in TERMS.finditer(doc.text)]
        return [Mention(doc.id, ((0, 1),), "C_first"), *found]


def term_factory() -> TermAnnotator:
    return TermAnnotator()


class TrippedFactory:
    """A model, except that a note holding ``word`` makes it raise, or (``kill``) kills the process annotating it,
    as a segfault in a C extension or the kernel's OOM killer would (picklable by value to Spark's workers)."""

    def __init__(self, model_dir: Path | str, word: str, kill: bool = False) -> None:
        self.model_dir, self.word, self.kill = str(model_dir), word, kill

    def __call__(self) -> Callable[[Document], list[Mention]]:
        import os
        import signal

        from share_ner.batch.annotate import load_annotator

        inner = load_annotator(self.model_dir)

        def annotate(doc: Document) -> list[Mention]:
            if self.word in doc.text:
                if self.kill:
                    os.kill(os.getpid(), signal.SIGKILL)
                raise ValueError("boom")
            return inner(doc)

        return annotate


def note(words: str) -> str:
    return f"{MARKER} {words}\r\nSeen today; {words} noted."


def big_note(chars: int) -> str:
    body = FILLER * (chars // len(FILLER))
    return f"{MARKER} fever at admission.\r\n{body}Discharged without pain.\r\n"


def _quoted(value: str) -> str:
    return '"' + value.replace('"', '""') + '"'


def _csv(header: list[str], rows: list[list[str] | str]) -> bytes:
    """A CSV export: rows of fields (quoted as MIMIC quotes them) or raw lines; ``BADBYTE`` becomes an
    undecodable byte."""
    lines = [",".join(_quoted(h) for h in header)]
    for row in rows:
        lines.append(row if isinstance(row, str) else ",".join(_quoted(v) if v else "" for v in row))
    return ("\n".join(lines) + "\n").encode("utf-8").replace(b"BADBYTE", b"caf\xe9")


def mimic3_row(row_id: str, text: str, iserror: str = "") -> list[str]:
    return [row_id, "22532", "167853", "2151-08-04", "", "", "Discharge summary", "Report", "", iserror, text]


def mimic4_row(note_id: str, text: str) -> list[str]:
    return [note_id, "10000032", "22595853", "DS", "21", "2180-05-07 00:00:00", "2180-05-09 15:26:00", text]


def write_hostile_inputs(root: Path, big_chars: int = 10_000_000) -> dict[str, Path]:
    """Write the hostile inputs below ``root``; their paths by name."""
    root.mkdir(parents=True, exist_ok=True)
    paths = {}
    iii = [
        mimic3_row("101", note("fever and pain")),
        mimic3_row("102", note("cough"), iserror="1"),  # left out, counted
        mimic3_row("103", ""),  # TEXT is empty
        mimic3_row("104", note("BADBYTE fever")),  # not valid utf-8
        mimic3_row("105", note("pain") + "\x00"),  # NUL byte
        mimic3_row("101", note("second copy")),  # duplicate
        mimic3_row(" 106 ", note("cough")),  # padded: id 106
        mimic3_row("106", note("pain")),  # duplicate of the padded one
        mimic3_row("", note("fever")),  # empty ROW_ID
        mimic3_row("10||7", note("fever")),  # the pipe separator
        mimic3_row("10\t8", note("fever")),  # a tab
        mimic3_row("1\n09", note("fever")),  # a line break
        mimic3_row("110", big_note(big_chars)),
        # an unterminated quote: the record runs into the next one, which is read by its own id
        '111,22532,167853,2151-08-04,,,"Discharge summary","Report",,,"' + note("fever") + " never closed",
        mimic3_row("112", note("cough after the cut")),
        '113,22532,"only three fields"',  # too few fields
        mimic3_row("114", note("fever")),
    ]
    paths["csv_iii"] = root / "NOTEEVENTS.csv"
    paths["csv_iii"].write_bytes(_csv(III_HEADER, iii))
    iv = [
        mimic4_row("10000032-DS-1", note("fever")),
        mimic4_row(" 10000032-DS-2 ", note("pain")),
        mimic4_row("10000032-DS-2", note("duplicate after trimming")),
        mimic4_row("10000032||DS-3", note("fever")),
        mimic4_row("   ", note("blank id")),
        mimic4_row("10000032-DS-4", ""),
        mimic4_row("10000032-DS-5", note("BADBYTE cough")),
        mimic4_row("10000032-DS-6", note("cough")),
    ]
    paths["csv_iv_gz"] = root / "discharge.csv.gz"
    paths["csv_iv_gz"].write_bytes(gzip.compress(_csv(IV_HEADER, iv), mtime=0))
    paths["parquet_dir"] = _parquet_table(root / "table", big_chars)
    paths["parquet_int"] = _parquet_integers(root / "rows.parquet")
    paths["notes"] = _note_files(root / "notes", big_chars)
    return paths


def _parquet_table(directory: Path, big_chars: int) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory.mkdir(parents=True, exist_ok=True)
    schema = pa.schema([pa.field("note_id", pa.string()), pa.field("text", pa.binary())])
    first = [
        ("p1", note("fever")), ("p2", note("pain")), ("p1", note("a second p1")), (None, note("null id")),
        ("  ", note("blank id")), (" p3 ", note("padded")), ("p||4", note("pipes")), ("p\t5", note("tab")),
        ("p\n6", note("line break")), ("p7", ""), ("p8", None), ("p9", note("BADBYTE")), ("p10", note("nul\x00")),
    ]
    second = [("p2", note("p2 again, in the other file")), ("p3", note("p3 again")), ("p11", big_note(big_chars)),
              ("p12", note("cough"))]
    for name, rows in (("part-00000.parquet", first), ("part-00001.parquet", second)):
        ids = [r[0] for r in rows]
        texts = [None if r[1] is None else r[1].encode("utf-8").replace(b"BADBYTE", b"caf\xe9") for r in rows]
        pq.write_table(pa.table({"note_id": ids, "text": texts}, schema=schema), directory / name,
                       row_group_size=4)  # several row groups: several tasks read the file
    (directory / "_SUCCESS").write_bytes(b"")  # hidden: not a file of the table
    return directory


def _parquet_integers(path: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [(5001, note("fever"), 0), (5002, note("pain"), 1), (5001, note("again"), 0), (None, note("none"), 0),
            (5003, "", 0), (5004, note("cough"), None)]
    pq.write_table(pa.table({"ROW_ID": pa.array([r[0] for r in rows], pa.int64()),
                             "TEXT": pa.array([r[1] for r in rows], pa.string()),
                             "ISERROR": pa.array([r[2] for r in rows], pa.int32())}), path)
    return path


def _note_files(directory: Path, big_chars: int) -> Path:
    files = {
        "a/note1.txt": note("fever").encode(), "b/note1.txt": note("pain").encode(),  # one name, two notes
        "a/note1.pipe.txt": b"note1.txt||Disease_Disorder||CUI-less||0||5\n",  # gold: no note
        "empty.txt": b"", "bad.txt": note("BADBYTE").encode().replace(b"BADBYTE", b"caf\xe9"),
        "nul.txt": b"fever\x00pain", ".hidden.txt": note("hidden").encode(), "_under.txt": note("under").encode(),
        "x||y.txt": note("pipes").encode(), "t\tab.txt": note("tab").encode(), "big.txt": big_note(big_chars).encode(),
        "c/deep/note2.txt": note("cough").encode(), "crlf.txt": note("fever\r\nand pain").encode(),
    }
    for name, data in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return directory


# ---------------------------------------------------------------- what each command makes of an input

COUNTS = ("notes", "mentions", "rejected", "tokens", "characters", "skipped_iserror", "skipped_category")


def _relative(source: str, root: Path) -> str:
    """A reject's file below the input, as share-ner tag's rejects.tsv writes it (tabs as spaces)."""
    path = Path(source.removeprefix("file:"))
    return re.sub(r"[\t\r\n]+", " ", path.relative_to(root).as_posix() if root.is_dir() else path.name)


def tag_outcome(path: Path, tmp: Path, factory: Callable[[], Any]) -> tuple[dict, list, dict]:
    """share-ner tag's mentions (by note id), rejects (file below the input, note id, row, reason) and counts for
    ``path``, from its JSON Lines stream."""
    from share_ner.batch.runner import BatchOptions, run_batch

    stdout, rejects = io.StringIO(), Path(tempfile.mkdtemp(dir=tmp)) / "rejects.tsv"  # a file of its own
    summary = run_batch([path], factory, BatchOptions(out=None, progress=False, rejects=rejects),
                        stdout=stdout, stderr=io.StringIO())
    mentions = {}
    for line in stdout.getvalue().splitlines():
        record = json.loads(line)
        mentions[record["doc_id"]] = sorted((tuple(map(tuple, m["spans"])), m["cui"]) for m in record["mentions"])
    rows = [line.split("\t") for line in rejects.read_text(encoding="utf-8").splitlines()[1:]]
    found = sorted((_relative(src, path), note_id, int(row) if row else None, reason)
                   for src, note_id, row, _, reason in rows)
    return {k: v for k, v in mentions.items() if v}, found, {k: getattr(summary, k) for k in COUNTS}


def spark_outcome(spark: Any, path: Path, out: Path, **how: Any) -> tuple[dict, list, dict]:
    """The same of share-ner spark (``how``: ``run_spark``'s ``factory``, or ``model=`` for its options)."""
    import pyarrow.dataset as ds

    from share_ner.formats.parquet import read_parquet
    from share_ner.spark.job import SparkOptions, run_spark

    run_spark(SparkOptions(str(path), str(out), model=how.pop("model", None)), spark, **how)
    mentions = {k: sorted((m.spans, m.cui) for m in v) for k, v in read_parquet(out / "mentions").items()}
    table = ds.dataset(str(out / "rejects"), partitioning="hive").to_table().to_pylist()
    found = sorted((_relative(r["source"], path), r["note_id"], r["row"], r["reason"]) for r in table)
    summary = json.loads((out / "summary.json").read_text())
    return mentions, found, {k: summary[k] for k in COUNTS}


def stop_spark(spark: Any) -> None:
    """Stop the session and its JVM, and wait for the JVM: a JVM and its py4j threads left in a process would be
    inherited by the processes it forks later (and the JVM's CPU time, its workers' with it, is then counted)."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    spark.stop()
    if gateway is not None:
        gateway.shutdown()
        proc = getattr(gateway, "proc", None)
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=120)
        SparkContext._gateway = None
        SparkContext._jvm = None


def descendants(pid: int) -> list[tuple[int, str]]:
    """(pid, command line with its arguments joined by spaces) of every process below ``pid``, found by their
    parents (not by a thread's children: a JVM starts its processes from its threads)."""
    import os

    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            try:
                with open(f"/proc/{child}/cmdline", "rb") as f:
                    found.append((child, f.read().replace(b"\0", b" ").decode("utf-8", "replace")))
            except OSError:
                continue
            todo.append(child)
    return found
