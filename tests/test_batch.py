"""The batch runner: note files and CSV shards, rejects, workers, resume after a kill, stdout."""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mimic_csv import NOTE_1, NOTE_2, NOTE_3, mimic3_csv, mimic4_csv, write

from share_ner.batch.annotate import NoteResult, annotate_note, annotate_notes, count_tokens
from share_ner.batch.runner import BatchOptions, run_batch
from share_ner.document import Document, Mention
from share_ner.errors import InputError, ShareNerError
from share_ner.formats import read_annotations
from share_ner.inputs.files import NoteEntry

TERMS = re.compile(r"\b(fever|pneumonia|diabetes|pain)\b")


class RegexAnnotator:
    """A picklable stand-in for the real pipeline: every listed word is a mention, CUI by word."""

    def __call__(self, doc: Document) -> list[Mention]:
        return [Mention(doc.id, ((m.start(), m.end()),), f"C_{m.group(1)}") for m in TERMS.finditer(doc.text)]


def regex_factory() -> RegexAnnotator:
    return RegexAnnotator()


class FailingAnnotator:
    def __call__(self, doc: Document) -> list[Mention]:
        if "diabetes" in doc.text:
            raise ValueError(f"cannot handle {doc.text!r}")  # a message quoting the note must not leak
        return []


def failing_factory() -> FailingAnnotator:
    return FailingAnnotator()


class BatchAnnotator(RegexAnnotator):
    """An annotator that also takes a batch at once (as a loaded model does), failing on notes with diabetes."""

    def many(self, docs: list[Document]) -> list[list[Mention] | Exception]:
        return [ValueError(d.text) if "diabetes" in d.text else self(d) for d in docs]


def batch_factory() -> BatchAnnotator:
    return BatchAnnotator()


def broken_factory() -> RegexAnnotator:
    raise ShareNerError("model/: missing model.crfsuite")


def opts(out: Path | None, **kw) -> BatchOptions:
    return BatchOptions(out=out, progress=False, **kw)


