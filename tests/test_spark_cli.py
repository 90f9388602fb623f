"""``share-ner spark`` run as a user runs it, in a process of its own: Spark's faults (a full disk, Ctrl-C, SIGTERM,
a killed JVM) are one line and a non-zero exit, never a traceback; a stopped run resumes to the tables of an
uninterrupted one; and a standalone cluster (a master and a worker started here from the installed pyspark, on
localhost) with ``--ship-model`` gives what ``share-ner tag`` gives, mention for mention."""

from __future__ import annotations

import contextlib
import json
import os
import random
import resource
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest
from hostile_inputs import descendants
from mimic_csv import NOTE_1, NOTE_2, NOTE_3, mimic3_csv

from share_ner.errors import ShareNerError
from share_ner.formats import read_annotations
from share_ner.inputs.files import read_notes

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from share_ner.formats.parquet import read_parquet  # noqa: E402
from share_ner.spark.job import check_java  # noqa: E402

TAGGER_TEXT = Path(__file__).parent / "fixtures" / "tagger" / "text"


@pytest.fixture(scope="module", autouse=True)
def java() -> None:
    try:
        check_java()
    except ShareNerError:
        pytest.skip("no Java runtime for Spark")


def environment(**more: str) -> dict[str, str]:
    # the executors' Python is this one; Spark binds to localhost only
    return dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1", **more)