def files(root: Path) -> dict[str, bytes]:
    """Every non-hidden output file except the run's timing summary."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.startswith(".") and p.name != "summary.json"}


@pytest.fixture
def notes_dir(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    (root / "ward" / "icu").mkdir(parents=True)
    (root / "a.txt").write_bytes(b"Fever? no; fever and pneumonia.\r\nPain.")
    (root / "ward" / "b.txt").write_bytes(b"denies pain")
    (root / "ward" / "icu" / "c.txt").write_bytes(b"no findings")
    (root / "ward" / "empty.txt").write_bytes(b"")
    (root / "ward" / "scan.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00pain")
    (root / "latin1.txt").write_bytes("fièvre pain".encode("latin-1"))
    return root


def test_annotate_note_is_pure_and_reports_failures_without_text() -> None:
    doc = Document("n1", "fever, diabetes")
    assert annotate_note(regex_factory(), doc) == NoteResult(
        "n1", (Mention("n1", ((0, 5),), "C_fever"), Mention("n1", ((7, 15),), "C_diabetes")), 3)
    res = annotate_note(failing_factory(), doc)
    assert res.mentions == () and res.error.startswith("annotation failed: ValueError in test_batch.py:")
    assert "fever" not in res.error
    assert count_tokens("Pt's BP: 120/80.") == 9  # Pt ' s BP : 120 / 80 .


def test_count_tokens_is_the_simple_token_pattern_count_on_any_text() -> None:
    import random

    from share_ner.text import SIMPLE_TOKEN

    rng = random.Random(3)
    ascii_chars = [chr(c) for c in range(128)]  # every ASCII code, control characters and \x1c-\x1f included
    for _ in range(2000):
        pool = ascii_chars if rng.random() < 0.7 else ascii_chars + ["é", "²", "\u00a0", "日", "\u2028"]
        text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 30)))
        assert count_tokens(text) == len(SIMPLE_TOKEN.findall(text)), repr(text)
    assert count_tokens("") == 0 and count_tokens("a") == 1 and count_tokens(" ,a_b1 ") == 2


def test_annotate_notes_hands_a_batch_annotator_the_batch_and_keeps_failures_to_their_note(monkeypatch) -> None:
    docs = [Document("n1", "fever"), Document("n2", "diabetes and fever"), Document("n3", "pain")]
    got = annotate_notes(batch_factory(), docs)
    assert [r.mentions for r in got] == [annotate_note(regex_factory(), d).mentions if i != 1 else ()
                                         for i, d in enumerate(docs)]
    assert got[1].error.startswith("annotation failed: ValueError") and "diabetes" not in got[1].error
    assert [r.tokens for r in got] == [1, 3, 1] and got[0].error is None and got[2].error is None
    # a batch call that raises: every note again alone, with the plain call
    monkeypatch.setattr(BatchAnnotator, "many", lambda self, docs: 1 / 0)
    assert annotate_notes(batch_factory(), docs) == [annotate_note(batch_factory(), d) for d in docs]


@pytest.mark.parametrize("jobs", [1, 2])
def test_batch_annotator_gives_the_same_outputs(notes_dir: Path, tmp_path: Path, jobs: int) -> None:
    run_batch([notes_dir], regex_factory, opts(tmp_path / "plain"))
    run_batch([notes_dir], batch_factory, opts(tmp_path / "batched", jobs=jobs))
    assert files(tmp_path / "batched") == files(tmp_path / "plain")


def test_directory_recursive_outputs_and_rejects(notes_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    summary = run_batch([notes_dir], regex_factory, opts(out))
    assert files(out).keys() == {"a.pipe.txt", "ward/b.pipe.txt", "ward/icu/c.pipe.txt", "rejects.tsv", "run.json"}
    assert (out / "a.pipe.txt").read_text() == (
        "a.txt||Disease_Disorder||C_fever||11||16\n"
        "a.txt||Disease_Disorder||C_pneumonia||21||30\n")
    assert (out / "ward/icu/c.pipe.txt").read_bytes() == b""  # a note without mentions still gets its file
    lines = (out / "rejects.tsv").read_text().splitlines()
    assert lines[0] == "source\tnote_id\trow\tbyte\treason"
    assert sorted(lines[1:]) == sorted([
        f"{notes_dir / 'latin1.txt'}\tlatin1\t\t\tnot valid utf-8 (byte 2); pass --encoding for another encoding",
        f"{notes_dir / 'ward/empty.txt'}\tward/empty\t\t\tempty file",  # below a sub-directory: by its path
        f"{notes_dir / 'ward/scan.txt'}\tward/scan\t\t\tbinary file (NUL byte at byte 8)",
    ])
    assert "pain" not in (out / "rejects.tsv").read_text()
    assert (summary.notes, summary.mentions, summary.rejected, summary.skipped_done) == (3, 3, 3, 0)
    saved = json.loads((out / "summary.json").read_text())
    assert saved["notes"] == 3 and saved["tokens"] == summary.tokens > 0 and "tokens_per_second" in saved["this_run"]

    # a rerun skips what exists and does not duplicate rejects; the summary still counts the whole output
    again = run_batch([notes_dir], regex_factory, opts(out))
    assert (again.tagged, again.skipped_done, again.notes, again.mentions, again.rejected) == (0, 3, 3, 3, 3)
    assert len((out / "rejects.tsv").read_text().splitlines()) == 4
    # --encoding latin-1 rescues the note that UTF-8 rejected
    latin = run_batch([notes_dir / "latin1.txt"], regex_factory, opts(tmp_path / "o2", encoding="latin-1"))
    assert latin.notes == 1 and (tmp_path / "o2/latin1.pipe.txt").read_text().count("C_pain") == 1


@pytest.mark.parametrize("fmt", ["brat", "jsonl"])
def test_other_per_note_formats_read_back(notes_dir: Path, tmp_path: Path, fmt: str) -> None:
    run_batch([notes_dir], regex_factory, opts(tmp_path / fmt, fmt=fmt))
    got = read_annotations(tmp_path / fmt)
    assert got["a"] == RegexAnnotator()(Document("a", (notes_dir / "a.txt").read_bytes().decode()))
    assert got["b"] == [Mention("b", ((7, 11),), "C_pain")] and got["c"] == []


@pytest.fixture
def noteevents(tmp_path: Path) -> Path:
    rows = [(str(100 + i), "Nursing/other" if i % 3 else "Radiology", "1" if i == 4 else "",
             [NOTE_1, NOTE_2, NOTE_3][i % 3] + f" #{i}") for i in range(23)]
    return write(tmp_path / "NOTEEVENTS.csv.gz", mimic3_csv(rows), gz=True)


def shard_lines(directory: Path) -> list[dict]:
    return [json.loads(line) for p in sorted(directory.glob("part-*.jsonl")) for line in p.read_text().splitlines()]


def test_csv_shards_manifest_and_summary(noteevents: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    summary = run_batch([noteevents], regex_factory, opts(out, shard_size=5))
    shards = out / "NOTEEVENTS"
    assert sorted(p.name for p in shards.glob("part-*")) == [f"part-0000{k}.jsonl" for k in range(5)]
    recs = shard_lines(shards)
    assert [r["doc_id"] for r in recs] == [str(100 + i) for i in range(23) if i != 4]  # ISERROR row skipped
    first = recs[0]
    assert first["mentions"] == [
        {"spans": [[NOTE_1.index("fever"), NOTE_1.index("fever") + 5]], "text": "fever", "cui": "C_fever"},
        {"spans": [[NOTE_1.index("pneumonia"), NOTE_1.index("pneumonia") + 9]], "text": "pneumonia", "cui": "C_pneumonia"}]
    manifest = [json.loads(x) for x in (shards / "manifest.ndjson").read_text().splitlines()]
    assert [(m["shard"], m["first_row"], m["last_row"], m["notes"], m["complete"]) for m in manifest] == [
        ("part-00000.jsonl", 1, 6, 5, True), ("part-00001.jsonl", 7, 11, 5, True),
        ("part-00002.jsonl", 12, 16, 5, True), ("part-00003.jsonl", 17, 21, 5, True),
        ("part-00004.jsonl", 22, 23, 2, True)]
    assert summary.notes == 22 and summary.mentions == sum(len(r["mentions"]) for r in recs)
    # the shard directory reads back as annotations (the manifest is not taken for one)
    back = read_annotations(shards)
    assert len(back) == 22 and back["100"] == [Mention("100", ((s, e),), m["cui"])
                                               for m in first["mentions"] for s, e in m["spans"]]
    # category filter and limit
    sub = run_batch([noteevents], regex_factory, opts(tmp_path / "rad", categories=("radiology",), limit=3))
    assert [r["doc_id"] for r in shard_lines(tmp_path / "rad/NOTEEVENTS")] == ["100", "103", "106"]
    assert sub.notes == 3


def test_resume_repairs_a_manifest_cut_by_a_crash(noteevents: Path, tmp_path: Path) -> None:
    out, clean = tmp_path / "out", tmp_path / "clean"
    run_batch([noteevents], regex_factory, opts(clean, shard_size=5))
    run_batch([noteevents], regex_factory, opts(out, shard_size=5))
    # a crash after the manifest line of shard 4 but before its rename, then a line cut in half
    (out / "NOTEEVENTS/part-00004.jsonl").unlink()
    (out / "NOTEEVENTS/part-00002.jsonl").unlink()
    with open(out / "NOTEEVENTS/manifest.ndjson", "a") as f:
        f.write('{"index": 5, "shard": "part-0')
    again = run_batch([noteevents], regex_factory, opts(out, shard_size=5))
    assert (again.tagged, again.skipped_done, again.notes) == (5 + 2, 15, 22)
    assert files(out) == files(clean)
    assert output_summary(out) == output_summary(clean)


def output_summary(out: Path) -> dict:
    """summary.json without what differs between one run and its resumption: this invocation's own counts and
    times."""
    saved = json.loads((out / "summary.json").read_text())
    assert set(saved["this_run"]) >= {"tagged", "skipped_done", "seconds"}
    del saved["this_run"]
    saved["out"] = Path(saved["out"]).name == out.name
    saved["rejects_file"] = saved["rejects_file"] == str(out / "rejects.tsv")
    return saved


def test_jobs_2_equals_jobs_1(noteevents: Path, notes_dir: Path, tmp_path: Path) -> None:
    one, two, forked = tmp_path / "one", tmp_path / "two", tmp_path / "forked"
    run_batch([noteevents, notes_dir], regex_factory, opts(one, shard_size=4, batch_notes=3))
    run_batch([noteevents, notes_dir], regex_factory, opts(two, shard_size=4, batch_notes=3, jobs=2))
    run_batch([noteevents, notes_dir], regex_factory, opts(forked, shard_size=4, batch_notes=3, jobs=2, preload=True))
    assert files(one) == files(two) == files(forked)
    assert len(files(one)) > 8


LOADED_IN: list[int] = []


def counted_factory() -> RegexAnnotator:
    LOADED_IN.append(os.getpid())
    return RegexAnnotator()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers are forked from a preloaded parent on Linux")
def test_preload_loads_the_annotator_once_here_and_the_workers_inherit_it(noteevents: Path, tmp_path: Path) -> None:
    LOADED_IN.clear()
    summary = run_batch([noteevents], counted_factory, opts(tmp_path / "a", jobs=2, preload=True))
    assert LOADED_IN == [os.getpid()] and summary.notes == 22  # once, in this process
    from share_ner.batch import processes

    assert processes._WORKER == {}  # not kept after the run
    run_batch([noteevents], counted_factory, opts(tmp_path / "b", jobs=2))
    assert LOADED_IN == [os.getpid()]  # without preload each worker loads its own, in its own process
    assert files(tmp_path / "a") == files(tmp_path / "b")
    with pytest.raises(ShareNerError, match="missing model.crfsuite"):
        run_batch([noteevents], broken_factory, opts(tmp_path / "c", jobs=2, preload=True))


def test_five_megabyte_note_and_gold_files_in_a_directory(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "big.txt").write_text("nothing today. " * 333_333 + "fever")  # 5,000,000 characters
    (notes / "big.pipe.txt").write_text("big.txt||Disease_Disorder||CUI-less||3||8\n")  # gold beside notes: not a note
    out = tmp_path / "out"
    summary = run_batch([notes], regex_factory, opts(out, jobs=2))
    assert (summary.notes, summary.mentions, summary.characters) == (1, 1, 5_000_000)
    assert files(out).keys() == {"big.pipe.txt", "rejects.tsv", "run.json"}
    assert (out / "big.pipe.txt").read_text() == "big.txt||Disease_Disorder||C_fever||4999995||5000000\n"


def test_stdout_jsonl_and_rejects_on_stderr(notes_dir: Path, noteevents: Path) -> None:
    stdout, stderr = io.StringIO(), io.StringIO()
    summary = run_batch([notes_dir, noteevents], regex_factory, opts(None), stdout=stdout, stderr=stderr)
    recs = [json.loads(x) for x in stdout.getvalue().splitlines()]
    # one stream for the whole directory: a note below a sub-directory is named by its path there
    assert [r["doc_id"] for r in recs[:3]] == ["a", "ward/b", "ward/icu/c"] and len(recs) == 3 + 22 == summary.notes
    assert recs[1]["mentions"] == [{"spans": [[7, 11]], "text": "pain", "cui": "C_pain"}]
    assert stderr.getvalue().count("share-ner: rejected ") == 3


def test_annotation_failure_is_rejected_and_the_batch_goes_on(noteevents: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    summary = run_batch([noteevents], failing_factory, opts(out, jobs=2))
    rejected = (out / "rejects.tsv").read_text().splitlines()[1:]
    # NOTE_2 (every third row from 101) mentions diabetes; row 104 is ISERROR and skipped
    assert [r.split("\t")[1] for r in rejected] == [str(100 + i) for i in range(1, 23, 3) if i != 4]
    assert all("annotation failed: ValueError" in r and "diabetes" not in r for r in rejected)
    assert summary.notes == 22 - len(rejected)
    assert len(shard_lines(out / "NOTEEVENTS")) == summary.notes


def test_worker_setup_error_is_one_share_ner_error(noteevents: Path, tmp_path: Path) -> None:
    with pytest.raises(ShareNerError, match="missing model.crfsuite"):
        run_batch([noteevents], broken_factory, opts(tmp_path / "out", jobs=2))


def test_truncated_gzip_keeps_good_notes_and_redoes_the_cut_shard(tmp_path: Path) -> None:
    rows = [(f"n{i}", "DS", f"fever {i} " + "x" * 4000) for i in range(60)]
    data = gzip.compress(mimic4_csv(rows).encode(), compresslevel=1)
    path = tmp_path / "discharge.csv.gz"
    path.write_bytes(data[: int(len(data) * 0.6)])
    out = tmp_path / "out"
    summary = run_batch([path], regex_factory, opts(out, shard_size=10))
    got = shard_lines(out / "discharge")
    assert 0 < len(got) == summary.notes < 60
    (reject,) = (out / "rejects.tsv").read_text().splitlines()[1:]
    assert reject.startswith(f"{path}\t\t{len(got) + 1}\t")
    assert reject.split("\t")[4].startswith("the gzip stream ends early (truncated file)")
    # the complete file arrives: the cut shard is redone, the complete ones are kept
    path.write_bytes(data)
    again = run_batch([path], regex_factory, opts(out, shard_size=10))
    assert [r["doc_id"] for r in shard_lines(out / "discharge")] == [f"n{i}" for i in range(60)]
    assert again.skipped_done == len(got) // 10 * 10


def test_setup_errors(tmp_path: Path, noteevents: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ShareNerError, match="output folder is not writable"):
        run_batch([noteevents], regex_factory, opts(blocker / "out"))
    with pytest.raises(InputError, match="no such file or directory"):
        run_batch([tmp_path / "missing"], regex_factory, opts(tmp_path / "o"))
    bad = write(tmp_path / "NOTEEVENTS.csv", "ROW_ID,CATEGORY\n1,x\n")
    with pytest.raises(InputError, match=r"NOTEEVENTS.csv:1: .*no TEXT column"):
        run_batch([bad], regex_factory, opts(tmp_path / "o"))
    run_batch([noteevents], regex_factory, opts(tmp_path / "o3", shard_size=5))
    with pytest.raises(ShareNerError, match="other settings .*shard_size 5 then 7"):
        run_batch([noteevents], regex_factory, opts(tmp_path / "o3", shard_size=7))


def test_read_error_midway_is_one_error_after_the_notes_read(notes_dir: Path, tmp_path: Path, monkeypatch) -> None:
    import share_ner.batch.runner as runner

    walks = []

    def walk(path: Path, skipped=None):
        walks.append(path)
        yield NoteEntry(notes_dir / "a.txt")
        if len(walks) > 1:  # the directory became unreadable after the walk that counts the notes before work
            raise InputError(notes_dir / "ward", "cannot list directory: Permission denied")

    monkeypatch.setattr(runner, "walk_note_files", walk)
    with pytest.raises(InputError, match="ward: cannot list directory: Permission denied"):
        run_batch([notes_dir], regex_factory, opts(tmp_path / "out", jobs=2))
    assert (tmp_path / "out/a.pipe.txt").exists()


HELPER = """
import re, sys, time
from pathlib import Path
from share_ner.batch.runner import BatchOptions, run_batch
from share_ner.document import Mention

TERMS = re.compile({pattern!r})

class Slow:  # the tests' RegexAnnotator, slowed down
    def __call__(self, doc):
        time.sleep(0.02)
        return [Mention(doc.id, ((m.start(), m.end()),), f"C_{{m.group(1)}}") for m in TERMS.finditer(doc.text)]

def slow():
    return Slow()

if __name__ == "__main__":
    try:
        run_batch(sys.argv[1:2], slow, BatchOptions(out=Path(sys.argv[2]), progress=False, shard_size=7,
                                                    jobs=int(sys.argv[3]), batch_notes=2))
    except KeyboardInterrupt:
        sys.exit(130)
"""


def wait_for_progress(proc: subprocess.Popen, ready) -> None:
    """Wait until the run shows the progress ``ready`` looks for (outputs on disk), however loaded the machine; a
    run that ends or stalls first fails the test instead of being signalled at an arbitrary moment."""
    stalled_after = time.monotonic() + 300
    while not ready():
        assert proc.poll() is None, f"the run ended (status {proc.returncode}) before the progress waited for"
        assert time.monotonic() < stalled_after, "no progress in 300 s"
        time.sleep(0.02)


def worker_pids(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(x) for x in children.read_text().split()] if children.exists() else []


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="finds worker processes through /proc")
def test_killing_a_worker_from_outside_mid_run_loses_nothing(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(80):
        (notes / f"m{i:02d}.txt").write_text(f"pain {i} fever")
    helper = tmp_path / "helper.py"
    helper.write_text(HELPER.format(pattern=TERMS.pattern))
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent.parent))
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, str(helper), str(notes), str(out), "2"], env=env)
    wait_for_progress(proc, lambda: out.exists() and len(list(out.glob("*.pipe.txt"))) >= 4
                      and len(worker_pids(proc.pid)) == 2)
    os.kill(worker_pids(proc.pid)[0], signal.SIGKILL)  # what the OOM killer does
    assert proc.wait(timeout=300) == 0  # a hang here was the old behaviour
    clean = tmp_path / "clean"
    run_batch([notes], regex_factory, opts(clean, shard_size=7, batch_notes=2))
    assert files(out) == files(clean)
    assert (out / "rejects.tsv").read_text().splitlines()[1:] == []


def gone(pids: list[int]) -> bool:
    """Whether none of ``pids`` is still a live process (zombies count as gone)."""
    for pid in pids:
        try:
            if Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z":
                return False
        except OSError:
            continue
    return True


@pytest.mark.parametrize("sig,jobs", [(signal.SIGTERM, 2), (signal.SIGKILL, 1), (signal.SIGKILL, 2)])
def test_killed_run_resumes_to_the_same_output(tmp_path: Path, sig: int, jobs: int) -> None:
    rows = [(f"n{i:03d}", "DS" if i % 5 else "RR", [NOTE_1, NOTE_2, NOTE_3][i % 3]) for i in range(120)]
    csv_path = write(tmp_path / "discharge.csv.gz", mimic4_csv(rows) + "n999,1,2,DS\n", gz=True)
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(30):
        (notes / f"m{i:02d}.txt").write_text(f"pain {i} fever" if i % 7 else "")
    helper = tmp_path / "helper.py"
    helper.write_text(HELPER.format(pattern=TERMS.pattern))
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent.parent))
    for inp, name, ready in ((csv_path, "csv", lambda o: list((o / "discharge").glob("part-*"))),
                             (notes, "dir", lambda o: list(o.glob("*.pipe.txt")))):
        out = tmp_path / f"{name}-killed"
        proc = subprocess.Popen([sys.executable, str(helper), str(inp), str(out), str(jobs)], env=env)
        wait_for_progress(proc, lambda: out.exists() and len(ready(out)) >= 2
                          and len(worker_pids(proc.pid)) == (jobs if jobs > 1 else 0))
        workers = worker_pids(proc.pid)
        proc.send_signal(sig)
        proc.wait(timeout=15)
        assert proc.returncode == (130 if sig == signal.SIGTERM else -signal.SIGKILL)
        # workers left without their parent see their pipe close and exit (none waits forever)
        ended_by = time.monotonic() + 120
        while not gone(workers):
            assert time.monotonic() < ended_by, f"workers {workers} outlived their killed parent"
            time.sleep(0.05)
        partial = files(out)
        resumed = run_batch([inp], regex_factory, opts(out, shard_size=7, batch_notes=2))
        assert resumed.skipped_done > 0 and resumed.tagged < resumed.notes
        clean = tmp_path / f"{name}-clean"
        run_batch([inp], regex_factory, opts(clean, shard_size=7, batch_notes=2))
        assert files(out) == files(clean)
        assert output_summary(out) == output_summary(clean)
        assert len(files(out)) > len(partial)  # the kill came before the end
        assert not [p for p in out.rglob(".*") if p.is_file()]  # no temporary file left behind


# ---------------------------------------------------------------- faults a hospital run meets

class KillingAnnotator(RegexAnnotator):
    """Kills its own worker process (SIGKILL, as the OOM killer does) on a note containing KILLME; with a marker
    file path, only the first time any worker meets the note (a transient death: the retry succeeds)."""

    def __init__(self, once: str | None = None) -> None:
        self.once = once

    def __call__(self, doc: Document) -> list[Mention]:
        if "KILLME" in doc.text:
            if self.once is None or not os.path.exists(self.once):
                if self.once is not None:
                    Path(self.once).write_text("killed once")
                os.kill(os.getpid(), signal.SIGKILL)
        return super().__call__(doc)


def killing_factory() -> KillingAnnotator:
    return KillingAnnotator(os.environ.get("SHARE_NER_TEST_KILL_ONCE"))


def killing_notes(root: Path, n: int = 40, poison: int = 17) -> Path:
    root.mkdir()
    for i in range(n):
        (root / f"n{i:02d}.txt").write_text(f"fever {i} and pain" + (" KILLME" if i == poison else ""))
    return root


@pytest.mark.parametrize("preload", [True, False])
def test_a_note_that_kills_its_worker_is_rejected_and_every_other_note_written(
        tmp_path: Path, preload: bool) -> None:
    notes = killing_notes(tmp_path / "notes")
    out = tmp_path / "out"
    summary = run_batch([notes], killing_factory, opts(out, jobs=2, batch_notes=4, preload=preload))
    rejects = (out / "rejects.tsv").read_text().splitlines()[1:]
    assert rejects == [f"{notes / 'n17.txt'}\tn17\t\t\tworker died (signal 9)"]
    assert summary.notes == 39 and summary.rejected == 1
    written = sorted(p.name for p in out.glob("*.pipe.txt"))
    assert written == [f"n{i:02d}.pipe.txt" for i in range(40) if i != 17]
    clean = tmp_path / "clean"
    run_batch([notes], regex_factory, opts(clean, batch_notes=4))
    assert {k: v for k, v in files(out).items() if k != "rejects.tsv"} == {
        k: v for k, v in files(clean).items() if k not in ("rejects.tsv", "n17.pipe.txt")}


def test_a_worker_killed_once_mid_run_loses_nothing(tmp_path: Path, monkeypatch) -> None:
    notes = killing_notes(tmp_path / "notes")
    monkeypatch.setenv("SHARE_NER_TEST_KILL_ONCE", str(tmp_path / "killed"))
    out = tmp_path / "out"
    summary = run_batch([notes], killing_factory, opts(out, jobs=2, batch_notes=4, preload=True))
    assert (tmp_path / "killed").exists()  # a worker did die
    assert summary.notes == 40 and summary.rejected == 0
    clean = tmp_path / "clean"
    run_batch([notes], regex_factory, opts(clean, batch_notes=4))
    assert files(out) == files(clean)


def test_workers_that_always_die_stop_the_run_with_one_error(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(12):
        (notes / f"n{i:02d}.txt").write_text("KILLME")
    with pytest.raises(ShareNerError, match=r"worker processes keep dying \(worker died \(signal 9\)"):
        run_batch([notes], killing_factory, opts(tmp_path / "out", jobs=2, batch_notes=1, preload=True))


def dying_factory() -> RegexAnnotator:
    os.kill(os.getpid(), signal.SIGKILL)  # a model whose loading crashes its worker
    return RegexAnnotator()


def test_workers_that_die_while_loading_stop_the_run_with_one_error(tmp_path: Path) -> None:
    notes = killing_notes(tmp_path / "notes", n=12, poison=-1)  # 12 notes: at least 12 deaths before all are tried
    with pytest.raises(ShareNerError, match=r"worker processes keep dying \(worker died \(signal 9\)"):
        run_batch([notes], dying_factory, opts(tmp_path / "out", jobs=2))


def test_same_note_name_in_two_inputs_stops_before_any_work(tmp_path: Path) -> None:
    for year in ("2019", "2020"):
        (tmp_path / "coll" / year).mkdir(parents=True)
        (tmp_path / "coll" / year / "note1.txt").write_text(f"fever {year}")
    (tmp_path / "coll/2020/note2.txt").write_text("pain")
    out = tmp_path / "out"
    with pytest.raises(ShareNerError) as err:
        run_batch([tmp_path / "coll/2019", tmp_path / "coll/2020"], regex_factory, opts(out))
    assert str(err.value).startswith(f"{tmp_path / 'coll/2020/note1.txt'} and {tmp_path / 'coll/2019/note1.txt'} "
                                     "are both note 'note1' and would both write note1.pipe.txt")
    assert not list(out.glob("*.pipe.txt"))
    # the same two directories under one parent input keep their sub-directories apart: nothing collides
    summary = run_batch([tmp_path / "coll"], regex_factory, opts(tmp_path / "whole"))
    assert summary.notes == 3 and (tmp_path / "whole/2019/note1.pipe.txt").exists()


def test_symlink_loop_dangling_link_and_fifo(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    (notes / "ward").mkdir(parents=True)
    (notes / "a.txt").write_text("fever")
    (notes / "ward/b.txt").write_text("pain")
    (notes / "ward/self").symlink_to("..")  # a loop back to the top
    (notes / "again").symlink_to("ward")  # the same directory twice: read once, under the first name
    (notes / "gone.txt").symlink_to("missing.txt")
    (notes / "loop.txt").symlink_to("loop.txt")
    os.mkfifo(notes / "pipe.txt")
    out = tmp_path / "out"
    summary = run_batch([notes], regex_factory, opts(out))
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*.pipe.txt")) == ["a.pipe.txt", "again/b.pipe.txt"]
    reasons = {line.split("\t")[1]: line.split("\t")[4] for line in (out / "rejects.tsv").read_text().splitlines()[1:]}
    assert reasons == {"gone": "dangling symbolic link (No such file or directory)",
                       "loop": "symbolic link loop (Too many levels of symbolic links)",
                       "pipe": "a FIFO (named pipe), not a regular file"}
    assert (summary.notes, summary.rejected) == (2, 3)


def test_write_error_mid_run_is_one_line_then_the_rerun_resumes(notes_dir: Path, tmp_path: Path, monkeypatch) -> None:
    import errno

    import share_ner.batch.sinks as sinks

    out = tmp_path / "out"
    real = sinks.write_annotations
    written: list[str] = []

    def full_disk(directory, doc, mentions, fmt):
        if len(written) == 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(directory / f".{doc.id}.pipe.txt.tmp1"))
        written.append(doc.id)
        return real(directory, doc, mentions, fmt)

    monkeypatch.setattr(sinks, "write_annotations", full_disk)
    with pytest.raises(ShareNerError) as err:
        run_batch([notes_dir], regex_factory, opts(out))
    message = str(err.value)
    assert "\n" not in message and "No space left on device" in message and ".pipe.txt.tmp1: cannot write" in message
    assert json.loads((out / "summary.json").read_text())["this_run"]["interrupted"] is True
    assert len(list(out.rglob("*.pipe.txt"))) == 2  # what was complete is kept
    monkeypatch.setattr(sinks, "write_annotations", real)
    again = run_batch([notes_dir], regex_factory, opts(out))
    assert again.skipped_done == 2
    clean = tmp_path / "clean"
    run_batch([notes_dir], regex_factory, opts(clean))
    assert files(out) == files(clean) and output_summary(out) == output_summary(clean)


FULL_DISK = """
import resource, signal, sys
from pathlib import Path
from share_ner.batch.runner import BatchOptions, run_batch
from share_ner.errors import ShareNerError
from test_batch import regex_factory

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (8_000, 8_000))  # a shard here is about 17 kB
try:
    run_batch([sys.argv[1]], regex_factory, BatchOptions(out=Path(sys.argv[2]), progress=False, shard_size=100))