def share_ner(*args: str, preexec: Callable[[], None] | None = None) -> subprocess.Popen:
    """``share-ner ARGS`` in a session of its own (a terminal's Ctrl-C reaches its whole process group)."""
    return subprocess.Popen([sys.executable, "-m", "share_ner.cli", *args], env=environment(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=preexec)


def finish(proc: subprocess.Popen) -> tuple[int, list[str]]:
    _, err = proc.communicate(timeout=600)
    return proc.returncode, err.splitlines()


def one_line(lines: list[str]) -> bool:
    """Only share-ner's own lines: progress, and at most one error or interruption line, never a traceback."""
    return all(line.startswith("share-ner: ") for line in lines) and sum(
        "error" in line or "interrupted" in line for line in lines) <= 1


def wait_for_line(proc: subprocess.Popen, wanted: str) -> list[str]:
    """stderr's lines up to the first holding ``wanted``."""
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:
        lines.append(line.rstrip("\n"))
        if wanted in line:
            return lines
    raise AssertionError(f"{wanted!r} never came; stderr: {lines}")


def wait_for_process(pid: int, part: str, timeout: float = 300) -> int:
    """The pid of the first process below ``pid`` whose command line holds ``part``."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for child, command in descendants(pid):
            if part in command:
                return child
        time.sleep(0.2)
    raise AssertionError(f"no {part} process below {pid}")


def note_table(directory: Path, files: int, notes: int) -> Path:
    """A Parquet table of ``files`` files of ``notes`` notes each (the fixture notes and MIMIC-like ones)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    texts = [d.text for d in read_notes(TAGGER_TEXT).values()] + [NOTE_1, NOTE_2, NOTE_3]
    directory.mkdir(parents=True)
    for k in range(files):
        ids = [f"n{k}-{i}" for i in range(notes)]
        pq.write_table(pa.table({"note_id": ids, "text": [texts[(k + i) % len(texts)] for i in range(notes)]}),
                       directory / f"part-{k:05d}.parquet")
    return directory


def tagged(table: Path, model: Path, out: Path) -> dict:
    from share_ner.cli import main

    assert main(["tag", str(table), "--model", str(model), "--out", str(out), "--quiet", "--format", "jsonl"]) == 0
    return {k: v for k, v in read_annotations(out / table.name).items() if v}


def test_full_disk_ctrl_c_and_sigterm_are_one_line_and_the_run_resumes(small_model: Path, tmp_path: Path) -> None:
    export = tmp_path / "NOTEEVENTS.csv"
    noise = random.Random(7)  # words that do not compress: Spark's files outgrow the limit below
    export.write_text(mimic3_csv([(str(i), "Radiology", "", NOTE_1 + noise.randbytes(1500).hex())
                                  for i in range(1, 1000)]))

    def small_files() -> None:  # a disk that fills at 1 MB a file (the JVM and its Python workers inherit it)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1_000_000, 1_000_000))

    code, lines = finish(share_ner("spark", str(export), "--out", str(tmp_path / "full"), "--model",
                                   str(small_model), "--master", "local[2]", preexec=small_files))
    assert code == 2 and one_line(lines), lines
    assert "cannot write (File too large; in the output directory or Spark's local directories" in lines[-1]
    assert "free the space, then run the same command again to resume" in lines[-1]
    table = note_table(tmp_path / "notes", files=3, notes=40)
    out = tmp_path / "out"
    argv = ["spark", str(table), "--out", str(out), "--model", str(small_model), "--master", "local[2]",
            "--files-per-chunk", "1"]
    # Ctrl-C in a terminal (SIGINT to the whole process group) once a chunk is written
    proc = share_ner(*argv)
    lines = wait_for_line(proc, "chunk 1/3 written")
    os.killpg(proc.pid, signal.SIGINT)
    code, rest = finish(proc)
    assert code == 130 and one_line(lines + rest) and rest[-1] == "share-ner: interrupted", lines + rest
    # SIGTERM (a scheduler stopping the job) to the command alone
    proc = share_ner(*argv)
    lines = wait_for_line(proc, "written")
    proc.send_signal(signal.SIGTERM)
    code, rest = finish(proc)
    assert code == 130 and one_line(lines + rest) and rest[-1] == "share-ner: interrupted", lines + rest
    code, lines = finish(share_ner(*argv))
    assert code == 0 and one_line(lines), lines
    summary = json.loads((out / "summary.json").read_text())
    assert summary["chunks_kept"] >= 1 and summary["notes"] == 120 and summary["rejected"] == 0
    assert read_parquet(out / "mentions") == tagged(table, small_model, tmp_path / "tag")


def test_a_killed_jvm_is_one_line_naming_the_log(small_model: Path, tmp_path: Path) -> None:
    table = note_table(tmp_path / "notes", files=2, notes=40)
    proc = share_ner("spark", str(table), "--out", str(tmp_path / "out"), "--model", str(small_model),
                     "--master", "local[2]", "--quiet")
    wait_for_process(proc.pid, "-m share_ner.spark.daemon")  # a job is running: the JVM started its Python
    jvm = next(pid for pid, command in descendants(proc.pid) if command.split(" ", 1)[0].endswith("/java"))
    os.kill(jvm, signal.SIGKILL)
    code, lines = finish(proc)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("share-ner: error: Spark's JVM stopped (") and "run the same command again" in lines[0]
    log = Path(lines[0].rsplit("(Spark's log: ", 1)[1].rstrip(")"))
    assert log.is_file()  # the JVM's own output, for whoever looks into it
    log.unlink()


# ---------------------------------------------------------------- a standalone cluster


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def standalone_cluster(work: Path) -> Iterator[str]:
    """A Spark master and one worker (2 cores) on localhost, started from the installed pyspark; its URL."""
    import pyspark

    home = Path(pyspark.__file__).parent
    # no REST submission server (it would take the fixed port 6066)
    env = environment(SPARK_HOME=str(home), SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false")
    port = free_port()
    work.mkdir(parents=True)
    procs = []
    try:
        master = ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                  "--webui-port", str(free_port())]
        worker = ["org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}", "--host", "127.0.0.1",
                  "--port", str(free_port()), "--webui-port", str(free_port()), "--cores", "2", "--memory", "2g",
                  "--work-dir", str(work / "work")]
        for name, args in (("master", master), ("worker", worker)):
            with open(work / f"{name}.log", "wb") as log:
                procs.append(subprocess.Popen([str(home / "bin" / "spark-class"), *args], env=env, stdout=log,
                                              stderr=subprocess.STDOUT, start_new_session=True))
        end = time.monotonic() + 180
        while b"Registering worker" not in (work / "master.log").read_bytes():
            if time.monotonic() > end or any(p.poll() is not None for p in procs):
                raise AssertionError("the standalone cluster did not start: "
                                     + (work / "master.log").read_text(errors="replace")[-2000:])
            time.sleep(0.5)
        yield f"spark://127.0.0.1:{port}"
    finally:
        for p in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
        for p in reversed(procs):
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def test_a_standalone_cluster_with_a_shipped_model_equals_tag(small_model: Path, tmp_path: Path) -> None:
    table = note_table(tmp_path / "notes", files=2, notes=15)
    model = tmp_path / "my model"  # the driver's own copy, shipped as an archive (a space in its name)
    import shutil

    shutil.copytree(small_model, model)
    out = tmp_path / "out"
    with standalone_cluster(tmp_path / "cluster") as url:
        code, lines = finish(share_ner("spark", str(table), "--out", str(out), "--model", str(model),
                                       "--ship-model", "--master", url, "--quiet"))
    assert code == 0 and lines == [], lines
    summary = json.loads((out / "summary.json").read_text())
    assert summary["master"] == url and summary["notes"] == 30
    # each executor's daemon loaded the model it unpacked from the archive, before forking its workers
    assert summary["workers"] and all(w["preload_seconds"] > 0 for w in summary["workers"].values())
    assert read_parquet(out / "mentions") == tagged(table, small_model, tmp_path / "tag")