except ShareNerError as exc:
    print(exc, file=sys.stderr)
    sys.exit(2)
"""


def test_a_shard_that_outgrows_the_disk_is_one_line_and_the_rerun_resumes(tmp_path: Path) -> None:
    rows = [(f"n{i:03d}", "DS", NOTE_1) for i in range(300)]
    path = write(tmp_path / "discharge.csv", mimic4_csv(rows))
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).parent.parent), str(Path(__file__).parent)]))
    proc = subprocess.run([sys.executable, "-c", FULL_DISK, str(path), str(out)], env=env, capture_output=True,
                          text=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "part-00000.jsonl.tmp" in proc.stderr and "cannot write (File too large)" in proc.stderr
    assert json.loads((out / "summary.json").read_text())["this_run"]["interrupted"] is True
    run_batch([path], regex_factory, opts(out, shard_size=100))
    clean = tmp_path / "clean"
    run_batch([path], regex_factory, opts(clean, shard_size=100))
    assert files(out) == files(clean) and output_summary(out) == output_summary(clean)


def test_an_output_directory_blocked_by_a_file_is_one_line(notes_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "ward").write_text("not a directory")  # ward/b.txt cannot get its ward/ output directory
    with pytest.raises(ShareNerError, match=r"out/ward: cannot write \(File exists\)"):
        run_batch([notes_dir], regex_factory, opts(out))
    assert (out / "a.pipe.txt").exists() and (out / "summary.json").exists()


class LengthLimitedAnnotator(RegexAnnotator):
    """Refuses texts over spaCy's default limit, as a pipeline built on spaCy does."""

    def __call__(self, doc: Document) -> list[Mention]:
        if len(doc.text) > 1_000_000:
            raise ValueError("[E088] Text of length ... exceeds maximum of 1000000")
        return super().__call__(doc)


def length_limited_factory() -> LengthLimitedAnnotator:
    return LengthLimitedAnnotator()


def test_a_five_megabyte_note_has_the_mentions_of_its_pieces_tagged_separately(tmp_path: Path) -> None:
    from share_ner.batch.annotate import note_pieces

    lines = ["History of fever.\n", "Denies pain, no diabetes.\r\n", "pneumonia\n", "x" * 70 + "\n"]
    text = "".join(lines[i % 4] for i in range(5_000_000 // 30))
    text += "unbroken " * 200_000 + "pain"  # a 1.8 MB line: cut after a space, not inside a word
    pieces = note_pieces(text)
    assert len(pieces) > 5 and all(e - s <= 1_000_000 for s, e in pieces)
    assert "".join(text[s:e] for s, e in pieces) == text
    assert all(text[e - 1] in "\n " for s, e in pieces[:-1])
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "big.txt").write_bytes(text.encode())
    summary = run_batch([notes], length_limited_factory, opts(tmp_path / "out", fmt="jsonl"))
    assert summary.rejected == 0 and summary.characters == len(text)
    (record,) = [json.loads(x) for x in (tmp_path / "out/big.jsonl").read_text().splitlines()]
    got = [(tuple(map(tuple, m["spans"])), m["cui"]) for m in record["mentions"]]
    # the same text tagged in other pieces (cut at other line breaks), their mentions shifted by hand
    expected = []
    cuts = [0] + [text.index("\n", k * 700_001) + 1 for k in range(1, 7)] + [len(text)]
    for s, e in zip(cuts, cuts[1:]):
        for m in RegexAnnotator()(Document("p", text[s:e])):
            expected.append((tuple((a + s, b + s) for a, b in m.spans), m.cui))
    assert got == expected and len(got) > 100_000
    assert all(text[a:b] == m["text"] for m in record["mentions"][:50] for a, b in m["spans"])


class InterruptingAnnotator(RegexAnnotator):
    """Ctrl-C pressed while it tags its 18th note."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, doc: Document) -> list[Mention]:
        self.calls += 1
        if self.calls == 18:
            raise KeyboardInterrupt
        return super().__call__(doc)


def interrupting_factory() -> InterruptingAnnotator:
    return InterruptingAnnotator()


def test_summary_of_a_resumed_run_equals_an_uninterrupted_one(tmp_path: Path) -> None:
    rows = [(str(100 + i), "Radiology" if i % 4 == 0 else "Nursing/other", "1" if i % 9 == 0 else "",
             [NOTE_1, NOTE_2, NOTE_3][i % 3]) for i in range(40)]
    rows[13] = ("113", "Nursing/other", "", "")
    csv_text = mimic3_csv(rows) + '114,1,2,2151-08-04,,,"Nursing/other","Report",,,"duplicate"\n' + "215,1,2\n"
    path = write(tmp_path / "NOTEEVENTS.csv", csv_text)
    clean, out = tmp_path / "clean", tmp_path / "out"
    options = dict(shard_size=5, categories=("Nursing/other",))
    run_batch([path], regex_factory, opts(clean, **options))
    saved = json.loads((clean / "summary.json").read_text())
    # ISERROR rows i % 9 == 0 (5); Radiology rows i % 4 == 0 that are not ISERROR (8); rejected: 113's empty TEXT,
    # the second 114, the short row
    assert (saved["skipped_iserror"], saved["skipped_category"], saved["rejected"]) == (5, 8, 3)
    with pytest.raises(KeyboardInterrupt):  # Ctrl-C after 17 notes
        run_batch([path], interrupting_factory, opts(out, **options))
    resumed = run_batch([path], regex_factory, opts(out, **options))
    assert resumed.skipped_done > 0
    assert files(out) == files(clean)
    assert output_summary(out) == output_summary(clean)


def test_bad_encoding_and_brat_to_stdout_are_setup_errors(notes_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ShareNerError, match="unknown encoding 'bogus'"):
        run_batch([notes_dir], regex_factory, opts(tmp_path / "o", encoding="bogus"))
    assert not (tmp_path / "o").exists()
    with pytest.raises(ShareNerError, match="--format brat writes one .ann file per note: give --out DIR"):
        run_batch([notes_dir], regex_factory, opts(None, fmt="brat"), stdout=io.StringIO())


def test_ids_that_would_break_share_shards_are_rejected(tmp_path: Path) -> None:
    path = write(tmp_path / "discharge.csv", mimic4_csv([("n1", "DS", "fever"), ("a||b", "DS", "pain"),
                                                        ("c\nd", "DS", "pain"), ("n2", "DS", "pain")]))
    out = tmp_path / "out"
    run_batch([path], regex_factory, opts(out, fmt="share"))
    shard = (out / "discharge/part-00000.pipe.txt").read_text().splitlines()
    assert [line.split("||")[0] for line in shard] == ["n1.txt", "n2.txt"]
    rejects = [line.split("\t") for line in (out / "rejects.tsv").read_text().splitlines()[1:]]
    assert [(r[1], r[2]) for r in rejects] == [("", "2"), ("", "3")]
    assert all("contains '||' or a control character" in r[4] for r in rejects)


def test_300_rows_with_one_bad_quote_give_299_notes_and_one_reject(tmp_path: Path) -> None:
    from mimic_csv import three_hundred_rows

    rows = three_hundred_rows()
    lines = mimic3_csv(rows).split("\n")
    bad = next(i for i, line in enumerate(lines) if line.startswith("1150,"))
    lines[bad + 2] = "2 lines, the quote never closed"
    path = tmp_path / "NOTEEVENTS.csv"
    path.write_text("\n".join(lines), encoding="utf-8")
    out = tmp_path / "out"
    summary = run_batch([path], regex_factory, opts(out, shard_size=50))
    recs = shard_lines(out / "NOTEEVENTS")
    assert [r["doc_id"] for r in recs] == [str(1000 + i) for i in range(300) if i != 150]
    expected = {r[0]: RegexAnnotator()(Document(r[0], r[3])) for r in rows}
    assert all([(tuple(map(tuple, m["spans"])), m["cui"]) for m in r["mentions"]]
               == [(m.spans, m.cui) for m in expected[r["doc_id"]]] for r in recs)
    (reject,) = (out / "rejects.tsv").read_text().splitlines()[1:]
    assert reject.split("\t")[1:4] == ["1150", "151", str(len("\n".join(lines[:bad]).encode()) + 1)]
    assert (summary.notes, summary.rejected) == (299, 1)


MARKER = "ZQX-MARKER-TEXT"


class MarkerFailingAnnotator(RegexAnnotator):
    def __call__(self, doc: Document) -> list[Mention]:
        if "explode" in doc.text:
            raise RuntimeError(f"cannot tag {doc.text!r}")  # an exception quoting the note
        return super().__call__(doc)


def marker_failing_factory() -> MarkerFailingAnnotator:
    return MarkerFailingAnnotator()


def test_note_text_of_bad_records_reaches_no_reject_log_or_error(tmp_path: Path, capsys) -> None:
    """A marker in the text of a bad row or note of every kind: it must appear in no reject, log, summary or error
    (with --out and without), unless asked for."""
    m = f"Seen by Dr. [**Last Name (STitle) 123**] {MARKER}"
    good = mimic3_csv([("1", "DS", "", "fever")])
    body = "".join([
        f'2,1,2,2151-08-04,,,"DS","Report",,,"{m} unterminated\n{m}\n',  # unterminated quote, cut at row 3
        f'3,1,2,2151-08-04,,,"DS","Report",,,"{m} explode"\n',  # the annotator fails, quoting the note
        f'{m},1,2\n',  # wrong field count, text where the id goes
        f'"{m}\nx||y",1,2,2151-08-04,,,"DS","Report",,,"{m}"\n',  # id with a line break and ||
        f',1,2,2151-08-04,,,"DS","Report",,,"{m}"\n',  # empty id
        f'3,1,2,2151-08-04,,,"DS","Report",,,"{m} duplicate"\n',  # duplicate id
        f'5,1,2,2151-08-04,,,"DS","Report",,,"{m}\x00"\n',  # NUL in the text
        f'6,1,2,2151-08-04,,,"DS","Report",,,"{m} "x" bad quoting\n',  # stray quote, then end of file
    ])
    path = tmp_path / "NOTEEVENTS.csv"
    path.write_bytes(good.encode() + body.encode() + f'7,1,2,,,,"DS","R",,,"{m} caf'.encode() + b"\xff\"\n")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "bin.txt").write_bytes(f"{m}\x00".encode())
    (notes / "latin.txt").write_bytes(f"{m} caf\xe9".encode("latin-1"))
    (notes / "boom.txt").write_text(f"{m} explode")
    headerless = write(tmp_path / "headerless.csv", f'174,1,2,2151-08-04,,,DS,R,,,"{m}"\n')

    from share_ner.cli import main

    out = tmp_path / "out"
    stdout, stderr = io.StringIO(), io.StringIO()
    summary = run_batch([path, notes], marker_failing_factory, opts(out), stdout=stdout, stderr=stderr)
    rejects = (out / "rejects.tsv").read_text()
    assert summary.rejected == len(rejects.splitlines()) - 1 >= 11
    run_batch([path, notes], marker_failing_factory, opts(None, jobs=2), stdout=stdout, stderr=stderr)
    captured = [rejects, (out / "summary.json").read_text(), stderr.getvalue()]
    assert stderr.getvalue().count("share-ner: rejected") == summary.rejected
    with pytest.raises(InputError) as err:
        run_batch([headerless], regex_factory, opts(tmp_path / "o2"))
    captured.append(str(err.value))
    model = tmp_path / "model"
    model.mkdir()
    assert main(["tag", str(headerless), "--model", str(model), "--quiet"]) == 2
    cli_err = capsys.readouterr().err
    assert "the file needs its header row" in cli_err
    captured.append(cli_err)
    reasons = "".join(line.split("\t")[4] for line in rejects.splitlines()[1:])
    for kind in ("unterminated quote", "annotation failed: RuntimeError", "fields, expected 11",
                 "contains '||' or a control character", "empty ROW_ID", "duplicate note id", "NUL bytes",
                 "not valid utf-8", "binary file"):
        assert kind in reasons
    for text in captured:
        assert MARKER not in text and "Last Name" not in text
    assert all(MARKER not in line for line in stdout.getvalue().splitlines() if '"doc_id": "1"' in line)
    # asked for: the bad records are quoted
    shown = run_batch([path], marker_failing_factory, opts(tmp_path / "shown", show_text=True))
    assert shown.rejected and MARKER in (tmp_path / "shown/rejects.tsv").read_text()
